//! The `matmul` workload: Liu et al. 2012 §5's master/worker matrix product C = A·B, as an MPI-style
//! program.
//!
//! "Matrices A is divided into p parts. The master process sends every part and broadcast
//! matrices B to p slave processes. The slave processes receive the data and do the calculation
//! by GPU and send the results to the master process." Here:
//!
//! - the master is rank 0 and works on its host only (its matrices are in host memory); the
//!   `p` workers are ranks 1..=p (default: every other rank);
//! - the master sends worker i its row block of A (rows `n·(i−1)/p .. n·i/p`), one blocking send
//!   after the other, host memory to the worker's GPU memory;
//! - then broadcasts B (n × n) into the host memory of the workers with `MPI_Bcast`
//!   ([`crate::collective::bcast`]: MPICH's algorithms and selection rule, from
//!   point-to-point messages), and each worker copies it host → GPU;
//! - each worker pays the GPU initialisation `orgb` (Liu et al. 2012 Table 1: "orgb is the time of
//!   initializing the GPU", charged on the first message a GPU receives, §3.1: o_r = o_rgb +
//!   o_rn + o_rd) on its host core once its first message has arrived, multiplies its block on
//!   its GPU (2·rows·n² flops at the node's GEMM rate) and sends its C block back to the
//!   master's host memory.

use serde::Deserialize;

use crate::collective::{Bcast, Selection, bcast};
use crate::{Buffer, Kernel, Message, OpId, Program, ProgramBuilder, RankId, Unit};
use hetsim_core::error::InputError;
use hetsim_core::units::Kind;
use hetsim_core::units::RawQuantity;
use hetsim_models::{DeviceKind, DeviceSelector};
use hetsim_platform::cluster::Cluster;

use super::{Precision, ProgramGenerator};

/// The GPU initialisation time: one figure, or a table by the size of the first message
/// received (Liu et al. 2012 Table 1's `orgb` row), interpolated linearly and held beyond its ends.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum GpuInit {
    /// A duration: "0.105 s", "102055 us" or a number of seconds.
    One(RawQuantity),
    /// `[[bytes, duration], ...]`, sizes increasing.
    Table(Vec<(f64, RawQuantity)>),
}

/// `[workload]` with `kind = "matmul"`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatmulSpec {
    /// Order of the square matrices A, B and C.
    pub n: u64,
    /// Number of workers p (ranks 1..=p); default: every rank but the master.
    #[serde(default)]
    pub workers: Option<u32>,
    /// Element precision (default single).
    #[serde(default)]
    pub precision: Option<Precision>,
    /// The workers' GEMM rate; default: the node file's `starpu_sgemm_gemm` /
    /// `starpu_dgemm_gemm` GPU flop rate.
    #[serde(default)]
    pub gpu_flops: Option<RawQuantity>,
    /// GPU initialisation on a worker's first receive (default 0).
    #[serde(default)]
    pub gpu_init: Option<GpuInit>,
}

fn err(field: &str, message: impl Into<String>) -> InputError {
    InputError::new(message).at_field(format!("workload.{field}"))
}

fn quantity(field: &str, kind: Kind, q: &RawQuantity) -> Result<f64, InputError> {
    q.read(kind).map_err(|e| err(field, e.message))
}

/// Row `i`'s share of `n` rows cut in `p` parts: `n(i+1)/p − n·i/p`.
fn part(n: u64, p: u64, i: u64) -> u64 {
    let (n, p, i) = (n as u128, p as u128, i as u128);
    (n * (i + 1) / p - n * i / p) as u64
}

impl MatmulSpec {
    fn precision(&self) -> Precision {
        self.precision.unwrap_or(Precision::Single)
    }

    /// The GPU initialisation time for a first message of `bytes`.
    pub fn gpu_init_s(&self, bytes: f64) -> Result<f64, InputError> {
        match &self.gpu_init {
            None => Ok(0.0),
            Some(GpuInit::One(q)) => quantity("gpu_init", Kind::Seconds, q),
            Some(GpuInit::Table(rows)) => {
                if rows.is_empty() {
                    return Err(err("gpu_init", "the table has no rows"));
                }
                let mut pts = Vec::with_capacity(rows.len());
                for (i, (b, q)) in rows.iter().enumerate() {
                    let t = quantity(&format!("gpu_init[{i}]"), Kind::Seconds, q)?;
                    if !(b.is_finite() && *b >= 0.0) {
                        return Err(err(
                            &format!("gpu_init[{i}]"),
                            format!("expected a size in bytes >= 0, got {b}"),
                        ));
                    }
                    if let Some(&(prev, _)) = pts.last()
                        && *b <= prev
                    {
                        return Err(err(
                            &format!("gpu_init[{i}]"),
                            format!("sizes must increase ({b} after {prev})"),
                        ));
                    }
                    pts.push((*b, t));
                }
                let first = pts[0];
                let last = pts[pts.len() - 1];
                if bytes <= first.0 {
                    return Ok(first.1);
                }
                if bytes >= last.0 {
                    return Ok(last.1);
                }
                let i = pts.partition_point(|p| p.0 <= bytes);
                let (a, b) = (pts[i - 1], pts[i]);
                Ok(a.1 + (bytes - a.0) / (b.0 - a.0) * (b.1 - a.1))
            }
        }
    }

    /// The workers' GEMM rate, flop/s.
    fn gpu_flops_per_sec(&self, cluster: &Cluster) -> Result<f64, InputError> {
        if let Some(q) = &self.gpu_flops {
            let v = quantity("gpu_flops", Kind::FlopsPerSec, q)?;
            if v <= 0.0 {
                return Err(err("gpu_flops", "expected a rate > 0"));
            }
            return Ok(v);
        }
        let codelet = match self.precision() {
            Precision::Single => "starpu_sgemm_gemm",
            Precision::Double => "starpu_dgemm_gemm",
        };
        cluster
            .node_machine()
            .perf_models()
            .model_for(codelet, DeviceSelector::Kind(DeviceKind::Gpu))
            .and_then(|m| m.flop_rate_per_s())
            .ok_or_else(|| {
                err(
                    "gpu_flops",
                    format!(
                        "the node file {} has no GPU flop_rate for `{codelet}`; give \
                         workload.gpu_flops (e.g. \"600 Gflop/s\")",
                        cluster.node_machine().name()
                    ),
                )
            })
    }
}

impl ProgramGenerator for MatmulSpec {
    fn generate(&self, cluster: &Cluster) -> Result<Program, InputError> {
        if self.n == 0 {
            return Err(err("n", "expected a matrix order of at least 1"));
        }
        let ranks = cluster.ranks();
        if ranks < 2 {
            return Err(InputError::new(format!(
                "the master/worker product needs at least 2 ranks (a master and a worker); \
                 the cluster has {ranks}"
            ))
            .at_field("machine.nodes"));
        }
        let p = self.workers.unwrap_or(ranks - 1);
        if p == 0 {
            return Err(err("workers", "expected at least 1 worker"));
        }
        if p > ranks - 1 {
            return Err(err(
                "workers",
                format!(
                    "{p} workers need {} ranks (rank 0 is the master) but the cluster has {ranks}",
                    p + 1
                ),
            ));
        }
        if (p as u64) > self.n {
            return Err(err(
                "workers",
                format!(
                    "{p} workers for {} rows leave a worker without rows",
                    self.n
                ),
            ));
        }
        let rate = self.gpu_flops_per_sec(cluster)?;
        let elt = self.precision().bytes_per_element() as f64;
        let n = self.n as f64;
        let master = RankId(0);
        let mut b = ProgramBuilder::new(ranks);

        // A's row blocks, one blocking send after the other.
        let mut first_recv: Vec<Option<(OpId, f64)>> = vec![None; p as usize + 1];
        let mut got: Vec<Vec<OpId>> = vec![Vec::new(); p as usize + 1];
        let mut last: Option<OpId> = None;
        let rows: Vec<u64> = (0..p as u64).map(|i| part(self.n, p as u64, i)).collect();
        for w in 1..=p {
            let bytes = rows[w as usize - 1] as f64 * n * elt;
            let m = Message {
                src: master,
                dst: RankId(w),
                bytes,
                from: Buffer::Host,
                to: Buffer::Device,
            };
            let id = b.message(m, last.as_slice());
            first_recv[w as usize].get_or_insert((id, bytes));
            got[w as usize].push(id);
            last = Some(id);
        }

        // B by MPI_Bcast into the host buffers of the master and the workers (MPICH's algorithm
        // and selection rule, built from point-to-point messages), then each worker copies it
        // to its GPU.
        let b_bytes = n * n * elt;
        let group: Vec<RankId> = (0..=p).map(RankId).collect();
        let mut ready: Vec<Option<OpId>> = vec![None; group.len()];
        ready[0] = last;
        let held = bcast(
            &mut b,
            &Bcast {
                group: &group,
                root: 0,
                bytes: b_bytes,
                buffer: Buffer::Host,
                algorithm: Selection::Mpich,
            },
            &ready,
        );
        for w in 1..=p {
            let rank = RankId(w);
            let m = Message {
                src: rank,
                dst: rank,
                bytes: b_bytes,
                from: Buffer::Host,
                to: Buffer::Device,
            };
            let id = b.message(m, &[held[w as usize]]);
            got[w as usize].push(id);
        }

        // Workers: GPU initialisation after the first receive, the product, the result back.
        let mut results = Vec::with_capacity(p as usize);
        for w in 1..=p {
            let rank = RankId(w);
            let (first, first_bytes) = first_recv[w as usize].expect("every worker receives");
            let init_s = self.gpu_init_s(first_bytes)?;
            let init = b.kernel(
                Kernel::new(rank, Unit::Cpu, "gpu_init", init_s, 0.0),
                &[first],
            );
            let mut after = got[w as usize].clone();
            after.push(init);
            let r = rows[w as usize - 1] as f64;
            let flops = 2.0 * r * n * n;
            let k = b.kernel(
                Kernel::new(rank, Unit::Gpu, "gemm", flops / rate, flops),
                &after,
            );
            let c = Message {
                src: rank,
                dst: master,
                bytes: r * n * elt,
                from: Buffer::Device,
                to: Buffer::Host,
            };
            results.push(b.message(c, &[k]));
        }
        b.join(&results);
        Ok(b.build())
    }

    /// 2n³: the product's multiply-adds.
    fn counted_flops(&self) -> f64 {
        2.0 * (self.n as f64).powi(3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Op;

    fn node(gpus: usize) -> Cluster {
        let mut t = String::from(
            "[machine]\nname = \"t\"\n[[memory_nodes]]\nname = \"RAM\"\nkind = \"ram\"\n\
             capacity = \"1 GiB\"\n[[cpus]]\ncount = 8\nmodel = \"c\"\nmemory = \"RAM\"\n",
        );
        for g in 0..gpus {
            t.push_str(&format!(
                "[[memory_nodes]]\nname = \"CUDA{g}\"\nkind = \"gpu\"\ncapacity = \"1 GiB\"\n\
                 [[gpus]]\nname = \"CUDA{g}\"\nmodel = \"g\"\nmemory = \"CUDA{g}\"\n\
                 [[links]]\nname = \"L{g}\"\nbandwidth = \"1 GB/s\"\n\
                 [[routes]]\nsrc = \"RAM\"\ndst = \"CUDA{g}\"\nlinks = [\"L{g}\"]\nsymmetric = true\n"
            ));
        }
        t.push_str(
            "[[codelets]]\nname = \"starpu_sgemm_gemm\"\n[[codelets.models]]\ndevice = \"gpu\"\n\
             flop_rate = \"100 Gflop/s\"\n",
        );
        Cluster::single_node(hetsim_platform::machine::from_str(&t, "t.toml").expect("machine"))
    }

    fn spec(text: &str) -> MatmulSpec {
        toml::from_str(text).expect("spec")
    }

    #[test]
    fn structure_by_hand() {
        // n = 6, 3 workers on 4 ranks, single precision: A blocks of 2 rows × 6 × 4 B = 48 B;
        // B is 6 × 6 × 4 = 144 B, broadcast to 3 workers: 4 ranks < 8, so MPICH's binomial
        // tree (0→2, 0→1, 2→3, farthest first) into host memory, each message carrying MPI's
        // 16-byte envelope besides its 144 B, then one host → GPU copy of 144 B on each worker;
        // results 48 B.
        // Messages: 3 + 3 + 3 + 3 = 12; kernels: 3 inits + 3 products; one join.
        let s = spec("n = 6\ngpu_init = \"0.1 s\"\n");
        let p = s.generate(&node(4)).unwrap();
        let mut msgs = Vec::new();
        let mut kernels = Vec::new();
        for o in p.ops() {
            match o {
                Op::Message(m) => msgs.push((m.src.0, m.dst.0, m.bytes)),
                Op::Kernel(k) => kernels.push((k.rank.0, k.name, k.secs, k.flops)),
                _ => {}
            }
        }
        assert_eq!(
            msgs,
            vec![
                (0, 1, 48.0),
                (0, 2, 48.0),
                (0, 3, 48.0),
                (0, 2, 160.0),
                (0, 1, 160.0),
                (2, 3, 160.0),
                (1, 1, 144.0),
                (2, 2, 144.0),
                (3, 3, 144.0),
                (1, 0, 48.0),
                (2, 0, 48.0),
                (3, 0, 48.0)
            ]
        );
        // Each product: 2 × 2 × 6 × 6 = 144 flops at 100 Gflop/s = 1.44 ns.
        let gemm: Vec<_> = kernels.iter().filter(|k| k.1 == "gemm").collect();
        assert_eq!(gemm.len(), 3);
        assert!(
            gemm.iter()
                .all(|k| k.3 == 144.0 && (k.2 - 1.44e-9).abs() < 1e-21)
        );
        assert!(
            kernels
                .iter()
                .filter(|k| k.1 == "gpu_init")
                .all(|k| k.2 == 0.1)
        );
        assert_eq!(s.counted_flops(), 432.0);
        assert_eq!(p.flops(), 432.0);
    }

    #[test]
    fn gpu_init_table_interpolates() {
        // Liu et al. 2012 Table 1, orgb: 102055 us at 1 B, 103537 us at 4096 B; at 2048.5 B halfway.
        let s = spec("n = 4\ngpu_init = [[1, \"102055 us\"], [4096, \"103537 us\"]]\n");
        assert!((s.gpu_init_s(2048.5).unwrap() - 0.102796).abs() < 1e-9);
        assert!((s.gpu_init_s(1e9).unwrap() - 0.103537).abs() < 1e-15);
        let bad = spec("n = 4\ngpu_init = [[10, \"1 s\"], [5, \"2 s\"]]\n");
        assert!(
            bad.gpu_init_s(1.0)
                .unwrap_err()
                .message
                .contains("increase")
        );
    }

    fn bad(text: &str, gpus: usize) -> InputError {
        spec(text).generate(&node(gpus)).unwrap_err()
    }

    #[test]
    fn error_zero_n() {
        assert_eq!(
            bad("n = 0\n", 2).location.field.as_deref(),
            Some("workload.n")
        );
    }

    #[test]
    fn error_one_rank() {
        assert_eq!(
            bad("n = 4\n", 1).location.field.as_deref(),
            Some("machine.nodes")
        );
    }

    #[test]
    fn error_too_many_workers() {
        let e = bad("n = 4\nworkers = 4\n", 4);
        assert!(e.message.contains("need 5 ranks"), "{}", e.message);
    }

    #[test]
    fn error_zero_workers() {
        let e = bad("n = 4\nworkers = 0\n", 4);
        assert!(e.message.contains("at least 1"), "{}", e.message);
    }

    #[test]
    fn error_more_workers_than_rows() {
        let e = bad("n = 2\nworkers = 3\n", 4);
        assert!(e.message.contains("without rows"), "{}", e.message);
    }

    #[test]
    fn error_no_gemm_model() {
        // Double precision: the test node has only the single-precision model.
        let e = bad("n = 4\nprecision = \"double\"\n", 2);
        assert!(e.message.contains("starpu_dgemm_gemm"), "{}", e.message);
        assert!(
            spec("n = 4\nprecision = \"double\"\ngpu_flops = \"50 Gflop/s\"\n")
                .generate(&node(2))
                .is_ok()
        );
    }

    #[test]
    fn error_bad_units() {
        let e = bad("n = 4\ngpu_flops = \"5 GB/s\"\n", 2);
        assert_eq!(e.location.field.as_deref(), Some("workload.gpu_flops"));
        let e = bad("n = 4\ngpu_init = \"fast\"\n", 2);
        assert_eq!(e.location.field.as_deref(), Some("workload.gpu_init"));
    }

    #[test]
    fn error_zero_rate() {
        let e = bad("n = 4\ngpu_flops = 0\n", 2);
        assert!(e.message.contains("> 0"), "{}", e.message);
    }

    #[test]
    fn error_unknown_field() {
        assert!(toml::from_str::<MatmulSpec>("n = 4\nmaster = 2\n").is_err());
    }
}
