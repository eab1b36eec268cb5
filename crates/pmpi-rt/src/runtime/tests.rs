//! The event ring and the request tables against concurrent threads.
//!
//! Under `--cfg loom` (scripts/loom.sh) the `models` below run through loom, which executes each
//! model once per interleaving of its threads' atomic operations (up to a preemption bound) and
//! fails on a data race on a slot or an event cell, an assertion, a deadlock or a leak. Without
//! it, the `stress` tests run the same structures with std threads at full speed. Both assert
//! exact counts: every event is consumed or counted as dropped, in order, with its data; every
//! posted request is completed exactly once, with the event it was posted with.

use super::*;
use crate::sync::thread;

/// The event a test produces or posts as its `n`th: every field derived from `n`, so that a
/// torn, stale or swapped event shows in any field.
fn ev(n: u64) -> CEvent {
    CEvent {
        kind: (n % 200) as u8 + 1,
        flags: (n % 7) as u8,
        pad: 0,
        peer: n as i32,
        tag: 1000 + n as i32,
        comm: 3 + n as u32,
        bytes: n * 1_000 + 17,
        t_post_enter: n * 10,
        t_post_exit: n * 10 + 1,
        t_done_enter: n * 10 + 2,
        t_done_exit: n * 10 + 3,
        aux: 0,
    }
}

/// Which `n` an event came from; panics unless every field is `ev(n)`'s (`aux` aside).
fn seq_of(e: &CEvent) -> u64 {
    let n = e.peer as u64;
    let want = CEvent {
        aux: e.aux,
        ..ev(n)
    };
    assert_eq!(
        (e.kind, e.flags, e.tag, e.comm, e.bytes, e.t_post_enter),
        (
            want.kind,
            want.flags,
            want.tag,
            want.comm,
            want.bytes,
            want.t_post_enter
        ),
        "event {n} torn or mixed up"
    );
    assert_eq!(
        (e.t_post_exit, e.t_done_enter, e.t_done_exit),
        (want.t_post_exit, want.t_done_enter, want.t_done_exit),
        "event {n} torn or mixed up"
    );
    n
}

/// The events `Ring::drain` appended, read back from the file layout (64 bytes, little-endian,
/// fields in `CEvent` order): checks the layout as well as the data.
fn decode(buf: &[u8]) -> Vec<CEvent> {
    assert_eq!(
        buf.len() % EVENT_BYTES,
        0,
        "a partial event in the drained bytes"
    );
    let u64_at = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
    let u32_at = |b: &[u8], o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
    buf.chunks_exact(EVENT_BYTES)
        .map(|b| CEvent {
            kind: b[0],
            flags: b[1],
            pad: u16::from_le_bytes([b[2], b[3]]),
            peer: u32_at(b, 4) as i32,
            tag: u32_at(b, 8) as i32,
            comm: u32_at(b, 12),
            bytes: u64_at(b, 16),
            t_post_enter: u64_at(b, 24),
            t_post_exit: u64_at(b, 32),
            t_done_enter: u64_at(b, 40),
            t_done_exit: u64_at(b, 48),
            aux: u64_at(b, 56),
        })
        .collect()
}

/// Drains `r` and returns the sequence numbers of the events, checking each event's data and
/// that the recording thread's index (`thread`) is in `aux`.
fn drain_seqs(r: &Ring, thread: u64) -> Vec<u64> {
    let mut buf = Vec::new();
    let n = r.drain(&mut buf);
    let evs = decode(&buf);
    assert_eq!(evs.len(), n, "drain's count is not the events it wrote");
    evs.iter()
        .map(|e| {
            assert_eq!(e.aux, thread, "aux must carry the recording thread");
            seq_of(e)
        })
        .collect()
}

/// What the producer of a ring test saw: per pushed event, stored or dropped, and the wakes.
#[derive(Debug, Default)]
struct Produced {
    stored: Vec<u64>,
    dropped: Vec<u64>,
    wakes: usize,
}

#[cfg(loom)]
fn produce(r: &Ring, n: u64) -> Produced {
    let mut p = Produced::default();
    produce_into(r, 0..n, &mut p);
    p
}

/// Pushes events `seqs` into `r`, noting in `p` what became of each.
fn produce_into(r: &Ring, seqs: std::ops::Range<u64>, p: &mut Produced) {
    for i in seqs {
        match r.push(&ev(i)) {
            Pushed::Stored => p.stored.push(i),
            Pushed::StoredWoke => {
                p.stored.push(i);
                p.wakes += 1;
            }
            Pushed::Dropped => p.dropped.push(i),
        }
    }
}

/// The ring's books, once producer and consumer are done: the consumed events are exactly the
/// stored ones, in order (so consumed + dropped = produced, nothing twice), and the ring's drop
/// counter is the number of drops the producer saw.
fn check_ring_books(r: &Ring, produced: &Produced, consumed: &[u64], n: u64) {
    assert_eq!(
        consumed,
        &produced.stored[..],
        "consumed != stored, in order"
    );
    assert_eq!(
        consumed.len() + produced.dropped.len(),
        n as usize,
        "consumed + dropped != produced"
    );
    let mut all: Vec<u64> = consumed.iter().chain(&produced.dropped).copied().collect();
    all.sort_unstable();
    assert_eq!(all, (0..n).collect::<Vec<_>>(), "an event lost or doubled");
    assert_eq!(
        r.drops.load(Ordering::Relaxed),
        produced.dropped.len() as u64,
        "the drop counter"
    );
}

/// Completes `key` from this thread, whose own table is `mine`.
fn take(reqs: &Requests, mine: &ReqTable, key: u64) -> Option<u64> {
    reqs.take(Some(mine), key, true).map(|e| seq_of(&e))
}

#[cfg(loom)]
mod models {
    use super::*;
    use std::time::Instant;

    /// Which thread loom's first execution of a model runs first: the spawning one
    /// (`SpawnerFirst`) or the spawned one (`SpawnedFirst`, the spawner yields right after the
    /// spawn).
    ///
    /// Why both: loom's partial-order reduction compares an operation with the last access to
    /// the same atomic only, and under a preemption bound what it explores depends on the
    /// execution it starts from. A completion loads a slot's key before it CASes it: run second,
    /// its CAS meets its own load, the owner's earlier loads of the slot go unnoticed, and the
    /// orders where the claim comes first are never tried (one interleaving in all for
    /// `table_post_then_foreign_complete`); run first, the owner's later loads meet its stores.
    /// Each start reaches outcomes the other misses, so every model runs from both.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Start {
        SpawnerFirst,
        SpawnedFirst,
    }

    /// Spawns `f` as the model's other thread, first or second as `start` says.
    fn spawn<T: 'static>(start: Start, f: impl FnOnce() -> T + 'static) -> thread::JoinHandle<T> {
        let h = thread::spawn(f);
        if start == Start::SpawnedFirst {
            thread::yield_now();
        }
        h
    }

    /// Runs `f` under loom for every interleaving within the preemption bound
    /// (`LOOM_MAX_PREEMPTIONS`, 3 when unset), from both starts, and prints how many
    /// interleavings it explored.
    fn check(name: &str, f: impl Fn(Start) + Sync + Send + Clone + 'static) {
        for start in [Start::SpawnerFirst, Start::SpawnedFirst] {
            let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let mut b = loom::model::Builder::new();
            if b.preemption_bound.is_none() {
                b.preemption_bound = Some(3);
            }
            let (counted, f) = (runs.clone(), f.clone());
            let t0 = Instant::now();
            b.check(move || {
                counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                f(start);
            });
            println!(
                "loom model {name} ({start:?}): {} interleavings (preemption bound {}), {:.2} s",
                runs.load(std::sync::atomic::Ordering::Relaxed),
                b.preemption_bound.unwrap_or(0),
                t0.elapsed().as_secs_f64()
            );
        }
    }

    /// Which of a model's outcomes some interleaving reached (counted outside loom, across
    /// its executions): a model whose racy outcome never happens checks nothing.
    #[derive(Clone, Debug)]
    struct Outcomes(std::sync::Arc<Vec<std::sync::atomic::AtomicUsize>>);

    impl Outcomes {
        fn new(n: usize) -> Outcomes {
            Outcomes(std::sync::Arc::new(
                (0..n)
                    .map(|_| std::sync::atomic::AtomicUsize::new(0))
                    .collect(),
            ))
        }

        fn hit(&self, i: usize) {
            self.0[i].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }

        /// Panics unless every outcome was reached; `names[i]` says what outcome i is.
        fn assert_all(&self, names: &[&str]) {
            for (c, name) in self.0.iter().zip(names) {
                let n = c.load(std::sync::atomic::Ordering::Relaxed);
                assert!(n > 0, "no interleaving reached: {name}");
                println!("    {name}: {n} interleavings");
            }
        }
    }

    /// Keys that all hash to the same home slot of `t` (one probe run, so that entries, tombstones
    /// and reuses share slots): handles as Open MPI's are, 16-byte aligned pointers.
    fn colliding(t: &ReqTable, n: usize) -> Vec<u64> {
        let base = 0x7f00_0000_1000u64;
        let home = t.home(base);
        (0..)
            .map(|i| base + 16 * i)
            .filter(|&k| t.home(k) == home)
            .take(n)
            .collect()
    }

    /// A thread with a table of its own that completes `key`. Spawned after the post, it is a
    /// request handle handed to another thread the way an MPI program hands one over (the spawn
    /// orders the post before the completion, as the program's own synchronization would;
    /// a flag spun on instead multiplies loom's branches without adding interleavings of the
    /// table's own operations).
    fn completer(start: Start, reqs: &Arc<Requests>, key: u64) -> thread::JoinHandle<Option<u64>> {
        let reqs = reqs.clone();
        spawn(start, move || {
            let other = reqs.table();
            take(&reqs, &other, key)
        })
    }

    /// One producer, the consumer draining twice meanwhile and once after: 3 events in a
    /// 4-slot ring never fill it, so every event arrives, in order, with its data.
    #[test]
    fn ring_producer_consumer() {
        check("ring_producer_consumer", move |start| {
            let r = Arc::new(Ring::new(4, 7));
            let p = {
                let r = r.clone();
                spawn(start, move || produce(&r, 3))
            };
            let mut got = drain_seqs(&r, 7);
            got.extend(drain_seqs(&r, 7));
            let produced = p.join().unwrap();
            got.extend(drain_seqs(&r, 7));
            assert!(produced.dropped.is_empty(), "dropped with room left");
            check_ring_books(&r, &produced, &got, 3);
            // Half full (2 of 4) wakes the writer at most once per drain that reset it.
            assert!(produced.wakes <= 3, "{} wakes for 2 drains", produced.wakes);
        });
    }

    /// A 2-slot ring, 4 events, two drains meanwhile: the slots are reused (wrap-around) when a
    /// drain frees them in time, the ring is full when not. Whatever the interleaving, the
    /// consumed events are the stored ones in order, the rest counted as drops, and the first
    /// two (an empty ring) are never dropped. Over all interleavings both a wrap-around (more
    /// than 2 events consumed) and a drop must have happened.
    #[test]
    fn ring_wrap_around_and_full() {
        let seen = Outcomes::new(2);
        let s = seen.clone();
        check("ring_wrap_around_and_full", move |start| {
            let r = Arc::new(Ring::new(2, 1));
            let p = {
                let r = r.clone();
                spawn(start, move || produce(&r, 4))
            };
            let mut got = drain_seqs(&r, 1);
            got.extend(drain_seqs(&r, 1));
            let produced = p.join().unwrap();
            got.extend(drain_seqs(&r, 1));
            check_ring_books(&r, &produced, &got, 4);
            assert_eq!(&got[..2], &[0, 1], "an event dropped from an empty ring");
            if got.len() > 2 {
                s.hit(0);
            }
            if !produced.dropped.is_empty() {
                s.hit(1);
            }
        });
        seen.assert_all(&["wrap-around (a slot reused)", "full (an event dropped)"]);
    }

    /// Post in one thread, complete in another (handed the handle after the post, as MPI
    /// programs do): the completer finds it through the foreign path with the posted data, and
    /// nothing is left behind.
    #[test]
    fn table_post_then_foreign_complete() {
        check("table_post_then_foreign_complete", move |start| {
            let reqs = Arc::new(Requests::new(8, 2));
            let mine = reqs.table();
            let k = colliding(&mine, 2);
            reqs.post(Some(&mine), k[0], &ev(5));
            let c = completer(start, &reqs, k[0]);
            // Meanwhile the owner posts and completes another request in the same probe run.
            reqs.post(Some(&mine), k[1], &ev(6));
            assert_eq!(take(&reqs, &mine, k[1]), Some(6));
            assert_eq!(c.join().unwrap(), Some(5));
            assert_eq!(take(&reqs, &mine, k[0]), None, "completed twice");
            assert_eq!(reqs.pending(), 0);
        });
    }

    /// A foreign completion racing the post itself (no hand-over): it either misses (the post
    /// is not visible yet) or takes the entry with its data; the owner then gets it exactly
    /// when the other thread did not.
    #[test]
    fn table_foreign_complete_races_post() {
        let seen = Outcomes::new(2);
        let s = seen.clone();
        check("table_foreign_complete_races_post", move |start| {
            let reqs = Arc::new(Requests::new(8, 2));
            let mine = reqs.table();
            let key = colliding(&mine, 1)[0];
            let c = completer(start, &reqs, key);
            reqs.post(Some(&mine), key, &ev(9));
            let theirs = c.join().unwrap();
            let ours = take(&reqs, &mine, key);
            s.hit(usize::from(theirs.is_some()));
            let mut got: Vec<u64> = theirs.into_iter().chain(ours).collect();
            got.sort_unstable();
            assert_eq!(got, vec![9], "completed {} times", got.len());
            assert_eq!(reqs.pending(), 0);
        });
        seen.assert_all(&["the other thread missed", "the other thread took it"]);
    }

    /// The owner posts A and B (one probe run), hands B over, takes A itself and posts C into
    /// A's freed slot while the other thread claims B: each completed once, with its data.
    #[test]
    fn table_concurrent_post_and_complete() {
        check("table_concurrent_post_and_complete", move |start| {
            let reqs = Arc::new(Requests::new(8, 2));
            let mine = reqs.table();
            let k = colliding(&mine, 3);
            reqs.post(Some(&mine), k[0], &ev(0));
            reqs.post(Some(&mine), k[1], &ev(1));
            let c = completer(start, &reqs, k[1]);
            assert_eq!(take(&reqs, &mine, k[0]), Some(0));
            reqs.post(Some(&mine), k[2], &ev(2));
            assert_eq!(c.join().unwrap(), Some(1));
            assert_eq!(take(&reqs, &mine, k[2]), Some(2));
            for &key in &k {
                assert_eq!(take(&reqs, &mine, key), None, "completed twice");
            }
            assert_eq!(reqs.pending(), 0);
        });
    }

    /// One handle live twice (Open MPI's shared request for sends completed inline), completed
    /// by the owner and by another thread at once: the CAS gives each entry to exactly one of
    /// them.
    #[test]
    fn table_duplicate_handle_race() {
        let seen = Outcomes::new(2);
        let s = seen.clone();
        check("table_duplicate_handle_race", move |start| {
            let reqs = Arc::new(Requests::new(8, 2));
            let mine = reqs.table();
            let key = colliding(&mine, 1)[0];
            reqs.post(Some(&mine), key, &ev(0));
            reqs.post(Some(&mine), key, &ev(1));
            let c = completer(start, &reqs, key);
            let ours = take(&reqs, &mine, key);
            let theirs = c.join().unwrap();
            s.hit(theirs.unwrap_or(0) as usize);
            let mut got: Vec<u64> = ours.into_iter().chain(theirs).collect();
            got.sort_unstable();
            assert_eq!(got, vec![0, 1], "each entry exactly once");
            assert_eq!(take(&reqs, &mine, key), None);
            assert_eq!(reqs.pending(), 0);
        });
        seen.assert_all(&[
            "the other thread took the older",
            "the other thread took the younger",
        ]);
    }

    /// Slot reuse (ABA): the owner completes A and posts the same handle again with new data
    /// into the same slot, while another thread that was handed the first A completes it.
    /// Whoever wins each entry reads that entry's data (loom flags a read of the slot that
    /// races the owner's rewrite), and both entries are completed exactly once.
    #[test]
    fn table_slot_reuse_aba() {
        let seen = Outcomes::new(3);
        let s = seen.clone();
        check("table_slot_reuse_aba", move |start| {
            let reqs = Arc::new(Requests::new(8, 2));
            let mine = reqs.table();
            let key = colliding(&mine, 1)[0];
            reqs.post(Some(&mine), key, &ev(0));
            let c = completer(start, &reqs, key);
            let first = take(&reqs, &mine, key);
            reqs.post(Some(&mine), key, &ev(1));
            let theirs = c.join().unwrap();
            let last = take(&reqs, &mine, key);
            s.hit(theirs.map_or(2, |n| n as usize));
            let mut got: Vec<u64> = [first, theirs, last].into_iter().flatten().collect();
            got.sort_unstable();
            assert_eq!(got, vec![0, 1], "each entry exactly once");
            assert_eq!(reqs.pending(), 0);
        });
        seen.assert_all(&[
            "the other thread took the first entry",
            "the other thread took the reposted entry (ABA)",
            "the other thread found none",
        ]);
    }

    /// Three threads: the owner posts a handle twice and another once, then completes the
    /// single one while two other threads each complete the duplicated handle. The two foreign
    /// claims are serialized by the registry lock, the owner's take and theirs by the CAS:
    /// three entries, three completions, each with its own event.
    #[test]
    fn table_two_completers_and_owner() {
        check("table_two_completers_and_owner", move |start| {
            let reqs = Arc::new(Requests::new(8, 2));
            let mine = reqs.table();
            let k = colliding(&mine, 2);
            reqs.post(Some(&mine), k[0], &ev(0));
            reqs.post(Some(&mine), k[1], &ev(1));
            reqs.post(Some(&mine), k[0], &ev(2));
            let (c1, c2) = (completer(start, &reqs, k[0]), completer(start, &reqs, k[0]));
            assert_eq!(take(&reqs, &mine, k[1]), Some(1));
            let mut got = vec![c1.join().unwrap(), c2.join().unwrap()];
            got.sort_unstable();
            assert_eq!(got, vec![Some(0), Some(2)], "each duplicate exactly once");
            assert_eq!(reqs.pending(), 0);
        });
    }

    /// The owner's table passes 3/4 full with a tombstone to reclaim, so its next post rehashes
    /// (under the registry lock) while another thread claims an entry: the claim and the rehash
    /// exclude each other, and every entry is completed once, with its data.
    #[test]
    fn table_rehash_vs_foreign_claim() {
        check("table_rehash_vs_foreign_claim", move |start| {
            let reqs = Arc::new(Requests::new(8, 2));
            let mine = reqs.table();
            let k = colliding(&mine, 7);
            for (i, &key) in k[..6].iter().enumerate() {
                reqs.post(Some(&mine), key, &ev(i as u64));
            }
            let c = completer(start, &reqs, k[5]);
            // Six of eight slots used: k0's tombstone makes the seventh post rehash.
            assert_eq!(take(&reqs, &mine, k[0]), Some(0));
            reqs.post(Some(&mine), k[6], &ev(6));
            assert_eq!(c.join().unwrap(), Some(5));
            for (i, &key) in k.iter().enumerate().skip(1) {
                let want = if i == 5 { None } else { Some(i as u64) };
                assert_eq!(take(&reqs, &mine, key), want, "entry {i}");
            }
            assert_eq!(reqs.pending(), 0);
            assert_eq!(
                reqs.pending_len.load(Ordering::Relaxed),
                0,
                "nothing spilled"
            );
        });
    }

    /// A full table spills into the shared shards; another thread completes one spilled entry
    /// while the owner completes the other and one of its table's: each found once, nothing
    /// left over.
    #[test]
    fn table_spill_foreign_complete() {
        check("table_spill_foreign_complete", move |start| {
            let reqs = Arc::new(Requests::new(8, 2));
            let mine = reqs.table();
            let k = colliding(&mine, 8);
            for (i, &key) in k.iter().enumerate() {
                reqs.post(Some(&mine), key, &ev(i as u64));
            }
            assert_eq!(
                reqs.pending_len.load(Ordering::Relaxed),
                2,
                "the 7th, 8th spill"
            );
            let c = completer(start, &reqs, k[6]);
            assert_eq!(take(&reqs, &mine, k[7]), Some(7));
            assert_eq!(take(&reqs, &mine, k[3]), Some(3));
            assert_eq!(c.join().unwrap(), Some(6));
            assert_eq!(reqs.pending(), 5);
            assert_eq!(reqs.pending_len.load(Ordering::Relaxed), 0);
        });
    }

    /// Regression: the spill's entry count must never run behind its lists. A post that spills
    /// X races a completion that takes X (a duplicated handle: the completer was handed an
    /// older post of the same handle, and the spill answers with X), while a third thread
    /// completes Y, spilled and handed over long before. When the post counted X only after
    /// releasing the shard, the taker of X could uncount it first: the count read 0 with Y
    /// still spilled, and Y's completion was missed (its event lost, the request left pending).
    #[test]
    fn table_spill_count_races_completion() {
        let seen = Outcomes::new(2);
        let s = seen.clone();
        check("table_spill_count_races_completion", move |start| {
            let reqs = Arc::new(Requests::new(8, 2));
            let mine = reqs.table();
            let k = colliding(&mine, 8);
            for (i, &key) in k[..7].iter().enumerate() {
                reqs.post(Some(&mine), key, &ev(i as u64)); // k6 (Y) spills
            }
            let y = completer(start, &reqs, k[6]);
            let x = completer(start, &reqs, k[7]);
            reqs.post(Some(&mine), k[7], &ev(7)); // X spills too
            assert_eq!(y.join().unwrap(), Some(6), "Y's completion missed");
            let theirs = x.join().unwrap();
            s.hit(usize::from(theirs.is_some()));
            let ours = take(&reqs, &mine, k[7]);
            let got: Vec<u64> = theirs.into_iter().chain(ours).collect();
            assert_eq!(got, vec![7], "X completed {} times", got.len());
            assert_eq!(reqs.pending(), 6);
            assert_eq!(reqs.pending_len.load(Ordering::Relaxed), 0);
        });
        seen.assert_all(&["X's completer missed it", "X's completer took it"]);
    }
}

#[cfg(not(loom))]
mod stress {
    use super::*;
    use std::sync::mpsc;

    /// A deterministic full ring: 2 slots, 5 events and no consumer store 2 (the second wakes
    /// the writer: half full), drop and count 3; a drain returns the 2 in order and the ring
    /// takes events again, waking once more when half full again.
    #[test]
    fn ring_full_drops_and_counts() {
        let r = Ring::new(2, 4);
        let got: Vec<Pushed> = (0..5).map(|i| r.push(&ev(i))).collect();
        use Pushed::*;
        assert_eq!(got, [Stored, StoredWoke, Dropped, Dropped, Dropped]);
        assert_eq!(r.drops.load(Ordering::Relaxed), 3);
        assert_eq!(drain_seqs(&r, 4), [0, 1]);
        assert_eq!(
            r.woken.load(Ordering::Relaxed),
            0,
            "a drain re-arms the wake"
        );
        assert_eq!(r.push(&ev(5)), Stored);
        assert_eq!(r.push(&ev(6)), StoredWoke);
        assert_eq!(r.push(&ev(7)), Dropped);
        assert_eq!(drain_seqs(&r, 4), [5, 6]);
        assert_eq!(r.drops.load(Ordering::Relaxed), 4);
    }

    /// 50,000 events through a 64-slot ring with a consumer draining as fast as it can: every
    /// event consumed in order with its data or counted as dropped, exactly. The producer
    /// pushes bursts of 100 (more than the ring holds, so a slow consumer means drops) and waits
    /// for the ring to empty between bursts, so that the slots are reused whatever the load.
    #[test]
    fn ring_stress_exact_counts() {
        const N: u64 = 50_000;
        const BURST: u64 = 100;
        let r = Arc::new(Ring::new(64, 9));
        let done = Arc::new(AtomicUsize::new(0));
        let p = {
            let (r, done) = (r.clone(), done.clone());
            thread::spawn(move || {
                let mut p = Produced::default();
                for b in (0..N).step_by(BURST as usize) {
                    produce_into(&r, b..b + BURST, &mut p);
                    while r.tail.load(Ordering::Acquire) != r.head.load(Ordering::Relaxed) {
                        thread::yield_now();
                    }
                }
                done.store(1, Ordering::Release);
                p
            })
        };
        let mut got = Vec::new();
        while done.load(Ordering::Acquire) == 0 {
            got.extend(drain_seqs(&r, 9));
        }
        got.extend(drain_seqs(&r, 9));
        let produced = p.join().unwrap();
        check_ring_books(&r, &produced, &got, N);
        assert!(
            got.len() as u64 >= N / BURST * 64,
            "fewer than a ringful per burst"
        );
    }

    /// A posting thread hands two of every three requests to a completing thread (with a table
    /// of its own) and completes the third itself, 20,000 in all, while the completer lags:
    /// the owner's table fills, rehashes and spills. Every request is completed exactly once,
    /// with the event it was posted with, and nothing is left pending.
    #[test]
    fn table_stress_cross_thread() {
        const N: u64 = 20_000;
        let reqs = Arc::new(Requests::new(TABLE_CAP, SHARDS));
        let (tx, rx) = mpsc::channel::<u64>();
        let c = {
            let reqs = reqs.clone();
            thread::spawn(move || {
                let mine = reqs.table();
                let mut done = Vec::new();
                for key in rx {
                    let e = reqs
                        .take(Some(&mine), key, true)
                        .expect("a handed-over request");
                    assert_eq!(seq_of(&e), key / 16, "request {key:#x}'s event");
                    done.push(key / 16);
                }
                done
            })
        };
        let mine = reqs.table();
        let mut own = Vec::new();
        let mut owed = Vec::new();
        for n in 1..=N {
            let key = 0x5500_0000 + 16 * n;
            reqs.post(Some(&mine), key, &ev(key / 16));
            if n % 3 == 0 {
                owed.push(key);
            } else {
                tx.send(key).unwrap();
            }
            // Complete our own a while after posting them, so the table holds many entries.
            if owed.len() == 500 {
                for key in owed.drain(..) {
                    let e = take(&reqs, &mine, key).expect("our own request");
                    assert_eq!(e, key / 16);
                    own.push(e);
                }
            }
        }
        for key in owed.drain(..) {
            own.push(take(&reqs, &mine, key).expect("our own request"));
        }
        drop(tx);
        let theirs = c.join().unwrap();
        assert_eq!(own.len() as u64, N / 3);
        assert_eq!(theirs.len() as u64, N - N / 3);
        let mut all: Vec<u64> = own.into_iter().chain(theirs).collect();
        all.sort_unstable();
        let want: Vec<u64> = (1..=N).map(|n| 0x5500_0000 / 16 + n).collect();
        assert_eq!(all, want, "a request lost or completed twice");
        assert_eq!(reqs.pending(), 0);
        assert_eq!(take(&reqs, &mine, 0x5500_0000 + 16), None);
    }

    /// One handle posted 10,000 times (a shared request), completed by the owner and another
    /// thread at once: each entry exactly once, and the owner's in posting order (oldest first).
    #[test]
    fn table_stress_duplicate_handle() {
        const N: u64 = 10_000;
        const KEY: u64 = 0x7f12_3456_7890;
        let reqs = Arc::new(Requests::new(TABLE_CAP, SHARDS));
        let mine = reqs.table();
        for n in 0..N {
            reqs.post(Some(&mine), KEY, &ev(n));
        }
        let taken = Arc::new(AtomicUsize::new(0));
        let c = {
            let (reqs, taken) = (reqs.clone(), taken.clone());
            thread::spawn(move || {
                let other = reqs.table();
                let mut got = Vec::new();
                while taken.fetch_add(1, Ordering::AcqRel) < N as usize {
                    got.push(take(&reqs, &other, KEY).expect("one left for each ticket"));
                }
                got
            })
        };
        let mut ours = Vec::new();
        while taken.fetch_add(1, Ordering::AcqRel) < N as usize {
            ours.push(take(&reqs, &mine, KEY).expect("one left for each ticket"));
        }
        let theirs = c.join().unwrap();
        assert!(
            ours.windows(2).all(|w| w[0] < w[1]),
            "owner not oldest first"
        );
        let mut all: Vec<u64> = ours.into_iter().chain(theirs).collect();
        all.sort_unstable();
        assert_eq!(all, (0..N).collect::<Vec<_>>());
        assert_eq!(take(&reqs, &mine, KEY), None);
        assert_eq!(reqs.pending(), 0);
    }
}
