//! The one bounded cache type of the crate: hashed lookups, least recently used out first.
//!
//! Every per-context cache on the call path (operation graphs, plans, default and measured
//! choices, workspace sizes) is one of these. A training step touches every layer's
//! problem once, so a bound smaller than a model's distinct problems would rebuild plans
//! on every call: the bound is large (PyTorch keeps up to 10,000 plans).

use std::hash::Hash;
use std::num::NonZeroUsize;

/// Entries each cache keeps by default.
pub const DEFAULT_ENTRIES: usize = 4096;

/// A map bounded to its capacity; inserting past it drops the least recently used entry.
pub struct BoundedCache<K: Hash + Eq, V> {
    inner: lru::LruCache<K, V>,
}

impl<K: Hash + Eq, V> BoundedCache<K, V> {
    /// A cache of at most `entries` entries (at least one).
    pub fn new(entries: usize) -> Self {
        Self {
            inner: lru::LruCache::new(NonZeroUsize::new(entries).unwrap_or(NonZeroUsize::MIN)),
        }
    }

    /// The entry for `key`, marked as recently used.
    pub fn get(&mut self, key: &K) -> Option<&V> {
        self.inner.get(key)
    }

    /// Stores `value` under `key` (replacing an entry with that key).
    pub fn insert(&mut self, key: K, value: V) {
        self.inner.put(key, value);
    }

    /// Every entry, most recently used first.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.inner.iter()
    }

    pub fn len(&self) -> usize {
        self.inner.len()
    }

    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }
}

impl<K: Hash + Eq, V> Default for BoundedCache<K, V> {
    fn default() -> Self {
        Self::new(DEFAULT_ENTRIES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_recently_used_and_drops_the_oldest() {
        let mut c = BoundedCache::new(2);
        c.insert(1, "a");
        c.insert(2, "b");
        assert_eq!(c.get(&1), Some(&"a")); // 1 is now the most recent
        c.insert(3, "c");
        assert_eq!(c.get(&2), None);
        assert_eq!(c.get(&1), Some(&"a"));
        assert_eq!(c.get(&3), Some(&"c"));
        c.insert(3, "d");
        assert_eq!(c.get(&3), Some(&"d"));
        assert_eq!(c.len(), 2);
        assert!(!c.is_empty());
        assert_eq!(BoundedCache::<u8, u8>::new(0).inner.cap().get(), 1);
    }
}
