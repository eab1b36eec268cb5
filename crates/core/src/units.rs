//! Message sizes as users write them: `64`, `4k`, `1M`, lists `1,8,64` and power-of-two ladders
//! `1:4M`. Sizes are bytes; k/K = 1024, m/M = 1024², g/G = 1024³ (as OSU and NetPIPE use them).

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

#[cfg(test)]
mod tests {
    use super::*;

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
