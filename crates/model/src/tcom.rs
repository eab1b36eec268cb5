//! The quiet-network cost `Tcom(size)` and its inverse (Papaefstathiou 2001, Example 3).
//!
//! A message of `len` bytes costs `Tcom(len)` on a quiet network: the piece holding `len` gives
//! `a + b·len`. Under contention it progresses at its bandwidth availability, so the engine keeps
//! its remaining quiet-network time; the inverse turns elapsed quiet time back into bytes moved
//! (the intercept moves no bytes, then bytes flow at `1/b`).

use commperf_core::{Profile, TcomPiece};

use crate::loggp::LogGp;

/// Why a profile's cost cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TcomError {
    #[error("the profile has no Tcom pieces")]
    Empty,
    #[error("Tcom piece {index} ({from}..={to} B) is not a valid piece: {why}")]
    BadPiece {
        index: usize,
        from: u64,
        to: u64,
        why: &'static str,
    },
    #[error("profile schema version {found} is not supported (this build reads {supported})")]
    Version { found: u32, supported: u32 },
}

/// Piecewise-linear one-way time, in nanoseconds, by message size.
#[derive(Debug, Clone, PartialEq)]
pub struct Tcom {
    /// (first size of the piece, intercept ns, slope ns per byte), sorted by first size.
    pieces: Vec<(u64, f64, f64)>,
}

impl Tcom {
    /// From a profile's pieces (checked: finite, non-negative cost, sorted, non-overlapping).
    pub fn from_profile(p: &Profile) -> Result<Tcom, TcomError> {
        let kind = commperf_formats::Kind::Profile;
        if commperf_formats::check(kind, Some(u64::from(p.schema_version))).is_err() {
            return Err(TcomError::Version {
                found: p.schema_version,
                supported: commperf_core::PROFILE_SCHEMA_VERSION,
            });
        }
        Tcom::from_pieces(&p.tcom)
    }

    pub fn from_pieces(pieces: &[TcomPiece]) -> Result<Tcom, TcomError> {
        if pieces.is_empty() {
            return Err(TcomError::Empty);
        }
        let mut out = Vec::with_capacity(pieces.len());
        for (index, p) in pieces.iter().enumerate() {
            let bad = |why| TcomError::BadPiece {
                index,
                from: p.from_bytes,
                to: p.to_bytes,
                why,
            };
            if !p.intercept_us.is_finite() || !p.slope_us_per_byte.is_finite() {
                return Err(bad("intercept and slope must be finite"));
            }
            if p.slope_us_per_byte < 0.0 {
                return Err(bad("the slope is negative"));
            }
            if p.to_bytes < p.from_bytes {
                return Err(bad("it ends before it starts"));
            }
            if p.intercept_us + p.slope_us_per_byte * p.from_bytes as f64 <= 0.0 {
                return Err(bad("its cost at its first size is not positive"));
            }
            if index > 0 && p.from_bytes <= pieces[index - 1].to_bytes {
                return Err(bad("it overlaps or precedes the piece before it"));
            }
            out.push((
                p.from_bytes,
                p.intercept_us * 1e3,
                p.slope_us_per_byte * 1e3,
            ));
        }
        // The last piece must move bytes, or a large message would never finish under contention.
        if out.last().is_some_and(|p| p.2 <= 0.0) {
            let p = pieces.last().expect("non-empty");
            return Err(TcomError::BadPiece {
                index: pieces.len() - 1,
                from: p.from_bytes,
                to: p.to_bytes,
                why: "the last piece must have a positive slope",
            });
        }
        Ok(Tcom { pieces: out })
    }

    /// A single line: `latency_ns + bytes / bytes_per_ns`.
    pub fn line(latency_ns: f64, ns_per_byte: f64) -> Tcom {
        Tcom {
            pieces: vec![(0, latency_ns, ns_per_byte)],
        }
    }

    /// A lone message's end-to-end cost under LogGP: `o_s + L + o_r + G·len` (the per-byte
    /// overhead O is not in it).
    pub fn from_loggp(p: &LogGp) -> Tcom {
        Tcom::line(p.o_s_ns + p.L_ns + p.o_r_ns, p.G_ns_per_byte)
    }

    /// This Tcom with every piece's intercept raised by `intercept_ns` and slope by
    /// `slope_ns_per_byte`: the same network with a longer latency or a lower bandwidth, as an
    /// emulation knob makes it.
    pub fn shifted(&self, intercept_ns: f64, slope_ns_per_byte: f64) -> Tcom {
        Tcom {
            pieces: self
                .pieces
                .iter()
                .map(|&(s, a, b)| (s, a + intercept_ns, b + slope_ns_per_byte))
                .collect(),
        }
    }

    /// The default when no profile is given: 10 Gbit/s Ethernet with 5 µs one-way latency.
    pub fn default_ethernet() -> Tcom {
        Tcom::line(5_000.0, 0.8)
    }

    fn piece(&self, len: u64) -> (f64, f64) {
        let i = self
            .pieces
            .partition_point(|p| p.0 <= len)
            .saturating_sub(1);
        (self.pieces[i].1, self.pieces[i].2)
    }

    /// Quiet-network one-way time of a `len`-byte message, in ns (never below 0).
    pub fn quiet_ns(&self, len: u64) -> f64 {
        let (a, b) = self.piece(len);
        (a + b * len as f64).max(0.0)
    }

    /// The start-up part of a `len`-byte message's quiet time: its piece's intercept, within
    /// `0..=quiet_ns(len)`. It is latency, not bytes, so it is not shared under contention.
    pub fn latency_ns(&self, len: u64) -> f64 {
        let (a, _) = self.piece(len);
        a.clamp(0.0, self.quiet_ns(len))
    }

    /// Bytes of a `len`-byte message moved once `elapsed_ns` of its quiet-network time has
    /// passed: the inverse of [`Tcom::quiet_ns`] within the message's piece.
    pub fn bytes_after(&self, len: u64, elapsed_ns: f64) -> f64 {
        let (a, b) = self.piece(len);
        if b <= 0.0 {
            return if elapsed_ns >= a { len as f64 } else { 0.0 };
        }
        ((elapsed_ns - a.max(0.0)) / b).clamp(0.0, len as f64)
    }

    /// Asymptotic bandwidth of the last piece, bytes per ns.
    pub fn peak_bytes_per_ns(&self) -> f64 {
        1.0 / self.pieces.last().expect("non-empty").2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(from: u64, to: u64, a: f64, b: f64) -> TcomPiece {
        TcomPiece {
            from_bytes: from,
            to_bytes: to,
            intercept_us: a,
            slope_us_per_byte: b,
        }
    }

    #[test]
    fn pieces_cost_by_size_and_invert() {
        let t = Tcom::from_pieces(&[
            piece(0, 2020, 10.0, 0.01),
            piece(2021, u64::MAX, 30.0, 0.005),
        ])
        .unwrap();
        assert_eq!(t.quiet_ns(1000), 20_000.0);
        assert_eq!(t.quiet_ns(4000), 50_000.0);
        // Half the quiet time past the intercept moves half the bytes.
        assert_eq!(t.bytes_after(4000, 30_000.0 + 10_000.0), 2000.0);
        assert_eq!(t.bytes_after(4000, 5.0), 0.0);
        assert_eq!(t.bytes_after(4000, 1e12), 4000.0);
    }

    /// A version 1 profile (before the pipeline section) as `calibrate` wrote it.
    const PROFILE_V1: &str = r#"{"schema_version": 1, "source": "commperf calibrate --transport tcp",
        "tcom": [{"from_bytes": 0, "to_bytes": 2020, "intercept_us": 10.0, "slope_us_per_byte": 0.01},
                 {"from_bytes": 2021, "to_bytes": 18446744073709551615, "intercept_us": 30.0,
                  "slope_us_per_byte": 0.005}]}"#;

    #[test]
    fn a_version_1_profile_is_read_and_costs_as_today() {
        let p: Profile = serde_json::from_str(PROFILE_V1).unwrap();
        assert_eq!((p.schema_version, p.pipeline.is_none()), (1, true));
        let t = Tcom::from_profile(&p).unwrap();
        assert_eq!(t.quiet_ns(1000), 20_000.0);
        assert_eq!(t.quiet_ns(4000), 50_000.0);
        for (found, ok) in [(0, false), (1, true), (2, true), (3, false)] {
            let q = Profile {
                schema_version: found,
                ..p.clone()
            };
            let r = Tcom::from_profile(&q);
            assert_eq!(r.is_ok(), ok, "{found}");
            if !ok {
                assert_eq!(
                    r,
                    Err(TcomError::Version {
                        found,
                        supported: 2
                    })
                );
            }
        }
    }

    #[test]
    fn bad_pieces_are_refused() {
        assert_eq!(Tcom::from_pieces(&[]), Err(TcomError::Empty));
        let e = Tcom::from_pieces(&[piece(0, 10, 1.0, 0.1), piece(5, 20, 1.0, 0.1)]).unwrap_err();
        assert!(matches!(e, TcomError::BadPiece { index: 1, .. }), "{e}");
        let e = Tcom::from_pieces(&[piece(0, 10, 1.0, -0.1)]).unwrap_err();
        assert!(e.to_string().contains("negative"), "{e}");
        let e = Tcom::from_pieces(&[piece(0, 10, 1.0, 0.0)]).unwrap_err();
        assert!(e.to_string().contains("positive slope"), "{e}");
    }
}
