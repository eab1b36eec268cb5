//! The benchmark clock: a calibrated invariant TSC where the CPU has one, else CLOCK_MONOTONIC.
//!
//! Timed loops read raw ticks ([`Clock::now`]) and convert after the loop, so the conversion's
//! floating point never sits between two measured operations. Calibration compares the TSC with
//! CLOCK_MONOTONIC over a few short intervals and keeps the median, so one preemption does not
//! skew the frequency.

use std::time::{Duration, Instant};

/// Which counter the clock reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ClockSource {
    /// Invariant time-stamp counter at `ghz` ticks per ns.
    Tsc { ghz: f64 },
    /// CLOCK_MONOTONIC, ticks are nanoseconds.
    Monotonic,
}

/// A calibrated clock.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    source: ClockSource,
    epoch: Instant,
    ns_per_tick: f64,
    cost_ns: f64,
}

fn invariant_tsc() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else {
            return false;
        };
        let flags = info.lines().find(|l| l.starts_with("flags")).unwrap_or("");
        let has = |f: &str| flags.split_whitespace().any(|x| x == f);
        has("constant_tsc") && has("nonstop_tsc")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A bare `rdtsc`, without a fencing `lfence`: the fence nearly doubles the read's cost on
/// these CPUs (≈ 22 ns against ≈ 13 ns), and timed loops take each sample as the difference of two
/// reads made at the same point of consecutive iterations, so the few cycles by which the read may
/// run ahead of the preceding loads shift both ends alike and cancel out.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn rdtsc() -> u64 {
    // SAFETY: rdtsc is available on every x86_64 CPU and has no memory effects.
    unsafe { std::arch::x86_64::_rdtsc() }
}

impl Clock {
    /// Calibrates the best clock available (about 30 ms).
    pub fn calibrate() -> Clock {
        Self::calibrate_with(invariant_tsc())
    }

    /// A CLOCK_MONOTONIC clock, whatever the CPU has.
    pub fn monotonic() -> Clock {
        Self::calibrate_with(false)
    }

    fn calibrate_with(use_tsc: bool) -> Clock {
        let epoch = Instant::now();
        let mut c = Clock {
            source: ClockSource::Monotonic,
            epoch,
            ns_per_tick: 1.0,
            cost_ns: 0.0,
        };
        #[cfg(target_arch = "x86_64")]
        if use_tsc {
            let ghz: Vec<f64> = (0..5)
                .map(|_| {
                    let (t0, c0) = (Instant::now(), rdtsc());
                    while t0.elapsed() < Duration::from_millis(6) {
                        std::hint::spin_loop();
                    }
                    let (c1, t1) = (rdtsc(), Instant::now());
                    (c1 - c0) as f64 / (t1 - t0).as_nanos() as f64
                })
                .collect();
            // The median of the five rates (commperf-stats' one definition; an odd count, so
            // it is the middle rate): one window disturbed by a preemption does not move it.
            // None only for all-NaN rates, which the check below refuses as well.
            let g = commperf_stats::median(&ghz).unwrap_or(f64::NAN);
            if g.is_finite() && g > 0.05 {
                c.source = ClockSource::Tsc { ghz: g };
                c.ns_per_tick = 1.0 / g;
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = use_tsc;
        c.cost_ns = c.measure_cost();
        c
    }

    fn measure_cost(&self) -> f64 {
        const N: u64 = 200_000;
        let t0 = self.now();
        let mut x = 0u64;
        for _ in 0..N {
            x = x.wrapping_add(self.now());
        }
        std::hint::black_box(x);
        self.ticks_to_ns(self.now() - t0) / N as f64
    }

    /// Raw ticks; only differences mean anything.
    #[inline(always)]
    pub fn now(&self) -> u64 {
        match self.source {
            #[cfg(target_arch = "x86_64")]
            ClockSource::Tsc { .. } => rdtsc(),
            _ => self.epoch.elapsed().as_nanos() as u64,
        }
    }

    /// Converts a tick difference to nanoseconds.
    #[inline]
    pub fn ticks_to_ns(&self, ticks: u64) -> f64 {
        ticks as f64 * self.ns_per_tick
    }

    pub fn source(&self) -> ClockSource {
        self.source
    }

    /// Mean cost of one [`Clock::now`], measured back to back at calibration.
    pub fn cost_ns(&self) -> f64 {
        self.cost_ns
    }

    /// The result-file description of this clock.
    pub fn timer_info(&self) -> commperf_core::TimerInfo {
        let (source, tsc_ghz) = match self.source {
            ClockSource::Tsc { ghz } => ("tsc", Some(ghz)),
            ClockSource::Monotonic => ("monotonic", None),
        };
        commperf_core::TimerInfo {
            source: source.into(),
            tsc_ghz,
            cost_ns: self.cost_ns,
        }
    }
}

/// What timed loops read and wait on: the real clock, or a model transport's virtual clock.
pub trait Timer {
    /// Now, in nanoseconds since an arbitrary origin.
    fn now_ns(&self) -> f64;
    /// Busy-waits `ns` nanoseconds (the CPU stays busy, as the PRTT method requires).
    fn spin_ns(&self, ns: f64);

    /// A time stamp another process on this host can read with [`Timer::stamp_ns`] (the
    /// invariant TSC's raw count: one counter for every core), or None where this timer's
    /// readings mean nothing outside it (a monotonic clock's per-process epoch, virtual time).
    fn stamp(&self) -> Option<u64> {
        None
    }

    /// A [`Timer::stamp`], taken by this or another process, on this timer's scale.
    fn stamp_ns(&self, stamp: u64) -> f64 {
        stamp as f64
    }
}

impl Timer for Clock {
    #[inline]
    fn now_ns(&self) -> f64 {
        self.ticks_to_ns(self.now())
    }

    #[inline]
    fn stamp(&self) -> Option<u64> {
        matches!(self.source, ClockSource::Tsc { .. }).then(|| self.now())
    }

    #[inline]
    fn stamp_ns(&self, stamp: u64) -> f64 {
        self.ticks_to_ns(stamp)
    }

    fn spin_ns(&self, ns: f64) {
        let start = self.now();
        while self.ticks_to_ns(self.now() - start) < ns {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibrated_clock_agrees_with_monotonic_time() {
        let c = Clock::calibrate();
        // Each reading of the clock is bracketed by two of the monotonic clock, retried until
        // the bracket is under 20 µs: on a loaded machine the thread can be preempted between
        // two reads for milliseconds, which would be the whole 2 % of the interval. The
        // remaining uncertainty (2 × 20 µs of 50 ms) is 0.08 %.
        let pair = || loop {
            let (a, k, b) = (Instant::now(), c.now(), Instant::now());
            if b - a < Duration::from_micros(20) {
                return (a + (b - a) / 2, k);
            }
        };
        let (t0, k0) = pair();
        // The interval measured by both clocks.
        std::thread::sleep(Duration::from_millis(50));
        let (t1, k1) = pair();
        let ns = c.ticks_to_ns(k1 - k0);
        let want = (t1 - t0).as_nanos() as f64;
        assert!(
            (ns - want).abs() / want < 0.02,
            "clock says {ns} ns, monotonic {want} ns"
        );
        assert!(
            c.cost_ns() > 0.0 && c.cost_ns() < 2000.0,
            "cost {}",
            c.cost_ns()
        );
    }

    #[test]
    fn monotonic_clock_ticks_are_nanoseconds() {
        let c = Clock::monotonic();
        assert_eq!(c.source(), ClockSource::Monotonic);
        assert_eq!(c.ticks_to_ns(1234), 1234.0);
    }
}
