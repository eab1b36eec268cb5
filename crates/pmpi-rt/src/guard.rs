//! The one fence between the C shim and the runtime's Rust: every exported `cpmpi_rt_*`
//! function runs its body through [`entry`].
//!
//! Why: a panic must not unwind out of an `extern "C"` function (Rust aborts the process when
//! one tries), and the process is a rank of the user's MPI job, which a bug of ours must not
//! kill. A panic is caught here, said once on stderr, and the runtime stops for the rest of the
//! process: every entry point then returns its safe default (no ring, no table, nothing
//! taken, nothing written), the writer thread stops, and the rank file keeps what was written,
//! without a footer, so the reader reports the rank as cut short. The program goes on
//! unrecorded.
//!
//! Cost on the hot path: one relaxed load of [`STATE`] per call, which also carries the
//! test hook below (no second load), and `catch_unwind`, which costs nothing unless a panic
//! happens.
//!
//! Test hook, only in a runtime built with the `test-hooks` feature (commperf-pmpi's build
//! script enables it for builds with debug assertions, which is what `cargo test` runs; a
//! release build carries no hook): `COMMPERF_PMPI_TEST_PANIC=<entry>` (an [`Entry`] name:
//! `post`, `comm`, …), read once in `cpmpi_rt_init`, makes that entry point panic on its first
//! call, so the tests can check that a rank survives a bug in the runtime
//! (crates/cli/tests/monitor_mpi.rs). The environment is the hook's only channel: the runtime
//! is preloaded into the user's program, whose command line is not ours.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU8, Ordering};

/// The runtime's exported entry points, by the suffix of their `cpmpi_rt_` name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Entry {
    Init = 2,
    Clock,
    Comm,
    Neighbors,
    NeighborCounts,
    Calls,
    Sites,
    Ring,
    Wake,
    ThreadMultiple,
    Table,
    Post,
    Take,
    Flush,
    EmptyWrappers,
    Finalize,
}

#[cfg(any(test, feature = "test-hooks"))]
const ALL: [Entry; 16] = [
    Entry::Init,
    Entry::Clock,
    Entry::Comm,
    Entry::Neighbors,
    Entry::NeighborCounts,
    Entry::Calls,
    Entry::Sites,
    Entry::Ring,
    Entry::Wake,
    Entry::ThreadMultiple,
    Entry::Table,
    Entry::Post,
    Entry::Take,
    Entry::Flush,
    Entry::EmptyWrappers,
    Entry::Finalize,
];

impl Entry {
    /// The name after `cpmpi_rt_`.
    pub fn name(self) -> &'static str {
        match self {
            Entry::Init => "init",
            Entry::Clock => "clock",
            Entry::Comm => "comm",
            Entry::Neighbors => "neighbors",
            Entry::NeighborCounts => "neighbor_counts",
            Entry::Calls => "calls",
            Entry::Sites => "sites",
            Entry::Ring => "ring",
            Entry::Wake => "wake",
            Entry::ThreadMultiple => "thread_multiple",
            Entry::Table => "table",
            Entry::Post => "post",
            Entry::Take => "take",
            Entry::Flush => "flush",
            Entry::EmptyWrappers => "empty_wrappers",
            Entry::Finalize => "finalize",
        }
    }

    #[cfg(any(test, feature = "test-hooks"))]
    fn from_name(s: &str) -> Option<Entry> {
        ALL.into_iter().find(|e| e.name() == s)
    }
}

/// Running normally.
const OK: u8 = 0;
/// An entry point panicked: the runtime is off for the rest of the process.
const BROKEN: u8 = 1;
/// Otherwise: the test hook's [`Entry`], which panics on its next call.
static STATE: AtomicU8 = AtomicU8::new(OK);

/// Whether an entry point has panicked (the writer thread stops then too).
pub fn broken() -> bool {
    STATE.load(Ordering::Relaxed) == BROKEN
}

thread_local! {
    /// Where this thread's last panic happened (the panic hook's note for [`entry`]).
    static WHERE: std::cell::Cell<Option<String>> = const { std::cell::Cell::new(None) };
}

/// Makes [`entry`]'s line the only one a panic prints. The panic hook is this library's own
/// (a cdylib carries its own standard library: a program written in Rust keeps its hook), so
/// every panic it sees is the runtime's: it notes where, and `entry` says it once per process
/// instead of the default hook's message per thread.
fn quiet_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let at = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()));
            let _ = WHERE.try_with(|w| w.set(at));
        }));
    });
}

/// Quiets the panic hook and, in a `test-hooks` build, arms the test hook from
/// `COMMPERF_PMPI_TEST_PANIC` (cpmpi_rt_init calls this once).
pub fn arm_test_hook() {
    quiet_hook();
    #[cfg(feature = "test-hooks")]
    arm_from_env();
}

/// The test hook's entry point from `COMMPERF_PMPI_TEST_PANIC`, stored in [`STATE`].
#[cfg(feature = "test-hooks")]
fn arm_from_env() {
    let Ok(v) = std::env::var("COMMPERF_PMPI_TEST_PANIC") else {
        return;
    };
    match Entry::from_name(v.trim()) {
        Some(e) => {
            let _ = STATE.compare_exchange(OK, e as u8, Ordering::Relaxed, Ordering::Relaxed);
        }
        None => eprintln!(
            "commperf-pmpi: COMMPERF_PMPI_TEST_PANIC={v} names no entry point (one of: {})",
            ALL.map(Entry::name).join(", ")
        ),
    }
}

/// Runs `body`, the whole of entry point `e`: its value, or `default` once the runtime is
/// broken or when `body` panics (which breaks it, with one message on stderr).
pub fn entry<R>(e: Entry, default: R, body: impl FnOnce() -> R) -> R {
    let s = STATE.load(Ordering::Relaxed);
    if s == BROKEN {
        return default;
    }
    // AssertUnwindSafe: after a panic nothing the body touched is used again (every entry
    // point returns its default from then on), so no broken invariant can be observed.
    let r = catch_unwind(AssertUnwindSafe(|| {
        #[cfg(feature = "test-hooks")]
        if s == e as u8 {
            panic!("COMMPERF_PMPI_TEST_PANIC={}", e.name());
        }
        body()
    }));
    match r {
        Ok(v) => v,
        Err(p) => {
            if STATE.swap(BROKEN, Ordering::AcqRel) != BROKEN {
                let at = WHERE
                    .try_with(|w| w.take())
                    .ok()
                    .flatten()
                    .map(|at| format!(" at {at}"))
                    .unwrap_or_default();
                // One write: the launcher forwards the ranks' stderr, and a line written in
                // pieces came out interleaved with the other ranks' under Open MPI.
                let line = format!(
                    "commperf-pmpi: internal error in cpmpi_rt_{}{at} ({}); recording stops on \
                     this rank, the program goes on\n",
                    e.name(),
                    message(&*p)
                );
                let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
            }
            default
        }
    }
}

fn message(p: &(dyn Any + Send)) -> &str {
    if let Some(s) = p.downcast_ref::<&str>() {
        s
    } else if let Some(s) = p.downcast_ref::<String>() {
        s
    } else {
        "a panic"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test touches STATE (a process-wide static): the steps run in order in it.
    #[test]
    fn a_panic_is_caught_once_and_then_every_entry_returns_its_default() {
        assert_eq!(entry(Entry::Take, 7, || 3), 3);
        let got = entry(Entry::Post, 5, || -> i32 { panic!("a bug") });
        assert_eq!(got, 5);
        assert!(broken());
        // Broken: the body is not run any more.
        let mut ran = false;
        assert_eq!(
            entry(Entry::Take, 9, || {
                ran = true;
                1
            }),
            9
        );
        assert!(!ran);
        assert_eq!(
            Entry::from_name("neighbor_counts"),
            Some(Entry::NeighborCounts)
        );
        assert_eq!(Entry::from_name("nope"), None);
        assert!(ALL.iter().all(|e| Entry::from_name(e.name()) == Some(*e)));
    }
}
