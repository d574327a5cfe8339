//! A kernel-time model for memory-bound kernels: the time of a kernel is its computing time
//! plus its memory time, not their maximum (the Improved Roofline of Shimokawabe et al. 2013
//! eq. 1 with no other operations). The analytic model of the same name lives apart, so that a
//! crosscheck compares the simulation with it, not with itself.

use super::ParamError;

/// A device's peaks, for [`ComputePlusMemory`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ComputePlusMemory {
    /// Peak floating-point rate, flop/s (positive).
    pub peak_flops_per_sec: f64,
    /// Peak memory bandwidth, bytes/s (positive).
    pub peak_bytes_per_sec: f64,
}

impl ComputePlusMemory {
    /// A model from the device's peaks, both positive and finite.
    pub fn new(peak_flops_per_sec: f64, peak_bytes_per_sec: f64) -> Result<Self, ParamError> {
        for (field, v) in [
            ("peak_flops", peak_flops_per_sec),
            ("memory_bandwidth", peak_bytes_per_sec),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(ParamError::new(
                    field,
                    None,
                    format!("expected a positive rate, got {v}"),
                ));
            }
        }
        Ok(ComputePlusMemory {
            peak_flops_per_sec,
            peak_bytes_per_sec,
        })
    }

    /// Seconds for a kernel doing `flops` (positive) and moving `bytes` (non-negative):
    /// `F / P` with the attained rate `P = F / (F/F_peak + B/B_peak)`.
    pub fn secs(&self, flops: f64, bytes: f64) -> Result<f64, ParamError> {
        if !(flops.is_finite() && flops > 0.0) {
            return Err(ParamError::new(
                "flops",
                None,
                format!("expected a positive count, got {flops}"),
            ));
        }
        if !(bytes.is_finite() && bytes >= 0.0) {
            return Err(ParamError::new(
                "bytes",
                None,
                format!("expected a non-negative count, got {bytes}"),
            ));
        }
        let rate = flops / (flops / self.peak_flops_per_sec + bytes / self.peak_bytes_per_sec);
        Ok(flops / rate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// By hand: 100 flop/s and 50 B/s; 10 flops and 10 bytes take 0.1 + 0.2 = 0.3 s.
    #[test]
    fn compute_time_plus_memory_time() {
        let m = ComputePlusMemory::new(100.0, 50.0).unwrap();
        assert!((m.secs(10.0, 10.0).unwrap() - 0.3).abs() < 1e-15);
        assert!((m.secs(10.0, 0.0).unwrap() - 0.1).abs() < 1e-15);
        assert!(m.secs(0.0, 1.0).is_err());
        assert!(ComputePlusMemory::new(0.0, 1.0).is_err());
    }
}
