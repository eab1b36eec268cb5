//! Stage timing for the pipeline model (Fröhlich et al. 2000, §3.2): each stage of the shm
//! transport's pipelined path, timed for packets sent one at a time over a ladder of packet sizes,
//! fitted to `β + P·τ` by linear regression, and turned into the fragment plan the transport
//! follows.
//!
//! Why it is shaped so:
//! - **The stages as the transport runs them, one packet at a time.** Two threads pinned to the
//!   two CPUs of the run hold the two ends of a real shm connection (the 1 MiB ring, records
//!   of a header line and a line-aligned payload); each packet goes as one record. The sender
//!   times its `send` (the copy into the ring with the record's bookkeeping), the receiver,
//!   once the record is visible, its `recv` (the copy out and the release), each on its own
//!   clock; the hand-over is what the round trip leaves over, halved (the acknowledgement back
//!   is a one-line record: a hand-over with its own small send and receive), so no time is
//!   ever compared across two CPUs' clocks.
//! - **Medians, then a weighted fit.** Each stage's median per packet size; the line is fitted
//!   with weights 1/y² (relative errors), as the Tcom profile is, so that the small packets
//!   decide β and the large ones τ. The fit's R² goes into the profile: a stage that is not
//!   linear in the packet size on this machine says so there.

use crate::buf::PageBuf;
use commperf_core::TransportKind;
use commperf_core::{
    PipelineProfile, PipelineStage, PipelinedPoint, StagePoint, PIPELINE_SCHEMA_VERSION,
};
use commperf_model::pipeline::{PipelineModel, Plan, Rule};
use commperf_transport::affinity;
use commperf_transport::bounds::{max_shm_frag_bytes, MIN_SHM_FRAG_BYTES};
use commperf_transport::clock::Clock;
use commperf_transport::sys::shm::{self, ShmOptions};
use commperf_transport::sys::{tcp, uds};
use commperf_transport::{Endpoint, EndpointConfig, FragmentPlan, Mode, Readiness};
use std::time::{Duration, Instant};

/// The shm pipeline's stages, in the order a packet passes them.
pub const SHM_STAGES: [&str; 3] = [
    "copy into the ring",
    "hand-over between the cores",
    "copy out of the ring",
];

/// The ring the probe and the default profile model (the transport's default ring).
pub const SHM_RING_BYTES: usize = 1 << 20;

/// Bytes a ring record adds to its payload: the header line.
pub const SHM_RECORD_OVERHEAD: u64 = 64;

/// Why stages could not be timed or fitted.
#[derive(Debug, thiserror::Error)]
pub enum StageError {
    #[error("pinning the stage probe to CPU {cpu}: {cause}")]
    Pin { cpu: usize, cause: String },
    #[error("the stage probe's other thread made no progress for 10 s (CPU {cpu} taken?)")]
    Stalled { cpu: usize },
    #[error("the stage probe's transfer failed: {0}")]
    Transfer(String),
    #[error("fitting stage {stage}: {why}")]
    Fit { stage: String, why: String },
}

const STALL: Duration = Duration::from_secs(10);

/// The probes' in-process shm pair: polling, messages up to `max_message`, records as large as
/// the ring allows and no fragment plan (the pipelined probe sets one per fragment size).
fn probe_pair(max_message: usize) -> Result<(shm::ShmEndpoint, shm::ShmEndpoint), StageError> {
    let cfg = EndpointConfig {
        mode: Mode::Poll,
        max_message,
        idle_timeout: STALL,
        block_spins: 0,
    };
    let opts = ShmOptions {
        ring_bytes: SHM_RING_BYTES,
        frag_bytes: max_shm_frag_bytes(SHM_RING_BYTES),
        single_copy_from: None,
        fragments: None,
    };
    shm::pair(cfg, opts).map_err(|e| StageError::Transfer(e.to_string()))
}

/// Median of each shm stage in µs for packets of each size in `ladder`, sent one at a time
/// between `cpus` (sender first). The message buffers span `span` bytes (packets are taken
/// from successive offsets, as a message's fragments are).
pub fn shm_stage_points(
    clock: &Clock,
    cpus: [usize; 2],
    ladder: &[u64],
    span: usize,
) -> Result<Vec<StagePoint>, StageError> {
    let max = ladder.iter().copied().max().unwrap_or(0) as usize;
    // Every packet of the ladder goes as one record: the non-pipelined transfer.
    let (mut a, mut b) = probe_pair(max.max(span))?;
    let mut out = Vec::with_capacity(ladder.len());
    for &p in ladder {
        out.push(stage_point(clock, cpus, &mut a, &mut b, p as usize, span)?);
    }
    Ok(out)
}

/// The socket stages' medians (copy into the kernel, kernel to kernel, copy out of the
/// kernel) for packets of each size in `ladder`, over a loopback TCP connection or a Unix
/// socket pair, between `cpus` (sender first).
pub fn socket_stage_points(
    clock: &Clock,
    cpus: [usize; 2],
    transport: TransportKind,
    ladder: &[u64],
    span: usize,
) -> Result<Vec<StagePoint>, StageError> {
    let max = ladder.iter().copied().max().unwrap_or(0) as usize;
    let cfg = EndpointConfig {
        mode: Mode::Poll,
        max_message: max.max(span),
        idle_timeout: STALL,
        block_spins: 0,
    };
    let err = |e: String| StageError::Transfer(e);
    let mut out = Vec::with_capacity(ladder.len());
    match transport {
        TransportKind::Tcp => {
            let l = tcp::listen("127.0.0.1:0".parse().expect("an address"))
                .map_err(|e| err(e.to_string()))?;
            let addr = l.local_addr().map_err(|e| err(e.to_string()))?;
            let h = std::thread::spawn(move || tcp::accept(&l, cfg));
            let mut a = tcp::connect(addr, cfg).map_err(|e| err(e.to_string()))?;
            let mut b = h
                .join()
                .map_err(|_| err("accept panicked".into()))?
                .map_err(|e| err(e.to_string()))?;
            for &p in ladder {
                out.push(stage_point(clock, cpus, &mut a, &mut b, p as usize, span)?);
            }
        }
        _ => {
            let (mut a, mut b) = uds::pair(cfg).map_err(|e| err(e.to_string()))?;
            for &p in ladder {
                out.push(stage_point(clock, cpus, &mut a, &mut b, p as usize, span)?);
            }
        }
    }
    Ok(out)
}

/// The socket stages' names.
pub const SOCKET_STAGES: [&str; 3] = [
    "copy into the kernel",
    "kernel to kernel",
    "copy out of the kernel",
];

/// The socket packet ladder: 256 B to 1 MiB by powers of two.
pub fn socket_ladder() -> Vec<u64> {
    (8..=20).map(|k| 1u64 << k).collect()
}

/// Times and fits the tcp or uds stages between `cpus` (sender first): fragments (chunked
/// sends) from 4 KiB to 1 MiB, nothing bounding them in flight that the model knows of.
pub fn socket_profile(
    clock: &Clock,
    cpus: [usize; 2],
    transport: TransportKind,
) -> Result<PipelineProfile, StageError> {
    let points = socket_stage_points(clock, cpus, transport, &socket_ladder(), 1 << 20)?;
    fit_stages(
        transport.as_str(),
        &SOCKET_STAGES,
        &points,
        None,
        commperf_transport::sys::socket::HEADER_LEN as u64,
        (4 << 10, 1 << 20),
    )
}

/// One packet size of a stage probe over the connected pair `a` → `b`.
fn stage_point<A, B>(
    clock: &Clock,
    cpus: [usize; 2],
    a: &mut A,
    b: &mut B,
    packet: usize,
    span: usize,
) -> Result<StagePoint, StageError>
where
    A: Endpoint,
    B: Endpoint + Readiness + Send,
{
    let span = span.max(packet);
    // Enough repetitions for a stable median, about 64 MiB moved per size.
    let reps = ((64usize << 20) / packet.max(1)).clamp(300, 5000);
    let warm = reps / 10;
    let n = reps + warm;
    let src = PageBuf::new(span);
    let mut dst = PageBuf::new(span + 64);
    let at = |i: usize| (i * packet) % (span - packet + 1) / 64 * 64;
    let restore = affinity::allowed_cpus();
    let pin = |cpu: usize| {
        affinity::pin_to(cpu).map_err(|e| StageError::Pin {
            cpu,
            cause: e.to_string(),
        })
    };
    let (sent, copied_out) = std::thread::scope(|s| {
        let dst = &mut dst;
        let receiver = s.spawn(move || -> Result<Vec<u64>, StageError> {
            pin(cpus[1])?;
            let mut out = Vec::with_capacity(n);
            let ack = [0u8; 8];
            for i in 0..n {
                let start = Instant::now();
                while !b
                    .readable_now()
                    .map_err(|e| StageError::Transfer(e.to_string()))?
                {
                    if start.elapsed() > STALL {
                        return Err(StageError::Stalled { cpu: cpus[0] });
                    }
                    std::hint::spin_loop();
                }
                let t2 = clock.now();
                let off = at(i);
                b.recv(&mut dst[64 + off..64 + off + packet])
                    .map_err(|e| StageError::Transfer(e.to_string()))?;
                let t3 = clock.now();
                out.push(t3 - t2);
                b.send(2, &ack)
                    .map_err(|e| StageError::Transfer(e.to_string()))?;
            }
            Ok(out)
        });
        let sender = (|| -> Result<Vec<(u64, u64)>, StageError> {
            pin(cpus[0])?;
            let mut out = Vec::with_capacity(n);
            let mut ack = [0u8; 8];
            for i in 0..n {
                let off = at(i);
                let t0 = clock.now();
                a.send(1, &src[off..off + packet])
                    .map_err(|e| StageError::Transfer(e.to_string()))?;
                let t1 = clock.now();
                a.recv(&mut ack)
                    .map_err(|e| StageError::Transfer(e.to_string()))?;
                let t4 = clock.now();
                out.push((t1 - t0, t4 - t0));
            }
            Ok(out)
        })();
        // A failed sender leaves the receiver to its stall timeout.
        let received = receiver
            .join()
            .unwrap_or(Err(StageError::Stalled { cpu: cpus[1] }));
        (sender, received)
    });
    let _ = affinity::set_allowed(&restore);
    let (sent, copied_out) = (sent?, copied_out?);
    let us = |ticks: u64| clock.ticks_to_ns(ticks) / 1e3;
    let mut s1 = Vec::with_capacity(reps);
    let mut s2 = Vec::with_capacity(reps);
    let mut s3 = Vec::with_capacity(reps);
    for i in warm..n {
        let (c_in, rtt) = sent[i];
        let (a, b, round) = (us(c_in), us(copied_out[i]), us(rtt));
        s1.push(a);
        s3.push(b);
        // The round trip is the copy in, the hand-over, the copy out and the acknowledgement
        // (a one-line record back: another hand-over with its own small send and receive).
        s2.push(((round - a - b) / 2.0).max(0.0));
    }
    let med =
        |v: &mut Vec<f64>| commperf_stats::Summary::from_unsorted(v).map_or(f64::NAN, |s| s.p50);
    Ok(StagePoint {
        packet_bytes: packet as u64,
        stage_us: vec![med(&mut s1), med(&mut s2), med(&mut s3)],
    })
}

/// The packet ladder of the shm probe: powers of two from 256 B to the largest fragment of the
/// default ring.
pub fn shm_ladder() -> Vec<u64> {
    let max = max_shm_frag_bytes(SHM_RING_BYTES) as u64;
    let mut v: Vec<u64> = (8..=17).map(|k| 1u64 << k).collect();
    v.push(max);
    v
}

/// Fits each stage's `β + P·τ` to its medians at the packet sizes the adaptive choice may use
/// (from `fragments.0`; the smaller ones stay in the profile's points), weights 1/y²; a
/// negative intercept or slope (which a line through cache-size steps can have) is cut to 0.
pub fn fit_stages(
    transport: &str,
    names: &[&str],
    points: &[StagePoint],
    capacity_bytes: Option<u64>,
    overhead_bytes: u64,
    fragments: (u64, u64),
) -> Result<PipelineProfile, StageError> {
    let mut stages = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let (xs, ys): (Vec<f64>, Vec<f64>) = points
            .iter()
            .filter(|p| p.packet_bytes >= fragments.0)
            .filter_map(|p| {
                let y = *p.stage_us.get(i)?;
                (y.is_finite() && y > 0.0).then_some((p.packet_bytes as f64, y))
            })
            .unzip();
        // Relative errors, but no point weighs more than one of 50 ns: below that a median is
        // a few clock ticks and its relative error means nothing.
        let ws: Vec<f64> = ys.iter().map(|y| 1.0 / y.max(0.05).powi(2)).collect();
        let fit =
            commperf_stats::fit_line_weighted(&xs, &ys, &ws).ok_or_else(|| StageError::Fit {
                stage: name.to_string(),
                why: format!("{} usable points of {}", xs.len(), points.len()),
            })?;
        stages.push(PipelineStage {
            name: name.to_string(),
            beta_us: fit.intercept.max(0.0),
            tau_us_per_byte: fit.slope.max(0.0),
            r2: fit.r2,
        });
    }
    Ok(PipelineProfile {
        version: PIPELINE_SCHEMA_VERSION,
        transport: transport.to_string(),
        stages,
        capacity_bytes,
        overhead_bytes,
        min_fragment_bytes: fragments.0,
        max_fragment_bytes: fragments.1,
        points: points.to_vec(),
        pipelined: Vec::new(),
    })
}

/// The message the pipelined probe sends: large enough that fill and drain are a small part,
/// small enough to stay in the last-level cache (so that it measures the stages, not DRAM).
/// Its times bound the fragment size (the cap) and correct the model's steady state.
pub const PIPELINED_PROBE_BYTES: usize = 4 << 20;

/// The messages the model's start-up and steady states are taken from
/// (`PipelineModel::time_us`): the shortest the transport pipelines (a few packets: the start
/// of a pipeline, where the first packets find the ring's lines and the buffers in the other
/// core's cache), then one message per cache level it passes through, as the steady state
/// changes with each, which stages fitted on small data in cache do not know: in the second
/// level (1 MiB), in the last (4 MiB, the probe that sets the cap), leaving it (16 MiB) and in
/// DRAM (64 MiB). On the development machine (L2 1 MiB a core, L3 32 MiB) the bandwidth is 31
/// GB/s at 1 MiB, 30 at 4, 24 at 8, 18 at 16 and 14 at 64 MiB; with fewer probes the log-L
/// interpolation between them missed by 10–16 %.
pub const PIPELINED_MODEL_PROBES: [usize; 5] =
    [64 << 10, 1 << 20, PIPELINED_PROBE_BYTES, 16 << 20, 64 << 20];

/// One-way time (median of ping-pongs) of a `len`-byte message sent over a real shm connection
/// between `cpus` in fragments of each size of `ladder`.
pub fn shm_pipelined_points(
    clock: &Clock,
    cpus: [usize; 2],
    ladder: &[u64],
    len: usize,
) -> Result<Vec<PipelinedPoint>, StageError> {
    let (mut a, mut b) = probe_pair(len)?;
    // 66 round trips of 4 MiB take about 40 ms a fragment size; of 64 MiB, 23 take 0.2 s; of
    // 64 KiB, 330 take 3 ms (and a few microseconds are noisier).
    let (reps, warm) = if len > PIPELINED_PROBE_BYTES {
        (20usize, 3usize)
    } else if len < PIPELINED_PROBE_BYTES / 8 {
        (300, 30)
    } else {
        (60, 6)
    };
    let src = PageBuf::new(len);
    let mut back = PageBuf::new(len);
    // Allocated once, as the bench's buffers are: a fresh one per fragment size had its pages
    // faulted in by the first rounds.
    let mut rbuf = PageBuf::new(len);
    let restore = affinity::allowed_cpus();
    let pin = |cpu: usize| {
        affinity::pin_to(cpu).map_err(|e| StageError::Pin {
            cpu,
            cause: e.to_string(),
        })
    };
    let mut out = Vec::with_capacity(ladder.len());
    for &p in ladder {
        let plan = Some(FragmentPlan::fixed(p as usize));
        a.set_fragments(plan);
        b.set_fragments(plan);
        let (mine, echoed) = std::thread::scope(|s| {
            let b = &mut b;
            let back = &mut back;
            let echo = s.spawn(move || -> Result<(), StageError> {
                pin(cpus[1])?;
                for _ in 0..reps + warm {
                    let info = b
                        .recv(back)
                        .map_err(|e| StageError::Transfer(e.to_string()))?;
                    b.send(2, &back[..info.len])
                        .map_err(|e| StageError::Transfer(e.to_string()))?;
                }
                Ok(())
            });
            let mine = (|| -> Result<Vec<f64>, StageError> {
                pin(cpus[0])?;
                let mut rtt = Vec::with_capacity(reps);
                for i in 0..reps + warm {
                    let t0 = clock.now();
                    a.send(1, &src)
                        .map_err(|e| StageError::Transfer(e.to_string()))?;
                    a.recv(&mut rbuf)
                        .map_err(|e| StageError::Transfer(e.to_string()))?;
                    if i >= warm {
                        rtt.push(clock.ticks_to_ns(clock.now() - t0) / 2e3);
                    }
                }
                Ok(rtt)
            })();
            let echoed = echo
                .join()
                .unwrap_or(Err(StageError::Stalled { cpu: cpus[1] }));
            (mine, echoed)
        });
        let (mut rtt, ()) = (mine?, echoed?);
        let one_way = commperf_stats::Summary::from_unsorted(&mut rtt).map_or(f64::NAN, |s| s.p50);
        out.push(PipelinedPoint {
            fragment_bytes: p,
            message_bytes: len as u64,
            one_way_us: one_way,
        });
    }
    let _ = affinity::set_allowed(&restore);
    Ok(out)
}

/// The largest fragment whose pipelined time is within 3 % of the fastest, at the probe's
/// in-cache message ([`PIPELINED_PROBE_BYTES`]; `None` without usable points there).
pub fn pipelined_cap(points: &[PipelinedPoint]) -> Option<u64> {
    let points: Vec<&PipelinedPoint> = points
        .iter()
        .filter(|p| p.message_bytes == PIPELINED_PROBE_BYTES as u64)
        .collect();
    let best = points
        .iter()
        .map(|p| p.one_way_us)
        .filter(|t| t.is_finite() && *t > 0.0)
        .fold(f64::INFINITY, f64::min);
    points
        .iter()
        .filter(|p| p.one_way_us.is_finite() && p.one_way_us <= best * 1.03)
        .map(|p| p.fragment_bytes)
        .max()
}

/// Rounds of the pipelined probes in a calibration (each point the median of them).
const PROBE_ROUNDS: usize = 3;

/// Times and fits the shm stages between `cpus` (sender first), then bounds the fragment size
/// by the pipelined probe: the stages are fitted one packet at a time, as Fröhlich et al. (2000)
/// fits them, but on this machine a fragment larger than the first-level cache costs more per byte
/// when the two copies run at once than the isolated stages say (measured by the probes), which
/// a line cannot express. The probe also runs at the other [`PIPELINED_MODEL_PROBES`]: the
/// model takes its steady state from them (`PipelineModel::time_us`).
pub fn shm_profile(clock: &Clock, cpus: [usize; 2]) -> Result<PipelineProfile, StageError> {
    let points = shm_stage_points(clock, cpus, &shm_ladder(), 1 << 20)?;
    let mut prof = fit_stages(
        "shm",
        &SHM_STAGES,
        &points,
        Some(SHM_RING_BYTES as u64),
        SHM_RECORD_OVERHEAD,
        shm_fragment_bounds(),
    )?;
    let ladder: Vec<u64> = shm_ladder()
        .into_iter()
        .filter(|&p| p >= prof.min_fragment_bytes)
        .collect();
    // Each probe PROBE_ROUNDS times, interleaved, and its median kept: one probe of a 64 KiB
    // message read 3.9 µs in one calibration and 4.6 in the next, and the model's start-up is
    // taken from it.
    let mut rounds: Vec<Vec<PipelinedPoint>> = Vec::new();
    for _ in 0..PROBE_ROUNDS {
        let mut one = Vec::new();
        for len in PIPELINED_MODEL_PROBES {
            // A fragment as large as the message is no pipeline.
            let ladder: Vec<u64> = ladder.iter().copied().filter(|&p| p < len as u64).collect();
            one.extend(shm_pipelined_points(clock, cpus, &ladder, len)?);
        }
        rounds.push(one);
    }
    prof.pipelined = (0..rounds[0].len())
        .map(|i| {
            let mut t: Vec<f64> = rounds.iter().map(|r| r[i].one_way_us).collect();
            PipelinedPoint {
                one_way_us: commperf_stats::Summary::from_unsorted(&mut t)
                    .map_or(f64::NAN, |s| s.p50),
                ..rounds[0][i]
            }
        })
        .collect();
    if let Some(cap) = pipelined_cap(&prof.pipelined) {
        prof.max_fragment_bytes = cap.clamp(prof.min_fragment_bytes, prof.max_fragment_bytes);
    }
    Ok(prof)
}

/// The fragment sizes the adaptive choice may pick for the default ring: from 4 KiB to the
/// largest the ring takes. Below 4 KiB the stages are in another regime on this machine (a
/// 2 KiB copy into the ring runs at 50 GB/s, a 4 KiB one at 14 GB/s: the line through the
/// fragment range does not hold there), and fragments that small are never optimal for the
/// messages the pipeline carries.
pub fn shm_fragment_bounds() -> (u64, u64) {
    (
        (4u64 << 10).max(MIN_SHM_FRAG_BYTES as u64),
        max_shm_frag_bytes(SHM_RING_BYTES) as u64,
    )
}

/// The shm profile used when none was calibrated: the medians of five `commperf calibrate -t
/// shm` stage fits on the development machine (2 vCPUs of an AMD EPYC), and its pipelined
/// cap. The fit's R² is not kept: these are medians of fits, not a fit.
pub fn default_shm_profile() -> PipelineProfile {
    let stage = |name: &str, beta_us: f64, tau_us_per_byte: f64| PipelineStage {
        name: name.to_string(),
        beta_us,
        tau_us_per_byte,
        r2: f64::NAN,
    };
    let (min, max) = shm_fragment_bounds();
    PipelineProfile {
        version: PIPELINE_SCHEMA_VERSION,
        transport: "shm".into(),
        stages: vec![
            stage(SHM_STAGES[0], 0.181, 3.25e-5),
            stage(SHM_STAGES[1], 0.093, 0.0),
            stage(SHM_STAGES[2], 0.078, 2.07e-5),
        ],
        capacity_bytes: Some(SHM_RING_BYTES as u64),
        overhead_bytes: SHM_RECORD_OVERHEAD,
        min_fragment_bytes: min,
        // The pipelined probe's cap there (a 4 MiB message: 32 KiB fragments fastest, 64 KiB
        // 7 % slower, 256 KiB 29 %).
        max_fragment_bytes: (32u64 << 10).min(max),
        points: Vec::new(),
        pipelined: Vec::new(),
    }
}

/// The transport's plan from the model's, for messages up to `max_len` (the octaves above it
/// repeat the last one, so that the plan is cheap to compute for small runs).
pub fn fragment_plan(model: &PipelineModel, max_len: u64) -> (FragmentPlan, Plan) {
    let plan = model.plan_up_to(max_len);
    let mut fp = FragmentPlan::fixed(model.max_fragment_bytes as usize);
    fp.whole_up_to = plan.whole_up_to;
    for (k, c) in plan.by_octave.iter().enumerate() {
        fp.by_octave[k] = c.fragment_bytes.min(u32::MAX as u64) as u32;
    }
    (fp, plan)
}

/// The fixed fragment sizes the pipeline benchmark measures: 4 KiB to 128 KiB by powers of
/// two, and the largest the ring takes.
pub fn fixed_ladder(max: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (12..=17)
        .map(|k| 1usize << k)
        .filter(|&f| f < max)
        .collect();
    v.push(max);
    v
}

/// The rule words a row carries: `fixed`, or `adaptive: <rule>`.
pub fn rule_words(rule: Option<Rule>) -> String {
    match rule {
        None => "fixed".into(),
        Some(r) => format!("adaptive: {}", r.as_str()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Points on known lines come back as those lines; points below the fragment range are
    /// kept in the profile but not fitted.
    #[test]
    fn the_fit_recovers_known_stage_lines() {
        let lines = [(0.2, 3.0e-5), (0.1, 0.0), (0.05, 2.0e-5)];
        let mut points: Vec<StagePoint> = (12..=18)
            .map(|k| StagePoint {
                packet_bytes: 1 << k,
                stage_us: lines
                    .iter()
                    .map(|(b, t)| b + t * (1u64 << k) as f64)
                    .collect(),
            })
            .collect();
        // A point of another regime, below the fragment range: must not bend the lines.
        points.insert(
            0,
            StagePoint {
                packet_bytes: 1024,
                stage_us: vec![0.01, 0.5, 0.01],
            },
        );
        let p = fit_stages(
            "shm",
            &SHM_STAGES,
            &points,
            Some(1 << 20),
            64,
            (4096, 200_000),
        )
        .unwrap();
        for (s, (b, t)) in p.stages.iter().zip(lines) {
            assert!((s.beta_us - b).abs() < 1e-9, "{}: β {}", s.name, s.beta_us);
            assert!((s.tau_us_per_byte - t).abs() < 1e-12, "{}: τ", s.name);
        }
        assert_eq!(p.points.len(), 8);
        assert_eq!(p.stages[0].name, "copy into the ring");
    }

    /// The plan the transport gets picks, per octave, the model's choice at the octave's
    /// middle (eq. 8's P_opt where it holds), and sends short messages whole.
    #[test]
    fn the_adaptive_plan_follows_the_profile() {
        let mut prof = default_shm_profile();
        prof.capacity_bytes = None;
        // Without the built-in pipelined cap: the largest fragment the ring takes.
        prof.max_fragment_bytes = shm_fragment_bounds().1;
        prof.stages = vec![
            PipelineStage {
                name: "a".into(),
                beta_us: 0.3,
                tau_us_per_byte: 3.0e-5,
                r2: 1.0,
            },
            PipelineStage {
                name: "b".into(),
                beta_us: 0.1,
                tau_us_per_byte: 0.0,
                r2: 1.0,
            },
            PipelineStage {
                name: "c".into(),
                beta_us: 0.05,
                tau_us_per_byte: 2.0e-5,
                r2: 1.0,
            },
        ];
        let model = PipelineModel::from_profile(&prof).unwrap();
        let (fp, plan) = fragment_plan(&model, 64 << 20);
        assert_eq!(fp.whole_up_to, plan.whole_up_to);
        for k in [16u32, 18, 20, 22] {
            let mid = ((1u64 << k) as f64 * std::f64::consts::SQRT_2) as u64;
            let c = model.choose(mid);
            assert_eq!(fp.for_len(1 << k) as u64, c.fragment_bytes, "octave {k}");
            if c.rule == Rule::Eq8 {
                // Stage a is the bottleneck: √(L·β_a / (τ_b + τ_c)), evened out to equal
                // packets.
                let want = (mid as f64 * 0.3 / 2.0e-5).sqrt();
                let even = mid as f64 / (mid as f64 / want).round();
                assert!((c.fragment_bytes as f64 - even).abs() <= 64.0, "octave {k}");
            }
        }
        // 1 MiB: P_opt = √(2^20·√2 · 0.3 / 2e-5) ≈ 149 KiB, within the bounds; the exact
        // recurrence may do a little better with a shorter last packet (eq. 7 assumes equal
        // ones), but stays near P_opt.
        let (p, _) = plan.for_len(1 << 20);
        assert!((p as f64 / 149_143.0 - 1.0).abs() < 0.1, "{p}");
        // 64 MiB would want ~1.2 MB: beyond the largest fragment, the recurrence decides.
        assert_ne!(plan.for_len(64 << 20).1, Rule::Eq8);
        assert_eq!(fp.for_len(64 << 20) as u64, model.max_fragment_bytes);
        // Short messages go whole, in one record.
        assert_eq!(fp.for_len(4096), 4096);
        assert!(fp.whole_up_to >= 4096);
    }

    /// The cap is the largest fragment within 3 % of the fastest pipelined time.
    #[test]
    fn the_pipelined_cap_is_the_largest_fragment_near_the_fastest() {
        let pt = |f: u64, t: f64| PipelinedPoint {
            fragment_bytes: f,
            message_bytes: 4 << 20,
            one_way_us: t,
        };
        let pts = [
            pt(4096, 162.0),
            pt(16384, 141.0),
            pt(32768, 144.0),
            pt(65536, 189.0),
            pt(262_080, f64::NAN),
            // The DRAM probe does not set the cap.
            PipelinedPoint {
                fragment_bytes: 262_080,
                message_bytes: PIPELINED_MODEL_PROBES[4] as u64,
                one_way_us: 1.0,
            },
        ];
        // 144 ≤ 1.03 × 141 = 145.2; 189 is not.
        assert_eq!(pipelined_cap(&pts), Some(32768));
        assert_eq!(pipelined_cap(&[]), None);
    }

    #[test]
    fn the_fixed_ladder_ends_at_the_largest_fragment() {
        assert_eq!(
            fixed_ladder(262_080),
            vec![4096, 8192, 16384, 32768, 65536, 131072, 262_080]
        );
    }
}
