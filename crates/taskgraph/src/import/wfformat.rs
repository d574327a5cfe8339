//! WfCommons' WfFormat workflow instances (JSON): schema 1.5 and later
//! (`workflow.specification` with tasks and files, `workflow.execution` with each task's
//! measured runtime), and the earlier layout (`workflow.tasks` with `runtime` and `files`).
//!
//! Each task becomes a computation whose codelet is its program (`command.program`, else its
//! `category`, else its name up to `_ID`), that reads its input files and writes its output
//! files (one handle per file, of the file's size), waits for its `parents`, and carries its
//! measured runtime as a recorded duration on a CPU core (workflows run on CPUs): a machine has
//! no kernel models for workflow programs, so scenarios set `workload.durations = "recorded"`.

use std::path::Path;

use hetsim_core::InputError;
use rustc_hash::FxHashMap;
use serde_json::Value;

use super::{ImportOptions, ImportStats, Parts, TaskOrigin, read_text};
use crate::{Access, AccessMode, Handle, HandleId, TaskGraphBuilder, TaskId, Unit};

/// One task as read, before ordering.
struct WfTask {
    id: String,
    codelet: String,
    runtime_s: Option<f64>,
    priority: i32,
    parents: Vec<String>,
    inputs: Vec<(String, Option<u64>)>,
    outputs: Vec<(String, Option<u64>)>,
}

fn field<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |v, k| v.get(k))
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn program_name(task_name: &str) -> String {
    task_name
        .split_once("_ID")
        .map_or(task_name, |(p, _)| p)
        .to_string()
}

pub(crate) fn read(path: &Path, options: &ImportOptions) -> Result<Parts, InputError> {
    let text = read_text(path)?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| {
        InputError::new(format!("not a WfFormat instance: {e}")).at_line(e.line().max(1))
    })?;
    let bad = |m: &str| InputError::new(format!("not a WfFormat instance: {m}"));
    let mut tasks = Vec::new();
    let mut file_sizes: FxHashMap<String, u64> = FxHashMap::default();
    if let Some(spec) = field(&doc, "workflow.specification") {
        let spec_tasks = spec
            .get("tasks")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("`workflow.specification.tasks` is not a list"))?;
        for f in spec
            .get("files")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let (Some(id), Some(size)) = (
                f.get("id").and_then(Value::as_str),
                f.get("sizeInBytes").and_then(Value::as_u64),
            ) {
                file_sizes.insert(id.to_string(), size);
            }
        }
        let mut exec: FxHashMap<&str, &Value> = FxHashMap::default();
        for t in field(&doc, "workflow.execution.tasks")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(id) = t.get("id").and_then(Value::as_str) {
                exec.insert(id, t);
            }
        }
        for (i, t) in spec_tasks.iter().enumerate() {
            let id = t
                .get("id")
                .or_else(|| t.get("name"))
                .and_then(Value::as_str)
                .ok_or_else(|| bad(&format!("task {i} has no `id`")))?
                .to_string();
            let e = exec.get(id.as_str()).copied();
            let codelet = e
                .and_then(|e| field(e, "command.program"))
                .or_else(|| t.get("category"))
                .and_then(Value::as_str)
                .map_or_else(|| program_name(&id), String::from);
            let files = |k: &str| -> Vec<(String, Option<u64>)> {
                strings(t.get(k)).into_iter().map(|f| (f, None)).collect()
            };
            tasks.push(WfTask {
                codelet,
                runtime_s: runtime(e.and_then(|e| e.get("runtimeInSeconds")), &id)?,
                priority: e
                    .and_then(|e| e.get("priority"))
                    .and_then(Value::as_i64)
                    .map_or(0, |p| p.clamp(i32::MIN as i64, i32::MAX as i64) as i32),
                parents: strings(t.get("parents")),
                inputs: files("inputFiles"),
                outputs: files("outputFiles"),
                id,
            });
        }
    } else if let Some(list) = field(&doc, "workflow.tasks").and_then(Value::as_array) {
        for (i, t) in list.iter().enumerate() {
            let id = t
                .get("id")
                .or_else(|| t.get("name"))
                .and_then(Value::as_str)
                .ok_or_else(|| bad(&format!("task {i} has no `name`")))?
                .to_string();
            let mut inputs = Vec::new();
            let mut outputs = Vec::new();
            for f in t
                .get("files")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let name = f
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let size = f.get("size").and_then(Value::as_u64);
                match f.get("link").and_then(Value::as_str) {
                    Some("output") => outputs.push((name, size)),
                    _ => inputs.push((name, size)),
                }
            }
            tasks.push(WfTask {
                codelet: t
                    .get("category")
                    .and_then(Value::as_str)
                    .map_or_else(|| program_name(&id), String::from),
                runtime_s: runtime(t.get("runtimeInSeconds").or_else(|| t.get("runtime")), &id)?,
                priority: 0,
                parents: strings(t.get("parents")),
                inputs,
                outputs,
                id,
            });
        }
    } else {
        return Err(bad(
            "expected `workflow.specification.tasks` (WfFormat 1.5) or `workflow.tasks`",
        ));
    }
    build(tasks, file_sizes, options)
}

/// A task's recorded runtime (`runtimeInSeconds`), if given: a finite number of seconds, at
/// least 0.
fn runtime(v: Option<&Value>, id: &str) -> Result<Option<f64>, InputError> {
    let Some(v) = v else { return Ok(None) };
    match v.as_f64() {
        Some(r) if r.is_finite() && r >= 0.0 => Ok(Some(r)),
        _ => Err(InputError::new(format!(
            "task `{id}`: runtimeInSeconds {v} is not a duration; expected a number of seconds \
             >= 0"
        ))
        .at_field("runtimeInSeconds")),
    }
}

fn build(
    tasks: Vec<WfTask>,
    mut file_sizes: FxHashMap<String, u64>,
    options: &ImportOptions,
) -> Result<Parts, InputError> {
    let index: FxHashMap<&str, usize> = tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.as_str(), i))
        .collect();
    if index.len() != tasks.len() {
        return Err(InputError::new("two tasks have the same id").at_field("workflow"));
    }
    // Submission order: a topological order (Kahn's, file order among the ready), so that
    // inferred data dependencies go from producers to consumers.
    let mut preds: Vec<Vec<usize>> = Vec::with_capacity(tasks.len());
    for t in &tasks {
        let mut p = Vec::with_capacity(t.parents.len());
        for parent in &t.parents {
            let Some(&j) = index.get(parent.as_str()) else {
                return Err(InputError::new(format!(
                    "task `{}` has parent `{parent}`, which is not a task of the workflow",
                    t.id
                ))
                .at_field("parents"));
            };
            p.push(j);
        }
        preds.push(p);
    }
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); tasks.len()];
    let mut left: Vec<usize> = preds.iter().map(Vec::len).collect();
    for (i, p) in preds.iter().enumerate() {
        for &j in p {
            succs[j].push(i);
        }
    }
    let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<usize>> = (0..tasks.len())
        .filter(|&i| left[i] == 0)
        .map(std::cmp::Reverse)
        .collect();
    let mut order = Vec::with_capacity(tasks.len());
    while let Some(std::cmp::Reverse(i)) = ready.pop() {
        order.push(i);
        for &s in &succs[i] {
            left[s] -= 1;
            if left[s] == 0 {
                ready.push(std::cmp::Reverse(s));
            }
        }
    }
    if order.len() != tasks.len() {
        let stuck = (0..tasks.len()).find(|&i| left[i] > 0).unwrap_or(0);
        return Err(InputError::new(format!(
            "the dependencies contain a cycle through task `{}`: a task cannot wait for itself",
            tasks[stuck].id
        ))
        .at_field("parents"));
    }
    let mut pos = vec![0u32; tasks.len()];
    for (p, &i) in order.iter().enumerate() {
        pos[i] = p as u32;
    }

    let mut b = TaskGraphBuilder::with_capacity(tasks.len(), file_sizes.len(), 0);
    let mut handles: FxHashMap<String, HandleId> = FxHashMap::default();
    let mut origins = Vec::with_capacity(tasks.len());
    let (mut accesses, mut after) = (Vec::new(), Vec::new());
    for &i in &order {
        let t = &tasks[i];
        accesses.clear();
        for (files, mode) in [(&t.inputs, AccessMode::R), (&t.outputs, AccessMode::W)] {
            for (name, size) in files {
                let h = match handles.get(name) {
                    Some(&h) => h,
                    None => {
                        let bytes = size.or_else(|| file_sizes.remove(name)).unwrap_or(0);
                        let h = b.add_handle(Handle::bytes(bytes))?;
                        handles.insert(name.clone(), h);
                        h
                    }
                };
                if !accesses.iter().any(|a: &Access| a.handle == h) {
                    accesses.push(Access::new(h, mode));
                }
            }
        }
        after.clear();
        after.extend(preds[i].iter().map(|&j| TaskId(pos[j])));
        let codelet = b.codelet(&t.codelet)?;
        let id = b.submit_after(codelet, 0.0, t.priority, &accesses, &after)?;
        origins.push(TaskOrigin {
            line: 0,
            id: super::Label::new(&t.id),
            recorded: t.runtime_s.map(|r| (Unit::Cpu, r)),
        });
        debug_assert_eq!(id.index() + 1, origins.len());
    }
    let _ = options;
    Ok((b.build()?, origins, ImportStats::default()))
}
