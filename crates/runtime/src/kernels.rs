//! The machine's kernel models as the runtime's [`KernelTimes`]: the scheduler's mean is
//! [`PerfModels::predict_key_s`], the simulated duration [`PerfModels::draw_key_s`], for the
//! task's codelet, footprint size (`Task::model_size_bytes`) and flops on the worker's device.

use std::cell::RefCell;

use rustc_hash::FxHashMap;

use crate::{KernelTimes, SimRng, Worker, WorkerKind};
use hetsim_models::{DeviceRef, ModelKey, NoModel, NoModelReason, Noise, PerfModels};
use hetsim_taskgraph::{TaskGraph, TaskId};

/// [`PerfModels`] behind the runtime's [`KernelTimes`] trait. (codelet, worker) pairs are
/// resolved to a [`ModelKey`] once and cached, so repeated predictions cost a history lookup.
#[derive(Debug)]
pub struct CalibratedKernels<'a> {
    models: &'a PerfModels,
    /// (codelet id in the graph, worker id) → key, or `None` if the worker cannot run it.
    keys: RefCell<FxHashMap<(u16, u32), Option<ModelKey>>>,
}

impl<'a> CalibratedKernels<'a> {
    /// Kernel times from `models` (usually `machine.perf_models()`).
    pub fn new(models: &'a PerfModels) -> Self {
        CalibratedKernels {
            models,
            keys: RefCell::new(FxHashMap::default()),
        }
    }

    /// The device a worker's tasks are modelled on: every CPU core is `cpu`; a GPU worker is
    /// the GPU of the same name. `None` for a GPU worker whose name the models do not know.
    pub fn device_of(&self, worker: &Worker) -> Option<DeviceRef> {
        match worker.kind {
            WorkerKind::Cpu => Some(DeviceRef::Cpu),
            WorkerKind::Gpu => self.models.gpu_by_name(&worker.device).map(DeviceRef::Gpu),
        }
    }

    fn key(&self, graph: &TaskGraph, task: TaskId, worker: &Worker) -> Option<ModelKey> {
        let codelet = graph.task(task).codelet;
        let k = (codelet.0, worker.id.0);
        if let Some(found) = self.keys.borrow().get(&k) {
            return *found;
        }
        let key = self
            .device_of(worker)
            .and_then(|d| self.models.key(graph.codelet_name(codelet), d).ok());
        self.keys.borrow_mut().insert(k, key);
        key
    }

    /// Why `worker` has no duration for `task`, for error messages: the codelet, device and
    /// size, and the sizes that do have history. `None` if it has one.
    pub fn explain(&self, graph: &TaskGraph, task: TaskId, worker: &Worker) -> Option<NoModel> {
        let t = graph.task(task);
        let name = graph.codelet_name(t.codelet);
        let size = t.model_size_bytes();
        let Some(device) = self.device_of(worker) else {
            return Some(NoModel {
                codelet: name.to_string(),
                device: worker.device.clone(),
                size_bytes: Some(size),
                reason: NoModelReason::NoDeviceModel {
                    devices: Vec::new(),
                },
            });
        };
        self.models.predict_s(name, device, size, t.flops()).err()
    }
}

impl KernelTimes for CalibratedKernels<'_> {
    fn explain(&self, graph: &TaskGraph, task: TaskId, worker: &Worker) -> Option<NoModel> {
        CalibratedKernels::explain(self, graph, task, worker)
    }

    fn means_by_shape(&self) -> bool {
        true
    }

    fn mean_s(&self, graph: &TaskGraph, task: TaskId, worker: &Worker) -> Option<f64> {
        let key = self.key(graph, task, worker)?;
        let t = graph.task(task);
        self.models
            .predict_key_s(key, t.model_size_bytes(), t.flops())
            .ok()
    }

    fn draw_s(
        &self,
        graph: &TaskGraph,
        task: TaskId,
        worker: &Worker,
        mean_s: f64,
        rng: &mut SimRng,
    ) -> f64 {
        let Some(key) = self.key(graph, task, worker) else {
            return mean_s;
        };
        // Without noise a draw is the mean, which the runtime passes: no second lookup.
        if matches!(self.models.noise(key.codelet()), Noise::None) {
            return mean_s;
        }
        let t = graph.task(task);
        self.models
            .draw_key_s(key, t.model_size_bytes(), t.flops(), rng)
            .unwrap_or(mean_s)
    }
}
