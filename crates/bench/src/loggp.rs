//! LogGOPS parameters by parametrized round trips, Netgauge's PRTT method (Kutluğ 2000,
//! §3.3.4), decomposed as LogGOPS does so that no parameter can come out unphysical.
//!
//! PRTT(n, d, s): the client sends n messages of s bytes, busy-waiting d between two sends; the
//! server answers with one s-byte message once all n have arrived; the client times the whole
//! exchange. With d = PRTT(1, 0, s), per size:
//!
//! - g + G·s = (PRTT(n,0,s) − PRTT(1,0,s)) / (n−1), the gap between messages in a stream;
//! - o_s(s) = (PRTT(n,d,s) − PRTT(1,0,s)) / (n−1) − d, the CPU time of one send;
//! - o_r(s) = (PRTTᵣ(n,d_r,s) − PRTT(1,0,s)) / (n−1) − d_r, where the *server* waits d_r before
//!   each of its n−1 later receives: Netgauge's d_r = d assumes a stream is faster than a round
//!   trip, and where it is not (a gap g raised by `emulate`'s knob to a round trip, a slow
//!   stream) each message had only just arrived when taken, and its arrival was measured as
//!   receive overhead: d_r = PRTT(1,0,s) + the stream's gap, so each has waited a whole gap.
//!   (Where g exceeds a round trip, PRTT(1) is itself paced by g, and o_r stays a mixture of
//!   the receive and that pacing even in LogP's own arithmetic: the emulate crate's
//!   `model_exact` test says which figures a knob beyond a round trip leaves exact);
//! - latency(s) = PRTT(1,0,s) / 2.
//!
//! Kutluğ (2000) then takes L = latency − o_s − o_r, which goes negative wherever the transport
//! overlaps the two overheads with each other or with the transfer (the shm ring pipelines its
//! two copies; TCP over loopback delivers into the receiver's socket inside the sending call):
//! −655 µs at 1 MiB is no latency. Instead, per protocol (a piece of the size range between two
//! breakpoints of the g + G·s fit), each LogGOPS parameter is fitted where it is identifiable:
//! o_s + O_s·s and o_r + O_r·s by weighted least squares (fixed and per-byte overhead), g + G·s
//! likewise, and L size-independent as the intercept of latency(s) − o_s − o_r, the part of the
//! one-way time that is no overhead where no per-byte cost hides in it. The table then shows,
//! per size, LogGOPS's one-way time with those parameters (o_s + L + o_r + max(O_r, G)·s, as
//! LogGOPSim charges it) beside the measured one. Every
//! figure carries its noise (the median's order-statistic interval, propagated); a figure below
//! zero within its noise is 0, one beyond it is left out with a note, and where the one-way
//! time is below the overheads beyond noise the overlap is reported as its own figure, with L
//! = 0.
//!
//! The loops are generic over the endpoint and over the [`Timer`], so they run unchanged on real
//! transports (TSC) and on the model transport (virtual time), which is how they are tested.

use crate::patterns::LoopError;
use commperf_stats::{
    fit_line_uncertain, median_sorted, median_uncertainty, piecewise_fit, NonNegative,
};
use commperf_transport::clock::Timer;
use commperf_transport::Endpoint;
use serde::{Deserialize, Serialize};

/// Messages per parametrized round trip (Netgauge's default).
pub const N: u32 = 10;

const DATA: u32 = 1;

/// One PRTT variant, as both sides need to know it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Prtt {
    /// Messages per round trip.
    pub n: u32,
    /// Busy-wait between two client sends (ns).
    pub client_delay_ns: f64,
    /// Busy-wait before each server receive but the first (ns).
    pub server_delay_ns: f64,
}

impl Prtt {
    pub fn plain(n: u32) -> Self {
        Prtt {
            n,
            client_delay_ns: 0.0,
            server_delay_ns: 0.0,
        }
    }
}

fn at(iteration: u64) -> impl Fn(commperf_transport::TransportError) -> LoopError {
    move |source| LoopError { iteration, source }
}

/// A PRTT figure: the median round trip of the repetitions and its noise, the standard
/// uncertainty of that median (ns).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    pub ns: f64,
    pub noise_ns: f64,
}

impl Timing {
    /// The median of `samples` (ns; sorted in place; [`median_sorted`]: the mean of the two
    /// middle ones for an even count) and its noise. No sample (callers time at least one) gives
    /// a NaN figure, which the fits refuse as non-finite, instead of a panic.
    pub fn median_of(samples: &mut [f64]) -> Timing {
        samples.sort_by(f64::total_cmp);
        Timing {
            ns: median_sorted(samples).unwrap_or(f64::NAN),
            noise_ns: median_uncertainty(samples).unwrap_or(0.0),
        }
    }
}

/// Client side: `warmup` untimed and `reps` timed round trips of `sbuf.len()` bytes; returns the
/// median round-trip time and its noise.
pub fn prtt_client<E: Endpoint, T: Timer>(
    ep: &mut E,
    t: &T,
    sbuf: &[u8],
    rbuf: &mut [u8],
    p: &Prtt,
    warmup: u64,
    samples: &mut [f64],
) -> Result<Timing, LoopError> {
    let reps = samples.len() as u64;
    for i in 0..warmup + reps {
        let t0 = t.now_ns();
        for k in 0..p.n {
            if k > 0 && p.client_delay_ns > 0.0 {
                t.spin_ns(p.client_delay_ns);
            }
            ep.send(DATA, sbuf).map_err(at(i))?;
        }
        ep.recv(rbuf).map_err(at(i))?;
        if i >= warmup {
            samples[(i - warmup) as usize] = t.now_ns() - t0;
        }
    }
    Ok(Timing::median_of(samples))
}

/// Server side of [`prtt_client`].
pub fn prtt_server<E: Endpoint, T: Timer>(
    ep: &mut E,
    t: &T,
    sbuf: &[u8],
    rbuf: &mut [u8],
    p: &Prtt,
    total: u64,
) -> Result<(), LoopError> {
    for i in 0..total {
        for k in 0..p.n {
            if k > 0 && p.server_delay_ns > 0.0 {
                t.spin_ns(p.server_delay_ns);
            }
            ep.recv(rbuf).map_err(at(i))?;
        }
        ep.send(DATA, sbuf).map_err(at(i))?;
    }
    Ok(())
}

/// The four PRTT figures of one size, each with its noise.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SizePrtt {
    pub size: u64,
    pub n: u32,
    /// PRTT(1, 0, s).
    pub p1: Timing,
    /// PRTT(n, 0, s).
    pub pn: Timing,
    /// PRTT(n, d, s), client delays d = p1.
    pub pnd: Timing,
    /// PRTTᵣ(n, d_r, s), server delays d_r ([`server_delay_ns`]).
    pub pnr: Timing,
    /// d_r as spun, ns; absent in figures written before it was more than p1 (then p1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_delay_ns: Option<f64>,
    /// X(s): one exchange, both sides sending and receiving s bytes at once (MPI_Irecv,
    /// MPI_Isend, MPI_Waitall), where the layer can post both; absent elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchange: Option<Timing>,
}

/// PRTTᵣ's server delay d_r from PRTT(1,0,s) and PRTT(n,0,s): a round trip plus the stream's gap
/// (module doc).
pub fn server_delay_ns(n: u32, p1_ns: f64, pn_ns: f64) -> f64 {
    let gap = (pn_ns - p1_ns) / (n.max(2) - 1) as f64;
    p1_ns + gap.max(0.0)
}

/// A derived figure and its standard uncertainty (ns).
type Est = (f64, f64);

fn quad(a: f64, b: f64) -> f64 {
    a.hypot(b)
}

impl SizePrtt {
    /// The four figures in the order [`variants`] measures them, PRTTᵣ's measured with
    /// [`server_delay_ns`] of the first two.
    pub fn new(size: u64, n: u32, figs: [Timing; 4]) -> Self {
        let [p1, pn, pnd, pnr] = figs;
        SizePrtt {
            size,
            n,
            p1,
            pn,
            pnd,
            pnr,
            server_delay_ns: Some(server_delay_ns(n, p1.ns, pn.ns)),
            exchange: None,
        }
    }

    /// The same figures with an exchange's time X(s).
    pub fn with_exchange(self, x: Timing) -> Self {
        SizePrtt {
            exchange: Some(x),
            ..self
        }
    }

    /// The same figures with PRTTᵣ's server delay as it was spun (a median of several runs'
    /// figures takes the median of their delays, not the delay of the medians).
    pub fn with_server_delay(self, d_r_ns: f64) -> Self {
        SizePrtt {
            server_delay_ns: Some(d_r_ns),
            ..self
        }
    }

    /// PRTTᵣ's server delay d_r (ns).
    pub fn server_delay(&self) -> f64 {
        self.server_delay_ns.unwrap_or(self.p1.ns)
    }

    /// (t − PRTT(1,0,s)) / (n−1) − `delay`, rounded to the picosecond: no clock resolves less,
    /// and what lies below is the rounding of the sums, which a noise-free figure (the model
    /// transport's) would otherwise carry into a fit as a "negative" −10⁻¹⁵.
    fn per_msg(&self, t: Timing, delay: f64) -> Est {
        let nm1 = (self.n.max(2) - 1) as f64;
        let v = (t.ns - self.p1.ns) / nm1 - delay;
        (
            (v * 1e3).round() / 1e3,
            quad(t.noise_ns, self.p1.noise_ns) / nm1,
        )
    }

    /// g + G·s: (PRTT(n,0,s) − PRTT(1,0,s)) / (n−1).
    pub fn gap(&self) -> Est {
        self.per_msg(self.pn, 0.0)
    }

    /// o_s(s): (PRTT(n,d,s) − PRTT(1,0,s)) / (n−1) − d, with d = PRTT(1,0,s) exactly as spun.
    pub fn send_overhead(&self) -> Est {
        self.per_msg(self.pnd, self.p1.ns)
    }

    /// o_r(s): as o_s with the server waiting d_r before each later receive.
    pub fn recv_overhead(&self) -> Est {
        self.per_msg(self.pnr, self.server_delay())
    }

    /// One-way latency: PRTT(1,0,s) / 2.
    pub fn latency(&self) -> Est {
        (self.p1.ns / 2.0, self.p1.noise_ns / 2.0)
    }
}

/// The four variants, in the order they are measured; the third needs PRTT(1,0,s) of `figs`
/// and the last also PRTT(n,0,s): variant k needs only `figs[..k]`.
pub fn variants(n: u32, figs: &[Timing; 4]) -> [Prtt; 4] {
    let d_ns = figs[0].ns;
    let d_r_ns = server_delay_ns(n, figs[0].ns, figs[1].ns);
    [
        Prtt::plain(1),
        Prtt::plain(n),
        Prtt {
            n,
            client_delay_ns: d_ns,
            server_delay_ns: 0.0,
        },
        Prtt {
            n,
            client_delay_ns: 0.0,
            server_delay_ns: d_r_ns,
        },
    ]
}

/// What was measured at one size (ns). A figure is None where it came out below zero beyond
/// its noise (a note on the row says so); within noise it is 0.
#[derive(Debug, Clone, PartialEq)]
pub struct LogGpRow {
    pub size: u64,
    pub latency_ns: f64,
    /// o_s(s) and o_r(s): the CPU time of one send and one receive of this size.
    pub o_s_ns: Option<f64>,
    pub o_r_ns: Option<f64>,
    /// g + G·s: the time between two messages of this size in a stream.
    pub gap_ns: Option<f64>,
    /// X(s): one exchange of this size (both sides send and receive at once), where measured.
    pub exchange_ns: Option<f64>,
    /// Index into [`LogGpFit::pieces`].
    pub piece: usize,
    pub notes: Vec<String>,
}

/// LogGOPS parameters of one protocol (one piece of the size range), each fitted where it can
/// be told apart: ns, per-byte figures in ns per byte. None where a parameter is not
/// identifiable at the piece's sizes or came out unphysical; [`Piece::notes`] say which and
/// why.
#[derive(Debug, Clone, PartialEq)]
pub struct Piece {
    pub from_size: u64,
    pub to_size: u64,
    /// o_s + O_s·s: the send overhead's fixed part and per-byte part.
    pub o_s_ns: Option<f64>,
    pub o_s_per_byte_ns: Option<f64>,
    /// o_r + O_r·s.
    pub o_r_ns: Option<f64>,
    pub o_r_per_byte_ns: Option<f64>,
    /// g + G·s.
    pub g_ns: Option<f64>,
    pub gap_per_byte_ns: Option<f64>,
    /// Network latency, size-independent.
    pub l_ns: Option<f64>,
    /// How much of o_s and o_r run at the same time: the one-way time is that much below
    /// o_s + L + o_r + max(O_r, G)·s. At most one of L and the overlap is above zero.
    pub overlap_ns: Option<f64>,
    /// The part of the send call that waits for the receiver (a rendezvous send lasts until the
    /// peer has copied): an exchange X(s) is that much below o_s(s) + o_r(s), as the waiting
    /// sender takes its own receive meanwhile. Not below 0 nor above o_s(s) at any size; None
    /// without exchange figures (or where L is not identifiable).
    pub send_wait_ns: Option<f64>,
    /// How much an exchange takes beyond o_s(s) + o_r(s) where the two directions slow each
    /// other (loopback TCP: the kernel's work for both on the same sockets), beyond noise;
    /// 0 otherwise. At most one of it and the wait is above zero; None as the wait.
    pub duplex_ns: Option<f64>,
    pub notes: Vec<String>,
}

impl Piece {
    /// LogGOPS's one-way time of `size` bytes, as LogGOPSim charges it (the sender's per-byte
    /// work overlaps the transfer, the receiver's proceeds at the slower of O_r and G), less
    /// the measured overlap.
    pub fn one_way_ns(&self, size: u64) -> Option<f64> {
        let per_byte = match (self.o_r_per_byte_ns, self.gap_per_byte_ns) {
            (Some(a), Some(b)) => a.max(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => return None,
        };
        Some(self.o_s_ns? + self.l_ns? + self.o_r_ns? + per_byte * size as f64 - self.overlap_ns?)
    }
}

/// The figures per size and the LogGOPS parameters per protocol piece.
#[derive(Debug, Clone, PartialEq)]
pub struct LogGpFit {
    pub rows: Vec<LogGpRow>,
    pub pieces: Vec<Piece>,
}

/// A fixed cost is told apart from the per-byte one only where the piece has a size at which it
/// is at least as large as the per-byte part: where every size is dominated by its bytes, an
/// intercept is an extrapolation of a few large points (TCP from 256 KiB to 2 MiB put g at
/// −34 µs and an "overlap" of 56 µs at 0 B, both artefacts of the line's slope).
const IDENTIFIABLE_RATIO: f64 = 1.0;

fn us(ns: f64) -> String {
    format!("{:.3} µs", ns / 1e3)
}

fn sizes_text(from: u64, to: u64) -> String {
    use commperf_core::format_size;
    format!("sizes {} to {}", format_size(from), format_size(to))
}

/// A line through one quantity of one piece, judged: (intercept, slope), each None with a note
/// when it cannot be given.
fn fit_piece(
    what: (&str, &str),
    xs: &[f64],
    ys: &[Est],
    range: &str,
    notes: &mut Vec<String>,
) -> (Option<f64>, Option<f64>) {
    let (name, per_byte) = what;
    let y: Vec<f64> = ys.iter().map(|e| e.0).collect();
    let u: Vec<f64> = ys.iter().map(|e| e.1).collect();
    // Relative weights where the points are exact (the model), their noise where it is larger.
    let w: Vec<f64> = ys
        .iter()
        .map(|&(v, u)| 1.0 / (u * u + (0.02 * v).powi(2) + 1e-6))
        .collect();
    let Some(f) = fit_line_uncertain(xs, &y, &w, &u) else {
        notes.push(format!("{name} and {per_byte}: no line fits {range}"));
        return (None, None);
    };
    let slope = match NonNegative::judge(f.fit.slope, f.u_slope) {
        NonNegative::NotPhysical(v) => {
            notes.push(format!(
                "{per_byte} over {range}: {:.5} ± {:.5} ns/B is below zero beyond its noise; left out",
                v, f.u_slope
            ));
            None
        }
        j => j.shown(),
    };
    let a = f.fit.intercept;
    let per_byte_at_start = f.fit.slope.abs() * xs[0];
    let intercept = if per_byte_at_start > IDENTIFIABLE_RATIO * a.abs() {
        notes.push(format!(
            "{name} is not identifiable over {range}: there the per-byte part ({} at the smallest size) is larger than any fixed part (fit: {} ± {})",
            us(per_byte_at_start),
            us(a),
            us(f.u_intercept)
        ));
        None
    } else {
        match NonNegative::judge(a, f.u_intercept) {
            NonNegative::NotPhysical(v) => {
                notes.push(format!(
                    "{name} over {range}: {} ± {} is below zero beyond its noise; left out",
                    us(v),
                    us(f.u_intercept)
                ));
                None
            }
            j => j.shown(),
        }
    };
    (intercept, slope)
}

/// A per-size figure that cannot be negative, judged against its noise.
fn judged(name: &str, size: u64, (v, u): Est, notes: &mut Vec<String>) -> Option<f64> {
    let j = NonNegative::judge(v, u);
    if let NonNegative::NotPhysical(v) = j {
        notes.push(format!(
            "{name} at {size} B: {} ± {} is below zero beyond its noise (the PRTT figures it is derived from disagree); left out",
            us(v),
            us(u)
        ));
    }
    j.shown()
}

/// Extracts LogGOPS from PRTT figures (any order, at least two distinct sizes).
///
/// - g + G·s per size from the plain round trips; its piecewise fit over all sizes finds the
///   protocol changes, and splits the sizes into pieces;
/// - per piece, weighted least squares of g + G·s, o_s(s) and o_r(s) give g and G, o_s and
///   O_s, o_r and O_r, each with its uncertainty (the points' own noise and the line's misfit);
///   a fixed part is kept only where the piece's sizes can tell it from the per-byte part;
/// - L is size-independent: per piece, the intercept of latency(s) − o_s − o_r, weighted by
///   relative error so that the smallest sizes decide it (where no per-byte cost can hide in
///   it). Where that comes out below zero beyond noise, the transport overlaps sender and
///   receiver work (TCP over loopback delivers into the receiver's socket inside the sending
///   call): L is then 0 and the overlap is reported instead, never a negative L.
pub fn extract(points: &[SizePrtt]) -> Option<LogGpFit> {
    let mut pts = points.to_vec();
    pts.sort_by_key(|p| p.size);
    pts.dedup_by_key(|p| p.size);
    if pts.len() < 2 {
        return None;
    }
    let xs: Vec<f64> = pts.iter().map(|p| p.size as f64).collect();
    let gaps: Vec<Est> = pts.iter().map(SizePrtt::gap).collect();
    let sends: Vec<Est> = pts.iter().map(SizePrtt::send_overhead).collect();
    let recvs: Vec<Est> = pts.iter().map(SizePrtt::recv_overhead).collect();
    let gap_values: Vec<f64> = gaps.iter().map(|g| g.0).collect();
    // A protocol change shows as a jump or bend of g + G·s; a piece fitting within 5 % is kept.
    // Three sizes at least per piece: a line through two noisy points (TCP at 1 and 2 MiB, ten
    // repetitions each) has no misfit to show how far off it is, and its intercept is anything.
    let segments = piecewise_fit(&xs, &gap_values, 3, 3, 0.05)?;
    let mut pieces = Vec::with_capacity(segments.len());
    for seg in &segments {
        let r = seg.start..seg.end;
        let range = sizes_text(pts[seg.start].size, pts[seg.end - 1].size);
        let mut notes = Vec::new();
        let x = &xs[r.clone()];
        let (g, big_g) = fit_piece(("g", "G"), x, &gaps[r.clone()], &range, &mut notes);
        let (o_s, big_os) = fit_piece(("o_s", "O_s"), x, &sends[r.clone()], &range, &mut notes);
        let (o_r, big_or) = fit_piece(("o_r", "O_r"), x, &recvs[r.clone()], &range, &mut notes);
        let mut piece = Piece {
            from_size: pts[seg.start].size,
            to_size: pts[seg.end - 1].size,
            o_s_ns: o_s,
            o_s_per_byte_ns: big_os,
            o_r_ns: o_r,
            o_r_per_byte_ns: big_or,
            g_ns: g,
            gap_per_byte_ns: big_g,
            l_ns: None,
            overlap_ns: Some(0.0),
            send_wait_ns: None,
            duplex_ns: None,
            notes,
        };
        latency_and_overlap(&mut piece, &pts[r.clone()], &range);
        send_wait(
            &mut piece,
            &pts[r.clone()],
            &sends[r.clone()],
            &recvs[r],
            &range,
        );
        pieces.push(piece);
    }
    let rows = pts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let piece = segments
                .iter()
                .position(|s| (s.start..s.end).contains(&i))
                .unwrap_or(0);
            let mut notes = Vec::new();
            LogGpRow {
                size: p.size,
                latency_ns: p.latency().0,
                o_s_ns: judged("o_s", p.size, sends[i], &mut notes),
                o_r_ns: judged("o_r", p.size, recvs[i], &mut notes),
                gap_ns: judged("g + G·s", p.size, gaps[i], &mut notes),
                exchange_ns: p.exchange.map(|x| x.ns),
                piece,
                notes,
            }
        })
        .collect();
    Some(LogGpFit { rows, pieces })
}

/// The send's wait of one piece: the median over its sizes of o_s(s) + o_r(s) − X(s), each
/// within 0 and that size's o_s(s) (the send cannot hold the CPU for less than nothing). An
/// exchange above the two overheads beyond noise is named, and its excess is the piece's
/// duplex: the two directions then slow each other, which LogGP does not hold.
fn send_wait(piece: &mut Piece, pts: &[SizePrtt], sends: &[Est], recvs: &[Est], range: &str) {
    if piece.overlap_ns.is_none() {
        return;
    }
    let mut below: Vec<(f64, f64)> = pts
        .iter()
        .zip(sends.iter().zip(recvs))
        .filter_map(|(p, (s, r))| {
            let x = p.exchange?;
            Some((s.0 + r.0 - x.ns, quad(quad(s.1, r.1), x.noise_ns), s.0))
        })
        .map(|(w, u, o_s)| (w.min(o_s.max(0.0)), u))
        .collect();
    if below.is_empty() {
        return;
    }
    below.sort_by(|a, b| a.0.total_cmp(&b.0));
    // Not commperf-stats' median (the mean of the middle two for an even count) on purpose:
    // each wait comes with the uncertainty computed for its own size, and a mean of two waits
    // would need an uncertainty nobody measured. The upper middle size's pair is taken whole.
    let (w, u) = below[below.len() / 2];
    let excess = w < -u;
    if excess {
        piece.notes.push(format!(
            "over {range} an exchange takes {} ± {} more than o_s + o_r: the two directions slow each other, which LogGP does not hold (the duplex figure)",
            us(-w),
            us(u)
        ));
    }
    let w = (w * 1e3).round() / 1e3;
    piece.send_wait_ns = Some(w.max(0.0));
    piece.duplex_ns = Some(if excess { -w } else { 0.0 });
}

/// Fits L (and the overlap) of one piece: the intercept of latency(s) − o_s − o_r over the
/// piece's sizes, weighted by relative error so that the smallest sizes (where no per-byte
/// cost hides it) decide it; identifiable where the fixed overheads are.
fn latency_and_overlap(piece: &mut Piece, pts: &[SizePrtt], range: &str) {
    let (Some(o_s), Some(o_r)) = (piece.o_s_ns, piece.o_r_ns) else {
        piece.overlap_ns = None;
        piece.notes.push(format!(
            "L is not identifiable over {range}: it is what the latency leaves of the fixed overheads, and those are not"
        ));
        return;
    };
    if pts.len() < 2 {
        piece.overlap_ns = None;
        piece.notes.push(format!(
            "L is not identifiable over {range}: one size is not enough for a line"
        ));
        return;
    }
    let xs: Vec<f64> = pts.iter().map(|p| p.size as f64).collect();
    let rest: Vec<Est> = pts
        .iter()
        .map(|p| {
            let (lat, u) = p.latency();
            (lat - o_s - o_r, u)
        })
        .collect();
    let mut notes = Vec::new();
    let y: Vec<f64> = rest.iter().map(|e| e.0).collect();
    let u: Vec<f64> = rest.iter().map(|e| e.1).collect();
    let w: Vec<f64> = rest
        .iter()
        .map(|&(v, u)| 1.0 / (u * u + (0.02 * v).powi(2) + 1e-6))
        .collect();
    let Some(f) = fit_line_uncertain(&xs, &y, &w, &u) else {
        piece.overlap_ns = None;
        piece.notes.push(format!("L: no line fits {range}"));
        return;
    };
    let l = f.fit.intercept;
    // L is the latency's fixed part less the overheads, so it is told apart where the latency is
    // (its per-byte part at the smallest size below its fixed part o_s + L + o_r), however small
    // L itself is: an L of 0 is a finding (shm on a slow VM put all of the one-way time in the
    // overheads), and judging it against its own size refused it.
    let latency_per_byte =
        f.fit.slope + piece.o_s_per_byte_ns.unwrap_or(0.0) + piece.o_r_per_byte_ns.unwrap_or(0.0);
    let per_byte_at_start = latency_per_byte.abs() * xs[0];
    let fixed = o_s + l + o_r;
    if per_byte_at_start > IDENTIFIABLE_RATIO * fixed.abs() {
        piece.overlap_ns = None;
        notes.push(format!(
            "L is not identifiable over {range}: there the latency's per-byte part ({} at the smallest size) is larger than its fixed part o_s + L + o_r ({}; L's fit: {} ± {})",
            us(per_byte_at_start),
            us(fixed),
            us(l),
            us(f.u_intercept)
        ));
        piece.notes.extend(notes);
        return;
    }
    match NonNegative::judge(l, f.u_intercept) {
        NonNegative::NotPhysical(v) => {
            piece.l_ns = Some(0.0);
            piece.overlap_ns = Some(-v);
            piece.notes.push(format!(
                "over {range} the one-way time is {} ± {} below o_s + o_r: the transport overlaps sender and receiver work by that much, so L is 0 and the overlap is given instead",
                us(-v),
                us(f.u_intercept)
            ));
        }
        j => {
            piece.l_ns = j.shown();
            piece.overlap_ns = Some(0.0);
        }
    }
}

/// The four PRTT figures of every size over a pair of endpoints in one process, `b` serving from
/// a thread of its own: what a session measures over a real connection, for pairs that need no
/// session (the model transport, which runs in virtual time, and decorators over it, whose exact
/// tests recover LogGP through it). One warm-up and one timed repetition per figure: virtual time
/// needs no more. `max_message` sizes the receive buffers. On an error the serving thread is not
/// waited for: it ends when `a` (its peer) is dropped.
pub fn prtt_pair<A, TA, B, TB>(
    a: &mut A,
    ta: &TA,
    mut b: B,
    tb: TB,
    sizes: &[u64],
    max_message: usize,
) -> Result<Vec<SizePrtt>, LoopError>
where
    A: Endpoint,
    TA: Timer,
    B: Endpoint + Send + 'static,
    TB: Timer + Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::channel::<(u64, Prtt)>();
    let server = std::thread::spawn(move || -> Result<(), LoopError> {
        let mut rbuf = vec![0u8; max_message];
        for (size, p) in rx {
            let sbuf = vec![0u8; size as usize];
            prtt_server(&mut b, &tb, &sbuf, &mut rbuf, &p, 5)?;
        }
        Ok(())
    });
    let mut rbuf = vec![0u8; max_message];
    let mut out = Vec::with_capacity(sizes.len());
    for &s in sizes {
        let sbuf = vec![0u8; s as usize];
        let mut run = |p: Prtt| {
            // The server outlives every send: it stops only when `tx` is dropped.
            let _ = tx.send((s, p));
            let mut samples = vec![0.0; 4];
            prtt_client(a, ta, &sbuf, &mut rbuf, &p, 1, &mut samples)
        };
        let mut figs = [Timing::default(); 4];
        for k in 0..4 {
            figs[k] = run(variants(N, &figs)[k])?;
        }
        out.push(SizePrtt::new(s, N, figs));
    }
    drop(tx);
    match server.join() {
        Ok(r) => r?,
        Err(panic) => std::panic::resume_unwind(panic),
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use commperf_transport::sys::model::{self, LogGp, ModelParams};
    use commperf_transport::EndpointConfig;

    /// Runs the four PRTT variants per size over a model pair, as the session does over a real
    /// connection.
    fn measure(params: ModelParams, sizes: &[u64]) -> Vec<SizePrtt> {
        let cfg = EndpointConfig {
            max_message: 8 << 20,
            ..EndpointConfig::default()
        };
        let (mut a, b) = model::pair(params, cfg);
        let (ta, tb) = (a.timer(), b.timer());
        prtt_pair(&mut a, &ta, b, tb, sizes, 8 << 20).unwrap()
    }

    fn within(got: Option<f64>, want: f64, what: &str) {
        let got = got.unwrap_or_else(|| panic!("{what}: absent, want {want}"));
        assert!(
            (got - want).abs() <= 0.02 * want.abs() + 1e-9,
            "{what}: got {got}, want {want} (±2 %)"
        );
    }

    fn sizes() -> Vec<u64> {
        (0..=22).map(|p| 1u64 << p).collect()
    }

    /// Every parameter of every piece, and every per-size figure, against the model's.
    fn check(fit: &LogGpFit, params: &ModelParams) {
        for r in &fit.rows {
            let p = params.at(r.size as usize);
            let piece = &fit.pieces[r.piece];
            let at = |k: &str| format!("{k} at {} B", r.size);
            let s = r.size as f64;
            within(r.o_s_ns, p.o_s_ns + p.o_s_per_byte_ns * s, &at("o_s(s)"));
            within(r.o_r_ns, p.o_r_ns + p.o_r_per_byte_ns * s, &at("o_r(s)"));
            within(r.gap_ns, p.g_ns + p.gap_per_byte_ns * s, &at("g + G·s"));
            within(piece.o_s_ns, p.o_s_ns, &at("o_s"));
            within(piece.o_s_per_byte_ns, p.o_s_per_byte_ns, &at("O_s"));
            within(piece.o_r_ns, p.o_r_ns, &at("o_r"));
            within(piece.o_r_per_byte_ns, p.o_r_per_byte_ns, &at("O_r"));
            within(piece.g_ns, p.g_ns, &at("g"));
            within(piece.gap_per_byte_ns, p.gap_per_byte_ns, &at("G"));
            // L is size-independent: the same figure at every size of the piece.
            within(piece.l_ns, p.l_ns, &at("L"));
            assert_eq!(piece.overlap_ns, Some(0.0), "{}", at("overlap"));
            // And LogGOPS with the fitted parameters gives the measured one-way time.
            within(piece.one_way_ns(r.size), r.latency_ns, &at("one-way time"));
            assert!(r.notes.is_empty(), "{}: {:?}", at("notes"), r.notes);
        }
    }

    #[test]
    fn recovers_the_model_parameters_across_sizes_and_a_protocol_change() {
        let eager = LogGp {
            o_s_ns: 300.0,
            o_r_ns: 400.0,
            g_ns: 500.0,
            gap_per_byte_ns: 0.05,
            l_ns: 1000.0,
            o_s_per_byte_ns: 0.02,
            o_r_per_byte_ns: 0.03,
        };
        let rndv = LogGp {
            o_s_ns: 2000.0,
            o_r_ns: 2500.0,
            g_ns: 3000.0,
            gap_per_byte_ns: 0.03,
            l_ns: 5000.0,
            o_s_per_byte_ns: 0.01,
            o_r_per_byte_ns: 0.02,
        };
        // Rendezvous from 32 KiB: where its fixed costs are still larger than its per-byte
        // ones (they would not be identifiable, and are not reported, if every size of the
        // piece were dominated by its bytes).
        let params = ModelParams {
            small: eager,
            large: Some((16 << 10, rndv)),
        };
        let fit = extract(&measure(params, &sizes())).unwrap();
        assert_eq!(fit.pieces.len(), 2, "one breakpoint: {:?}", fit.pieces);
        assert_eq!(
            (fit.pieces[0].to_size, fit.pieces[1].from_size),
            (16384, 32768)
        );
        check(&fit, &params);
        assert!(fit.pieces.iter().all(|p| p.notes.is_empty()), "{fit:?}");
    }

    #[test]
    fn a_single_protocol_gives_a_single_piece() {
        let p = LogGp {
            o_s_ns: 100.0,
            o_r_ns: 150.0,
            g_ns: 200.0,
            gap_per_byte_ns: 0.1,
            l_ns: 50.0,
            o_s_per_byte_ns: 0.0,
            o_r_per_byte_ns: 0.08,
        };
        let params = ModelParams {
            small: p,
            large: None,
        };
        let fit = extract(&measure(params, &[1, 8, 64, 512, 4096, 32768])).unwrap();
        assert_eq!(fit.pieces.len(), 1);
        check(&fit, &params);
    }

    #[test]
    fn overlapping_overheads_give_an_overlap_never_a_negative_latency() {
        // The first byte reaches the receiver 250 ns before the sender's fixed overhead is
        // over, as TCP over loopback does: Kutluğ's (2000) L = latency − o_s − o_r would be −250
        // ns.
        let p = LogGp {
            o_s_ns: 2000.0,
            o_r_ns: 800.0,
            g_ns: 2200.0,
            gap_per_byte_ns: 0.09,
            l_ns: -250.0,
            o_s_per_byte_ns: 0.05,
            o_r_per_byte_ns: 0.07,
        };
        let params = ModelParams {
            small: p,
            large: None,
        };
        let fit = extract(&measure(params, &[1, 64, 1024, 16384, 262144])).unwrap();
        assert_eq!(fit.pieces.len(), 1);
        let piece = &fit.pieces[0];
        assert_eq!(piece.l_ns, Some(0.0));
        within(piece.overlap_ns, 250.0, "overlap");
        within(piece.o_s_ns, 2000.0, "o_s");
        within(piece.o_r_per_byte_ns, 0.07, "O_r");
        assert!(
            piece.notes[0].starts_with(
                "over sizes 1 to 256K the one-way time is 0.250 µs ± 0.000 µs below o_s + o_r"
            ),
            "{:?}",
            piece.notes
        );
        for r in &fit.rows {
            within(piece.one_way_ns(r.size), r.latency_ns, "one-way time");
        }
    }

    /// PRTT figures from chosen parameters, as a perfect measurement with noise `u` on every
    /// figure would give them.
    fn synthetic(size: u64, o_s: f64, o_r: f64, gap: f64, latency: f64, u: f64) -> SizePrtt {
        let n = N as f64;
        let p1 = 2.0 * latency;
        let t = |ns| Timing { ns, noise_ns: u };
        SizePrtt::new(
            size,
            N,
            [
                t(p1),
                t(p1 + (n - 1.0) * gap),
                t(p1 + (n - 1.0) * (p1 + o_s)),
                t(p1 + (n - 1.0) * (p1 + gap + o_r)),
            ],
        )
    }

    #[test]
    fn the_send_wait_is_what_an_exchange_saves_on_the_two_overheads() {
        // A rendezvous: o_s 2000 and o_r 1900 ns at every size, one-way 2100 (an overlap of
        // 1800), g 2000; exchanges of 2300, 2500 and 2400 ns save 1600, 1400 and 1500 on
        // o_s + o_r: the wait is the median, 1500.
        let pts = |xs: [f64; 3]| -> Vec<SizePrtt> {
            [4096, 8192, 16384]
                .into_iter()
                .zip(xs)
                .map(|(s, x)| {
                    synthetic(s, 2000.0, 1900.0, 2000.0, 2100.0, 0.0).with_exchange(Timing {
                        ns: x,
                        noise_ns: 5.0,
                    })
                })
                .collect()
        };
        let fit = extract(&pts([2300.0, 2500.0, 2400.0])).unwrap();
        let piece = &fit.pieces[0];
        within(piece.overlap_ns, 1800.0, "overlap");
        assert_eq!(piece.send_wait_ns, Some(1500.0));
        assert_eq!(piece.duplex_ns, Some(0.0));
        assert_eq!(fit.rows[1].exchange_ns, Some(2500.0));
        // Beyond o_s it stops at o_s: the send holds the CPU for nothing less than nothing.
        let fit = extract(&pts([1500.0, 1400.0, 1600.0])).unwrap();
        within(fit.pieces[0].send_wait_ns, 2000.0, "wait at o_s");
        // An exchange above o_s + o_r (TCP over loopback) waits for nothing, and is named; its
        // excess, the median 500 ns, is the duplex figure.
        let fit = extract(&pts([4400.0, 4500.0, 4300.0])).unwrap();
        let piece = &fit.pieces[0];
        assert_eq!(piece.send_wait_ns, Some(0.0));
        assert_eq!(piece.duplex_ns, Some(500.0));
        assert!(
            piece.notes.iter().any(|n| n.starts_with(
                "over sizes 4K to 16K an exchange takes 0.500 µs ± 0.005 µs more than o_s + o_r"
            )),
            "{:?}",
            piece.notes
        );
        // Without exchange figures (a transport's layer) there is no wait.
        let bare: Vec<SizePrtt> = pts([0.0; 3])
            .into_iter()
            .map(|p| SizePrtt {
                exchange: None,
                ..p
            })
            .collect();
        let bare = &extract(&bare).unwrap().pieces[0];
        assert_eq!((bare.send_wait_ns, bare.duplex_ns), (None, None));
        // An excess within the figures' noise (3 ns against at least 5) is no excess.
        let fit = extract(&pts([3904.0, 3903.0, 3902.0])).unwrap();
        let piece = &fit.pieces[0];
        assert_eq!(
            (piece.send_wait_ns, piece.duplex_ns),
            (Some(0.0), Some(0.0))
        );
    }

    #[test]
    fn the_receive_overhead_takes_the_server_delay_as_spun() {
        // p1 2000, pn 2000 + 9 × 500: the server waits 2000 + 500 before each later receive,
        // and PRTTᵣ = 2000 + 9 × (2500 + 300) gives o_r 300.
        let t = |ns| Timing { ns, noise_ns: 0.0 };
        let p = SizePrtt::new(64, N, [t(2000.0), t(6500.0), t(2000.0), t(27200.0)]);
        assert_eq!(server_delay_ns(N, 2000.0, 6500.0), 2500.0);
        assert_eq!(
            variants(N, &[t(2000.0), t(6500.0), t(0.0), t(0.0)])[3].server_delay_ns,
            2500.0
        );
        assert_eq!(p.recv_overhead().0, 300.0);
        // Figures written before the delay was stored were measured with d_r = p1.
        let mut j = serde_json::to_value(p).unwrap();
        j.as_object_mut().unwrap().remove("server_delay_ns");
        let old: SizePrtt = serde_json::from_value(j).unwrap();
        assert_eq!(old.recv_overhead().0, 800.0);
        // PRTT(n) below PRTT(1) (noise at a tiny size): no negative gap is waited.
        assert_eq!(server_delay_ns(N, 2000.0, 1000.0), 2000.0);
    }

    #[test]
    fn a_negative_figure_is_zero_within_its_noise_and_left_out_beyond_it() {
        // 90 ns of noise on every PRTT figure gives o_s(s) √(90² + 90²)/(n−1) ≈ 14.1 ns: −20 ns
        // at 4 KiB is within two bands of zero, −300 ns at 16 KiB far beyond them.
        let u = 90.0;
        let pts = [
            synthetic(64, 30.0, 25.0, 50.0, 120.0, u),
            synthetic(1024, 31.0, 26.0, 80.0, 150.0, u),
            synthetic(4096, -20.0, 40.0, 160.0, 260.0, u),
            synthetic(16384, -300.0, 90.0, 500.0, 700.0, u),
        ];
        let fit = extract(&pts).unwrap();
        let row = |s: u64| fit.rows.iter().find(|r| r.size == s).unwrap();
        assert_eq!(row(4096).o_s_ns, Some(0.0), "within 2 bands of 14.1 ns");
        assert!(row(4096).notes.is_empty());
        assert_eq!(row(16384).o_s_ns, None, "−300 ns is 21 bands below zero");
        assert!(
            row(16384).notes[0].starts_with("o_s at 16384 B: -0.300 µs ± 0.014 µs is below zero"),
            "{:?}",
            row(16384).notes
        );
        // Nothing shown anywhere is negative.
        for r in &fit.rows {
            for v in [r.o_s_ns, r.o_r_ns, r.gap_ns].into_iter().flatten() {
                assert!(v >= 0.0, "{r:?}");
            }
        }
        for p in &fit.pieces {
            let all = [
                p.o_s_ns,
                p.o_s_per_byte_ns,
                p.o_r_ns,
                p.o_r_per_byte_ns,
                p.g_ns,
                p.gap_per_byte_ns,
                p.l_ns,
                p.overlap_ns,
            ];
            assert!(all.into_iter().flatten().all(|v| v >= 0.0), "{p:?}");
        }
    }

    #[test]
    fn an_l_of_zero_is_identified_where_the_latency_is_fixed_costs() {
        // All of the one-way time in the overheads (Open MPI's shm on a slow VM): L's own fit
        // is 0, and its per-byte part at 8 B (1 ns) is larger than that, yet the latency there
        // is 400 ns of fixed costs, so L is 0, not "not identifiable".
        let pts: Vec<SizePrtt> = [8u64, 64, 256, 1024, 2048]
            .into_iter()
            .map(|s| {
                let x = s as f64;
                synthetic(
                    s,
                    150.0 + 0.01 * x,
                    250.0 + 0.02 * x,
                    300.0 + 0.1 * x,
                    400.0 + 0.15 * x,
                    2.0,
                )
            })
            .collect();
        let fit = extract(&pts).unwrap();
        let p = &fit.pieces[0];
        let l = p
            .l_ns
            .unwrap_or_else(|| panic!("L left out: {:?}", p.notes));
        assert!(l.abs() < 1.0, "L {l}: {p:?}");
        assert_eq!(p.overlap_ns, Some(0.0), "{p:?}");
        within(p.o_s_ns, 150.0, "o_s");
        within(p.o_r_ns, 250.0, "o_r");
        within(p.one_way_ns(8), 401.2, "one-way time at 8 B");
    }

    #[test]
    fn a_fixed_cost_extrapolated_from_large_sizes_is_not_identifiable() {
        // Only 1, 2 and 4 MiB: a 50 ns fixed gap under 90 µs of per-byte gap cannot be told
        // from zero (the fit's intercept is whatever the large points' noise makes it).
        let per_byte = 0.086;
        let pts: Vec<SizePrtt> = [1u64 << 20, 2 << 20, 4 << 20]
            .into_iter()
            .map(|s| {
                let x = s as f64;
                synthetic(
                    s,
                    100.0 + 0.04 * x,
                    120.0 + 0.05 * x,
                    50.0 + per_byte * x,
                    60.0 + per_byte * x,
                    1000.0,
                )
            })
            .collect();
        let fit = extract(&pts).unwrap();
        let p = &fit.pieces[0];
        assert_eq!(
            (p.g_ns, p.o_s_ns, p.o_r_ns, p.l_ns),
            (None, None, None, None)
        );
        within(p.gap_per_byte_ns, per_byte, "G");
        within(p.o_s_per_byte_ns, 0.04, "O_s");
        assert!(
            p.notes
                .iter()
                .any(|n| n.starts_with("g is not identifiable over sizes 1M to 4M")),
            "{:?}",
            p.notes
        );
        assert!(p
            .notes
            .iter()
            .any(|n| n.starts_with("L is not identifiable")));
    }
}
