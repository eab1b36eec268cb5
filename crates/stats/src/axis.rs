//! The value axis of a chart: linear, or log10 where the values span decades, with round ticks.
//!
//! A linear axis squashes every value below a few percent of the largest onto its zero (an
//! overhead of 0.02 µs and one of 10 µs draw the same under a 1,000 µs one), so an axis over
//! values whose largest and smallest positive value differ by more than [`LOG_RATIO`] is
//! logarithmic. A log axis has no place for zero or a negative value: [`Axis::position`] gives
//! `None` for them, and a chart must show them apart (a `≤ 0` baseline) or say it left them out,
//! never draw them as the smallest value.
//!
//! Ticks are round: multiples of 1, 2 or 5 times a power of ten on a linear axis, and the powers
//! of ten on a log one, whose ends are whole decades. Labels read `0.01`, `1`, `250`, `10k`
//! (the unit belongs in the axis title). Ends and ticks come from integer exponents and
//! multiples, not from logarithms of the data, so the same values give the same axis on every
//! libm.

/// A ratio between the largest and the smallest positive value above which the axis is log10
/// (about one and a half decades).
pub const LOG_RATIO: f64 = 30.0;

/// How values map to positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Linear,
    Log10,
}

impl Scale {
    /// The words a caption uses for the scale: `linear scale`, `log10 scale`.
    pub fn caption(self) -> &'static str {
        match self {
            Scale::Linear => "linear scale",
            Scale::Log10 => "log10 scale",
        }
    }
}

/// One tick: its value, where it sits on the axis (0 at the low end, 1 at the high end) and its
/// label.
#[derive(Debug, Clone, PartialEq)]
pub struct Tick {
    pub value: f64,
    pub position: f64,
    pub label: String,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// From `lo·step` to `hi·step`, ticks at every multiple of `step` between.
    Linear { lo: i64, hi: i64, step: f64 },
    /// From 10^lo to 10^hi, ticks at every power of ten between.
    Log10 { lo: i32, hi: i32 },
}

/// A value axis chosen for a set of values (see the module documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    kind: Kind,
}

impl Axis {
    /// The axis for `values`, non-finite ones ignored. Log10 when the positive values span
    /// more than [`LOG_RATIO`] (from the decade at or below the smallest positive value to the
    /// one at or above the largest); otherwise linear over every value and 0, widened to whole
    /// tick steps (about five). No values at all: linear from 0 to 1.
    pub fn for_values(values: impl IntoIterator<Item = f64>) -> Axis {
        let (mut lo, mut hi) = (0.0f64, 0.0f64);
        let (mut pos_lo, mut pos_hi) = (f64::INFINITY, 0.0f64);
        for v in values.into_iter().filter(|v| v.is_finite()) {
            lo = lo.min(v);
            hi = hi.max(v);
            if v > 0.0 {
                pos_lo = pos_lo.min(v);
                pos_hi = pos_hi.max(v);
            }
        }
        if pos_hi > 0.0 && pos_hi > pos_lo * LOG_RATIO {
            let (elo, ehi) = (decade_at_or_below(pos_lo), decade_at_or_above(pos_hi));
            return Axis {
                kind: Kind::Log10 { lo: elo, hi: ehi },
            };
        }
        if hi - lo <= 0.0 {
            hi = lo + 1.0;
        }
        // Values near ±f64::MAX have a span that overflows to infinity.
        let step = nice_step((hi - lo).min(f64::MAX));
        // A quotient that is a whole number up to rounding (0.7 / 0.1 = 6.999…) is that number,
        // not one more step.
        let slack = 1e-9;
        Axis {
            kind: Kind::Linear {
                lo: (lo / step + slack).floor() as i64,
                hi: (hi / step - slack).ceil() as i64,
                step,
            },
        }
    }

    pub fn scale(&self) -> Scale {
        match self.kind {
            Kind::Linear { .. } => Scale::Linear,
            Kind::Log10 { .. } => Scale::Log10,
        }
    }

    /// The number of equal intervals between neighbouring ticks: tick steps on a linear axis,
    /// decades on a log one. A chart with a whole number of rows (or pixels) per interval puts
    /// every tick exactly on a row.
    pub fn intervals(&self) -> u32 {
        match self.kind {
            Kind::Linear { lo, hi, .. } => (hi - lo).clamp(1, i64::from(u32::MAX)) as u32,
            Kind::Log10 { lo, hi } => (hi - lo).max(1) as u32,
        }
    }

    /// Where `v` sits on the axis, 0 at the low end and 1 at the high end (outside [0, 1] when
    /// `v` is outside the axis). `None` for a value the axis cannot place: not finite, or not
    /// positive on a log axis.
    pub fn position(&self, v: f64) -> Option<f64> {
        if !v.is_finite() {
            return None;
        }
        match self.kind {
            Kind::Linear { lo, hi, step } => Some((v / step - lo as f64) / (hi - lo).max(1) as f64),
            Kind::Log10 { lo, hi } => {
                (v > 0.0).then(|| (v.log10() - f64::from(lo)) / f64::from((hi - lo).max(1)))
            }
        }
    }

    /// The ticks from the low end to the high end, both ends included.
    pub fn ticks(&self) -> Vec<Tick> {
        match self.kind {
            Kind::Linear { lo, hi, step } => {
                let n = (hi - lo).max(1);
                (0..=n)
                    .map(|i| {
                        let m = lo + i;
                        Tick {
                            value: m as f64 * step,
                            position: i as f64 / n as f64,
                            label: linear_label(m, step),
                        }
                    })
                    .collect()
            }
            Kind::Log10 { lo, hi } => {
                let n = (hi - lo).max(1);
                (0..=n)
                    .map(|i| Tick {
                        value: pow10(lo + i),
                        position: f64::from(i) / f64::from(n),
                        label: log_label(lo + i),
                    })
                    .collect()
            }
        }
    }
}

/// The f64 nearest to 10^e (decimal parsing rounds correctly; `powi` need not).
fn pow10(e: i32) -> f64 {
    format!("1e{e}").parse().unwrap_or(f64::NAN)
}

/// The largest e with 10^e ≤ v, for a positive finite v.
fn decade_at_or_below(v: f64) -> i32 {
    // log10 gives the answer up to rounding at exact powers; the comparisons settle it.
    let mut e = v.log10().floor() as i32;
    while pow10(e) > v {
        e -= 1;
    }
    while pow10(e + 1) <= v {
        e += 1;
    }
    e
}

/// The smallest e with 10^e ≥ v, for a positive finite v.
fn decade_at_or_above(v: f64) -> i32 {
    let e = decade_at_or_below(v);
    if pow10(e) < v {
        e + 1
    } else {
        e
    }
}

/// A round step for about five ticks over `span`: 1, 2 or 5 times a power of ten. Computed
/// by scaling instead of logarithms, so the ticks are the same on every libm.
fn nice_step(span: f64) -> f64 {
    let raw = span / 5.0;
    let mut scale = 1.0;
    while raw / scale >= 10.0 {
        scale *= 10.0;
    }
    while raw / scale < 1.0 {
        scale /= 10.0;
    }
    let f = raw / scale;
    let m = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * scale
}

/// Decimals that show every multiple of `step` exactly (0.25 → 2, 5 → 0).
fn decimals(step: f64) -> usize {
    let mut d = 0;
    let mut s = step;
    while d < 9 && (s - s.round()).abs() > 1e-9 * s.abs().max(1.0) {
        s *= 10.0;
        d += 1;
    }
    d
}

/// The label of the tick `m·step`: thousands as `k`, millions as `M`, … when the step is a
/// whole number of them (`0`, `2k`, `2.5M`), else plain with the step's decimals (`0.25`,
/// `1200`, and `0.0`, `0.2`, … `1.0` so a column of them lines up).
fn linear_label(m: i64, step: f64) -> String {
    let v = m as f64 * step;
    for (unit, suffix) in [(1e9, "G"), (1e6, "M"), (1e3, "k")] {
        if step >= unit && (step / unit - (step / unit).round()).abs() < 1e-9 {
            if m == 0 {
                return "0".to_string();
            }
            let d = decimals(step / unit);
            return format!("{:.d$}{suffix}", v / unit);
        }
    }
    let d = decimals(step);
    format!("{v:.d$}")
}

/// The label of 10^e: `0.001` … `100`, `1k` … `100k`, `1M`, `1G`, and `1e-4`, `1e12` beyond.
fn log_label(e: i32) -> String {
    match e {
        -3..=-1 => format!("0.{}1", "0".repeat((-e - 1) as usize)),
        0..=2 => format!("1{}", "0".repeat(e as usize)),
        3..=11 => {
            let suffix = ["k", "M", "G"][(e / 3 - 1) as usize];
            format!("1{}{suffix}", "0".repeat((e % 3) as usize))
        }
        _ => format!("1e{e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(a: &Axis) -> Vec<String> {
        a.ticks().into_iter().map(|t| t.label).collect()
    }

    #[test]
    fn values_spanning_decades_get_a_log_axis_from_decade_to_decade() {
        let a = Axis::for_values([0.02, 0.05, 1.0, 300.0]);
        assert_eq!(a.scale(), Scale::Log10);
        assert_eq!(a.scale().caption(), "log10 scale");
        assert_eq!(a.intervals(), 5);
        assert_eq!(labels(&a), ["0.01", "0.1", "1", "10", "100", "1k"]);
        assert_eq!(a.position(0.01), Some(0.0));
        assert_eq!(a.position(1000.0), Some(1.0));
        assert_eq!(a.position(1.0), Some(0.4));
        // 0.02 and 0.05 are 0.4 decades apart: 0.08 of a 5-decade axis.
        let gap = a.position(0.05).unwrap() - a.position(0.02).unwrap();
        assert!((gap - (2.5f64).log10() / 5.0).abs() < 1e-12, "{gap}");
        // What a log axis cannot place.
        assert_eq!(a.position(0.0), None);
        assert_eq!(a.position(-3.0), None);
        assert_eq!(a.position(f64::NAN), None);
        // Exact powers of ten are their own decade, not the next one out.
        let a = Axis::for_values([0.001, 1000.0]);
        assert_eq!(labels(&a), ["0.001", "0.01", "0.1", "1", "10", "100", "1k"]);
        let a = Axis::for_values([1e-5, 2e13]);
        assert_eq!(labels(&a).first().map(String::as_str), Some("1e-5"));
        assert_eq!(labels(&a).last().map(String::as_str), Some("1e14"));
        assert_eq!(
            (3..=11).map(log_label).collect::<Vec<_>>(),
            ["1k", "10k", "100k", "1M", "10M", "100M", "1G", "10G", "100G"]
        );
    }

    #[test]
    fn the_log_threshold_is_the_ratio_of_positive_values() {
        // 1 … 30 is linear, 1 … 31 log; zeros and negatives do not count in the ratio.
        assert_eq!(Axis::for_values([1.0, 30.0]).scale(), Scale::Linear);
        assert_eq!(Axis::for_values([1.0, 31.0]).scale(), Scale::Log10);
        assert_eq!(
            Axis::for_values([-500.0, 0.0, 1.0, 2.0]).scale(),
            Scale::Linear
        );
        let a = Axis::for_values([-500.0, 0.0, 0.1, 200.0]);
        assert_eq!(a.scale(), Scale::Log10);
        assert_eq!(labels(&a), ["0.1", "1", "10", "100", "1k"]);
        // Infinities and NaNs are ignored, not ranged over.
        let a = Axis::for_values([f64::INFINITY, 2.0, f64::NAN, 3.0]);
        assert_eq!(a.scale(), Scale::Linear);
    }

    #[test]
    fn a_narrow_range_keeps_a_linear_axis_with_round_ticks_from_zero() {
        let a = Axis::for_values([2.2, 2.5, 3.2]);
        assert_eq!(a.scale(), Scale::Linear);
        assert_eq!(a.scale().caption(), "linear scale");
        assert_eq!(labels(&a), ["0", "1", "2", "3", "4"]);
        assert_eq!(a.intervals(), 4);
        assert_eq!(a.position(2.0), Some(0.5));
        // Linear places negatives and zero like any value.
        let a = Axis::for_values([-0.5, 1.2, 2.5]);
        assert_eq!(labels(&a), ["-1", "0", "1", "2", "3"]);
        assert_eq!(a.position(-0.5), Some(0.125));
        assert_eq!(
            labels(&Axis::for_values([0.25])),
            ["0.00", "0.05", "0.10", "0.15", "0.20", "0.25"]
        );
        assert_eq!(
            labels(&Axis::for_values([0.7])),
            ["0.0", "0.2", "0.4", "0.6", "0.8"]
        );
        assert_eq!(
            labels(&Axis::for_values([])),
            ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]
        );
        assert_eq!(
            labels(&Axis::for_values([1500.0, 9000.0])),
            ["0", "2k", "4k", "6k", "8k", "10k"]
        );
        assert_eq!(
            labels(&Axis::for_values([-2.5e6, 1.0e6])),
            ["-3M", "-2M", "-1M", "0", "1M"]
        );
        assert_eq!(
            labels(&Axis::for_values([700.0])),
            ["0", "200", "400", "600", "800"]
        );
    }

    #[test]
    fn extreme_values_give_a_finite_axis() {
        for values in [
            vec![-f64::MAX, f64::MAX],
            vec![f64::MAX],
            vec![1e-300, 1e300],
            vec![f64::MIN_POSITIVE / 4.0, 1.0],
            vec![5e-324, f64::MAX],
        ] {
            let a = Axis::for_values(values.iter().copied());
            let ticks = a.ticks();
            assert!(ticks.len() >= 2, "{values:?}");
            for t in &ticks {
                assert!(
                    t.position.is_finite() && !t.label.contains("NaN"),
                    "{values:?}: {t:?}"
                );
            }
            for &v in &values {
                let p = a.position(v).unwrap();
                assert!((-1e-9..=1.0 + 1e-9).contains(&p), "{values:?}: {v} at {p}");
            }
        }
    }

    #[test]
    fn steps_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(nice_step(3.5), 1.0);
        assert_eq!(nice_step(0.37), 0.1);
        assert_eq!(nice_step(12.0), 5.0);
        assert_eq!(nice_step(1.0), 0.2);
        assert_eq!(nice_step(700.0), 200.0);
        assert_eq!(decimals(1.0), 0);
        assert_eq!(decimals(200.0), 0);
        assert_eq!(decimals(0.2), 1);
        assert_eq!(decimals(0.05), 2);
    }
}
