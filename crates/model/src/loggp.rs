//! LogGP parameters (Alexandrov et al. 1995) with LogGOPS's per-byte overhead O (Hoefler et al.,
//! LogGOPSim, 2010), in nanoseconds: what `bench loggp` measures, `emulate` injects and
//! `predict`'s LogGP model charges.

use crate::tcom::Tcom;

/// How far `size` lies from the LogGOPS piece `lo..=hi` (bytes), on a log scale: 0 inside it.
/// The piece of a fit that covers a message is the nearest by this distance.
pub fn piece_distance(size: u64, lo: u64, hi: u64) -> f64 {
    if (lo..=hi).contains(&size) {
        return 0.0;
    }
    let s = size.max(1) as f64;
    (s / lo.max(1) as f64)
        .ln()
        .abs()
        .min((s / hi.max(1) as f64).ln().abs())
}

/// LogGP parameters (ns), for the LogGP model.
#[derive(Debug, Clone, Copy, PartialEq)]
#[allow(non_snake_case)]
pub struct LogGp {
    pub L_ns: f64,
    pub o_s_ns: f64,
    pub o_r_ns: f64,
    pub g_ns: f64,
    pub G_ns_per_byte: f64,
    /// Per-byte CPU overhead (LogGOPS O); 0 for plain LogGP.
    pub O_ns_per_byte: f64,
}

impl LogGp {
    /// From a profile's LogGP points: L, o and g at the smallest size, G at the largest (the
    /// per-byte cost of the bulk protocol). Without points, derived from Tcom: half of
    /// Tcom(1 B) is split 1/4 : 1/4 : 1/2 into o_s, o_r and L, g = o_s, G = Tcom's peak slope.
    pub fn from_profile(profile: Option<&commperf_core::Profile>, tcom: &Tcom) -> LogGp {
        if let Some(p) = profile.filter(|p| !p.loggp.is_empty()) {
            let mut pts = p.loggp.clone();
            pts.sort_by_key(|q| q.size_bytes);
            let (lo, hi) = (pts[0], pts[pts.len() - 1]);
            let nonneg = |v: f64| if v.is_finite() && v > 0.0 { v } else { 0.0 };
            return LogGp {
                L_ns: nonneg(lo.L_us) * 1e3,
                o_s_ns: nonneg(lo.o_s_us) * 1e3,
                o_r_ns: nonneg(lo.o_r_us) * 1e3,
                g_ns: nonneg(lo.g_us) * 1e3,
                G_ns_per_byte: if hi.G_us_per_byte.is_finite() && hi.G_us_per_byte > 0.0 {
                    hi.G_us_per_byte * 1e3
                } else {
                    1.0 / tcom.peak_bytes_per_ns()
                },
                O_ns_per_byte: 0.0,
            };
        }
        let t1 = tcom.quiet_ns(1);
        LogGp {
            L_ns: t1 / 2.0,
            o_s_ns: t1 / 4.0,
            o_r_ns: t1 / 4.0,
            g_ns: t1 / 4.0,
            G_ns_per_byte: 1.0 / tcom.peak_bytes_per_ns(),
            O_ns_per_byte: 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_points_the_parameters_split_tcom_of_one_byte() {
        // Tcom(1 B) = 4000 + 0.5 ns: L half of it, o_s, o_r and g a quarter each, G the slope.
        let p = LogGp::from_profile(None, &Tcom::line(4000.0, 0.5));
        assert_eq!(
            p,
            LogGp {
                L_ns: 2000.25,
                o_s_ns: 1000.125,
                o_r_ns: 1000.125,
                g_ns: 1000.125,
                G_ns_per_byte: 0.5,
                O_ns_per_byte: 0.0,
            }
        );
    }
}
