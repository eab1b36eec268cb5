//! Waiting for the peer without owning a core forever.
//!
//! Busy-polling pairs oversubscribe a 2-core machine as soon as anything else runs, so a poller
//! spins a bounded number of times and then yields on every further check. The slow path also
//! checks the idle deadline and the peer's liveness, both too costly for the spin phase.

use std::time::{Duration, Instant};

/// Spins before the first yield. About 20–50 µs of `pause` on current x86 cores: longer than any
/// one-way latency worth measuring, far shorter than a scheduler tick.
pub const SPIN_LIMIT: u32 = 1 << 14;
/// Checks between two liveness checks once yielding.
const CHECK_EVERY: u32 = 64;

/// One wait. Create it when the condition is first found false, call [`Backoff::snooze`] each
/// time it is found false again.
#[derive(Debug)]
pub struct Backoff {
    spins: u32,
    since_check: u32,
    started: Option<Instant>,
    timeout: Duration,
}

/// Why a checked wait gave up: the idle timeout, or the check's own error.
#[derive(Debug)]
pub enum Stopped<E> {
    TimedOut,
    Gone(E),
}

/// Why a wait gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitStop {
    /// The idle timeout passed.
    TimedOut,
    /// The liveness probe said the peer is gone.
    PeerGone,
}

impl Backoff {
    pub fn new(timeout: Duration) -> Self {
        Backoff {
            spins: 0,
            since_check: 0,
            started: None,
            timeout,
        }
    }

    /// Waits a little. `alive` is consulted now and then on the slow path.
    #[inline]
    pub fn snooze(&mut self, alive: impl FnOnce() -> bool) -> Result<(), WaitStop> {
        if self.spins < SPIN_LIMIT {
            self.spins += 1;
            std::hint::spin_loop();
            return Ok(());
        }
        self.slow(alive)
    }

    /// [`Backoff::snooze`] with a liveness check that says why the peer is gone.
    #[inline]
    pub fn snooze_checked<E>(
        &mut self,
        check: impl FnOnce() -> Result<(), E>,
    ) -> Result<(), Stopped<E>> {
        let mut gone = None;
        let r = self.snooze(|| match check() {
            Ok(()) => true,
            Err(e) => {
                gone = Some(e);
                false
            }
        });
        match r {
            Ok(()) => Ok(()),
            Err(WaitStop::TimedOut) => Err(Stopped::TimedOut),
            Err(WaitStop::PeerGone) => Err(Stopped::Gone(gone.expect("set with PeerGone"))),
        }
    }

    #[cold]
    fn slow(&mut self, alive: impl FnOnce() -> bool) -> Result<(), WaitStop> {
        std::thread::yield_now();
        self.since_check += 1;
        if self.since_check < CHECK_EVERY {
            return Ok(());
        }
        self.since_check = 0;
        let started = *self.started.get_or_insert_with(Instant::now);
        if !alive() {
            return Err(WaitStop::PeerGone);
        }
        if started.elapsed() > self.timeout {
            return Err(WaitStop::TimedOut);
        }
        Ok(())
    }
}
