//! StarPU's suballocator (`src/datawizard/malloc.c`, `STARPU_SUBALLOCATOR`, on by default): on a
//! GPU, an allocation of at most 4 MiB is carved, in blocks of 16 KiB, out of a 32 MiB chunk,
//! so that only a new chunk pays a cudaMalloc. A chunk holds nine 960 × 960 single-precision
//! tiles (225 blocks each, 23 blocks left over), so a Cholesky of such tiles pays one
//! cudaMalloc per nine tiles instead of one per tile.
//!
//! Blocks are counted per chunk; their position inside the chunk is not tracked. For
//! allocations of one size (tiled algorithms) that is exact; with mixed sizes StarPU can find
//! a chunk too fragmented where this finds room. Empty chunks are kept (StarPU frees an empty
//! chunk only when four others are empty already), so releasing never costs a cudaFree.

/// Bytes of one chunk (`CHUNK_SIZE`).
const CHUNK_BYTES: u64 = 32 << 20;
/// Largest allocation served from chunks (`CHUNK_ALLOC_MAX`).
const MAX_BYTES: u64 = CHUNK_BYTES / 8;
/// Allocation granularity (`CHUNK_ALLOC_MIN`).
const BLOCK_BYTES: u64 = 16 << 10;
/// Blocks in one chunk (`CHUNK_NBLOCKS`).
const CHUNK_BLOCKS: u32 = (CHUNK_BYTES / BLOCK_BYTES) as u32;

/// Index of a chunk of one device's suballocator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChunkId(u32);

/// The chunks of one device.
#[derive(Debug, Clone, Default)]
pub(crate) struct Suballocator {
    /// Free blocks of each chunk, in the order the chunks were allocated.
    free_blocks: Vec<u32>,
}

impl Suballocator {
    /// Bytes of one chunk.
    pub const CHUNK_BYTES: u64 = CHUNK_BYTES;

    /// Whether an allocation of `bytes` is carved out of chunks (otherwise it has its own
    /// cudaMalloc).
    pub fn serves(bytes: u64) -> bool {
        bytes <= MAX_BYTES
    }

    fn blocks(bytes: u64) -> u32 {
        bytes.div_ceil(BLOCK_BYTES).max(1) as u32
    }

    /// Carve `bytes` (at most 4 MiB) out of the first chunk with room, or out of a new chunk.
    /// Returns the chunk and whether it is new (a cudaMalloc).
    pub fn carve(&mut self, bytes: u64) -> (ChunkId, bool) {
        debug_assert!(Self::serves(bytes));
        let b = Self::blocks(bytes);
        if let Some(i) = self.free_blocks.iter().position(|&f| f >= b) {
            self.free_blocks[i] -= b;
            return (ChunkId(i as u32), false);
        }
        self.free_blocks.push(CHUNK_BLOCKS - b);
        (ChunkId(self.free_blocks.len() as u32 - 1), true)
    }

    /// Give the blocks of an allocation of `bytes` back to `chunk`.
    pub fn release(&mut self, chunk: ChunkId, bytes: u64) {
        let f = &mut self.free_blocks[chunk.0 as usize];
        *f += Self::blocks(bytes);
        debug_assert!(*f <= CHUNK_BLOCKS, "released more blocks than a chunk has");
    }

    /// Chunks allocated so far.
    #[cfg(test)]
    pub fn chunks(&self) -> usize {
        self.free_blocks.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 960 × 960 single-precision tile: 3 686 400 bytes, exactly 225 blocks of 16 KiB.
    const TILE: u64 = 960 * 960 * 4;

    #[test]
    fn nine_tiles_of_960_share_a_chunk_and_the_tenth_needs_a_new_one() {
        let mut s = Suballocator::default();
        for i in 0..9 {
            let (c, new) = s.carve(TILE);
            assert_eq!(c, ChunkId(0));
            assert_eq!(new, i == 0, "tile {i}");
        }
        // 9 × 225 = 2025 of 2048 blocks used: 23 left, too few for a tile.
        assert_eq!(s.carve(TILE), (ChunkId(1), true));
        assert_eq!(s.chunks(), 2);
    }

    #[test]
    fn released_blocks_are_reused_before_a_new_chunk() {
        let mut s = Suballocator::default();
        let chunks: Vec<_> = (0..18).map(|_| s.carve(TILE).0).collect();
        assert_eq!(s.chunks(), 2);
        s.release(chunks[3], TILE);
        assert_eq!(s.carve(TILE), (ChunkId(0), false));
        assert_eq!(s.carve(TILE), (ChunkId(2), true));
    }

    #[test]
    fn only_allocations_up_to_4_mib_are_served_and_tiny_ones_take_one_block() {
        assert!(Suballocator::serves(4 << 20));
        assert!(!Suballocator::serves((4 << 20) + 1));
        // 960 × 960 doubles (7.4 MB) get their own cudaMalloc each.
        assert!(!Suballocator::serves(960 * 960 * 8));
        let mut s = Suballocator::default();
        for _ in 0..CHUNK_BLOCKS {
            assert!(!s.carve(1).1 || s.chunks() == 1);
        }
        assert_eq!(s.chunks(), 1);
        assert_eq!(s.carve(1), (ChunkId(1), true));
    }
}
