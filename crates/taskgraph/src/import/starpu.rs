//! StarPU's `tasks.rec` (as `starpu_fxt_tool` writes it from an FxT trace), with the `data.rec`
//! beside it when there is one. The fields and what StarPU means by them are described in
//! `traces/starpu/PROVENANCE.md`; how they map onto a graph in `docs/taskgraph-files.md`.
//!
//! The file is read as a stream, one line at a time, and each record is reduced to numbers as
//! soon as it ends, so a trace of a million tasks is never held as text.

use std::io::BufRead;
use std::path::Path;

use hetsim_core::InputError;
use rustc_hash::FxHashMap;

use super::records::{Buffer, Records, TaskRecord};
use super::{ImportOptions, Parts, open};
use crate::{AccessMode, Handle, HandleId, RecordedWorker, Unit};

/// Read `tasks.rec` at `path` (and `data.rec` in the same directory, if present).
pub(crate) fn read(path: &Path, options: &ImportOptions) -> Result<Parts, InputError> {
    let data = read_data_rec(path)?;
    let mut reader = Reader {
        rec: Records::default(),
        handles: FxHashMap::default(),
        handle_line: Vec::new(),
        data,
        cur: Current::default(),
        file_order: 0,
        hints: Vec::new(),
        acquires_ms: Vec::new(),
        first_task_ms: f64::INFINITY,
    };
    let mut input = open(path)?;
    let mut buf = Vec::with_capacity(256);
    let mut line_no: u32 = 0;
    loop {
        buf.clear();
        let n = input.read_until(b'\n', &mut buf).map_err(|e| {
            InputError::new(format!(
                "cannot read the file after line {line_no} (truncated or corrupt?): {e}"
            ))
        })?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let text = std::str::from_utf8(&buf)
            .map_err(|_| InputError::new("the line is not UTF-8 text").at_line(line_no as usize))?
            .trim_end_matches(['\n', '\r']);
        if text.trim().is_empty() {
            reader.end_record()?;
        } else {
            reader.field(text, line_no)?;
        }
    }
    reader.end_record()?;
    // Hints name handles by pointer value; the records of the tasks that use them may come
    // later in the file.
    for (job, order, ptr, line) in std::mem::take(&mut reader.hints) {
        let handle = reader.handles.get(&ptr).copied();
        reader.rec.add_hint(job, order, handle, line)?;
    }
    // The program's acquisitions before its first task (a matrix's partitioning) delay it.
    let first = reader.first_task_ms;
    reader.rec.startup_acquires =
        reader.acquires_ms.iter().filter(|&&ms| ms < first).count() as u32;
    reader.rec.assemble(&options.gpu_synchronous)
}

/// The record StarPU writes for a synchronous data acquisition's internal task.
const ACQUIRE: &str = "_starpu_data_acquire_post";

/// Per handle in `data.rec`: its size in bytes, matrix shape, and line.
type DataRec = FxHashMap<u64, (u64, Option<(u32, u32)>, u32)>;

/// `data.rec` beside `tasks.rec`, if there is one.
fn read_data_rec(tasks: &Path) -> Result<Option<(std::path::PathBuf, DataRec)>, InputError> {
    let path = tasks.with_file_name("data.rec");
    if !path.is_file() {
        return Ok(None);
    }
    let text = super::read_text(&path)?;
    let mut out = DataRec::default();
    let (mut handle, mut size, mut dims, mut start) = (None, None, None, 0u32);
    let err = |line: usize, m: String| InputError::new(m).in_file(&path).at_line(line);
    let mut finish = |handle: &mut Option<u64>,
                      size: &mut Option<u64>,
                      dims: &mut Option<(u32, u32)>,
                      start: u32|
     -> Result<(), InputError> {
        match (handle.take(), size.take()) {
            (Some(h), Some(s)) => {
                out.insert(h, (s, dims.take(), start));
            }
            (Some(_), None) => {
                return Err(err(
                    start as usize,
                    "a handle record without its `Size` (truncated record?)".into(),
                ));
            }
            _ => {}
        }
        *dims = None;
        Ok(())
    };
    for (i, line) in text.lines().enumerate() {
        let n = i as u32 + 1;
        if line.trim().is_empty() {
            finish(&mut handle, &mut size, &mut dims, start)?;
            continue;
        }
        let Some((key, value)) = line.split_once(": ") else {
            return Err(err(
                n as usize,
                format!("expected `Field: value`, found `{line}`"),
            ));
        };
        if handle.is_none() && size.is_none() {
            start = n;
        }
        match key {
            "Handle" => {
                handle = Some(
                    u64::from_str_radix(value.trim(), 16)
                        .map_err(|_| err(n as usize, format!("bad handle `{value}`")))?,
                )
            }
            "Size" => {
                size = Some(
                    value
                        .trim()
                        .parse()
                        .map_err(|_| err(n as usize, format!("bad size `{value}`")))?,
                )
            }
            "Description" => dims = matrix_dims(value.trim()),
            _ => {}
        }
    }
    finish(&mut handle, &mut size, &mut dims, start)?;
    Ok(Some((path, out)))
}

/// `M<nx>x<ny>x<elemsize>` → (nx, ny).
fn matrix_dims(desc: &str) -> Option<(u32, u32)> {
    let rest = desc.strip_prefix('M')?;
    let mut it = rest.split('x');
    let nx = it.next()?.parse().ok()?;
    let ny = it.next()?.parse().ok()?;
    Some((nx, ny))
}

/// The record being read.
#[derive(Debug, Default)]
struct Current {
    start: u32,
    any: bool,
    control: Option<(String, u32)>,
    name: Option<String>,
    model: Option<String>,
    job: Option<u32>,
    submit_order: Option<u64>,
    priority: i32,
    deps_start: u32,
    worker: Option<(u32, u32)>,
    memory_node: Option<i64>,
    submit_ms: Option<f64>,
    start_ms: Option<f64>,
    end_ms: Option<f64>,
    gflop: Option<f64>,
    handles: Vec<(u64, u32)>,
    modes: Vec<Mode>,
    modes_line: u32,
    sizes: Vec<u64>,
    sizes_line: u32,
}

/// An access mode as written (`R`, `W`, `RW`, with `S` scratch, `X` reduction, `C` commute).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Access(AccessMode),
    Scratch,
}

struct Reader {
    rec: Records,
    /// Handle pointer value → handle.
    handles: FxHashMap<u64, HandleId>,
    /// Per handle, the line of the record that first gave its size.
    handle_line: Vec<u32>,
    data: Option<(std::path::PathBuf, DataRec)>,
    cur: Current,
    /// Records read, for the order of tasks without a `SubmitOrder`.
    file_order: u64,
    /// "Will not be used" records.
    hints: Vec<WontUseRecord>,
    /// When StarPU submitted each of its data acquisitions, and its first task (ms).
    acquires_ms: Vec<f64>,
    first_task_ms: f64,
}

/// A `Control: WontUse` record: its job, order key, handle pointer value, line.
type WontUseRecord = (Option<u32>, (u64, u64), u64, u32);

impl Reader {
    fn field(&mut self, text: &str, line: u32) -> Result<(), InputError> {
        let at = |m: String| InputError::new(m).at_line(line as usize);
        let (key, value) = match text.split_once(':') {
            Some((k, v)) => (k, v.trim()),
            None => {
                return Err(at(format!(
                    "expected `Field: value`, found `{text}` (truncated record?)"
                )));
            }
        };
        let c = &mut self.cur;
        if !c.any {
            c.any = true;
            c.start = line;
            c.deps_start = self.rec.deps.len() as u32;
        }
        let num = |what: &str| {
            at(format!(
                "field `{key}`: expected {what}, found `{value}` (truncated record?)"
            ))
        };
        match key {
            "Control" => c.control = Some((value.to_string(), line)),
            "Name" => c.name = Some(value.to_string()),
            "Model" => c.model = Some(value.to_string()),
            "JobId" => {
                if value.is_empty() {
                    return Err(num("a job id"));
                }
                c.job = Some(self.rec.job(value, line));
            }
            "SubmitOrder" => c.submit_order = Some(value.parse().map_err(|_| num("an integer"))?),
            "Priority" => c.priority = value.parse().map_err(|_| num("an integer"))?,
            "DependsOn" => {
                for id in value.split_ascii_whitespace() {
                    let j = self.rec.job(id, line);
                    self.rec.deps.push(j);
                }
            }
            "WorkerId" => c.worker = Some((value.parse().map_err(|_| num("an integer"))?, line)),
            "MemoryNode" => c.memory_node = Some(value.parse().map_err(|_| num("an integer"))?),
            "SubmitTime" => c.submit_ms = Some(value.parse().map_err(|_| num("a time in ms"))?),
            "StartTime" => c.start_ms = Some(value.parse().map_err(|_| num("a time in ms"))?),
            "EndTime" => c.end_ms = Some(value.parse().map_err(|_| num("a time in ms"))?),
            "GFlop" => c.gflop = Some(value.parse().map_err(|_| num("a number"))?),
            "Handles" => {
                c.handles.clear();
                for h in value.split_ascii_whitespace() {
                    let v =
                        u64::from_str_radix(h, 16).map_err(|_| num("hexadecimal handle values"))?;
                    c.handles.push((v, line));
                }
            }
            "Modes" => {
                c.modes.clear();
                c.modes_line = line;
                for m in value.split_ascii_whitespace() {
                    c.modes.push(parse_mode(m).ok_or_else(|| {
                        at(format!(
                            "field `Modes`: unknown access mode `{m}`: expected R, W or RW, \
                             optionally with S (scratch), X (reduction) or C (commute)"
                        ))
                    })?);
                }
            }
            "Sizes" => {
                c.sizes.clear();
                c.sizes_line = line;
                for s in value.split_ascii_whitespace() {
                    c.sizes
                        .push(s.parse().map_err(|_| num("sizes in bytes (integers)"))?);
                }
            }
            // Kept by StarPU for its tools; the replay needs none of them.
            _ => {}
        }
        Ok(())
    }

    fn end_record(&mut self) -> Result<(), InputError> {
        if !self.cur.any {
            return Ok(());
        }
        let c = std::mem::take(&mut self.cur);
        self.file_order += 1;
        let at = |line: u32, m: String| InputError::new(m).at_line(line as usize);
        if let Some((control, line)) = &c.control {
            if control != "WontUse" {
                return Err(at(
                    *line,
                    format!("unknown control record `{control}`: expected `WontUse`"),
                ));
            }
            let Some(order) = c.submit_order else {
                return Err(at(
                    c.start,
                    "a `WontUse` record without its `SubmitOrder` (truncated record?)".into(),
                ));
            };
            let [(ptr, _)] = c.handles.as_slice() else {
                return Err(at(
                    c.start,
                    "a `WontUse` record names one handle in `Handles`".into(),
                ));
            };
            self.hints.push((c.job, (1, order), *ptr, c.start));
            return Ok(());
        }
        let Some(job) = c.job else {
            return Err(at(
                c.start,
                "a task record without its `JobId` (truncated record?)".into(),
            ));
        };
        let Some((worker, worker_line)) = c.worker else {
            // No codelet ran: StarPU's internal tasks, kept only for their dependencies (and,
            // for a synchronous acquisition, its date).
            if let (Some(ACQUIRE), Some(ms)) = (c.name.as_deref(), c.submit_ms) {
                self.acquires_ms.push(ms);
            }
            return self.rec.add_internal(job, c.deps_start, c.start);
        };
        if let Some(ms) = c.submit_ms {
            self.first_task_ms = self.first_task_ms.min(ms);
        }
        let n = c.handles.len();
        if c.modes.len() != n || c.sizes.len() != n {
            return Err(at(
                c.start,
                format!(
                    "job {}: `Handles` lists {n} buffers, `Modes` {} and `Sizes` {} (truncated \
                     record?)",
                    self.rec.job_name(job),
                    c.modes.len(),
                    c.sizes.len()
                ),
            ));
        }
        let buffers_start = self.rec.buffers.len() as u32;
        for ((&(ptr, _), &mode), &size) in c.handles.iter().zip(&c.modes).zip(&c.sizes) {
            let buf = match mode {
                Mode::Scratch => Buffer::Scratch(size),
                Mode::Access(m) => Buffer::Data(self.handle(ptr, size, c.sizes_line)?, m),
            };
            self.rec.buffers.push(buf);
        }
        let unit = match c.memory_node {
            Some(0) => Unit::Cpu,
            Some(_) => Unit::Gpu,
            None => {
                return Err(at(
                    worker_line,
                    format!(
                        "job {}: `WorkerId` without `MemoryNode` (truncated record?)",
                        self.rec.job_name(job)
                    ),
                ));
            }
        };
        let recorded = match (c.start_ms, c.end_ms) {
            (Some(s), Some(e)) if e >= s => Some((unit, (e - s) / 1e3)),
            _ => None,
        };
        let name = c.model.or(c.name).unwrap_or_else(|| "unnamed".to_string());
        let codelet = self
            .rec
            .codelet(&name)
            .map_err(|e| e.at_line(c.start as usize))?;
        let order = match c.submit_order {
            Some(o) => (1, o),
            // starpu_replay submits the records without a SubmitOrder first.
            None => (0, self.file_order),
        };
        self.rec.add_task(TaskRecord {
            job,
            order,
            codelet,
            priority: c.priority,
            flops: c.gflop.map_or(0.0, |g| (g * 1e9).max(0.0)),
            worker: Some(RecordedWorker { id: worker, unit }),
            recorded,
            line: c.start,
            buffers: buffers_start..self.rec.buffers.len() as u32,
            deps: c.deps_start..self.rec.deps.len() as u32,
        })
    }

    /// The handle of pointer value `ptr`, accessed with `size` bytes at `line`.
    fn handle(&mut self, ptr: u64, size: u64, line: u32) -> Result<HandleId, InputError> {
        if let Some(&h) = self.handles.get(&ptr) {
            let known = self.rec.handles[h.index()].size_bytes;
            if known != size {
                return Err(InputError::new(format!(
                    "field `Sizes`: handle {ptr:x} is accessed with {size} bytes here and with \
                     {known} bytes at line {}",
                    self.handle_line[h.index()]
                ))
                .at_line(line as usize));
            }
            return Ok(h);
        }
        let mut handle = Handle::bytes(size);
        if let Some((data_path, data)) = &self.data
            && let Some(&(data_size, dims, data_line)) = data.get(&ptr)
        {
            if data_size != size {
                return Err(InputError::new(format!(
                    "field `Sizes`: handle {ptr:x} is accessed with {size} bytes, but {} line \
                     {data_line} registers it with {data_size} bytes",
                    data_path.display()
                ))
                .at_line(line as usize));
            }
            handle.dims = dims;
        }
        let h = HandleId(self.rec.handles.len() as u32);
        self.rec.handles.push(handle);
        self.handle_line.push(line);
        self.handles.insert(ptr, h);
        Ok(h)
    }
}

fn parse_mode(m: &str) -> Option<Mode> {
    if m.is_empty() || !m.chars().all(|c| matches!(c, 'R' | 'W' | 'S' | 'X' | 'C')) {
        return None;
    }
    if m == "S" {
        return Some(Mode::Scratch);
    }
    // A reduction reads and writes; commuting writers are ordered here as plain writers.
    let (r, w) = (
        m.contains('R') || m.contains('X'),
        m.contains('W') || m.contains('X'),
    );
    Some(Mode::Access(match (r, w) {
        (true, true) => AccessMode::RW,
        (true, false) => AccessMode::R,
        (false, true) => AccessMode::W,
        (false, false) => return None,
    }))
}
