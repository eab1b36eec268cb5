//! A study's runs ([`run`]): every program on every stack, `--repeat` rounds of one run per
//! stack (and, with the loop, one emulated run per other stack), so that load drifting over the
//! study reaches every stack alike; then the stacks' micro-benchmarks at the programs' dominant
//! sizes, the loop's section, and the sensitivity sweeps. It reports its steps through
//! [`Progress`] and returns the [`Study`]; what to write and print of it is the caller's.

use crate::config::StudyConfig;
use crate::error::{chain, Context, Result, StudyError};
use crate::launch::{launch_of, monitored_run, RunResult, Verdict};
use crate::looping::{self, EmuRuns, Measured, Steps};
use crate::nets::Nets;
use crate::programs::Program;
use crate::schema::{Cell, Explanation, Sensitivity, StackBench, Study};
use crate::schema::{STUDY_SCHEMA, STUDY_SCHEMA_VERSION};
use crate::stack::Stack;
use commperf_bench::Progress;
use commperf_stats::median;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Where a study's runs write: the `-o DIR` the user keeps (its earlier rank files cleared), or
/// a scratch directory removed when dropped.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    _keep: Keep,
}

#[derive(Debug)]
enum Keep {
    Out(commperf_core::file::OutDir),
    Scratch(tempfile::TempDir),
}

impl Workspace {
    /// `out` (as `-o DIR`: an existing writable directory, or a new one whose parent exists),
    /// else a new scratch directory.
    pub fn new(out: Option<&Path>) -> Result<Workspace> {
        let keep = match out {
            Some(d) => {
                let dir = commperf_core::file::OutDir::create("-o", d)?;
                commperf_pmpi::clear_rank_files(dir.path())?;
                Keep::Out(dir)
            }
            None => Keep::Scratch(
                tempfile::Builder::new()
                    .prefix("commperf-app-")
                    .tempdir()
                    .context("cannot create a scratch directory")?,
            ),
        };
        let root = match &keep {
            Keep::Out(d) => d.path().to_path_buf(),
            Keep::Scratch(t) => t.path().to_path_buf(),
        };
        Ok(Workspace { root, _keep: keep })
    }

    /// The directory the runs write into.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

/// Runs the study `cfg` in `root` ([`Workspace::root`]), reporting each step to `progress`.
/// Ctrl-C (with [`commperf_testbed::run::install_interrupt_handler`]) stops the running launch
/// and ends the study with [`StudyError::Interrupted`]; a program that fails on a stack is its
/// cell's error, not the study's.
pub fn run(cfg: &StudyConfig, root: &Path, progress: &mut dyn Progress) -> Result<Study> {
    let start = Instant::now();
    let nets = Nets::build(&cfg.stacks, cfg.np);
    for n in nets.notes() {
        progress.note(&n);
    }
    let total = total_steps(cfg);
    let mut r = Runner {
        cfg,
        nets: &nets,
        root,
        steps: Steps {
            progress,
            done: 0,
            total,
        },
        // Its own `bench` and `emulate sweep` children are part of it, not disturbances
        // ([`commperf_core::disturbance`] leaves out a measurement's ancestors and descendants).
        watch: commperf_core::Watch::start("app", &[]),
    };
    // The loop's parameters first: its emulated runs go in the same rounds as the real ones.
    let measured = cfg
        .loop_
        .then(|| looping::measure(cfg, &nets, root, &mut r.steps));
    let mut cells = Vec::new();
    let mut emulations = Vec::new();
    for p in &cfg.programs {
        let (mine, emus) = r.program(p, measured.as_ref())?;
        cells.extend(mine);
        emulations.push(emus);
    }
    let benches = if cfg.no_bench {
        Vec::new()
    } else {
        r.benches(&mut cells)?
    };
    let loop_study = measured.map(|m| looping::finish(cfg, &cells, m, emulations));
    let sensitivity = r.sensitivity()?;
    r.steps.progress.finish();
    let explanations = cfg
        .programs
        .iter()
        .map(|p| Explanation::of(&p.name, &cells, cfg.no_bench))
        .collect();
    Ok(Study {
        schema: STUDY_SCHEMA.into(),
        schema_version: STUDY_SCHEMA_VERSION,
        np: cfg.np,
        repeat: cfg.repeat,
        programs: cfg.programs.iter().map(|p| p.name.clone()).collect(),
        stacks: cfg.stacks.iter().map(|s| s.name()).collect(),
        wall_time_s: start.elapsed().as_secs_f64(),
        oversubscribed: oversubscribed(cfg.np),
        cells,
        benches,
        explanations,
        loop_study,
        sensitivity,
        disturbance: r.watch.finish(),
    })
}

/// A study none of whose runs succeeded is an error (after its tables, which say why).
pub fn check_any_ran(study: &Study) -> Result<()> {
    if study.cells.iter().all(|c| c.error.is_some()) {
        return Err(StudyError::AllFailed);
    }
    Ok(())
}

/// The study's steps for the progress count: the runs, the sweeps, the benches and the loop's.
fn total_steps(cfg: &StudyConfig) -> usize {
    let runs = cfg.programs.len() * cfg.stacks.len() * cfg.repeat as usize;
    let sweeps = if cfg.sweep_stack.is_some() {
        cfg.programs.len()
    } else {
        0
    };
    runs + sweeps
        + if cfg.no_bench { 0 } else { cfg.stacks.len() }
        + if cfg.loop_ { looping::steps(cfg) } else { 0 }
}

/// A program's cell on one stack while its rounds run: the cell, its launch (None: it cannot
/// run there, the cell says why) and its runs' wall times.
struct Pending {
    cell: Cell,
    command: Option<Vec<String>>,
    walls: Vec<f64>,
}

/// The study while it runs.
struct Runner<'a> {
    cfg: &'a StudyConfig,
    nets: &'a Nets,
    root: &'a Path,
    steps: Steps<'a>,
    watch: commperf_core::Watch,
}

impl Runner<'_> {
    /// `what` ended by an interrupt: the study stops (the progress closed first).
    fn interrupted(&mut self, during: String) -> Result<()> {
        if commperf_testbed::run::interrupted() {
            self.steps.progress.finish();
            return Err(StudyError::Interrupted(during));
        }
        Ok(())
    }

    /// Program `p` on every stack, `--repeat` rounds (and its emulations, with the loop): its
    /// cells, and its emulations for the loop's section.
    fn program(
        &mut self,
        p: &Program,
        measured: Option<&Measured>,
    ) -> Result<(Vec<Cell>, Vec<EmuRuns>)> {
        let cfg = self.cfg;
        let mut mine: Vec<Pending> = cfg.stacks.iter().map(|&s| self.pending(p, s)).collect();
        // Planned after the first round's runs: the knobs come from the pieces covering the
        // program's typical message on the reference, known from its first monitored run.
        let mut emus: Vec<EmuRuns> = Vec::new();
        // Rounds: each stack once, then each emulation once; load that drifts over the study
        // (the machine is shared) then reaches every stack's runs alike.
        for k in 0..cfg.repeat {
            self.round(p, k, &mut mine)?;
            let Some(m) = measured else { continue };
            if k == 0 {
                let size = m
                    .reference()
                    .and_then(|ri| mine.get(ri))
                    .and_then(|pc| pc.cell.profile.as_ref())
                    .and_then(|p| p.dominant_mean_bytes);
                emus = looping::plan(cfg, p, m, self.nets, self.root, size);
            }
            for e in &mut emus {
                looping::emulate_round(cfg, p, m, e, k, self.root, &mut self.steps);
                self.interrupted(format!("the emulations of {}", p.name))?;
            }
        }
        let cells = mine
            .into_iter()
            .map(
                |Pending {
                     mut cell, walls, ..
                 }| {
                    if cell.error.is_none() {
                        cell.time_s = median(&cell.times_s);
                        cell.wall_s = median(&walls);
                    }
                    cell
                },
            )
            .collect();
        Ok((cells, emus))
    }

    /// Program `p`'s cell on stack `s` before its runs, with its launch or why it has none.
    fn pending(&mut self, p: &Program, s: Stack) -> Pending {
        let mut cell = Cell {
            program: p.name.clone(),
            stack: s.name(),
            error: None,
            failures: Vec::new(),
            time_s: None,
            time_source: None,
            time_pattern: None,
            times_s: Vec::new(),
            wall_s: None,
            profile: None,
            micro: None,
            monitor_dirs: Vec::new(),
            notes: Vec::new(),
            run_states_ns: Vec::new(),
        };
        let command = match launch_of(self.cfg, self.nets, p, s, self.root) {
            Ok(c) => Some(c),
            Err(e) => {
                cell.error = Some(chain(&e));
                self.steps.done += self.cfg.repeat as usize;
                None
            }
        };
        Pending {
            cell,
            command,
            walls: Vec::new(),
        }
    }

    /// Round `k` of program `p`: one monitored run on each stack it can still run on.
    fn round(&mut self, p: &Program, k: u32, mine: &mut [Pending]) -> Result<()> {
        let (cfg, root) = (self.cfg, self.root);
        for (&s, pc) in cfg.stacks.iter().zip(mine.iter_mut()) {
            let Some(command) = &pc.command else { continue };
            if pc.cell.error.is_some() {
                continue;
            }
            let label = format!("{} on {} (run {}/{})", p.name, s.name(), k + 1, cfg.repeat);
            // Between runs nothing of ours spins: measurements started since, the run queue.
            self.watch.check();
            self.steps
                .progress
                .update(&label, self.steps.done, self.steps.total);
            let dir = root.join(&p.name).join(s.name()).join(format!("run-{k}"));
            let r = monitored_run(
                command,
                cfg.np,
                &dir,
                cfg.timeout,
                &[],
                p.is_kit(),
                &Verdict {
                    judge: &p.judge,
                    files: &p.output_files(root, s),
                },
            );
            self.interrupted(label.clone())?;
            self.steps.done += 1;
            self.steps
                .progress
                .finished(&label, self.steps.done, self.steps.total);
            pc.cell.monitor_dirs.push(dir);
            if let Err(e) = record(pc, k, r) {
                pc.cell.error = Some(chain(&e));
                pc.cell.failures = match &e {
                    StudyError::Failed(f) => f.failures.clone(),
                    _ => Vec::new(),
                };
                self.steps.done += (cfg.repeat - k - 1) as usize;
            }
        }
        Ok(())
    }

    /// Every stack's micro-benchmarks at every program's dominant size (the mean size of the
    /// bin with the most messages), each cell given its stack's figures at its size.
    fn benches(&mut self, cells: &mut [Cell]) -> Result<Vec<StackBench>> {
        let mut sizes: Vec<u64> = cells
            .iter()
            .filter_map(|c| c.profile.as_ref()?.dominant_mean_bytes)
            .collect();
        sizes.sort_unstable();
        sizes.dedup();
        let mut benches = Vec::new();
        for &s in &self.cfg.stacks {
            let label = format!("micro-benchmarks on {}", s.name());
            self.steps
                .progress
                .update(&label, self.steps.done, self.steps.total);
            let b = match self.nets.check(s) {
                Ok(()) => crate::micro::stack_bench(self.cfg, s, &sizes, self.root),
                Err(e) => StackBench {
                    stack: s.name(),
                    error: Some(e),
                    note: None,
                    file: None,
                    figures: Vec::new(),
                },
            };
            self.interrupted(label.clone())?;
            self.steps.done += 1;
            self.steps
                .progress
                .finished(&label, self.steps.done, self.steps.total);
            benches.push(b);
        }
        for c in cells {
            let (Some(size), Some(b)) = (
                c.profile.as_ref().and_then(|p| p.dominant_mean_bytes),
                benches.iter().find(|b| b.stack == c.stack),
            ) else {
                continue;
            };
            c.micro = b.figures.iter().find(|m| m.size_bytes == size).cloned();
        }
        Ok(benches)
    }

    /// Each program's sensitivity sweep on the sweep stack (none without `--sweep`).
    fn sensitivity(&mut self) -> Result<Vec<Sensitivity>> {
        let cfg = self.cfg;
        let Some(s) = cfg.sweep_stack else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for p in &cfg.programs {
            let label = format!("sensitivity of {} on {} (emulate sweep)", p.name, s.name());
            self.steps
                .progress
                .update(&label, self.steps.done, self.steps.total);
            let r = launch_of(cfg, self.nets, p, s, self.root).and_then(|c| {
                crate::sweep::sweep(
                    &c,
                    &cfg.sweep,
                    cfg.repeat.max(3),
                    cfg.timeout,
                    &self.root.join(&p.name).join(s.name()).join("sweep"),
                )
            });
            self.interrupted(label.clone())?;
            self.steps.done += 1;
            self.steps
                .progress
                .finished(&label, self.steps.done, self.steps.total);
            let (sweep, error) = match r {
                Ok(r) => (Some(r), None),
                Err(e) => (None, Some(chain(&e))),
            };
            out.push(Sensitivity {
                program: p.name.clone(),
                stack: s.name(),
                error,
                sweep,
            });
        }
        Ok(out)
    }
}

/// Run `k` of a cell, kept in it; a failed run is returned, for the cell's error.
fn record(pc: &mut Pending, k: u32, r: Result<RunResult>) -> Result<()> {
    let run = r?;
    let cell = &mut pc.cell;
    if let Some(n) = run.note {
        cell.notes.push(format!("run {}: {n}", k + 1));
    }
    if cell.profile.is_none() {
        cell.profile = Some(run.profile);
    }
    // Every run of a program has the same rules: a time pattern gives each run its time or
    // fails it, so a cell never mixes the two.
    cell.time_source = Some(
        if run.program_s.is_some() {
            "program"
        } else {
            "wall"
        }
        .into(),
    );
    cell.time_pattern = run.time_pattern;
    cell.times_s.push(run.program_s.unwrap_or(run.wall_s));
    cell.run_states_ns.push(run.state_ns);
    pc.walls.push(run.wall_s);
    Ok(())
}

/// What running more ranks than CPUs does to the stacks, which the 2-rank micro-benchmarks
/// cannot show.
fn oversubscribed(np: u32) -> Option<String> {
    let cpus = commperf_transport::affinity::allowed_cpus().len();
    (np as usize > cpus).then(|| {
        format!(
            "{np} ranks on {cpus} CPUs: Open MPI's ranks yield the CPU while they wait \
             (--oversubscribe), MPICH's keep polling, so MPICH's times include waiting for a CPU; \
             the micro-benchmarks (2 ranks) do not see that"
        )
    })
}
