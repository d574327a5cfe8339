//! `hetsim net` on bad input: exit status 2, a message on stderr that names the problem, no
//! panic, nothing on stdout. Plus the README's sanity check as a success case.
//!
//! About NaN and infinite bandwidths: JSON has no NaN or infinity literal, so a case file can
//! only carry one in forms a JSON parser must refuse or type-check:
//! - a bare `NaN` token, which is what Python's `json.dump` writes for `float("nan")` (and
//!   `Infinity` for `inf`): a JSON syntax error that must be reported with its line;
//! - `1e999`, a valid JSON number that overflows f64 (a lax parser would turn it into +inf):
//!   it must be refused, either by the parser (with the line) or by validation (naming the
//!   bandwidth);
//! - the string `"NaN"` where a number is expected: a type error, reported with the line or the
//!   field.
//!
//! All three are tested; in no case may a non-finite bandwidth reach the solver.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn fixture_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli_net");
    std::fs::create_dir_all(&dir).expect("create fixture directory");
    dir
}

/// Write `text` as fixture `name` and return its path.
fn fixture(name: &str, text: &str) -> PathBuf {
    let path = fixture_dir().join(name);
    std::fs::write(&path, text).expect("write fixture");
    path
}

fn hetsim_net(case: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hetsim"))
        .arg("net")
        .arg(case)
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .expect("run hetsim")
}

/// A valid case: a->b over l0, b->a over l0, one flow a->b. Tests break one thing in it.
fn base_case() -> Value {
    json!({
        "hosts": ["a", "b"],
        "links": [
            {"name": "l0", "bandwidth": 1e9, "latency": 1e-3, "sharing": "SHARED"}
        ],
        "routes": [
            {"src": "a", "dst": "b", "links": ["l0"]},
            {"src": "b", "dst": "a", "links": ["l0"]}
        ],
        "flows": [
            {"id": "f", "src": "a", "dst": "b", "bytes": 1_000_000_000u64, "start": 0.0}
        ]
    })
}

fn pretty(case: &Value) -> String {
    serde_json::to_string_pretty(case).expect("serialize fixture") + "\n"
}

/// 1-based number of the first line of `text` containing `needle`.
fn line_containing(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("fixture has no line with {needle:?}"))
        + 1
}

/// Assert a bad-input outcome: exit 2, no panic, empty stdout, and stderr containing at least
/// one of `words`. The case's path is replaced by `<CASE>` in stderr before the words are
/// looked for, so that a directory or file name cannot satisfy the check by accident.
fn assert_rejected(what: &str, case: &Path, out: &Output, words: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let show = format!(
        "{what}: status {}\nstdout: {stdout}\nstderr: {stderr}",
        out.status
    );
    assert!(
        !stderr.contains("panicked"),
        "{what}: hetsim panicked\n{show}"
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "{what}: exit status must be 2\n{show}"
    );
    assert!(
        stdout.trim().is_empty(),
        "{what}: nothing may be printed on stdout\n{show}"
    );
    let scrubbed = stderr.replace(&case.display().to_string(), "<CASE>");
    assert!(
        words.iter().any(|w| scrubbed.contains(w)),
        "{what}: stderr should name the problem (one of {words:?})\n{show}"
    );
}

fn reject_case(file: &str, case: &Value, words: &[&str]) {
    let path = fixture(file, &pretty(case));
    assert_rejected(file, &path, &hetsim_net(&path, &[]), words);
}

#[test]
fn unknown_link_in_route() {
    let mut case = base_case();
    case["routes"][0]["links"] = json!(["l0", "nosuchlink"]);
    reject_case("c01.json", &case, &["nosuchlink"]);
}

#[test]
fn flow_without_route() {
    let mut case = base_case();
    case["hosts"] = json!(["a", "b", "c"]);
    case["flows"][0]["dst"] = json!("c");
    reject_case("c02.json", &case, &["route"]);
}

#[test]
fn negative_bandwidth() {
    let mut case = base_case();
    case["links"][0]["bandwidth"] = json!(-1e9);
    reject_case("c03.json", &case, &["bandwidth"]);
}

#[test]
fn zero_bandwidth_on_used_route() {
    let mut case = base_case();
    case["links"][0]["bandwidth"] = json!(0.0);
    reject_case("c04.json", &case, &["bandwidth"]);
}

/// Python's json module writes a NaN float as the bare token `NaN`: not JSON.
#[test]
fn nan_bandwidth_bare_token() {
    let text = pretty(&base_case()).replace("1000000000.0", "NaN");
    let line = line_containing(&text, "NaN");
    let path = fixture("c05.json", &text);
    let at_line = format!("line {line}");
    assert_rejected("bare NaN", &path, &hetsim_net(&path, &[]), &[&at_line]);
}

/// `1e999` is valid JSON syntax but not a finite f64.
#[test]
fn overflowing_bandwidth() {
    let text = pretty(&base_case()).replace("1000000000.0", "1e999");
    let line = line_containing(&text, "1e999");
    let path = fixture("c06.json", &text);
    let at_line = format!("line {line}");
    assert_rejected(
        "bandwidth 1e999",
        &path,
        &hetsim_net(&path, &[]),
        &["bandwidth", &at_line],
    );
}

#[test]
fn nan_bandwidth_as_string() {
    let mut case = base_case();
    case["links"][0]["bandwidth"] = json!("NaN");
    let text = pretty(&case);
    let line = line_containing(&text, "\"NaN\"");
    let path = fixture("c07.json", &text);
    let at_line = format!("line {line}");
    assert_rejected(
        "bandwidth \"NaN\"",
        &path,
        &hetsim_net(&path, &[]),
        &["bandwidth", &at_line],
    );
}

#[test]
fn malformed_json() {
    // A missing comma between two links, on a known line.
    let text = "{\n  \"hosts\": [\"a\", \"b\"],\n  \"links\": [\n    \
                {\"name\": \"l0\", \"bandwidth\": 1e9, \"latency\": 0.0, \"sharing\": \"SHARED\"}\n    \
                {\"name\": \"l1\", \"bandwidth\": 1e9, \"latency\": 0.0, \"sharing\": \"SHARED\"}\n  ],\n  \
                \"routes\": [],\n  \"flows\": []\n}\n";
    let line = line_containing(text, "\"l1\"");
    let path = fixture("c08.json", text);
    let at_line = format!("line {line}");
    assert_rejected(
        "malformed JSON",
        &path,
        &hetsim_net(&path, &[]),
        &[&at_line],
    );
}

#[test]
fn truncated_json() {
    let text = pretty(&base_case());
    let path = fixture("c09.json", &text[..text.len() / 2]);
    assert_rejected(
        "truncated JSON",
        &path,
        &hetsim_net(&path, &[]),
        &["line", "JSON", "EOF"],
    );
}

#[test]
fn unknown_link_sharing_policy() {
    let mut case = base_case();
    case["links"][0]["sharing"] = json!("WIBBLE");
    reject_case("c10.json", &case, &["WIBBLE"]);
}

#[test]
fn unknown_sharing_option() {
    let path = fixture("c11.json", &pretty(&base_case()));
    assert_rejected(
        "--sharing wibble",
        &path,
        &hetsim_net(&path, &["--sharing", "wibble"]),
        &["wibble"],
    );
}

#[test]
fn flow_with_unknown_host() {
    let mut case = base_case();
    case["flows"][0]["src"] = json!("ghost");
    reject_case("c12.json", &case, &["ghost"]);
}

#[test]
fn nonexistent_file() {
    let path = fixture_dir().join("c99_does_not_exist.json");
    let _ = std::fs::remove_file(&path);
    assert_rejected(
        "nonexistent file",
        &path,
        &hetsim_net(&path, &[]),
        &["<CASE>"],
    );
}

/// README sanity check: 1 GB over one 1 GB/s link with 1 ms latency ends at exactly 1.001 s.
#[test]
fn single_flow_sanity_check() {
    let path = fixture("c13.json", &pretty(&base_case()));
    let variants: [&[&str]; 3] = [&[], &["--sharing", "plain"], &["--sharing", "simgrid"]];
    for extra in variants {
        let out = hetsim_net(&path, extra);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{extra:?}: status {}\nstderr: {stderr}",
            out.status
        );
        let v: Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("{extra:?}: stdout is not JSON ({e}): {stdout:?}"));
        let obj = v.as_object().expect("stdout is a JSON object");
        assert_eq!(obj.len(), 1, "{extra:?}: one flow expected: {stdout}");
        assert_eq!(
            obj.get("f").and_then(Value::as_f64),
            Some(1.001),
            "{extra:?}: {stdout}"
        );
    }
}

/// Two flows of 1 GB and 3 GB on one 1 GB/s link without latency: the first ends at 2 s; the
/// second, alone from then, ends at 4 s, or at 4.25 s when the re-share waits 0.5 s (it stays
/// at 0.5 GB/s until 2.5 s, 1.75 GB left at 1 GB/s).
#[test]
fn reshare_delay_puts_off_the_reshare_after_a_completion() {
    let mut case = base_case();
    case["links"][0]["latency"] = json!(0.0);
    case["flows"] = json!([
        {"id": "short", "src": "a", "dst": "b", "bytes": 1_000_000_000u64, "start": 0.0},
        {"id": "long", "src": "a", "dst": "b", "bytes": 3_000_000_000u64, "start": 0.0}
    ]);
    let path = fixture("c14.json", &pretty(&case));
    for (extra, long_s) in [(&[][..], 4.0), (&["--reshare-delay", "500 ms"][..], 4.25)] {
        let out = hetsim_net(&path, extra);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{extra:?}: status {}", out.status);
        let v: Value = serde_json::from_str(&stdout).expect("stdout is JSON");
        assert_eq!(v["short"].as_f64(), Some(2.0), "{extra:?}: {stdout}");
        assert_eq!(v["long"].as_f64(), Some(long_s), "{extra:?}: {stdout}");
    }
}

#[test]
fn reshare_delay_without_a_unit_or_negative() {
    let path = fixture("c15.json", &pretty(&base_case()));
    for (bad, words) in [
        ("5", &["no unit"][..]),
        ("-1 us", &["negative"][..]),
        ("soon", &["does not start with a number"][..]),
    ] {
        let out = hetsim_net(&path, &[&format!("--reshare-delay={bad}")]);
        assert_rejected(&format!("--reshare-delay {bad}"), &path, &out, words);
    }
}
