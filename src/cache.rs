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
/// Hashed with FxHash: the keys are problem descriptions built by the library, so a fast
/// hash matters more than resistance to crafted collisions.
pub struct BoundedCache<K: Hash + Eq, V> {
    /// Unbounded to `lru` (whose bounded caches allocate a table for their whole capacity
    /// up front, 128 KiB at the default bound, which made a handle cost microseconds):
    /// the table grows with the entries and `insert` keeps the bound.
    inner: lru::LruCache<K, V, rustc_hash::FxBuildHasher>,
    cap: NonZeroUsize,
}

impl<K: Hash + Eq, V> BoundedCache<K, V> {
    /// A cache of at most `entries` entries (at least one); it allocates no table until
    /// the first entry comes.
    pub fn new(entries: usize) -> Self {
        Self {
            inner: lru::LruCache::unbounded_with_hasher(rustc_hash::FxBuildHasher),
            cap: NonZeroUsize::new(entries).unwrap_or(NonZeroUsize::MIN),
        }
    }

    /// The entry for `key`, marked as recently used.
    pub fn get(&mut self, key: &K) -> Option<&V> {
        self.inner.get(key)
    }

    /// Stores `value` under `key` (replacing an entry with that key), dropping the least
    /// recently used entry when that makes one too many.
    pub fn insert(&mut self, key: K, value: V) {
        self.inner.put(key, value);
        if self.inner.len() > self.cap.get() {
            self.inner.pop_lru();
        }
    }

    /// Drops the entries `keep` refuses; the rest keep their order of use.
    pub fn retain(&mut self, mut keep: impl FnMut(&K, &V) -> bool)
    where
        K: Clone,
    {
        let gone: Vec<K> = self
            .inner
            .iter()
            .filter(|(k, v)| !keep(k, v))
            .map(|(k, _)| k.clone())
            .collect();
        for k in &gone {
            self.inner.pop(k);
        }
    }

    /// Drops every entry.
    pub fn clear(&mut self) {
        self.inner.clear();
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

/// The value for `key` in `list`, a short list kept most recently used first: found and
/// moved to the front, or made by `make` and put there, dropping the oldest past `cap`
/// entries (at least one is kept). For a handful of entries compared by value, where
/// hashing would cost more than the scan.
pub(crate) fn recent<K: PartialEq, V, E>(
    list: &mut Vec<(K, V)>,
    key: K,
    cap: usize,
    make: impl FnOnce() -> Result<V, E>,
) -> Result<&V, E> {
    if let Some(i) = list.iter().position(|(k, _)| *k == key) {
        list[..=i].rotate_right(1);
    } else {
        let value = make()?;
        list.truncate(cap.max(1) - 1);
        list.insert(0, (key, value));
    }
    // Found and rotated to the front, or inserted there: the list is not empty.
    Ok(&list[0].1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_keeps_the_latest_first_and_makes_only_what_is_missing() {
        let mut list: Vec<(u8, String)> = Vec::new();
        let made = std::cell::Cell::new(0);
        let get = |list: &mut Vec<(u8, String)>, k: u8| -> String {
            recent(list, k, 3, || {
                made.set(made.get() + 1);
                Ok::<_, ()>(format!("v{k}"))
            })
            .cloned()
            .unwrap_or_default()
        };
        for k in [1, 2, 3] {
            assert_eq!(get(&mut list, k), format!("v{k}"));
        }
        assert_eq!(get(&mut list, 1), "v1"); // found: moved to the front
        let keys: Vec<u8> = list.iter().map(|e| e.0).collect();
        assert_eq!(keys, [1, 3, 2]);
        assert_eq!(get(&mut list, 4), "v4"); // the oldest (2) goes
        let keys: Vec<u8> = list.iter().map(|e| e.0).collect();
        assert_eq!(keys, [4, 1, 3]);
        assert_eq!(made.get(), 4);
        let failed: Result<&String, &str> = recent(&mut list, 9, 3, || Err("no"));
        assert_eq!(failed, Err("no"));
        assert_eq!(list.len(), 3, "a failed make changes nothing");
    }

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
        // A bound of 0 keeps one entry.
        let mut one = BoundedCache::<u8, u8>::new(0);
        one.insert(1, 1);
        one.insert(2, 2);
        assert_eq!(one.len(), 1);
        assert_eq!(one.get(&1), None);
        assert_eq!(one.get(&2), Some(&2));
    }

    #[test]
    fn many_inserts_keep_the_latest_up_to_the_bound() {
        let mut c = BoundedCache::new(10);
        for i in 0..100u32 {
            c.insert(i, i * 2);
        }
        assert_eq!(c.len(), 10);
        assert!((0..90).all(|i| c.get(&i).is_none()));
        assert!((90..100).all(|i| c.get(&i) == Some(&(i * 2))));
        let order: Vec<u32> = c.iter().map(|(k, _)| *k).collect();
        assert_eq!(order, (90..100).rev().collect::<Vec<_>>());
    }

    #[test]
    fn retain_drops_what_it_refuses_and_keeps_the_rest_in_order_of_use() {
        let mut c = BoundedCache::new(8);
        for i in 0..6u32 {
            c.insert(i, i * 10);
        }
        assert_eq!(c.get(&1), Some(&10)); // 1 is now the most recent
        c.retain(|k, v| k % 2 == 1 && *v != 50);
        let order: Vec<(u32, u32)> = c.iter().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(order, [(1, 10), (3, 30)]);
        // The bound still holds after entries went: the least recent (3) goes first.
        for i in 10..17u32 {
            c.insert(i, i);
        }
        assert_eq!(c.len(), 8);
        assert_eq!(c.get(&3), None);
        assert_eq!(c.get(&1), Some(&10));
    }
}
