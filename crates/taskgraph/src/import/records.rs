//! From records to a graph, for the formats that name tasks by job and list each task's
//! dependencies by those names (StarPU's `tasks.rec` and `dag.dot`): job names interned, records
//! without a codelet contracted away, tasks submitted in their order with their accesses and
//! explicit dependencies, "will not be used" hints placed between them.

use std::ops::Range;

use hetsim_core::InputError;
use rustc_hash::FxHashMap;

use super::{GpuSynchronous, ImportStats, Label, Parts, TaskOrigin};
use crate::{Access, AccessMode, Handle, HandleId, RecordedWorker, TaskGraphBuilder, TaskId, Unit};

/// A job's dense index, in order of first mention.
pub(crate) type Job = u32;

/// What a job turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JobKind {
    /// Mentioned (as a dependency) but no record defines it yet.
    Unknown,
    /// A task with a codelet: index into `Records::tasks`.
    Task(u32),
    /// A record without a codelet: index into `Records::internal`.
    Internal(u32),
    /// A "will not be used" record.
    Hint,
}

/// One buffer of a task as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Buffer {
    /// A data access.
    Data(HandleId, AccessMode),
    /// A scratch buffer of this many bytes: counted in the model size, moves no data.
    Scratch(u64),
}

/// A task with a codelet, as read.
#[derive(Debug, Clone)]
pub(crate) struct TaskRecord {
    pub job: Job,
    /// Sorts the tasks into submission order.
    pub order: (u64, u64),
    pub codelet: u16,
    pub priority: i32,
    pub flops: f64,
    pub worker: Option<RecordedWorker>,
    pub recorded: Option<(Unit, f64)>,
    pub line: u32,
    pub buffers: Range<u32>,
    pub deps: Range<u32>,
}

/// Everything read from one file, before it becomes a graph.
#[derive(Debug, Default)]
pub(crate) struct Records {
    /// Numeric job names (StarPU's) → job, and the others.
    job_numbers: FxHashMap<u64, Job>,
    job_texts: FxHashMap<Box<str>, Job>,
    job_names: Vec<Label>,
    /// Line of a job's defining record, or of its first mention until it is defined.
    job_line: Vec<u32>,
    kinds: Vec<JobKind>,
    codelet_index: FxHashMap<Box<str>, u16>,
    codelets: Vec<Box<str>>,
    pub handles: Vec<Handle>,
    /// The tasks, in file order.
    pub tasks: Vec<TaskRecord>,
    pub buffers: Vec<Buffer>,
    pub deps: Vec<Job>,
    /// Records without a codelet: their dependencies, and their line.
    internal: Vec<(Range<u32>, u32)>,
    /// "Will not be used" hints: order key, handle, line.
    hints: Vec<((u64, u64), Option<HandleId>)>,
    /// Synchronous acquisitions made before the first task
    /// ([`TaskGraphBuilder::startup_acquires`]).
    pub startup_acquires: u32,
}

impl Records {
    /// The dense index of job `name`, mentioned at `line`.
    pub fn job(&mut self, name: &str, line: u32) -> Job {
        let next = self.job_names.len() as Job;
        let (j, label) = match Label::number(name) {
            Some(n) => (*self.job_numbers.entry(n).or_insert(next), Label::Number(n)),
            None => match self.job_texts.get(name) {
                Some(&j) => return j,
                None => {
                    let text: Box<str> = name.into();
                    self.job_texts.insert(text.clone(), next);
                    (next, Label::Text(text))
                }
            },
        };
        if j == next {
            self.job_names.push(label);
            self.job_line.push(line);
            self.kinds.push(JobKind::Unknown);
        }
        j
    }

    /// The name of job `job`.
    pub fn job_name(&self, job: Job) -> &Label {
        &self.job_names[job as usize]
    }

    fn define(&mut self, job: Job, kind: JobKind, line: u32) -> Result<(), InputError> {
        if self.kinds[job as usize] != JobKind::Unknown {
            return Err(InputError::new(format!(
                "job {} has a second record (the first is at line {})",
                self.job_names[job as usize], self.job_line[job as usize]
            ))
            .at_line(line as usize));
        }
        self.kinds[job as usize] = kind;
        self.job_line[job as usize] = line;
        Ok(())
    }

    /// The interned codelet `name`.
    pub fn codelet(&mut self, name: &str) -> Result<u16, InputError> {
        if let Some(&c) = self.codelet_index.get(name) {
            return Ok(c);
        }
        let c = u16::try_from(self.codelets.len()).map_err(|_| {
            InputError::new(format!(
                "too many distinct codelet names (at most {})",
                u16::MAX
            ))
        })?;
        self.codelet_index.insert(name.into(), c);
        self.codelets.push(name.into());
        Ok(c)
    }

    /// Add a task with a codelet whose buffers and dependencies were pushed since
    /// `buffers.start` and `deps.start`.
    pub fn add_task(&mut self, t: TaskRecord) -> Result<(), InputError> {
        let idx = self.tasks.len() as u32;
        self.define(t.job, JobKind::Task(idx), t.line)?;
        self.tasks.push(t);
        Ok(())
    }

    /// Add a record without a codelet, whose dependencies were pushed since `deps_start`.
    pub fn add_internal(&mut self, job: Job, deps_start: u32, line: u32) -> Result<(), InputError> {
        let idx = self.internal.len() as u32;
        self.define(job, JobKind::Internal(idx), line)?;
        self.internal
            .push((deps_start..self.deps.len() as u32, line));
        Ok(())
    }

    /// Add a "will not be used" hint (`handle` `None`: a handle no task is known to access).
    pub fn add_hint(
        &mut self,
        job: Option<Job>,
        order: (u64, u64),
        handle: Option<HandleId>,
        line: u32,
    ) -> Result<(), InputError> {
        if let Some(j) = job {
            self.define(j, JobKind::Hint, line)?;
        }
        self.hints.push((order, handle));
        Ok(())
    }

    /// The graph, with the origin of each task.
    pub fn assemble(self, gpu_sync: &GpuSynchronous) -> Result<Parts, InputError> {
        let Records {
            job_names,
            job_line,
            kinds,
            codelets,
            handles,
            mut tasks,
            buffers,
            deps,
            internal,
            mut hints,
            startup_acquires,
            ..
        } = self;
        if let Some(j) = kinds.iter().position(|k| *k == JobKind::Unknown) {
            return Err(InputError::new(format!(
                "a task depends on job {}, which has no record in the file",
                job_names[j]
            ))
            .at_line(job_line[j] as usize));
        }
        // Submission order; the file's order breaks ties.
        tasks.sort_by_key(|t| t.order);
        let mut task_id = vec![u32::MAX; tasks.len()];
        for (pos, t) in tasks.iter().enumerate() {
            let JobKind::Task(i) = kinds[t.job as usize] else {
                unreachable!("a task record defines its job as a task")
            };
            task_id[i as usize] = pos as u32;
        }
        let through = Contraction::new(&kinds, &deps, &internal, &job_names)?;

        let mut b = TaskGraphBuilder::with_capacity(tasks.len(), handles.len(), buffers.len());
        b.startup_acquires(startup_acquires);
        let mut ids = Vec::with_capacity(codelets.len());
        for name in &codelets {
            let id = b.codelet(name)?;
            if gpu_sync.applies(name) {
                b.gpu_synchronous(id);
            }
            ids.push(id);
        }
        for h in handles {
            b.add_handle(h)?;
        }
        hints.sort_by_key(|h| h.0);
        let mut hints = hints.into_iter().peekable();
        let mut stats = ImportStats {
            contracted: internal.len(),
            ..ImportStats::default()
        };
        let mut origins = Vec::with_capacity(tasks.len());
        let (mut accesses, mut after, mut backward) = (Vec::new(), Vec::new(), Vec::new());
        let mut seen = TaskSet::new(tasks.len());
        for (pos, t) in tasks.iter().enumerate() {
            while let Some((_, handle)) = hints.next_if(|h| h.0 < t.order) {
                place_hint(&mut b, handle, &mut stats)?;
            }
            accesses.clear();
            let mut scratch_bytes = 0u64;
            for buf in &buffers[t.buffers.start as usize..t.buffers.end as usize] {
                match *buf {
                    Buffer::Data(h, mode) => accesses.push(Access::new(h, mode)),
                    Buffer::Scratch(bytes) => scratch_bytes = scratch_bytes.saturating_add(bytes),
                }
            }
            after.clear();
            seen.next();
            for &d in &deps[t.deps.start as usize..t.deps.end as usize] {
                through.tasks_of(d, &mut |ti| {
                    let p = task_id[ti as usize];
                    if seen.insert(p) {
                        if p < pos as u32 {
                            after.push(TaskId(p));
                        } else {
                            backward.push((TaskId(p), TaskId(pos as u32)));
                        }
                    }
                });
            }
            let id = b
                .submit_after(
                    ids[t.codelet as usize],
                    t.flops,
                    t.priority,
                    &accesses,
                    &after,
                )
                .map_err(|e| e.at_line(t.line as usize))?;
            if scratch_bytes > 0 {
                b.add_model_bytes(id, scratch_bytes)?;
            }
            if let Some(w) = t.worker {
                b.record_worker(id, w)?;
            }
            origins.push(TaskOrigin {
                line: t.line,
                id: job_names[t.job as usize].clone(),
                recorded: t.recorded,
            });
        }
        for (_, handle) in hints {
            place_hint(&mut b, handle, &mut stats)?;
        }
        for &(before, later) in &backward {
            if before == later {
                let o = &origins[later.index()];
                return Err(InputError::new(format!(
                    "the dependencies contain a cycle: job {} waits for itself",
                    o.id
                ))
                .at_line(o.line as usize));
            }
            b.add_dependency(before, later)?;
        }
        if let Some(t) = b.find_cycle() {
            let o = &origins[t.index()];
            return Err(InputError::new(format!(
                "the dependencies contain a cycle through job {}: a task cannot wait for itself",
                o.id
            ))
            .at_line(o.line as usize));
        }
        Ok((b.build()?, origins, stats))
    }
}

fn place_hint(
    b: &mut TaskGraphBuilder,
    handle: Option<HandleId>,
    stats: &mut ImportStats,
) -> Result<(), InputError> {
    match handle {
        Some(h) if b.num_tasks() > 0 => {
            b.wont_use(h)?;
            stats.wont_use += 1;
        }
        _ => stats.wont_use_dropped += 1,
    }
    Ok(())
}

/// Which tasks each record without a codelet stands for: the tasks with a codelet reached by
/// following its dependencies through other such records. Computed once per record.
struct Contraction<'a> {
    kinds: &'a [JobKind],
    /// Per internal record, the task indices it stands for.
    tasks: Vec<Vec<u32>>,
}

impl<'a> Contraction<'a> {
    fn new(
        kinds: &'a [JobKind],
        deps: &[Job],
        internal: &[(Range<u32>, u32)],
        names: &[Label],
    ) -> Result<Self, InputError> {
        const TODO: u8 = 0;
        const OPEN: u8 = 1;
        const DONE: u8 = 2;
        let mut state = vec![TODO; internal.len()];
        let mut tasks: Vec<Vec<u32>> = vec![Vec::new(); internal.len()];
        // Iterative depth-first search: chains of internal records can be long.
        let mut stack: Vec<(u32, u32)> = Vec::new();
        for root in 0..internal.len() as u32 {
            if state[root as usize] != TODO {
                continue;
            }
            state[root as usize] = OPEN;
            stack.push((root, internal[root as usize].0.start));
            while let Some(&mut (node, ref mut next)) = stack.last_mut() {
                let range = &internal[node as usize].0;
                if *next == range.end {
                    state[node as usize] = DONE;
                    let mut v = std::mem::take(&mut tasks[node as usize]);
                    v.sort_unstable();
                    v.dedup();
                    tasks[node as usize] = v;
                    stack.pop();
                    if let Some(&(parent, _)) = stack.last() {
                        let (p, c) = (parent as usize, node as usize);
                        let child = tasks[c].clone();
                        tasks[p].extend(child);
                    }
                    continue;
                }
                let d = deps[*next as usize];
                *next += 1;
                match kinds[d as usize] {
                    JobKind::Task(t) => tasks[node as usize].push(t),
                    JobKind::Internal(i) => match state[i as usize] {
                        TODO => {
                            state[i as usize] = OPEN;
                            stack.push((i, internal[i as usize].0.start));
                        }
                        OPEN => {
                            let line = internal[i as usize].1;
                            let job = kinds
                                .iter()
                                .position(|k| *k == JobKind::Internal(i))
                                .map_or("?".to_string(), |j| names[j].to_string());
                            return Err(InputError::new(format!(
                                "the dependencies contain a cycle through job {job}: a task \
                                 cannot wait for itself"
                            ))
                            .at_line(line as usize));
                        }
                        _ => {
                            let child = tasks[i as usize].clone();
                            tasks[node as usize].extend(child);
                        }
                    },
                    JobKind::Hint | JobKind::Unknown => {}
                }
            }
        }
        Ok(Contraction { kinds, tasks })
    }

    /// Call `f` with each task index job `d` stands for.
    fn tasks_of(&self, d: Job, f: &mut impl FnMut(u32)) {
        match self.kinds[d as usize] {
            JobKind::Task(t) => f(t),
            JobKind::Internal(i) => self.tasks[i as usize].iter().for_each(|&t| f(t)),
            JobKind::Hint | JobKind::Unknown => {}
        }
    }
}

/// A set of task positions cleared in O(1) per task (a stamp per position).
struct TaskSet {
    stamp: Vec<u32>,
    now: u32,
}

impl TaskSet {
    fn new(n: usize) -> Self {
        TaskSet {
            stamp: vec![0; n],
            now: 0,
        }
    }

    fn next(&mut self) {
        self.now += 1;
    }

    fn insert(&mut self, i: u32) -> bool {
        let s = &mut self.stamp[i as usize];
        let fresh = *s != self.now;
        *s = self.now;
        fresh
    }
}
