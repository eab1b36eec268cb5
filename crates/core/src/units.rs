//! Message sizes as users write them: `64`, `4k`, `1M`, lists `1,8,64` and power-of-two ladders
//! `1:4M`. Sizes are bytes; k/K = 1024, m/M = 1024², g/G = 1024³ (as OSU and NetPIPE use them).
//! And durations: `12.5us`, `500ns`, `1ms` ([`parse_duration_ns`]), read the same way wherever
//! commperf takes one (emulation knobs, the trace format's `compute`).

/// Why a size or size list was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error(
        "'{0}' is not a size (expected a number with an optional k/M/G suffix, e.g. 64, 4k, 1M)"
    )]
    Malformed(String),
    #[error("'{0}' is too large (sizes must be below 2^62 bytes)")]
    TooLarge(String),
    #[error("range '{0}' is empty or reversed (expected LOW:HIGH with LOW <= HIGH)")]
    BadRange(String),
    #[error("empty size list")]
    Empty,
}

const LIMIT: u64 = 1 << 62;

/// Parses one size such as `64`, `4k`, `1M`.
pub fn parse_size(s: &str) -> Result<u64, SizeError> {
    let t = s.trim();
    let (digits, mult) = match t.as_bytes().last() {
        Some(b'k' | b'K') => (&t[..t.len() - 1], 1u64 << 10),
        Some(b'm' | b'M') => (&t[..t.len() - 1], 1 << 20),
        Some(b'g' | b'G') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(SizeError::Malformed(s.to_string()));
    }
    let n: u64 = digits
        .parse()
        .map_err(|_| SizeError::TooLarge(s.to_string()))?;
    match n.checked_mul(mult) {
        Some(v) if v < LIMIT => Ok(v),
        _ => Err(SizeError::TooLarge(s.to_string())),
    }
}

/// Parses `1,8,64`, `1:4M` (every power of two from 1 to 4 MiB; a non-power-of-two low end is
/// kept, then doubled), or a mix `0,1:1k`. The result is sorted and free of duplicates.
pub fn parse_sizes(s: &str) -> Result<Vec<u64>, SizeError> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if let Some((lo, hi)) = part.split_once(':') {
            let (lo, hi) = (parse_size(lo)?, parse_size(hi)?);
            if lo > hi {
                return Err(SizeError::BadRange(part.to_string()));
            }
            if lo == 0 {
                out.push(0);
            }
            let mut v = lo.max(1);
            while v <= hi {
                out.push(v);
                v = if v.is_power_of_two() {
                    v * 2
                } else {
                    v.next_power_of_two()
                };
            }
        } else {
            out.push(parse_size(part)?);
        }
    }
    if out.is_empty() {
        return Err(SizeError::Empty);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Formats a byte count compactly, exactly: 1536 → "1536", 4096 → "4K", 1048576 → "1M".
pub fn format_size(n: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")];
    for (u, s) in UNITS {
        if n >= u && n % u == 0 {
            return format!("{}{}", n / u, s);
        }
    }
    n.to_string()
}

/// Why a duration was refused. The messages complete "cannot read … as a duration (…)".
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("no unit: add ns, us, ms or s")]
    NoUnit,
    #[error("unknown unit: use ns, us, ms or s")]
    UnknownUnit,
    #[error("not a number")]
    NotANumber,
    #[error("not a finite number")]
    NotFinite,
}

/// Nanoseconds in one `unit` of time: `ns`, `us` (or `µs`), `ms`, `s`; `None` for anything else.
pub fn time_unit_ns(unit: &str) -> Option<f64> {
    match unit {
        "ns" => Some(1.0),
        "us" | "µs" => Some(1e3),
        "ms" => Some(1e6),
        "s" => Some(1e9),
        _ => None,
    }
}

/// Reads a duration, a number and a unit ([`time_unit_ns`]) such as `12.5us`, into nanoseconds.
/// The number is anything `f64` reads from the characters `0-9 . + - e` (`-1us` and `1e3ns`
/// are read; a caller judges sign and range, with its own words); white space around the text
/// and before the unit is ignored. A bare number is refused ([`DurationError::NoUnit`]: a unit
/// guessed wrong is a factor of a thousand) unless `bare_unit_ns` says what it counts in.
///
/// The unit is judged before the number, so `fast` is an unknown unit, not a bad number.
pub fn parse_duration_ns(text: &str, bare_unit_ns: Option<f64>) -> Result<f64, DurationError> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match (unit.trim(), bare_unit_ns) {
        ("", Some(bare)) => bare,
        ("", None) => return Err(DurationError::NoUnit),
        (u, _) => time_unit_ns(u).ok_or(DurationError::UnknownUnit)?,
    };
    let v: f64 = num.parse().map_err(|_| DurationError::NotANumber)?;
    if !v.is_finite() {
        return Err(DurationError::NotFinite);
    }
    Ok(v * scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_every_unit() {
        assert_eq!(parse_duration_ns("12.5us", None), Ok(12_500.0));
        assert_eq!(parse_duration_ns("12.5µs", None), Ok(12_500.0));
        assert_eq!(parse_duration_ns("500ns", None), Ok(500.0));
        assert_eq!(parse_duration_ns(".5ms", None), Ok(500_000.0));
        assert_eq!(parse_duration_ns("3s", None), Ok(3e9));
        assert_eq!(parse_duration_ns(" 2 us ", None), Ok(2e3));
        // Sign and exponent are read; judging them is the caller's.
        assert_eq!(parse_duration_ns("-1us", None), Ok(-1e3));
        assert_eq!(parse_duration_ns("1e3ns", None), Ok(1e3));
        // A bare number only where the caller names its unit.
        assert_eq!(parse_duration_ns("0.5", Some(1.0)), Ok(0.5));
        assert_eq!(parse_duration_ns("0.5", None), Err(DurationError::NoUnit));
    }

    #[test]
    fn malformed_durations_say_why() {
        assert_eq!(
            parse_duration_ns("fast", None),
            Err(DurationError::UnknownUnit)
        );
        assert_eq!(
            parse_duration_ns("5 min", None),
            Err(DurationError::UnknownUnit)
        );
        assert_eq!(
            parse_duration_ns("1.2.3ns", None),
            Err(DurationError::NotANumber)
        );
        assert_eq!(
            parse_duration_ns("us", None),
            Err(DurationError::NotANumber)
        );
        assert_eq!(
            parse_duration_ns(".us", None),
            Err(DurationError::NotANumber)
        );
        let huge = format!("{}s", "9".repeat(400));
        assert_eq!(
            parse_duration_ns(&huge, None),
            Err(DurationError::NotFinite)
        );
        assert_eq!(parse_duration_ns("", None), Err(DurationError::NoUnit));
    }

    #[test]
    fn single_sizes_with_suffixes() {
        assert_eq!(parse_size("0").unwrap(), 0);
        assert_eq!(parse_size("64").unwrap(), 64);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("1M").unwrap(), 1 << 20);
        assert_eq!(parse_size("2G").unwrap(), 2 << 30);
        assert!(matches!(parse_size("4x"), Err(SizeError::Malformed(_))));
        assert!(matches!(parse_size("-1"), Err(SizeError::Malformed(_))));
        assert!(matches!(parse_size("k"), Err(SizeError::Malformed(_))));
        // 2^63 and beyond are refused, not wrapped.
        assert!(matches!(
            parse_size("9223372036854775808"),
            Err(SizeError::TooLarge(_))
        ));
        assert!(matches!(
            parse_size("99999999999999999999999"),
            Err(SizeError::TooLarge(_))
        ));
        assert!(matches!(
            parse_size("8589934592G"),
            Err(SizeError::TooLarge(_))
        ));
    }

    #[test]
    fn lists_and_ladders() {
        assert_eq!(parse_sizes("1,8,64").unwrap(), vec![1, 8, 64]);
        assert_eq!(parse_sizes("1:16").unwrap(), vec![1, 2, 4, 8, 16]);
        assert_eq!(parse_sizes("0:4").unwrap(), vec![0, 1, 2, 4]);
        assert_eq!(parse_sizes("3:16").unwrap(), vec![3, 4, 8, 16]);
        assert_eq!(parse_sizes("64,1:4,2").unwrap(), vec![1, 2, 4, 64]);
        assert_eq!(parse_sizes("1:4M").unwrap().len(), 23);
        assert!(matches!(parse_sizes("8:1"), Err(SizeError::BadRange(_))));
        assert!(matches!(parse_sizes(" , "), Err(SizeError::Empty)));
    }

    #[test]
    fn formatting_is_exact() {
        assert_eq!(format_size(1536), "1536");
        assert_eq!(format_size(4096), "4K");
        assert_eq!(format_size(3 << 20), "3M");
        assert_eq!(format_size(0), "0");
    }
}
