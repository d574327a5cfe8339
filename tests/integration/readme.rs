//! The README's install and walk-through commands run as written: every `hetsim ...` line of
//! the walk-through's `sh` block is run from the crate root with the built binary, its `out/`
//! directory mapped to a scratch directory, and must exit 0.

use std::path::Path;
use std::process::{Command, Stdio};

/// The lines of the first `sh` block after `heading` in the README.
fn block_after(readme: &str, heading: &str) -> Vec<String> {
    let start = readme
        .find(heading)
        .unwrap_or_else(|| panic!("README has no {heading:?}"));
    let rest = &readme[start..];
    let open = rest.find("```sh\n").expect("an sh block") + "```sh\n".len();
    let close = rest[open..].find("```").expect("the block ends");
    rest[open..open + close]
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn the_walk_through_runs_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("readme");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let out_prefix = format!("{}/", out.display());

    let lines = block_after(&readme, "## A ten-minute walk-through");
    let commands: Vec<&String> = lines.iter().filter(|l| l.starts_with("hetsim ")).collect();
    assert!(
        commands.len() >= 9,
        "the walk-through lost commands: {lines:?}"
    );
    for line in &lines {
        let line = line.trim();
        assert!(
            line.is_empty()
                || line.starts_with('#')
                || line.starts_with("hetsim ")
                || line == "mkdir -p out",
            "a walk-through line this test cannot run: {line}"
        );
    }
    for cmd in commands {
        // The README's words are split on spaces: no quoting is used there.
        let args: Vec<String> = cmd
            .split_whitespace()
            .skip(1)
            .map(|a| a.replace("out/", &out_prefix))
            .collect();
        let run = Command::new(env!("CARGO_BIN_EXE_hetsim"))
            .current_dir(root)
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{cmd}\n{}",
            String::from_utf8_lossy(&run.stderr)
        );
    }
    for f in [
        "sweep.csv",
        "sweep.svg",
        "cholesky.json",
        "cholesky.paje",
        "cholesky.svg",
        "my-machine.toml",
        "stencil-graph.json",
    ] {
        let len = std::fs::metadata(out.join(f)).map_or(0, |m| m.len());
        assert!(len > 0, "{f} was not written");
    }
    // The sweep's seeds give a spread under noise: some (sched, n) has two different makespans.
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    let mut seen = std::collections::BTreeMap::<String, Vec<String>>::new();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (sched, n, makespan) = (col("sched"), col("workload.n"), col("makespan_s"));
    for row in csv.lines().skip(1) {
        let f: Vec<&str> = row.split(',').collect();
        seen.entry(format!("{} {}", f[sched], f[n]))
            .or_default()
            .push(f[makespan].to_string());
    }
    assert_eq!(seen.len(), 9, "{csv}");
    assert!(
        seen.values()
            .all(|v| v.len() == 3 && (v[0] != v[1] || v[1] != v[2])),
        "seeds should spread the makespans: {seen:?}"
    );
}

/// The install section names the command and the Rust version that Cargo.toml declares.
#[test]
fn the_install_section_matches_cargo_toml() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let cargo = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let version = cargo
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .expect("Cargo.toml declares rust-version");
    assert!(
        readme.contains(&format!("Rust {version} or newer")),
        "README must say Rust {version}"
    );
    assert!(
        block_after(&readme, "## Install")
            .iter()
            .any(|l| l.starts_with("cargo install --path ."))
    );
}
