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

/// CPUID's extended leaf of advanced power management, whose EDX bit 8 is "Invariant TSC".
pub const CPUID_POWER_LEAF: u32 = 0x8000_0007;
/// The "Invariant TSC" bit of [`CPUID_POWER_LEAF`]'s EDX.
pub const INVARIANT_TSC_BIT: u32 = 1 << 8;

/// **The one rule for an invariant TSC**, which every clock of commperf follows: this benchmark
/// clock, and the MPI interposer's event clock (`crates/pmpi/csrc/tsc.h` implements it in C,
/// and a test of `commperf-pmpi` feeds both the same inputs).
///
/// The TSC is invariant — it ticks at one constant rate in every P-, C- and T-state, so a
/// calibration holds for the whole run — when the CPU says so: CPUID reports at least
/// [`CPUID_POWER_LEAF`] as its highest extended leaf (`max_extended_leaf`, EAX of leaf
/// 0x8000_0000) and that leaf's EDX (`power_edx`) has [`INVARIANT_TSC_BIT`] set. Linux's
/// `constant_tsc` and `nonstop_tsc` flags in /proc/cpuinfo come from this same bit (the kernel
/// sets both from it; `constant_tsc` alone, from the CPU model, is not enough), and CPUID needs
/// no file, so the C side can follow the rule at `MPI_Init` exactly.
pub fn tsc_invariant_from(max_extended_leaf: u32, power_edx: u32) -> bool {
    max_extended_leaf >= CPUID_POWER_LEAF && power_edx & INVARIANT_TSC_BIT != 0
}

/// Whether this CPU's TSC is invariant, by [`tsc_invariant_from`]; false off x86_64.
pub fn invariant_tsc() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__cpuid;
        // SAFETY: CPUID exists on every x86_64 CPU and only reads identification registers; a
        // leaf above the highest one is never asked for. (The intrinsic is an `unsafe fn` in the
        // oldest Rust this workspace supports and safe in newer ones, hence the allow.)
        #[allow(unused_unsafe)]
        let (max, edx) = unsafe {
            let max = __cpuid(0x8000_0000).eax;
            let edx = if max >= CPUID_POWER_LEAF {
                __cpuid(CPUID_POWER_LEAF).edx
            } else {
                0
            };
            (max, edx)
        };
        tsc_invariant_from(max, edx)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The rule's answers (beside it rather than in the file's `tests`, so that its changes stay in
/// one place); `commperf-pmpi`'s `c_headers` test holds the C side to the same answers.
#[cfg(test)]
mod tsc_rule {
    use super::*;

    #[test]
    fn invariant_only_with_the_leaf_and_its_bit() {
        assert!(tsc_invariant_from(0x8000_0008, 0x100));
        assert!(tsc_invariant_from(CPUID_POWER_LEAF, u32::MAX));
        // The bit without the leaf is whatever the CPU left in EDX: not an answer.
        assert!(!tsc_invariant_from(0x8000_0006, 0x100));
        assert!(!tsc_invariant_from(0, u32::MAX));
        // The leaf without the bit, or with only its neighbours (bit 7 is hardware P-state
        // control, bit 9 a core performance boost).
        assert!(!tsc_invariant_from(0x8000_0008, 0));
        assert!(!tsc_invariant_from(0x8000_0008, !0x100));
        assert!(!tsc_invariant_from(0x8000_0008, 0x80 | 0x200));
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
