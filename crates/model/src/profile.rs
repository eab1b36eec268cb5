//! Building a [`Profile`] from measurements: Tcom as a piecewise-linear regression of one-way
//! times with breakpoints found automatically (Papaefstathiou 2001 fits two pieces, below and above
//! a packet; a protocol change adds more).

use commperf_core::{Profile, TcomPiece, TcomPoint, PROFILE_SCHEMA_VERSION};

/// Why a profile cannot be fitted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProfileError {
    #[error("need at least 2 distinct message sizes to fit Tcom, got {0}")]
    TooFewPoints(usize),
    #[error("measured time {time_us} µs at {size} B is not a positive finite number")]
    BadPoint { size: u64, time_us: f64 },
    #[error("the fitted Tcom is unusable: {0}")]
    Unusable(String),
    /// A larger size measured cheaper than a smaller one, where the fit found no cost growing
    /// with size: a disturbed measurement (a preempted ping-pong costs milliseconds at any
    /// size), not a network to fit. Measuring again may succeed.
    #[error(
        "the fitted Tcom is unusable: {larger} B took {larger_us:.3} µs, less than {smaller} B's \
         {smaller_us:.3} µs: the measurement was disturbed (a busy machine?); measure again, on \
         a quieter machine or with more iterations"
    )]
    Disturbed {
        smaller: u64,
        smaller_us: f64,
        larger: u64,
        larger_us: f64,
    },
}

/// Fits Tcom to one-way times (any order; repeated sizes are averaged). At most 4 pieces, each
/// of at least 3 sizes where there are enough, split while a piece misses its points by more
/// than 3 % (relative RMS). Each piece is then clamped so that its cost never falls below the
/// smallest measured time: a line fitted over large sizes can have a negative intercept.
pub fn profile_from_points(points: &[TcomPoint], source: &str) -> Result<Profile, ProfileError> {
    let mut pts: Vec<TcomPoint> = Vec::with_capacity(points.len());
    for p in points {
        if !(p.time_us.is_finite() && p.time_us > 0.0) {
            return Err(ProfileError::BadPoint {
                size: p.size_bytes,
                time_us: p.time_us,
            });
        }
        pts.push(*p);
    }
    pts.sort_by_key(|p| p.size_bytes);
    // Average repeated sizes.
    let mut merged: Vec<(u64, f64, u32)> = Vec::new();
    for p in &pts {
        match merged.last_mut() {
            Some(m) if m.0 == p.size_bytes => {
                m.1 += p.time_us;
                m.2 += 1;
            }
            _ => merged.push((p.size_bytes, p.time_us, 1)),
        }
    }
    if merged.len() < 2 {
        return Err(ProfileError::TooFewPoints(merged.len()));
    }
    let xs: Vec<f64> = merged.iter().map(|m| m.0 as f64).collect();
    let ys: Vec<f64> = merged.iter().map(|m| m.1 / m.2 as f64).collect();
    let min_points = if xs.len() >= 6 { 3 } else { 2 };
    let segs = commperf_stats::piecewise_fit(&xs, &ys, 4, min_points, 0.03)
        .ok_or_else(|| ProfileError::Unusable("the regression failed".into()))?;
    let mut tcom = Vec::with_capacity(segs.len());
    for (i, s) in segs.iter().enumerate() {
        // A piece owns the sizes up to its last measured one; sizes between two measured
        // ladders fall to the lower piece (what was last seen to hold).
        let from = if i == 0 { 0 } else { merged[s.start - 1].0 + 1 };
        let to = if i + 1 == segs.len() {
            u64::MAX
        } else {
            merged[s.end - 1].0
        };
        let mut intercept = s.fit.intercept;
        let slope = s.fit.slope.max(0.0);
        // Never cheaper than the cheapest point of the piece.
        let floor = ys[s.start..s.end]
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        // At the piece's first size (not only its first measured one): a piece after a
        // breakpoint with a negative intercept must not cost less there than half a point.
        let at_first = intercept + slope * from as f64;
        if at_first < floor * 0.5 {
            intercept += floor * 0.5 - at_first;
        }
        tcom.push(TcomPiece {
            from_bytes: from,
            to_bytes: to,
            intercept_us: intercept,
            slope_us_per_byte: slope,
        });
    }
    if tcom.last().is_some_and(|p| p.slope_us_per_byte <= 0.0) {
        let inverted = merged.windows(2).find_map(|w| {
            let (a, b) = (w[0].1 / f64::from(w[0].2), w[1].1 / f64::from(w[1].2));
            (b < a).then_some(ProfileError::Disturbed {
                smaller: w[0].0,
                smaller_us: a,
                larger: w[1].0,
                larger_us: b,
            })
        });
        return Err(inverted.unwrap_or_else(|| {
            ProfileError::Unusable(
                "the largest sizes cost no more than the smaller ones: measure larger sizes".into(),
            )
        }));
    }
    Ok(Profile {
        schema_version: PROFILE_SCHEMA_VERSION,
        source: source.to_string(),
        transport: None,
        machine: None,
        tcom,
        loggp: Vec::new(),
        pipeline: None,
        points: merged
            .iter()
            .map(|m| TcomPoint {
                size_bytes: m.0,
                time_us: m.1 / m.2 as f64,
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcom::Tcom;

    #[test]
    fn a_disturbed_measurement_is_refused_naming_the_inverted_sizes() {
        // What a calibration on two loaded cores measured: a preempted 64 KiB ping-pong.
        let pt = |size_bytes, time_us| TcomPoint {
            size_bytes,
            time_us,
        };
        let disturbed = [
            pt(8, 0.179),
            pt(64, 0.254),
            pt(1024, 0.691),
            pt(65536, 3764.227),
            pt(1 << 20, 111.792),
        ];
        let e = profile_from_points(&disturbed, "t")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("1048576 B took 111.792 µs, less than 65536 B's 3764.227 µs"),
            "{e}"
        );
        // Flat at the large end without an inversion: the ladder is too short.
        let flat = [pt(8, 1.0), pt(64, 1.0), pt(1024, 1.0), pt(65536, 1.0)];
        let e = profile_from_points(&flat, "t").unwrap_err().to_string();
        assert!(e.contains("measure larger sizes"), "{e}");
    }

    #[test]
    fn two_pieces_are_found_at_the_packet_size() {
        // 10 µs + 0.01 µs/B up to a 2048 B packet, then 25 µs + 0.008 µs/B.
        let pts: Vec<TcomPoint> = (0..=20)
            .map(|p| 1u64 << p)
            .map(|s| TcomPoint {
                size_bytes: s,
                time_us: if s <= 2048 {
                    10.0 + 0.01 * s as f64
                } else {
                    25.0 + 0.008 * s as f64
                },
            })
            .collect();
        let p = profile_from_points(&pts, "test").unwrap();
        assert_eq!(p.tcom.len(), 2, "{:?}", p.tcom);
        assert_eq!((p.tcom[0].to_bytes, p.tcom[1].from_bytes), (2048, 2049));
        let t = Tcom::from_profile(&p).unwrap();
        assert!((t.quiet_ns(1000) - 20_000.0).abs() < 1.0);
        assert!((t.quiet_ns(1 << 20) - (25.0 + 0.008 * 1048576.0) * 1e3).abs() < 10.0);
    }

    #[test]
    fn bad_points_are_refused() {
        let e = profile_from_points(
            &[TcomPoint {
                size_bytes: 1,
                time_us: f64::NAN,
            }],
            "x",
        );
        assert!(matches!(e, Err(ProfileError::BadPoint { size: 1, .. })));
        let one = TcomPoint {
            size_bytes: 8,
            time_us: 1.0,
        };
        assert_eq!(
            profile_from_points(&[one, one], "x"),
            Err(ProfileError::TooFewPoints(1))
        );
    }
}
