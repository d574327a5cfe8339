//! Workloads: task graphs (tasks, data handles, access modes, flops, codelet names,
//! priorities) and the generators of the classic tiled dense kernels.
//!
//! A [`TaskGraph`] is plain data: the runtime executes any graph the same way and never
//! special-cases Cholesky. Dependencies are inferred from the data accesses in submission order,
//! as StarPU's implicit (sequential-consistency) dependencies are; see [`TaskGraphBuilder`].
//!
//! The generators use StarPU's codelet (performance-model symbol) names, so StarPU calibration
//! files (`codelets/45/<symbol>.<host>`) apply as they are:
//!
//! - [`cholesky`]: tiled right-looking Cholesky, `chol_model_{potrf,trsm,syrk,gemm}`;
//! - [`lu`]: tiled LU without pivoting, `starpu_{s,d}lu_lu_model_{getrf,trsm_ll,trsm_ru,gemm}`;
//! - [`gemm`]: tiled C = A·B, `starpu_{s,d}gemm_gemm`.
//!
//! Graphs can also be read from files ([`import`]: StarPU's `tasks.rec` and `dag.dot`, hetsim's
//! JSON format, WfCommons' WfFormat) and written as JSON ([`import::json::write`]).
//!
//! `docs/workloads.md` explains the choices (priorities, flops, the `size` used for model lookup)
//! and where in StarPU's sources and sample files they come from.

mod cholesky;
pub mod distributed;
mod gemm;
mod graph;
pub mod import;
mod lu;
mod params;

pub use cholesky::{
    CHOL_GEMM, CHOL_POTRF, CHOL_SYRK, CHOL_TRSM, cholesky, cholesky_with, gemm_flops, potrf_flops,
    syrk_flops, trsm_flops,
};
pub use gemm::{gemm, gemm_codelet};
pub use graph::{
    Access, AccessMode, CodeletId, Handle, HandleId, Home, MAX_MODEL_SIZE_BYTES, NodeId, Place,
    RecordedWorker, Task, TaskGraph, TaskGraphBuilder, TaskId, TaskKind, Tile, Unit, WontUse,
};
pub use lu::{LuCodelets, getrf_flops, lu, lu_codelets, lu_with};

use hetsim_core::InputError;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Largest number of tasks a generator will produce. Beyond this a graph needs gigabytes and the
/// simulation minutes; a larger tile size gives the same matrix with fewer tasks.
pub const MAX_GENERATED_TASKS: u64 = 10_000_000;

/// Floating-point precision of the matrix elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// 32-bit `float` (StarPU's `s` kernels).
    Single,
    /// 64-bit `double` (StarPU's `d` kernels).
    Double,
}

impl Precision {
    /// Bytes per matrix element: 4 or 8.
    pub fn bytes_per_element(self) -> u64 {
        match self {
            Precision::Single => 4,
            Precision::Double => 8,
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Precision::Single => "single",
            Precision::Double => "double",
        })
    }
}

impl FromStr for Precision {
    type Err = InputError;

    /// Accepts `single`/`float`/`s`/`fp32` and `double`/`d`/`fp64` (any case), so that
    /// `--set workload.precision=double` reads naturally.
    fn from_str(s: &str) -> Result<Self, InputError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "single" | "float" | "s" | "fp32" => Ok(Precision::Single),
            "double" | "d" | "fp64" => Ok(Precision::Double),
            other => Err(InputError::new(format!(
                "unknown precision `{other}`: expected `single` or `double`"
            ))
            .at_field("workload.precision")),
        }
    }
}

/// Which release of StarPU's examples the tiled generators take their task priorities from
/// (`workload.priorities`): the priorities decide the order only under the schedulers that take
/// them (`ws`, `lws`, `dmdas`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Priorities {
    /// StarPU 1.4.8 and later: Cholesky's syrk(n, k) at 2T − 2k − n (StarPU's commit "cholesky:
    /// Fix priority of syrks", September 2024, following Chameleon), LU's tasks by bottom level.
    #[default]
    StarPu14,
    /// StarPU 1.3: Cholesky's syrk at 2T − 2k − 2n (the example submitted it as a gemm with
    /// m = n); LU's getrf, and the first trsm of each side and first gemm of each step, at the
    /// highest priority, every other task at the default.
    StarPu13,
}

impl fmt::Display for Priorities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Priorities::StarPu14 => "starpu-1.4",
            Priorities::StarPu13 => "starpu-1.3",
        })
    }
}

impl FromStr for Priorities {
    type Err = InputError;

    /// Accepts `starpu-1.4` or `1.4`, `starpu-1.3` or `1.3` (any case).
    fn from_str(s: &str) -> Result<Self, InputError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "starpu-1.4" | "1.4" => Ok(Priorities::StarPu14),
            "starpu-1.3" | "1.3" => Ok(Priorities::StarPu13),
            other => Err(InputError::new(format!(
                "unknown priorities `{other}`: expected `starpu-1.4` or `starpu-1.3`"
            ))
            .at_field("workload.priorities")),
        }
    }
}

/// Which generator to run; the scenario loader maps `workload.kind` to this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TiledAlgorithm {
    /// [`cholesky`].
    Cholesky,
    /// [`lu`].
    Lu,
    /// [`gemm`].
    Gemm,
}

impl TiledAlgorithm {
    /// Run the generator for this kernel, with StarPU 1.4's priorities.
    pub fn generate(self, n: u64, nb: u64, precision: Precision) -> Result<TaskGraph, InputError> {
        self.generate_with(n, nb, precision, Priorities::default())
    }

    /// Run the generator for this kernel with `priorities` (GEMM has none).
    pub fn generate_with(
        self,
        n: u64,
        nb: u64,
        precision: Precision,
        priorities: Priorities,
    ) -> Result<TaskGraph, InputError> {
        match self {
            TiledAlgorithm::Cholesky => cholesky_with(n, nb, precision, priorities),
            TiledAlgorithm::Lu => lu_with(n, nb, precision, priorities),
            TiledAlgorithm::Gemm => gemm(n, nb, precision),
        }
    }

    /// The distributed graph over a `grid` of ranks, as StarPU-MPI's examples submit it
    /// ([`distributed`]); `cache` is StarPU-MPI's `STARPU_MPI_CACHE`.
    pub fn generate_distributed(
        self,
        n: u64,
        nb: u64,
        precision: Precision,
        grid: distributed::BlockCyclic,
        cache: bool,
    ) -> Result<TaskGraph, InputError> {
        match self {
            TiledAlgorithm::Cholesky => distributed::cholesky(n, nb, precision, grid, cache),
            TiledAlgorithm::Lu => distributed::lu(n, nb, precision, grid, cache),
            TiledAlgorithm::Gemm => distributed::gemm(n, nb, precision, grid, cache),
        }
    }
}

impl FromStr for TiledAlgorithm {
    type Err = InputError;

    fn from_str(s: &str) -> Result<Self, InputError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "cholesky" | "potrf" => Ok(TiledAlgorithm::Cholesky),
            "lu" | "getrf" => Ok(TiledAlgorithm::Lu),
            "gemm" => Ok(TiledAlgorithm::Gemm),
            other => Err(InputError::new(format!(
                "unknown workload kind `{other}`: expected `cholesky`, `lu` or `gemm`"
            ))
            .at_field("workload.kind")),
        }
    }
}

/// A validated square tiling: `tiles` tiles of `nb`×`nb` elements per side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tiling {
    /// Tiles per side (T).
    pub tiles: u32,
    /// Tile size in elements (nb).
    pub nb: u64,
    /// Bytes of one tile: nb² × element size.
    pub tile_bytes: u64,
}

impl Tiling {
    /// Check `n` and `nb` and count the tasks with `task_count(T)` against
    /// [`MAX_GENERATED_TASKS`].
    ///
    /// The tile size must divide the order: StarPU's examples assume it (`nn = nx / nblocks`),
    /// and a ragged last tile would need performance-model entries for sizes nobody calibrated.
    pub fn new(
        n: u64,
        nb: u64,
        precision: Precision,
        task_count: impl Fn(u64) -> u64,
    ) -> Result<Tiling, InputError> {
        if n == 0 {
            return Err(
                InputError::new("the matrix order must be at least 1").at_field("workload.n")
            );
        }
        if nb == 0 {
            return Err(InputError::new("the tile size must be at least 1").at_field("workload.nb"));
        }
        if nb > n {
            return Err(InputError::new(format!(
                "the tile size {nb} is larger than the matrix order {n}"
            ))
            .at_field("workload.nb"));
        }
        if !n.is_multiple_of(nb) {
            return Err(InputError::new(format!(
                "the tile size {nb} does not divide the matrix order {n} (ragged tiles are not \
                 supported); for example use n = {} or n = {}",
                n / nb * nb,
                (n / nb + 1) * nb
            ))
            .at_field("workload.nb"));
        }
        let t = n / nb;
        // Cap T before counting so the closed forms (cubic in T) cannot overflow.
        let tasks = if t > 1 << 20 { u64::MAX } else { task_count(t) };
        if tasks > MAX_GENERATED_TASKS {
            return Err(InputError::new(format!(
                "n = {n} with tiles of {nb} gives {t} tiles per side and {} tasks, more than \
                 the limit of {MAX_GENERATED_TASKS}; use a larger tile size",
                if tasks == u64::MAX {
                    "too many".to_string()
                } else {
                    tasks.to_string()
                }
            ))
            .at_field("workload.nb"));
        }
        let tile_bytes = nb
            .checked_mul(nb)
            .and_then(|e| e.checked_mul(precision.bytes_per_element()))
            .ok_or_else(|| {
                InputError::new(format!("tiles of {nb}×{nb} elements overflow a byte count"))
                    .at_field("workload.nb")
            })?;
        Ok(Tiling {
            // t ≤ 2^20 here (otherwise the task limit fired), so it fits in u32.
            tiles: t as u32,
            nb,
            tile_bytes,
        })
    }

    /// The tile size as the `(rows, cols)` element counts stored in handles.
    pub fn dims(&self) -> (u32, u32) {
        let nb = u32::try_from(self.nb).unwrap_or(u32::MAX);
        (nb, nb)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precision_sizes_and_parsing() {
        assert_eq!(Precision::Single.bytes_per_element(), 4);
        assert_eq!(Precision::Double.bytes_per_element(), 8);
        assert_eq!("Double".parse::<Precision>().unwrap(), Precision::Double);
        assert_eq!("fp32".parse::<Precision>().unwrap(), Precision::Single);
        let e = "half".parse::<Precision>().unwrap_err();
        assert_eq!(e.location.field.as_deref(), Some("workload.precision"));
    }

    #[test]
    fn kernel_parsing() {
        assert_eq!("LU".parse::<TiledAlgorithm>().unwrap(), TiledAlgorithm::Lu);
        let e = "qr".parse::<TiledAlgorithm>().unwrap_err();
        assert!(e.message.contains("cholesky"));
    }

    fn cube(t: u64) -> u64 {
        t * t * t
    }

    #[test]
    fn tiling_validation_names_the_field() {
        let f = |n, nb| Tiling::new(n, nb, Precision::Double, cube).unwrap_err();
        assert_eq!(f(0, 4).location.field.as_deref(), Some("workload.n"));
        assert_eq!(f(8, 0).location.field.as_deref(), Some("workload.nb"));
        assert_eq!(f(8, 16).location.field.as_deref(), Some("workload.nb"));
        let ragged = f(10, 4);
        assert_eq!(ragged.location.field.as_deref(), Some("workload.nb"));
        assert!(
            ragged.message.contains("n = 8 or n = 12"),
            "{}",
            ragged.message
        );
        let huge = f(1_000_000, 1);
        assert!(huge.message.contains("limit"), "{}", huge.message);
        let ok = Tiling::new(960 * 4, 960, Precision::Single, cube).unwrap();
        assert_eq!(ok.tiles, 4);
        assert_eq!(ok.tile_bytes, 960 * 960 * 4);
    }
}
