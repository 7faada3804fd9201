//! Device memory: buffers of four kinds, each in the memory type its job needs, and the
//! size-class pool that reuses them.
//!
//! - [`MemoryKind::Device`]: all compute data, always device-local. On a unified-memory device
//!   it is also host-visible, and uploads and downloads map it directly.
//! - [`MemoryKind::Upload`]: staging for uploads, host-visible and written sequentially.
//! - [`MemoryKind::Readback`]: staging for downloads, host-cached so reads are fast.
//! - [`MemoryKind::Params`]: small kernel argument blocks, host-visible and, where possible,
//!   device-local.
//!
//! Buffers are freed to the pool, not to the driver: a later request of the same size class
//! reuses them. The pool keeps at most a bounded number of bytes; beyond that a freed buffer is
//! destroyed. A buffer the GPU may still use stays alive through the batch that uses it, so the
//! pool may hand it out again at once: later GPU work is ordered after it on the one queue, and
//! host access waits for the buffer's last use ([`RawBuffer::last_use`]).

use crate::counters::Counters;
use crate::{Error, Result};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use vulkano::buffer::{Buffer, BufferCreateInfo, BufferUsage, Subbuffer};
use vulkano::memory::MemoryPropertyFlags;
use vulkano::memory::allocator::{
    AllocationCreateInfo, MemoryAllocator, MemoryTypeFilter, StandardMemoryAllocator,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemoryKind {
    Device,
    Upload,
    Readback,
    Params,
}

/// Most bytes of host-side buffers (staging, parameters) the pool keeps: they are reused in
/// chunks of [`crate::device`]'s staging size, so a few chunks per kind suffice, and they must
/// not compete with device buffers for the pool's budget.
const HOST_SIDE_POOL_BYTES: u64 = 256 << 20;

impl MemoryKind {
    fn budget_slot(self) -> usize {
        match self {
            MemoryKind::Device => 0,
            MemoryKind::Upload | MemoryKind::Readback | MemoryKind::Params => 1,
        }
    }
}

/// One Vulkan buffer with its device address. Identity (`id`) is what barrier tracking uses.
#[derive(Debug)]
pub struct RawBuffer {
    pub(crate) id: u64,
    pub(crate) kind: MemoryKind,
    pub(crate) buffer: Subbuffer<[u8]>,
    pub(crate) address: u64,
    /// Sequence number of the last batch that uses this buffer (0: never used by the GPU).
    pub(crate) last_use: AtomicU64,
    counters: Arc<Counters>,
}

impl RawBuffer {
    pub fn size(&self) -> u64 {
        self.buffer.size()
    }

    /// The buffer's device address, as kernels receive it in push constants.
    pub fn device_address(&self) -> u64 {
        self.address
    }

    pub(crate) fn mark_used(&self, sequence: u64) {
        self.last_use.fetch_max(sequence, Ordering::Relaxed);
    }

    /// A host pointer to the buffer's memory, if it is host-visible.
    pub(crate) fn mapped(&self) -> Option<std::ptr::NonNull<[u8]>> {
        self.buffer.mapped_slice().ok()
    }

    /// Makes device writes visible to host reads on memory that is not host-coherent.
    pub(crate) fn invalidate_for_host(&self) {
        if let Some((allocation, range)) = self.non_coherent_range() {
            // SAFETY: the caller waited for all GPU work on this buffer (its last use), so
            // no device access to the range runs concurrently.
            let _ = unsafe { allocation.invalidate_range(range) };
        }
    }

    /// Makes host writes visible to the device on memory that is not host-coherent.
    pub(crate) fn flush_from_host(&self) {
        if let Some((allocation, range)) = self.non_coherent_range() {
            // SAFETY: the host has finished writing and the GPU does not access the buffer
            // until work submitted after this call.
            let _ = unsafe { allocation.flush_range(range) };
        }
    }

    /// The whole allocation as a mapped range, when its memory needs explicit flushes.
    fn non_coherent_range(
        &self,
    ) -> Option<(
        &vulkano::memory::ResourceMemory,
        vulkano::memory::MappedMemoryRange,
    )> {
        match self.buffer.buffer().memory() {
            vulkano::buffer::BufferMemory::Normal(allocation)
                if allocation.atom_size().is_some() =>
            {
                let range = vulkano::memory::MappedMemoryRange {
                    offset: 0,
                    size: allocation.size(),
                    ..Default::default()
                };
                Some((allocation, range))
            }
            _ => None,
        }
    }
}

impl Drop for RawBuffer {
    fn drop(&mut self) {
        if self.kind == MemoryKind::Device {
            self.counters
                .device_bytes_live
                .fetch_sub(self.size(), Ordering::Relaxed);
        }
    }
}

/// Rounds a request up to its size class: 256 bytes at least, then four classes per power of
/// two, so reuse wastes at most a quarter of a buffer.
pub fn size_class(bytes: u64) -> u64 {
    const MINIMUM: u64 = 256;
    if bytes <= MINIMUM {
        return MINIMUM;
    }
    let step = 1u64 << (63 - bytes.leading_zeros()).saturating_sub(2);
    bytes.div_ceil(step) * step
}

/// Cached buffers by (kind, size class).
type FreeLists = HashMap<(MemoryKind, u64), Vec<Arc<RawBuffer>>>;

/// Creates buffers in the right memory type and recycles them by size class.
pub(crate) struct BufferPool {
    allocator: Arc<StandardMemoryAllocator>,
    counters: Arc<Counters>,
    free: Mutex<FreeLists>,
    /// Cached bytes of device buffers [0] and of host-side buffers [1].
    cached_bytes: [AtomicU64; 2],
    max_cached_bytes: u64,
    device_local_heap_bytes: u64,
    unified_memory: bool,
    next_id: AtomicU64,
    /// Buffers a capture holds ([`BufferPool::pin`]), by id.
    pinned: Mutex<HashMap<u64, Pin>>,
}

/// How many pins a buffer has, and the buffer once its owner released it (it returns to the
/// free lists with the last unpin).
#[derive(Default)]
struct Pin {
    count: u32,
    released: Option<Arc<RawBuffer>>,
}

impl std::fmt::Debug for BufferPool {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("BufferPool")
            .field("cached_bytes", &self.cached_bytes())
            .field("max_cached_bytes", &self.max_cached_bytes)
            .finish_non_exhaustive()
    }
}

impl BufferPool {
    pub(crate) fn new(
        allocator: Arc<StandardMemoryAllocator>,
        counters: Arc<Counters>,
        max_cached_bytes: u64,
        device_local_heap_bytes: u64,
        unified_memory: bool,
    ) -> Self {
        BufferPool {
            allocator,
            counters,
            free: Mutex::new(HashMap::new()),
            cached_bytes: [AtomicU64::new(0), AtomicU64::new(0)],
            max_cached_bytes,
            device_local_heap_bytes,
            unified_memory,
            next_id: AtomicU64::new(1),
            pinned: Mutex::new(HashMap::new()),
        }
    }

    /// A buffer of at least `bytes` bytes (at least 1) of `kind`, reused when one is cached.
    pub(crate) fn acquire(
        &self,
        op: &'static str,
        kind: MemoryKind,
        bytes: u64,
    ) -> Result<Arc<RawBuffer>> {
        let class = size_class(bytes.max(1));
        if let Some(buffer) = self.free.lock().get_mut(&(kind, class)).and_then(Vec::pop) {
            self.cached_bytes[kind.budget_slot()].fetch_sub(class, Ordering::Relaxed);
            Counters::add(&self.counters.pool_hits, 1);
            return Ok(buffer);
        }
        Counters::add(&self.counters.pool_misses, 1);
        match self.allocate(op, kind, class) {
            Err(Error::OutOfDeviceMemory { .. }) if self.cached_bytes() > 0 => {
                // Cached buffers may be what fills the heap: give them back and try once more.
                self.trim();
                self.allocate(op, kind, class)
            }
            result => result,
        }
    }

    /// Keeps `buffer` out of the free lists until as many [`BufferPool::unpin`]s: a capture
    /// replays commands on the buffers it recorded, so nobody else may be handed them, even
    /// after the tensors that owned them are dropped.
    pub(crate) fn pin(&self, buffer: &RawBuffer) {
        self.pinned.lock().entry(buffer.id).or_default().count += 1;
    }

    /// Undoes one [`BufferPool::pin`]; the last one hands a released buffer back to the pool.
    pub(crate) fn unpin(&self, buffer: &RawBuffer) {
        let mut pinned = self.pinned.lock();
        let Some(entry) = pinned.get_mut(&buffer.id) else {
            return;
        };
        entry.count -= 1;
        if entry.count > 0 {
            return;
        }
        let released = pinned.remove(&buffer.id).and_then(|pin| pin.released);
        drop(pinned);
        if let Some(released) = released {
            self.release(released);
        }
    }

    /// Returns a buffer to its size class, or destroys it when the pool is full; a pinned
    /// buffer waits for its last unpin.
    pub(crate) fn release(&self, buffer: Arc<RawBuffer>) {
        {
            let mut pinned = self.pinned.lock();
            if let Some(pin) = pinned.get_mut(&buffer.id) {
                pin.released = Some(buffer);
                return;
            }
        }
        let class = buffer.size();
        let slot = buffer.kind.budget_slot();
        let budget = if slot == 0 {
            self.max_cached_bytes
        } else {
            HOST_SIDE_POOL_BYTES
        };
        let cached = self.cached_bytes[slot].fetch_add(class, Ordering::Relaxed) + class;
        if cached > budget {
            self.cached_bytes[slot].fetch_sub(class, Ordering::Relaxed);
            Counters::add(&self.counters.pool_evictions, 1);
            return;
        }
        self.free
            .lock()
            .entry((buffer.kind, class))
            .or_default()
            .push(buffer);
    }

    /// Destroys every cached buffer (the device frees them once no batch uses them).
    pub(crate) fn trim(&self) {
        let drained: Vec<_> = self.free.lock().drain().collect();
        for cached in &self.cached_bytes {
            cached.store(0, Ordering::Relaxed);
        }
        drop(drained);
    }

    pub(crate) fn cached_bytes(&self) -> u64 {
        self.cached_bytes
            .iter()
            .map(|cached| cached.load(Ordering::Relaxed))
            .sum::<u64>()
    }

    fn allocate(&self, op: &'static str, kind: MemoryKind, bytes: u64) -> Result<Arc<RawBuffer>> {
        if kind == MemoryKind::Device {
            let live = self.counters.device_bytes_live.load(Ordering::Relaxed);
            let available = self.device_local_heap_bytes.saturating_sub(live);
            if bytes > available {
                return Err(Error::OutOfDeviceMemory {
                    op,
                    requested: bytes,
                    available,
                });
            }
        }
        let usage = BufferUsage::STORAGE_BUFFER
            | BufferUsage::SHADER_DEVICE_ADDRESS
            | BufferUsage::TRANSFER_SRC
            | BufferUsage::TRANSFER_DST;
        let buffer = Buffer::new_slice::<u8>(
            self.allocator.clone() as Arc<dyn MemoryAllocator>,
            BufferCreateInfo {
                usage,
                ..Default::default()
            },
            self.allocation_info(kind),
            bytes,
        )
        .map_err(|error| match error {
            vulkano::Validated::Error(vulkano::buffer::AllocateBufferError::AllocateMemory(_)) => {
                Error::OutOfDeviceMemory {
                    op,
                    requested: bytes,
                    available: self
                        .device_local_heap_bytes
                        .saturating_sub(self.counters.device_bytes_live.load(Ordering::Relaxed)),
                }
            }
            other => Error::Vulkan {
                op,
                detail: format!("creating a buffer of {bytes} bytes: {other}"),
            },
        })?;
        let address = buffer
            .device_address()
            .map_err(|error| Error::Vulkan {
                op,
                detail: format!("buffer device address: {error}"),
            })?
            .get();
        if kind == MemoryKind::Device {
            Counters::add(&self.counters.device_bytes_live, bytes);
        }
        Ok(Arc::new(RawBuffer {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            kind,
            buffer,
            address,
            last_use: AtomicU64::new(0),
            counters: self.counters.clone(),
        }))
    }

    fn allocation_info(&self, kind: MemoryKind) -> AllocationCreateInfo {
        let (required, filter) = match kind {
            MemoryKind::Device if self.unified_memory => (
                MemoryPropertyFlags::DEVICE_LOCAL,
                MemoryTypeFilter::PREFER_DEVICE | MemoryTypeFilter::HOST_RANDOM_ACCESS,
            ),
            MemoryKind::Device => (
                MemoryPropertyFlags::DEVICE_LOCAL,
                MemoryTypeFilter::PREFER_DEVICE,
            ),
            MemoryKind::Upload => (
                MemoryPropertyFlags::empty(),
                MemoryTypeFilter::PREFER_HOST | MemoryTypeFilter::HOST_SEQUENTIAL_WRITE,
            ),
            MemoryKind::Readback => (
                MemoryPropertyFlags::empty(),
                MemoryTypeFilter::PREFER_HOST | MemoryTypeFilter::HOST_RANDOM_ACCESS,
            ),
            MemoryKind::Params => (
                MemoryPropertyFlags::empty(),
                MemoryTypeFilter::PREFER_DEVICE | MemoryTypeFilter::HOST_SEQUENTIAL_WRITE,
            ),
        };
        AllocationCreateInfo {
            memory_type_filter: MemoryTypeFilter {
                required_flags: filter.required_flags | required,
                ..filter
            },
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::size_class;

    #[test]
    fn size_classes_waste_at_most_a_quarter() {
        assert_eq!(size_class(1), 256);
        assert_eq!(size_class(256), 256);
        assert_eq!(size_class(257), 320);
        assert_eq!(size_class(1000), 1024);
        assert_eq!(size_class(1025), 1280);
        for bytes in [300u64, 4097, 1 << 20, (1 << 30) + 1, 123_456_789] {
            let class = size_class(bytes);
            assert!(
                class >= bytes && class - bytes <= bytes / 4 + 1,
                "{bytes} -> {class}"
            );
            assert_eq!(size_class(class), class, "classes are fixed points");
        }
    }
}
