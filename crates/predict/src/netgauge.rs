//! Reading Netgauge's `loggp` output into a [`Profile`], so that a network someone measured with
//! Netgauge (on a cluster where commperf never ran) can drive a prediction.
//!
//! The file is whitespace-separated text, `#` starts a comment line, one row per message size:
//!
//! ```text
//! # size n PRTT(1,0,s) PRTT(n,0,s) PRTT(n,PRTT(1,0,s),s) L o_s o_r g G lsqu(g,G)
//! 1024 10 16.113556 27.557675 172.642173 6.782182 1.278512 1.285648 1.106072 0.000135 0.045205
//! ```
//!
//! all times in µs. What becomes of it:
//!
//! - `points`: (size, PRTT(1,0,s) / 2), the one-way time; `tcom` is fitted to them with
//!   [`profile_from_points`], which finds protocol changes as breakpoints.
//! - `loggp`: per size L, o_s, o_r, g, G taken from the columns as Netgauge wrote them
//!   (Netgauge's L is its small-message latency PRTT(1,0,1)/2, the same on every row).
//!
//! Missing values: Netgauge writes `nan` / `-nan` where it cannot compute a figure (g and G at
//! the first size need a difference with the next). A NaN PRTT(1,0,s) leaves the row without a
//! one-way point; a NaN L, o_s or o_r leaves it out of `loggp`; a NaN (or negative, which no gap
//! can be) g or G is taken from the nearest size that has a usable one, so a row with NaN g/G
//! still keeps its L and o. The least-squares column is not used. Other non-finite or negative
//! times are errors.
//!
//! Repeated sizes: the *last* row of a size wins. Netgauge appends as it measures, so a later
//! row is the newer measurement; in the Tukey file the first of its two 262144-byte rows
//! repeats the 8192-byte row's g, G and lsq figures exactly, a stale value, while the second
//! continues its neighbours' trend.
//!
//! No input makes the reader panic: every failure is a [`NetgaugeError`] naming file, line,
//! column and the offending token.

use crate::profile::{profile_from_points, ProfileError};
use commperf_core::{LogGpPoint, Profile, TcomPoint};
use std::path::Path;

/// Why a Netgauge file cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NetgaugeError {
    #[error("{file}:{line}:{column}: {why}: '{token}'")]
    Syntax {
        file: String,
        line: usize,
        column: usize,
        token: String,
        why: String,
    },
    #[error("{file}:{line}: {why}")]
    Row {
        file: String,
        line: usize,
        why: String,
    },
    #[error("{file}: no data rows with a usable PRTT(1,0,s)")]
    Empty { file: String },
    #[error("{file}: {source}")]
    Fit {
        file: String,
        #[source]
        source: ProfileError,
    },
    /// The file could not be read, or is not text.
    #[error("{0}")]
    Text(String),
}

/// One data row, times in µs; NaN where Netgauge wrote `nan`.
#[derive(Debug, Clone, Copy, PartialEq)]
#[allow(non_snake_case)]
pub struct NetgaugeRow {
    /// 1-based line of the row in its file.
    pub line: usize,
    pub size_bytes: u64,
    pub n: u64,
    pub prtt_1_0_us: f64,
    pub prtt_n_0_us: f64,
    pub prtt_n_d_us: f64,
    pub L_us: f64,
    pub o_s_us: f64,
    pub o_r_us: f64,
    pub g_us: f64,
    pub G_us_per_byte: f64,
}

const COLUMNS: [&str; 11] = [
    "size",
    "n",
    "PRTT(1,0,s)",
    "PRTT(n,0,s)",
    "PRTT(n,d,s)",
    "L",
    "o_s",
    "o_r",
    "g",
    "G",
    "lsq(g,G)",
];

/// The data rows of a Netgauge `loggp` file, in file order (repeated sizes kept).
pub fn parse_rows(text: &str, file: &str) -> Result<Vec<NetgaugeRow>, NetgaugeError> {
    let mut rows = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let content = raw.trim_start();
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        // Tokens with their 1-based character column.
        let mut tokens: Vec<(usize, &str)> = Vec::with_capacity(11);
        let mut start: Option<usize> = None;
        for (b, ch) in raw.char_indices().chain(std::iter::once((raw.len(), ' '))) {
            if ch.is_whitespace() {
                if let Some(s) = start.take() {
                    tokens.push((s, &raw[s..b]));
                }
            } else if start.is_none() {
                start = Some(b);
            }
        }
        let col = |byte: usize| raw[..byte].chars().count() + 1;
        let syntax = |byte: usize, token: &str, why: String| NetgaugeError::Syntax {
            file: file.to_string(),
            line,
            column: col(byte),
            token: token.chars().take(40).collect(),
            why,
        };
        if tokens.len() < 10 {
            let (b, t) = tokens.last().copied().unwrap_or((0, ""));
            return Err(syntax(
                b,
                t,
                format!(
                    "a row needs at least 10 columns ({}), this one has {}",
                    COLUMNS[..10].join(" "),
                    tokens.len()
                ),
            ));
        }
        if tokens.len() > COLUMNS.len() {
            let (b, t) = tokens[COLUMNS.len()];
            return Err(syntax(
                b,
                t,
                format!(
                    "unexpected column {} (a row has at most 11)",
                    COLUMNS.len() + 1
                ),
            ));
        }
        let int = |k: usize| -> Result<u64, NetgaugeError> {
            let (b, t) = tokens[k];
            t.parse::<u64>().map_err(|_| {
                syntax(
                    b,
                    t,
                    format!("{} must be a whole number of bytes/messages", COLUMNS[k]),
                )
            })
        };
        let num = |k: usize| -> Result<f64, NetgaugeError> {
            let (b, t) = tokens[k];
            let unsigned = t.trim_start_matches(['-', '+']);
            if unsigned.eq_ignore_ascii_case("nan") {
                return Ok(f64::NAN);
            }
            match t.parse::<f64>() {
                Ok(v) if v.is_finite() => Ok(v),
                _ => Err(syntax(
                    b,
                    t,
                    format!("{} must be a finite number (or nan)", COLUMNS[k]),
                )),
            }
        };
        let size_bytes = int(0)?;
        let n = int(1)?;
        if n < 2 {
            let (b, t) = tokens[1];
            return Err(syntax(
                b,
                t,
                "n must be at least 2 (PRTT(n,…) compares n messages with one)".into(),
            ));
        }
        let mut vals = [0.0; 8];
        for (k, v) in vals.iter_mut().enumerate() {
            *v = num(k + 2)?;
        }
        // The last column is only checked to be a number.
        if tokens.len() == 11 {
            num(10)?;
        }
        // Round-trip times are durations: never negative.
        for k in 0..3 {
            if vals[k] < 0.0 {
                let (b, t) = tokens[k + 2];
                return Err(syntax(
                    b,
                    t,
                    format!(
                        "{} is a round-trip time and cannot be negative",
                        COLUMNS[k + 2]
                    ),
                ));
            }
        }
        rows.push(NetgaugeRow {
            line,
            size_bytes,
            n,
            prtt_1_0_us: vals[0],
            prtt_n_0_us: vals[1],
            prtt_n_d_us: vals[2],
            L_us: vals[3],
            o_s_us: vals[4],
            o_r_us: vals[5],
            g_us: vals[6],
            G_us_per_byte: vals[7],
        });
    }
    Ok(rows)
}

/// The rows with one per size (the last of each size), sorted by size.
pub fn dedup_sizes(rows: &[NetgaugeRow]) -> Vec<NetgaugeRow> {
    let mut out: Vec<NetgaugeRow> = Vec::with_capacity(rows.len());
    for r in rows {
        match out.iter_mut().find(|o| o.size_bytes == r.size_bytes) {
            Some(o) => *o = *r,
            None => out.push(*r),
        }
    }
    out.sort_by_key(|r| r.size_bytes);
    out
}

/// A Netgauge `loggp` file's text as a profile; `file` names it in errors and in `source`.
pub fn profile_from_str(text: &str, file: &str) -> Result<Profile, NetgaugeError> {
    let rows = dedup_sizes(&parse_rows(text, file)?);
    let points: Vec<TcomPoint> = rows
        .iter()
        .filter(|r| r.prtt_1_0_us.is_finite())
        .map(|r| TcomPoint {
            size_bytes: r.size_bytes,
            time_us: r.prtt_1_0_us / 2.0,
        })
        .collect();
    if points.is_empty() {
        return Err(NetgaugeError::Empty {
            file: file.to_string(),
        });
    }
    if let Some(r) = rows
        .iter()
        .find(|r| r.prtt_1_0_us.is_finite() && r.prtt_1_0_us <= 0.0)
    {
        return Err(NetgaugeError::Row {
            file: file.to_string(),
            line: r.line,
            why: format!(
                "PRTT(1,0,s) at {} B is {} µs: a round trip takes time",
                r.size_bytes, r.prtt_1_0_us
            ),
        });
    }
    let mut profile =
        profile_from_points(&points, &format!("netgauge {file}")).map_err(|source| {
            NetgaugeError::Fit {
                file: file.to_string(),
                source,
            }
        })?;
    profile.loggp = loggp_points(&rows);
    Ok(profile)
}

/// Reads and converts a Netgauge file.
pub fn profile_from_file(path: &Path) -> Result<Profile, NetgaugeError> {
    let file = path.display().to_string();
    let text = commperf_core::read_text(path).map_err(|e| NetgaugeError::Text(e.to_string()))?;
    profile_from_str(&text, &file)
}

/// LogGP points of size-sorted, de-duplicated rows: rows with L, o_s and o_r; a missing g or G
/// borrowed from the nearest size with a usable one (lower size on a tie), 0 if none has any.
fn loggp_points(rows: &[NetgaugeRow]) -> Vec<LogGpPoint> {
    let usable = |v: f64| v.is_finite() && v >= 0.0;
    let nearest = |i: usize, get: fn(&NetgaugeRow) -> f64| -> f64 {
        if usable(get(&rows[i])) {
            return get(&rows[i]);
        }
        for d in 1..rows.len() {
            let lo = i
                .checked_sub(d)
                .map(|j| get(&rows[j]))
                .filter(|&v| usable(v));
            let hi = rows.get(i + d).map(get).filter(|&v| usable(v));
            if let Some(v) = lo.or(hi) {
                return v;
            }
        }
        0.0
    };
    rows.iter()
        .enumerate()
        .filter(|(_, r)| r.L_us.is_finite() && r.o_s_us.is_finite() && r.o_r_us.is_finite())
        .map(|(i, r)| LogGpPoint {
            size_bytes: r.size_bytes,
            L_us: r.L_us,
            o_s_us: r.o_s_us,
            o_r_us: r.o_r_us,
            g_us: nearest(i, |r| r.g_us),
            G_us_per_byte: nearest(i, |r| r.G_us_per_byte),
            O_s_us_per_byte: None,
            O_r_us_per_byte: None,
            overlap_us: None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TUKEY: &str = include_str!("../tests/data/ng-mpi-tukey.dat");

    #[test]
    fn the_tukey_file_becomes_a_profile_with_the_protocol_change_between_8_and_16_kib() {
        let p = profile_from_str(TUKEY, "ng-mpi-tukey.dat").unwrap();
        assert_eq!(p.source, "netgauge ng-mpi-tukey.dat");
        // 28 rows, 262144 twice.
        assert_eq!(p.points.len(), 27);
        assert_eq!(p.points[0].size_bytes, 1);
        assert!((p.points[0].time_us - 13.564364 / 2.0).abs() < 1e-9);
        let breaks: Vec<u64> = p.tcom.windows(2).map(|w| w[0].to_bytes).collect();
        assert_eq!(p.tcom.len(), 2);
        assert!(
            breaks.iter().any(|&b| (8192..16384).contains(&b)),
            "breakpoints {breaks:?}: {:?}",
            p.tcom
        );
        crate::tcom::Tcom::from_profile(&p).unwrap();
        // LogGP: every size; g and G at 1 B borrowed from 2 B; the later 262144 row wins.
        assert_eq!(p.loggp.len(), 27);
        assert_eq!(p.loggp[0].g_us, 1.079925);
        assert_eq!(p.loggp[0].G_us_per_byte, 0.001389);
        assert_eq!(p.loggp[0].o_s_us, 1.103756);
        let big = p.loggp.iter().find(|l| l.size_bytes == 262144).unwrap();
        assert_eq!(big.g_us, 12.367868);
        // Negative g (from 16 MiB) is not a gap: the nearest usable one (8 MiB) stands in.
        let huge = p.loggp.iter().find(|l| l.size_bytes == 1 << 24).unwrap();
        assert_eq!(huge.g_us, 13.069435);
        // The profile is valid JSON (no NaN anywhere).
        let json = serde_json::to_string(&p).unwrap();
        let back: Profile = serde_json::from_str(&json).unwrap();
        assert_eq!((back.tcom.len(), back.loggp.len()), (2, 27));
    }

    #[test]
    fn errors_name_file_line_column_and_token() {
        let text = "# c\n1 10 2.0 3.0 4.0 1 1 1 1 1\n2 10 2.5 x3 4.0 1 1 1 1 1\n";
        let e = profile_from_str(text, "f.dat").unwrap_err().to_string();
        assert_eq!(
            e,
            "f.dat:3:10: PRTT(n,0,s) must be a finite number (or nan): 'x3'"
        );
        let e = profile_from_str("1.5 10 1 1 1 1 1 1 1 1", "f").unwrap_err();
        assert!(
            e.to_string().starts_with("f:1:1: size must be a whole"),
            "{e}"
        );
        let e = profile_from_str("1 10 1 1 1", "f").unwrap_err();
        assert!(e.to_string().contains("at least 10 columns"), "{e}");
        let e = profile_from_str("1 10 1 1 1 1 1 1 1 1 1 9", "f").unwrap_err();
        assert!(
            e.to_string().starts_with("f:1:24: unexpected column 12"),
            "{e}"
        );
        let e = profile_from_str("1 10 -1 1 1 1 1 1 1 1", "f").unwrap_err();
        assert!(e.to_string().contains("cannot be negative"), "{e}");
        let e = profile_from_str("1 10 inf 1 1 1 1 1 1 1", "f").unwrap_err();
        assert!(e.to_string().contains("'inf'"), "{e}");
        let e = profile_from_str("1 1 1 1 1 1 1 1 1 1", "f").unwrap_err();
        assert!(e.to_string().contains("n must be at least 2"), "{e}");
        assert_eq!(
            profile_from_str("# only comments\n\n", "f"),
            Err(NetgaugeError::Empty { file: "f".into() })
        );
        let e = profile_from_str("8 10 1 1 1 1 1 1 1 1", "f").unwrap_err();
        assert!(e.to_string().contains("at least 2 distinct"), "{e}");
        let e = profile_from_str("8 10 0 1 1 1 1 1 1 1\n16 10 1 1 1 1 1 1 1 1", "f").unwrap_err();
        assert!(e.to_string().starts_with("f:1: PRTT(1,0,s) at 8 B"), "{e}");
    }

    #[test]
    fn nan_fields_are_skipped_per_field() {
        let text = "8 10 nan 1 1 1 1 1 nan nan\n\
                    16 10 4 1 1 1 1 nan 2 0.5\n\
                    32 10 6 1 1 1 1 1 -nan -nan\n\
                    64 10 10 1 1 1 1 1 3 0.25\n";
        let p = profile_from_str(text, "f").unwrap();
        // No point at 8 B; three points.
        assert_eq!(
            p.points.iter().map(|p| p.size_bytes).collect::<Vec<_>>(),
            [16, 32, 64]
        );
        // 16 B has no o_r: not a LogGP point. 8 B borrows from 16 B; 32 B from 16 B (the lower
        // on a tie).
        let sizes: Vec<u64> = p.loggp.iter().map(|l| l.size_bytes).collect();
        assert_eq!(sizes, [8, 32, 64]);
        assert_eq!((p.loggp[0].g_us, p.loggp[0].G_us_per_byte), (2.0, 0.5));
        assert_eq!((p.loggp[1].g_us, p.loggp[1].G_us_per_byte), (2.0, 0.5));
    }

    /// A deterministic mutation fuzzer: flips, deletes, duplicates and inserts bytes and
    /// tokens in the real file; no mutant may panic the reader.
    #[test]
    fn mutated_files_never_panic() {
        let base = TUKEY.as_bytes();
        let inserts: [&[u8]; 10] = [
            b"nan",
            b"-",
            b"1e999",
            b"\n",
            b" ",
            b"#",
            b"18446744073709551616",
            b"\xc3\xa9",
            b"0",
            b"-0.0",
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut oks = 0;
        for _ in 0..2000 {
            let mut m = base.to_vec();
            for _ in 0..1 + next() % 6 {
                if m.is_empty() {
                    break;
                }
                let at = (next() % m.len() as u64) as usize;
                match next() % 5 {
                    0 => m[at] = (next() & 0xff) as u8,
                    1 => {
                        let end = (at + (next() % 20) as usize).min(m.len());
                        m.drain(at..end);
                    }
                    2 => {
                        let ins = inserts[(next() % inserts.len() as u64) as usize];
                        m.splice(at..at, ins.iter().copied());
                    }
                    3 => {
                        let end = (at + (next() % 200) as usize).min(m.len());
                        let dup = m[at..end].to_vec();
                        m.splice(at..at, dup);
                    }
                    _ => m.truncate(at),
                }
            }
            let text = String::from_utf8_lossy(&m);
            if profile_from_str(&text, "fuzz").is_ok() {
                oks += 1;
            }
        }
        // Most single mutations of numbers still parse: the fuzzer reached the fit.
        assert!(oks > 100, "only {oks} mutants parsed");
    }
}
