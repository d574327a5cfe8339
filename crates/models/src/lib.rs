//! Kernel performance models: how long a codelet runs on a device, for a given data size.
//!
//! Per (codelet, device) a [`DeviceModel`] holds any of:
//! - a **history** of measured sizes (mean, deviation, sample count), as in StarPU's
//!   `codelets/45/<symbol>.<host>` files, looked up by exact size;
//! - a **regression** `a·size^b + c` (StarPU's NL regression), optionally limited to a size range;
//! - a **flop rate**: duration = task flops / rate.
//!
//! A device model applies either to a device kind (`cpu`: every CPU core, StarPU's
//! `cpu0_impl0` with ncores = 1; `gpu`: every GPU) or to one GPU (StarPU keeps CUDA models per
//! device id, so a machine with one slow GPU is modelled as such).
//!
//! **Lookup** for a device, size and flop count: the GPU's own model first, then its kind's
//! model; within each, the history entry of exactly that size, then the regression (if the size
//! is in its range), then the flop rate (if the task has a positive flop count). The first that
//! applies gives the mean (and deviation: the entry's, or `rel_stddev` × mean for the regression
//! and flop rate). If none applies the answer is a [`NoModel`] error naming the codelet, the
//! device and the size, with the sizes that do have history.
//!
//! **Predict and draw**: schedulers ask [`PerfModels::predict_s`] and get the mean; the
//! simulation calls [`PerfModels::draw_s`], which applies the codelet's [`Noise`] with the
//! caller's RNG (the run's [`SimRng`]). For hot loops, resolve (codelet, device) once with
//! [`PerfModels::key`] and use the `*_key_s` methods: no string handling, O(log n) in the number
//! of history sizes, no allocation.
//!
//! Models come from the `[[codelets]]` tables of a machine file (`docs/machine-format.md`) and
//! are reached with [`hetsim_platform::machine::Machine::perf_models`].
//!
//! ```
//! use hetsim_models::*;
//!
//! let mut pm = PerfModels::new(vec!["CUDA0".to_string()], Noise::LogNormal);
//! let gemm = pm.add_codelet("gemm", None).unwrap();
//! let hist = History::new(vec![HistoryEntry::new(1000, 2e-3, 1e-4, Some(50)).unwrap()]).unwrap();
//! pm.add_model(gemm, DeviceModel::new(DeviceSelector::Kind(DeviceKind::Cpu), hist, None, None, 0.0).unwrap())
//!     .unwrap();
//! pm.add_model(gemm, DeviceModel::new(DeviceSelector::Gpu(GpuId(0)), History::default(), None,
//!     Some(500e9), 0.0).unwrap()).unwrap();
//!
//! assert_eq!(pm.predict_s("gemm", DeviceRef::Cpu, 1000, 2e9).unwrap(), 2e-3);
//! let key = pm.key("gemm", DeviceRef::Gpu(GpuId(0))).unwrap();
//! assert_eq!(pm.predict_key_s(key, 1000, 2e9).unwrap(), 4e-3); // 2 Gflop at 500 Gflop/s
//! let mut rng = rng_from_seed(42);
//! let d = pm.draw_s("gemm", DeviceRef::Cpu, 1000, 2e9, &mut rng).unwrap();
//! assert!(d > 0.0 && d != 2e-3);
//! let e = pm.predict_s("gemm", DeviceRef::Cpu, 999, 2e9).unwrap_err();
//! assert!(e.to_string().contains("size 999 B"));
//! ```

use std::collections::BTreeMap;
use std::fmt;

use rand::{Rng, RngExt};

/// Index of a GPU in the machine's list of GPUs (`Machine::gpus`): models of one GPU are keyed
/// by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GpuId(pub u32);

impl GpuId {
    /// The index as `usize`, for slices.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

pub mod history;
pub mod noise;
pub mod roofline;

pub use history::{History, HistoryEntry, Regression};
pub use noise::{Histogram, NORMAL_MIN_FRACTION, Noise};

pub use hetsim_core::rng::{SimRng, rng_from_seed};

/// Which parameter of a model is wrong and why; the machine-file loader turns it into an
/// [`hetsim_core::InputError`] pointing at the field.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamError {
    /// The parameter's name as written in machine files (`mean`, `edges`, `device`, ...).
    pub field: &'static str,
    /// For arrays (`history`, `edges`, `weights`, `samples`), the index of the offending item.
    pub index: Option<usize>,
    /// What is wrong and what was expected.
    pub message: String,
}

impl ParamError {
    /// An error on `field` (item `index` of it, for arrays).
    pub fn new(field: &'static str, index: Option<usize>, message: String) -> ParamError {
        ParamError {
            field,
            index,
            message,
        }
    }
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index {
            Some(i) => write!(f, "{}[{i}]: {}", self.field, self.message),
            None => write!(f, "{}: {}", self.field, self.message),
        }
    }
}

impl std::error::Error for ParamError {}

/// A kind of processing unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DeviceKind {
    /// One CPU core.
    Cpu,
    /// One GPU.
    Gpu,
}

impl DeviceKind {
    /// `cpu` or `gpu`, as in machine files.
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceKind::Cpu => "cpu",
            DeviceKind::Gpu => "gpu",
        }
    }
}

/// The device a task runs on, as the runtime names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DeviceRef {
    /// Any CPU core (all cores share one model, as in StarPU).
    Cpu,
    /// This GPU.
    Gpu(GpuId),
}

impl DeviceRef {
    /// The device's kind.
    pub fn kind(self) -> DeviceKind {
        match self {
            DeviceRef::Cpu => DeviceKind::Cpu,
            DeviceRef::Gpu(_) => DeviceKind::Gpu,
        }
    }
}

/// What a [`DeviceModel`] applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DeviceSelector {
    /// Every device of a kind (`device = "cpu"` or `"gpu"`).
    Kind(DeviceKind),
    /// One GPU (`device = "CUDA1"`); preferred over the `gpu` kind model for that GPU.
    Gpu(GpuId),
}

/// The model of one codelet on one device or device kind.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceModel {
    device: DeviceSelector,
    history: History,
    regression: Option<Regression>,
    flop_rate_per_s: Option<f64>,
    rel_stddev: f64,
}

impl DeviceModel {
    /// A checked model. It needs history entries, a regression or a flop rate (or several);
    /// `flop_rate_per_s` must be positive and finite; `rel_stddev` (the deviation of regression
    /// and flop-rate predictions, relative to their mean) finite and non-negative.
    pub fn new(
        device: DeviceSelector,
        history: History,
        regression: Option<Regression>,
        flop_rate_per_s: Option<f64>,
        rel_stddev: f64,
    ) -> Result<DeviceModel, ParamError> {
        if history.is_empty() && regression.is_none() && flop_rate_per_s.is_none() {
            return Err(ParamError::new(
                "device",
                None,
                "the model has nothing to predict with; expected `history`, `regression` or \
                 `flop_rate`"
                    .to_string(),
            ));
        }
        if let Some(r) = flop_rate_per_s
            && !(r.is_finite() && r > 0.0)
        {
            return Err(ParamError::new(
                "flop_rate",
                None,
                format!("expected a positive, finite compute rate, found {r} flop/s"),
            ));
        }
        if !(rel_stddev.is_finite() && rel_stddev >= 0.0) {
            return Err(ParamError::new(
                "rel_stddev",
                None,
                format!("expected a finite, non-negative relative deviation, found {rel_stddev}"),
            ));
        }
        Ok(DeviceModel {
            device,
            history,
            regression,
            flop_rate_per_s,
            rel_stddev,
        })
    }

    /// What the model applies to.
    pub fn device(&self) -> DeviceSelector {
        self.device
    }
    /// Measured sizes.
    pub fn history(&self) -> &History {
        &self.history
    }
    /// The size regression, if any.
    pub fn regression(&self) -> Option<&Regression> {
        self.regression.as_ref()
    }
    /// The flop rate, if any.
    pub fn flop_rate_per_s(&self) -> Option<f64> {
        self.flop_rate_per_s
    }
    /// Deviation of regression and flop-rate predictions relative to their mean.
    pub fn rel_stddev(&self) -> f64 {
        self.rel_stddev
    }

    /// Multiply each duration this model gives by a factor of `factors`: one per history
    /// entry (by increasing size), then one for the regression and one for the flop rate, if
    /// the model has them.
    fn scale_each(&mut self, factors: &mut impl FnMut() -> f64) {
        self.history.scale_each(factors);
        if let Some(r) = &self.regression {
            self.regression = Some(r.scaled(factors()));
        }
        if let Some(rate) = self.flop_rate_per_s {
            self.flop_rate_per_s = Some(rate / factors());
        }
    }

    /// (mean, deviation) in seconds, if this model covers the size (or the flops).
    #[inline]
    fn mean_and_stddev(&self, size_bytes: u64, flops: f64) -> Option<(f64, f64)> {
        if let Some(e) = self.history.get(size_bytes) {
            return Some((e.mean_s, e.stddev_s));
        }
        if let Some(t) = self
            .regression
            .as_ref()
            .and_then(|r| r.duration_s(size_bytes))
        {
            return Some((t, t * self.rel_stddev));
        }
        if let Some(rate) = self.flop_rate_per_s
            && flops.is_finite()
            && flops > 0.0
        {
            let t = flops / rate;
            return Some((t, t * self.rel_stddev));
        }
        None
    }
}

/// Index of a codelet in a [`PerfModels`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CodeletIndex(pub u32);

/// All models of one codelet.
#[derive(Debug, Clone, PartialEq)]
pub struct CodeletModel {
    name: String,
    noise: Option<Noise>,
    models: Vec<DeviceModel>,
    /// Index in `models` of the `cpu` model, the `gpu` model, and each GPU's own model.
    cpu: Option<u32>,
    gpu_kind: Option<u32>,
    per_gpu: Vec<Option<u32>>,
}

impl CodeletModel {
    /// The codelet's name (StarPU's performance-model symbol, e.g. `chol_model_gemm`).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The codelet's own noise setting, if it overrides the machine's.
    pub fn noise_override(&self) -> Option<&Noise> {
        self.noise.as_ref()
    }
    /// Its device models, in the order they were added.
    pub fn models(&self) -> &[DeviceModel] {
        &self.models
    }
}

const NONE: u32 = u32::MAX;

/// A pre-resolved (codelet, device): the device's own model and its kind's model. Cheap to copy
/// and to look up with; valid for the [`PerfModels`] that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ModelKey {
    codelet: u32,
    first: u32,
    second: u32,
    device: DeviceRef,
}

impl ModelKey {
    /// The codelet.
    pub fn codelet(self) -> CodeletIndex {
        CodeletIndex(self.codelet)
    }
    /// The device.
    pub fn device(self) -> DeviceRef {
        self.device
    }
}

/// Why no duration could be predicted.
#[derive(Debug, Clone, PartialEq)]
pub enum NoModelReason {
    /// The machine has no model at all for this codelet; `known` lists the codelets it has.
    UnknownCodelet {
        /// Codelet names with models, sorted.
        known: Vec<String>,
    },
    /// The codelet has no model for this device (nor for its kind).
    NoDeviceModel {
        /// The devices the codelet has models for (`cpu`, `gpu`, `CUDA1`, ...).
        devices: Vec<String>,
    },
    /// The device has models, but none covers this size: no history entry of this size, no
    /// regression whose range contains it, and no flop rate (or a task without flops).
    SizeNotCovered {
        /// Sizes with history for this device (its own and its kind's), sorted.
        available_sizes: Vec<u64>,
    },
}

/// No model gives a duration for this codelet, device and size.
#[derive(Debug, Clone, PartialEq)]
pub struct NoModel {
    /// The codelet name.
    pub codelet: String,
    /// The device's name (`cpu`, or the GPU's name).
    pub device: String,
    /// The footprint size asked for (`None` when resolving a [`ModelKey`], which is for all
    /// sizes).
    pub size_bytes: Option<u64>,
    /// What is missing.
    pub reason: NoModelReason,
}

fn list<T: fmt::Display>(items: &[T], unit: &str) -> String {
    if items.is_empty() {
        return "none".to_string();
    }
    let shown: Vec<String> = items
        .iter()
        .take(12)
        .map(|s| format!("{s}{unit}"))
        .collect();
    if items.len() > 12 {
        format!("{}, ... ({} in all)", shown.join(", "), items.len())
    } else {
        shown.join(", ")
    }
}

/// How a size in bytes reads as a square tile of floats or doubles ("960×960 single"), the shape
/// of StarPU's dense codelets; `None` when it is neither.
fn square_tile(bytes: u64) -> Option<String> {
    let side = |elem: u64| {
        bytes
            .is_multiple_of(elem)
            .then(|| (bytes / elem).isqrt())
            .filter(|k| k * k * elem == bytes && *k > 0)
    };
    match (side(4), side(8)) {
        (Some(s), Some(d)) => Some(format!("{s}×{s} single or {d}×{d} double")),
        (Some(s), None) => Some(format!("{s}×{s} single")),
        (None, Some(d)) => Some(format!("{d}×{d} double")),
        (None, None) => None,
    }
}

fn size_with_tile(bytes: u64) -> String {
    match square_tile(bytes) {
        Some(t) => format!("{bytes} B ({t})"),
        None => format!("{bytes} B"),
    }
}

impl NoModel {
    /// One short sentence for the reasons several devices gave for the same task: when every
    /// device misses only the size, the sizes the machine is calibrated for (over all devices)
    /// instead of one sentence per device.
    pub fn summarize(reasons: &[NoModel]) -> String {
        let sizes: Option<Vec<u64>> =
            reasons
                .iter()
                .try_fold(Vec::new(), |mut acc, r| match &r.reason {
                    NoModelReason::SizeNotCovered { available_sizes } => {
                        acc.extend(available_sizes);
                        Some(acc)
                    }
                    _ => None,
                });
        match (reasons.first(), sizes) {
            (None, _) => String::new(),
            (Some(first), Some(mut sizes)) => {
                sizes.sort_unstable();
                sizes.dedup();
                let shown: Vec<String> = sizes.iter().map(|&s| size_with_tile(s)).collect();
                format!(
                    "the models of codelet `{}` do not cover size {}; they are calibrated for {}",
                    first.codelet,
                    first.size_bytes.map_or("?".into(), size_with_tile),
                    list(&shown, "")
                )
            }
            (Some(_), None) => {
                let mut lines: Vec<String> = reasons.iter().map(|r| r.to_string()).collect();
                lines.dedup();
                lines.join("; ")
            }
        }
    }
}

impl fmt::Display for NoModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "no performance model for codelet `{}` on device {}",
            self.codelet, self.device
        )?;
        if let Some(s) = self.size_bytes {
            write!(f, " at size {s} B")?;
        }
        f.write_str(": ")?;
        match &self.reason {
            NoModelReason::UnknownCodelet { known } => {
                let known: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
                write!(
                    f,
                    "the machine has no [[codelets]] entry named `{}`; codelets with models: {}",
                    self.codelet,
                    list(&known, "")
                )
            }
            NoModelReason::NoDeviceModel { devices } => write!(
                f,
                "the codelet has no model for this device or its kind; it has models for: {}",
                list(devices, "")
            ),
            NoModelReason::SizeNotCovered { available_sizes } => write!(
                f,
                "no history entry of this size, no regression covering it and no flop rate \
                 (or a task without flops); sizes with history on this device: {}",
                list(available_sizes, " B")
            ),
        }
    }
}

impl std::error::Error for NoModel {}

/// The kernel models of a machine: every codelet, with its noise setting.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PerfModels {
    gpu_names: Vec<String>,
    default_noise: Noise,
    codelets: Vec<CodeletModel>,
    by_name: BTreeMap<String, u32>,
}

impl PerfModels {
    /// No codelets yet, for a machine whose GPUs (indexed by [`GpuId`]) have these names, with
    /// `default_noise` for codelets that set none.
    pub fn new(gpu_names: Vec<String>, default_noise: Noise) -> PerfModels {
        PerfModels {
            gpu_names,
            default_noise,
            codelets: Vec::new(),
            by_name: BTreeMap::new(),
        }
    }

    /// Add a codelet (its name must be new) with its own noise setting, if any.
    pub fn add_codelet(
        &mut self,
        name: impl Into<String>,
        noise: Option<Noise>,
    ) -> Result<CodeletIndex, ParamError> {
        let name = name.into();
        if name.trim().is_empty() {
            return Err(ParamError::new(
                "name",
                None,
                "expected a non-empty codelet name".to_string(),
            ));
        }
        if self.by_name.contains_key(&name) {
            return Err(ParamError::new(
                "name",
                None,
                format!("duplicate codelet `{name}`; expected one [[codelets]] entry per name"),
            ));
        }
        let idx = self.codelets.len() as u32;
        self.by_name.insert(name.clone(), idx);
        self.codelets.push(CodeletModel {
            name,
            noise,
            models: Vec::new(),
            cpu: None,
            gpu_kind: None,
            per_gpu: vec![None; self.gpu_names.len()],
        });
        Ok(CodeletIndex(idx))
    }

    /// Add a device model to a codelet: at most one per device selector.
    pub fn add_model(
        &mut self,
        codelet: CodeletIndex,
        model: DeviceModel,
    ) -> Result<(), ParamError> {
        let device_name = self.selector_name(model.device);
        let c = self
            .codelets
            .get_mut(codelet.0 as usize)
            .ok_or_else(|| ParamError::new("name", None, "no such codelet".to_string()))?;
        let at = c.models.len() as u32;
        let slot = match model.device {
            DeviceSelector::Kind(DeviceKind::Cpu) => &mut c.cpu,
            DeviceSelector::Kind(DeviceKind::Gpu) => &mut c.gpu_kind,
            DeviceSelector::Gpu(g) => c.per_gpu.get_mut(g.index()).ok_or_else(|| {
                ParamError::new("device", None, format!("no GPU with index {}", g.0))
            })?,
        };
        if slot.is_some() {
            return Err(ParamError::new(
                "device",
                None,
                format!(
                    "codelet `{}` already has a model for device `{device_name}`; expected one \
                     model per device",
                    c.name
                ),
            ));
        }
        *slot = Some(at);
        c.models.push(model);
        Ok(())
    }

    /// Set the noise of every codelet (the machine default and each codelet's own), e.g. from
    /// a scenario option.
    pub fn set_noise_everywhere(&mut self, noise: Noise) {
        for c in &mut self.codelets {
            c.noise = None;
        }
        self.default_noise = noise;
    }

    /// Multiply every duration the models give by its own factor drawn uniformly in
    /// `[1 - rel, 1 + rel]`: one per history entry, regression and flop rate, in file order,
    /// from `rng`. A calibration known only to that precision; runs with different draws show
    /// how much a prediction depends on it. `rel` must lie in `[0, 1)`, so that every
    /// duration stays positive.
    pub fn perturb_means(&mut self, rel: f64, rng: &mut SimRng) -> Result<(), ParamError> {
        if !(0.0..1.0).contains(&rel) {
            return Err(ParamError::new(
                "perturb_means",
                None,
                format!("expected a relative half-width in [0, 1), found {rel}"),
            ));
        }
        let mut factors = || 1.0 + rel * (2.0 * rng.random::<f64>() - 1.0);
        for c in &mut self.codelets {
            for m in &mut c.models {
                m.scale_each(&mut factors);
            }
        }
        Ok(())
    }

    /// The noise of codelets that do not set their own.
    pub fn default_noise(&self) -> &Noise {
        &self.default_noise
    }

    /// The noise a codelet's durations are drawn with.
    pub fn noise(&self, codelet: CodeletIndex) -> &Noise {
        self.codelets
            .get(codelet.0 as usize)
            .and_then(|c| c.noise.as_ref())
            .unwrap_or(&self.default_noise)
    }

    /// True if no codelet has a model.
    pub fn is_empty(&self) -> bool {
        self.codelets.is_empty()
    }

    /// Codelets, in the order they were added (file order).
    pub fn codelets(&self) -> &[CodeletModel] {
        &self.codelets
    }

    /// The codelet with this name.
    pub fn codelet(&self, name: &str) -> Option<&CodeletModel> {
        self.by_name.get(name).map(|&i| &self.codelets[i as usize])
    }

    /// The model a codelet has for exactly this selector (not falling back from a GPU to the
    /// `gpu` kind), e.g. to read its history entries.
    pub fn model_for(&self, codelet: &str, device: DeviceSelector) -> Option<&DeviceModel> {
        let c = self.codelet(codelet)?;
        let slot = match device {
            DeviceSelector::Kind(DeviceKind::Cpu) => c.cpu,
            DeviceSelector::Kind(DeviceKind::Gpu) => c.gpu_kind,
            DeviceSelector::Gpu(g) => c.per_gpu.get(g.index()).copied().flatten(),
        };
        slot.map(|i| &c.models[i as usize])
    }

    /// The GPU with this name, among those the models were built for.
    pub fn gpu_by_name(&self, name: &str) -> Option<GpuId> {
        self.gpu_names
            .iter()
            .position(|n| n == name)
            .map(|i| GpuId(i as u32))
    }

    /// The name of a device for messages: `cpu` or the GPU's name.
    pub fn device_name(&self, device: DeviceRef) -> String {
        match device {
            DeviceRef::Cpu => "cpu".to_string(),
            DeviceRef::Gpu(g) => self
                .gpu_names
                .get(g.index())
                .cloned()
                .unwrap_or_else(|| format!("GPU #{}", g.0)),
        }
    }

    /// The name of a selector as machine files write it: `cpu`, `gpu` or the GPU's name.
    pub fn selector_name(&self, device: DeviceSelector) -> String {
        match device {
            DeviceSelector::Kind(k) => k.as_str().to_string(),
            DeviceSelector::Gpu(g) => self.device_name(DeviceRef::Gpu(g)),
        }
    }

    /// Resolve (codelet, device) once, for the `*_key_s` methods. Fails if the codelet is
    /// unknown or has no model for the device or its kind: the device cannot run it.
    pub fn key(&self, codelet: &str, device: DeviceRef) -> Result<ModelKey, NoModel> {
        let Some(&ci) = self.by_name.get(codelet) else {
            return Err(NoModel {
                codelet: codelet.to_string(),
                device: self.device_name(device),
                size_bytes: None,
                reason: NoModelReason::UnknownCodelet {
                    known: self.by_name.keys().cloned().collect(),
                },
            });
        };
        let c = &self.codelets[ci as usize];
        let (own, kind) = match device {
            DeviceRef::Cpu => (None, c.cpu),
            DeviceRef::Gpu(g) => (c.per_gpu.get(g.index()).copied().flatten(), c.gpu_kind),
        };
        let mut slots = [own, kind].into_iter().flatten();
        let first = slots.next().unwrap_or(NONE);
        let second = slots.next().unwrap_or(NONE);
        if first == NONE {
            return Err(NoModel {
                codelet: c.name.clone(),
                device: self.device_name(device),
                size_bytes: None,
                reason: NoModelReason::NoDeviceModel {
                    devices: c
                        .models
                        .iter()
                        .map(|m| self.selector_name(m.device))
                        .collect(),
                },
            });
        }
        Ok(ModelKey {
            codelet: ci,
            first,
            second,
            device,
        })
    }

    /// (mean, deviation) for a resolved key.
    #[inline]
    fn mean_and_stddev(
        &self,
        key: ModelKey,
        size_bytes: u64,
        flops: f64,
    ) -> Result<(f64, f64), NoModel> {
        let c = &self.codelets[key.codelet as usize];
        for slot in [key.first, key.second] {
            if slot == NONE {
                break;
            }
            if let Some(r) = c.models[slot as usize].mean_and_stddev(size_bytes, flops) {
                return Ok(r);
            }
        }
        Err(self.size_not_covered(key, size_bytes))
    }

    #[cold]
    fn size_not_covered(&self, key: ModelKey, size_bytes: u64) -> NoModel {
        let c = &self.codelets[key.codelet as usize];
        let mut sizes: Vec<u64> = [key.first, key.second]
            .into_iter()
            .filter(|&s| s != NONE)
            .flat_map(|s| c.models[s as usize].history.sizes())
            .collect();
        sizes.sort_unstable();
        sizes.dedup();
        NoModel {
            codelet: c.name.clone(),
            device: self.device_name(key.device),
            size_bytes: Some(size_bytes),
            reason: NoModelReason::SizeNotCovered {
                available_sizes: sizes,
            },
        }
    }

    /// The predicted (mean) duration in seconds, for a resolved key: what schedulers see.
    #[inline]
    pub fn predict_key_s(
        &self,
        key: ModelKey,
        size_bytes: u64,
        flops: f64,
    ) -> Result<f64, NoModel> {
        self.mean_and_stddev(key, size_bytes, flops).map(|(m, _)| m)
    }

    /// A simulated duration in seconds, for a resolved key: the mean with the codelet's noise,
    /// drawn from `rng`.
    #[inline]
    pub fn draw_key_s<R: Rng + ?Sized>(
        &self,
        key: ModelKey,
        size_bytes: u64,
        flops: f64,
        rng: &mut R,
    ) -> Result<f64, NoModel> {
        let (mean, sd) = self.mean_and_stddev(key, size_bytes, flops)?;
        Ok(self.noise(CodeletIndex(key.codelet)).draw(mean, sd, rng))
    }

    /// The predicted (mean) duration in seconds of `codelet` on `device` for a task of
    /// `size_bytes` (the footprint size) and `flops`: what schedulers see.
    pub fn predict_s(
        &self,
        codelet: &str,
        device: DeviceRef,
        size_bytes: u64,
        flops: f64,
    ) -> Result<f64, NoModel> {
        let key = self.key(codelet, device).map_err(|e| NoModel {
            size_bytes: Some(size_bytes),
            ..e
        })?;
        self.predict_key_s(key, size_bytes, flops)
    }

    /// A simulated duration in seconds: the prediction with the codelet's noise, drawn from
    /// `rng`.
    pub fn draw_s<R: Rng + ?Sized>(
        &self,
        codelet: &str,
        device: DeviceRef,
        size_bytes: u64,
        flops: f64,
        rng: &mut R,
    ) -> Result<f64, NoModel> {
        let key = self.key(codelet, device).map_err(|e| NoModel {
            size_bytes: Some(size_bytes),
            ..e
        })?;
        self.draw_key_s(key, size_bytes, flops, rng)
    }
}
