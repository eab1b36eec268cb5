//! The cost an extended test reports: the variant's p50 less its baseline's, judged against the
//! noise of both, so that a difference the measurement cannot resolve is never printed as a
//! cost, and a variant "faster than free" is never printed at all.
//!
//! Each test of Kutluğ's (2000) extended suite is the latency test with one thing changed; its cost
//! is the difference from the standard latency. On a shared VM two latency runs a second apart
//! can differ by more than a small cost (a vCPU moved, a neighbour woke up), and on TCP with
//! large messages the p50 itself jumps between two modes. So the baseline is measured before
//! and after the variants and its drift counts as noise; a difference within two bands of the
//! combined noise is no measurable cost (given as 0 when below zero); a variant below its
//! baseline beyond the noise is measured again, back to back with a fresh baseline, and left out
//! with a note if it stays there — unless the variant can really save time (registered memory
//! used in place saves the copies the baseline makes; a completion queue saves the sweep), in
//! which case the negative cost is a saving and is reported as one.

use commperf_core::Row;
use commperf_stats::noise::NOISE_BANDS;

/// The standard latency a variant is judged against, with its noise (standard uncertainty).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Baseline {
    pub p50_us: f64,
    pub noise_us: f64,
}

impl Baseline {
    /// One measurement's p50 and its noise.
    pub fn of(row: &Row) -> Option<Baseline> {
        Some(Baseline {
            p50_us: row.p50_us()?,
            noise_us: row
                .percentiles()
                .and_then(|p| p.p50_noise_us)
                .unwrap_or(0.0),
        })
    }

    /// The baseline measured before and after the variants: the faster of the two (a
    /// disturbance, such as another process taking the CPU, only ever adds time: under a CPU
    /// hog one of them can come out 50× slower, and a mean would carry that into every cost),
    /// its noise grown by half their difference (what the machine drifted while the variants
    /// ran).
    pub fn around(before: &Row, after: &Row) -> Option<Baseline> {
        let (a, b) = (Baseline::of(before)?, Baseline::of(after)?);
        let faster = if b.p50_us < a.p50_us { b } else { a };
        Some(Baseline {
            p50_us: faster.p50_us,
            noise_us: faster.noise_us.hypot((a.p50_us - b.p50_us) / 2.0),
        })
    }
}

/// Whether a variant can be faster than its baseline for a physical reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saving {
    /// It does less work than the baseline (no copy, no sweep): a negative cost is a saving.
    Possible,
    /// It does the baseline's work and more: below the baseline is a measurement error.
    Impossible,
}

/// What judging a cost found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// `cost_us` holds the cost (or is absent for want of figures).
    Done,
    /// The variant came out below its baseline by `by_us`, beyond the noise band `band_us`,
    /// where no saving is possible: `cost_us` is left out; measure both again.
    BelowBaseline { by_us: f64, band_us: f64 },
}

/// Sets `baseline_p50_us`, `cost_us` and `cost_noise_us` of a variant's row (an extended
/// benchmark's; any other row has no cost and is left as it is). `last`: no further measurement
/// will be made, so a cost below its baseline beyond noise gets its note.
pub fn judge(row: &mut Row, base: Option<Baseline>, saving: Saving, last: bool) -> Verdict {
    let Some(c) = row.cost_mut() else {
        return Verdict::Done;
    };
    c.baseline_p50_us = base.map(|b| b.p50_us);
    let (Some(v), Some(b)) = (c.pct.p50_us, base) else {
        (c.cost_us, c.cost_noise_us) = (None, None);
        return Verdict::Done;
    };
    let raw = v - b.p50_us;
    let band = NOISE_BANDS * c.pct.p50_noise_us.unwrap_or(0.0).hypot(b.noise_us);
    c.cost_noise_us = Some(band);
    c.cost_us = if raw >= 0.0 {
        Some(raw)
    } else if raw >= -band {
        Some(0.0)
    } else if saving == Saving::Possible {
        Some(raw)
    } else {
        None
    };
    if c.cost_us.is_some() {
        return Verdict::Done;
    }
    if last {
        row.notes.push(format!(
            "p50 {v:.3} µs is {:.3} µs below its baseline {:.3} µs, beyond the noise (±{band:.3} µs), even measured again: no cost can be negative; left out (the two runs met different conditions)",
            -raw, b.p50_us
        ));
    }
    Verdict::BelowBaseline {
        by_us: -raw,
        band_us: band,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use commperf_core::{Benchmark, Mode, TransportKind};

    fn row(p50: f64, noise: f64) -> Row {
        let mut r = Row::new(
            Benchmark::Noncontig,
            TransportKind::Tcp,
            Mode::Poll,
            1 << 22,
        );
        if let Some(p) = r.percentiles_mut() {
            (p.p50_us, p.p50_noise_us) = (Some(p50), Some(noise));
        }
        r
    }

    #[test]
    fn a_cost_within_noise_is_no_cost_and_beyond_it_below_zero_is_an_error() {
        let base = Baseline::of(&row(817.66, 3.0));
        // +100.91 µs: a cost.
        let mut r = row(918.57, 4.0);
        assert_eq!(
            judge(&mut r, base, Saving::Impossible, false),
            Verdict::Done
        );
        assert!((r.cost_us().unwrap() - 100.91).abs() < 1e-9);
        assert_eq!(r.cost().unwrap().cost_noise_us, Some(10.0), "2·√(3² + 4²)");
        // −3 µs within ±10 µs: no measurable cost, shown as 0.
        let mut r = row(814.66, 4.0);
        assert_eq!(
            judge(&mut r, base, Saving::Impossible, false),
            Verdict::Done
        );
        assert_eq!(r.cost_us(), Some(0.0));
        // −198 µs: measure again; nothing printed meanwhile ...
        let mut r = row(619.66, 4.0);
        let v = judge(&mut r, base, Saving::Impossible, false);
        assert!(matches!(v, Verdict::BelowBaseline { by_us, .. } if (by_us - 198.0).abs() < 1e-9));
        assert_eq!((r.cost_us(), r.notes.len()), (None, 0));
        // ... and if it stays there, left out with a note.
        judge(&mut r, base, Saving::Impossible, true);
        assert_eq!(r.cost_us(), None);
        assert!(
            r.notes[0].starts_with("p50 619.660 µs is 198.000 µs below its baseline 817.660 µs")
        );
        // Registered memory used in place saves the baseline's copies: a saving, reported.
        let mut r = row(619.66, 4.0);
        assert_eq!(judge(&mut r, base, Saving::Possible, false), Verdict::Done);
        assert!((r.cost_us().unwrap() + 198.0).abs() < 1e-9);
    }

    #[test]
    fn the_baselines_drift_is_noise() {
        // 810 ± 3 before, 830 ± 3 after: the faster, 810, with √(3² + 10²) ≈ 10.4 µs of noise.
        let b = Baseline::around(&row(810.0, 3.0), &row(830.0, 3.0)).unwrap();
        assert_eq!(b.p50_us, 810.0);
        assert!((b.noise_us - 109f64.sqrt()).abs() < 1e-9, "{b:?}");
        // So a variant at 795 is within noise of it (band 2·√(1 + 109) ≈ 21 µs) ...
        let mut r = row(795.0, 1.0);
        assert_eq!(
            judge(&mut r, Some(b), Saving::Impossible, true),
            Verdict::Done
        );
        assert_eq!(r.cost_us(), Some(0.0));
        // ... and one disturbed baseline (a CPU hog took its CPU) does not move the other.
        let b = Baseline::around(&row(4000.0, 900.0), &row(78.0, 0.5)).unwrap();
        assert_eq!(b.p50_us, 78.0);
        let mut r = row(126.0, 0.5);
        judge(&mut r, Some(b), Saving::Impossible, true);
        assert_eq!(r.cost_us(), Some(48.0));
        assert!(
            r.cost().unwrap().cost_noise_us.unwrap() > 48.0,
            "the drift makes it uncertain: {r:?}"
        );
    }
}
