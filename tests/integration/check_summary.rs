//! `hetsim check` on the imported machines: the codelet and affinity sections of the summary
//! agree with StarPU's own files under `tests/data/starpu-samples/`. Every expectation is read
//! here from those files (the sizes of a codelet's history, which devices have a model, the
//! rows of `bus/<host>.affinity`), never from hetsim's output or its machine files.

use crate::common::hetsim;
use crate::common::repo;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const SAMPLES: &str = "tests/data/starpu-samples/starpu-sampling";
const GEMINI: &str = "tests/data/starpu-samples/starpu-sampling-icpp2023-gemini";

fn check_output(machine: &str) -> String {
    let out = hetsim(&["check", machine]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The lines of one section of the summary: from the line starting with `header` to the next
/// blank line.
fn section<'a>(summary: &'a str, header: &str) -> Vec<&'a str> {
    summary
        .lines()
        .skip_while(|l| !l.starts_with(header))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect()
}

/// One device group of a codelet in the summary: "    cpu, CUDA0  history, 3 sizes: 1, 2, 3 B".
#[derive(Debug)]
struct Group {
    devices: Vec<String>,
    shape: String,
}

/// The codelets section: codelet name → its device groups and its "no model on" devices.
fn codelets(summary: &str) -> BTreeMap<String, (Vec<Group>, Vec<String>)> {
    let mut out: BTreeMap<String, (Vec<Group>, Vec<String>)> = BTreeMap::new();
    let mut current = String::new();
    for line in section(summary, "codelets:") {
        if let Some(rest) = line.strip_prefix("    ") {
            let entry = out
                .get_mut(&current)
                .expect("a device line follows a codelet");
            if let Some(missing) = rest.strip_prefix("no model on: ") {
                entry.1 = missing.split(", ").map(str::to_string).collect();
            } else {
                let (label, shape) = rest.split_once("  ").expect("label, then the shape");
                entry.0.push(Group {
                    devices: label.split(", ").map(str::to_string).collect(),
                    shape: shape.trim().to_string(),
                });
            }
        } else {
            // "  name" or "  name  (noise: ...)".
            current = line.trim().split("  ").next().unwrap().to_string();
            out.insert(current.clone(), (Vec::new(), Vec::new()));
        }
    }
    out
}

/// A StarPU codelet file (format 45): per device ("cpu", or "CUDAN" for CUDA device id N),
/// the distinct sizes of its history entries (the second column of the lines after "# hash").
/// Only the first "# number of combinations" combinations count, as StarPU reads them; a
/// combination of several devices (a parallel task) is not a device's model.
fn starpu_histories(path: &Path) -> BTreeMap<String, BTreeSet<u64>> {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let after = |from: usize, marker: &str| -> usize {
        let k = (from..lines.len())
            .find(|&k| lines[k].starts_with(marker))
            .unwrap_or_else(|| panic!("{}: no {marker:?} after line {from}", path.display()));
        k + 1
    };
    let value = |k: usize| -> u64 { lines[k].trim().parse().unwrap() };
    let ncombs = value(after(0, "# number of combinations"));
    let mut out = BTreeMap::new();
    let mut at = 0;
    for _ in 0..ncombs {
        let comb = after(at, "# COMB_");
        let ndev = value(after(comb, "# number of types devices"));
        let kind = value(after(comb, "# device type"));
        let id = value(after(comb, "# device id"));
        let entries = after(after(comb, "# Model for "), "# number of entries");
        let n = value(entries) as usize;
        let table = after(entries, "# hash");
        let sizes: BTreeSet<u64> = lines[table..table + n]
            .iter()
            .map(|l| l.split_whitespace().nth(1).unwrap().parse().unwrap())
            .collect();
        let device = match kind {
            0 => Some("cpu".to_string()),
            1 => Some(format!("CUDA{id}")),
            _ => None,
        };
        if let Some(d) = device
            && ndev == 1
            && !sizes.is_empty()
        {
            out.insert(d, sizes);
        }
        at = table + n;
    }
    out
}

/// The sizes a shape lists ("history, 3 sizes: 1, 2, 3 B"), with its count, "..." left out.
fn listed_sizes(shape: &str) -> (usize, Vec<u64>) {
    let history = shape.split("; ").next().unwrap();
    let rest = history
        .strip_prefix("history, ")
        .unwrap_or_else(|| panic!("not a history: {shape}"));
    let (count, list) = rest.split_once(": ").unwrap();
    let n = count.split(' ').next().unwrap().parse().unwrap();
    let sizes = list
        .trim_end_matches(" B")
        .split(", ")
        .filter(|s| *s != "...")
        .map(|s| s.parse().unwrap())
        .collect();
    (n, sizes)
}

/// The codelet `name` of the summary has, for each device of `expected`, a history with exactly
/// those sizes: all of them when there are at most 8, else the first 4 and the last 3.
fn assert_histories(
    summary: &BTreeMap<String, (Vec<Group>, Vec<String>)>,
    name: &str,
    expected: &BTreeMap<String, BTreeSet<u64>>,
) {
    let (groups, _) = summary
        .get(name)
        .unwrap_or_else(|| panic!("no codelet {name} in the summary"));
    for (device, sizes) in expected {
        let g = groups
            .iter()
            .find(|g| g.devices.contains(device))
            .unwrap_or_else(|| panic!("{name}: no line for device {device}: {groups:?}"));
        let (n, listed) = listed_sizes(&g.shape);
        assert_eq!(n, sizes.len(), "{name} on {device}: {}", g.shape);
        let all: Vec<u64> = sizes.iter().copied().collect();
        let want: Vec<u64> = if all.len() <= 8 {
            all
        } else {
            all[..4]
                .iter()
                .chain(&all[all.len() - 3..])
                .copied()
                .collect()
        };
        assert_eq!(listed, want, "{name} on {device}: {}", g.shape);
    }
    let modelled: BTreeSet<&String> = groups.iter().flat_map(|g| &g.devices).collect();
    let want: BTreeSet<&String> = expected.keys().collect();
    assert_eq!(modelled, want, "{name}: devices with a model");
}

/// Every codelet file of `host` in the main sample directory, checked against the summary.
fn assert_all_codelets_of(host: &str, summary: &str) -> usize {
    let parsed = codelets(summary);
    let mut n = 0;
    for entry in std::fs::read_dir(repo(&format!("{SAMPLES}/codelets/45"))).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_str().unwrap().to_string();
        let Some(codelet) = file.strip_suffix(&format!(".{host}")) else {
            continue;
        };
        let expected = starpu_histories(&path);
        if expected.is_empty() {
            continue;
        }
        assert_histories(&parsed, codelet, &expected);
        n += 1;
    }
    n
}

/// The affinity section: GPU name → core indices, the ranges ("6-11, 0-5") expanded.
fn affinity(summary: &str) -> BTreeMap<String, Vec<u32>> {
    section(summary, "affinity:")
        .iter()
        .map(|l| {
            let (gpu, ranges) = l.trim().split_once("  ").unwrap();
            let mut cores = Vec::new();
            for r in ranges.trim().split(", ") {
                match r.split_once('-') {
                    Some((a, b)) => cores.extend(a.parse::<u32>().unwrap()..=b.parse().unwrap()),
                    None => cores.push(r.parse().unwrap()),
                }
            }
            (gpu.to_string(), cores)
        })
        .collect()
}

/// The first block of `bus/<host>.affinity` (the CUDA devices): GPU id → cores.
fn starpu_affinity(path: &Path) -> BTreeMap<String, Vec<u32>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let mut cols = line.split_whitespace().map(|c| c.parse::<u32>().unwrap());
        let gpu = format!("CUDA{}", cols.next().unwrap());
        if out.contains_key(&gpu) {
            break; // the OpenCL block repeats the ids
        }
        out.insert(gpu, cols.collect());
    }
    out
}

#[test]
fn mirage_codelets_and_affinity_match_starpu_files() {
    let s = check_output("calibration/mirage.toml");
    // mirage has 53 codelet files (`ls codelets/45/*.mirage`), all with entries.
    assert_eq!(assert_all_codelets_of("mirage", &s), 53);
    assert!(s.contains("codelets: 53 modelled"), "{s}");
    // log_arr.mirage: 23 sizes on cpu0 (lines 2..225 of its table); shown compactly.
    let parsed = codelets(&s);
    let (groups, _) = &parsed["log_arr"];
    assert!(groups[0].shape.contains("..."), "{:?}", groups[0]);
    assert_eq!(
        affinity(&s),
        starpu_affinity(&repo(&format!("{SAMPLES}/bus/mirage.affinity")))
    );
}

#[test]
fn idgraf_codelets_and_affinity_match_starpu_files() {
    let s = check_output("calibration/idgraf.toml");
    let n = assert_all_codelets_of("idgraf", &s);
    assert!(n >= 40, "only {n} idgraf codelet files checked");
    let a = affinity(&s);
    assert_eq!(a.len(), 8);
    assert_eq!(
        a,
        starpu_affinity(&repo(&format!("{SAMPLES}/bus/idgraf.affinity")))
    );
}

#[test]
fn sirocco_lists_the_gpu_a_codelet_has_no_model_on() {
    let s = check_output("calibration/sirocco.toml");
    assert_all_codelets_of("sirocco", &s);
    // overlap_sleep_1024_24.sirocco says "4" combinations (cpu0, cuda0, cuda2, cuda1); a fifth
    // block for cuda3 follows, which StarPU does not read. sirocco.config says "4 # Number of
    // CUDA devices": CUDA3 cannot run the codelet.
    let file = starpu_histories(&repo(&format!(
        "{SAMPLES}/codelets/45/overlap_sleep_1024_24.sirocco"
    )));
    assert!(!file.contains_key("CUDA3") && file.contains_key("cpu"));
    let parsed = codelets(&s);
    assert_eq!(parsed["overlap_sleep_1024_24"].1, ["CUDA3"]);
    assert!(parsed["chol_model_gemm"].1.is_empty());
}

#[test]
fn gemini_codelets_and_affinity_match_starpu_files() {
    let s = check_output("calibration/gemini.toml");
    let parsed = codelets(&s);
    let host = "gemini-1-cho_dep_corrected";
    // chol_model_22 is StarPU's older name of chol_model_gemm (the import notes it); the
    // file has CUDA models only, so the CPU cores cannot run it.
    let file = starpu_histories(&repo(&format!("{GEMINI}/codelets/45/chol_model_22.{host}")));
    assert_eq!(file.len(), 8);
    assert_histories(&parsed, "chol_model_gemm", &file);
    assert_eq!(parsed["chol_model_gemm"].1, ["cpu"]);
    // starpu_sgemm_gemm keeps its name; its GPUs have different numbers of sizes (12 on
    // cuda0), so they are listed on separate lines and the long ones compactly.
    let file = starpu_histories(&repo(&format!(
        "{GEMINI}/codelets/45/starpu_sgemm_gemm.{host}"
    )));
    assert!(file.values().any(|s| s.len() > 8));
    assert_histories(&parsed, "starpu_sgemm_gemm", &file);

    // The affinity file lists NUMA nodes ("# GPU\tNUMA0"), every GPU's row being "0", and the
    // config says "40 # Number of CPUs" and "1 # Number of NUMA nodes": every core is in
    // NUMA0, so each GPU's cores nearest first are 0..39 in order.
    let rows = starpu_affinity(&repo(&format!("{GEMINI}/bus/{host}.affinity")));
    assert_eq!(rows.len(), 8);
    assert!(rows.values().all(|r| r == &[0]));
    let a = affinity(&s);
    assert_eq!(a.len(), 8);
    for cores in a.values() {
        assert_eq!(*cores, (0..40).collect::<Vec<u32>>());
    }
}

#[test]
fn machines_without_affinity_or_codelets_print_neither_section() {
    // tsubame2-node.toml is written by hand from Shimokawabe et al. 2013 and has neither `[affinity]` nor
    // `[[codelets]]`.
    let text = std::fs::read_to_string(repo("calibration/tsubame2-node.toml")).unwrap();
    assert!(!text.contains("[affinity]") && !text.contains("[[codelets]]"));
    let s = check_output("calibration/tsubame2-node.toml");
    assert!(!s.contains("\naffinity:"), "{s}");
    assert!(!s.contains("\ncodelets:"), "{s}");
}
