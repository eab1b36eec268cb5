//! The event queue: a radix heap over (time, sequence) keys.
//!
//! A discrete-event simulation pops keys in non-decreasing order and never pushes a key below
//! the last one popped (new events happen now or later, with a larger sequence number). A radix
//! heap exploits exactly that monotonicity: an element lives in the bucket of the highest bit
//! in which its key differs from the last key popped, and moves only towards bucket 0. For a
//! million pending events this is several times faster than a binary heap, whose every pop
//! walks 20 levels of cache misses. Ties cannot occur: the sequence number makes keys unique.

/// An element: its key and a payload.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Item<P> {
    key: u128,
    pub payload: P,
}

#[derive(Debug)]
pub(crate) struct RadixHeap<P> {
    last: u128,
    len: usize,
    buckets: Vec<Vec<Item<P>>>,
}

/// Time (non-negative, finite: its bits order like the value) above, sequence below.
pub(crate) fn key(t: f64, seq: u64) -> u128 {
    debug_assert!(t >= 0.0 && t.is_finite());
    ((t.to_bits() as u128) << 64) | seq as u128
}

/// The time of a key.
pub(crate) fn time_of(key: u128) -> f64 {
    f64::from_bits((key >> 64) as u64)
}

impl<P: Copy> RadixHeap<P> {
    pub(crate) fn new() -> Self {
        RadixHeap {
            last: 0,
            len: 0,
            buckets: (0..=128).map(|_| Vec::new()).collect(),
        }
    }

    fn bucket(&self, key: u128) -> usize {
        (128 - (key ^ self.last).leading_zeros()) as usize
    }

    /// Adds an element; `key` must not be below the last key popped.
    pub(crate) fn push(&mut self, key: u128, payload: P) {
        debug_assert!(key >= self.last);
        let b = self.bucket(key);
        self.buckets[b].push(Item { key, payload });
        self.len += 1;
    }

    /// Removes the element with the smallest key.
    pub(crate) fn pop(&mut self) -> Option<(u128, P)> {
        if self.len == 0 {
            return None;
        }
        if self.buckets[0].is_empty() {
            let b = (1..self.buckets.len()).find(|&b| !self.buckets[b].is_empty())?;
            let items = std::mem::take(&mut self.buckets[b]);
            self.last = items.iter().map(|i| i.key).min()?;
            for it in &items {
                let nb = self.bucket(it.key);
                self.buckets[nb].push(*it);
            }
            // Keep the emptied vector's capacity for the next time this bucket fills.
            let mut items = items;
            items.clear();
            if self.buckets[b].is_empty() {
                self.buckets[b] = items;
            }
        }
        let it = self.buckets[0].pop()?;
        self.len -= 1;
        Some((it.key, it.payload))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn pops_in_key_order_against_a_sorted_reference() {
        let mut h = RadixHeap::new();
        let mut rng = Rng::new(3);
        let mut seq = 0u64;
        let mut now = 0.0f64;
        let mut reference = std::collections::BTreeSet::new();
        for round in 0..2000 {
            for _ in 0..(rng.below(5)) {
                seq += 1;
                // Often the same time (ties broken by sequence), sometimes later.
                let t = if rng.below(3) == 0 {
                    now
                } else {
                    now + rng.below(1000) as f64 * 0.5
                };
                h.push(key(t, seq), seq);
                reference.insert((key(t, seq), seq));
            }
            if round % 3 != 0 {
                let got = h.pop();
                let want = reference.pop_first();
                assert_eq!(got, want);
                if let Some((k, _)) = got {
                    now = time_of(k);
                }
            }
        }
        while let Some(want) = reference.pop_first() {
            assert_eq!(h.pop(), Some(want));
        }
        assert_eq!(h.pop(), None);
    }
}
