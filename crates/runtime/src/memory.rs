//! Data replicas on memory nodes: MSI validity, versions, pins, capacity, LRU eviction.
//!
//! Every handle has one replica slot per memory node. RAM holds every handle from the start
//! and never evicts. On a GPU node, a replica is allocated on first use; an unpinned allocated
//! replica sits in one of two LRU orders — clean (another valid copy exists, or it holds no
//! valid data) or dirty (it is the only valid copy, so evicting it needs a write-back) — and
//! eviction takes the least recently used clean replica first, as StarPU's `memalloc.c` does.
//! A prefetch passes over the replicas prefetched for tasks that have not fetched them yet
//! (StarPU's `starpu_data_can_evict`); a task's fetch does not.

use std::rc::Rc;

use hetsim_platform::machine::{MemKind, MemNodeId};
use hetsim_taskgraph::{HandleId, Home, TaskGraph};

use super::lru::Lru;
use super::suballoc::{ChunkId, Suballocator};
use super::transfer::Estimates;

#[derive(Debug, Clone, Copy, Default)]
struct Replica {
    allocated: bool,
    valid: bool,
    loading: bool,
    pins: u32,
    /// Version of the data this replica holds (meaningful when valid).
    version: u32,
    /// Marked "will not be used" (StarPU's `mc->wontuse`): filed with the clean replicas even
    /// while it is the only valid copy, until a task uses or writes it again.
    wont_use: bool,
    /// The suballocator chunk its memory comes from, if any.
    chunk: Option<ChunkId>,
    /// Tasks it was prefetched for that have not fetched it yet (StarPU's
    /// `nb_tasks_prefetch`): while any, a prefetch may not evict it.
    prefetched_for: u32,
}

/// Result of asking for room for a replica.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Alloc {
    /// Allocated; `malloc` is true if a new chunk had to be allocated (cudaMalloc), `frees`
    /// counts chunks of another size released to make room (cudaFree).
    Done { malloc: bool, frees: u32 },
    /// The least recently used candidate holds the only valid copy of this handle: write it
    /// back to RAM, then ask again.
    WriteBack(HandleId),
    /// Every allocated replica is in use: ask again when something is released.
    Blocked,
}

/// All replicas and per-node memory accounting.
#[derive(Debug)]
pub(crate) struct Memory {
    nnodes: usize,
    kinds: Vec<MemKind>,
    ram: MemNodeId,
    capacity: Vec<u64>,
    used: Vec<u64>,
    peak: Vec<u64>,
    evictions: Vec<u64>,
    sizes: Vec<u64>,
    versions: Vec<u32>,
    replicas: Vec<Replica>,
    /// Per node, its unpinned allocated replicas by slot, oldest first, filed clean or dirty.
    lru: Vec<Lru>,
    /// Per node, allocated replicas (StarPU's `mc_nb`).
    chunks: Vec<u32>,
    tick: u64,
    /// Per node, the suballocator of a GPU node when it is on (empty otherwise).
    suballoc: Vec<Option<Suballocator>>,
    /// Replicas evicted by the last allocations, for the observer (drained by the caller).
    pub evicted: Vec<(MemNodeId, HandleId)>,
    /// Per slot, its global handle.
    handles: Vec<HandleId>,
    /// Per global handle, its slot here (`u32::MAX` if it is another runtime's).
    slots: Rc<[u32]>,
    /// Whether changes of replicas' state are recorded in `changes`.
    record: bool,
    /// Replicas whose valid, loading or allocated state changed, in order, while `record`
    /// holds (drained by the caller; a replica may appear more than once).
    pub changes: Vec<(HandleId, MemNodeId)>,
}

impl Memory {
    /// The replicas of `handles` (global ids, this runtime's, in slot order; `slots` maps every
    /// global handle to its slot here) on memory nodes of these kinds and capacities. Every
    /// handle has room in `ram`; one holding data at the start is valid in its home: `ram`, or
    /// for [`Home::Gpu`]`(i)` the memory node `gpus[i]`, where it is allocated (the caller
    /// checks that `i` is in range and that the room suffices). With `suballocator`, GPU nodes
    /// carve small allocations out of chunks ([`Suballocator`]).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        kinds: Vec<MemKind>,
        capacity: Vec<u64>,
        ram: MemNodeId,
        gpus: &[MemNodeId],
        graph: &TaskGraph,
        handles: Vec<HandleId>,
        slots: Rc<[u32]>,
        suballocator: bool,
    ) -> Self {
        let nnodes = kinds.len();
        let sizes: Vec<u64> = handles
            .iter()
            .map(|&h| graph.handle(h).size_bytes)
            .collect();
        let mut replicas = vec![Replica::default(); sizes.len() * nnodes];
        let mut used = vec![0; nnodes];
        let mut chunks = vec![0u32; nnodes];
        chunks[ram.index()] = handles.len() as u32;
        let mut on_device = Vec::new();
        for (i, &h) in handles.iter().enumerate() {
            let handle = graph.handle(h);
            let r = &mut replicas[i * nnodes + ram.index()];
            r.allocated = true;
            match handle.home {
                Home::Ram => r.valid = handle.starts_valid,
                Home::Gpu(g) => {
                    let n = gpus[g as usize];
                    let r = &mut replicas[i * nnodes + n.index()];
                    r.allocated = true;
                    r.valid = handle.starts_valid;
                    used[n.index()] += sizes[i];
                    chunks[n.index()] += 1;
                    on_device.push((h, n));
                }
            }
        }
        used[ram.index()] = sizes.iter().sum();
        let suballoc = kinds
            .iter()
            .map(|&k| (suballocator && k == MemKind::Gpu).then(Suballocator::default))
            .collect();
        let mut memory = Memory {
            suballoc,
            nnodes,
            kinds,
            ram,
            peak: used.clone(),
            used,
            capacity,
            evictions: vec![0; nnodes],
            versions: vec![0; sizes.len()],
            sizes,
            replicas,
            lru: vec![Lru::new(handles.len()); nnodes],
            chunks,
            tick: 0,
            evicted: Vec::new(),
            handles,
            slots,
            record: false,
            changes: Vec::new(),
        };
        // Device replicas held from the start can be evicted like any other.
        for (h, n) in on_device {
            memory.lru_push_newest(h, n);
        }
        memory
    }

    /// Every handle of `graph` in one runtime: slots are handle ids.
    #[cfg(any(test, feature = "fixtures"))]
    pub fn all_handles(graph: &TaskGraph) -> (Vec<HandleId>, Rc<[u32]>) {
        let n = graph.handles().len() as u32;
        ((0..n).map(HandleId).collect(), (0..n).collect())
    }

    /// This runtime's slot of `h`.
    fn slot(&self, h: HandleId) -> usize {
        self.slots[h.index()] as usize
    }

    /// A key unique to the replica of `h` on `n` among this runtime's, below
    /// handles × memory nodes.
    pub fn key(&self, h: HandleId, n: MemNodeId) -> usize {
        self.slot(h) * self.nnodes + n.index()
    }

    fn idx(&self, h: HandleId, n: MemNodeId) -> usize {
        self.key(h, n)
    }

    fn rep(&self, h: HandleId, n: MemNodeId) -> &Replica {
        &self.replicas[self.idx(h, n)]
    }

    /// The RAM node.
    pub fn ram(&self) -> MemNodeId {
        self.ram
    }

    /// Kind of a node.
    pub fn kind(&self, n: MemNodeId) -> MemKind {
        self.kinds[n.index()]
    }

    /// Number of memory nodes.
    pub fn nnodes(&self) -> usize {
        self.nnodes
    }

    /// Size of a handle.
    pub fn size(&self, h: HandleId) -> u64 {
        self.sizes[self.slot(h)]
    }

    /// Whether `h` has a valid replica on `n`.
    pub fn is_valid(&self, h: HandleId, n: MemNodeId) -> bool {
        self.rep(h, n).valid
    }

    /// Whether a transfer into `(h, n)` is under way.
    pub fn is_loading(&self, h: HandleId, n: MemNodeId) -> bool {
        self.rep(h, n).loading
    }

    /// Whether `(h, n)` has memory.
    pub fn is_allocated(&self, h: HandleId, n: MemNodeId) -> bool {
        self.rep(h, n).allocated
    }

    /// Latest version of `h` (incremented by every write).
    pub fn version(&self, h: HandleId) -> u32 {
        self.versions[self.slot(h)]
    }

    /// Version held by the replica `(h, n)`.
    pub fn replica_version(&self, h: HandleId, n: MemNodeId) -> u32 {
        self.rep(h, n).version
    }

    /// Bytes allocated on `n` now.
    pub fn used(&self, n: MemNodeId) -> u64 {
        self.used[n.index()]
    }

    /// Highest bytes allocated on `n` so far.
    pub fn peak(&self, n: MemNodeId) -> u64 {
        self.peak[n.index()]
    }

    /// Capacity of `n`.
    pub fn capacity(&self, n: MemNodeId) -> u64 {
        self.capacity[n.index()]
    }

    /// Replicas evicted from `n`.
    pub fn evictions(&self, n: MemNodeId) -> u64 {
        self.evictions[n.index()]
    }

    /// Nodes holding a valid replica of `h`, in node order.
    pub fn valid_nodes(&self, h: HandleId) -> impl Iterator<Item = MemNodeId> + '_ {
        (0..self.nnodes)
            .map(|n| MemNodeId(n as u32))
            .filter(move |&n| self.is_valid(h, n))
    }

    /// The valid replica of `h` cheapest to copy to `dst` by nominal figures (lowest node index
    /// on ties), as StarPU's `_starpu_select_src_node` prefers the fastest bus.
    pub fn best_source(&self, h: HandleId, dst: MemNodeId, est: &Estimates) -> MemNodeId {
        let mut valid = self.valid_nodes(h);
        let Some(first) = valid.next() else {
            return self.ram;
        };
        // Usually the only one: no estimate to compare.
        let Some(second) = valid.next() else {
            return first;
        };
        let bytes = self.size(h) as f64;
        let mut best: Option<(f64, MemNodeId)> = None;
        for n in [first, second].into_iter().chain(valid) {
            let t = est.nominal_s(n, dst, bytes);
            if best.is_none_or(|(bt, _)| t < bt) {
                best = Some((t, n));
            }
        }
        best.map_or(self.ram, |(_, n)| n)
    }

    fn is_dirty(&self, h: HandleId, n: MemNodeId) -> bool {
        let r = self.rep(h, n);
        r.valid && n != self.ram && self.valid_nodes(h).count() == 1
    }

    /// Take `(h, n)` out of its node's LRU order; whether it was in.
    fn lru_remove(&mut self, h: HandleId, n: MemNodeId) -> bool {
        let slot = self.slot(h) as u32;
        self.lru[n.index()].remove(slot).is_some()
    }

    /// File `(h, n)` as its node's most recently used replica.
    fn lru_push_newest(&mut self, h: HandleId, n: MemNodeId) {
        self.tick += 1;
        let dirty = self.files_dirty(h, n);
        let slot = self.slot(h) as u32;
        self.lru[n.index()].push_newest(slot, self.tick, dirty);
    }

    /// Whether an unpinned `(h, n)` belongs with the dirty replicas.
    fn files_dirty(&self, h: HandleId, n: MemNodeId) -> bool {
        self.is_dirty(h, n) && !self.rep(h, n).wont_use
    }

    /// Re-file the unpinned replicas of `h` after its validity changed (keeping their age).
    fn reclassify(&mut self, h: HandleId) {
        let slot = self.slot(h) as u32;
        for n in 0..self.nnodes {
            let n = MemNodeId(n as u32);
            if self.lru[n.index()].filed(slot).is_some() {
                let dirty = self.files_dirty(h, n);
                self.lru[n.index()].refile(slot, dirty);
            }
        }
    }

    /// Hold `(h, n)` in memory (a task or a transfer uses it).
    pub fn pin(&mut self, h: HandleId, n: MemNodeId) {
        self.lru_remove(h, n);
        let i = self.idx(h, n);
        self.replicas[i].pins += 1;
    }

    /// Hold `(h, n)` for a task: a use, which clears a "will not be used" mark as StarPU's
    /// `_starpu_memchunk_recently_used` does (`mc->wontuse = 0`).
    pub fn pin_for_task(&mut self, h: HandleId, n: MemNodeId) {
        let i = self.idx(h, n);
        self.replicas[i].wont_use = false;
        self.pin(h, n);
    }

    /// StarPU's `_starpu_memchunk_wont_use` on every allocated device replica of `h`: the chunk
    /// is filed with the clean ones, as the most recently used of them (`MC_LIST_PUSH_CLEAN`
    /// inserts just ahead of the dirty chunks), so it goes before any dirty chunk. If it is
    /// still the only valid copy when it is chosen, evicting it needs a write-back (the caller
    /// also asks for an idle write-back). A pinned replica keeps the mark and is filed when
    /// released.
    pub fn mark_wont_use(&mut self, h: HandleId) {
        for n in 0..self.nnodes {
            let n = MemNodeId(n as u32);
            let i = self.idx(h, n);
            if n == self.ram || !self.replicas[i].allocated {
                continue;
            }
            self.replicas[i].wont_use = true;
            if self.lru_remove(h, n) {
                self.lru_push_newest(h, n);
            }
        }
    }

    /// Whether `(h, n)` carries a "will not be used" mark.
    #[cfg(test)]
    pub fn is_wont_use(&self, h: HandleId, n: MemNodeId) -> bool {
        self.rep(h, n).wont_use
    }

    /// Release a hold; an unpinned GPU replica becomes the most recently used.
    pub fn unpin(&mut self, h: HandleId, n: MemNodeId) {
        let i = self.idx(h, n);
        let r = &mut self.replicas[i];
        debug_assert!(r.pins > 0, "unpin of an unpinned replica");
        r.pins -= 1;
        if r.pins == 0 && r.allocated && n != self.ram {
            self.lru_push_newest(h, n);
        }
    }

    /// Record, from now on, which replicas change state ([`Memory::changes`]).
    pub fn record_changes(&mut self) {
        self.record = true;
    }

    fn changed(&mut self, h: HandleId, n: MemNodeId) {
        if self.record {
            self.changes.push((h, n));
        }
    }

    /// Mark a transfer into `(h, n)` as under way or not.
    pub fn set_loading(&mut self, h: HandleId, n: MemNodeId, loading: bool) {
        let i = self.idx(h, n);
        if self.replicas[i].loading != loading {
            self.replicas[i].loading = loading;
            self.changed(h, n);
        }
    }

    /// A copy of version `version` of `h` arrived on `n`. Returns false (and changes nothing)
    /// if `h` was written since the copy started: the data is stale.
    pub fn arrive(&mut self, h: HandleId, n: MemNodeId, version: u32) -> bool {
        if version != self.versions[self.slot(h)] {
            return false;
        }
        let i = self.idx(h, n);
        if !self.replicas[i].valid {
            self.replicas[i].valid = true;
            self.changed(h, n);
        }
        self.replicas[i].version = version;
        self.reclassify(h);
        true
    }

    /// A task on `n` wrote `h`: a new version, valid only there.
    pub fn write(&mut self, h: HandleId, n: MemNodeId) {
        let slot = self.slot(h);
        self.versions[slot] += 1;
        let v = self.versions[slot];
        for m in 0..self.nnodes {
            let i = slot * self.nnodes + m;
            let valid = m == n.index();
            if self.replicas[i].valid != valid {
                self.replicas[i].valid = valid;
                self.changed(h, MemNodeId(m as u32));
            }
        }
        let i = self.idx(h, n);
        self.replicas[i].version = v;
        // Written again: StarPU's `_starpu_memchunk_dirty` makes the chunk dirty.
        self.replicas[i].wont_use = false;
        self.reclassify(h);
    }

    /// Make room for `(h, n)` and allocate it. Evicts least recently used clean replicas (of
    /// the same size: its chunk is reused; of another size: it is freed); never touches pinned
    /// replicas.
    pub fn allocate(&mut self, h: HandleId, n: MemNodeId) -> Alloc {
        self.allocate_evicting(h, n, false)
    }

    /// [`Memory::allocate`] for a prefetch, which may not evict a replica prefetched for a task
    /// that has not fetched it yet (StarPU's `starpu_data_can_evict` for any prefetch).
    pub fn allocate_for_prefetch(&mut self, h: HandleId, n: MemNodeId) -> Alloc {
        self.allocate_evicting(h, n, true)
    }

    /// A task's prefetch asked for `(h, n)` (StarPU increments `nb_tasks_prefetch` of a
    /// device replica when the request is made for one already there, else when it ends).
    pub fn note_task_prefetch(&mut self, h: HandleId, n: MemNodeId) {
        if n != self.ram {
            let i = self.idx(h, n);
            self.replicas[i].prefetched_for += 1;
            let slot = self.slot(h) as u32;
            self.lru[n.index()].set_kept(slot, true);
        }
    }

    /// A task prefetched to `n` fetches its input `(h, n)` there: one task fewer waits for the
    /// replica, if it is still allocated (StarPU's `_starpu_fetch_task_input`; a replica evicted
    /// meanwhile keeps its count).
    pub fn note_task_fetch(&mut self, h: HandleId, n: MemNodeId) {
        let i = self.idx(h, n);
        let r = &mut self.replicas[i];
        if r.allocated && r.prefetched_for > 0 {
            r.prefetched_for -= 1;
            if r.prefetched_for == 0 {
                let slot = self.slot(h) as u32;
                self.lru[n.index()].set_kept(slot, false);
            }
        }
    }

    fn allocate_evicting(&mut self, h: HandleId, n: MemNodeId, spare_prefetched: bool) -> Alloc {
        let size = self.size(h);
        let ni = n.index();
        debug_assert!(!self.rep(h, n).allocated);
        let mut frees = 0;
        loop {
            if self.used[ni] + size <= self.capacity[ni] {
                self.used[ni] += size;
                self.peak[ni] = self.peak[ni].max(self.used[ni]);
                let i = self.idx(h, n);
                self.replicas[i].allocated = true;
                self.chunks[ni] += 1;
                self.changed(h, n);
                let malloc = match &mut self.suballoc[ni] {
                    Some(s) if Suballocator::serves(size) => {
                        let (chunk, new) = s.carve(size);
                        self.replicas[i].chunk = Some(chunk);
                        new
                    }
                    _ => true,
                };
                return Alloc::Done { malloc, frees };
            }
            let oldest_clean = if spare_prefetched {
                self.lru[ni].oldest_spare()
            } else {
                self.lru[ni].oldest(false)
            };
            let Some(victim) = oldest_clean else {
                return match self.lru[ni].oldest(true) {
                    Some(v) => Alloc::WriteBack(self.handles[v as usize]),
                    None => Alloc::Blocked,
                };
            };
            let victim = self.handles[victim as usize];
            if self.is_dirty(victim, n) {
                // A "will not be used" chunk filed as clean still holds the only valid copy:
                // it must reach RAM first (StarPU writes it back on eviction).
                return Alloc::WriteBack(victim);
            }
            self.lru_remove(victim, n);
            let vi = self.idx(victim, n);
            self.replicas[vi].allocated = false;
            self.replicas[vi].valid = false;
            self.replicas[vi].wont_use = false;
            self.changed(victim, n);
            let chunk = self.replicas[vi].chunk.take();
            self.evictions[ni] += 1;
            self.evicted.push((n, victim));
            self.reclassify(victim);
            let vsize = self.size(victim);
            if vsize == size {
                // Same size: StarPU reuses the chunk without a new cudaMalloc.
                let i = self.idx(h, n);
                self.replicas[i].allocated = true;
                self.replicas[i].chunk = chunk;
                self.changed(h, n);
                return Alloc::Done {
                    malloc: false,
                    frees,
                };
            }
            self.used[ni] -= vsize;
            self.chunks[ni] -= 1;
            match (chunk, &mut self.suballoc[ni]) {
                // Back to its chunk, which StarPU keeps: no cudaFree.
                (Some(c), Some(s)) => s.release(c, vsize),
                _ => frees += 1,
            }
        }
    }

    /// Allocated replicas on `n`, and how many of them are dirty and unpinned (the only valid
    /// copy, not in use; StarPU's `mc_nb` and its dirty chunks but those in use).
    pub fn chunk_counts(&self, n: MemNodeId) -> (u32, u32) {
        (self.chunks[n.index()], self.lru[n.index()].dirty_len())
    }

    /// The dirty unpinned replicas on `n`, least recently used first.
    pub fn dirty_lru(&self, n: MemNodeId) -> impl Iterator<Item = HandleId> + '_ {
        self.lru[n.index()]
            .dirty_oldest_first()
            .map(|slot| self.handles[slot as usize])
    }

    /// Handles not valid in RAM (they need a final write-back).
    /// The handles holding data (valid somewhere) but not valid in RAM.
    pub fn not_in_ram(&self) -> impl Iterator<Item = HandleId> + '_ {
        self.handles
            .iter()
            .copied()
            .filter(|&h| !self.is_valid(h, self.ram) && self.valid_nodes(h).next().is_some())
    }

    /// Replicas on `n` that are allocated and pinned, for diagnoses.
    pub fn pinned_on(&self, n: MemNodeId) -> Vec<HandleId> {
        self.handles
            .iter()
            .copied()
            .filter(|&h| {
                let r = self.rep(h, n);
                r.allocated && r.pins > 0
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetsim_taskgraph::{Handle, TaskGraphBuilder};

    /// RAM (node 0) and one GPU (node 1) with room for two 1000-byte handles; three handles.
    fn two_slot_gpu() -> Memory {
        let mut b = TaskGraphBuilder::new();
        for _ in 0..3 {
            b.add_handle(Handle::bytes(1000)).unwrap();
        }
        let g = b.build().unwrap();
        let (handles, slots) = Memory::all_handles(&g);
        Memory::new(
            vec![MemKind::Ram, MemKind::Gpu],
            vec![1 << 20, 2000],
            MemNodeId(0),
            &[MemNodeId(1)],
            &g,
            handles,
            slots,
            false,
        )
    }

    /// Put `h` on the GPU as its only valid copy (a task there wrote it), then release it.
    fn dirty_on_gpu(m: &mut Memory, h: HandleId) {
        let gpu = MemNodeId(1);
        assert!(matches!(m.allocate(h, gpu), Alloc::Done { .. }));
        m.pin_for_task(h, gpu);
        m.write(h, gpu);
        m.unpin(h, gpu);
    }

    /// StarPU's `_starpu_memchunk_wont_use` files a chunk with the clean ones, ahead of every
    /// dirty chunk (`starpu-reference.md` §1a, eviction). By hand: h0 then h1 are written on
    /// the GPU and released in that order, so both are dirty and h0 is the older. Making room
    /// for h2 must write back the least recently used dirty chunk, h0 — unless h1 is marked
    /// "will not be used": then h1 is the first candidate, and as it still holds the only
    /// valid copy it is written back first. Once h1 is valid in RAM, it is evicted (not h0).
    #[test]
    fn wont_use_chunk_is_the_first_victim() {
        let (h0, h1, h2) = (HandleId(0), HandleId(1), HandleId(2));
        let gpu = MemNodeId(1);

        let mut m = two_slot_gpu();
        dirty_on_gpu(&mut m, h0);
        dirty_on_gpu(&mut m, h1);
        assert_eq!(m.allocate(h2, gpu), Alloc::WriteBack(h0));

        let mut m = two_slot_gpu();
        dirty_on_gpu(&mut m, h0);
        dirty_on_gpu(&mut m, h1);
        m.mark_wont_use(h1);
        assert!(m.is_wont_use(h1, gpu));
        assert_eq!(m.allocate(h2, gpu), Alloc::WriteBack(h1));
        let v = m.version(h1);
        assert!(m.arrive(h1, MemNodeId(0), v));
        assert!(matches!(m.allocate(h2, gpu), Alloc::Done { .. }));
        assert_eq!(m.evicted, [(gpu, h1)]);
        assert!(m.is_valid(h0, gpu) && !m.is_valid(h1, gpu));
        assert!(!m.is_wont_use(h1, gpu));
    }

    /// Put `h` on the GPU as a copy of RAM's (a prefetch brought it), then release it.
    fn clean_on_gpu(m: &mut Memory, h: HandleId) {
        let gpu = MemNodeId(1);
        assert!(matches!(m.allocate(h, gpu), Alloc::Done { .. }));
        m.pin(h, gpu);
        let v = m.version(h);
        assert!(m.arrive(h, gpu, v));
        m.unpin(h, gpu);
    }

    /// StarPU's `starpu_data_can_evict`: a prefetch may not evict a replica prefetched for a
    /// task that has not fetched it yet; a fetch may. By hand: h0 (the older) was prefetched for
    /// a task, h1 not; both are clean copies. Room for h2 by a prefetch takes h1's; by a fetch,
    /// the least recently used, h0's. Once the task fetched h0, a prefetch takes h0's too.
    #[test]
    fn a_prefetch_spares_replicas_prefetched_for_tasks_not_started() {
        let (h0, h1, h2) = (HandleId(0), HandleId(1), HandleId(2));
        let gpu = MemNodeId(1);
        let two_clean = || {
            let mut m = two_slot_gpu();
            clean_on_gpu(&mut m, h0);
            m.note_task_prefetch(h0, gpu);
            clean_on_gpu(&mut m, h1);
            m
        };

        let mut m = two_clean();
        assert!(matches!(
            m.allocate_for_prefetch(h2, gpu),
            Alloc::Done { .. }
        ));
        assert_eq!(m.evicted, [(gpu, h1)]);

        let mut m = two_clean();
        assert!(matches!(m.allocate(h2, gpu), Alloc::Done { .. }));
        assert_eq!(m.evicted, [(gpu, h0)]);

        let mut m = two_clean();
        m.note_task_fetch(h0, gpu);
        assert!(matches!(
            m.allocate_for_prefetch(h2, gpu),
            Alloc::Done { .. }
        ));
        assert_eq!(m.evicted, [(gpu, h0)]);
    }

    /// A task using the chunk again clears the mark (`_starpu_memchunk_recently_used` sets
    /// `wontuse = 0`): h1 is then an ordinary dirty chunk, younger than h0.
    #[test]
    fn a_new_use_clears_wont_use() {
        let (h0, h1, h2) = (HandleId(0), HandleId(1), HandleId(2));
        let gpu = MemNodeId(1);
        let mut m = two_slot_gpu();
        dirty_on_gpu(&mut m, h0);
        dirty_on_gpu(&mut m, h1);
        m.mark_wont_use(h1);
        m.pin_for_task(h1, gpu);
        m.unpin(h1, gpu);
        assert_eq!(m.allocate(h2, gpu), Alloc::WriteBack(h0));
    }
}
