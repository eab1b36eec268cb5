//! The suite at the MPI layer (Kutluğ 2000, chapter 4), SPMD: every rank runs the same schedule,
//! the initiator of each pair times and keeps the rows, its responder answers. Before every
//! measurement all ranks meet at a barrier, so the pairs of a multi-pair run measure together.
//!
//! Each test is the MPI form of its transport-layer counterpart, made with the calls OSU's
//! tests make:
//! - latency: MPI_Send / MPI_Recv ping-pong, one clock read per round trip;
//! - bw, mr: a window of MPI_Isend, MPI_Waitall, then a 4-byte ack (osu_bw, osu_mbw_mr); the
//!   receiver posts the window's MPI_Irecv into one buffer, as OSU does (one slot per message
//!   with `--validate`, so every message can be checked);
//! - bibw: both sides post a window of MPI_Irecv and MPI_Isend, one MPI_Waitall (osu_bibw);
//! - loggp: Netgauge's PRTT rounds over MPI_Send / MPI_Recv;
//! - bufmgmt: a fresh buffer per message, against the reused one;
//! - blocking: MPI_Irecv + MPI_Wait, and MPI_Irecv + an MPI_Test polling loop, against MPI_Recv;
//! - noncontig: an MPI_Type_vector derived datatype, and the same segments packed by hand;
//! - cq: receives from MPI_ANY_SOURCE against a named source;
//! - conns: latency after the rank has exchanged a message with every other rank (so an MPI
//!   that connects lazily has opened all its connections), against latency before.
//!
//! Extended tests report their cost as the difference from the baseline measured just before
//! with the same loop, as at the transport layer.

use crate::endpoint::{transport_error, MpiEndpoint};
use crate::raw::{any_source, Comm, Datatype, MpiCallError, Window};
use crate::world::MpiWorld;
use crate::{MpiError, Pair};
use commperf_bench::buf::PageBuf;
use commperf_bench::cost::{self, Baseline, Saving};
use commperf_bench::patterns::{self, check, Buffers, Laps, Loop, LoopError, Mismatch, Scattered};
use commperf_bench::session::{loggp_rows, set_rates, summarize_latency};
use commperf_bench::{extended, loggp, machine, BenchConfig, BenchError, Progress, MAX_SIZE};
use commperf_core::{
    Benchmark, BufferUse, CostVariant, Disturbance, Mode, Options, Placement, Report, Row,
    TransportKind, Watch,
};
use commperf_transport::clock::Clock;
use commperf_transport::conformance::fill;
use std::time::SystemTime;

const DATA: i32 = 1;
const ACK: i32 = 2;
const CONNECT: i32 = 3;

/// How the ping-pong's receives complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Receive {
    /// MPI_Recv from the peer (the standard test).
    Named,
    /// MPI_Recv from MPI_ANY_SOURCE (cq).
    AnySource,
    /// MPI_Irecv, then MPI_Wait.
    Wait,
    /// MPI_Irecv, then MPI_Test until done.
    Test,
}

fn at(i: u64) -> impl Fn(MpiCallError) -> LoopError {
    move |e| LoopError {
        iteration: i,
        source: transport_error(e),
    }
}

/// Everything one rank's measurements share.
struct Ctx<'a> {
    world: &'a MpiWorld,
    comm: Comm,
    pair: Pair,
    clock: Clock,
    cfg: &'a BenchConfig,
    win: Window,
}

impl Ctx<'_> {
    fn looping(&self, b: Benchmark, size: u64) -> Loop {
        let (iters, warmup) = self.cfg.counts(b, size);
        let window = match b {
            Benchmark::Bw | Benchmark::Bibw | Benchmark::Mr => self.cfg.window,
            _ => 1,
        };
        Loop {
            warmup,
            iters,
            window,
            validate: self.cfg.validate,
        }
    }

    /// Ends one measurement: the responder tells the initiator what its validation found,
    /// and the initiator turns corruption seen by either side into an error.
    fn settle(&self, phase: &str, mine: Option<Mismatch>) -> Result<(), MpiError> {
        if !self.cfg.validate {
            return Ok(());
        }
        if !self.pair.initiator {
            return self.world.send_json(self.pair.peer, &mine);
        }
        let theirs: Option<Mismatch> = self.world.recv_json(self.pair.peer)?;
        for (m, side) in [(mine, "initiator"), (theirs, "responder")] {
            if let Some(mismatch) = m {
                return Err(BenchError::Validation {
                    phase: phase.into(),
                    mismatch,
                    side,
                }
                .into());
            }
        }
        Ok(())
    }

    fn row(&self, b: Benchmark, mode: Mode, size: u64, lp: &Loop) -> Row {
        let mut row = Row::new(b, TransportKind::Mpi, mode, size);
        (row.iterations, row.warmup, row.validated) = (lp.iters, lp.warmup, lp.validate);
        row
    }

    /// One ping-pong measurement with receives of `kind`; the initiator gets the row.
    fn pingpong(
        &self,
        phase: &str,
        b: Benchmark,
        mode: Mode,
        kind: Receive,
        bufs: (&mut [u8], &mut [u8]),
        lp: &Loop,
    ) -> Result<Option<Row>, MpiError> {
        let (comm, peer) = (self.comm, self.pair.peer);
        let src = if kind == Receive::AnySource {
            any_source()
        } else {
            peer
        };
        let (s, r) = bufs;
        let mut samples = vec![
            0u64;
            if self.pair.initiator {
                lp.iters as usize
            } else {
                0
            }
        ];
        let run = |s: &mut [u8], r: &mut [u8], samples: &mut [u64]| match kind {
            Receive::Named | Receive::AnySource => {
                ping(self, s, r, lp, samples, |b| comm.recv_into(src, DATA, b))
            }
            Receive::Wait => ping(self, s, r, lp, samples, |b| comm.irecv_wait(src, DATA, b)),
            Receive::Test => ping(self, s, r, lp, samples, |b| comm.irecv_test(src, DATA, b)),
        };
        let mine = run(s, r, &mut samples).map_err(|le| transfer(phase, le))?;
        self.settle(phase, mine)?;
        Ok(self.pair.initiator.then(|| {
            let mut row = self.row(b, mode, s.len() as u64, lp);
            summarize_latency(&mut row, &self.clock, &samples);
            row
        }))
    }
}

fn transfer(phase: &str, le: LoopError) -> MpiError {
    BenchError::Transfer {
        phase: format!("{phase}, iteration {}", le.iteration),
        cause: le.source,
    }
    .into()
}

/// The ping-pong loop of either role; `recv` is the receive under test.
#[inline]
fn ping<F: FnMut(&mut [u8]) -> Result<(), MpiCallError>>(
    ctx: &Ctx<'_>,
    s: &mut [u8],
    r: &mut [u8],
    lp: &Loop,
    samples: &mut [u64],
    mut recv: F,
) -> Result<Option<Mismatch>, LoopError> {
    let (comm, peer, clock) = (ctx.comm, ctx.pair.peer, &ctx.clock);
    let total = lp.warmup + lp.iters;
    let mut bad = None;
    // Both ends send the same size, so the reply fills exactly this much (a longer one is an
    // MPI truncation error): no status, no MPI_Get_count in the loop.
    let r = &mut r[..s.len()];
    if ctx.pair.initiator {
        let mut laps = Laps::new(clock, lp, samples);
        for i in 0..total {
            if lp.validate {
                fill(s, i);
            }
            comm.send(peer, DATA, s).map_err(at(i))?;
            recv(r).map_err(at(i))?;
            laps.lap(i);
            if lp.validate {
                check(r, i, &mut bad);
            }
        }
    } else {
        for i in 0..total {
            recv(r).map_err(at(i))?;
            if lp.validate {
                check(r, i, &mut bad);
                fill(s, i);
            }
            comm.send(peer, DATA, s).map_err(at(i))?;
        }
    }
    Ok(bad)
}

/// Runs the suite; rank 0 gets the report (pairs combined).
pub(crate) fn run(
    world: &MpiWorld,
    cfg: &BenchConfig,
    progress: &mut dyn Progress,
) -> Result<Option<Report>, MpiError> {
    let started_unix_s = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let pair = world.pair();
    let max = cfg.max_message();
    let slots = if cfg.validate { cfg.window as usize } else { 1 };
    if (max as u64).saturating_mul(slots as u64) > MAX_SIZE {
        return Err(MpiError::Startup(format!(
            "--validate keeps a window of {} messages of up to {max} B apart to check each, \
             more than {MAX_SIZE} B: lower --window or the largest size",
            cfg.window
        )));
    }
    let mut ctx = Ctx {
        world,
        comm: world.data(),
        pair,
        clock: Clock::calibrate(),
        cfg,
        win: Window::new(2 * cfg.window.max(1) as usize + 2 * world.size() as usize),
    };
    // Every rank watches its own end from here to the end, the other ranks left out: they
    // are this measurement, siblings under mpirun or on other hosts, not our children.
    let ids = world.process_ids()?;
    let me = world.rank() as usize;
    let partners = ids.iter().enumerate().filter(|&(r, _)| r != me);
    // mpirun's binding stands: no CPUs of our choosing to register.
    let mut watch = Watch::start_among("bench", &[], partners.map(|(_, p)| p.clone()).collect());
    let mut sbuf = PageBuf::new(max);
    let mut rbuf = PageBuf::new(max * slots);
    let mut results = Vec::new();
    let total = cfg.benchmarks.len() * cfg.sizes.len();
    let mut done = 0;
    let mut finished = 0;
    for &b in &cfg.benchmarks {
        let mut prtts = Vec::new();
        for &size in &cfg.sizes {
            let size = if matches!(b, Benchmark::Conns | Benchmark::Cq) {
                16
            } else {
                size
            };
            let ph = format!("{b} {size} B over mpi");
            progress.update(&ph, done, total);
            done += 1;
            let (s, r) = (&mut sbuf[..size as usize], &mut rbuf[..]);
            measure(&mut ctx, b, size, &ph, s, r, &mut results, &mut prtts)?;
            // Between measurements, as the other transports look.
            watch.check();
            if matches!(b, Benchmark::Conns | Benchmark::Cq) {
                break; // 16-byte messages only, as at the transport layer
            }
        }
        if b == Benchmark::Loggp && pair.initiator {
            results.extend(loggp_rows(&prtts, TransportKind::Mpi, Mode::Poll, cfg)?);
        }
        finished += 1;
        progress.finished(&format!("{b} over mpi"), finished, cfg.benchmarks.len());
    }
    progress.finish();
    let disturbance = world.merge_findings(1..world.size(), &ids, watch.finish())?;
    finish(world, cfg, ctx.clock, started_unix_s, results, disturbance)
}

#[allow(clippy::too_many_arguments)]
fn measure(
    ctx: &mut Ctx<'_>,
    b: Benchmark,
    size: u64,
    ph: &str,
    s: &mut [u8],
    r: &mut [u8],
    results: &mut Vec<Row>,
    prtts: &mut Vec<loggp::SizePrtt>,
) -> Result<(), MpiError> {
    let lp = ctx.looping(b, size);
    let initiator = ctx.pair.initiator;
    ctx.world.barrier();
    // The standard latency, measured just before an extended test's variants.
    let baseline =
        |ctx: &mut Ctx<'_>, s: &mut [u8], r: &mut [u8]| -> Result<Option<Baseline>, MpiError> {
            let row = ctx.pingpong(
                ph,
                Benchmark::Latency,
                Mode::Poll,
                Receive::Named,
                (s, r),
                &lp,
            )?;
            Ok(row.as_ref().and_then(Baseline::of))
        };
    // Judged against the baseline's and the variant's noise; at this layer a variant below its
    // baseline beyond noise is left out with a note rather than measured again (both ranks
    // would have to agree to repeat it).
    let with_cost = |mut row: Row, base: Option<Baseline>| {
        cost::judge(&mut row, base, Saving::Impossible, true);
        row
    };
    match b {
        Benchmark::Latency => {
            results.extend(ctx.pingpong(ph, b, Mode::Poll, Receive::Named, (s, r), &lp)?);
        }
        // The fragment sizes of commperf's own transports: MPI picks its own (the run's
        // configuration refuses pipeline over mpi, and `all` leaves it out).
        Benchmark::Pipeline => {}
        Benchmark::Bw | Benchmark::Mr | Benchmark::Bibw => {
            let row = stream(ctx, b, ph, s, r, &lp)?;
            results.extend(row);
        }
        Benchmark::Blocking => {
            let base = baseline(ctx, s, r)?;
            for (mode, kind) in [(Mode::Block, Receive::Wait), (Mode::Poll, Receive::Test)] {
                ctx.world.barrier();
                if let Some(mut row) = ctx.pingpong(ph, b, mode, kind, (s, r), &lp)? {
                    row.set_variant(CostVariant::Blocking {
                        block_spins: (kind == Receive::Wait).then_some(0),
                    })
                    .map_err(BenchError::from)?;
                    results.push(with_cost(row, base));
                }
            }
        }
        Benchmark::Cq => {
            let base = baseline(ctx, s, r)?;
            ctx.world.barrier();
            if let Some(mut row) =
                ctx.pingpong(ph, b, Mode::Poll, Receive::AnySource, (s, r), &lp)?
            {
                row.set_variant(CostVariant::Cq {
                    connections: Some(ctx.world.size() as u32 - 1),
                })
                .map_err(BenchError::from)?;
                results.push(with_cost(row, base));
            }
        }
        Benchmark::Conns => {
            let before = ctx.pingpong(ph, b, Mode::Poll, Receive::Named, (s, r), &lp)?;
            let base = before.as_ref().and_then(Baseline::of);
            if let Some(mut row) = before {
                row.set_variant(CostVariant::Conns {
                    connections: Some(1),
                })
                .map_err(BenchError::from)?;
                results.push(with_cost(row, base));
            }
            let others = ctx.world.size() as u32 - 1;
            if others > 1 {
                connect_all(ctx).map_err(|e| BenchError::Transfer {
                    phase: format!("{ph}: exchanging a message with every rank"),
                    cause: transport_error(e),
                })?;
                ctx.world.barrier();
                if let Some(mut row) =
                    ctx.pingpong(ph, b, Mode::Poll, Receive::Named, (s, r), &lp)?
                {
                    row.set_variant(CostVariant::Conns {
                        connections: Some(others),
                    })
                    .map_err(BenchError::from)?;
                    results.push(with_cost(row, base));
                }
            }
        }
        Benchmark::Bufmgmt => {
            // Both through the generic loop over the MPI endpoint, so the difference is the
            // buffers alone.
            let base = generic_latency(ctx, ph, s, r, &lp, false)?
                .as_ref()
                .and_then(Baseline::of);
            ctx.world.barrier();
            if let Some(mut row) = generic_latency(ctx, ph, s, r, &lp, true)? {
                row.set_variant(CostVariant::Bufmgmt {
                    buffers: Some(BufferUse::Fresh),
                })
                .map_err(BenchError::from)?;
                results.push(with_cost(row, base));
            }
        }
        Benchmark::Noncontig => {
            let base = baseline(ctx, s, r)?;
            for k in extended::segment_counts(size) {
                for packed in [false, true] {
                    ctx.world.barrier();
                    let vph = format!(
                        "{ph}, {k} segment{}, {}",
                        if k == 1 { "" } else { "s" },
                        if packed { "packed" } else { "derived datatype" }
                    );
                    if let Some(mut row) = noncontig(ctx, &vph, size, k, packed, r, &lp)? {
                        row.set_variant(CostVariant::Noncontig {
                            segments: Some(k),
                            packed: Some(packed),
                        })
                        .map_err(BenchError::from)?;
                        results.push(with_cost(row, base));
                    }
                }
            }
        }
        Benchmark::Loggp => {
            let mut ep = MpiEndpoint::new(ctx.comm, ctx.pair.peer, peer_desc(ctx), s.len().max(64))
                .with_nonblocking(ctx.cfg.mpi_nonblocking);
            let mut figs = [loggp::Timing::default(); 4];
            let mut samples = vec![0.0; lp.iters as usize];
            for k in 0..4 {
                ctx.world.barrier();
                let res = if initiator {
                    let p = loggp::variants(loggp::N, &figs)[k];
                    ctx.world.send_json(ctx.pair.peer, &p)?;
                    loggp::prtt_client(&mut ep, &ctx.clock, s, r, &p, lp.warmup, &mut samples)
                        .map(|f| figs[k] = f)
                } else {
                    let p: loggp::Prtt = ctx.world.recv_json(ctx.pair.peer)?;
                    loggp::prtt_server(&mut ep, &ctx.clock, s, r, &p, lp.warmup + lp.iters)
                };
                res.map_err(|le| transfer(ph, le))?;
            }
            ctx.world.barrier();
            let x = exchange(ctx, s, r, &lp, &mut samples).map_err(|le| transfer(ph, le))?;
            prtts.push(loggp::SizePrtt::new(size, loggp::N, figs).with_exchange(x));
        }
    }
    Ok(())
}

/// Exchanges timed together, so that one clock read does not weigh on a 0.2 µs exchange.
const EXCHANGE_BATCH: u64 = 8;

/// X(s) of `bench loggp`: both ranks post MPI_Irecv and MPI_Isend and wait for both
/// (MPI_Waitall), `lp.warmup` untimed and `samples.len()` timed batches of [`EXCHANGE_BATCH`];
/// the initiator's median per exchange and its noise (the responder's figure is not used). A
/// rendezvous send that waits for the peer's copy spends that wait on its own receive here,
/// which the PRTT figures, one direction at a time, cannot show.
fn exchange(
    ctx: &mut Ctx<'_>,
    s: &[u8],
    r: &mut [u8],
    lp: &Loop,
    samples: &mut [f64],
) -> Result<loggp::Timing, LoopError> {
    let (comm, peer) = (ctx.comm, ctx.pair.peer);
    let (win, clock) = (&mut ctx.win, &ctx.clock);
    let reps = samples.len() as u64;
    for i in 0..lp.warmup + reps {
        let t0 = clock.now();
        for _ in 0..EXCHANGE_BATCH {
            win.exchange_all(comm, peer, DATA, s, r, 0, 1)
                .map_err(at(i))?;
        }
        if i >= lp.warmup {
            samples[(i - lp.warmup) as usize] =
                clock.ticks_to_ns(clock.now() - t0) / EXCHANGE_BATCH as f64;
        }
    }
    Ok(loggp::Timing::median_of(samples))
}

fn peer_desc(ctx: &Ctx<'_>) -> String {
    let p = ctx.pair.peer;
    format!("rank {p} on {}", ctx.world.host(p))
}

/// The latency loop shared with the transport layer, over the MPI endpoint: reused buffers, or
/// (`fresh`) a fresh buffer per message from pools larger than the last-level cache.
fn generic_latency(
    ctx: &mut Ctx<'_>,
    ph: &str,
    s: &mut [u8],
    r: &mut [u8],
    lp: &Loop,
    fresh: bool,
) -> Result<Option<Row>, MpiError> {
    let size = s.len();
    let mut ep = MpiEndpoint::new(ctx.comm, ctx.pair.peer, peer_desc(ctx), size.max(64))
        .with_nonblocking(ctx.cfg.mpi_nonblocking);
    let mut pools;
    let mut bufs = if fresh {
        pools = extended::fresh_pools(size);
        let (sp, rp, stride) = (&mut pools.0, &mut pools.1, pools.2);
        Buffers::rotating(sp, rp, size, stride)
    } else {
        Buffers::reused(s, r)
    };
    let mut samples = vec![
        0u64;
        if ctx.pair.initiator {
            lp.iters as usize
        } else {
            0
        }
    ];
    let mine = if ctx.pair.initiator {
        patterns::latency_initiator(&mut ep, &ctx.clock, &mut bufs, lp, &mut samples)
    } else {
        patterns::latency_responder(&mut ep, &mut bufs, lp)
    }
    .map_err(|le| transfer(ph, le))?;
    ctx.settle(ph, mine)?;
    let b = if fresh {
        Benchmark::Bufmgmt
    } else {
        Benchmark::Latency
    };
    Ok(ctx.pair.initiator.then(|| {
        let mut row = ctx.row(b, Mode::Poll, size as u64, lp);
        summarize_latency(&mut row, &ctx.clock, &samples);
        row
    }))
}

/// bw, mr (a window out, an ack back) and bibw (windows both ways); the initiator's row.
fn stream(
    ctx: &mut Ctx<'_>,
    b: Benchmark,
    ph: &str,
    s: &mut [u8],
    r: &mut [u8],
    lp: &Loop,
) -> Result<Option<Row>, MpiError> {
    let (comm, peer, w) = (ctx.comm, ctx.pair.peer, lp.window as usize);
    let size = s.len();
    // One slot per message when validating, so each can be checked; otherwise every receive
    // of a window lands in one buffer, as in OSU's tests.
    let slot = if lp.validate { size } else { 0 };
    let total = lp.warmup + lp.iters;
    let mut ack = [0u8; 4];
    let mut bad = None;
    let mut ticks = 0;
    let check_slots = |r: &[u8], i: u64, bad: &mut Option<Mismatch>| {
        for k in 0..w {
            check(&r[k * size..(k + 1) * size], i, bad);
        }
    };
    let initiator = ctx.pair.initiator;
    let win = &mut ctx.win;
    let clock = &ctx.clock;
    let res = (|| -> Result<(), LoopError> {
        let mut t0 = clock.now();
        for i in 0..total {
            if i == lp.warmup {
                t0 = clock.now();
            }
            match (b, initiator) {
                (Benchmark::Bibw, _) => {
                    if lp.validate {
                        fill(s, i);
                    }
                    win.exchange_all(comm, peer, DATA, s, r, slot, w)
                        .map_err(at(i))?;
                    if lp.validate {
                        check_slots(r, i, &mut bad);
                    }
                }
                (_, true) => {
                    if lp.validate {
                        fill(s, i);
                    }
                    win.send_all(comm, peer, DATA, s, w).map_err(at(i))?;
                    comm.recv_into(peer, ACK, &mut ack).map_err(at(i))?;
                }
                (_, false) => {
                    win.recv_all(comm, peer, DATA, r, size, slot, w)
                        .map_err(at(i))?;
                    if lp.validate {
                        check_slots(r, i, &mut bad);
                    }
                    comm.send(peer, ACK, &ack).map_err(at(i))?;
                }
            }
        }
        ticks = clock.now() - t0;
        Ok(())
    })();
    res.map_err(|le| transfer(ph, le))?;
    ctx.settle(ph, bad)?;
    if !ctx.pair.initiator {
        return Ok(None);
    }
    let mut row = ctx.row(b, Mode::Poll, size as u64, lp);
    let secs = ctx.clock.ticks_to_ns(ticks) / 1e9;
    let both = if b == Benchmark::Bibw { 2.0 } else { 1.0 };
    let msgs = both * (w as u64 * lp.iters) as f64;
    set_rates(&mut row, lp.window, msgs, secs);
    Ok(Some(row))
}

/// Ping-pong whose messages leave from `k` scattered segments, described to MPI by a derived
/// datatype or packed by hand into one buffer first; replies are received contiguous, as at the
/// transport layer.
fn noncontig(
    ctx: &mut Ctx<'_>,
    ph: &str,
    size: u64,
    k: u32,
    packed: bool,
    r: &mut [u8],
    lp: &Loop,
) -> Result<Option<Row>, MpiError> {
    let (comm, peer, clock) = (ctx.comm, ctx.pair.peer, &ctx.clock);
    let (mut mem, ranges) = extended::scattered(size as usize, k as usize);
    let dt = Datatype::segments(&ranges)?;
    let mut msg = Scattered::new(&mut mem, &ranges);
    let mut pack = PageBuf::new(size as usize);
    let r = &mut r[..size as usize];
    let mut samples = vec![
        0u64;
        if ctx.pair.initiator {
            lp.iters as usize
        } else {
            0
        }
    ];
    let mut bad = None;
    let total = lp.warmup + lp.iters;
    let mut send = |i: u64| -> Result<(), MpiCallError> {
        if lp.validate {
            msg.fill(i);
        }
        if packed {
            msg.pack_into(&mut pack);
            comm.send(peer, DATA, &pack)
        } else {
            comm.send_typed(peer, DATA, msg.memory(), &dt)
        }
    };
    let res = (|| -> Result<(), LoopError> {
        if ctx.pair.initiator {
            let mut laps = Laps::new(clock, lp, &mut samples);
            for i in 0..total {
                send(i).map_err(at(i))?;
                comm.recv_into(peer, DATA, r).map_err(at(i))?;
                laps.lap(i);
                if lp.validate {
                    check(r, i, &mut bad);
                }
            }
        } else {
            for i in 0..total {
                comm.recv_into(peer, DATA, r).map_err(at(i))?;
                if lp.validate {
                    check(r, i, &mut bad);
                }
                send(i).map_err(at(i))?;
            }
        }
        Ok(())
    })();
    res.map_err(|le| transfer(ph, le))?;
    ctx.settle(ph, bad)?;
    Ok(ctx.pair.initiator.then(|| {
        let mut row = ctx.row(Benchmark::Noncontig, Mode::Poll, size, lp);
        summarize_latency(&mut row, &ctx.clock, &samples);
        row
    }))
}

/// Every rank sends one 16-byte message to every other and receives one from each.
fn connect_all(ctx: &mut Ctx<'_>) -> Result<(), MpiCallError> {
    let n = ctx.world.size() as usize;
    let me = ctx.world.rank();
    let out = [0u8; 16];
    let mut inbox = vec![0u8; 16 * n];
    let others: Vec<i32> = (0..n as i32).filter(|&p| p != me).collect();
    ctx.win
        .scatter_gather(ctx.comm, &others, CONNECT, &out, &mut inbox)
}

/// Builds rank 0's report: each initiator's rows, combined over the pairs.
fn finish(
    world: &MpiWorld,
    cfg: &BenchConfig,
    clock: Clock,
    started_unix_s: u64,
    rows: Vec<Row>,
    disturbance: Option<Disturbance>,
) -> Result<Option<Report>, MpiError> {
    let pair = world.pair();
    let cpu = commperf_transport::affinity::current_cpu();
    if !pair.initiator {
        world.send_json(pair.peer, &cpu)?;
        return Ok(None);
    }
    let peer_cpu: Option<usize> = world.recv_json(pair.peer)?;
    let Some(results) = world.combine_pairs(rows)? else {
        return Ok(None);
    };
    Ok(Some(Report {
        schema_version: commperf_core::SCHEMA_VERSION,
        tool: format!("commperf {}", env!("CARGO_PKG_VERSION")),
        started_unix_s,
        machine: machine::describe(clock.timer_info()),
        options: Options {
            benchmarks: cfg.benchmarks.clone(),
            transports: vec![TransportKind::Mpi],
            modes: vec![Mode::Poll],
            sizes_bytes: cfg.sizes.clone(),
            iterations: cfg.iterations,
            warmup: cfg.warmup,
            window: cfg.window,
            validate: cfg.validate,
            launcher: "mpi".into(),
            peer: Some(world.peer_description()),
            mpi_library: Some(world.library().to_string()),
            mpi_calls: Some(
                if cfg.mpi_nonblocking {
                    "nonblocking"
                } else {
                    "blocking"
                }
                .into(),
            ),
        },
        placement: Placement {
            pinned: false,
            local_cpu: cpu,
            peer_cpu,
            ..Placement::default()
        },
        limits: None,
        results,
        disturbance: disturbance.unwrap_or_default(),
        partial: false,
    }))
}
