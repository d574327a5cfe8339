//! The multi-GPU scalability model of stencil applications (Shimokawabe et al. 2013 §5): each time step, every
//! GPU updates its subdomain (`V` flops at the single-GPU rate `P`) and exchanges boundary data
//! GPU → CPU → network → CPU → GPU; without overlap the two add up (eq. 2), with overlap the
//! longer one counts (eq. 4). Link bandwidths depend on the message size (eq. 5).

use super::{at_least_one, non_negative, positive};
use hetsim_core::InputError;

/// Shimokawabe et al. 2013 eq. 5: a link's effective bandwidth for `s`-byte messages,
/// `B(s) = s / (s/B0 + t0)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BandwidthModel {
    /// `B0`: the asymptotic bandwidth, bytes/s.
    pub peak_bytes_per_sec: f64,
    /// `t0`: the latency, seconds.
    pub latency_s: f64,
}

impl BandwidthModel {
    /// Check `B0 > 0` and `t0 >= 0`; `name` prefixes the fields in errors.
    pub fn check(&self, name: &str) -> Result<(), InputError> {
        positive(&format!("{name}_b0_bytes_per_sec"), self.peak_bytes_per_sec)?;
        non_negative(&format!("{name}_t0_s"), self.latency_s)?;
        Ok(())
    }

    /// Eq. 5: `B(s) = s/(s/B0 + t0)`, bytes/s (`B0` for `t0 = 0`; 0 for `s = 0` when `t0 > 0`).
    pub fn bandwidth_bytes_per_sec(&self, bytes: f64) -> f64 {
        let t = self.time_s(bytes);
        if t > 0.0 {
            bytes / t
        } else {
            self.peak_bytes_per_sec
        }
    }

    /// The time of one `s`-byte message, `s/B(s) = s/B0 + t0`, seconds.
    pub fn time_s(&self, bytes: f64) -> f64 {
        bytes / self.peak_bytes_per_sec + self.latency_s
    }
}

/// Fit eq. 5 to measured `(size_bytes, bandwidth_bytes_per_sec)` samples by least squares.
///
/// The model is linear in `1/B0` and `t0` through the time `t(s) = s/B(s) = s/B0 + t0`, so the
/// fit is the ordinary least-squares line of `t` against `s`: slope `1/B0`, intercept `t0`. It
/// needs two distinct sizes, and fails when the fitted slope is not positive (the bandwidth
/// would be infinite or negative) or the fitted latency is negative (the samples then do not
/// follow eq. 5; fit a narrower range of sizes).
pub fn fit_bandwidth_model(samples: &[(f64, f64)]) -> Result<BandwidthModel, InputError> {
    let mut pts = Vec::with_capacity(samples.len());
    for (i, &(s, b)) in samples.iter().enumerate() {
        if !(s.is_finite() && s > 0.0 && b.is_finite() && b > 0.0) {
            return Err(InputError::new(format!(
                "sample {}: size {s} and bandwidth {b} must be finite and > 0",
                i + 1
            ))
            .at_field("samples"));
        }
        pts.push((s, s / b));
    }
    let n = pts.len() as f64;
    if pts.len() < 2 {
        return Err(InputError::new("need at least two samples").at_field("samples"));
    }
    let ms = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let mt = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - ms) * (p.0 - ms)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - ms) * (p.1 - mt)).sum();
    if sxx <= 0.0 {
        return Err(InputError::new("need at least two distinct sizes").at_field("samples"));
    }
    let slope = sxy / sxx;
    let intercept = mt - slope * ms;
    if slope <= 0.0 {
        return Err(InputError::new(format!(
            "the fitted time per byte is {slope:e} s, not positive: the samples do not follow \
             B(s) = s/(s/B0 + t0)"
        ))
        .at_field("samples"));
    }
    if intercept < 0.0 {
        return Err(InputError::new(format!(
            "the fitted latency t0 is negative ({intercept:e} s): the samples do not follow \
             B(s) = s/(s/B0 + t0)"
        ))
        .at_field("samples"));
    }
    Ok(BandwidthModel {
        peak_bytes_per_sec: 1.0 / slope,
        latency_s: intercept,
    })
}

/// Parameters of the scalability model for one time step.
#[derive(Debug, Clone, PartialEq)]
pub struct StencilParams {
    /// `V`: flops to update one subdomain for one step.
    pub flops_per_subdomain: f64,
    /// `P`: the single-GPU rate, measured or from the Improved Roofline model, flop/s.
    pub single_gpu_flops_per_sec: f64,
    /// `R`: the number of subdomains (= GPUs).
    pub subdomains: u64,
    /// `g`: GPUs per node, sharing the node's network link.
    pub gpus_per_node: u64,
    /// `s_j`: the bytes of each boundary message of one subdomain per step.
    pub messages_bytes: Vec<f64>,
    /// `B_IB(s)`: the inter-node link.
    pub inter_node: BandwidthModel,
    /// `B_PCIe(s)`: the GPU-CPU link.
    pub pcie: BandwidthModel,
}

/// The model's prediction for one time step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StencilPrediction {
    /// `V/P`, seconds.
    pub compute_s: f64,
    /// `Σ_j s_j·2g/B_IB(s_j)`, seconds (0 when all GPUs are in one node).
    pub inter_node_s: f64,
    /// `Σ_j s_j·2/B_PCIe(s_j)`, seconds.
    pub pcie_s: f64,
    /// The communication, eq. 3, seconds.
    pub comm_s: f64,
    /// Eq. 2's step time, `V/P + comm`, seconds.
    pub non_overlap_step_s: f64,
    /// Eq. 4's step time, `max(V/P, comm)`, seconds.
    pub overlap_step_s: f64,
    /// Eq. 2: `P_m = VR/(V/P + comm)`, flop/s.
    pub non_overlap_flops_per_sec: f64,
    /// Eq. 4: `P_m = VR/max(V/P, comm)`, flop/s.
    pub overlap_flops_per_sec: f64,
}

/// Shimokawabe et al. 2013 eq. 3: `Σ_j s_j·[2g/B_IB(s_j) + 2/B_PCIe(s_j)]` — the `g` GPUs of a node share its
/// network link in both directions (`B_IB/2g` each), and each message crosses PCIe twice
/// (GPU → CPU, CPU → GPU). Returns `(inter-node, PCIe)` seconds. When all `R` GPUs are in one
/// node (`R ≤ g`) no message crosses the network and the inter-node part is 0 (the paper only
/// evaluates multi-node runs; this is our reading for one node).
pub fn comm_time_s(params: &StencilParams) -> Result<(f64, f64), InputError> {
    params.inter_node.check("ib")?;
    params.pcie.check("pcie")?;
    let r = at_least_one("subdomains", params.subdomains)?;
    let g = at_least_one("gpus_per_node", params.gpus_per_node)? as f64;
    let mut ib = 0.0;
    let mut pcie = 0.0;
    for (j, &s) in params.messages_bytes.iter().enumerate() {
        let s = non_negative(&format!("messages_bytes[{j}]"), s)?;
        if s == 0.0 {
            continue;
        }
        if r as f64 > g {
            ib += s * 2.0 * g / params.inter_node.bandwidth_bytes_per_sec(s);
        }
        pcie += s * 2.0 / params.pcie.bandwidth_bytes_per_sec(s);
    }
    Ok((ib, pcie))
}

/// Shimokawabe et al. 2013 eqs. 2 and 4: the multi-GPU performance without and with overlap of communication
/// by computation, `P_m = VR/(V/P + Σ s_j/B_m(s_j))` and `P_m = VR/max(V/P, Σ s_j/B_m(s_j))`.
pub fn stencil(params: &StencilParams) -> Result<StencilPrediction, InputError> {
    let v = positive("flops_per_subdomain", params.flops_per_subdomain)?;
    let p = positive("single_gpu_flops_per_sec", params.single_gpu_flops_per_sec)?;
    let (ib, pcie) = comm_time_s(params)?;
    let r = params.subdomains as f64;
    let compute = v / p;
    let comm = ib + pcie;
    let non_overlap = compute + comm;
    let overlap = compute.max(comm);
    Ok(StencilPrediction {
        compute_s: compute,
        inter_node_s: ib,
        pcie_s: pcie,
        comm_s: comm,
        non_overlap_step_s: non_overlap,
        overlap_step_s: overlap,
        non_overlap_flops_per_sec: v * r / non_overlap,
        overlap_flops_per_sec: v * r / overlap,
    })
}

/// A regular `nx × ny × nz` mesh decomposed in 2-D over `y` and `z` on a `py × pz` grid of GPUs
/// (Shimokawabe et al. 2013 §6: 2-D decomposition; for the LBM mesh `192 × N × N` the small `x` is kept whole).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mesh2d {
    /// Points along x (not decomposed).
    pub nx: u64,
    /// Points along y.
    pub ny: u64,
    /// Points along z.
    pub nz: u64,
    /// GPUs along y.
    pub py: u64,
    /// GPUs along z.
    pub pz: u64,
    /// Flops to update one point for one step (diffusion 13, D3Q19 LBM 476).
    pub flops_per_point: f64,
    /// Bytes sent per boundary point per step, halo width included (diffusion: one 4-byte
    /// float; LBM: 13 floats, 52 bytes).
    pub bytes_per_boundary_point: f64,
}

impl Mesh2d {
    /// `R = py·pz`.
    pub fn subdomains(&self) -> u64 {
        self.py.saturating_mul(self.pz)
    }

    /// `V`: flops per subdomain per step.
    pub fn flops_per_subdomain(&self) -> f64 {
        let points = self.nx as f64 * self.ny as f64 * self.nz as f64;
        self.flops_per_point * points / self.subdomains().max(1) as f64
    }

    /// The messages of an interior subdomain per step: up to two faces normal to y
    /// (`nx·nz/pz` points each) and two normal to z (`nx·ny/py`); a dimension split in two has
    /// one neighbour, a dimension not split none. For `N³` on `√R × √R` with 4-byte points a face
    /// is `4N²/√R` bytes, as in Shimokawabe et al. 2013 §6.1.2.
    pub fn messages_bytes(&self) -> Vec<f64> {
        let b = self.bytes_per_boundary_point;
        let y_face = self.nx as f64 * self.nz as f64 / self.pz.max(1) as f64 * b;
        let z_face = self.nx as f64 * self.ny as f64 / self.py.max(1) as f64 * b;
        let mut out = Vec::new();
        for _ in 0..self.py.saturating_sub(1).min(2) {
            out.push(y_face);
        }
        for _ in 0..self.pz.saturating_sub(1).min(2) {
            out.push(z_face);
        }
        out
    }

    /// Check the mesh: every extent and grid size at least 1, the grid no larger than the mesh.
    pub fn check(&self) -> Result<(), InputError> {
        at_least_one("nx", self.nx)?;
        at_least_one("ny", self.ny)?;
        at_least_one("nz", self.nz)?;
        at_least_one("py", self.py)?;
        at_least_one("pz", self.pz)?;
        if self.py > self.ny {
            return Err(InputError::new("more GPUs along y than points").at_field("py"));
        }
        if self.pz > self.nz {
            return Err(InputError::new("more GPUs along z than points").at_field("pz"));
        }
        positive("flops_per_point", self.flops_per_point)?;
        non_negative("bytes_per_boundary_point", self.bytes_per_boundary_point)?;
        Ok(())
    }
}

// ---- as a registered model (`crate::MODELS`) ------------------------------------------------

use crate::params::{Evaluation, ParamSpec, ParamType, Params, opt, req};

/// The parameters of `stencil`.
pub const STENCIL_PARAMS: &[ParamSpec] = &[
    req(
        "nx",
        ParamType::Count,
        "mesh points along x (not decomposed)",
    ),
    req("ny", ParamType::Count, "mesh points along y"),
    req("nz", ParamType::Count, "mesh points along z"),
    req("py", ParamType::Count, "GPUs along y"),
    req("pz", ParamType::Count, "GPUs along z"),
    req(
        "flops_per_point",
        ParamType::Real,
        "flops per point per step (diffusion 13, LBM 476)",
    ),
    req(
        "bytes_per_boundary_point",
        ParamType::Real,
        "bytes sent per boundary point per step (diffusion 4, LBM 52)",
    ),
    req(
        "gpus_per_node",
        ParamType::Count,
        "g, GPUs sharing a node's network link",
    ),
    opt(
        "single_gpu_flops_per_sec",
        ParamType::Real,
        "P; default: Improved Roofline from the three parameters below",
    ),
    opt("peak_flops_per_sec", ParamType::Real, "F_peak of one GPU"),
    opt("peak_bytes_per_sec", ParamType::Real, "B_peak of one GPU"),
    opt(
        "intensity_flops_per_byte",
        ParamType::Real,
        "F/B of the kernel",
    ),
    req(
        "ib_b0_bytes_per_sec",
        ParamType::Real,
        "inter-node B0 (eq. 5)",
    ),
    req("ib_t0_s", ParamType::Real, "inter-node t0"),
    req("pcie_b0_bytes_per_sec", ParamType::Real, "GPU-CPU B0"),
    req("pcie_t0_s", ParamType::Real, "GPU-CPU t0"),
];

/// `stencil`: [`stencil()`] on a [`Mesh2d`], the single-GPU rate given or from the Improved
/// Roofline.
pub fn evaluate_stencil(p: &Params) -> Result<Evaluation, InputError> {
    let mut ev = Evaluation::default();
    let mesh = Mesh2d {
        nx: p.count("nx")?,
        ny: p.count("ny")?,
        nz: p.count("nz")?,
        py: p.count("py")?,
        pz: p.count("pz")?,
        flops_per_point: p.real("flops_per_point")?,
        bytes_per_boundary_point: p.real("bytes_per_boundary_point")?,
    };
    mesh.check()?;
    let single = match p.opt_real("single_gpu_flops_per_sec")? {
        Some(v) => v,
        None => {
            let dev = crate::roofline::peaks_of(p).map_err(|e| {
                InputError::new(format!(
                    "{}; give single_gpu_flops_per_sec, or peak_flops_per_sec, \
                     peak_bytes_per_sec and intensity_flops_per_byte",
                    e.message
                ))
                .at_field(e.location.field.unwrap_or_default())
            })?;
            ev.note(
                "single_gpu",
                "Improved Roofline (Shimokawabe et al. 2013 eq. 1)",
            );
            crate::roofline::improved_roofline_from_intensity(
                &dev,
                p.real("intensity_flops_per_byte")?,
            )?
        }
    };
    let params = StencilParams {
        flops_per_subdomain: mesh.flops_per_subdomain(),
        single_gpu_flops_per_sec: single,
        subdomains: mesh.subdomains(),
        gpus_per_node: p.count("gpus_per_node")?,
        messages_bytes: mesh.messages_bytes(),
        inter_node: BandwidthModel {
            peak_bytes_per_sec: p.real("ib_b0_bytes_per_sec")?,
            latency_s: p.real("ib_t0_s")?,
        },
        pcie: BandwidthModel {
            peak_bytes_per_sec: p.real("pcie_b0_bytes_per_sec")?,
            latency_s: p.real("pcie_t0_s")?,
        },
    };
    let r = stencil(&params)?;
    ev.term("overlap_flops_per_sec", r.overlap_flops_per_sec, "flop/s");
    ev.term(
        "non_overlap_flops_per_sec",
        r.non_overlap_flops_per_sec,
        "flop/s",
    );
    ev.term("compute_s", r.compute_s, "s");
    ev.term("comm_s", r.comm_s, "s");
    ev.term("inter_node_s", r.inter_node_s, "s");
    ev.term("pcie_s", r.pcie_s, "s");
    ev.term("single_gpu_flops_per_sec", single, "flop/s");
    ev.term("subdomains", params.subdomains as f64, "");
    ev.term("messages", params.messages_bytes.len() as f64, "");
    ev.term(
        "message_bytes_max",
        params.messages_bytes.iter().copied().fold(0.0, f64::max),
        "B",
    );
    Ok(ev)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bandwidth_model_and_fit() {
        let m = BandwidthModel {
            peak_bytes_per_sec: 1e9,
            latency_s: 1e-5,
        };
        // s = B0·t0 = 1e4 bytes: half the peak
        assert!((m.bandwidth_bytes_per_sec(1e4) - 5e8).abs() < 1e-3);
        let samples: Vec<(f64, f64)> = [1e3, 1e4, 1e5, 1e6, 1e7]
            .iter()
            .map(|&s| (s, m.bandwidth_bytes_per_sec(s)))
            .collect();
        let f = fit_bandwidth_model(&samples).unwrap();
        assert!((f.peak_bytes_per_sec / 1e9 - 1.0).abs() < 1e-9);
        assert!((f.latency_s / 1e-5 - 1.0).abs() < 1e-9);
        assert!(fit_bandwidth_model(&samples[..1]).is_err());
        assert!(fit_bandwidth_model(&[(1e3, 1e9), (1e3, 2e9)]).is_err());
        assert!(fit_bandwidth_model(&[(1e3, 0.0), (1e4, 1e9)]).is_err());
        // falling time with size: not eq. 5
        assert!(fit_bandwidth_model(&[(1e3, 1e3), (1e6, 1e12)]).is_err());
    }

    #[test]
    fn fit_is_least_squares_on_time() {
        // t = s + 1 (B0 = 1, t0 = 1) at s = 1, 2, 3, the first time off by +0.3: times 2.3, 3,
        // 4; mean s 2, mean t 3.1; slope ((-1)(-0.8) + 0 + (1)(0.9))/2 = 0.85, intercept
        // 3.1 - 2·0.85 = 1.4.
        let samples = [(1.0, 1.0 / 2.3), (2.0, 2.0 / 3.0), (3.0, 3.0 / 4.0)];
        let f = fit_bandwidth_model(&samples).unwrap();
        assert!((1.0 / f.peak_bytes_per_sec - 0.85).abs() < 1e-12);
        assert!((f.latency_s - 1.4).abs() < 1e-12);
    }

    fn link(b0: f64, t0: f64) -> BandwidthModel {
        BandwidthModel {
            peak_bytes_per_sec: b0,
            latency_s: t0,
        }
    }

    #[test]
    fn model_by_hand() {
        let p = StencilParams {
            flops_per_subdomain: 100.0,
            single_gpu_flops_per_sec: 10.0,
            subdomains: 4,
            gpus_per_node: 2,
            messages_bytes: vec![10.0, 10.0],
            inter_node: link(10.0, 0.5),
            pcie: link(20.0, 0.0),
        };
        // IB per message: 10·2·2/(10/(1 + 0.5)) = 6; PCIe: 10·2/20 = 1; two messages.
        let r = stencil(&p).unwrap();
        assert!((r.inter_node_s - 12.0).abs() < 1e-12);
        assert!((r.pcie_s - 2.0).abs() < 1e-12);
        assert_eq!(r.compute_s, 10.0);
        assert!((r.non_overlap_flops_per_sec - 400.0 / 24.0).abs() < 1e-12);
        assert!((r.overlap_flops_per_sec - 400.0 / 14.0).abs() < 1e-12);
        // One node: no network.
        let one = StencilParams {
            subdomains: 2,
            ..p.clone()
        };
        assert_eq!(stencil(&one).unwrap().inter_node_s, 0.0);
        // Overlap hides a short communication completely: P_m = R·P.
        let small = StencilParams {
            messages_bytes: vec![0.1],
            ..p.clone()
        };
        assert!((stencil(&small).unwrap().overlap_flops_per_sec - 40.0).abs() < 1e-12);
        let bad = StencilParams {
            pcie: link(0.0, 0.0),
            ..p
        };
        let e = stencil(&bad).unwrap_err();
        assert!(e.to_string().contains("pcie_b0_bytes_per_sec"), "{e}");
    }

    #[test]
    fn mesh_faces() {
        let m = Mesh2d {
            nx: 512,
            ny: 512,
            nz: 512,
            py: 4,
            pz: 4,
            flops_per_point: 13.0,
            bytes_per_boundary_point: 4.0,
        };
        // 4 faces of 4N²/√R bytes (Shimokawabe et al. 2013 §6.1.2)
        let f = 4.0 * 512.0 * 512.0 / 4.0;
        assert_eq!(m.messages_bytes(), vec![f; 4]);
        assert_eq!(m.flops_per_subdomain(), 13.0 * 512f64.powi(3) / 16.0);
        let two = Mesh2d { py: 2, pz: 1, ..m };
        assert_eq!(two.messages_bytes().len(), 1);
        assert!(Mesh2d { py: 0, ..m }.check().is_err());
        assert!(Mesh2d { pz: 600, ..m }.check().is_err());
    }
}
