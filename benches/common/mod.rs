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
