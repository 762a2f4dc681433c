//! Process-wide counts of how the library issued its GPU work, for diagnosing where the
//! host's time goes (benchmarks read them through Python's `cudnn_rs._call_counts()`).
//! Each is one relaxed atomic increment on its path.

use std::sync::atomic::{AtomicU64, Ordering};

/// What is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Count {
    /// A call launched as a CUDA graph captured earlier.
    Replayed,
    /// A call the replay cache chose to capture into a CUDA graph (launched from it, or
    /// run directly where the capture failed).
    Captured,
    /// A call the replay cache sent to run directly (new addresses, or not capturable).
    Direct,
    /// A graph-API variant pack made (a call on addresses its plan had not seen lately).
    VariantPack,
    /// An allocation from the library's memory pool.
    PoolAlloc,
    /// A tensor over foreign memory whose release waited for the GPU (its last use was
    /// on a stream other than the producer's).
    ReleaseWait,
    /// A PyTorch tensor imported in place (its own description read, no DLPack).
    TorchImport,
    /// An import through the producer's DLPack export.
    DlpackImport,
}

const ALL: [Count; 8] = [
    Count::Replayed,
    Count::Captured,
    Count::Direct,
    Count::VariantPack,
    Count::PoolAlloc,
    Count::ReleaseWait,
    Count::TorchImport,
    Count::DlpackImport,
];

static COUNTS: [AtomicU64; ALL.len()] = [const { AtomicU64::new(0) }; ALL.len()];

impl Count {
    #[cfg_attr(not(feature = "python"), allow(dead_code))]
    fn name(self) -> &'static str {
        match self {
            Count::Replayed => "replayed",
            Count::Captured => "captured",
            Count::Direct => "direct",
            Count::VariantPack => "variant_packs",
            Count::PoolAlloc => "pool_allocations",
            Count::ReleaseWait => "release_waits",
            Count::TorchImport => "torch_imports",
            Count::DlpackImport => "dlpack_imports",
        }
    }
}

/// Counts one more of `what`.
pub(crate) fn bump(what: Count) {
    COUNTS[what as usize].fetch_add(1, Ordering::Relaxed);
}

/// Every count so far, by name.
#[cfg_attr(not(feature = "python"), allow(dead_code))]
pub(crate) fn snapshot() -> Vec<(&'static str, u64)> {
    ALL.iter()
        .map(|&c| (c.name(), COUNTS[c as usize].load(Ordering::Relaxed)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bump_raises_its_own_count() {
        let before = snapshot();
        bump(Count::VariantPack);
        let after = snapshot();
        for ((name, b), (name2, a)) in before.iter().zip(&after) {
            assert_eq!(name, name2);
            // Other tests may bump concurrently: counts never fall.
            assert!(a >= b, "{name} fell");
        }
        let i = ALL
            .iter()
            .position(|&c| c == Count::VariantPack)
            .unwrap_or(0);
        assert!(after[i].1 > before[i].1);
        assert!(ALL.iter().enumerate().all(|(i, &c)| c as usize == i));
    }
}
