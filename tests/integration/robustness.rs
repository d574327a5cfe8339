//! hetsim under bad input and faults, one test per class, each with the exact message and
//! exit status: no data loss (outputs replaced only when complete; an output that is an input
//! or given twice refused), no panic whatever stdout is (a closed pipe, a full disk), inputs
//! only from regular files, corrupt StarPU calibrations and model parameters refused, and one
//! exit status (2) for an output that cannot be written.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn hetsim_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hetsim"))
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run hetsim")
}

/// `sh -c SCRIPT` in `dir`, with `$HETSIM` the binary.
fn sh_in(dir: &Path, script: &str) -> Output {
    Command::new("sh")
        .current_dir(dir)
        .env("HETSIM", env!("CARGO_BIN_EXE_hetsim"))
        .args(["-c", script])
        .stdin(Stdio::null())
        .output()
        .expect("run sh")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit status 2 and exactly `message` on stderr.
fn assert_refused(o: &Output, message: &str) {
    assert_eq!(
        (o.status.code(), stderr(o).as_str()),
        (Some(2), format!("hetsim: error: {message}\n").as_str())
    );
}

/// A scratch directory with a copy of tsubame2-node (a small machine) and a Cholesky scenario
/// on it (`s.toml`, `m.toml`).
fn scratch() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(
        root().join("calibration/tsubame2-node.toml"),
        d.path().join("m.toml"),
    )
    .unwrap();
    std::fs::write(
        d.path().join("s.toml"),
        "[scenario]\nname = \"t\"\nmachine = \"m.toml\"\n[workload]\nkind = \"cholesky\"\n\
         n = 9600\nnb = 960\nprecision = \"single\"\n[scheduler]\nname = \"dmda\"\n",
    )
    .unwrap();
    d
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

// --- 1. No data loss ------------------------------------------------------------------------

#[test]
fn an_output_that_is_an_input_is_refused_and_the_input_kept() {
    let d = scratch();
    let before = std::fs::read(d.path().join("m.toml")).unwrap();
    let o = hetsim_in(d.path(), &["run", "s.toml", "--quiet", "--gantt", "m.toml"]);
    assert_refused(
        &o,
        "refusing to write --gantt m.toml: it is also an input, a machine file (m.toml); \
         writing it would destroy the input",
    );
    assert_eq!(std::fs::read(d.path().join("m.toml")).unwrap(), before);
    // The scenario itself, through another spelling of its path.
    let o = hetsim_in(
        d.path(),
        &["run", "s.toml", "--quiet", "--paje", "./s.toml"],
    );
    assert_refused(
        &o,
        "refusing to write --paje ./s.toml: it is also an input, the scenario (s.toml); \
         writing it would destroy the input",
    );
    // sweep and calibrate keep the same promise.
    let o = hetsim_in(
        d.path(),
        &["sweep", "s.toml", "-q", "-o", "x.csv", "--plot", "m.toml"],
    );
    assert_refused(
        &o,
        "refusing to write --plot m.toml: it is also an input, a machine file (m.toml); \
         writing it would destroy the input",
    );
    let samples = root().join("tests/data/starpu-samples/starpu-sampling");
    let config = samples.join("bus/mirage.config");
    let o = hetsim_in(
        d.path(),
        &[
            "calibrate",
            "import-starpu",
            samples.to_str().unwrap(),
            "--host",
            "mirage",
            "-o",
            config.to_str().unwrap(),
        ],
    );
    assert_refused(
        &o,
        &format!(
            "refusing to write --output {0}: it is also an input, a StarPU calibration file \
             ({0}); writing it would destroy the input",
            config.display()
        ),
    );
    assert_eq!(names_in(d.path()), ["m.toml", "s.toml"]);
}

#[test]
fn a_scenarios_task_graph_file_is_an_input_no_output_may_overwrite() {
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(
        root().join("calibration/mirage.toml"),
        d.path().join("m.toml"),
    )
    .unwrap();
    let graph = "{\"format\": \"hetsim-taskgraph\", \"version\": 1, \
                 \"handles\": [{\"size_bytes\": 8}], \"tasks\": [{\"codelet\": \"k\", \
                 \"accesses\": [[0, \"RW\"]], \"duration_s\": {\"cpu\": 1, \"gpu\": 1}}]}";
    std::fs::write(d.path().join("g.json"), graph).unwrap();
    std::fs::write(
        d.path().join("s.toml"),
        "[scenario]\nname = \"g\"\nmachine = \"m.toml\"\n[workload]\nkind = \"taskgraph\"\n\
         file = \"g.json\"\n",
    )
    .unwrap();
    let refused = |flag: &str| {
        format!(
            "refusing to write {flag} g.json: it is also an input, a task-graph file (g.json); \
             writing it would destroy the input"
        )
    };
    let o = hetsim_in(d.path(), &["run", "s.toml", "-q", "--chrome", "g.json"]);
    assert_refused(&o, &refused("--chrome"));
    let o = hetsim_in(d.path(), &["sweep", "s.toml", "-q", "-o", "g.json"]);
    assert_refused(&o, &refused("--output"));
    let o = hetsim_in(d.path(), &["export-graph", "s.toml", "-o", "g.json"]);
    assert_refused(&o, &refused("--output"));
    // The data.rec read beside a tasks.rec counts too, even before it exists.
    let o = hetsim_in(d.path(), &["run", "s.toml", "-q", "--paje", "data.rec"]);
    assert_refused(
        &o,
        "refusing to write --paje data.rec: it is also an input, a task-graph file (data.rec); \
         writing it would destroy the input",
    );
    assert_eq!(
        std::fs::read_to_string(d.path().join("g.json")).unwrap(),
        graph
    );
    assert_eq!(names_in(d.path()), ["g.json", "m.toml", "s.toml"]);
}

#[test]
fn one_file_given_to_two_outputs_is_refused_before_anything_is_written() {
    let d = scratch();
    let o = hetsim_in(
        d.path(),
        &["run", "s.toml", "--quiet", "--paje", "t", "--chrome", "t"],
    );
    assert_refused(
        &o,
        "refusing to write --chrome t: --paje writes to it too (t); give each output its own \
         file",
    );
    let o = hetsim_in(
        d.path(),
        &["sweep", "s.toml", "-q", "-o", "x", "--plot", "x"],
    );
    assert_refused(
        &o,
        "refusing to write --plot x: --output writes to it too (x); give each output its own \
         file",
    );
    assert_eq!(names_in(d.path()), ["m.toml", "s.toml"]);
}

/// A run killed while writing its trace (SIGXFSZ past a file-size limit of 64 KiB) leaves the
/// trace that was there; with the signal ignored, the write fails (EFBIG, as on a full disk):
/// exit status 2, the old trace kept, no temporary file left behind.
#[test]
fn a_run_killed_or_out_of_room_while_writing_keeps_the_old_trace() {
    let d = scratch();
    std::fs::write(d.path().join("t.json"), "the old trace").unwrap();
    let killed = sh_in(
        d.path(),
        "ulimit -f 128; exec \"$HETSIM\" run s.toml --quiet --chrome t.json",
    );
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        killed.status.signal(),
        Some(25),
        "SIGXFSZ: {}",
        stderr(&killed)
    );
    assert_eq!(
        std::fs::read_to_string(d.path().join("t.json")).unwrap(),
        "the old trace"
    );
    let full = sh_in(
        d.path(),
        "trap '' XFSZ; ulimit -f 128; exec \"$HETSIM\" run s.toml --quiet --chrome t.json",
    );
    assert_refused(
        &full,
        "t.json: cannot write file: File too large (os error 27)",
    );
    assert_eq!(
        std::fs::read_to_string(d.path().join("t.json")).unwrap(),
        "the old trace"
    );
    // The killed run's temporary file is the only trace of it; the failed one removed its own.
    let left: Vec<String> = names_in(d.path())
        .into_iter()
        .filter(|n| n.starts_with(".t.json.") && n.ends_with(".tmp"))
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
    // Without a limit the same command replaces the trace.
    let ok = hetsim_in(
        d.path(),
        &["run", "s.toml", "--quiet", "--chrome", "t.json"],
    );
    assert!(ok.status.success(), "{}", stderr(&ok));
    let t = std::fs::read_to_string(d.path().join("t.json")).unwrap();
    assert!(t.starts_with('{') || t.starts_with('['), "{}", &t[..40]);
}

// --- 2. No panic, whatever stdout is ----------------------------------------------------------

/// Every command that prints, with its arguments (from the repository's root).
fn printing_commands() -> Vec<Vec<&'static str>> {
    vec![
        vec!["check", "calibration/tsubame2-node.toml"],
        vec!["net", "scenarios/net-mirage-pcie.json"],
        vec!["crosscheck", "scenarios/offload-pbpi.toml"],
        vec![
            "model",
            "roofline",
            "--param",
            "peak_flops_per_sec=1e12",
            "--param",
            "peak_bytes_per_sec=1e11",
            "--param",
            "intensity_flops_per_byte=2",
        ],
        vec!["calibrate", "show", "calibration/tsubame2-node.toml"],
        vec![
            "calibrate",
            "import-starpu",
            "tests/data/starpu-samples/starpu-sampling",
            "--host",
            "hannibal",
        ],
        vec!["run", "scenarios/cholesky-tsubame2-node.toml", "--quiet"],
        vec!["export-graph", "scenarios/cholesky-tsubame2-node.toml"],
    ]
}

#[test]
fn a_closed_pipe_ends_every_command_quietly() {
    for args in printing_commands() {
        // As `| head -c 1`: read one byte, then close the pipe.
        let mut child = Command::new(env!("CARGO_BIN_EXE_hetsim"))
            .current_dir(root())
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = [0u8; 1];
        let mut out = child.stdout.take().unwrap();
        out.read_exact(&mut first).unwrap();
        drop(out);
        let o = child.wait_with_output().unwrap();
        assert_eq!(
            (o.status.code(), stderr(&o).as_str()),
            (Some(0), ""),
            "{args:?}"
        );
    }
}

#[test]
fn a_full_disk_on_stdout_is_an_error_for_every_command() {
    for args in printing_commands() {
        let o = sh_in(
            &root(),
            &format!("exec \"$HETSIM\" {} >/dev/full", args.join(" ")),
        );
        assert_refused(
            &o,
            "cannot write to standard output: No space left on device (os error 28)",
        );
    }
}

// --- 3. Inputs only from regular files of sane size ---------------------------------------------

/// `hetsim ARGS` with `{}` replaced by `input` must refuse it at once: exit 2 and `message`.
fn refuses_input(args: &[&str], input: &str, message: &str) {
    let args: Vec<String> = args.iter().map(|a| a.replace("{}", input)).collect();
    let mut child = Command::new(env!("CARGO_BIN_EXE_hetsim"))
        .current_dir(root())
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("hetsim {args:?} blocked on {input}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    assert_refused(&o, message);
}

#[test]
fn fifos_devices_and_directories_are_refused_as_inputs() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let fifo = fifo.to_str().unwrap().to_string();
    let dir = d.path().to_str().unwrap().to_string();
    let commands: [&[&str]; 6] = [
        &["check", "{}"],
        &["run", "{}"],
        &["crosscheck", "{}"],
        &["net", "{}"],
        &["calibrate", "show", "{}"],
        &["model", "hpl", "--from", "{}"],
    ];
    for args in commands {
        for (input, what) in [
            (fifo.as_str(), "a FIFO"),
            ("/dev/zero", "a character device"),
            (dir.as_str(), "a directory"),
        ] {
            refuses_input(
                args,
                input,
                &format!("{input}: cannot read file: it is {what}, expected a regular file"),
            );
        }
    }
}

#[test]
fn a_fifo_among_the_codelet_files_is_refused_not_waited_for() {
    let d = tempfile::tempdir().unwrap();
    hetsim_testkit::hannibal_calibration(d.path(), &[]).unwrap();
    let fifo = d.path().join("codelets/45/chol_model_gemm.hannibal");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    refuses_input(
        &["calibrate", "import-starpu", "{}", "--host", "hannibal"],
        d.path().to_str().unwrap(),
        &format!(
            "{}: cannot read file: it is a FIFO, expected a regular file",
            fifo.display()
        ),
    );
}

#[test]
fn sweep_threads_are_bounded() {
    let d = scratch();
    let o = hetsim_in(
        d.path(),
        &["sweep", "s.toml", "-q", "-j", "100000", "-o", "x.csv"],
    );
    assert_refused(
        &o,
        "-j 100000: at most 256 threads (each run uses one; this sweep has 1 run)",
    );
    // More threads than runs is fine: clamped to the runs.
    let o = hetsim_in(
        d.path(),
        &[
            "sweep", "s.toml", "-q", "-j", "200", "--seeds", "1..2", "-o", "x.csv",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
}

/// Every size a workload takes is bounded before anything is generated: a point-to-point run of
/// 10^8 messages, tiles beyond the task limit, a stencil or offload run beyond its operations.
#[test]
fn workload_sizes_are_bounded_before_generation() {
    let scenarios = root().join("scenarios");
    for (file, set, message) in [
        (
            "p2p-example-cluster.toml",
            "workload.repeat=100000000",
            "repeat = 100000000: at most 1000000 messages",
        ),
        (
            "cholesky-mirage.toml",
            "workload.n=99999360",
            "more than the limit of 10000000",
        ),
        (
            "stencil-diffusion-tsubame2.toml",
            "workload.steps=100000000",
            "more than the limit of",
        ),
        (
            "offload-pbpi.toml",
            "workload.phases=100000000",
            "more than the limit of",
        ),
        // 10^18 × 1024² points: at least 8 B each, far beyond a 3 GiB GPU.
        (
            "stencil-diffusion-tsubame2.toml",
            "workload.nx=1000000000000000000",
            "does not fit in GPU memory",
        ),
    ] {
        let path = scenarios.join(file);
        let o = hetsim_in(
            &scenarios,
            &["run", path.to_str().unwrap(), "--quiet", "--set", set],
        );
        assert_eq!(o.status.code(), Some(2), "{file} {set}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.starts_with("hetsim: error: ") && err.contains(message),
            "{file} {set}: {err}"
        );
    }
}

// --- 4. No nonsense with exit 0 -----------------------------------------------------------------

/// A copy of StarPU's hannibal calibration with `file` (relative) changed by `edit`; the
/// import's outcome.
fn import_edited(file: &str, mut edit: impl FnMut(&str) -> String) -> (Output, PathBuf) {
    let d = tempfile::tempdir().unwrap().keep();
    hetsim_testkit::hannibal_calibration(&d, &["chol_model_gemm"]).unwrap();
    let text = std::fs::read_to_string(d.join(file)).unwrap();
    let edited = edit(&text);
    assert_ne!(edited, text, "the edit changed nothing");
    std::fs::write(d.join(file), edited).unwrap();
    let o = hetsim_in(
        &d,
        &[
            "calibrate",
            "import-starpu",
            ".",
            "--host",
            "hannibal",
            "-o",
            "out.toml",
        ],
    );
    assert!(!d.join("out.toml").exists(), "nothing written on failure");
    (o, d)
}

/// The first history line of hannibal's GEMM file (`hash size flops mean dev sum sum2 n`):
/// its line number and the line with column `col` replaced by `value`.
fn history_with(text: &str, col: usize, value: &str) -> (usize, String) {
    let (i, line) = text
        .lines()
        .enumerate()
        .find(|(_, l)| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() == 8 && f[0].len() == 8 && u32::from_str_radix(f[0], 16).is_ok()
        })
        .expect("a history line");
    let mut f: Vec<&str> = line.split_whitespace().collect();
    f[col] = value;
    let edited = text.replacen(line, &f.join("\t"), 1);
    (i + 1, edited)
}

#[test]
fn corrupt_starpu_means_are_refused_with_their_file_and_line() {
    let file = "codelets/45/chol_model_gemm.hannibal";
    for (value, why) in [
        (
            "nan",
            "history column `mean`: expected a positive time in us for N samples, found \"nan\"",
        ),
        (
            "-3.0e+03",
            "history column `mean`: expected a positive time in us for N samples, found \
             \"-3.0e+03\"",
        ),
        (
            "1e999",
            "history column `mean`: \"1e999\" is not a finite number (the file is corrupt)",
        ),
        (
            "9e99",
            "history column `mean`: 9e99 us is out of the range of kernel times (from 1 fs to \
             1 hour)",
        ),
    ] {
        let mut line = 0;
        let mut samples = String::new();
        let (o, d) = import_edited(file, |t| {
            let (l, e) = history_with(t, 3, value);
            line = l;
            samples = t
                .lines()
                .nth(l - 1)
                .unwrap()
                .split_whitespace()
                .nth(7)
                .unwrap()
                .into();
            e
        });
        assert_refused(
            &o,
            &format!(
                "{}:line {line}: {}",
                Path::new(".").join(file).display(),
                why.replace("N", &samples)
            ),
        );
        std::fs::remove_dir_all(d).unwrap();
    }
}

#[test]
fn zero_or_negative_gpu_memory_in_the_platform_is_refused_with_its_line() {
    let file = "bus/hannibal.platform.v4.xml";
    for value in ["0", "-5"] {
        let mut line = 0;
        let (o, d) = import_edited(file, |t| {
            let at = t.find("<prop id=\"memsize\" value=\"").unwrap();
            let host_line = t[..at].rfind("<host").unwrap();
            line = t[..host_line].matches('\n').count() + 1;
            let start = at + "<prop id=\"memsize\" value=\"".len();
            let end = start + t[start..].find('"').unwrap();
            format!("{}{value}{}", &t[..start], &t[end..])
        });
        assert_refused(
            &o,
            &format!(
                "./{file}:line {line}: host `CUDA0`: memsize \"{value}\": expected the GPU's \
                 memory size in bytes, a whole number > 0"
            ),
        );
        std::fs::remove_dir_all(d).unwrap();
    }
}

#[test]
fn host_names_that_are_paths_are_refused() {
    for (host, why) in [
        ("../bus/hannibal", "it starts with `.`"),
        ("a/b", "'/' is not allowed"),
        ("", "it is empty"),
    ] {
        let o = hetsim_in(
            &root(),
            &[
                "calibrate",
                "import-starpu",
                "tests/data/starpu-samples/starpu-sampling",
                "--host",
                host,
            ],
        );
        assert_refused(
            &o,
            &format!(
                "--host {host:?}: not a StarPU host name ({why}): expected letters, digits, \
                 `-`, `_` and `.`, as in the suffix of bus/HOST.config"
            ),
        );
    }
}

#[test]
fn model_parameters_that_are_unused_or_not_numbers_are_refused() {
    let roofline = [
        "model",
        "roofline",
        "--param",
        "peak_flops_per_sec=1e12",
        "--param",
        "peak_bytes_per_sec=1e11",
    ];
    let with = |extra: &[&str]| {
        let mut a: Vec<&str> = roofline.to_vec();
        a.extend_from_slice(extra);
        hetsim_in(&root(), &a)
    };
    let o = with(&["--param", "intensity_flops_per_byte=nan"]);
    assert_refused(
        &o,
        "field `intensity_flops_per_byte`: `nan` is not a number (from --param \
         intensity_flops_per_byte=nan)",
    );
    let o = with(&[
        "--param",
        "intensity_flops_per_byte=2",
        "--param",
        "gflops=1",
    ]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.starts_with("hetsim: error: field `gflops`: unknown parameter `gflops` for `roofline`"),
        "{e}"
    );
    // A threshold of MPICH's selection rule, with the algorithm fixed: the rule does not run.
    let o = hetsim_in(
        &root(),
        &[
            "model",
            "bcast",
            "--param",
            "procs=8",
            "--param",
            "bytes=1048576",
            "--param",
            "algorithm=binomial",
            "--param",
            "short_msg_bytes=100",
        ],
    );
    assert_refused(
        &o,
        "field `short_msg_bytes`: parameter `short_msg_bytes` is not used by `bcast` with the \
         other parameters given; remove it (see `hetsim model bcast --help-params`)",
    );
    // A zero bandwidth: an infinite time is refused rather than printed.
    let o = hetsim_in(
        &root(),
        &[
            "model",
            "roofline",
            "--param",
            "peak_flops_per_sec=1e12",
            "--param",
            "peak_bytes_per_sec=0",
            "--param",
            "intensity_flops_per_byte=2",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

// --- 5. One exit status for an output that cannot be written ----------------------------------

#[test]
fn an_unwritable_output_is_exit_2_in_every_command() {
    let d = scratch();
    let nowhere = "no-such-dir/out";
    let message = format!("{nowhere}: cannot write file: the directory no-such-dir does not exist");
    let samples = root().join("tests/data/starpu-samples/starpu-sampling");
    for args in [
        vec!["run", "s.toml", "--quiet", "--chrome", nowhere],
        vec!["sweep", "s.toml", "-q", "-o", nowhere],
        vec![
            "calibrate",
            "import-starpu",
            samples.to_str().unwrap(),
            "--host",
            "hannibal",
            "-o",
            nowhere,
        ],
    ] {
        assert_refused(&hetsim_in(d.path(), &args), &message);
    }
    // A directory where a file is expected.
    let o = hetsim_in(d.path(), &["sweep", "s.toml", "-q", "-o", "."]);
    assert_refused(&o, ".: cannot write file: it is a directory");
}

// --- Found by fuzzing -------------------------------------------------------------------------

/// `cluster`: a NIC count of 2^32 - 1 built that many links per node until memory ran out.
#[test]
fn a_cluster_with_billions_of_nics_or_nodes_is_refused() {
    let path = root().join("calibration/example-cluster.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let nics = text.replacen("count = 1 ", "count = 4294967295 ", 1);
    let e = hetsim::cluster::from_str(&nics, &path).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}: field `nic.count`: NIC count 4294967295: expected 1 to 16 (a node has a link \
             per NIC to every switch port)",
            path.display()
        )
    );
    let nodes = text.replacen("nodes = 4", "nodes = 1000000000", 1);
    let e = hetsim::cluster::from_str(&nodes, &path).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}: field `machine.nodes`: nodes = 1000000000: at most 65536 nodes (memory and time \
             grow with the nodes; the largest machine modelled, TSUBAME 2.0, has 1408)",
            path.display()
        )
    );
}
