//! The device memory the library allocates itself (the one-call API's `dx`, workspaces,
//! tensors, the finds' scratch buffers): stream-ordered, from one memory pool per device
//! that keeps what is freed for the next allocation.
//!
//! cudarc allocates from the device's current pool, whose release threshold is 0 unless
//! someone set it: at every synchronisation (a timing loop's end, a training step's
//! `loss.item()`) the driver hands the freed memory back to the system, and the next
//! allocation maps it again, which costs the host, and so the GPU waiting for it, about
//! 0.1 ms per 25 MB. Our pool keeps it, as PyTorch's caching allocator does;
//! [`release_cached_memory`] hands it back, and an allocation that runs out of memory
//! hands it back and tries once more. The device's current pool is left as it is: other
//! libraries in the process keep their own settings.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use cudarc::driver::result::mem_pool;
use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DriverError};

use crate::error::Result;

/// One device's pool, with the context it was made on: holding it keeps the device's
/// primary context, and so the pool and its memory, alive for the rest of the process.
struct DevicePool {
    pool: sys::CUmemoryPool,
    ctx: Arc<CudaContext>,
}

// SAFETY: a memory pool is a driver object that any thread may use (the driver
// synchronises its use); the context is `Send` itself.
unsafe impl Send for DevicePool {}

/// The pools by device ordinal; `None` where making one failed (the device's current pool
/// serves then, as it does cudarc).
static POOLS: Mutex<BTreeMap<usize, Option<DevicePool>>> = Mutex::new(BTreeMap::new());

/// Makes a pool of device memory on `ctx`'s device that keeps what is freed.
fn make_pool(ctx: &Arc<CudaContext>) -> Result<DevicePool, DriverError> {
    ctx.bind_to_thread()?;
    let id = i32::try_from(ctx.ordinal())
        .map_err(|_| DriverError(sys::cudaError_enum::CUDA_ERROR_INVALID_DEVICE))?;
    let props = sys::CUmemPoolProps {
        allocType: sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED,
        handleTypes: sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE,
        location: sys::CUmemLocation {
            type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
            id,
        },
        win32SecurityAttributes: std::ptr::null_mut(),
        maxSize: 0,
        usage: 0,
        reserved: [0; 54],
    };
    // SAFETY: `props` is a complete pool description (device memory of this device, no
    // handle types, no size cap) that outlives the call.
    let pool = unsafe { mem_pool::create(&raw const props) }?;
    let mut keep = u64::MAX;
    // SAFETY: `pool` was just made; the release threshold is a 64-bit value, read from
    // `keep` during the call.
    let set = unsafe {
        mem_pool::set_attribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&raw mut keep).cast(),
        )
    };
    if let Err(e) = set {
        // SAFETY: nothing was allocated from the pool, which no one else knows.
        let _ = unsafe { mem_pool::destroy(pool) };
        return Err(e);
    }
    Ok(DevicePool {
        pool,
        ctx: Arc::clone(ctx),
    })
}

/// The pool that keeps freed memory for `ctx`'s device, made on first use; `None` where
/// it cannot serve `ctx` (another context of the device made it, or making it failed).
fn pool_for(ctx: &Arc<CudaContext>) -> Option<sys::CUmemoryPool> {
    let mut pools = POOLS.lock().unwrap_or_else(PoisonError::into_inner);
    let entry = pools
        .entry(ctx.ordinal())
        .or_insert_with(|| make_pool(ctx).ok());
    entry
        .as_ref()
        .filter(|p| p.ctx.cu_ctx() == ctx.cu_ctx())
        .map(|p| p.pool)
}

/// Allocates `len` uninitialised bytes on `stream` from its device's pool that keeps
/// freed memory (see the module's documentation). Out of memory, the pool's kept memory
/// goes back to the system and the allocation is tried once more. Where that pool cannot
/// serve (an empty allocation, a device without stream-ordered allocation, or a context
/// with cudarc's event tracking on, whose slices would need events made for them), it is
/// cudarc's allocation from the device's current pool.
///
/// # Safety
/// The bytes are uninitialised: the caller writes them before anything reads them.
pub(crate) unsafe fn alloc(
    stream: &Arc<CudaStream>,
    len: usize,
) -> Result<CudaSlice<u8>, DriverError> {
    let ctx = stream.context();
    let pool = (len > 0 && ctx.has_async_alloc() && !ctx.is_event_tracking())
        .then(|| pool_for(ctx))
        .flatten();
    let Some(pool) = pool else {
        // SAFETY: as this function's contract.
        return unsafe { stream.alloc::<u8>(len) };
    };
    ctx.bind_to_thread()?;
    crate::counters::bump(crate::counters::Count::PoolAlloc);
    // SAFETY: `pool` is a live pool of the stream's device, the stream is live.
    let ptr = match unsafe { mem_pool::alloc_async(pool, len, stream.cu_stream()) } {
        Err(e) if e.0 == sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY => {
            if !crate::replay::capturing(stream.cu_stream().cast()) {
                stream.synchronize()?;
            }
            // SAFETY: `pool` is live; trimming releases only memory nothing uses.
            unsafe { mem_pool::trim_to(pool, 0) }?;
            // SAFETY: as above.
            unsafe { mem_pool::alloc_async(pool, len, stream.cu_stream()) }?
        }
        other => other?,
    };
    // SAFETY: `ptr` is a fresh stream-ordered allocation of `len` bytes on `stream`, owned
    // by the slice from here on; the context allocates stream-ordered, so the slice frees
    // it with `cuMemFreeAsync` on `stream`, which returns it to the pool; event tracking
    // is off, so no events are made (the call cannot fail).
    Ok(unsafe { stream.upgrade_device_ptr::<u8>(ptr, len) })
}

/// Hands the memory the library's pool keeps on device `ordinal` (every device where
/// `None`) back to the system: what is freed and not in use, once the device's queued
/// work, whose frees it waits for, is done. Returns how many bytes it handed back (0 on a
/// device where the library allocated nothing).
pub fn release_cached_memory(ordinal: Option<usize>) -> Result<usize> {
    let pools = POOLS.lock().unwrap_or_else(PoisonError::into_inner);
    let mut released = 0usize;
    for p in pools
        .iter()
        .filter(|(o, _)| ordinal.is_none_or(|want| want == **o))
        .filter_map(|(_, p)| p.as_ref())
    {
        released = released.saturating_add(p.release()?);
    }
    Ok(released)
}

impl DevicePool {
    /// [`release_cached_memory`] on this pool's device.
    fn release(&self) -> Result<usize> {
        self.ctx.synchronize()?;
        let reserved = || -> Result<u64> {
            let mut bytes: u64 = 0;
            // SAFETY: the pool is live; the reserved size is a 64-bit value written to
            // `bytes`.
            unsafe {
                mem_pool::get_attribute(
                    self.pool,
                    sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
                    (&raw mut bytes).cast(),
                )
            }?;
            Ok(bytes)
        };
        let before = reserved()?;
        // SAFETY: the pool is live; trimming releases only memory nothing uses.
        unsafe { mem_pool::trim_to(self.pool, 0) }?;
        let after = reserved()?;
        Ok(usize::try_from(before.saturating_sub(after)).unwrap_or(usize::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releasing_a_device_the_library_never_allocated_on_hands_back_nothing() {
        // No pool is made without an allocation, so this asks no driver.
        assert_eq!(release_cached_memory(Some(usize::MAX)).ok(), Some(0));
    }
}
