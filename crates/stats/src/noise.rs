//! Telling a measured value from noise, so that nothing physical is printed as its opposite.
//!
//! A measuring instrument that prints a negative latency or an efficiency of 240 % has not made
//! a discovery: its method or its noise produced a number without a meaning. Every derived
//! figure commperf prints therefore carries an uncertainty, and the figure is judged against it
//! before it is shown: a value whose sign is not physical but lies within its noise band is
//! "within noise" (shown as zero, never as a negative), one beyond its band is a defect of the
//! measurement and is left out with a note saying why.
//!
//! The uncertainties here are deliberately simple and distribution-free: a confidence interval
//! of the median from order statistics (timing samples are skewed and heavy-tailed, so neither
//! a mean nor a normal interval would be honest), propagated linearly through differences and
//! least-squares fits, with a fit's residuals added so that a line that does not describe its
//! points is as uncertain as it looks.

use crate::{fit_line_weighted, LinearFit};

/// How many noise bands a value may lie beyond its physical bound and still count as noise.
pub const NOISE_BANDS: f64 = 2.0;

/// The standard uncertainty of the median of `sorted` (ascending, NaN-free), distribution-free:
/// the order statistics `j = ⌊n/2 − 0.98·√n⌋` and `k = ⌈1 + n/2 + 0.98·√n⌉` (1-based, clamped
/// to the sample) bracket the median with probability ≈ 0.95 whatever the distribution; half
/// that interval's width divided by 1.96 is the uncertainty a normal interval of the same width
/// would have, so it combines with other uncertainties and with [`NOISE_BANDS`] like one. Zero
/// for one sample or identical samples; None for an empty slice.
pub fn median_uncertainty(sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let nf = n as f64;
    let half = 0.98 * nf.sqrt();
    let j = ((nf / 2.0 - half).floor() as isize).clamp(1, n as isize) as usize;
    let k = ((1.0 + nf / 2.0 + half).ceil() as isize).clamp(1, n as isize) as usize;
    Some(((sorted[k - 1] - sorted[j - 1]) / 2.0 / 1.96).max(0.0))
}

/// A line with the standard uncertainty of its two coefficients.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UncertainFit {
    pub fit: LinearFit,
    pub u_intercept: f64,
    pub u_slope: f64,
}

/// Weighted least squares (as [`fit_line_weighted`]) with the uncertainty of both coefficients.
///
/// Both coefficients are linear in the `ys` (`a = Σ cᵢ·yᵢ`), so each point's uncertainty `usᵢ`
/// propagates as `u_a² = Σ cᵢ²·(usᵢ² + rᵢ²·n/(n−2))`, where `rᵢ` is the point's residual: the
/// residual term (the heteroscedasticity-consistent HC1 estimate) makes a line that does not
/// describe its points uncertain even when every point was measured precisely. With two points
/// the line passes through both and only their own uncertainties count.
pub fn fit_line_uncertain(xs: &[f64], ys: &[f64], ws: &[f64], us: &[f64]) -> Option<UncertainFit> {
    let fit = fit_line_weighted(xs, ys, ws)?;
    if us.len() != xs.len() || us.iter().any(|u| !u.is_finite()) {
        return None;
    }
    let n = xs.len();
    let sw: f64 = ws.iter().sum();
    let mx = xs.iter().zip(ws).map(|(x, w)| x * w).sum::<f64>() / sw;
    let sxx: f64 = xs
        .iter()
        .zip(ws)
        .map(|(x, w)| w * (x - mx) * (x - mx))
        .sum();
    let hc = if n > 2 {
        n as f64 / (n - 2) as f64
    } else {
        0.0
    };
    let (mut va, mut vb) = (0.0, 0.0);
    for i in 0..n {
        let cb = ws[i] * (xs[i] - mx) / sxx;
        let ca = ws[i] / sw - mx * cb;
        let r = ys[i] - fit.at(xs[i]);
        let var = us[i] * us[i] + hc * r * r;
        va += ca * ca * var;
        vb += cb * cb * var;
    }
    Some(UncertainFit {
        fit,
        u_intercept: va.sqrt(),
        u_slope: vb.sqrt(),
    })
}

/// A quantity that cannot be negative (a time, a cost per byte), judged against its noise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NonNegative {
    /// At or above zero: the value itself.
    Value(f64),
    /// Below zero by no more than [`NOISE_BANDS`] times its uncertainty: indistinguishable
    /// from zero. Carries the raw value for notes.
    WithinNoise(f64),
    /// Below zero beyond its noise band: the measurement or the decomposition is wrong here.
    NotPhysical(f64),
}

impl NonNegative {
    /// Judges `value ± u`.
    pub fn judge(value: f64, u: f64) -> NonNegative {
        if value >= 0.0 {
            NonNegative::Value(value)
        } else if value >= -NOISE_BANDS * u.abs() {
            NonNegative::WithinNoise(value)
        } else {
            NonNegative::NotPhysical(value)
        }
    }

    /// The figure to print: the value, zero within noise, nothing when not physical.
    pub fn shown(self) -> Option<f64> {
        match self {
            NonNegative::Value(v) => Some(v),
            NonNegative::WithinNoise(_) => Some(0.0),
            NonNegative::NotPhysical(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_interval_brackets_the_middle_order_statistics() {
        let s: Vec<f64> = (1..=100).map(f64::from).collect();
        // n = 100: j = ⌊50 − 9.8⌋ = 40, k = ⌈51 + 9.8⌉ = 61 → (61 − 40) / 2 / 1.96.
        assert_eq!(median_uncertainty(&s), Some(10.5 / 1.96));
        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        // n = 10: j = ⌊5 − 3.099⌋ = 1, k = ⌈6 + 3.099⌉ = 10 → (10 − 1) / 2 / 1.96.
        assert_eq!(median_uncertainty(&ten), Some(4.5 / 1.96));
        assert_eq!(median_uncertainty(&[3.0]), Some(0.0));
        assert_eq!(median_uncertainty(&[2.0; 50]), Some(0.0));
        assert_eq!(median_uncertainty(&[]), None);
    }

    #[test]
    fn an_exact_line_through_exact_points_is_certain() {
        let xs = [1.0, 2.0, 4.0, 8.0];
        let ys: Vec<f64> = xs.iter().map(|x| 5.0 + 0.5 * x).collect();
        let f = fit_line_uncertain(&xs, &ys, &[1.0; 4], &[0.0; 4]).unwrap();
        assert!((f.fit.intercept - 5.0).abs() < 1e-12 && (f.fit.slope - 0.5).abs() < 1e-12);
        assert!(f.u_intercept < 1e-12 && f.u_slope < 1e-12);
    }

    #[test]
    fn two_points_carry_their_own_noise_into_the_extrapolated_intercept() {
        // Through (1M, y1) and (2M, y2): a = 2·y1 − y2, b = (y2 − y1) / 1M, so with u1 = u2 = u
        // u_a = √5·u and u_b = √2·u / 1M.
        let xs = [1e6, 2e6];
        let f = fit_line_uncertain(&xs, &[100.0, 180.0], &[1.0, 1.0], &[3.0, 3.0]).unwrap();
        assert!((f.fit.intercept - 20.0).abs() < 1e-9);
        assert!((f.u_intercept - 5f64.sqrt() * 3.0).abs() < 1e-9);
        assert!((f.u_slope - 2f64.sqrt() * 3.0 / 1e6).abs() < 1e-15);
    }

    #[test]
    fn residuals_make_a_poor_line_uncertain() {
        // y = 0, 2, 0, 2 at x = 1..4: the best line is 0.4·x (hand-computed); its points are
        // exact, yet it misses them by 0.4 to 1.2, so its coefficients are uncertain
        // (u_b = √0.1152 ≈ 0.34, u_a = √1.12 ≈ 1.06).
        let xs = [1.0, 2.0, 3.0, 4.0];
        let f = fit_line_uncertain(&xs, &[0.0, 2.0, 0.0, 2.0], &[1.0; 4], &[0.0; 4]).unwrap();
        assert!((f.fit.slope - 0.4).abs() < 1e-12 && (f.fit.intercept - 0.0).abs() < 1e-12);
        assert!(f.u_slope > 0.3 && f.u_intercept > 0.8, "{f:?}");
    }

    #[test]
    fn negative_values_are_noise_or_defects_by_their_band() {
        assert_eq!(NonNegative::judge(0.5, 0.1), NonNegative::Value(0.5));
        assert_eq!(
            NonNegative::judge(-0.15, 0.1),
            NonNegative::WithinNoise(-0.15)
        );
        assert_eq!(
            NonNegative::judge(-0.25, 0.1),
            NonNegative::NotPhysical(-0.25)
        );
        assert_eq!(NonNegative::judge(-0.15, 0.1).shown(), Some(0.0));
        assert_eq!(NonNegative::judge(-0.25, 0.1).shown(), None);
        assert_eq!(NonNegative::judge(-1e-9, 0.0).shown(), None);
    }
}
