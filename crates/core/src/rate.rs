//! Data rates as users write them, for every option that takes one (`predict --link`,
//! `testbed --rate`): one syntax, so that the same string never means two rates.
//!
//! ```text
//! RATE   = NUMBER [ PREFIX ] UNIT
//! NUMBER = decimal, optional exponent (1.25, 1e9); > 0
//! PREFIX = k K (10^3) | M (10^6) | G (10^9) | T (10^12) | Ki (2^10) | Mi (2^20) | Gi (2^30) | Ti (2^40)
//! UNIT   = B/s | Bps                    bytes per second
//!        | b/s | bps                    bits per second
//!        | byte[s][/s] | bit[s][/s]     (words: any case, and so is their prefix: 100mbit, 1GByte/s)
//! ```
//!
//! `B` is bytes and `b` is bits, always: `1.25GB/s` = `10Gb/s` = `10Gbit/s` = `1.25GBps`. These are
//! SimGrid's platform units (`125MBps`, `1Gbps`, `10KiBps`) and tc's (`100mbit`). Refused, by
//! name: no unit (`100`: bits or bytes?); a lowercase `m`, `g` or `t` before a letter unit
//! (`10mbps`: tc reads it as megabytes per second, SimGrid as nothing, the SI as millibits); and
//! any other unit.
//!
//! Before this parser, `testbed --rate` read rates as tc does and `predict --link`
//! had a reading of its own, both ignoring case, and they disagreed on `bps`: bytes to tc
//! (`10mbps` = 80 Mbit/s), bits to predict (which also read `10GB` as gigabits). Here case
//! carries the meaning (`B` bytes, `b` bits: `bps`, `kbps`, `Mbps` are bits, as in SimGrid); the
//! lowercase `mbps`, `gbps`, `tbps` that tc users write for bytes are refused by name, and so is
//! a bare number (bits to tc, refused by predict), and predict's case-blind `10Gb`, `10gb/s`;
//! `10GB/s` now means bytes. tc's words (`100mbit`, `1gbit`, `500kbit`, `2000000bit`) and
//! predict's (`10Gbit/s`, `1.25GByte/s`) parse as before. `testbed` converts the rate to the
//! whole bits per second tc takes (`commperf_testbed::netns::parse_rate`); nothing else parses
//! rates.

/// Why a rate was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RateError {
    #[error("'{0}' is not a rate: expected a number then a unit, e.g. 10Gb/s, 1.25GB/s, 125MBps, 100mbit")]
    Malformed(String),
    #[error("'{0}' has no unit: write b/s (bits) or B/s (bytes) after the number, e.g. 10Gb/s or 1.25GB/s")]
    NoUnit(String),
    #[error("'{rate}': unit '{unit}' is ambiguous ({why}); write {fix}")]
    Ambiguous {
        rate: String,
        unit: String,
        why: &'static str,
        fix: String,
    },
    #[error(
        "'{rate}': unknown unit '{unit}' (rates are b/s, bps, bit for bits and B/s, Bps, byte for \
         bytes, with k, M, G, T or Ki, Mi, Gi, Ti before them)"
    )]
    UnknownUnit { rate: String, unit: String },
    #[error("'{0}' is not a positive, finite rate")]
    NotPositive(String),
}

/// A data rate, held in bytes per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    bytes_per_s: f64,
}

impl Rate {
    pub fn bytes_per_s(self) -> f64 {
        self.bytes_per_s
    }
    pub fn bits_per_s(self) -> f64 {
        self.bytes_per_s * 8.0
    }
    pub fn bytes_per_ns(self) -> f64 {
        self.bytes_per_s / 1e9
    }
}

impl std::str::FromStr for Rate {
    type Err = RateError;
    fn from_str(s: &str) -> Result<Rate, RateError> {
        parse_rate(s)
    }
}

/// Parses a rate in the syntax of the module documentation.
pub fn parse_rate(s: &str) -> Result<Rate, RateError> {
    let t = s.trim();
    // The number: digits, one point, and an exponent only when digits follow it (so that the
    // `e` of a unit is never eaten; no unit starts with `e` anyway).
    let b = t.as_bytes();
    let mut i = 0;
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
        i += 1;
    }
    if i < b.len() && matches!(b[i], b'e' | b'E') {
        let mut j = i + 1;
        if j < b.len() && matches!(b[j], b'+' | b'-') {
            j += 1;
        }
        if j < b.len() && b[j].is_ascii_digit() {
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            i = j;
        }
    }
    let (num, unit) = t.split_at(i);
    let v: f64 = num
        .parse()
        .map_err(|_| RateError::Malformed(s.to_string()))?;
    let unit = unit.trim_start();
    if unit.is_empty() {
        return Err(RateError::NoUnit(s.to_string()));
    }
    let bytes_per_unit = unit_bytes(s, unit)?;
    let bytes_per_s = v * bytes_per_unit;
    if !(bytes_per_s.is_finite() && bytes_per_s > 0.0) {
        return Err(RateError::NotPositive(s.to_string()));
    }
    Ok(Rate { bytes_per_s })
}

/// Bytes per second of one `unit` (prefix included).
fn unit_bytes(rate: &str, unit: &str) -> Result<f64, RateError> {
    let unknown = || RateError::UnknownUnit {
        rate: rate.to_string(),
        unit: unit.to_string(),
    };
    // Words first: their prefix is case-insensitive (tc writes `mbit`, people `MBit/s`).
    let lower = unit.to_ascii_lowercase();
    let word = lower.strip_suffix("/s").unwrap_or(&lower);
    for (w, per) in [
        ("bits", 0.125),
        ("bit", 0.125),
        ("bytes", 1.0),
        ("byte", 1.0),
    ] {
        if let Some(p) = word.strip_suffix(w) {
            let mult = match p {
                "" => 1.0,
                "k" => 1e3,
                "m" => 1e6,
                "g" => 1e9,
                "t" => 1e12,
                "ki" => 1024.0,
                "mi" => 1024.0 * 1024.0,
                "gi" => 1024.0 * 1024.0 * 1024.0,
                "ti" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
                _ => return Err(unknown()),
            };
            return Ok(mult * per);
        }
    }
    // Letter units: the case of B/b and of the prefix carries the meaning.
    let (prefix, per) = if let Some(p) = unit
        .strip_suffix("B/s")
        .or_else(|| unit.strip_suffix("Bps"))
    {
        (p, 1.0)
    } else if let Some(p) = unit
        .strip_suffix("b/s")
        .or_else(|| unit.strip_suffix("bps"))
    {
        (p, 0.125)
    } else {
        return Err(unknown());
    };
    let mult = match prefix {
        "" => 1.0,
        "k" | "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        "m" | "g" | "t" => {
            let up = prefix.to_ascii_uppercase();
            let (bits, bytes) = if unit.ends_with("/s") {
                ("b/s", "B/s")
            } else {
                ("bps", "Bps")
            };
            return Err(RateError::Ambiguous {
                rate: rate.to_string(),
                unit: unit.to_string(),
                why: "tc reads a lowercase prefix before bps as bytes, SimGrid and the SI do not",
                fix: format!(
                    "{up}{bits} for bits or {up}{bytes} for bytes (or {prefix}bit, as tc does)"
                ),
            });
        }
        _ => return Err(unknown()),
    };
    Ok(mult * per)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bps(s: &str) -> f64 {
        parse_rate(s).unwrap_or_else(|e| panic!("{e}")).bits_per_s()
    }

    #[test]
    fn bytes_are_capital_b_and_bits_small_b_always() {
        // A case once misread: 1.25GB/s is ten gigabits, not 1.25.
        assert_eq!(bps("1.25GB/s"), 10e9);
        assert_eq!(bps("10Gb/s"), 10e9);
        assert_eq!(bps("10Gbit/s"), 10e9);
        assert_eq!(bps("1.25GByte/s"), 10e9);
        assert_eq!(bps("1.25 GBps"), 10e9);
        // SimGrid's platform units.
        assert_eq!(bps("125MBps"), 1e9);
        assert_eq!(bps("1Gbps"), 1e9);
        assert_eq!(bps("100kbps"), 1e5);
        assert_eq!(bps("100kBps"), 8e5);
        assert_eq!(bps("100KBps"), 8e5);
        assert_eq!(bps("1KiBps"), 8192.0);
        assert_eq!(bps("1MiBps"), 8.0 * 1048576.0);
        assert_eq!(bps("1Gibps"), 1073741824.0);
        assert_eq!(bps("1TBps"), 8e12);
        assert_eq!(bps("12Bps"), 96.0);
        assert_eq!(bps("12bps"), 12.0);
        // tc's.
        assert_eq!(bps("100mbit"), 1e8);
        assert_eq!(bps("1gbit"), 1e9);
        assert_eq!(bps("500kbit"), 5e5);
        assert_eq!(bps("2000000bit"), 2e6);
        assert_eq!(bps("1e9bit/s"), 1e9);
        assert_eq!(parse_rate("2GByte/s").unwrap().bytes_per_ns(), 2.0);
    }

    #[test]
    fn ambiguous_and_unknown_units_are_refused_by_name() {
        assert_eq!(
            parse_rate("10mbps").unwrap_err().to_string(),
            "'10mbps': unit 'mbps' is ambiguous (tc reads a lowercase prefix before bps as bytes, \
             SimGrid and the SI do not); write Mbps for bits or MBps for bytes (or mbit, as tc does)"
        );
        assert!(matches!(
            parse_rate("1gB/s"),
            Err(RateError::Ambiguous { .. })
        ));
        assert_eq!(
            parse_rate("100").unwrap_err(),
            RateError::NoUnit("100".into())
        );
        assert!(matches!(
            parse_rate("10furlongs"),
            Err(RateError::UnknownUnit { unit, .. }) if unit == "furlongs"
        ));
        assert!(matches!(
            parse_rate("10GB"),
            Err(RateError::UnknownUnit { .. })
        ));
        assert!(matches!(parse_rate("fast"), Err(RateError::Malformed(_))));
        assert!(matches!(
            parse_rate("0Gb/s"),
            Err(RateError::NotPositive(_))
        ));
        assert!(matches!(
            parse_rate("1e999Gb/s"),
            Err(RateError::NotPositive(_))
        ));
    }
}
