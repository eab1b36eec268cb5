//! LogGP parameters by parametrized round trips, Netgauge's PRTT method (DESIGN.md, seed 004
//! §3.3.4).
//!
//! PRTT(n, d, s): the client sends n messages of s bytes, busy-waiting d between two sends; the
//! server answers with one s-byte message once all n have arrived; the client times the whole
//! exchange. With d = PRTT(1, 0, s):
//!
//! - g + G·s = (PRTT(n,0,s) − PRTT(1,0,s)) / (n−1), fitted over all sizes by weighted least squares
//!   (intercept g, slope G), piecewise with breakpoints found where the protocol changes;
//! - o_s = (PRTT(n,d,s) − PRTT(1,0,s)) / (n−1) − d;
//! - o_r = (PRTTᵣ(n,d,s) − PRTT(1,0,s)) / (n−1) − d, where the *server* waits d before each of its
//!   n−1 later receives;
//! - latency = PRTT(1,0,s) / 2 and, as in seed 004, L = latency − o_s − o_r (so L of an s-byte
//!   message includes its time on the wire).
//!
//! The loops are generic over the endpoint and over the [`Timer`], so they run unchanged on real
//! transports (TSC) and on the model transport (virtual time), which is how they are tested.

use crate::patterns::LoopError;
use commperf_stats::{piecewise_fit, Segment};
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

/// Client side: `warmup` untimed and `reps` timed round trips of `sbuf.len()` bytes; returns the
/// median round-trip time in ns.
pub fn prtt_client<E: Endpoint, T: Timer>(
    ep: &mut E,
    t: &T,
    sbuf: &[u8],
    rbuf: &mut [u8],
    p: &Prtt,
    warmup: u64,
    samples: &mut [f64],
) -> Result<f64, LoopError> {
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
    samples.sort_by(f64::total_cmp);
    Ok(samples[samples.len() / 2])
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

/// The four PRTT figures of one size (ns).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SizePrtt {
    pub size: u64,
    pub n: u32,
    /// PRTT(1, 0, s).
    pub p1: f64,
    /// PRTT(n, 0, s).
    pub pn: f64,
    /// PRTT(n, d, s), client delays d = p1.
    pub pnd: f64,
    /// PRTTᵣ(n, d, s), server delays d = p1.
    pub pnr: f64,
}

/// The four variants, in the order they are measured; the last two need d = PRTT(1,0,s).
pub fn variants(n: u32, d_ns: f64) -> [Prtt; 4] {
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
            server_delay_ns: d_ns,
        },
    ]
}

/// LogGP of one size (ns; G in ns per byte), and the piece of the g/G fit it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LogGpRow {
    pub size: u64,
    pub o_s_ns: f64,
    pub o_r_ns: f64,
    pub g_ns: f64,
    pub gap_per_byte_ns: f64,
    pub l_ns: f64,
    pub latency_ns: f64,
    pub piece: usize,
}

/// The parameters per size and the pieces of the g + G·s fit (breakpoints between them).
#[derive(Debug, Clone, PartialEq)]
pub struct LogGpFit {
    pub rows: Vec<LogGpRow>,
    pub pieces: Vec<Segment>,
}

/// Extracts LogGP from PRTT figures (sorted by size, at least two sizes).
pub fn extract(points: &[SizePrtt]) -> Option<LogGpFit> {
    let mut pts = points.to_vec();
    pts.sort_by_key(|p| p.size);
    let xs: Vec<f64> = pts.iter().map(|p| p.size as f64).collect();
    let gaps: Vec<f64> = pts
        .iter()
        .map(|p| (p.pn - p.p1) / (p.n - 1) as f64)
        .collect();
    // A protocol change shows as a jump or bend of g + G·s; a piece fitting within 5 % is kept.
    let pieces = piecewise_fit(&xs, &gaps, 3, 2, 0.05)?;
    let rows = pts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let piece = pieces
                .iter()
                .position(|s| (s.start..s.end).contains(&i))
                .unwrap_or(0);
            let fit = pieces[piece].fit;
            let d = p.p1;
            let nm1 = (p.n - 1) as f64;
            let o_s = (p.pnd - p.p1) / nm1 - d;
            let o_r = (p.pnr - p.p1) / nm1 - d;
            let latency = p.p1 / 2.0;
            LogGpRow {
                size: p.size,
                o_s_ns: o_s,
                o_r_ns: o_r,
                g_ns: fit.intercept,
                gap_per_byte_ns: fit.slope,
                l_ns: latency - o_s - o_r,
                latency_ns: latency,
                piece,
            }
        })
        .collect();
    Some(LogGpFit { rows, pieces })
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
        let (mut a, mut b) = model::pair(params, cfg);
        let (ta, tb) = (a.timer(), b.timer());
        let (tx, rx) = std::sync::mpsc::channel::<(u64, Prtt)>();
        let server = std::thread::spawn(move || {
            let mut rbuf = vec![0u8; 8 << 20];
            for (size, p) in rx {
                let sbuf = vec![0u8; size as usize];
                prtt_server(&mut b, &tb, &sbuf, &mut rbuf, &p, 5).unwrap();
            }
        });
        let mut rbuf = vec![0u8; 8 << 20];
        let mut out = Vec::new();
        for &s in sizes {
            let sbuf = vec![0u8; s as usize];
            let mut run = |p: Prtt| {
                tx.send((s, p)).unwrap();
                let mut samples = vec![0.0; 4];
                prtt_client(&mut a, &ta, &sbuf, &mut rbuf, &p, 1, &mut samples).unwrap()
            };
            let p1 = run(Prtt::plain(1));
            let v = variants(N, p1);
            let (pn, pnd, pnr) = (run(v[1]), run(v[2]), run(v[3]));
            out.push(SizePrtt {
                size: s,
                n: N,
                p1,
                pn,
                pnd,
                pnr,
            });
        }
        drop(tx);
        server.join().unwrap();
        out
    }

    fn within(got: f64, want: f64, what: &str) {
        assert!(
            (got - want).abs() <= 0.02 * want.abs(),
            "{what}: got {got}, want {want} (±2 %)"
        );
    }

    #[test]
    fn recovers_the_model_parameters_across_sizes_and_a_protocol_change() {
        let eager = LogGp {
            o_s_ns: 300.0,
            o_r_ns: 400.0,
            g_ns: 500.0,
            gap_per_byte_ns: 0.05,
            l_ns: 1000.0,
        };
        let rndv = LogGp {
            o_s_ns: 2000.0,
            o_r_ns: 2500.0,
            g_ns: 3000.0,
            gap_per_byte_ns: 0.03,
            l_ns: 5000.0,
        };
        let params = ModelParams {
            small: eager,
            large: Some((64 << 10, rndv)),
        };
        let sizes: Vec<u64> = (0..=22).map(|p| 1u64 << p).collect();
        let fit = extract(&measure(params, &sizes)).unwrap();
        assert_eq!(fit.pieces.len(), 2, "one breakpoint: {:?}", fit.pieces);
        assert_eq!(
            (fit.pieces[0].to_x, fit.pieces[1].from_x),
            (65536.0, 131072.0)
        );
        for r in &fit.rows {
            let p = params.at(r.size as usize);
            let what = |k: &str| format!("{k} at {} B", r.size);
            within(r.o_s_ns, p.o_s_ns, &what("o_s"));
            within(r.o_r_ns, p.o_r_ns, &what("o_r"));
            within(r.g_ns, p.g_ns, &what("g"));
            within(r.gap_per_byte_ns, p.gap_per_byte_ns, &what("G"));
            // L of an s-byte message includes its time on the wire.
            within(
                r.l_ns,
                p.l_ns + p.gap_per_byte_ns * r.size as f64,
                &what("L"),
            );
        }
    }

    #[test]
    fn a_single_protocol_gives_a_single_piece() {
        let p = LogGp {
            o_s_ns: 100.0,
            o_r_ns: 150.0,
            g_ns: 200.0,
            gap_per_byte_ns: 0.1,
            l_ns: 50.0,
        };
        let params = ModelParams {
            small: p,
            large: None,
        };
        let sizes = [1, 8, 64, 512, 4096, 32768];
        let fit = extract(&measure(params, &sizes)).unwrap();
        assert_eq!(fit.pieces.len(), 1);
        within(fit.rows[0].g_ns, 200.0, "g");
        within(fit.rows[5].gap_per_byte_ns, 0.1, "G");
    }
}
