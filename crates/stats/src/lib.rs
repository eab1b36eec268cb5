//! Sample statistics for commperf: order statistics of timing samples ([`Summary`],
//! [`percentile`], [`median`]), rank correlation ([`spearman`]), the noise of a figure and the
//! judgement of a value against it ([`noise`]), ordinary least-squares line fits ([`fit_line`]);
//! and the value [`axis`]
//! of a chart (linear, or log10 where the values span decades), shared by every chart that
//! plots measured numbers.
//!
//! Every benchmark turns a vector of per-iteration timings into the same handful of figures
//! (p50, p90, p99, min, max, mean), and every model (`Tcom` pieces, LogGP `g + G·s`, pipeline
//! β + P·τ) is a straight line fitted to measurements. Both live here, in a crate that needs
//! nothing but `serde`, so `bench`, `predict` and `report` agree on one definition of "p99" and
//! one definition of "the fit", and so that each can be checked against hand-computed numbers.
//!
//! Shaped around slices of `f64` so that the timed loop only has to store raw samples (no
//! allocation or arithmetic beyond a store while timing); everything here runs afterwards.
//!
//! # Conventions
//!
//! * **Percentiles** use linear interpolation between closest ranks — Hyndman & Fan's
//!   definition 7, the default of R's `quantile`, NumPy's `percentile` and Excel's
//!   `PERCENTILE.INC`: for `n` sorted samples `x[0..n]` and `q` in percent, let
//!   `h = (n − 1) · q / 100`; the result is `x[⌊h⌋] + (h − ⌊h⌋) · (x[⌊h⌋ + 1] − x[⌊h⌋])`.
//!   So the p50 of `[1, 2, 3, 4]` is 2.5, p0 is the minimum and p100 the maximum.
//! * **The median** is that p50: the middle value of an odd count, the mean of the two middle
//!   values of an even one ([`median`]). Every median commperf prints is this one; where a
//!   caller needs an observed element instead (the middle row of some rounds), it says so.
//! * **Empty input** gives `None`, never a panic or a NaN: a figure of nothing is absent.
//! * **NaN samples are excluded**, not treated as errors: a NaN is "no measurement", and one bad
//!   sample should not discard a run. Exclusion is visible: [`Summary::n`] counts only the samples
//!   used, so a caller that must refuse NaNs compares it with the number it passed in. Infinities
//!   are ordinary (ordered) values.
//! * **Ordering** is [`f64::total_cmp`], which orders every `f64` (NaNs with a positive sign
//!   after `+∞`, negative ones before `−∞`), so sorting never panics and the NaNs of a sorted
//!   slice sit only at its two ends, where they are trimmed off.

use serde::{Deserialize, Serialize};

pub mod axis;
mod correlation;
pub mod noise;
pub use correlation::{ranks, spearman};
pub use noise::{fit_line_uncertain, median_uncertainty, NonNegative, UncertainFit};

/// Order statistics and mean of a set of samples, in the samples' own unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Summary {
    /// Number of samples summarized (NaN samples excluded).
    pub n: usize,
    pub min: f64,
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median (R-7 interpolation, like every percentile here).
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
}

impl Summary {
    /// Summarizes samples already sorted ascending by [`f64::total_cmp`] (as
    /// [`Summary::from_unsorted`] leaves them). NaNs at either end are excluded.
    ///
    /// Returns `None` when no non-NaN sample remains. If the slice is not sorted the percentiles
    /// are meaningless (checked only in debug builds).
    pub fn from_sorted(sorted: &[f64]) -> Option<Summary> {
        let s = trim_nan(sorted);
        debug_assert!(
            s.windows(2).all(|w| w[0].total_cmp(&w[1]).is_le()),
            "Summary::from_sorted needs ascending input"
        );
        let (&min, &max) = (s.first()?, s.last()?);
        Some(Summary {
            n: s.len(),
            min,
            max,
            mean: s.iter().sum::<f64>() / s.len() as f64,
            p50: interpolate(s, 50.0),
            p90: interpolate(s, 90.0),
            p99: interpolate(s, 99.0),
        })
    }

    /// Sorts `samples` in place by [`f64::total_cmp`], then summarizes them as
    /// [`Summary::from_sorted`] does. Returns `None` when no non-NaN sample is given.
    pub fn from_unsorted(samples: &mut [f64]) -> Option<Summary> {
        samples.sort_unstable_by(f64::total_cmp);
        Summary::from_sorted(samples)
    }
}

/// The `q`-th percentile (`q` in percent, `0.0..=100.0`) of samples sorted ascending by
/// [`f64::total_cmp`], by linear interpolation between closest ranks (R-7, NumPy's default).
/// NaNs at either end of the slice are excluded.
///
/// Returns `None` for an empty (or all-NaN) slice and for `q` outside `0..=100` or NaN.
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    let s = trim_nan(sorted);
    if s.is_empty() || !(0.0..=100.0).contains(&q) {
        return None;
    }
    Some(interpolate(s, q))
}

/// The median of `samples` (any order; the slice is left as it is): the middle value of an odd
/// count, the mean of the two middle values of an even one — the 50th [`percentile`] by its
/// definition, computed as `(a + b) / 2`, the correctly rounded mean of the two, so it may differ
/// from `percentile(…, 50.0)`'s `a + ½·(b − a)` in the last bit. NaN samples are excluded (as
/// everywhere here); infinities are ordinary values.
///
/// Returns `None` for an empty or all-NaN slice, and when the two middle values are −∞ and +∞
/// (their mean is undefined).
pub fn median(samples: &[f64]) -> Option<f64> {
    let mut s = samples.to_vec();
    s.sort_unstable_by(f64::total_cmp);
    median_sorted(&s)
}

/// [`median`] of samples already sorted ascending by [`f64::total_cmp`] (NaNs at either end are
/// excluded), for callers that keep the sorted slice for other order statistics.
pub fn median_sorted(sorted: &[f64]) -> Option<f64> {
    let s = trim_nan(sorted);
    debug_assert!(
        s.windows(2).all(|w| w[0].total_cmp(&w[1]).is_le()),
        "median_sorted needs ascending input"
    );
    let n = s.len();
    let hi = *s.get(n / 2)?;
    if n % 2 == 1 {
        return Some(hi);
    }
    let lo = s[n / 2 - 1];
    // Equal neighbours (two infinities included) need no arithmetic; −∞ + ∞ would be NaN.
    let m = if lo == hi { hi } else { (lo + hi) / 2.0 };
    (!m.is_nan()).then_some(m)
}

/// R-7 interpolation on a non-empty, NaN-free, sorted slice; `q` in `0..=100`.
fn interpolate(s: &[f64], q: f64) -> f64 {
    // (n − 1)·q is exact for any realistic n, so the only rounding is the one division.
    let h = (s.len() - 1) as f64 * q / 100.0;
    // h is in 0..=n−1, so the truncation is exact and in range.
    let lo = (h.floor() as usize).min(s.len() - 1);
    let frac = h - lo as f64;
    let (a, b) = (s[lo], s.get(lo + 1).copied().unwrap_or(s[lo]));
    // Equal neighbours (including two infinities) need no arithmetic: ∞ − ∞ would be NaN.
    if frac == 0.0 || a == b {
        a
    } else {
        a + frac * (b - a)
    }
}

/// The part of a `total_cmp`-sorted slice between its leading and trailing NaNs.
fn trim_nan(sorted: &[f64]) -> &[f64] {
    let start = sorted
        .iter()
        .position(|v| !v.is_nan())
        .unwrap_or(sorted.len());
    let end = sorted
        .iter()
        .rposition(|v| !v.is_nan())
        .map_or(start, |i| i + 1);
    &sorted[start..end]
}

/// A straight line `y = intercept + slope · x` fitted by ordinary least squares.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LinearFit {
    pub intercept: f64,
    pub slope: f64,
    /// Coefficient of determination, `1 − SS_res / SS_tot`, in `0..=1`. When every `y` is equal
    /// the (horizontal) line fits exactly and `r2` is 1.
    pub r2: f64,
}

impl LinearFit {
    /// The fitted line's value at `x`.
    pub fn at(&self, x: f64) -> f64 {
        self.intercept + self.slope * x
    }
}

/// Fits `y = intercept + slope · x` to the points `(xs[i], ys[i])` by ordinary least squares.
///
/// Returns `None` when the slices differ in length, hold fewer than two points, contain a
/// non-finite value, or when every `x` is the same (the slope is then undefined).
pub fn fit_line(xs: &[f64], ys: &[f64]) -> Option<LinearFit> {
    fit_line_weighted(xs, ys, &vec![1.0; xs.len()])
}

/// Weighted least squares: minimizes Σ wᵢ (yᵢ − a − b·xᵢ)². With wᵢ = 1/yᵢ² this fits relative
/// errors, which is what a size ladder from 1 B to megabytes needs (plain least squares would
/// let the largest sizes decide the intercept alone). `r2` is the weighted coefficient of
/// determination. None as for [`fit_line`], or for weights that are negative, non-finite or all 0.
pub fn fit_line_weighted(xs: &[f64], ys: &[f64], ws: &[f64]) -> Option<LinearFit> {
    let n = xs.len();
    if n != ys.len() || n != ws.len() || n < 2 {
        return None;
    }
    if xs.iter().chain(ys).chain(ws).any(|v| !v.is_finite()) || ws.iter().any(|&w| w < 0.0) {
        return None;
    }
    // Compared exactly: centred sums of equal values can leave a tiny non-zero variance.
    if xs.iter().all(|&x| x == xs[0]) {
        return None;
    }
    let sw: f64 = ws.iter().sum();
    if sw <= 0.0 {
        return None;
    }
    let mx = xs.iter().zip(ws).map(|(x, w)| x * w).sum::<f64>() / sw;
    let my = ys.iter().zip(ws).map(|(y, w)| y * w).sum::<f64>() / sw;
    // Centred sums: far better conditioned than Σx² − n·x̄² for sizes up to 2^30 bytes.
    let (mut sxx, mut sxy, mut syy) = (0.0, 0.0, 0.0);
    for ((&x, &y), &w) in xs.iter().zip(ys).zip(ws) {
        let (dx, dy) = (x - mx, y - my);
        sxx += w * dx * dx;
        sxy += w * dx * dy;
        syy += w * dy * dy;
    }
    if sxx <= 0.0 || !sxx.is_finite() {
        return None;
    }
    let slope = sxy / sxx;
    let r2 = if syy == 0.0 {
        1.0
    } else {
        // For a least-squares line with intercept, 1 − SS_res/SS_tot = Sxy² / (Sxx·Syy).
        (sxy * sxy / (sxx * syy)).clamp(0.0, 1.0)
    };
    Some(LinearFit {
        intercept: my - slope * mx,
        slope,
        r2,
    })
}

/// One piece of a piecewise-linear fit: points `start..end` (indices into the sorted input).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Segment {
    pub start: usize,
    pub end: usize,
    /// x of the first and last point of the piece.
    pub from_x: f64,
    pub to_x: f64,
    pub fit: LinearFit,
    /// Root-mean-square relative residual of the piece's points.
    pub rel_rms: f64,
}

fn rel_weights(ys: &[f64]) -> Vec<f64> {
    ys.iter()
        .map(|&y| if y != 0.0 { 1.0 / (y * y) } else { 1.0 })
        .collect()
}

fn segment(xs: &[f64], ys: &[f64], start: usize, end: usize) -> Option<Segment> {
    let (x, y) = (&xs[start..end], &ys[start..end]);
    let fit = fit_line_weighted(x, y, &rel_weights(y))?;
    let sse: f64 = x
        .iter()
        .zip(y)
        .map(|(&xi, &yi)| {
            let r = yi - fit.at(xi);
            if yi != 0.0 {
                (r / yi).powi(2)
            } else {
                r * r
            }
        })
        .sum();
    Some(Segment {
        start,
        end,
        from_x: x[0],
        to_x: x[x.len() - 1],
        fit,
        rel_rms: (sse / x.len() as f64).sqrt(),
    })
}

fn sse(s: &Segment) -> f64 {
    s.rel_rms * s.rel_rms * (s.end - s.start) as f64
}

/// Piecewise-linear fit with breakpoints found automatically (binary segmentation): starting
/// from one line over all points (sorted by x), the piece whose best split lowers the relative
/// squared error most is split, as long as that piece fits worse than `tolerance` (relative RMS
/// residual, e.g. 0.02) and the split removes at least three quarters of its error. Every piece
/// keeps at least `min_points` (≥ 2) points; at most `max_pieces` pieces. Breakpoints are where
/// a protocol changes (eager → rendezvous, ring → single copy): the cost line jumps or bends.
pub fn piecewise_fit(
    xs: &[f64],
    ys: &[f64],
    max_pieces: usize,
    min_points: usize,
    tolerance: f64,
) -> Option<Vec<Segment>> {
    let min_points = min_points.max(2);
    if xs.len() != ys.len() || xs.windows(2).any(|w| w[0] > w[1]) {
        return None;
    }
    let mut pieces = vec![segment(xs, ys, 0, xs.len())?];
    while pieces.len() < max_pieces.max(1) {
        let mut best: Option<(usize, Segment, Segment, f64)> = None;
        for (i, p) in pieces.iter().enumerate() {
            if p.rel_rms <= tolerance || p.end - p.start < 2 * min_points {
                continue;
            }
            for k in p.start + min_points..=p.end - min_points {
                let (Some(a), Some(b)) = (segment(xs, ys, p.start, k), segment(xs, ys, k, p.end))
                else {
                    continue;
                };
                let gain = sse(p) - sse(&a) - sse(&b);
                if gain >= 0.75 * sse(p) && best.as_ref().is_none_or(|bb| gain > bb.3) {
                    best = Some((i, a, b, gain));
                }
            }
        }
        let Some((i, a, b, _)) = best else { break };
        pieces.splice(i..=i, [a, b]);
    }
    Some(pieces)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn piecewise_fit_finds_a_protocol_change_exactly() {
        // y = 0.5 + 0.001·x up to 8192, then 4.0 + 0.0004·x (a rendezvous: dearer start, faster bytes).
        let xs: Vec<f64> = (0..=22).map(|p| (1u64 << p) as f64).collect();
        let ys: Vec<f64> = xs
            .iter()
            .map(|&x| {
                if x <= 8192.0 {
                    0.5 + 0.001 * x
                } else {
                    4.0 + 0.0004 * x
                }
            })
            .collect();
        let p = piecewise_fit(&xs, &ys, 3, 2, 0.01).unwrap();
        assert_eq!(p.len(), 2, "{p:?}");
        assert_eq!((p[0].to_x, p[1].from_x), (8192.0, 16384.0));
        assert!(close(p[0].fit.intercept, 0.5) && close(p[0].fit.slope, 0.001));
        assert!(close(p[1].fit.intercept, 4.0) && close(p[1].fit.slope, 0.0004));
        // A single line fits a single protocol: no breakpoint is invented.
        let ys1: Vec<f64> = xs.iter().map(|&x| 0.5 + 0.001 * x).collect();
        assert_eq!(piecewise_fit(&xs, &ys1, 3, 2, 0.01).unwrap().len(), 1);
    }

    #[test]
    fn weighted_fit_follows_relative_errors() {
        // The intercept of a line over 1 B … 1 MiB is decided by the small sizes once weighted.
        let xs = [1.0, 1024.0, 1048576.0];
        let ys = [1.0, 2.0, 1000.0];
        let w = fit_line_weighted(&xs, &ys, &[1.0, 0.25, 1e-6]).unwrap();
        let plain = fit_line(&xs, &ys).unwrap();
        assert!((w.intercept - 1.0).abs() < (plain.intercept - 1.0).abs());
        assert!(fit_line_weighted(&xs, &ys, &[1.0, -1.0, 1.0]).is_none());
        assert!(fit_line_weighted(&xs, &ys, &[0.0, 0.0, 0.0]).is_none());
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn percentiles_interpolate_between_closest_ranks() {
        let s = [1.0, 2.0, 3.0, 4.0];
        // h = 3 · 0.5 = 1.5 → 2 + 0.5 · (3 − 2)
        assert_eq!(percentile(&s, 50.0), Some(2.5));
        // h = 3 · 0.25 = 0.75 → 1 + 0.75
        assert_eq!(percentile(&s, 25.0), Some(1.75));
        assert_eq!(percentile(&s, 0.0), Some(1.0));
        assert_eq!(percentile(&s, 100.0), Some(4.0));
        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        // h = 9 · 0.9 = 8.1 → 9 + 0.1 · (10 − 9); h = 9 · 0.99 = 8.91 → 9.91
        assert_eq!(percentile(&ten, 90.0), Some(9.1));
        assert!(close(percentile(&ten, 99.0).unwrap(), 9.91));
        assert_eq!(percentile(&ten, 50.0), Some(5.5));
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
    }

    #[test]
    fn percentile_refuses_empty_input_and_bad_q() {
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[f64::NAN], 50.0), None);
        assert_eq!(percentile(&[1.0], -0.1), None);
        assert_eq!(percentile(&[1.0], 100.1), None);
        assert_eq!(percentile(&[1.0], f64::NAN), None);
    }

    #[test]
    fn median_of_nothing_is_none() {
        assert_eq!(median(&[]), None);
        assert_eq!(
            median(&[f64::NAN, -f64::NAN]),
            None,
            "all NaN: nothing measured"
        );
        assert_eq!(median_sorted(&[]), None);
        // The mean of −∞ and +∞ is undefined: absent, not NaN.
        assert_eq!(median(&[f64::INFINITY, f64::NEG_INFINITY]), None);
    }

    #[test]
    fn median_of_one_odd_and_even_counts() {
        assert_eq!(median(&[7.25]), Some(7.25));
        // Sorted 1, 2, 3: the middle one.
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        // Sorted 1, 2, 3, 4: (2 + 3) / 2.
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        // Sorted 10, 20: (10 + 20) / 2 = 15, not the upper 20 nor the lower 10.
        assert_eq!(median(&[20.0, 10.0]), Some(15.0));
        // Ties: sorted 5, 5, 5, 9 → (5 + 5) / 2 = 5.
        assert_eq!(median(&[5.0, 9.0, 5.0, 5.0]), Some(5.0));
        assert_eq!(median_sorted(&[1.0, 2.0, 3.0, 4.0]), Some(2.5));
    }

    #[test]
    fn median_leaves_its_input_unsorted() {
        let v = [9.0, 1.0, 5.0];
        assert_eq!(median(&v), Some(5.0));
        assert_eq!(v, [9.0, 1.0, 5.0]);
    }

    #[test]
    fn median_excludes_nans_and_orders_infinities() {
        // Without the two NaNs: sorted 1, 2, 4 → 2.
        assert_eq!(median(&[4.0, f64::NAN, 1.0, -f64::NAN, 2.0]), Some(2.0));
        // Without the NaN: sorted 1, 3 → 2.
        assert_eq!(median(&[f64::NAN, 3.0, 1.0]), Some(2.0));
        // Sorted 1, +∞: the mean is +∞.
        assert_eq!(median(&[f64::INFINITY, 1.0]), Some(f64::INFINITY));
        // Sorted −∞, 0, +∞: the middle one.
        assert_eq!(median(&[f64::INFINITY, 0.0, f64::NEG_INFINITY]), Some(0.0));
        // Sorted 1, +∞, +∞, +∞: (+∞ + +∞) / 2 needs no arithmetic.
        assert_eq!(
            median(&[f64::INFINITY, 1.0, f64::INFINITY, f64::INFINITY]),
            Some(f64::INFINITY)
        );
    }

    #[test]
    fn median_is_the_correctly_rounded_mean_of_the_middle_two() {
        // (0.1 + 0.5) / 2: the sum rounds to 0.6, halved exactly to 0.3. R-7's a + ½·(b − a)
        // rounds twice (0.5 − 0.1 = 0.4, then 0.1 + 0.2) and lands one bit above.
        assert_eq!(median(&[0.5, 0.1]), Some(0.3));
        assert_eq!(percentile(&[0.1, 0.5], 50.0), Some(0.30000000000000004));
        // Integer-valued samples (ns, ticks) give the same figure both ways.
        let s = Summary::from_sorted(&[1.0, 2.0, 3.0, 10.0]).unwrap();
        assert_eq!(median(&[1.0, 2.0, 3.0, 10.0]), Some(s.p50));
    }

    #[test]
    fn summary_of_hand_computed_samples() {
        let mut v: Vec<f64> = (1..=10).rev().map(f64::from).collect();
        let s = Summary::from_unsorted(&mut v).unwrap();
        assert_eq!(
            v,
            (1..=10).map(f64::from).collect::<Vec<_>>(),
            "sorted in place"
        );
        assert_eq!(s.n, 10);
        assert_eq!((s.min, s.max, s.mean, s.p50), (1.0, 10.0, 5.5, 5.5));
        assert!(close(s.p90, 9.1));
        assert!(close(s.p99, 9.91));

        let s = Summary::from_sorted(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!((s.n, s.min, s.max, s.mean, s.p50), (4, 1.0, 4.0, 2.5, 2.5));
        // p90: h = 2.7 → 3.7; p99: h = 2.97 → 3.97
        assert!(close(s.p90, 3.7));
        assert!(close(s.p99, 3.97));

        let one = Summary::from_sorted(&[0.25]).unwrap();
        assert_eq!((one.n, one.min, one.max, one.mean), (1, 0.25, 0.25, 0.25));
        assert_eq!((one.p50, one.p90, one.p99), (0.25, 0.25, 0.25));
    }

    #[test]
    fn summary_of_nothing_is_none() {
        assert_eq!(Summary::from_sorted(&[]), None);
        assert_eq!(Summary::from_unsorted(&mut []), None);
        assert_eq!(Summary::from_unsorted(&mut [f64::NAN, -f64::NAN]), None);
    }

    #[test]
    fn nan_samples_are_excluded_and_counted_out() {
        // Both NaN signs: total_cmp puts −NaN first and +NaN last.
        let mut v = [3.0, f64::NAN, 1.0, -f64::NAN, 4.0, 2.0, f64::NAN];
        let s = Summary::from_unsorted(&mut v).unwrap();
        assert_eq!(s.n, 4, "three NaNs dropped");
        assert_eq!((s.min, s.max, s.mean, s.p50), (1.0, 4.0, 2.5, 2.5));
        assert!(v[0].is_nan() && v[5].is_nan() && v[6].is_nan());
        assert_eq!(percentile(&v, 50.0), Some(2.5));
        assert_eq!(percentile(&v, 100.0), Some(4.0));
    }

    #[test]
    fn infinities_are_ordinary_values() {
        let mut v = [f64::INFINITY, 1.0, f64::INFINITY];
        let s = Summary::from_unsorted(&mut v).unwrap();
        assert_eq!((s.n, s.min, s.max), (3, 1.0, f64::INFINITY));
        // Between two equal infinities there is nothing to interpolate (∞ − ∞ would be NaN).
        assert_eq!(s.p99, f64::INFINITY);
        assert_eq!(s.p50, f64::INFINITY);
    }

    #[test]
    fn summary_serializes_with_plain_field_names() {
        let s = Summary::from_sorted(&[1.0, 2.0]).unwrap();
        let v = serde_json::to_value(s).unwrap();
        assert_eq!(v["n"], 2);
        assert_eq!(v["p50"], 1.5);
        assert_eq!(v["mean"], 1.5);
    }

    #[test]
    fn exact_line_is_recovered() {
        let xs = [0.0, 1.0, 2.0, 5.0, 10.0];
        let ys: Vec<f64> = xs.iter().map(|x| 3.0 + 2.0 * x).collect();
        let f = fit_line(&xs, &ys).unwrap();
        assert!(close(f.intercept, 3.0));
        assert!(close(f.slope, 2.0));
        assert!(close(f.r2, 1.0));
        assert!(close(f.at(4.0), 11.0));
    }

    #[test]
    fn noisy_line_matches_hand_computation() {
        let xs = [1.0, 2.0, 3.0];
        let ys = [1.0, 4.0, 3.5];
        // x̄ = 2, ȳ = 17/6; Sxx = 2; Sxy = −(1 − 17/6) + (3.5 − 17/6) = 2.5 → slope = 1.25;
        // intercept = 17/6 − 2.5 = 1/3; Syy = (121 + 49 + 16)/36 = 31/6;
        // r2 = Sxy² / (Sxx · Syy) = 6.25 / (31/3) = 75/124.
        let f = fit_line(&xs, &ys).unwrap();
        assert!(close(f.slope, 1.25));
        assert!(close(f.intercept, 1.0 / 3.0));
        assert!(close(f.r2, 75.0 / 124.0));
    }

    #[test]
    fn flat_data_fits_exactly() {
        let f = fit_line(&[1.0, 2.0, 3.0], &[4.0, 4.0, 4.0]).unwrap();
        assert_eq!((f.intercept, f.slope, f.r2), (4.0, 0.0, 1.0));
    }

    #[test]
    fn degenerate_fits_are_none() {
        assert_eq!(fit_line(&[], &[]), None);
        assert_eq!(fit_line(&[1.0], &[2.0]), None);
        assert_eq!(fit_line(&[1.0, 2.0], &[2.0]), None, "length mismatch");
        assert_eq!(
            fit_line(&[0.1, 0.1, 0.1], &[1.0, 2.0, 3.0]),
            None,
            "zero x variance"
        );
        assert_eq!(fit_line(&[1.0, f64::NAN], &[1.0, 2.0]), None);
        assert_eq!(fit_line(&[1.0, 2.0], &[1.0, f64::INFINITY]), None);
    }
}
