//! Sweeps beyond one machine: four shards of a sweep, run separately and merged, give the CSV
//! and the plot of the unsharded sweep byte for byte — through `hetsim sweep --shard` and
//! `hetsim sweep merge`, and through `scripts/slurm-sweep.sh` both locally and as Slurm job
//! arrays (with a stand-in `sbatch` that runs each array task's command).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::hetsim;

const ARGS: [&str; 10] = [
    "scenarios/cholesky-mirage.toml",
    "--sched",
    "eager,dmda,ws",
    "--vary",
    "workload.n=9600,19200",
    "--seeds",
    "1..3",
    "--set",
    "run.noise=lognormal",
    "--quiet",
];

fn dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("sweep-shards")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn ok(args: &[&str]) {
    let out = hetsim(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The unsharded sweep's CSV and SVG.
fn unsharded(d: &Path) -> (Vec<u8>, Vec<u8>) {
    let (csv, svg) = (d.join("all.csv"), d.join("all.svg"));
    let mut args = vec!["sweep"];
    args.extend(ARGS);
    args.extend(["-o", csv.to_str().unwrap(), "--plot", svg.to_str().unwrap()]);
    ok(&args);
    (std::fs::read(csv).unwrap(), std::fs::read(svg).unwrap())
}

#[test]
fn four_shards_merge_into_the_unsharded_sweep() {
    let d = dir("cli");
    let (csv, svg) = unsharded(&d);
    let mut files = Vec::new();
    for i in [2, 4, 1, 3] {
        let f = d.join(format!("s{i}.csv"));
        let shard = format!("{i}/4");
        let mut args = vec!["sweep"];
        args.extend(ARGS);
        args.extend(["--shard", &shard, "-o", f.to_str().unwrap()]);
        ok(&args);
        files.push(f);
    }
    let (m, p) = (d.join("m.csv"), d.join("m.svg"));
    let mut args = vec!["sweep", "merge"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    args.extend(["-o", m.to_str().unwrap(), "--plot", p.to_str().unwrap()]);
    ok(&args);
    assert!(std::fs::read(&m).unwrap() == csv, "merged CSV differs");
    assert!(std::fs::read(&p).unwrap() == svg, "merged plot differs");
    // Three of four shards: refused, naming the missing one.
    let mut args = vec!["sweep", "merge"];
    args.extend(files[..3].iter().map(|f| f.to_str().unwrap()));
    args.extend(["-o", m.to_str().unwrap()]);
    let out = hetsim(&args);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("shard 3/4 is missing"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn script(d: &Path, extra: &[&str], path: &str) {
    let mut cmd = Command::new("bash");
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("scripts/slurm-sweep.sh")
        .args(extra)
        .args(["-n", "4", "-d"])
        .arg(d.join("shards"))
        .arg("-o")
        .arg(d.join("m.csv"))
        .arg("--plot")
        .arg(d.join("m.svg"))
        .arg("--")
        .args(ARGS)
        .env("HETSIM", env!("CARGO_BIN_EXE_hetsim"))
        .env("PATH", path)
        .stdin(Stdio::null());
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_slurm_script_gives_the_unsharded_sweep() {
    let path = std::env::var("PATH").unwrap_or_default();
    // Locally.
    let d = dir("local");
    let (csv, svg) = unsharded(&d);
    script(&d, &["--local"], &path);
    assert!(std::fs::read(d.join("m.csv")).unwrap() == csv);
    assert!(std::fs::read(d.join("m.svg")).unwrap() == svg);
    // As job arrays: a stand-in sbatch runs the array's tasks, then the merge, in order.
    let d = dir("slurm");
    let bin = d.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let sbatch = bin.join("sbatch");
    std::fs::write(
        &sbatch,
        "#!/usr/bin/env bash\nwrap='' array=''\nfor a in \"$@\"; do case \"$a\" in \
         --wrap=*) wrap=\"${a#--wrap=}\";; --array=*) array=\"${a#--array=}\";; esac; done\n\
         if [ -n \"$array\" ]; then for i in $(seq \"${array%-*}\" \"${array#*-}\"); do \
         SLURM_ARRAY_TASK_ID=$i bash -c \"$wrap\" || exit 1; done; echo 101; \
         else bash -c \"$wrap\" || exit 1; echo 102; fi\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&sbatch, std::fs::Permissions::from_mode(0o755)).unwrap();
    script(&d, &[], &format!("{}:{path}", bin.display()));
    assert!(std::fs::read(d.join("m.csv")).unwrap() == csv);
    assert!(std::fs::read(d.join("m.svg")).unwrap() == svg);
}
