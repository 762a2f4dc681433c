//! Process-wide counts of how the library issued its GPU work, for diagnosing where the
//! host's time goes (benchmarks read them through Python's `cudnn_rs._call_counts()`).
//! Each is one relaxed atomic increment on its path.

use std::sync::atomic::{AtomicU64, Ordering};

/// What is counted (release waits and imports by the Python layer only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "python"), allow(dead_code))]
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
    /// A graph-API execution plan built (finalized), on any thread.
    PlanBuild,
}

/// Each count's name, in the order of [`Count`]'s variants.
const NAMES: [&str; 9] = [
    "replayed",
    "captured",
    "direct",
    "variant_packs",
    "pool_allocations",
    "release_waits",
    "torch_imports",
    "dlpack_imports",
    "plan_builds",
];

static COUNTS: [AtomicU64; NAMES.len()] = [const { AtomicU64::new(0) }; NAMES.len()];

/// Counts one more of `what`.
pub(crate) fn bump(what: Count) {
    COUNTS[what as usize].fetch_add(1, Ordering::Relaxed);
}

/// Every count so far, by name.
#[cfg_attr(not(feature = "python"), allow(dead_code))]
pub(crate) fn snapshot() -> Vec<(&'static str, u64)> {
    NAMES
        .iter()
        .zip(&COUNTS)
        .map(|(&name, n)| (name, n.load(Ordering::Relaxed)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bump_raises_its_own_count_and_every_count_has_a_name() {
        // The last variant names the last count: every variant has its own slot.
        assert_eq!(Count::PlanBuild as usize, NAMES.len() - 1);
        let before = snapshot();
        bump(Count::VariantPack);
        let after = snapshot();
        for ((name, b), (name2, a)) in before.iter().zip(&after) {
            assert_eq!(name, name2);
            // Other tests may bump concurrently: counts never fall.
            assert!(a >= b, "{name} fell");
        }
        let i = Count::VariantPack as usize;
        assert_eq!(after[i].0, "variant_packs");
        assert!(after[i].1 > before[i].1);
    }
}
