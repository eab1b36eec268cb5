//! `commperf app --loop`: the loop bench → monitor → predict, closed and measured. Per stack, its
//! LogGP parameters at the MPI layer (`commperf bench loggp --transport mpi`, 2 ranks under the
//! stack's own launch); the reference stack is the one with the least small-message cost o_s + L +
//! o_r. Each program's monitored run on the reference is converted into a trace (the one `commperf
//! monitor --trace` writes) and replayed in-process by the predict crate's LogGP model with every
//! stack's parameters; each other stack is emulated on the reference by the interposer's knobs
//! set to the parameters' differences. Both are set against the runs the study already made.
//!
//! The times compared are a window of the monitored runs, not MPI_Init to MPI_Finalize: for the
//! kit's programs, from the end of each rank's last MPI_Barrier (every kit program times its loop
//! from the barrier before it) to the end of its last MPI call; the whole run when a rank calls
//! no barrier, and for every other program (whose barriers say nothing of its timed part). The span
//! before it is start-up (the interposer's clock sync, communicator set-up, the first messages
//! that open Open MPI's TCP connections: 0.2 s of a 0.02 s halo run on ompi-tcp) which no LogGP
//! parameter describes. The trace replayed is cut at the same point, so prediction and
//! measurement cover the same calls, and the monitor measures that window (and the time inside
//! MPI calls in it) on every run alike, the real ones and the emulated ones. The program's own
//! times (`time X s`) are kept beside the emulated ones, where both sides are real runs.
//!
//! Its own module because it is a second study on top of the first: it needs the cells' runs
//! (monitor directories) and adds runs of its own, but none of the table's logic. `app` calls
//! it in three places: [`measure`] before any program runs, [`plan`] and [`emulate_round`]
//! inside the rounds of each program (the emulated runs interleaved with the real ones), and
//! [`finish`] once every run is done.

use crate::config::StudyConfig;
use crate::error::{chain, Context, Result, StudyError};
use crate::launch::{launch_of, monitored_run, RunResult, Verdict};
use crate::micro::{bench_rows, ladder_from_bench, params_from_bench, pieces_from_bench};
use crate::nets::Nets;
use crate::programs::Program;
use crate::rounds::{
    error_percent, knob_deltas, measured_times, miss_causes, reference, runs_off, state_name,
    tally, EAGER_BYTES, EMULATED_RUNS, LOGGP_ITERS, LOGGP_ROUNDS, LOGGP_SIZES,
};
use crate::schema::{Cell, Emulation, Loop, LoopCell, LoopStack, Params};
use crate::stack::Stack;
use commperf_bench::Progress;
use commperf_emulate::sweep::{median_send_bytes, same_state, send_bytes_above_percent};
use commperf_emulate::Knobs;
use commperf_model::tcom::Tcom;
use commperf_predict::engine::{self, Inputs, LogGp, Overlap, PredictConfig};
use commperf_predict::parse::{self, ParseOptions, TraceFormat};
use commperf_predict::topology::{self, RankMap, TopologySpec};
use commperf_stats::median;
use std::path::{Path, PathBuf};

/// The model's LogGP parameters of a stack's `bench loggp` piece.
fn loggp_of(p: &Params) -> LogGp {
    LogGp {
        L_ns: p.L_ns,
        o_s_ns: p.o_s_ns,
        o_r_ns: p.o_r_ns,
        g_ns: p.g_ns,
        G_ns_per_byte: p.G_ns_per_byte,
        O_ns_per_byte: p.O_ns_per_byte,
    }
}

/// Progress of the study the loop's steps count in.
pub(crate) struct Steps<'a> {
    pub progress: &'a mut dyn Progress,
    pub done: usize,
    pub total: usize,
}

impl Steps<'_> {
    /// One step: `f`, between the progress's `update` and `finished`.
    pub(crate) fn step<T>(&mut self, label: &str, f: impl FnOnce() -> T) -> T {
        self.progress.update(label, self.done, self.total);
        let r = f();
        self.done += 1;
        self.progress.finished(label, self.done, self.total);
        r
    }
}

/// The loop's steps for the progress count: a bench per stack, and the emulated runs.
pub(crate) fn steps(cfg: &StudyConfig) -> usize {
    cfg.stacks.len() * LOGGP_ROUNDS
        + cfg.programs.len() * cfg.stacks.len().saturating_sub(1) * cfg.repeat as usize
}

/// Where round `round` (from 0) of a stack's bench writes its figures.
fn round_file(root: &Path, s: Stack, round: usize) -> PathBuf {
    root.join(format!("loggp-{}-round{}.json", s.name(), round + 1))
}

fn loop_stack(cfg: &StudyConfig, s: Stack, nets: &Nets, root: &Path, round: usize) -> LoopStack {
    let file = round_file(root, s, round);
    let args = [
        "loggp",
        "--transport",
        "mpi",
        "--sizes",
        LOGGP_SIZES,
        "--iters",
        &LOGGP_ITERS.to_string(),
    ]
    .map(String::from);
    let mut state_ns = None;
    let r = (|| -> Result<(Params, Vec<Params>, Vec<String>, f64)> {
        nets.check(s).map_err(StudyError::Refused)?;
        let (note, state) =
            commperf_emulate::state::around(|| crate::launch::launch_bench(cfg, s, &args, &file));
        state_ns = state;
        let note = note?;
        let text = commperf_core::read_text(&file)?;
        let ctx = || file.display().to_string();
        let rows = bench_rows(&text).with_context(ctx)?;
        let (p, mut notes) = params_from_bench(&rows).with_context(ctx)?;
        let pieces = pieces_from_bench(&rows);
        let ladder = ladder_from_bench(&rows).with_context(ctx)?;
        notes.extend(note);
        Ok((p, pieces, notes, ladder))
    })();
    let mut st = LoopStack {
        stack: s.name(),
        error: None,
        notes: Vec::new(),
        file: cfg.out.is_some().then(|| file.clone()),
        params: None,
        pieces: Vec::new(),
        ladder_us: None,
        state_ns,
    };
    match r {
        Ok((p, pieces, notes, ladder)) => {
            st.params = Some(p);
            st.pieces = pieces;
            st.notes = notes;
            st.ladder_us = Some(ladder);
        }
        Err(e) => st.error = Some(chain(&e)),
    }
    st
}

/// Cuts a run at the end of each rank's last MPI_Barrier (the records up to it dropped, the
/// rank's start moved to its end) when every rank has one; says whether it did.
pub fn window(run: &mut commperf_pmpi::Run) -> bool {
    let cut: Vec<Option<usize>> = run
        .ranks
        .iter()
        .map(|r| {
            r.events
                .iter()
                .rposition(|e| e.call == commperf_pmpi::Call::Barrier)
        })
        .collect();
    if run.ranks.is_empty() || cut.iter().any(Option::is_none) {
        return false;
    }
    for (r, i) in run.ranks.iter_mut().zip(cut.into_iter().flatten()) {
        let e = r.events[i];
        r.header.start_ns = e.post_exit.max(e.done_exit);
        r.events.drain(..=i);
    }
    true
}

/// A monitored run, windowed: its trace (statistics: compute per rank), each rank's window
/// (ns, from its start to the end of its last call), and whether it starts at a barrier.
struct Windowed {
    trace: commperf_pmpi::TraceOutput,
    window_ns: Vec<u64>,
    from_barrier: bool,
}

/// `kit`: the program is one of the kit's, whose timed loop starts at the end of its last
/// barrier; any other program's window is its whole run (LAMMPS's last barrier comes after its
/// loop: from there its window was 0 s).
fn windowed(dir: &Path, kit: bool) -> Result<Windowed> {
    let mut run = commperf_pmpi::read_dir(dir)
        .with_context(|| format!("reading the monitor files in {}", dir.display()))?;
    let from_barrier = kit && window(&mut run);
    let trace = commperf_pmpi::to_trace(&run);
    let mut window_ns = vec![0u64; trace.stats.compute_ns.len()];
    for r in &run.ranks {
        // The trace's own start: after MPI_Init's clock sync, or the barrier's end.
        let begin = r
            .clocks
            .iter()
            .find(|c| c.phase == 0)
            .map_or(r.header.start_ns, |c| c.local_ns.max(r.header.start_ns));
        let end = r
            .events
            .iter()
            .map(|e| e.post_exit.max(e.done_exit))
            .max()
            .unwrap_or(begin);
        if let Some(w) = window_ns.get_mut(r.header.rank as usize) {
            *w = end.saturating_sub(begin);
        }
    }
    Ok(Windowed {
        trace,
        window_ns,
        from_barrier,
    })
}

/// Median window and time in MPI over the runs in `dirs`.
fn measured(dirs: &[PathBuf], kit: bool) -> Result<(f64, f64)> {
    let mut totals = Vec::new();
    let mut comms = Vec::new();
    for d in dirs {
        let w = windowed(d, kit)?;
        let (total, comm) = measured_times(&w.window_ns, &w.trace.stats.compute_ns)
            .ok_or_else(|| StudyError::NoRank(d.display().to_string()))?;
        totals.push(total);
        comms.push(comm);
    }
    match (median(&totals), median(&comms)) {
        (Some(t), Some(c)) => Ok((t, c)),
        _ => Err(StudyError::Missing("no run")),
    }
}

/// The replay of `workload` with `p`, its messages to oneself at `own`'s overheads: (last
/// rank's finish, mean time not computing), seconds.
fn predict(
    workload: &commperf_predict::workload::Workload,
    p: &Params,
    own: &Params,
) -> Result<(f64, f64)> {
    let net = topology::build(&TopologySpec::Crossbar, workload.nranks(), 1)?;
    let map = RankMap::identity(workload.nranks(), &*net)?;
    let loggp = loggp_of(p);
    // The LogGP model takes every cost from `loggp`; Tcom is only the contention model's.
    let tcom = Tcom::from_loggp(&loggp);
    // A rank's messages to itself take `own`'s overheads (the reference stack's in-memory path).
    let cfg = PredictConfig {
        // A rendezvous send waits out the peer's copy (Open MPI's shared memory above 4 KiB):
        // charged as CPU, transpose's exchanges were replayed at o_s + o_r, +20 %. Over TCP
        // an exchange takes 0.7 µs beyond o_s + o_r: without it cg on mpich-tcp was replayed
        // 10…13 % short (−1…0 % so; seven studies replayed, 135 within 10 % against 130).
        overlap: Some(
            Overlap::new(p.overlap_ns, p.send_wait_ns)
                .and_then(|v| v.with_duplex(p.duplex_ns))
                .map_err(StudyError::Refused)?,
        ),
        ..PredictConfig::one_node_mpi(EAGER_BYTES, engine::SelfOverheads::of(&loggp_of(own)))
    };
    let inputs = Inputs {
        workload,
        network: &*net,
        rank_map: &map,
        tcom: &tcom,
        loggp: Some(&loggp),
        trace_name: "trace.txt",
        trace_format: "commperf",
        profile_name: "bench loggp --transport mpi",
    };
    let o = engine::predict(&inputs, &cfg).context("the replay failed")?;
    let ranks = &o.prediction.ranks;
    if ranks.is_empty() {
        return Err(StudyError::Missing("the replay has no rank"));
    }
    let comm = ranks
        .iter()
        .map(|r| (r.finish_us - r.compute_us).max(0.0))
        .sum::<f64>()
        / ranks.len() as f64;
    Ok((o.prediction.total_us * 1e-6, comm * 1e-6))
}

/// The reference's trace of a program (of its run with the median window, windowed), written
/// beside the run as trace.txt; whether the window starts at a barrier; the run's directory.
/// The reference's trace of a program, parsed: the workload, whether its window starts at a
/// barrier, the trace file, and what the conversion wrote and left out.
type RefTrace = (
    commperf_predict::workload::Workload,
    bool,
    PathBuf,
    commperf_pmpi::TraceStats,
);

fn reference_workload(c: &Cell, kit: bool) -> Result<RefTrace> {
    if let Some(e) = &c.error {
        return Err(StudyError::Refused(format!(
            "the program failed on the reference stack: {e}"
        )));
    }
    // The median run, not the first: the trace carries that run's computation, which the
    // shared machine's load moves from run to run as much as the communication.
    let mut runs: Vec<(f64, &PathBuf)> = Vec::new();
    for d in &c.monitor_dirs {
        runs.push((measured(std::slice::from_ref(d), kit)?.0, d));
    }
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let dir = runs
        .get(runs.len().saturating_sub(1) / 2)
        .map(|r| r.1)
        .ok_or(StudyError::Missing("the reference stack has no run of it"))?;
    let w = windowed(dir, kit)?;
    let t = w.trace;
    let path = dir.join("trace.txt");
    commperf_core::file::write_file(&path, t.text.as_bytes())?;
    if t.stats.drops > 0 {
        return Err(StudyError::Dropped(t.stats.drops));
    }
    let wl = parse::parse_str(
        &t.text,
        &path.display().to_string(),
        TraceFormat::Own,
        &ParseOptions::default(),
    )
    .with_context(|| format!("reading {}", path.display()))?;
    Ok((wl, w.from_barrier, path, t.stats))
}

/// The stacks' parameters and the reference, measured before any program runs (the emulated
/// runs need them, and are interleaved with the real ones).
pub(crate) struct Measured {
    /// In the study's order of stacks.
    stacks: Vec<LoopStack>,
    reference: Option<usize>,
}

impl Measured {
    /// The reference stack's index in the study's stacks.
    pub(crate) fn reference(&self) -> Option<usize> {
        self.reference
    }
}

/// `st`'s piece covering `size` bytes; its first piece without a size.
fn piece_for(st: &LoopStack, size: Option<u64>) -> Option<&Params> {
    size.and_then(|s| Params::covering(&st.pieces, s))
        .or(st.params.as_ref())
}

/// Measures every stack's LogGP parameters and picks the reference.
pub(crate) fn measure(
    cfg: &StudyConfig,
    nets: &Nets,
    root: &Path,
    steps: &mut Steps<'_>,
) -> Measured {
    let mut rounds: Vec<Vec<LoopStack>> = vec![Vec::new(); cfg.stacks.len()];
    // Whether a stack is tried again: not when its bench did not run (no commperf for its MPI,
    // no network: no result file), only when its figures gave no parameters, or it has some.
    let mut again = vec![true; cfg.stacks.len()];
    for k in 0..LOGGP_ROUNDS {
        for ((&s, runs), again) in cfg.stacks.iter().zip(&mut rounds).zip(&mut again) {
            let label = format!(
                "LogGP parameters of {} (round {}/{LOGGP_ROUNDS})",
                s.name(),
                k + 1
            );
            if !*again || commperf_testbed::run::interrupted() {
                steps.step(&label, || ());
                continue;
            }
            let st = steps.step(&label, || {
                let mut st = loop_stack(cfg, s, nets, root, k);
                if st.error.is_none() && commperf_testbed::run::interrupted() {
                    st.error = Some("interrupted".into());
                }
                st
            });
            *again = st.error.is_none() || round_file(root, s, k).is_file();
            runs.push(st);
        }
    }
    let stacks: Vec<LoopStack> = cfg
        .stacks
        .iter()
        .zip(rounds)
        .map(|(&s, runs)| {
            least_round(runs, &root.join(format!("loggp-{}.json", s.name()))).unwrap_or_else(|| {
                LoopStack {
                    stack: s.name(),
                    error: Some("interrupted".into()),
                    notes: Vec::new(),
                    file: None,
                    params: None,
                    pieces: Vec::new(),
                    ladder_us: None,
                    state_ns: None,
                }
            })
        })
        .collect();
    let reference = reference(&stacks);
    Measured { stacks, reference }
}

/// Of one stack's rounds, the one with the least one-way time over the ladder (the geometric
/// mean over its sizes; o_s + L + o_r in studies written before it was kept) among those with
/// parameters (the first of equals), its file copied to `file` (where the table and the tests
/// read it); the first round's when none has parameters (None: no round ran). Its notes say
/// which round and what each gave.
fn least_round(mut runs: Vec<LoopStack>, file: &Path) -> Option<LoopStack> {
    // µs; the whole ladder, as a round whose small messages are quick can still be in another
    // regime from 2 KiB on (ompi-tcp's first round of a study: g + G·s 7.3 against 5.3 µs at
    // 2 KiB, 21.8 against 9.3 at 32 KiB, its o_s + L + o_r the least).
    let cost = |r: &LoopStack| {
        r.params
            .map(|p| r.ladder_us.unwrap_or(p.small_message_ns / 1e3))
    };
    let costs: Vec<String> = runs
        .iter()
        .map(|r| cost(r).map_or_else(|| "none".into(), |c| format!("{c:.3}")))
        .collect();
    let mut good: Vec<usize> = (0..runs.len())
        .filter(|&i| runs[i].params.is_some())
        .collect();
    let cost = |r: &LoopStack| cost(r).unwrap_or(f64::INFINITY);
    good.sort_by(|&i, &j| cost(&runs[i]).total_cmp(&cost(&runs[j])).then(i.cmp(&j)));
    let pick = good.first().copied().unwrap_or(0);
    let n = runs.len();
    if n == 0 {
        return None;
    }
    let mut st = runs.swap_remove(pick);
    if let Some(f) = st.file.take() {
        // Under -o DIR the kept round is also `loggp-STACK.json`, the others stay beside it.
        let copied = !f.is_file() || std::fs::copy(&f, file).is_ok();
        st.file = Some(if copied { file.to_path_buf() } else { f });
    }
    if n > 1 && st.params.is_some() {
        st.notes.insert(
            0,
            format!(
                "round {} of {n}: the least one-way time over the sizes (geometric mean) of the rounds with parameters (µs, by round: {})",
                pick + 1,
                costs.join(", ")
            ),
        );
    }
    Some(st)
}

/// One stack's emulation of one program, filled run by run.
pub(crate) struct EmuRuns {
    stack: String,
    knobs: Knobs,
    command: Vec<String>,
    totals: Vec<f64>,
    comms: Vec<f64>,
    programs: Vec<f64>,
    e: Emulation,
}

/// The emulations of program `p`: one per stack other than the reference, with its knobs (or
/// why it cannot run): the differences of the two stacks' pieces covering `size`, the
/// program's typical message (the first pieces without one).
#[allow(clippy::too_many_arguments)]
pub(crate) fn plan(
    cfg: &StudyConfig,
    p: &Program,
    m: &Measured,
    nets: &Nets,
    root: &Path,
    size: Option<u64>,
) -> Vec<EmuRuns> {
    let Some(ri) = m.reference else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (_, st) in m.stacks.iter().enumerate().filter(|(si, _)| *si != ri) {
        let mut e = Emulation {
            o_ns: 0.0,
            g_ns: 0.0,
            G_ns_per_byte: 0.0,
            L_ns: 0.0,
            clamped: Vec::new(),
            error: None,
            total_s: None,
            program_s: None,
            total_error_percent: None,
            program_error_percent: None,
            comm_s: None,
            comm_error_percent: None,
            untouched_calls_percent: None,
            monitor_dirs: Vec::new(),
            run_states_ns: Vec::new(),
        };
        let mut knobs = Knobs::default();
        let mut command = Vec::new();
        match (piece_for(st, size), piece_for(&m.stacks[ri], size)) {
            (Some(slow), Some(fast)) => {
                let (k, clamped) = knob_deltas(slow, fast);
                (knobs, e.clamped) = (k, clamped);
                (e.o_ns, e.g_ns, e.G_ns_per_byte, e.L_ns) =
                    (k.o_ns, k.g_ns, k.gap_per_byte_ns, k.l_ns);
                match k
                    .validate()
                    .map_err(StudyError::from)
                    .and_then(|()| launch_of(cfg, nets, p, cfg.stacks[ri], root))
                {
                    Ok(c) => command = c,
                    Err(err) => e.error = Some(chain(&err)),
                }
            }
            _ => {
                e.error = Some(format!(
                    "no LogGP parameters of {}: {}",
                    st.stack,
                    st.error.as_deref().unwrap_or("unknown")
                ))
            }
        }
        out.push(EmuRuns {
            stack: st.stack.clone(),
            knobs,
            command,
            totals: Vec::new(),
            comms: Vec::new(),
            programs: Vec::new(),
            e,
        });
    }
    out
}

/// Run `k` of an emulation: program `p` on the reference under the knobs, monitored like the
/// study's runs (one step of progress, run or not).
#[allow(clippy::too_many_arguments)]
pub(crate) fn emulate_round(
    cfg: &StudyConfig,
    p: &Program,
    m: &Measured,
    er: &mut EmuRuns,
    k: u32,
    root: &Path,
    steps: &mut Steps<'_>,
) {
    let Some(ri) = m.reference else {
        return;
    };
    if er.e.error.is_some() {
        steps.done += 1;
        return;
    }
    let reference = cfg.stacks[ri];
    let label = format!(
        "{} on {} emulating {} (run {}/{})",
        p.name,
        reference.name(),
        er.stack,
        k + 1,
        cfg.repeat
    );
    let dir = root
        .join(&p.name)
        .join(reference.name())
        .join(format!("emulate-{}", er.stack))
        .join(format!("run-{k}"));
    let emu_dir = dir.join(".emulate");
    let (knobs, command) = (er.knobs, &er.command);
    let r = steps.step(
        &label,
        || -> Result<((f64, f64), RunResult, Option<f64>)> {
            let _ = std::fs::remove_dir_all(&emu_dir);
            std::fs::create_dir_all(&emu_dir)
                .with_context(|| format!("cannot create {}", emu_dir.display()))?;
            let vars = [
                (
                    "COMMPERF_EMULATE".to_string(),
                    commperf_emulate::mpi::env_value(&knobs),
                ),
                (
                    "COMMPERF_EMULATE_DIR".to_string(),
                    emu_dir.display().to_string(),
                ),
                (
                    "COMMPERF_EMULATE_COLL".to_string(),
                    commperf_emulate::mpi::Collectives::P2p
                        .env_value()
                        .to_string(),
                ),
            ];
            let run = monitored_run(
                command,
                cfg.np,
                &dir,
                cfg.timeout,
                &vars,
                false,
                &Verdict {
                    judge: &p.judge,
                    files: &p.output_files(root, reference),
                },
            )?;
            let untouched = if knobs.is_zero() {
                None
            } else {
                commperf_emulate::mpi::Untouched::read(&emu_dir)
                    .ok()
                    .map(|u| u.untouched_calls_percent)
            };
            Ok((
                measured(std::slice::from_ref(&dir), p.is_kit())?,
                run,
                untouched,
            ))
        },
    );
    let _ = std::fs::remove_dir_all(&emu_dir);
    er.e.monitor_dirs.push(dir);
    match r {
        Ok(((t, comm), run, untouched)) => {
            er.totals.push(t);
            er.comms.push(comm);
            er.programs.extend(run.program_s);
            er.e.run_states_ns.push(run.state_ns);
            er.e.untouched_calls_percent = er.e.untouched_calls_percent.or(untouched);
        }
        // The later rounds count their step without running.
        Err(err) => er.e.error = Some(format!("run {}: {}", k + 1, chain(&err))),
    }
}

/// The loop's section from the study's runs (`cells`), the parameters and the emulated runs
/// (`emulations[i]`: program i's).
pub(crate) fn finish(
    cfg: &StudyConfig,
    cells: &[Cell],
    m: Measured,
    emulations: Vec<Vec<EmuRuns>>,
) -> Loop {
    let Measured {
        stacks,
        reference: ref_idx,
    } = m;
    let reference_rule = reference_rule(&stacks, ref_idx);
    let usual = usual_state(cells, &emulations, &stacks);
    let study = Finishing {
        cells,
        stacks: &stacks,
        ref_idx,
        usual,
    };
    let mut out = Vec::new();
    let mut emulations = emulations.into_iter();
    for p in &cfg.programs {
        let mut emus = emulations.next().unwrap_or_default();
        let workload = study.workload(p);
        for (si, &s) in cfg.stacks.iter().enumerate() {
            out.push(study.cell(p, s, &stacks[si], &workload, &mut emus));
        }
    }
    tally(Loop {
        reference: ref_idx.map(|i| stacks[i].stack.clone()),
        reference_rule,
        loggp_sizes: LOGGP_SIZES.into(),
        loggp_iters: LOGGP_ITERS,
        eager_threshold_bytes: EAGER_BYTES,
        stacks,
        cells: out,
        predictions_within_10_percent: 0,
        predictions: 0,
        emulations_within_10_percent: 0,
        emulations: 0,
        usual_state_ns: usual,
        predictions_within_10_percent_usual: 0,
        predictions_usual: 0,
        emulations_within_10_percent_usual: 0,
        emulations_usual: 0,
        comm_predictions_within_10_percent: 0,
        comm_predictions: 0,
        comm_emulations_within_10_percent: 0,
        comm_emulations: 0,
        comm_predictions_within_10_percent_usual: 0,
        comm_predictions_usual: 0,
        comm_emulations_within_10_percent_usual: 0,
        comm_emulations_usual: 0,
    })
}

/// Why the reference is the reference: every stack's o_s + L + o_r.
fn reference_rule(stacks: &[LoopStack], ref_idx: Option<usize>) -> String {
    match ref_idx {
        Some(i) => {
            let list: Vec<String> = stacks
                .iter()
                .filter_map(|s| {
                    Some(format!(
                        "{} {:.2} µs",
                        s.stack,
                        s.params.as_ref()?.small_message_ns / 1e3
                    ))
                })
                .collect();
            format!(
                "{}: the least small-message cost o_s + L + o_r ({})",
                stacks[i].stack,
                list.join(", ")
            )
        }
        None => "none: no stack has LogGP parameters".into(),
    }
}

/// Every run's and bench round's state: the study's usual one is their median.
fn usual_state(cells: &[Cell], emulations: &[Vec<EmuRuns>], stacks: &[LoopStack]) -> Option<f64> {
    median(
        &cells
            .iter()
            .flat_map(|c| &c.run_states_ns)
            .chain(emulations.iter().flatten().flat_map(|e| &e.e.run_states_ns))
            .copied()
            .chain(stacks.iter().map(|s| s.state_ns))
            .flatten()
            .collect::<Vec<f64>>(),
    )
}

/// What every cell of the loop's section is made from.
struct Finishing<'a> {
    cells: &'a [Cell],
    stacks: &'a [LoopStack],
    ref_idx: Option<usize>,
    usual: Option<f64>,
}

impl Finishing<'_> {
    fn cell_of(&self, p: &Program, stack: &str) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|c| c.program == p.name && c.stack == stack)
    }

    fn reference(&self) -> Option<&LoopStack> {
        self.ref_idx.map(|i| &self.stacks[i])
    }

    /// Program `p`'s trace on the reference, parsed.
    fn workload(&self, p: &Program) -> Result<RefTrace> {
        match self.reference() {
            None => Err(StudyError::Missing("no stack has LogGP parameters")),
            Some(r) => self
                .cell_of(p, &r.stack)
                .ok_or(StudyError::Missing("no run on the reference stack"))
                .and_then(|c| reference_workload(c, p.is_kit())),
        }
    }

    /// Program `p` on stack `s`: measured, predicted and emulated.
    fn cell(
        &self,
        p: &Program,
        s: Stack,
        st: &LoopStack,
        workload: &Result<RefTrace>,
        emus: &mut Vec<EmuRuns>,
    ) -> LoopCell {
        let c = self.cell_of(p, &s.name());
        let mut lc = LoopCell {
            program: p.name.clone(),
            stack: s.name(),
            measured_program_s: c.and_then(|c| c.time_s),
            ..LoopCell::default()
        };
        if let Some(u) = self.usual {
            lc.other_state = self.other_state(p, st, c, u);
        }
        let mut why: Vec<String> = Vec::new();
        match c {
            Some(Cell { error: Some(e), .. }) => why.push(format!("the run failed: {e}")),
            Some(c) => match measured(&c.monitor_dirs, p.is_kit()) {
                Ok((t, m)) => {
                    lc.measured_total_s = Some(t);
                    lc.measured_comm_s = Some(m);
                }
                Err(e) => why.push(chain(&e)),
            },
            None => why.push("no run".into()),
        }
        match (workload, &st.params) {
            (Err(e), _) => why.push(format!("no trace: {}", chain(e))),
            (_, None) => why.push(format!(
                "no LogGP parameters: {}",
                st.error.as_deref().unwrap_or("unknown")
            )),
            (Ok(w), Some(first)) => {
                if let Err(e) = self.predict_cell(&mut lc, st, w, first) {
                    why.push(chain(&e));
                }
            }
        }
        if let Some(i) = emus.iter().position(|e| e.stack == s.name()) {
            emulated(&mut lc, emus.swap_remove(i), self.usual);
        }
        if !why.is_empty() {
            lc.error = Some(why.join("; "));
        }
        lc.comm_misses = miss_causes(&lc);
        lc
    }

    /// What of a cell ran in a state other than the study's usual `u`: its runs, the
    /// reference's runs, the benches of its stack and of the reference.
    fn other_state(&self, p: &Program, st: &LoopStack, c: Option<&Cell>, u: f64) -> Vec<String> {
        let reference = self.reference();
        let mut off = Vec::new();
        off.extend(runs_off(
            "its runs",
            c.map_or(&[][..], |c| &c.run_states_ns),
            u,
        ));
        if let Some(r) = reference.filter(|r| r.stack != st.stack) {
            let runs = self
                .cell_of(p, &r.stack)
                .map_or(&[][..], |c| &c.run_states_ns);
            off.extend(runs_off("the reference's runs", runs, u));
        }
        for b in std::iter::once(st).chain(reference.filter(|r| r.stack != st.stack)) {
            if !same_state(b.state_ns, Some(u)) {
                off.push(format!(
                    "the bench of {} ({})",
                    b.stack,
                    state_name(b.state_ns)
                ));
            }
        }
        off
    }

    /// The replay of the reference's trace `w` with `st`'s parameters into `lc`.
    fn predict_cell(
        &self,
        lc: &mut LoopCell,
        st: &LoopStack,
        (w, from_barrier, trace, stats): &RefTrace,
        first: &Params,
    ) -> Result<()> {
        lc.trace_left_out_calls = Some(stats.left_out());
        lc.trace_summary = Some(stats.describe());
        // The piece covering the program's median message: a program of 8 KiB blocks priced
        // by the 8 B – 4 KiB piece missed by up to 67 % on a stack whose protocol switches
        // between.
        let size = median_send_bytes(w);
        let params = piece_for(st, size).unwrap_or(first);
        lc.piece_from_bytes = params.piece_from_bytes;
        lc.piece_to_bytes = params.piece_to_bytes;
        lc.bytes_above_piece_percent = params
            .piece_to_bytes
            .and_then(|top| send_bytes_above_percent(w, top));
        // A message to oneself takes the MPI library's in-memory path on every stack: it costs
        // what the reference's overheads are, not a TCP stack's kernel send path (halo's two
        // self messages an iteration on 2 ranks were charged ompi-tcp's o_s of 4.9 µs each,
        // +62 to +75 %).
        let own = self
            .reference()
            .and_then(|r| piece_for(r, size))
            .unwrap_or(params);
        let (t, m) = predict(w, params, own)?;
        lc.window_from = Some(if *from_barrier { "barrier" } else { "init" }.into());
        lc.trace = Some(trace.clone());
        lc.predicted_total_s = Some(t);
        lc.predicted_comm_s = Some(m);
        lc.total_error_percent = lc.measured_total_s.and_then(|x| error_percent(t, x));
        lc.comm_error_percent = lc.measured_comm_s.and_then(|x| error_percent(m, x));
        Ok(())
    }
}

/// A cell's emulation, its medians set against the cell's measured times.
fn emulated(lc: &mut LoopCell, er: EmuRuns, usual: Option<f64>) {
    let mut e = er.e;
    if e.error.is_none() {
        e.total_s = median(&er.totals);
        e.program_s = median(&er.programs);
        e.total_error_percent = e
            .total_s
            .zip(lc.measured_total_s)
            .and_then(|(x, m)| error_percent(x, m));
        e.program_error_percent = e
            .program_s
            .zip(lc.measured_program_s)
            .and_then(|(x, m)| error_percent(x, m));
        e.comm_s = median(&er.comms);
        e.comm_error_percent = e
            .comm_s
            .zip(lc.measured_comm_s)
            .and_then(|(x, m)| error_percent(x, m));
    }
    if let Some(u) = usual {
        lc.other_state
            .extend(runs_off(EMULATED_RUNS, &e.run_states_ns, u));
    }
    lc.emulation = Some(e);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{params, stack};

    #[test]
    fn the_round_kept_is_the_least_of_those_with_parameters() {
        let p = |small: f64| {
            let mut x = params(0.0, small / 2.0, small / 2.0, 90.0, 0.05);
            x.small_message_ns = small;
            x
        };
        let f = Path::new("/nonexistent/loggp-x.json");
        // 300, 900, 100 ns: the least is round 3's; the note lists every round.
        let runs = vec![
            stack("x", Some(p(300.0))),
            stack("x", Some(p(900.0))),
            stack("x", Some(p(100.0))),
        ];
        let st = least_round(runs, f).unwrap();
        assert_eq!(st.params.unwrap().small_message_ns, 100.0);
        assert_eq!(
            st.notes[0],
            "round 3 of 3: the least one-way time over the sizes (geometric mean) of the rounds with parameters (µs, by round: 0.300, 0.900, 0.100)"
        );
        // Where the ladder is known it decides: round 1's small messages are the quickest, its
        // ladder is not.
        let with = |small: f64, ladder: f64| LoopStack {
            ladder_us: Some(ladder),
            ..stack("x", Some(p(small)))
        };
        let runs = vec![with(100.0, 2.5), with(150.0, 1.2), with(140.0, 1.3)];
        let st = least_round(runs, f).unwrap();
        assert_eq!(st.params.unwrap().small_message_ns, 150.0);
        assert!(st.notes[0].ends_with("(µs, by round: 2.500, 1.200, 1.300)"));
        // A round without parameters does not count, however it would sort.
        let runs = vec![
            stack("x", Some(p(300.0))),
            stack("x", None),
            stack("x", Some(p(200.0))),
        ];
        assert_eq!(
            least_round(runs, f)
                .unwrap()
                .params
                .unwrap()
                .small_message_ns,
            200.0
        );
        // None with parameters: the first round, its error kept; no round: None.
        let mut failed = stack("x", None);
        failed.error = Some("first".into());
        let st = least_round(vec![failed, stack("x", None)], f).unwrap();
        assert_eq!(st.error.as_deref(), Some("first"));
        assert!(least_round(Vec::new(), f).is_none());
    }

    fn rank(rank: u32, calls: &[(commperf_pmpi::Call, u64, u64)]) -> commperf_pmpi::RankData {
        use commperf_pmpi::format::{Footer, Header};
        commperf_pmpi::RankData {
            path: PathBuf::from(format!("rank-{rank}.cpmpi")),
            header: Header {
                format: "commperf-pmpi".into(),
                version: 2,
                rank,
                size: 2,
                pid: 1,
                host: "h".into(),
                mpi_flavour: "openmpi".into(),
                mpi_library: "Open MPI".into(),
                program_tag: String::new(),
                clock: "tsc".into(),
                start_ns: 1_000,
                empty_wrappers: false,
            },
            clocks: Vec::new(),
            events: calls
                .iter()
                .map(|&(call, enter, exit)| commperf_pmpi::Event {
                    call,
                    fortran: false,
                    any_source: false,
                    persistent: false,
                    partitioned: false,
                    synchronous: false,
                    peer: -1,
                    tag: 0,
                    comm: 0,
                    bytes: 0,
                    post_enter: enter,
                    post_exit: exit,
                    done_enter: 0,
                    done_exit: 0,
                    thread: 0,
                })
                .collect(),
            drops: 0,
            footer: Some(Footer {
                events: calls.len() as u64,
                drops: 0,
                pending_requests: 0,
                end_ns: 99_000,
            }),
            comms: Vec::new(),
            functions: Vec::new(),
            sites: Default::default(),
            neighbors: Vec::new(),
            neighbor_counts: Vec::new(),
        }
    }

    #[test]
    fn the_window_starts_where_each_ranks_last_barrier_ends() {
        use commperf_pmpi::Call::{Allreduce, Barrier, Recv, Send};
        let mut run = commperf_pmpi::Run::new(
            PathBuf::new(),
            vec![
                rank(
                    0,
                    &[
                        (Allreduce, 2_000, 2_500),
                        (Barrier, 3_000, 4_000),
                        (Send, 5_000, 5_100),
                        (Barrier, 6_000, 7_000),
                        (Send, 8_000, 8_100),
                    ],
                ),
                rank(1, &[(Barrier, 6_500, 7_200), (Recv, 7_300, 8_200)]),
            ],
        );
        assert!(window(&mut run));
        assert_eq!(run.ranks[0].header.start_ns, 7_000);
        assert_eq!(run.ranks[1].header.start_ns, 7_200);
        assert_eq!(run.ranks[0].events.len(), 1);
        assert_eq!(run.ranks[0].events[0].call, Send);
        assert_eq!(run.ranks[1].events[0].call, Recv);
        // A rank without a barrier: the whole run, untouched.
        let mut run = commperf_pmpi::Run::new(
            PathBuf::new(),
            vec![
                rank(0, &[(Barrier, 3_000, 4_000), (Send, 5_000, 5_100)]),
                rank(1, &[(Recv, 3_300, 5_200)]),
            ],
        );
        assert!(!window(&mut run));
        assert_eq!(run.ranks[0].header.start_ns, 1_000);
        assert_eq!(run.ranks[0].events.len(), 2);
    }
}
