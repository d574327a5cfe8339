//! The `offload` workload: MMGP offload phases (Blagojevic et al. 2008, Blagojevic et al.), as an MPI-style
//! program.
//!
//! MMGP (Blagojevic et al. 2008 §3) describes a program of `N` phases. In each phase `m` host (HPU) threads do
//! their host part, then each offloads its accelerator (APU) part to `p` APUs, one offload after
//! another with a gap `g` between them (eq. 7's `p·g`); the APUs run their share of the
//! parallelisable part `T_APU(1, 1)/(m·p)` (eqs. 6, 9), then a serial part `C_APU` runs on one
//! APU; each offload costs `O_offload = O_s + O_r` (eq. 2) and a phase ends with the context switch
//! `T_CSW` and the global synchronisation `O_COL` (eq. 10).
//!
//! # Mapping onto a program
//!
//! | MMGP (Blagojevic et al. 2008) | field | program |
//! |---|---|---|
//! | `N` (eq. 5) | `phases` | the phases run one after another; each ends in a join |
//! | `m` (eq. 8) | `hpu_threads` | `m` host kernels per phase |
//! | `p` (eq. 7) | `apus_per_thread` | thread `k` uses ranks `k·p … k·p+p−1` as its APUs (their GPUs) |
//! | `N_APU` (eq. 11's constraint) | — | the cluster's ranks (GPUs): `m·p` must not exceed it |
//! | `T_HPU(1, 1)` | `t_hpu` | per phase, `m` kernels of `α_m·T_HPU/(N·m)` on rank 0's CPU, the one HPU |
//! | `α_m` (eq. 10) | `alpha_m` | scales the host kernels (the simulator has no SMT contention of its own) |
//! | `T_APU(1, 1)` | `t_apu` | per phase and thread, `p` GPU kernels of `T_APU/(N·m·p)` |
//! | `C_APU` (eq. 6) | `c_apu` | per phase and thread, one GPU kernel of `C_APU/N` on the thread's first APU, after its `p` kernels |
//! | `O_offload` (eq. 2) | `o_offload` | per phase and thread, a delay before the first offload |
//! | `g` (eq. 7) | `gap` | a chain of `p` delays `g`; the `k`-th APU kernel starts after the `k`-th |
//! | `T_CSW` (eq. 10) | `t_csw` | per phase and thread, a delay after its serial APU part |
//! | `O_COL` (eq. 10) | `o_col` | per phase, a delay after the join of all threads |
//!
//! All durations in the file are totals over the run (as a profile of a sequential run gives them,
//! Blagojevic et al. 2008 §4.1), except the per-offload and per-phase overheads `o_offload`, `gap`, `t_csw` and
//! `o_col`, which eq. 11 multiplies by `N`. The host parts of a phase all run before its
//! offloads (a join), as the model adds the HPU and APU terms. Kernel times are deterministic.
//!
//! With these choices the program's critical path per phase is
//! `α_m·T_HPU/N + O_offload + p·g + T_APU/(N·m·p) + C_APU/N + T_CSW + O_COL`, and over `N` phases
//! exactly eq. 11; what the simulation adds beyond it is what the model leaves out (e.g. data
//! moved with each offload, `offload_bytes`).

use serde::Deserialize;

use crate::{Kernel, Message, OpId, Program, ProgramBuilder, RankId, Unit};
use hetsim_core::error::InputError;
use hetsim_core::units;
use hetsim_core::units::RawQuantity;
use hetsim_platform::cluster::Cluster;

use super::ProgramGenerator;

/// Largest number of operations an offload program may have (phases × threads × APUs × 2 or so).
pub const MAX_OFFLOAD_OPS: u64 = 10_000_000;

/// `[workload]` with `kind = "offload"`: MMGP's parameters (Blagojevic et al. 2008 eq. 11) and the
/// configuration `(m, p)`. Quantities are bare numbers in SI base units or strings with a unit
/// (`"1.3 s"`, `"70 ns"`, `"4 KiB"`); they are boxed to keep [`super::ProgramWorkload`] small.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OffloadSpec {
    /// `N`: phases (default 1).
    #[serde(default = "one")]
    pub phases: u64,
    /// `m`: HPU threads (processes) sharing the host.
    pub hpu_threads: u64,
    /// `p`: APUs each HPU thread spreads its accelerator part over.
    pub apus_per_thread: u64,
    /// `T_HPU(1, 1)`: the host part with one thread, total over the run.
    pub t_hpu: Box<RawQuantity>,
    /// `T_APU(1, 1)`: the parallelisable accelerator part on one APU, total over the run.
    pub t_apu: Box<RawQuantity>,
    /// `C_APU`: the accelerator part that runs sequentially, total over the run (default 0).
    #[serde(default)]
    pub c_apu: Option<Box<RawQuantity>>,
    /// `O_offload = O_s + O_r`: overhead of one offload, paid per phase and thread (default 0).
    #[serde(default)]
    pub o_offload: Option<Box<RawQuantity>>,
    /// `g`: gap between consecutive offloads of one thread, paid `p` times per phase (default 0).
    #[serde(default)]
    pub gap: Option<Box<RawQuantity>>,
    /// `T_CSW`: context switch on the HPU, per phase (default 0).
    #[serde(default)]
    pub t_csw: Option<Box<RawQuantity>>,
    /// `O_COL`: global synchronisation, per phase (default 0).
    #[serde(default)]
    pub o_col: Option<Box<RawQuantity>>,
    /// `α_m`: slowdown of host work when threads share the HPU (default 1; Blagojevic et al. 2008 uses 1.28).
    #[serde(default = "one_f64")]
    pub alpha_m: f64,
    /// Bytes each offload copies from host memory to its APU's memory before the APU starts
    /// (default 0). MMGP assumes such data is streamed and hidden behind APU computation (seed
    /// 002 §3.1), so a non-zero value is a departure from the model that `hetsim crosscheck`
    /// reports.
    #[serde(default)]
    pub offload_bytes: Option<Box<RawQuantity>>,
}

fn one() -> u64 {
    1
}

fn one_f64() -> f64 {
    1.0
}

/// The validated numbers of an [`OffloadSpec`], in seconds and bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OffloadParams {
    /// `N`.
    pub phases: u64,
    /// `m`.
    pub m: u64,
    /// `p`.
    pub p: u64,
    /// `T_HPU(1, 1)`, s.
    pub t_hpu_s: f64,
    /// `T_APU(1, 1)`, s.
    pub t_apu_s: f64,
    /// `C_APU`, s.
    pub c_apu_s: f64,
    /// `O_offload`, s.
    pub o_offload_s: f64,
    /// `g`, s.
    pub gap_s: f64,
    /// `T_CSW`, s.
    pub t_csw_s: f64,
    /// `O_COL`, s.
    pub o_col_s: f64,
    /// `α_m`.
    pub alpha_m: f64,
    /// Bytes copied host → APU per offload.
    pub offload_bytes: f64,
}

fn seconds(field: &str, q: Option<&RawQuantity>) -> Result<f64, InputError> {
    let at = format!("workload.{field}");
    let v = match q {
        None => return Ok(0.0),
        Some(q) => q.read(units::Kind::Seconds),
    };
    v.map_err(|e| InputError::new(e.to_string()).at_field(at))
}

fn count(field: &str, v: u64) -> Result<u64, InputError> {
    if v == 0 {
        return Err(InputError::new("expected a whole number >= 1, got 0")
            .at_field(format!("workload.{field}")));
    }
    Ok(v)
}

impl OffloadSpec {
    /// Check the values (not against a cluster) and convert them to seconds and bytes.
    pub fn params(&self) -> Result<OffloadParams, InputError> {
        let phases = count("phases", self.phases)?;
        let m = count("hpu_threads", self.hpu_threads)?;
        let p = count("apus_per_thread", self.apus_per_thread)?;
        if !(self.alpha_m.is_finite() && self.alpha_m > 0.0) {
            return Err(InputError::new(format!(
                "expected a finite number > 0 (the host slowdown factor), got {}",
                self.alpha_m
            ))
            .at_field("workload.alpha_m"));
        }
        let offload_bytes = match self.offload_bytes.as_deref() {
            None => 0.0,
            Some(q) => q
                .read(units::Kind::Bytes)
                .map_err(|e| InputError::new(e.to_string()).at_field("workload.offload_bytes"))?,
        };
        Ok(OffloadParams {
            phases,
            m,
            p,
            t_hpu_s: seconds("t_hpu", Some(&*self.t_hpu))?,
            t_apu_s: seconds("t_apu", Some(&*self.t_apu))?,
            c_apu_s: seconds("c_apu", self.c_apu.as_deref())?,
            o_offload_s: seconds("o_offload", self.o_offload.as_deref())?,
            gap_s: seconds("gap", self.gap.as_deref())?,
            t_csw_s: seconds("t_csw", self.t_csw.as_deref())?,
            o_col_s: seconds("o_col", self.o_col.as_deref())?,
            alpha_m: self.alpha_m,
            offload_bytes,
        })
    }
}

/// Operations the program will have: per phase `m` host kernels, a join, and per thread an
/// overhead delay, `p` gaps, `p` APU kernels (and `p` messages with data), the serial kernel and
/// the context switch; then the phase's join and `O_COL` delay.
fn op_count(q: &OffloadParams) -> u64 {
    let per_apu = if q.offload_bytes > 0.0 { 3 } else { 2 };
    let per_thread = 1 + 1 + 1 + per_apu * q.p;
    q.phases
        .saturating_mul(q.m.saturating_mul(per_thread).saturating_add(q.m + 3))
}

impl ProgramGenerator for OffloadSpec {
    fn generate(&self, cluster: &Cluster) -> Result<Program, InputError> {
        let q = self.params()?;
        let ranks = u64::from(cluster.ranks());
        let used = q.m.saturating_mul(q.p);
        if used > ranks {
            return Err(InputError::new(format!(
                "m·p = {} × {} = {used} APUs, but the machine has {ranks} (one per GPU rank); \
                 MMGP requires m·p <= N_APU",
                q.m, q.p
            ))
            .at_field("workload.apus_per_thread"));
        }
        let ops = op_count(&q);
        if ops > MAX_OFFLOAD_OPS {
            return Err(InputError::new(format!(
                "{} phases × {} threads × {} APUs give {ops} operations, more than the limit of \
                 {MAX_OFFLOAD_OPS}; use fewer phases (the durations are totals over the run)",
                q.phases, q.m, q.p
            ))
            .at_field("workload.phases"));
        }
        let n = q.phases as f64;
        let host_s = q.alpha_m * q.t_hpu_s / (n * q.m as f64);
        let apu_s = q.t_apu_s / (n * used as f64);
        let serial_s = q.c_apu_s / n;
        let hpu = RankId(0);
        let mut b = ProgramBuilder::new(cluster.ranks());
        let mut prev: Vec<OpId> = Vec::new();
        for _ in 0..q.phases {
            let host: Vec<OpId> = (0..q.m)
                .map(|_| b.kernel(Kernel::new(hpu, Unit::Cpu, "host", host_s, 0.0), &prev))
                .collect();
            let host_done = b.join(&host);
            let mut ends = Vec::with_capacity(q.m as usize);
            for t in 0..q.m {
                let first = RankId((t * q.p) as u32);
                let mut gap = b.delay(first, q.o_offload_s, &[host_done]);
                let mut apus = Vec::with_capacity(q.p as usize);
                for k in 0..q.p {
                    let apu = RankId((t * q.p + k) as u32);
                    gap = b.delay(first, q.gap_s, &[gap]);
                    let ready = if q.offload_bytes > 0.0 {
                        let mut msg = Message::host(hpu, apu, q.offload_bytes);
                        msg.to = crate::Buffer::Device;
                        b.message(msg, &[gap])
                    } else {
                        gap
                    };
                    apus.push(b.kernel(Kernel::new(apu, Unit::Gpu, "apu", apu_s, 0.0), &[ready]));
                }
                let serial = b.kernel(
                    Kernel::new(first, Unit::Gpu, "apu-serial", serial_s, 0.0),
                    &apus,
                );
                ends.push(b.delay(first, q.t_csw_s, &[serial]));
            }
            let all = b.join(&ends);
            prev = vec![b.delay(hpu, q.o_col_s, &[all])];
        }
        Ok(b.build())
    }

    fn counted_flops(&self) -> f64 {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Op;

    /// A node with `n` GPUs, each behind its own PCIe link (enough for program generation).
    fn machine_with_gpus(n: usize) -> hetsim_platform::machine::Machine {
        let mut t = String::from(
            "[machine]\nname = \"t\"\n[[memory_nodes]]\nname = \"RAM\"\nkind = \"ram\"\n\
             capacity = \"1 GiB\"\n[runtime]\ngpu_driver_cores = false\n[[cpus]]\ncount = 1\nmodel = \"c\"\nmemory = \"RAM\"\n",
        );
        for i in 0..n {
            t += &format!(
                "[[memory_nodes]]\nname = \"G{i}\"\nkind = \"gpu\"\ncapacity = \"1 GiB\"\n\
                 [[gpus]]\nname = \"G{i}\"\nmodel = \"g\"\nmemory = \"G{i}\"\n\
                 [[links]]\nname = \"P{i}\"\nbandwidth = \"1 GB/s\"\nsharing = \"split-duplex\"\n\
                 [[routes]]\nsrc = \"RAM\"\ndst = \"G{i}\"\nlinks = [\"P{i}_DOWN\"]\n\
                 [[routes]]\nsrc = \"G{i}\"\ndst = \"RAM\"\nlinks = [\"P{i}_UP\"]\n"
            );
        }
        hetsim_platform::machine::from_str(&t, "test.toml").unwrap()
    }

    fn spec(toml_text: &str) -> OffloadSpec {
        toml::from_str(toml_text).unwrap()
    }

    const PBPI_4X4: &str = r#"
        hpu_threads = 4
        apus_per_thread = 4
        t_hpu = "1.3 s"
        t_apu = "370 s"
        c_apu = "1.72 s"
        o_offload = "70 ns"
        gap = "0.8 s"
        t_csw = "2 us"
        alpha_m = 1.28
    "#;

    #[test]
    fn parameters_parse_with_units() {
        let q = spec(PBPI_4X4).params().unwrap();
        assert_eq!((q.phases, q.m, q.p), (1, 4, 4));
        assert_eq!(q.t_hpu_s, 1.3);
        assert_eq!(q.t_apu_s, 370.0);
        assert!((q.o_offload_s - 70e-9).abs() < 1e-20);
        assert!((q.t_csw_s - 2e-6).abs() < 1e-20);
        assert_eq!(q.o_col_s, 0.0);
        assert_eq!(q.offload_bytes, 0.0);
    }

    #[test]
    fn bad_values_name_their_field() {
        let e = |text: &str| spec(text).params().unwrap_err();
        let base = "hpu_threads = 1\napus_per_thread = 1\nt_hpu = \"1 s\"\nt_apu = \"1 s\"\n";
        let f = e(&format!("{base}gap = \"3 parsecs\"\n"));
        assert_eq!(f.location.field.as_deref(), Some("workload.gap"));
        let f = e(&format!("{base}c_apu = \"-1 s\"\n"));
        assert_eq!(f.location.field.as_deref(), Some("workload.c_apu"));
        let f = e(&format!("{base}alpha_m = 0\n"));
        assert_eq!(f.location.field.as_deref(), Some("workload.alpha_m"));
        let f = e(&format!("{base}phases = 0\n"));
        assert_eq!(f.location.field.as_deref(), Some("workload.phases"));
        let f = e("hpu_threads = 0\napus_per_thread = 1\nt_hpu = \"1 s\"\nt_apu = \"1 s\"\n");
        assert_eq!(f.location.field.as_deref(), Some("workload.hpu_threads"));
        let f = e(&format!("{base}offload_bytes = \"1 furlong\"\n"));
        assert_eq!(f.location.field.as_deref(), Some("workload.offload_bytes"));
        assert!(toml::from_str::<OffloadSpec>(&format!("{base}gpus = 3\n")).is_err());
        assert!(toml::from_str::<OffloadSpec>("hpu_threads = 1\n").is_err());
    }

    /// The longest path through the program with every operation taking its own duration and
    /// no processor shared: the dependency structure alone, which must give eq. 11 when the
    /// host kernels (all on one CPU) are serialised. Here host kernels are summed separately.
    fn structure(p: &Program) -> (usize, usize, usize, f64) {
        let (mut host, mut apu, mut delays, mut host_s) = (0, 0, 0, 0.0);
        for op in p.ops() {
            match op {
                Op::Kernel(k) if k.unit == Unit::Cpu => {
                    host += 1;
                    host_s += k.secs;
                    assert_eq!(k.rank, RankId(0), "host work runs on the one HPU");
                }
                Op::Kernel(_) => apu += 1,
                Op::Delay { .. } => delays += 1,
                _ => {}
            }
        }
        (host, apu, delays, host_s)
    }

    #[test]
    fn program_shape_follows_the_mapping() {
        let machine = machine_with_gpus(16);
        let cluster = Cluster::single_node(machine);
        let mut s = spec(PBPI_4X4);
        s.phases = 3;
        let prog = s.generate(&cluster).unwrap();
        let (host, apu, delays, host_s) = structure(&prog);
        // 3 phases × 4 threads host kernels; × (4 APU kernels + 1 serial) APU kernels;
        // delays: per phase and thread 1 O_offload + 4 gaps + 1 T_CSW, plus 1 O_COL per phase.
        assert_eq!(host, 12);
        assert_eq!(apu, 3 * 4 * 5);
        assert_eq!(delays, 3 * (4 * 6 + 1));
        // Σ host = α_m·T_HPU = 1.28 × 1.3 = 1.664 s
        assert!((host_s - 1.664).abs() < 1e-12);
        assert_eq!(prog.ops().len() as u64, op_count(&s.params().unwrap()));
        // Only ranks 0..16 exist and APU kernels use all of them.
        let mut used = [false; 16];
        for op in prog.ops() {
            if let Op::Kernel(k) = op
                && k.unit == Unit::Gpu
            {
                used[k.rank.index()] = true;
            }
        }
        assert!(used.iter().all(|u| *u));
    }

    #[test]
    fn too_many_apus_is_an_input_error() {
        let cluster = Cluster::single_node(machine_with_gpus(8));
        let e = spec(PBPI_4X4).generate(&cluster).unwrap_err();
        assert_eq!(
            e.location.field.as_deref(),
            Some("workload.apus_per_thread")
        );
        assert!(e.message.contains("16 APUs"), "{}", e.message);
        let mut s = spec(PBPI_4X4);
        s.hpu_threads = 2;
        s.phases = 10_000_000;
        let e = s.generate(&cluster).unwrap_err();
        assert_eq!(e.location.field.as_deref(), Some("workload.phases"));
    }

    #[test]
    fn offload_bytes_add_one_message_per_offload() {
        let cluster = Cluster::single_node(machine_with_gpus(16));
        let mut s = spec(PBPI_4X4);
        s.offload_bytes = Some(Box::new(RawQuantity::Text("1 MiB".into())));
        let prog = s.generate(&cluster).unwrap();
        let msgs: Vec<_> = prog.messages().copied().collect();
        assert_eq!(msgs.len(), 16);
        assert!(
            msgs.iter()
                .all(|m| m.src == RankId(0) && m.bytes == 1048576.0)
        );
    }
}
