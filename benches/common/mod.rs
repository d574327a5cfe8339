//! Shared by the benchmarks: a tiny seeded generator, so every run does the same simulated work
//! without depending on the simulator's own RNG streams.

/// splitmix64.
pub struct Rng(pub u64);

#[allow(dead_code)] // each benchmark uses only some of the draws
impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 32) * n as u64) >> 32) as usize
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Exponential with the given mean (never 0, never infinite).
    pub fn exp(&mut self, mean: f64) -> f64 {
        let u = ((self.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64);
        -mean * u.ln()
    }
}

/// Peak resident memory of this process so far, from `/proc/self/status` (Linux), in kB; `None`
/// where the file or its `VmHWM` line is missing.
#[allow(dead_code)] // not every benchmark reports memory
pub fn vm_hwm_kb() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// HPL on `nodes` × `gpus` P100 of the HD-PEX cluster file with the workload table of
/// `scenarios/hpl-hdpex-p100.toml` (its calibrated DGEMM models), N and NB replaced, and the
/// pivot searches as `pivot_search` says.
#[allow(dead_code)] // only the HPL benchmarks use it
pub fn hpl_case(
    nodes: u64,
    gpus: u64,
    n: u64,
    nb: u64,
    pivot_search: hetsim::workload::PivotSearch,
) -> (hetsim::cluster::Cluster, hetsim::workload::HplSpec) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../calibration/hdpex-p100-cluster.toml"
    );
    let cluster = hetsim::cluster::load(path)
        .and_then(|c| c.with_shape(nodes as u32, gpus as u32))
        .expect("the HD-PEX cluster file loads");
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scenarios/hpl-hdpex-p100.toml"
    ))
    .expect("the scenario reads");
    let mut doc: toml::Table = toml::from_str(&text).expect("the scenario parses");
    let mut w = doc
        .remove("workload")
        .and_then(|w| w.as_table().cloned())
        .expect("a [workload] table");
    w.remove("kind");
    w.insert("n".into(), toml::Value::Integer(n as i64));
    w.insert("nb".into(), toml::Value::Integer(nb as i64));
    let mut spec: hetsim::workload::HplSpec = w.try_into().expect("an hpl workload");
    spec.pivot_search = pivot_search;
    (cluster, spec)
}

/// Growth exponent of `y` in `x` between two measurements: ln(y₂/y₁) / ln(x₂/x₁).
#[allow(dead_code)] // not every benchmark reports growth
pub fn growth(prev: Option<(f64, f64)>, x: f64, y: f64) -> String {
    match prev {
        Some((x1, y1)) if x > x1 && y1 > 0.0 && y > 0.0 => {
            format!("{:.2}", (y / y1).ln() / (x / x1).ln())
        }
        _ => "".into(),
    }
}
