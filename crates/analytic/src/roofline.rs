//! The Improved Roofline model (Shimokawabe et al. 2013 eq. 1, from the authors' earlier paper): the time of a
//! kernel is the sum of its computing time, its memory time and the time of its other
//! operations, not their maximum as in the Roofline model (Williams et al. 2009).

use super::{non_negative, positive};
use hetsim_core::InputError;

/// A device's peaks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Peaks {
    /// `F_peak`: the peak floating-point rate, flop/s.
    pub peak_flops_per_sec: f64,
    /// `B_peak`: the peak memory bandwidth, bytes/s.
    pub peak_bytes_per_sec: f64,
}

impl Peaks {
    fn check(&self) -> Result<(), InputError> {
        positive("peak_flops_per_sec", self.peak_flops_per_sec)?;
        positive("peak_bytes_per_sec", self.peak_bytes_per_sec)?;
        Ok(())
    }
}

/// Shimokawabe et al. 2013 eq. 1, first form: `P = F / (F/F_peak + B/B_peak + α)` for a kernel doing `F` flops
/// and moving `B` bytes (per grid point, per call ... any unit of work), `α` being the time of
/// its other operations (the paper takes `α = 0`). Returns flop/s.
pub fn improved_roofline_flops_per_sec(
    device: &Peaks,
    flops: f64,
    bytes: f64,
    other_s: f64,
) -> Result<f64, InputError> {
    device.check()?;
    let f = positive("flops", flops)?;
    let b = non_negative("bytes", bytes)?;
    let a = non_negative("other_s", other_s)?;
    Ok(f / (f / device.peak_flops_per_sec + b / device.peak_bytes_per_sec + a))
}

/// Shimokawabe et al. 2013 eq. 1, second form with `α = 0`: with the arithmetic intensity `I = F/B` (flop per
/// byte), `P = I / (I + F_peak/B_peak) · F_peak`.
pub fn improved_roofline_from_intensity(
    device: &Peaks,
    intensity_flops_per_byte: f64,
) -> Result<f64, InputError> {
    device.check()?;
    let i = positive("intensity_flops_per_byte", intensity_flops_per_byte)?;
    let fp = device.peak_flops_per_sec;
    Ok(i / (i + fp / device.peak_bytes_per_sec) * fp)
}

/// The Roofline model for comparison (Williams et al. 2009): `min(F_peak, I·B_peak)`.
pub fn roofline_flops_per_sec(
    device: &Peaks,
    intensity_flops_per_byte: f64,
) -> Result<f64, InputError> {
    device.check()?;
    let i = positive("intensity_flops_per_byte", intensity_flops_per_byte)?;
    Ok(device.peak_flops_per_sec.min(i * device.peak_bytes_per_sec))
}

// ---- as a registered model (`crate::MODELS`) ------------------------------------------------

use crate::params::{Evaluation, ParamSpec, ParamType, Params, def, opt, req};

/// The parameters of `roofline`.
pub const ROOFLINE_PARAMS: &[ParamSpec] = &[
    req("peak_flops_per_sec", ParamType::Real, "F_peak"),
    req("peak_bytes_per_sec", ParamType::Real, "B_peak"),
    opt(
        "intensity_flops_per_byte",
        ParamType::Real,
        "F/B; or give flops and bytes",
    ),
    opt("flops", ParamType::Real, "F per unit of work"),
    opt("bytes", ParamType::Real, "B per unit of work"),
    def(
        "other_s",
        ParamType::Real,
        "0",
        "α, time of other operations per unit of work",
    ),
];

/// The device from `peak_flops_per_sec` and `peak_bytes_per_sec`.
pub(crate) fn peaks_of(p: &Params) -> Result<Peaks, InputError> {
    Ok(Peaks {
        peak_flops_per_sec: p.real("peak_flops_per_sec")?,
        peak_bytes_per_sec: p.real("peak_bytes_per_sec")?,
    })
}

/// `roofline`: the Improved Roofline from an intensity, or from flops, bytes and other time.
pub fn evaluate_roofline(p: &Params) -> Result<Evaluation, InputError> {
    let mut ev = Evaluation::default();
    let dev = peaks_of(p)?;
    let intensity = p.opt_real("intensity_flops_per_byte")?;
    let (f, b) = (p.opt_real("flops")?, p.opt_real("bytes")?);
    let other = p.real("other_s")?;
    let (improved, i) = match (intensity, f, b) {
        (Some(i), None, None) if other == 0.0 => (improved_roofline_from_intensity(&dev, i)?, i),
        (None, Some(f), Some(b)) => (
            improved_roofline_flops_per_sec(&dev, f, b, other)?,
            if b > 0.0 { f / b } else { f64::INFINITY },
        ),
        (Some(_), None, None) => {
            return Err(InputError::new(
                "other_s needs flops and bytes (eq. 1, first form), not an intensity",
            )
            .at_field("other_s"));
        }
        _ => {
            return Err(InputError::new(
                "give either intensity_flops_per_byte, or flops and bytes",
            )
            .at_field("intensity_flops_per_byte"));
        }
    };
    ev.term("improved_flops_per_sec", improved, "flop/s");
    if i.is_finite() {
        ev.term(
            "roofline_flops_per_sec",
            roofline_flops_per_sec(&dev, i)?,
            "flop/s",
        );
        ev.term("intensity_flops_per_byte", i, "flop/B");
    }
    Ok(ev)
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: Peaks = Peaks {
        peak_flops_per_sec: 100.0,
        peak_bytes_per_sec: 50.0,
    };

    #[test]
    fn hand_cases() {
        // F = 10, B = 10: 10 / (0.1 + 0.2) = 33.33
        let p = improved_roofline_flops_per_sec(&D, 10.0, 10.0, 0.0).unwrap();
        assert!((p - 100.0 / 3.0).abs() < 1e-12);
        // with α = 0.2: 10 / 0.5 = 20
        assert_eq!(
            improved_roofline_flops_per_sec(&D, 10.0, 10.0, 0.2).unwrap(),
            20.0
        );
        // Intensity 1: 1/(1 + 2)·100, same as the first form.
        let q = improved_roofline_from_intensity(&D, 1.0).unwrap();
        assert!((q - p).abs() < 1e-12);
        // Roofline: min(100, 50) = 50, above the improved model.
        assert_eq!(roofline_flops_per_sec(&D, 1.0).unwrap(), 50.0);
        assert!(improved_roofline_from_intensity(&D, 0.0).is_err());
        let bad = Peaks {
            peak_bytes_per_sec: 0.0,
            ..D
        };
        let e = improved_roofline_from_intensity(&bad, 1.0).unwrap_err();
        assert!(e.to_string().contains("peak_bytes_per_sec"));
    }
}
