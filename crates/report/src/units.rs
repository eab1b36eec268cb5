//! Durations as people read them: `850 ns`, `12.3 µs`, `4.56 ms`, `1.23 s`, three significant
//! digits in the unit that puts the number between 1 and 1000 — the one helper every page and
//! figure of commperf formats a time with, so a time reads the same everywhere. Exact values
//! stay in the JSON files (and in `data-` attributes of the HTML page).

/// The units, largest first: name and seconds per unit.
const UNITS: [(&str, f64); 4] = [("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)];

/// `v` rounded to three significant digits.
fn three_digits(v: f64) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let e = v.abs().log10().floor() as i32;
    let scale = 10f64.powi(2 - e);
    (v * scale).round() / scale
}

/// The unit for a duration of `seconds` (its magnitude): the largest whose count is at least 1,
/// nanoseconds below that; seconds for 0 and for anything not finite.
pub fn duration_unit(seconds: f64) -> (&'static str, f64) {
    let m = three_digits(seconds.abs());
    if m == 0.0 || !m.is_finite() {
        return UNITS[0];
    }
    UNITS
        .iter()
        .copied()
        .find(|&(_, per)| m >= per * (1.0 - 1e-12))
        .unwrap_or(UNITS[3])
}

/// A duration with three significant digits and its unit: `0.000123456` → `123 µs`,
/// `0.0019996` → `2.00 ms`, `42.0` → `42.0 s`; `-` for a value that is not finite. Beyond
/// 1000 s, whole seconds (`1230 s`).
pub fn format_seconds(seconds: f64) -> String {
    if !seconds.is_finite() {
        return "-".to_string();
    }
    let (name, per) = duration_unit(seconds);
    let v = three_digits(seconds) / per;
    let m = v.abs();
    let decimals = if m >= 100.0 || m == 0.0 {
        0
    } else if m >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.decimals$} {name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_significant_digits_in_the_unit_that_fits() {
        let cases = [
            (0.000_123_456, "123 µs"),
            (0.001_999_6, "2.00 ms"),
            (0.000_999_6, "1.00 ms"),
            (0.012_345, "12.3 ms"),
            (1.234_56, "1.23 s"),
            (42.0, "42.0 s"),
            (1234.5, "1230 s"),
            (8.5e-7, "850 ns"),
            (3.2e-9, "3.20 ns"),
            (2e-12, "0.00 ns"),
            (0.0, "0 s"),
            (-0.0042, "-4.20 ms"),
        ];
        for (s, want) in cases {
            assert_eq!(format_seconds(s), want, "{s}");
        }
        assert_eq!(format_seconds(f64::NAN), "-");
        assert_eq!(duration_unit(0.5), ("ms", 1e-3));
        assert_eq!(duration_unit(2.0), ("s", 1.0));
        assert_eq!(duration_unit(3e-6), ("µs", 1e-6));
    }
}
