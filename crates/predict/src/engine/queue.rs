//! The event queue: a binary heap keyed by (time, sequence), plus keyed slots.
//!
//! Keys pack the time's bits above the sequence number, so ties at equal times resolve in the
//! order events were created and no two keys are equal. (A radix heap, which exploits the
//! monotone keys of a simulation, was measured too: 1.6× faster on the million-rank LogGP
//! broadcast, whose heap holds a million events, but 20 % slower on the contention all-to-all,
//! whose heap of a thousand stays in cache — and the latter is the tighter goal.)
//!
//! Slots are for events that move: a contention flow's end changes whenever its bandwidth
//! does. Pushing a new event per change and skipping the stale ones on pop left every old
//! version in the heap — O(active²) entries when k flows share a link and each end re-times
//! the other k (24 GB on a pipelined ring). A slot holds at most one entry, re-keyed
//! in place, so the queue is bounded by the active flows plus the one-shot events.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// Time (non-negative, finite: its bits order like the value) above, sequence below.
pub(crate) fn key(t: f64, seq: u64) -> u128 {
    debug_assert!(t >= 0.0 && t.is_finite());
    ((t.to_bits() as u128) << 64) | seq as u128
}

/// The time of a key.
pub(crate) fn time_of(key: u128) -> f64 {
    f64::from_bits((key >> 64) as u64)
}

/// A payload that takes no part in the ordering (keys are unique).
#[derive(Debug, Clone, Copy)]
struct Unordered<P>(P);

impl<P> PartialEq for Unordered<P> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl<P> Eq for Unordered<P> {}
impl<P> PartialOrd for Unordered<P> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<P> Ord for Unordered<P> {
    fn cmp(&self, _: &Self) -> Ordering {
        Ordering::Equal
    }
}

const ABSENT: u32 = u32::MAX;

#[derive(Debug)]
pub(crate) struct EventQueue<P> {
    heap: BinaryHeap<Reverse<(u128, Unordered<P>)>>,
    /// The slots' entries as an indexed 4-ary min-heap of (key, slot): a million flows ending
    /// at one instant pop through half the levels of a binary heap, and an entry of 32 bytes
    /// (the payload kept apart, in `payload`) puts a node's four children in two cache lines.
    keyed: Vec<(u128, u32)>,
    /// Per slot: its index in `keyed`, or `ABSENT`, and its payload.
    pos: Vec<u32>,
    payload: Vec<Option<P>>,
}

impl<P: Copy> EventQueue<P> {
    pub(crate) fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            keyed: Vec::new(),
            pos: Vec::new(),
            payload: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, key: u128, payload: P) {
        self.heap.push(Reverse((key, Unordered(payload))));
    }

    /// Entries held: one-shot events plus occupied slots.
    pub(crate) fn len(&self) -> usize {
        self.heap.len() + self.keyed.len()
    }

    /// Puts `slot`'s one entry at `key` (inserted, or moved if it was there).
    pub(crate) fn set(&mut self, slot: u32, key: u128, payload: P) {
        let s = slot as usize;
        if s >= self.pos.len() {
            self.pos.resize(s + 1, ABSENT);
            self.payload.resize(s + 1, None);
        }
        self.payload[s] = Some(payload);
        let i = self.pos[s];
        if i == ABSENT {
            self.keyed.push((key, slot));
            let i = self.keyed.len() - 1;
            self.pos[s] = i as u32;
            self.up(i);
        } else {
            let i = i as usize;
            let old = self.keyed[i].0;
            self.keyed[i] = (key, slot);
            if key < old {
                self.up(i);
            } else {
                self.down(i);
            }
        }
    }

    /// Takes `slot`'s entry out, if it has one.
    pub(crate) fn remove(&mut self, slot: u32) {
        let Some(&i) = self.pos.get(slot as usize) else {
            return;
        };
        if i != ABSENT {
            self.take_at(i as usize);
        }
    }

    fn take_at(&mut self, i: usize) -> (u128, P) {
        let e = self.keyed.swap_remove(i);
        let p = self.payload[e.1 as usize]
            .take()
            .expect("an occupied slot has a payload");
        self.pos[e.1 as usize] = ABSENT;
        if i < self.keyed.len() {
            // The entry moved into `i` came from the bottom: it may belong above or below.
            let moved = self.keyed[i].1 as usize;
            self.pos[moved] = i as u32;
            self.up(i);
            self.down(self.pos[moved] as usize);
        }
        (e.0, p)
    }

    fn up(&mut self, mut i: usize) {
        while i > 0 {
            let p = (i - 1) / 4;
            if self.keyed[p].0 <= self.keyed[i].0 {
                break;
            }
            self.keyed.swap(p, i);
            self.pos[self.keyed[i].1 as usize] = i as u32;
            self.pos[self.keyed[p].1 as usize] = p as u32;
            i = p;
        }
    }

    fn down(&mut self, mut i: usize) {
        let n = self.keyed.len();
        loop {
            let l = 4 * i + 1;
            if l >= n {
                break;
            }
            let mut c = l;
            for j in l + 1..(l + 4).min(n) {
                if self.keyed[j].0 < self.keyed[c].0 {
                    c = j;
                }
            }
            if self.keyed[i].0 <= self.keyed[c].0 {
                break;
            }
            self.keyed.swap(c, i);
            self.pos[self.keyed[i].1 as usize] = i as u32;
            self.pos[self.keyed[c].1 as usize] = c as u32;
            i = c;
        }
    }

    /// The smallest key held.
    pub(crate) fn peek_key(&self) -> Option<u128> {
        let a = self.heap.peek().map(|Reverse((k, _))| *k);
        let b = self.keyed.first().map(|e| e.0);
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Removes the element with the smallest key.
    pub(crate) fn pop(&mut self) -> Option<(u128, P)> {
        let a = self.heap.peek().map(|Reverse((k, _))| *k);
        let b = self.keyed.first().map(|e| e.0);
        match (a, b) {
            (Some(a), Some(b)) if b < a => Some(self.take_at(0)),
            (None, Some(_)) => Some(self.take_at(0)),
            _ => self.heap.pop().map(|Reverse((k, Unordered(p)))| (k, p)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn pops_in_time_then_creation_order() {
        let mut h = EventQueue::new();
        let mut rng = Rng::new(3);
        let mut reference = std::collections::BTreeSet::new();
        for seq in 0..5000u64 {
            let t = rng.below(50) as f64 * 0.5;
            h.push(key(t, seq), seq);
            reference.insert((key(t, seq), seq));
        }
        let mut last = (0.0, 0);
        while let Some(want) = reference.pop_first() {
            let got = h.pop().unwrap();
            assert_eq!(got, want);
            let now = (time_of(got.0), got.1);
            assert!(now.0 > last.0 || (now.0 == last.0 && now.1 >= last.1));
            last = now;
        }
        assert_eq!(h.pop(), None);
    }

    #[test]
    fn slots_hold_one_entry_each_and_pop_in_key_order() {
        // Random re-keying and removal against a reference map: the queue's length is the
        // live slots plus the one-shot events, never the history of changes.
        let mut h = EventQueue::new();
        let mut rng = Rng::new(7);
        let mut live = std::collections::BTreeMap::new();
        let mut seq = 0u64;
        for _ in 0..20000 {
            let slot = rng.below(300) as u32;
            seq += 1;
            if rng.below(5) == 0 {
                h.remove(slot);
                live.remove(&slot);
            } else {
                let k = key(rng.below(1000) as f64, seq);
                h.set(slot, k, slot as u64);
                live.insert(slot, k);
            }
            assert_eq!(h.len(), live.len());
        }
        h.push(key(500.0, 0), u64::MAX);
        let mut want: Vec<(u128, u64)> = live.iter().map(|(&s, &k)| (k, s as u64)).collect();
        want.push((key(500.0, 0), u64::MAX));
        want.sort();
        for w in want {
            assert_eq!(h.peek_key(), Some(w.0));
            assert_eq!(h.pop(), Some(w));
        }
        assert_eq!(h.pop(), None);
        assert_eq!(h.len(), 0);
    }
}
