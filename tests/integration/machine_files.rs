//! Machine files: the shipped calibrations load with the figures of their sources, and bad files
//! are refused with a message naming the file, the line and the field, and exit status 2.

// Figures are typed exactly as StarPU's files write them, digits beyond f64 precision included,
// so that they can be compared with the source by eye.
#![allow(clippy::excessive_precision)]

use crate::common::{close, repo};

use crate::common::hetsim;
use std::process::Command;

use hetsim::machine::{self, Direction, LinkPolicy, Machine, MemKind, TransferModel};

fn load(rel: &str) -> Machine {
    machine::load(repo(rel)).unwrap_or_else(|e| panic!("{rel} should load: {e}"))
}

fn route_names(m: &Machine, src: &str, dst: &str) -> Vec<String> {
    let s = m.memory_node_by_name(src).unwrap().id;
    let d = m.memory_node_by_name(dst).unwrap().id;
    let r = m
        .route(s, d)
        .unwrap_or_else(|| panic!("no route {src} -> {dst}"));
    r.hops.iter().map(|h| m.hop_name(h)).collect()
}

#[test]
fn every_calibration_file_loads() {
    let mut n = 0;
    for entry in std::fs::read_dir(repo("calibration")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            // Machine files, and cluster files (docs/cluster-format.md) whose node file loads.
            hetsim::cluster::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            n += 1;
        }
    }
    assert!(
        n >= 3,
        "expected at least mirage, attila and tsubame2-node, found {n}"
    );
}

#[test]
fn mirage_matches_starpu_sample_files() {
    let m = load("calibration/mirage.toml");
    assert_eq!(m.name(), "mirage");
    // mirage.config: "12 # Number of CPUs", "3 # Number of CUDA devices".
    assert_eq!(m.cpu_cores(), 12);
    assert_eq!(m.gpus().len(), 3);
    for g in m.gpus() {
        // mirage.platform.v4.xml: <prop id="model" value="Tesla M2070"/>.
        assert_eq!(g.model, "Tesla M2070");
        let mem = m.memory_node(g.memory).unwrap();
        assert_eq!(mem.kind, MemKind::Gpu);
        // mirage.platform.v4.xml: <prop id="memsize" value="5636554752"/>.
        assert_eq!(mem.capacity_bytes, 5_636_554_752);
    }

    // mirage.platform.v4.xml:
    // <link id="RAM-CUDA0" bandwidth="6010679672.232608Bps" latency="0.000010s"/>
    // <link id="CUDA0-RAM" bandwidth="6517450307.894588Bps" latency="0.000011s"/>
    // <link id="Host" bandwidth="6517450307.894589Bps" latency="0.000000s"/>
    // <link id="CUDA1-CUDA2" bandwidth="5296219864.637116Bps" latency="0.000016s"/>
    let expect = [
        ("RAM-CUDA0", 6_010_679_672.232608, 10e-6),
        ("CUDA0-RAM", 6_517_450_307.894588, 11e-6),
        ("Host", 6_517_450_307.894589, 0.0),
        ("CUDA1-CUDA2", 5_296_219_864.637116, 16e-6),
    ];
    for (name, bw, lat) in expect {
        let l = m
            .link_by_name(name)
            .unwrap_or_else(|| panic!("no link {name}"));
        assert!(
            close(l.bandwidth_bytes_per_sec, bw, 1e-12),
            "{name}: {}",
            l.bandwidth_bytes_per_sec
        );
        assert!((l.latency_s - lat).abs() < 1e-15, "{name}: {}", l.latency_s);
        assert_eq!(l.sharing, LinkPolicy::Shared);
    }
    // 13 CUDA links (6 RAM<->CUDA, 6 CUDA<->CUDA, Host) + 21 PCI links; no OpenCL, no DISK.
    assert_eq!(m.links().len(), 34);
    assert!(
        m.links()
            .iter()
            .all(|l| !l.name.contains("OpenCL") && !l.name.contains("DISK"))
    );

    // mirage.platform.v4.xml, <route src="RAM" dst="CUDA0" symmetrical="NO">.
    assert_eq!(
        route_names(&m, "RAM", "CUDA0"),
        [
            "RAM-CUDA0",
            "PCI:0000:06:00.0 down",
            "PCI:0000:[06-08] through",
            "PCI:0000:[06-08] down",
            "PCI:0000:[00-0f] through",
            "PCI:0000:[00-0f] down",
            "Host"
        ]
    );
    // <route src="CUDA0" dst="RAM">: its own link, the PCI "up" links, and the same Host link.
    let back = route_names(&m, "CUDA0", "RAM");
    assert_eq!(back.first().map(String::as_str), Some("CUDA0-RAM"));
    assert_eq!(back.last().map(String::as_str), Some("Host"));
    // <route src="CUDA0" dst="CUDA1">: 13 links, crossing Host twice (through the host bridge).
    let peer = route_names(&m, "CUDA0", "CUDA1");
    assert_eq!(peer.len(), 13);
    assert_eq!(peer.iter().filter(|n| *n == "Host").count(), 2);
    // Routes: 3 GPUs x (to RAM, from RAM, to each of the 2 other GPUs) = 12.
    assert_eq!(m.routes().len(), 12);
    assert!(m.routes().iter().all(|r| r.model.is_none()));
}

#[test]
fn attila_matches_starpu_sample_files() {
    let m = load("calibration/attila.toml");
    // attila.config: 12 CPUs, 3 CUDA devices.
    assert_eq!(m.cpu_cores(), 12);
    assert_eq!(m.gpus().len(), 3);
    // attila.platform.v4.xml: <prop id="model" value="Fermi C2050"/>,
    // <prop id="memsize" value="3220897792"/>.
    for g in m.gpus() {
        assert_eq!(g.model, "Fermi C2050");
        assert_eq!(
            m.memory_node(g.memory).unwrap().capacity_bytes,
            3_220_897_792
        );
    }
    // <link id="RAM-CUDA2" bandwidth="5231971524.585075Bps" latency="0.000010s"/>
    let l = m.link_by_name("RAM-CUDA2").unwrap();
    assert!(close(
        l.bandwidth_bytes_per_sec,
        5_231_971_524.585075,
        1e-12
    ));
    // <link id="Host" bandwidth="6526732233.112210Bps" latency="0.000000s"/>
    assert!(close(
        m.link_by_name("Host").unwrap().bandwidth_bytes_per_sec,
        6_526_732_233.112210,
        1e-12
    ));
    // <route src="CUDA0" dst="CUDA1">: same PCI switch, so it does not cross Host.
    assert!(!route_names(&m, "CUDA0", "CUDA1").contains(&"Host".to_string()));
}

#[test]
fn tsubame2_node_uses_the_stencil_model_of_seed_004() {
    let m = load("calibration/tsubame2-node.toml");
    assert_eq!(m.cpu_cores(), 12);
    assert_eq!(m.gpus().len(), 3);
    let ram = m.memory_node_by_name("RAM").unwrap().id;
    for g in m.gpus() {
        assert_eq!(g.model, "Tesla M2050");
        // Shimokawabe et al. 2013 section 4: 1030 GFlops single precision, 148 GB/s.
        assert_eq!(g.peak_flops_per_sec, Some(1030e9));
        assert_eq!(g.memory_bandwidth_bytes_per_sec, Some(148e9));
        for (src, dst) in [(ram, g.memory), (g.memory, ram)] {
            let r = m.route(src, dst).unwrap();
            // Shimokawabe et al. 2013 Table 1, PCI Express bus: B0 = 4.29 GB/s, t0 = 16.9 us.
            let Some(TransferModel::Stencil(s)) = &r.model else {
                panic!("{} route should carry the stencil model", g.name)
            };
            assert!(close(s.b0_bytes_per_sec(), 4.29e9, 1e-12));
            assert!(close(s.t0_s(), 16.9e-6, 1e-12));
            // 1 MiB: 1048576 / 4.29e9 + 16.9e-6 = 261.32331e-6 s (to 10 ps).
            let model = r.model.as_ref().unwrap();
            assert!((model.duration_secs(1_048_576.0) - 261.32331e-6).abs() < 1e-11);
        }
        // The symmetric reverse uses the other half of the split-duplex bus.
        let down = &m.route(ram, g.memory).unwrap().hops;
        let up = &m.route(g.memory, ram).unwrap().hops;
        assert_eq!(down[0].direction, Some(Direction::Down));
        assert_eq!(up[0].direction, Some(Direction::Up));
        assert_eq!(down[0].link, up[0].link);
    }
}

#[test]
fn check_prints_a_summary_and_exits_0() {
    let out = hetsim(&["check", "calibration/mirage.toml"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "machine mirage",
        "12 CPU cores, 3 GPUs",
        "GPU CUDA0  Tesla M2070",
        "5636554752 B",
        "RAM-CUDA0",
        "6.011 GB/s",
        "RAM -> CUDA0",
        "cudaMalloc 175.000 us",
    ] {
        assert!(
            stdout.contains(needle),
            "summary lacks {needle:?}:\n{stdout}"
        );
    }
}

/// One bad file: where the error must be (line of the `# ERROR HERE` marker, field path) and a
/// piece of the message.
struct Bad {
    file: &'static str,
    field: &'static str,
    message: &'static str,
}

const BAD: &[Bad] = &[
    Bad {
        file: "bare_number_bandwidth",
        field: "links[1].bandwidth",
        message: "63 has no unit: write it with one, such as \"6.5 GB/s\" (units: B/s, kB/s,",
    },
    Bad {
        file: "tiny_bandwidth",
        field: "links[1].bandwidth",
        message: "out of the meaningful range (from 1 B/s to 1 PB/s, or 0)",
    },
    Bad {
        file: "subnormal_bandwidth",
        field: "links[1].bandwidth",
        message: "out of the meaningful range (from 1 B/s to 1 PB/s, or 0)",
    },
    Bad {
        file: "huge_latency",
        field: "links[1].latency",
        message: "out of the meaningful range (from 1 fs to 1 hour, or 0)",
    },
    Bad {
        file: "unknown_link_in_route",
        field: "routes[0].links[1]",
        message: "unknown link `Hots`",
    },
    Bad {
        file: "zero_bandwidth",
        field: "links[1].bandwidth",
        message: "zero-bandwidth route",
    },
    Bad {
        file: "nan_bandwidth_string",
        field: "links[1].bandwidth",
        message: "NaN",
    },
    Bad {
        file: "nan_bandwidth_toml",
        field: "links[1].bandwidth",
        message: "NaN",
    },
    Bad {
        file: "negative_latency",
        field: "links[1].latency",
        message: "must not be negative",
    },
    Bad {
        file: "unknown_unit",
        field: "links[1].bandwidth",
        message: "unknown unit \"GX/s\"",
    },
    Bad {
        file: "duplicate_link_name",
        field: "links[2].name",
        message: "duplicate link name",
    },
    Bad {
        file: "malformed_toml",
        field: "links[1].bandwidth",
        message: "string",
    },
    Bad {
        file: "missing_route_ram_gpu",
        field: "routes",
        message: "missing route RAM → GPU0",
    },
    Bad {
        file: "missing_route_gpu_ram",
        field: "routes",
        message: "missing route GPU0 → RAM",
    },
    Bad {
        file: "gpu_on_ram_node",
        field: "gpus[0].memory",
        message: "kind \"gpu\"",
    },
    Bad {
        file: "unknown_field",
        field: "links[1].bandwith",
        message: "unknown field `bandwith`",
    },
    Bad {
        file: "route_unknown_memory_node",
        field: "routes[0].dst",
        message: "unknown memory node `GPU9`",
    },
    Bad {
        file: "zero_bandwidth_model",
        field: "routes[0].model.bandwidth",
        message: "zero-bandwidth route",
    },
    Bad {
        file: "split_duplex_without_direction",
        field: "routes[0].links[1]",
        message: "`Host_UP` or `Host_DOWN`",
    },
    Bad {
        file: "duplicate_route",
        field: "routes[1].src",
        message: "duplicate route GPU0 → RAM",
    },
    Bad {
        file: "negative_capacity",
        field: "memory_nodes[1].capacity",
        message: "must not be negative",
    },
    Bad {
        file: "piecewise_not_increasing",
        field: "routes[0].model.points[1]",
        message: "strictly increasing",
    },
    Bad {
        file: "unknown_sharing",
        field: "links[1].sharing",
        message: "expected \"shared\", \"fatpipe\" or \"split-duplex\"",
    },
    Bad {
        file: "wrong_type",
        field: "cpus[0].count",
        message: "invalid type",
    },
    Bad {
        file: "codelet_nan_mean",
        field: "codelets[0].models[0].history[1].mean",
        message: "NaN",
    },
    Bad {
        file: "codelet_negative_stddev",
        field: "codelets[0].models[0].history[0].stddev",
        message: "must not be negative",
    },
    Bad {
        file: "codelet_unknown_device",
        field: "codelets[0].models[1].device",
        message: "unknown device `CUDA7`",
    },
    Bad {
        file: "codelet_unknown_noise",
        field: "codelets[0].noise.kind",
        message: "unknown noise kind \"gaussian\"",
    },
    Bad {
        file: "codelet_duplicate_size",
        field: "codelets[0].models[0].history[2].size",
        message: "duplicate history entry for size 1228800 B",
    },
    Bad {
        file: "codelet_duplicate_name",
        field: "codelets[1].name",
        message: "duplicate codelet `gemm`",
    },
    Bad {
        file: "codelet_duplicate_device",
        field: "codelets[0].models[1].device",
        message: "already has a model for device `CUDA0`",
    },
    Bad {
        file: "codelet_empty_model",
        field: "codelets[0].models[0]",
        message: "nothing to predict",
    },
    Bad {
        file: "codelet_histogram_weights",
        field: "perfmodels.noise.weights",
        message: "one weight per bin",
    },
    Bad {
        file: "codelet_fractional_size",
        field: "codelets[0].models[0].history[0].size",
        message: "whole number of bytes",
    },
    Bad {
        file: "codelet_zero_flop_rate",
        field: "codelets[0].models[0].flop_rate",
        message: "greater than zero",
    },
    Bad {
        file: "codelet_regression_negative",
        field: "codelets[0].models[0].regression.min_size",
        message: "negative duration",
    },
    Bad {
        file: "codelet_missing_include",
        field: "perfmodels.include[0]",
        message: "cannot read included file",
    },
    Bad {
        file: "codelet_unknown_field",
        field: "codelets[0].models[0].history[0].deviation",
        message: "unknown field `deviation`",
    },
];

fn marker_line(text: &str) -> usize {
    let lines: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains("# ERROR HERE"))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(lines.len(), 1, "each bad file marks exactly one line");
    lines[0]
}

#[test]
fn bad_files_name_file_line_and_field() {
    for bad in BAD {
        let rel = format!("tests/data/machines/{}.toml", bad.file);
        let path = repo(&rel);
        let text = std::fs::read_to_string(&path).unwrap();
        let line = marker_line(&text);
        let e = machine::load(&path).expect_err(&rel);
        assert_eq!(
            e.location.file.as_deref(),
            Some(path.as_path()),
            "{rel}: {e}"
        );
        assert_eq!(e.location.line, Some(line), "{rel}: {e}");
        assert_eq!(e.location.field.as_deref(), Some(bad.field), "{rel}: {e}");
        assert!(
            e.message.contains(bad.message),
            "{rel}: message lacks {:?}: {e}",
            bad.message
        );
    }
}

#[test]
fn every_bad_file_has_a_case_and_vice_versa() {
    let mut on_disk: Vec<String> = std::fs::read_dir(repo("tests/data/machines"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = BAD.iter().map(|b| b.file.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed);
}

#[test]
fn check_exits_2_on_bad_files_without_panicking() {
    for bad in BAD {
        let rel = format!("tests/data/machines/{}.toml", bad.file);
        let path = repo(&rel);
        let line = marker_line(&std::fs::read_to_string(&path).unwrap());
        let out = Command::new(env!("CARGO_BIN_EXE_hetsim"))
            .arg("check")
            .arg(&path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{rel}: {stderr}");
        assert!(out.stdout.is_empty(), "{rel}: nothing on stdout on error");
        assert!(!stderr.contains("panicked"), "{rel}: {stderr}");
        assert!(
            stderr.contains(&path.display().to_string()),
            "{rel}: {stderr}"
        );
        assert!(stderr.contains(&format!("line {line}")), "{rel}: {stderr}");
        assert!(
            stderr.contains(&format!("field `{}`", bad.field)),
            "{rel}: {stderr}"
        );
    }
}

#[test]
fn check_exits_2_on_a_missing_file() {
    let out = Command::new(env!("CARGO_BIN_EXE_hetsim"))
        .args(["check", "no/such/machine.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no/such/machine.toml"));
}

#[test]
fn truncated_files_never_panic() {
    // Every prefix of a real file (at a stride, to keep the test fast): each must either load or
    // fail with an input error; a panic fails the test.
    let text = std::fs::read_to_string(repo("calibration/tsubame2-node.toml")).unwrap();
    let mut cut = 0;
    while cut < text.len() {
        if text.is_char_boundary(cut) {
            let _ = machine::from_str(&text[..cut], "truncated.toml");
        }
        cut += 3;
    }
}

mod fuzz {
    use proptest::prelude::*;

    /// Up to `max` printable ASCII characters or newlines.
    fn printable(max: usize) -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![prop::char::range(' ', '~'), Just('\n')],
            0..=max,
        )
        .prop_map(|v| v.into_iter().collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Random edits of a valid file never panic the loader.
        #[test]
        fn edited_files_never_panic(
            edits in proptest::collection::vec((any::<prop::sample::Index>(), printable(6)), 1..4)
        ) {
            let mut text = std::fs::read_to_string(super::repo("calibration/tsubame2-node.toml")).unwrap();
            for (at, insert) in edits {
                let mut i = at.index(text.len() + 1);
                while !text.is_char_boundary(i) {
                    i -= 1;
                }
                let end = (i + insert.len()).min(text.len());
                let end = (end..=text.len()).find(|&e| text.is_char_boundary(e)).unwrap_or(text.len());
                text.replace_range(i..end, &insert);
            }
            let _ = hetsim::machine::from_str(&text, "edited.toml");
        }
    }
}

#[test]
fn annotated_example_in_the_docs_loads() {
    let doc = std::fs::read_to_string(repo("docs/machine-format.md")).unwrap();
    let section = doc
        .split("## Annotated example")
        .nth(1)
        .expect("docs/machine-format.md has an annotated example");
    let toml = section
        .split("```toml\n")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("the example is in a ```toml block");
    let m = machine::from_str(toml, "docs/machine-format.md").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(m.gpus().len(), 2);
    assert_eq!(m.runtime().cuda_free_s, 750e-6);
    let ram = m.memory_node_by_name("RAM").unwrap().id;
    let gpu1 = m.memory_node_by_name("CUDA1").unwrap().id;
    let back: Vec<String> = m
        .route(gpu1, ram)
        .unwrap()
        .hops
        .iter()
        .map(|h| m.hop_name(h))
        .collect();
    assert_eq!(back, ["Host", "PCIe1_UP"]);
}
