//! The sensitivity study of R. P. Martin, "A Systematic Characterization of Application
//! Sensitivity to Network Performance" (PhD thesis, University of California, Berkeley, 1999):
//! run one program at every setting of every knob, each knob alone, and report how much slower
//! it gets per setting.
//!
//! Why shaped so: the study is a loop around a program the sweep does not know, so running the
//! program is a [`Runner`] (the CLI's runs it under the MPI interposer; tests use a
//! deterministic one), and everything else — which settings, in which order, what the numbers
//! mean — is here, where it can be tested exactly. The order interleaves the settings (every
//! round runs every setting, odd rounds backwards), so slow drift of a shared machine lands on
//! every setting alike instead of on the last ones. The baseline (all knobs at zero) is a setting
//! of its own, run in every round: each slowdown is against the baseline of the same sweep,
//! either round by round ([`Statistic::Paired`]: a slow spell lands on a setting and the
//! baseline of its round alike) or median against median, and the spread of what is compared
//! is the noise band a slowdown must leave to count. A run that fails is recorded with its
//! error and the sweep goes on: the other settings are kept.
//!
//! The baseline is the emulator *engaged* with every knob at zero, not the program alone, and
//! every setting runs the same whole apparatus: it has a cost of its own (collectives run as
//! point-to-point messages, a hook per call, L's side band), and a slowdown against the bare
//! program would charge that cost to whichever knob is set — an intercept at every value, which
//! no model of the knob predicts (Martin's modified firmware is in place at every setting too).
//! The program alone still runs in every round as a reference row, `untouched`, so the
//! emulator's own cost is measured and reported ([`SweepResult::emulator_cost`]), never hidden.

mod emulated;
mod loggp;
mod predicted;

pub use emulated::{run, PredictOptions, SweepConfig, SweepProgress, SweepRunError, SweepSpec};
pub use loggp::PieceError;
pub use predicted::{median_send_bytes, send_bytes_above_percent};

use crate::knobs::{EmulateError, Knob, Knobs};
use commperf_core::Disturbance;
use commperf_report::plot::{
    colour, linear_axis, Band, BandShape, Figure, Panel, Point, Series, XScale, GREY,
};
use commperf_report::svg::esc;
use commperf_report::{Align, Table};
use commperf_stats::{median, percentile};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// Version of [`SweepResult`]'s JSON form. 3: `statistic`, how run times become slowdowns (2
/// compared medians), and each setting's `rounds_s`; `partial`, present only when true, was
/// added within 3 (a reader of 3 that lacks it reads a sweep that ran to its end). 2: the
/// baseline is the emulator engaged at zero; the `untouched` reference row and `emulator_cost`
/// (1: the baseline was the untouched program).
pub const SWEEP_SCHEMA_VERSION: u32 = commperf_formats::version::SWEEP;

/// How the sweep turns run times into a setting's slowdown.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Statistic {
    /// The setting's median run against the baseline's; the noise band is each one's
    /// interquartile range (the range below four runs).
    #[default]
    Median,
    /// Round by round: the median over rounds of (the setting's run − the baseline's run of the
    /// same round), over the baseline's median; the noise band is the interquartile range of
    /// those differences (the range below four rounds). This is what the interleaving is for:
    /// a shared machine's slow spells (another process, a VM whose vCPUs the host moves) last
    /// seconds to minutes and land on a setting and the baseline of the same round alike, so
    /// the difference cancels them, where medians compare mixtures: on a VM that flipped
    /// between two speeds within a sweep, cg's o 0.5 µs read +74 % by medians (three of its
    /// five runs slow, one of the baseline's) against +55 % predicted, and wavefront, slow but
    /// for the first round, read +79 % by fastest runs where the rounds' differences say +45 %.
    Paired,
}

impl std::fmt::Display for Statistic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Statistic::Median => "median",
            Statistic::Paired => "paired",
        })
    }
}

/// Most repeats a sweep takes: beyond it a typo, not an experiment.
pub const MAX_REPEAT: u32 = 1000;

/// Why a sweep cannot be planned.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SweepError {
    #[error(transparent)]
    Knob(#[from] EmulateError),
    #[error("no knob to sweep: give at least one --knob, e.g. --knob L=0,5,10,20us")]
    NoKnob,
    #[error("knob {0} is given twice; give all its values in one --knob {0}=v1,v2,…")]
    Twice(Knob),
    #[error("knob {0} has no value above 0 to compare with the baseline")]
    OnlyZero(Knob),
    #[error("--repeat {0}: must be between 1 and {MAX_REPEAT}")]
    Repeat(u32),
}

/// One setting: all knobs at zero (the baseline: the emulator engaged at zero), one knob at one
/// value, or the untouched program (the reference row: no emulator at all).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Setting {
    /// `None` for the baseline and the untouched reference.
    pub knob: Option<Knob>,
    /// ns (ns per byte for G); 0 for the baseline and the reference.
    pub value: f64,
    /// The program without the emulator (the reference row).
    pub untouched: bool,
}

impl Setting {
    /// The knobs this setting runs with.
    pub fn knobs(&self) -> Knobs {
        match self.knob {
            Some(k) => Knobs::only(k, self.value),
            None => Knobs::default(),
        }
    }

    /// `baseline`, `L=5us`, `G=0.5ns/B`.
    pub fn label(&self) -> String {
        match self.knob {
            None if self.untouched => "untouched".into(),
            None => "baseline".into(),
            Some(k) => format!("{k}={}", value_text(k, self.value)),
        }
    }
}

/// A knob value as the user would write it.
pub fn value_text(knob: Knob, v: f64) -> String {
    if knob == Knob::UpperG {
        return format!("{}ns/B", trim(v));
    }
    if v >= 1e6 && v % 1e3 == 0.0 {
        format!("{}ms", trim(v / 1e6))
    } else if v >= 1e3 {
        format!("{}us", trim(v / 1e3))
    } else {
        format!("{}ns", trim(v))
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

fn unit(knob: Knob) -> &'static str {
    if knob == Knob::UpperG {
        "ns/B"
    } else {
        "us"
    }
}

/// The value on a knob's plotting axis (µs for o, g and L; ns/B for G).
fn axis_value(knob: Knob, v: f64) -> f64 {
    if knob == Knob::UpperG {
        v
    } else {
        v / 1e3
    }
}

/// What to sweep: each knob's values (zero values fold into the shared baseline) and how many
/// rounds.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPlan {
    settings: Vec<Setting>,
    repeat: u32,
    statistic: Statistic,
}

impl SweepPlan {
    pub fn new(knobs: &[(Knob, Vec<f64>)], repeat: u32) -> Result<Self, SweepError> {
        if knobs.is_empty() {
            return Err(SweepError::NoKnob);
        }
        if !(1..=MAX_REPEAT).contains(&repeat) {
            return Err(SweepError::Repeat(repeat));
        }
        let mut settings = vec![
            Setting {
                knob: None,
                value: 0.0,
                untouched: false,
            },
            Setting {
                knob: None,
                value: 0.0,
                untouched: true,
            },
        ];
        let mut seen = Vec::new();
        for (knob, values) in knobs {
            if seen.contains(knob) {
                return Err(SweepError::Twice(*knob));
            }
            seen.push(*knob);
            let before = settings.len();
            for &v in values {
                Knobs::only(*knob, v).validate()?;
                let dup = settings[before..].iter().any(|s| s.value == v);
                if v > 0.0 && !dup {
                    settings.push(Setting {
                        knob: Some(*knob),
                        value: v,
                        untouched: false,
                    });
                }
            }
            if settings.len() == before {
                return Err(SweepError::OnlyZero(*knob));
            }
        }
        Ok(SweepPlan {
            settings,
            repeat,
            statistic: Statistic::Median,
        })
    }

    /// Compares settings by `statistic` (the median unless set).
    pub fn with_statistic(mut self, statistic: Statistic) -> Self {
        self.statistic = statistic;
        self
    }

    /// Every setting: the baseline first, the untouched reference second, then the knobs'.
    pub fn settings(&self) -> &[Setting] {
        &self.settings
    }

    pub fn repeat(&self) -> u32 {
        self.repeat
    }

    /// The run order, as indices into [`settings`](Self::settings): `repeat` rounds of every
    /// setting, odd rounds in reverse, so a drift of the machine over the sweep weighs on every
    /// setting alike (ABBA). Within a round the baseline sits in the middle (the untouched
    /// reference right after it), not at an end: ABBA runs the settings at the ends twice in a
    /// row across rounds, and a shared machine's slow spell of a few runs would then take the
    /// anchor's runs in pairs (seen: all five baseline runs of a sweep in one spell).
    pub fn schedule(&self) -> Vec<usize> {
        let n = self.settings.len();
        let shift = n - n / 2;
        (0..self.repeat as usize)
            .flat_map(|round| {
                (0..n).map(move |j| {
                    let p = if round % 2 == 0 { j } else { n - 1 - j };
                    (p + shift) % n
                })
            })
            .collect()
    }
}

/// Runs the program once at one setting (its knobs: [`Setting::knobs`]; the emulator engaged
/// even when they are all zero, unless [`Setting::untouched`]); returns its run time in
/// seconds, or why the run failed (exit status, signal, timeout), in words for the report.
pub trait Runner {
    fn run(&mut self, setting: &Setting) -> Result<f64, String>;

    /// The machine's state now, as a time in ns that grows when the machine gets slower (the
    /// CLI's: a cache line's one-way trip between the two CPUs the ranks run on), or `None`
    /// when there is nothing to measure. Taken before and after every run: a slowdown then
    /// compares only runs made in the same state ([`same_state`]).
    fn probe(&mut self) -> Option<f64> {
        None
    }

    /// Whether the sweep should stop before its next run (the CLI's: an interrupt arrived,
    /// which it also passed on to the run in hand). A run that fails once a stop is requested
    /// was cut short by it: it is left out, neither a time (it would be a wrong one) nor a
    /// failure of its setting. What finished is summarized and marked
    /// [`SweepResult::partial`].
    fn stop_requested(&mut self) -> bool {
        false
    }
}

/// Two probe readings further apart than this factor are two states of the machine. The AMD
/// EPYC VM this was built on moves its two vCPUs, for seconds to minutes, between the two
/// threads of one core (a cache line crosses in 15 ns), two cores that share a cache (30–32
/// ns) and dies that share none (150–169 ns); the programs run 24–42 % slower in the last,
/// about as much as the knobs' effects being measured.
pub const STATE_FACTOR: f64 = 1.5;

/// A run's state from its probes before and after: their geometric mean, or `None` when they
/// differ by more than [`STATE_FACTOR`] (the machine changed state during the run).
pub fn run_state(probes: [f64; 2]) -> Option<f64> {
    let [a, b] = probes;
    (a > 0.0 && b > 0.0 && a.max(b) <= STATE_FACTOR * a.min(b)).then(|| (a * b).sqrt())
}

/// Whether two runs' states ([`run_state`]) are the same state of the machine.
pub fn same_state(a: Option<f64>, b: Option<f64>) -> bool {
    matches!((a, b), (Some(x), Some(y)) if x.max(y) <= STATE_FACTOR * x.min(y))
}

impl<R: Runner + ?Sized> Runner for &mut R {
    fn run(&mut self, setting: &Setting) -> Result<f64, String> {
        (**self).run(setting)
    }

    fn probe(&mut self) -> Option<f64> {
        (**self).probe()
    }

    fn stop_requested(&mut self) -> bool {
        (**self).stop_requested()
    }
}

/// One setting's runs and what they mean.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SettingResult {
    /// `baseline`, `untouched`, `L=5us`, …
    pub label: String,
    /// `None` for the baseline and the untouched reference.
    pub knob: Option<String>,
    /// The reference row: the program without the emulator.
    #[serde(default)]
    pub untouched: bool,
    /// The knob's value in ns (ns per byte for G); 0 for the baseline.
    pub value_ns: f64,
    /// Run times of the successful runs, in run order.
    pub runs_s: Vec<f64>,
    /// Run time in each round (`null` where the run failed): what [`Statistic::Paired`] pairs.
    #[serde(default)]
    pub rounds_s: Vec<Option<f64>>,
    /// The machine probe before and after each round's run, ns ([`Runner::probe`]); empty
    /// when the runner has none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes_ns: Vec<Option<[f64; 2]>>,
    /// How many rounds (paired: pairs of this setting's run and the baseline's; median: runs
    /// of this setting) the slowdown compares: those made in the same state of the machine
    /// ([`same_state`]: a pair with each other, a median's runs with the baseline's usual
    /// state), or every one when fewer than two were (the summary says so).
    #[serde(default)]
    pub compared_rounds: usize,
    /// Whether the comparison took only runs in the same state: false when fewer than two
    /// were and all were compared (true without probes: nothing says otherwise).
    #[serde(default)]
    pub compared_same_state: bool,
    /// One line per failed run: which run and why.
    pub failures: Vec<String>,
    /// The median of its runs in the baseline's usual state of the machine when at least two
    /// were (all without probes), else of all.
    pub median_s: Option<f64>,
    /// Over all successful runs.
    pub min_s: Option<f64>,
    pub max_s: Option<f64>,
    /// How much slower than the baseline, by the sweep's [`Statistic`] (0.1 = 10 % slower).
    pub slowdown: Option<f64>,
    /// |slowdown| does not exceed its noise band: not distinguishable from the baseline in this
    /// sweep. Paired, the spread of the rounds' differences; by medians, the larger of the
    /// baseline's relative spread and this setting's own (a shared machine's slow spells last
    /// several runs: they can miss every baseline run and hit a setting's). `None` when there
    /// is no spread to judge by (fewer than two runs or pairs).
    pub within_noise: Option<bool>,
    /// What models predicted for this setting (see [`SweepResult::add_prediction`]).
    #[serde(default)]
    pub predicted: Vec<Predicted>,
}

/// One model's prediction for one setting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Predicted {
    /// e.g. `loggp`, `contention`.
    pub model: String,
    /// The run time the model adds to the baseline, in seconds; `None` when it cannot say
    /// (`note` says why).
    pub added_s: Option<f64>,
    /// `added_s` over the measured baseline median: comparable with the measured slowdown.
    pub slowdown: Option<f64>,
    /// predicted / measured slowdown − 1, only where the measured slowdown is beyond the noise
    /// band (a ratio to a slowdown that is noise means nothing).
    pub relative_error: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One knob's line of the study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KnobSummary {
    pub knob: String,
    /// `us` (o, g, L) or `ns/B` (G): the unit of `points`' first member.
    pub unit: String,
    /// (value in `unit`, slowdown), the baseline's (0, 0) first.
    pub points: Vec<(f64, f64)>,
    /// The largest slowdown over the knob's tested values.
    pub max_slowdown: Option<f64>,
    /// Least-squares slope of slowdown against the value through the origin, per `unit`.
    pub slowdown_per_unit: Option<f64>,
}

/// A sweep's result: the one serde struct its exporters render.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SweepResult {
    pub schema_version: u32,
    /// The program, as given.
    pub command: Vec<String>,
    pub repeat: u32,
    /// How run times become slowdowns.
    #[serde(default)]
    pub statistic: Statistic,
    /// The baseline's usual state: the median of its runs' states ([`run_state`]), ns;
    /// `None` without probes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_reference_ns: Option<f64>,
    /// The baseline's relative spread: the interquartile range of its runs over their median
    /// with four runs or more (max − min below that); by medians the noise band of every
    /// slowdown, paired a figure for the reader (each setting's band is its differences').
    pub baseline_spread: Option<f64>,
    /// What the emulator costs at zero: the baseline's slowdown over the untouched program by
    /// the sweep's statistic (0.02: the program runs 2 % slower under the engaged emulator with
    /// every knob at zero).
    #[serde(default)]
    pub emulator_cost: Option<f64>,
    /// Every setting: the baseline first, then the untouched reference, then the knobs'.
    pub settings: Vec<SettingResult>,
    pub knobs: Vec<KnobSummary>,
    /// The knob whose tested values slowed the program most, beyond the noise band; `None` when
    /// none did. It depends on the ranges tested: the table says so.
    pub most_sensitive: Option<String>,
    /// Free-form lines a caller adds (e.g. communication the knobs did not touch).
    pub notes: Vec<String>,
    /// What disturbed the runs, when something did (another commperf measurement at the same
    /// time, CPU contention: [`commperf_core::disturbance`]); absent when nothing did and in
    /// files from before it was looked for.
    #[serde(default, skip_serializing_if = "Disturbance::is_empty")]
    pub disturbance: Disturbance,
    /// The sweep was stopped before its schedule ended ([`Runner::stop_requested`]): the
    /// figures are from the runs that finished, and a note says how many.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
}

/// Runs the plan through `runner`, calling `progress(done, total, setting)` before each run;
/// stops early, with what finished marked [`SweepResult::partial`], when the runner asks.
pub fn run_sweep<R: Runner>(
    plan: &SweepPlan,
    mut runner: R,
    command: &[String],
    mut progress: impl FnMut(usize, usize, &Setting),
) -> SweepResult {
    let order = plan.schedule();
    let per_round = plan.settings.len();
    let mut runs: Vec<Vec<Option<f64>>> = vec![vec![None; plan.repeat as usize]; per_round];
    let mut fails: Vec<Vec<String>> = vec![Vec::new(); per_round];
    let mut probes: Vec<Vec<Option<[f64; 2]>>> = vec![vec![None; plan.repeat as usize]; per_round];
    let mut stopped_after = None;
    for (n, &i) in order.iter().enumerate() {
        if runner.stop_requested() {
            stopped_after = Some(n);
            break;
        }
        let s = &plan.settings[i];
        progress(n, order.len(), s);
        let before = runner.probe();
        let run = runner.run(s);
        if run.is_err() && runner.stop_requested() {
            // The stop cut this run short: it is neither a measurement nor a failure.
            stopped_after = Some(n);
            break;
        }
        let after = runner.probe();
        probes[i][n / per_round] = before.zip(after).map(|(a, b)| [a, b]);
        match run {
            Ok(t) if t.is_finite() && t >= 0.0 => runs[i][n / per_round] = Some(t),
            Ok(t) => fails[i].push(format!("run {}: unusable run time {t} s", n + 1)),
            Err(why) => fails[i].push(format!("run {}: {why}", n + 1)),
        }
    }
    let mut result = summarize(plan, command, runs, probes, fails);
    if let Some(n) = stopped_after {
        result.partial = true;
        result.notes.push(format!(
            "Interrupted after {n} of {} runs: the figures are from the runs that finished.",
            order.len()
        ));
    }
    result
}

/// The noise band of some runs' median, relative to it: with four runs or more their
/// interquartile range (q3 − q1) / median, below that (max − min) / median; `None` with fewer
/// than two. Not the range at every count: it grows with the number of runs (ten runs of a
/// shared machine catch a slow spell that three miss), so more rounds would hide more.
fn relative_spread(runs: &[f64]) -> Option<f64> {
    let m = median(runs).filter(|&m| m > 0.0)?;
    spread_abs(runs).map(|x| x / m)
}

/// The noise band of some values' median in their own unit: the interquartile range from four
/// values on, the range below that; `None` with fewer than two.
fn spread_abs(v: &[f64]) -> Option<f64> {
    if v.len() < 2 {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    if s.len() < 4 {
        return Some(s[s.len() - 1] - s[0]);
    }
    // Quantiles by linear interpolation between order statistics (R's type 7).
    Some(percentile(&s, 75.0)? - percentile(&s, 25.0)?)
}

/// What [`compare`] found.
struct Comparison {
    slowdown: Option<f64>,
    band: Option<f64>,
    /// Rounds (paired) or runs of the setting (median) compared.
    n: usize,
    /// Whether only runs in the same state of the machine were compared.
    same_state: bool,
}

/// Runs by round (`None`: failed) and their states (`None` without a steady probe).
#[derive(Clone, Copy)]
struct Runs<'a> {
    times: &'a [Option<f64>],
    states: &'a [Option<f64>],
}

impl Runs<'_> {
    /// The runs in state `reference` when at least two are (and true); every run otherwise
    /// (and false), also when there is no reference (no probes: true).
    fn in_state(&self, reference: Option<f64>) -> (Vec<f64>, bool) {
        let all = || self.times.iter().flatten().copied().collect::<Vec<f64>>();
        let Some(r) = reference else {
            return (all(), true);
        };
        let kept: Vec<f64> = self
            .times
            .iter()
            .zip(self.states)
            .filter_map(|(t, &st)| t.filter(|_| same_state(st, Some(r))))
            .collect();
        if kept.len() >= 2 {
            (kept, true)
        } else {
            (all(), false)
        }
    }
}

/// A setting's runs against the baseline's. With probes (`reference`: the baseline's usual
/// state), paired rounds count where both runs were made in the same state, a median's runs
/// where they were in the reference state, when at least two are; every run otherwise.
fn compare(stat: Statistic, base: Runs<'_>, mine: Runs<'_>, reference: Option<f64>) -> Comparison {
    let (bs, b_same) = base.in_state(reference);
    let b = median(&bs).filter(|&b| b > 0.0);
    match stat {
        Statistic::Median => {
            let (ms, m_same) = mine.in_state(reference);
            Comparison {
                slowdown: median(&ms).zip(b).map(|(m, b)| m / b - 1.0),
                band: match (relative_spread(&bs), relative_spread(&ms)) {
                    (Some(x), y) => Some(x.max(y.unwrap_or(0.0))),
                    (None, _) => None,
                },
                n: ms.len(),
                same_state: b_same && m_same,
            }
        }
        Statistic::Paired => {
            let pairs = |matched: bool| -> Vec<f64> {
                (0..base.times.len().min(mine.times.len()))
                    .filter(|&k| !matched || same_state(base.states[k], mine.states[k]))
                    .filter_map(|k| Some(mine.times[k]? - base.times[k]?))
                    .collect()
            };
            let (d, same) = match (reference, pairs(true)) {
                (None, _) => (pairs(false), true),
                (Some(_), d) if d.len() >= 2 => (d, true),
                (Some(_), _) => (pairs(false), false),
            };
            Comparison {
                slowdown: median(&d).zip(b).map(|(x, b)| x / b),
                band: spread_abs(&d).zip(b).map(|(x, b)| x / b),
                n: d.len(),
                same_state: same,
            }
        }
    }
}

fn summarize(
    plan: &SweepPlan,
    command: &[String],
    rounds: Vec<Vec<Option<f64>>>,
    probes: Vec<Vec<Option<[f64; 2]>>>,
    fails: Vec<Vec<String>>,
) -> SweepResult {
    let stat = plan.statistic;
    let ok = |v: &[Option<f64>]| v.iter().flatten().copied().collect::<Vec<f64>>();
    let states: Vec<Vec<Option<f64>>> = probes
        .iter()
        .map(|by_round| by_round.iter().map(|p| p.and_then(run_state)).collect())
        .collect();
    let probed = probes.iter().flatten().any(Option::is_some);
    // The baseline's usual state; with probes but no steady baseline run, NaN: no run is in it.
    let reference = probed.then(|| {
        median(&states[0].iter().flatten().copied().collect::<Vec<_>>()).unwrap_or(f64::NAN)
    });
    let runs = |i: usize| Runs {
        times: &rounds[i],
        states: &states[i],
    };
    let spread = relative_spread(&runs(0).in_state(reference).0);
    let settings: Vec<SettingResult> = plan
        .settings
        .iter()
        .zip(rounds.iter().zip(fails))
        .enumerate()
        .map(|(i, (s, (by_round, f)))| {
            let r = ok(by_round);
            let med = median(&runs(i).in_state(reference).0);
            let c = compare(stat, runs(0), runs(i), reference);
            let slowdown = c.slowdown;
            SettingResult {
                label: s.label(),
                knob: s.knob.map(|k| k.to_string()),
                untouched: s.untouched,
                value_ns: s.value,
                median_s: med,
                min_s: r.iter().copied().reduce(f64::min),
                max_s: r.iter().copied().reduce(f64::max),
                within_noise: slowdown.zip(c.band).map(|(x, band)| x.abs() <= band),
                slowdown,
                runs_s: r,
                rounds_s: by_round.clone(),
                probes_ns: if probed {
                    probes[i].clone()
                } else {
                    Vec::new()
                },
                compared_rounds: c.n,
                compared_same_state: c.same_state,
                failures: f,
                predicted: Vec::new(),
            }
        })
        .collect();
    let mut knobs = Vec::new();
    for k in Knob::ALL {
        let mine: Vec<(&Setting, &SettingResult)> = plan
            .settings
            .iter()
            .zip(&settings)
            .filter(|(s, _)| s.knob == Some(k))
            .collect();
        if mine.is_empty() {
            continue;
        }
        let mut points = vec![(0.0, 0.0)];
        points.extend(
            mine.iter()
                .filter_map(|(s, r)| r.slowdown.map(|x| (axis_value(k, s.value), x))),
        );
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let rest = &points[1..];
        let max_slowdown = rest.iter().map(|p| p.1).reduce(f64::max);
        let sxx: f64 = rest.iter().map(|p| p.0 * p.0).sum();
        let sxy: f64 = rest.iter().map(|p| p.0 * p.1).sum();
        knobs.push(KnobSummary {
            knob: k.to_string(),
            unit: unit(k).into(),
            slowdown_per_unit: (sxx > 0.0).then(|| sxy / sxx),
            max_slowdown,
            points,
        });
    }
    let emulator_cost = plan
        .settings
        .iter()
        .position(|s| s.untouched)
        .and_then(|u| compare(stat, runs(u), runs(0), reference).slowdown);
    let noise = spread.unwrap_or(0.0);
    let most_sensitive = knobs
        .iter()
        .filter_map(|k| k.max_slowdown.filter(|&m| m > noise).map(|m| (k, m)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(k, _)| k.knob.clone());
    SweepResult {
        schema_version: SWEEP_SCHEMA_VERSION,
        command: command.to_vec(),
        repeat: plan.repeat,
        statistic: stat,
        probe_reference_ns: reference.filter(|r| r.is_finite()),
        baseline_spread: spread,
        emulator_cost,
        settings,
        knobs,
        most_sensitive,
        notes: Vec::new(),
        disturbance: Disturbance::default(),
        partial: false,
    }
}

fn pct(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{:+.1}%", 100.0 * x))
}

fn secs(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{x:.3}"))
}

/// Which table form to render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepFormat {
    Text,
    Markdown,
    Csv,
}

impl SweepResult {
    /// Attaches `model`'s prediction to every knob setting: `added(knob, value)` is the run time
    /// (seconds) the model adds to the baseline at that setting, or why it cannot say. The
    /// prediction is compared as a slowdown over the *measured* baseline, so start-up costs
    /// the model does not see (the launcher, MPI_Init) weigh on both sides alike.
    pub fn add_prediction(
        &mut self,
        model: &str,
        mut added: impl FnMut(Knob, f64) -> Result<f64, String>,
    ) {
        let base = self.settings.first().and_then(|b| b.median_s);
        for s in self.settings.iter_mut().skip(1) {
            let Some(knob) = s.knob.as_deref().and_then(|k| k.parse::<Knob>().ok()) else {
                continue;
            };
            let (added_s, note) = match added(knob, s.value_ns) {
                Ok(a) => (Some(a), None),
                Err(why) => (None, Some(why)),
            };
            let slowdown = added_s
                .zip(base)
                .filter(|&(_, b)| b > 0.0)
                .map(|(a, b)| a / b);
            let relative_error = match (slowdown, s.slowdown, s.within_noise) {
                (Some(p), Some(m), Some(false)) if m != 0.0 => Some(p / m - 1.0),
                _ => None,
            };
            s.predicted.push(Predicted {
                model: model.to_string(),
                added_s,
                slowdown,
                relative_error,
                note,
            });
        }
    }

    /// The models with a prediction, in the order they were added.
    fn models(&self) -> Vec<String> {
        let mut m: Vec<String> = Vec::new();
        for p in self.settings.iter().flat_map(|s| &s.predicted) {
            if !m.contains(&p.model) {
                m.push(p.model.clone());
            }
        }
        m
    }

    fn table(&self) -> Table {
        let mut t = Table::new()
            .column("setting", Align::Left)
            .column("runs", Align::Right)
            .column("median(s)", Align::Right)
            .column("min(s)", Align::Right)
            .column("max(s)", Align::Right)
            .column("slowdown", Align::Right)
            .column("noise", Align::Left)
            .column("failed", Align::Right);
        let models = self.models();
        for m in &models {
            t = t
                .column(format!("pred {m}"), Align::Right)
                .column(format!("err {m}"), Align::Right);
        }
        for s in &self.settings {
            let mut row = vec![
                s.label.clone(),
                s.runs_s.len().to_string(),
                secs(s.median_s),
                secs(s.min_s),
                secs(s.max_s),
                if s.knob.is_none() && !s.untouched {
                    "(anchor)".into()
                } else {
                    pct(s.slowdown)
                },
                match (s.knob.is_none() && !s.untouched, s.within_noise) {
                    (true, _) => "".into(),
                    (false, Some(true)) => "within".into(),
                    (false, Some(false)) => "beyond".into(),
                    (false, None) => "?".into(),
                },
                s.failures.len().to_string(),
            ];
            for m in &models {
                let p = s.predicted.iter().find(|p| &p.model == m);
                row.push(pct(p.and_then(|p| p.slowdown)));
                row.push(pct(p.and_then(|p| p.relative_error)));
            }
            t.push_row(row);
        }
        t
    }

    fn summary_lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        match self.baseline_spread {
            Some(s) => out.push(match self.statistic {
                Statistic::Median => format!(
                    "slowdowns compare medians, noise the larger of the baseline's spread and the setting's; baseline spread {:.1}% over {} runs: slowdowns inside it are noise",
                    100.0 * s,
                    self.settings[0].runs_s.len()
                ),
                Statistic::Paired => format!(
                    "slowdowns are each round's difference from the baseline's run of the same round (their median, over the baseline's median); noise: those differences' spread (baseline spread {:.1}% over {} runs)",
                    100.0 * s,
                    self.settings[0].runs_s.len()
                ),
            }),
            None => out.push(
                "baseline spread unknown (fewer than two baseline runs): use --repeat ≥ 2 to judge noise"
                    .into(),
            ),
        }
        if self.settings.iter().any(|s| !s.probes_ns.is_empty()) {
            let readings: Vec<f64> = self
                .settings
                .iter()
                .flat_map(|s| s.probes_ns.iter().flatten().flatten().copied())
                .collect();
            let (lo, hi) = readings
                .iter()
                .fold((f64::INFINITY, 0.0f64), |(lo, hi), &x| {
                    (lo.min(x), hi.max(x))
                });
            let changed = self
                .settings
                .iter()
                .flat_map(|s| s.probes_ns.iter().zip(&s.rounds_s))
                .filter(|(p, r)| r.is_some() && p.and_then(run_state).is_none())
                .count();
            out.push(format!(
                "machine probed before and after each run (ns): {lo:.0}–{hi:.0}, the baseline's usual state {}; {changed} runs changed state while they ran; each slowdown compares runs made in the same state (within {STATE_FACTOR}×) where at least two rounds were",
                self.probe_reference_ns
                    .map_or("unknown (no steady baseline run)".into(), |r| format!("{r:.0}"))
            ));
            for s in self.settings[1..].iter().filter(|s| !s.compared_same_state) {
                out.push(format!(
                    "{}: fewer than two of its rounds were made in the same state as the baseline's: compared over all {}",
                    s.label, s.compared_rounds
                ));
            }
        }
        if let Some(c) = self.emulator_cost {
            out.push(format!(
                "the emulator at zero (baseline) against the untouched program: {:+.1}%{}; every slowdown is against the baseline",
                100.0 * c,
                match self.baseline_spread {
                    Some(sp) if c.abs() <= sp => " (within noise)",
                    _ => "",
                }
            ));
        }
        for k in &self.knobs {
            out.push(format!(
                "knob {}: largest slowdown {}, slope {} per {}",
                k.knob,
                pct(k.max_slowdown),
                k.slowdown_per_unit
                    .map_or("-".into(), |x| format!("{:+.2}%", 100.0 * x)),
                k.unit
            ));
        }
        out.push(match &self.most_sensitive {
            Some(k) => format!("most sensitive to {k} (over the values tested)"),
            None => "no knob slowed the program beyond the baseline's noise".into(),
        });
        for s in &self.settings {
            if let (Some(x), Some(false), Some(_)) = (s.slowdown, s.within_noise, &s.knob) {
                if x < 0.0 {
                    out.push(format!(
                        "{}: {:+.1}% beyond the noise, but a knob only adds work: the machine was faster during its runs than during the baseline's; measure again (more rounds)",
                        s.label,
                        100.0 * x
                    ));
                }
            }
            for f in &s.failures {
                out.push(format!("{} failed: {f}", s.label));
            }
            for p in &s.predicted {
                if let Some(n) = &p.note {
                    out.push(format!("{} {}: {n}", s.label, p.model));
                }
            }
        }
        for m in self.models() {
            let errs: Vec<f64> = self
                .settings
                .iter()
                .flat_map(|s| &s.predicted)
                .filter(|p| p.model == m)
                .filter_map(|p| p.relative_error)
                .map(f64::abs)
                .collect();
            if let Some(worst) = errs.iter().copied().reduce(f64::max) {
                out.push(format!(
                    "{m} prediction: worst error {:.1}% of the measured slowdown over {} settings beyond noise (goal 10%: {})",
                    100.0 * worst,
                    errs.len(),
                    if worst <= 0.10 { "met" } else { "missed" }
                ));
            } else {
                out.push(format!(
                    "{m} prediction: no setting slowed the program beyond noise, nothing to judge"
                ));
            }
        }
        out.extend(self.notes.iter().cloned());
        out
    }

    /// The table of settings and the summary lines (text and Markdown), or the settings as CSV.
    pub fn render(&self, fmt: SweepFormat) -> String {
        let t = self.table();
        let cmd = self.command.join(" ");
        match fmt {
            SweepFormat::Text => {
                let mut s = format!(
                    "# commperf emulate sweep | {cmd} | {} rounds\n",
                    self.repeat
                );
                // What disturbed the runs comes first: it qualifies every figure below.
                for n in self.disturbance.notes() {
                    let _ = writeln!(s, "# disturbed: {n}");
                }
                s.push_str(&t.render_text("# "));
                for l in self.summary_lines() {
                    let _ = writeln!(s, "# {l}");
                }
                s
            }
            SweepFormat::Markdown => {
                let mut s = format!(
                    "## Sensitivity sweep\n\n`{cmd}`, {} rounds\n\n",
                    self.repeat
                );
                for n in self.disturbance.notes() {
                    let _ = writeln!(s, "- disturbed: {n}");
                }
                if !self.disturbance.is_empty() {
                    s.push('\n');
                }
                let _ = writeln!(s, "{}", t.render_markdown());
                for l in self.summary_lines() {
                    let _ = writeln!(s, "- {l}");
                }
                s
            }
            SweepFormat::Csv => t.render_csv(),
        }
    }

    /// Slowdown against each knob's value, one panel per knob (the knobs have different units),
    /// as Martin's figures plot run time against each parameter, on the chart layer. The grey
    /// band across each panel is the baseline's noise (± its relative spread): a slowdown inside
    /// it is not told apart from the baseline's own run-to-run variation; the legend says so.
    /// The slowdown axis is linear and the same in every panel, 0 included.
    pub fn render_svg(&self) -> String {
        let spread = self.baseline_spread.filter(|s| s.is_finite());
        let pct = |v: f64| 100.0 * v;
        let y = linear_axis(
            self.knobs
                .iter()
                .flat_map(|k| k.points.iter().map(|p| pct(p.1)))
                .chain(spread.into_iter().flat_map(|s| [pct(s), -pct(s)])),
        );
        let mut f = Figure::new(format!(
            "Slowdown against each knob: {}",
            self.command.join(" ")
        ))
        .class("sweep")
        .width((self.knobs.len().max(1) as f64 * 340.0 + 180.0).max(700.0))
        .plot_height(240.0);
        for k in &self.knobs {
            let unit = if k.unit == "us" {
                "µs"
            } else {
                k.unit.as_str()
            };
            let x = linear_axis(k.points.iter().map(|p| p.0));
            let mut p = Panel::new(
                XScale::Value(x),
                format!("Δ{}, {unit}", k.knob),
                y.clone(),
                "slowdown, %",
            );
            if let Some(s) = spread {
                p.bands.push(Band {
                    name: Some(format!("baseline noise ±{:.1} %", pct(s))),
                    colour: GREY,
                    shape: BandShape::Across(-pct(s), pct(s)),
                });
            }
            let mut line = Series::new("slowdown", colour(0))
                .attrs(format!(r#"data-knob="{}""#, esc(&k.knob)));
            for &(v, slow) in &k.points {
                line = line.point(
                    Point::new(v, pct(slow))
                        .tip(format!(
                            "{}={} {unit}: {:+.1} %",
                            k.knob,
                            trim(v),
                            pct(slow)
                        ))
                        .attrs(format!(r#"data-value="{v}" data-slowdown="{slow}""#)),
                );
            }
            p.series.push(line);
            f.panels.push(p);
        }
        f.notes
            .push("Slowdown: the median run time over the baseline's (every knob at zero).".into());
        if spread.is_some() {
            f.notes.push(
                "Grey: the baseline's noise, ± the spread of its own runs; a slowdown inside it \
                 is not told apart from the baseline's run-to-run variation."
                    .into(),
            );
        }
        if self.knobs.is_empty() {
            f.notes.push("No knob was swept: nothing to draw.".into());
        }
        f.svg()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A program whose run time is a known function of the knobs, with a scripted noise and a
    /// failure at a chosen run.
    struct Model {
        base: f64,
        /// What the engaged emulator adds at zero, seconds.
        zero_cost: f64,
        calls: Vec<Knobs>,
        /// (setting label, i): that setting's i-th run (from 0) fails.
        fail_at: Option<(&'static str, usize)>,
        /// (setting label, i, seconds): added to that setting's i-th run. Keyed by setting, not
        /// by position in the schedule, so the tests say what they mean whatever the order.
        jitter: Vec<(&'static str, usize, f64)>,
        seen: std::collections::HashMap<String, usize>,
        /// Runs (by position in the schedule) with the machine in its slow state: +0.25 s, and
        /// a probe of 150 ns around them (30 ns otherwise). Empty: no probe at all.
        slow_runs: Vec<usize>,
        probes: usize,
        /// Asks the sweep to stop once this many runs were made (an interrupt, in the CLI).
        stop_after: Option<usize>,
    }

    impl Runner for Model {
        fn stop_requested(&mut self) -> bool {
            self.stop_after.is_some_and(|k| self.calls.len() >= k)
        }

        fn probe(&mut self) -> Option<f64> {
            // Probes alternate: before run n (n runs made so far), after it (n + 1 made).
            self.probes += 1;
            let run = if self.probes % 2 == 1 {
                self.calls.len()
            } else {
                self.calls.len() - 1
            };
            (!self.slow_runs.is_empty()).then(|| {
                if self.slow_runs.contains(&run) {
                    150.0
                } else {
                    30.0
                }
            })
        }

        fn run(&mut self, s: &Setting) -> Result<f64, String> {
            let label = s.label();
            let i = *self.seen.get(&label).unwrap_or(&0);
            self.seen.insert(label.clone(), i + 1);
            let k = s.knobs();
            self.calls.push(k);
            if self.fail_at == Some((label.as_str(), i)) {
                return Err("exit status 3".into());
            }
            // 1000 messages of 1 KiB on the critical path: L and o count per message, G per byte.
            let t = self.base
                + if s.untouched { 0.0 } else { self.zero_cost }
                + 1e-9
                    * 1000.0
                    * (k.l_ns + 2.0 * k.o_ns + k.g_ns * 0.5 + 1024.0 * k.gap_per_byte_ns);
            let jitter: f64 = self
                .jitter
                .iter()
                .filter(|(l, n, _)| *l == label && *n == i)
                .map(|(_, _, x)| x)
                .sum();
            let slow = if self.slow_runs.contains(&(self.calls.len() - 1)) {
                0.25
            } else {
                0.0
            };
            Ok(t + jitter + slow)
        }
    }

    fn model() -> Model {
        Model {
            base: 1.0,
            zero_cost: 0.0,
            calls: Vec::new(),
            fail_at: None,
            jitter: Vec::new(),
            seen: Default::default(),
            slow_runs: Vec::new(),
            probes: 0,
            stop_after: None,
        }
    }

    #[test]
    fn a_run_cut_short_by_the_stop_is_neither_a_time_nor_a_failure() {
        // Run 3 is in hand when the stop comes, and fails for it.
        struct Cut(usize);
        impl Runner for Cut {
            fn run(&mut self, _: &Setting) -> Result<f64, String> {
                self.0 += 1;
                if self.0 == 3 {
                    return Err("killed by SIGINT".into());
                }
                Ok(1.0)
            }
            fn stop_requested(&mut self) -> bool {
                self.0 >= 3
            }
        }
        let plan = SweepPlan::new(&[(Knob::L, vec![100e3])], 3).unwrap();
        let r = run_sweep(&plan, Cut(0), &[], |_, _, _| {});
        assert!(r.partial);
        assert_eq!(
            r.notes,
            ["Interrupted after 2 of 9 runs: the figures are from the runs that finished."]
        );
        let made: usize = r
            .settings
            .iter()
            .map(|s| s.runs_s.len() + s.failures.len())
            .sum();
        assert_eq!(made, 2);
        assert!(r.settings.iter().all(|s| s.failures.is_empty()));
    }

    #[test]
    fn a_stopped_sweep_summarizes_the_runs_that_finished_and_says_it_is_partial() {
        // Schedule L, B, U | U, B, L | L, B, U; stopped after 5 runs: L's second round and the
        // whole third never ran. L adds 1000 × 100 µs = 0.1 s to a 1 s program.
        let plan = SweepPlan::new(&[(Knob::L, vec![100e3])], 3)
            .unwrap()
            .with_statistic(Statistic::Paired);
        let mut m = model();
        m.stop_after = Some(5);
        let mut announced = Vec::new();
        let r = run_sweep(&plan, &mut m, &[], |n, _, s| announced.push((n, s.label())));
        assert_eq!(m.calls.len(), 5, "no run after the stop");
        assert_eq!(announced.len(), 5);
        assert!(r.partial);
        assert_eq!(
            r.notes,
            ["Interrupted after 5 of 9 runs: the figures are from the runs that finished."]
        );
        let counts: Vec<usize> = r.settings.iter().map(|s| s.runs_s.len()).collect();
        assert_eq!(counts, [2, 2, 1], "baseline, untouched, L");
        let l_rounds = &r.settings[2].rounds_s;
        assert!(l_rounds[0].is_some_and(|t| (t - 1.1).abs() < 1e-9) && l_rounds[1..] == [None; 2]);
        assert!(r.settings.iter().all(|s| s.failures.is_empty()));
        // L's one round beside the baseline's: 0.1 s over 1 s.
        assert!((r.settings[2].slowdown.unwrap() - 0.1).abs() < 1e-9);
        assert!(r
            .render(SweepFormat::Text)
            .contains("Interrupted after 5 of 9 runs"));
        let j = serde_json::to_value(&r).unwrap();
        assert_eq!(j["partial"], true);
        // A sweep that ran to its end says nothing about it.
        let whole = run_sweep(&plan, model(), &[], |_, _, _| {});
        assert!(!whole.partial && whole.notes.is_empty());
        assert!(serde_json::to_value(&whole)
            .unwrap()
            .get("partial")
            .is_none());
    }

    #[test]
    fn schedule_interleaves_reverses_odd_rounds_and_keeps_the_baseline_inside() {
        let p =
            SweepPlan::new(&[(Knob::L, vec![0.0, 5e3, 10e3]), (Knob::O, vec![1e3])], 3).unwrap();
        assert_eq!(
            p.settings().len(),
            5,
            "zero folds into the baseline, beside the untouched reference"
        );
        assert!(p.settings()[1].untouched && p.settings()[1].knob.is_none());
        // The baseline (0) in the middle of each round, the untouched reference (1) after it:
        // its runs are a round apart, never back to back.
        assert_eq!(
            p.schedule(),
            vec![3, 4, 0, 1, 2, 2, 1, 0, 4, 3, 3, 4, 0, 1, 2]
        );
        let two = SweepPlan::new(&[(Knob::L, vec![5e3])], 2).unwrap();
        assert_eq!(two.schedule(), vec![2, 0, 1, 1, 0, 2]);
    }

    #[test]
    fn paired_slowdowns_cancel_slow_spells_that_land_on_a_round() {
        // The machine is slow (+0.25 s a run) in rounds 1 and 2 for the baseline and in rounds
        // 1, 2 and 3 for L: a spell that began in round 1 and ended during round 3, between the
        // baseline's run and L's. The emulator costs 0.05 s; L adds 0.1 s (1000 × 100 µs).
        let plan = |stat| {
            SweepPlan::new(&[(Knob::L, vec![100e3])], 5)
                .unwrap()
                .with_statistic(stat)
        };
        let spell = |m: &mut Model| {
            m.zero_cost = 0.05;
            m.jitter = vec![
                ("baseline", 1, 0.25),
                ("baseline", 2, 0.25),
                ("L=100us", 1, 0.25),
                ("L=100us", 2, 0.25),
                ("L=100us", 3, 0.25),
            ];
        };
        let mut m = model();
        spell(&mut m);
        let med = run_sweep(&plan(Statistic::Median), &mut m, &[], |_, _, _| {});
        // Medians compare mixtures: L's is a slow run (1.4), the baseline's a fast one (1.05).
        assert!((med.settings[2].slowdown.unwrap() - (1.4 / 1.05 - 1.0)).abs() < 1e-9);
        let mut m = model();
        spell(&mut m);
        let r = run_sweep(&plan(Statistic::Paired), &mut m, &[], |_, _, _| {});
        assert_eq!(r.statistic, Statistic::Paired);
        // Rounds' differences 0.1, 0.1, 0.1, 0.35, 0.1: median 0.1 over the baseline's median
        // 1.05; their interquartile range is 0, so the setting is beyond noise.
        let l = &r.settings[2];
        assert!((l.slowdown.unwrap() - 0.1 / 1.05).abs() < 1e-9);
        assert_eq!(l.within_noise, Some(false));
        assert_eq!(l.rounds_s.len(), 5);
        // The emulator's cost, paired with the untouched runs: 0.05 in rounds 0, 3 and 4.
        assert!((r.emulator_cost.unwrap() - 0.05).abs() < 1e-9);
        // A failed run leaves its round out: differences 0.1, 0.1, 0.1, 0.35 (round 4 gone),
        // median 0.1, interquartile range 0.0625 (R's type 7), still beyond.
        let mut m = model();
        spell(&mut m);
        m.fail_at = Some(("L=100us", 4));
        let r = run_sweep(&plan(Statistic::Paired), &mut m, &[], |_, _, _| {});
        let l = &r.settings[2];
        assert_eq!(l.rounds_s[4], None);
        assert_eq!(l.runs_s.len(), 4);
        assert!((l.slowdown.unwrap() - 0.1 / 1.05).abs() < 1e-9);
        assert_eq!(l.within_noise, Some(false));
    }

    #[test]
    fn slowdowns_compare_runs_made_in_the_same_state_of_the_machine() {
        // Schedule of 3 settings × 5 rounds: L, B, U | U, B, L | L, B, U | U, B, L | L, B, U.
        // The machine is slow (+0.25 s, probe 150 ns against 30) for L's runs of rounds 1, 2
        // and 3 (runs 5, 6 and 11) and never for the baseline's: paired without the probe,
        // L's differences are 0.1, 0.35, 0.35, 0.35, 0.1 (median 0.35).
        let p = SweepPlan::new(&[(Knob::L, vec![100e3])], 5)
            .unwrap()
            .with_statistic(Statistic::Paired);
        let with_slow = |slow_runs: Vec<usize>| {
            let mut m = model();
            m.zero_cost = 0.05;
            m.slow_runs = slow_runs;
            run_sweep(&p, &mut m, &[], |_, _, _| {})
        };
        let r = with_slow(vec![5, 6, 11]);
        assert_eq!(r.probe_reference_ns, Some(30.0));
        let l = &r.settings[2];
        assert_eq!(l.probes_ns[1], Some([150.0, 150.0]));
        assert_eq!(l.probes_ns[0], Some([30.0, 30.0]));
        // Rounds 0 and 4 only: 0.1 s over the baseline's 1.05.
        assert_eq!((l.compared_rounds, l.compared_same_state), (2, true));
        assert!((l.slowdown.unwrap() - 0.1 / 1.05).abs() < 1e-9);
        assert!((l.median_s.unwrap() - 1.15).abs() < 1e-9);
        // Run 4 (the baseline's, round 1) was clean: only L's runs read slow.
        assert_eq!(r.settings[0].probes_ns[1], Some([30.0, 30.0]));
        let text = r.render(SweepFormat::Text);
        assert!(
            text.contains("(ns): 30–150, the baseline's usual state 30; 0 runs changed state"),
            "{text}"
        );
        // Two runs of one round both in the slow state are a pair all the same: rounds 0, 1
        // and 4 (the baseline's slow run of round 1 is left out of its median).
        let r = with_slow(vec![4, 5, 6, 11]);
        let l = &r.settings[2];
        assert_eq!((l.compared_rounds, l.compared_same_state), (3, true));
        assert!((l.slowdown.unwrap() - 0.1 / 1.05).abs() < 1e-9);
        // Only one clean round left: every round is compared, and the summary says so.
        let r = with_slow(vec![0, 5, 6, 11]);
        let l = &r.settings[2];
        assert_eq!((l.compared_rounds, l.compared_same_state), (5, false));
        assert!((l.slowdown.unwrap() - 0.35 / 1.05).abs() < 1e-9);
        let text = r.render(SweepFormat::Text);
        assert!(
            text.contains("L=100us: fewer than two of its rounds were made in the same state"),
            "{text}"
        );
    }

    #[test]
    fn slowdowns_are_computed_from_medians() {
        let p = SweepPlan::new(
            &[
                (Knob::L, vec![0.0, 100e3, 200e3]),
                (Knob::UpperG, vec![1.0]),
            ],
            3,
        )
        .unwrap();
        let mut m = model();
        m.jitter = vec![("baseline", 1, 0.02), ("baseline", 2, -0.01)];
        let r = run_sweep(&p, &mut m, &["app".to_string()], |_, _, _| {});
        assert_eq!(m.calls.len(), 15);
        let b = &r.settings[0];
        assert_eq!(b.runs_s, vec![1.0, 1.02, 0.99]);
        assert_eq!(b.median_s, Some(1.0));
        assert!((r.baseline_spread.unwrap() - 0.03).abs() < 1e-12);
        // L = 100 µs: 1000 × 100 µs = 0.1 s on 1 s.
        let l100 = &r.settings[2];
        assert_eq!(l100.label, "L=100us");
        assert!((l100.slowdown.unwrap() - 0.1).abs() < 1e-9);
        assert_eq!(l100.within_noise, Some(false));
        assert!((r.settings[3].slowdown.unwrap() - 0.2).abs() < 1e-9);
        // G = 1 ns/B: 1000 × 1024 ns = 1.024 ms.
        assert!((r.settings[4].slowdown.unwrap() - 0.001024).abs() < 1e-9);
        assert_eq!(r.settings[4].within_noise, Some(true));
        let l = r.knobs.iter().find(|k| k.knob == "L").unwrap();
        assert_eq!(l.points.len(), 3);
        // slowdown = 0.001 per µs exactly.
        assert!((l.slowdown_per_unit.unwrap() - 0.001).abs() < 1e-9);
        assert_eq!(r.most_sensitive.as_deref(), Some("L"));
    }

    #[test]
    fn predictions_compare_as_slowdowns_over_the_measured_baseline() {
        let p = SweepPlan::new(&[(Knob::L, vec![100e3]), (Knob::O, vec![10e3])], 2).unwrap();
        let mut m = model();
        m.jitter = vec![("baseline", 1, 0.01)];
        let mut r = run_sweep(&p, &mut m, &[], |_, _, _| {});
        // Measured: L +0.1 s on a 1.005 s baseline median; o +0.02 s.
        r.add_prediction("loggp", |k, v| match k {
            Knob::L => Ok(1000.0 * v * 1e-9 * 1.05),
            _ => Err("not modelled".into()),
        });
        assert!(
            r.settings[1].predicted.is_empty(),
            "the untouched row is no knob setting"
        );
        let l = &r.settings[2].predicted[0];
        let base = 1.005;
        assert!((l.slowdown.unwrap() - 0.105 / base).abs() < 1e-12);
        let meas = 1.1 / base - 1.0;
        assert!((l.relative_error.unwrap() - ((0.105 / base) / meas - 1.0)).abs() < 1e-12);
        let o = &r.settings[3].predicted[0];
        assert_eq!((o.added_s, o.note.as_deref()), (None, Some("not modelled")));
        let text = r.render(SweepFormat::Text);
        assert!(
            text.contains("pred loggp") && text.contains("o=10us loggp: not modelled"),
            "{text}"
        );
        assert!(text.contains("loggp prediction: worst error"), "{text}");
    }

    #[test]
    fn slowdowns_are_against_the_engaged_emulator_and_its_own_cost_is_reported() {
        let p = SweepPlan::new(&[(Knob::L, vec![100e3])], 3).unwrap();
        let mut m = model();
        m.zero_cost = 0.05;
        let r = run_sweep(&p, &mut m, &[], |_, _, _| {});
        let untouched = r.settings.iter().filter(|s| s.untouched).count();
        assert_eq!(untouched, 1);
        assert_eq!(r.settings[1].label, "untouched");
        assert_eq!(r.settings[1].median_s, Some(1.0));
        assert_eq!(r.settings[0].median_s, Some(1.05));
        // The knob's own 0.1 s over the engaged baseline, not 0.15 s over the bare program.
        assert!((r.settings[2].slowdown.unwrap() - 0.1 / 1.05).abs() < 1e-12);
        assert!((r.emulator_cost.unwrap() - 0.05).abs() < 1e-12);
        assert!((r.settings[1].slowdown.unwrap() - (1.0 / 1.05 - 1.0)).abs() < 1e-12);
        // The reference row is no knob: it neither plots nor names the most sensitive knob.
        assert_eq!(r.knobs.len(), 1);
        assert_eq!(r.knobs[0].points.len(), 2);
        let text = r.render(SweepFormat::Text);
        assert!(
            text.contains("the emulator at zero (baseline) against the untouched program: +5.0%"),
            "{text}"
        );
    }

    #[test]
    fn the_noise_band_is_the_interquartile_range_from_four_runs() {
        // Three runs: the range. Eight: the interquartile range, which one slow run does not
        // widen (the range would be 30 %).
        assert!((relative_spread(&[1.0, 1.02, 0.99]).unwrap() - 0.03).abs() < 1e-12);
        let eight = [1.0, 1.01, 0.99, 1.3, 1.0, 1.02, 0.98, 1.0];
        // Sorted 0.98 0.99 1.0 1.0 1.0 1.01 1.02 1.3: q1 = 0.9975, q3 = 1.0125, median 1.0.
        assert!((relative_spread(&eight).unwrap() - 0.015).abs() < 1e-12);
        assert_eq!(relative_spread(&[1.0]), None);
    }

    #[test]
    fn a_setting_whose_own_runs_spread_is_judged_by_that_spread() {
        let p = SweepPlan::new(&[(Knob::L, vec![100e3])], 3).unwrap();
        let mut m = model();
        m.jitter = vec![("L=100us", 1, 0.5), ("baseline", 1, 0.01)];
        let r = run_sweep(&p, &mut m, &[], |_, _, _| {});
        let l = &r.settings[2];
        assert_eq!(l.runs_s, vec![1.1, 1.6, 1.1]);
        assert!((r.baseline_spread.unwrap() - 0.01).abs() < 1e-12);
        // +10 % is beyond the baseline's 1 % but inside the setting's own 45 %.
        assert!((l.slowdown.unwrap() - 0.1).abs() < 1e-9);
        assert_eq!(l.within_noise, Some(true));
    }

    #[test]
    fn a_knob_faster_than_the_baseline_beyond_noise_is_called_a_measuring_error() {
        let p = SweepPlan::new(&[(Knob::O, vec![1.0])], 3).unwrap();
        let mut m = model();
        // The machine slow during every baseline run, fast during o's.
        m.jitter = vec![
            ("baseline", 0, 0.3),
            ("baseline", 1, 0.31),
            ("baseline", 2, 0.3),
        ];
        let r = run_sweep(&p, &mut m, &[], |_, _, _| {});
        let o = &r.settings[2];
        assert!(o.slowdown.unwrap() < -0.2 && o.within_noise == Some(false));
        let text = r.render(SweepFormat::Text);
        assert!(
            text.contains("o=1ns: -23.1% beyond the noise, but a knob only adds work"),
            "{text}"
        );
    }

    #[test]
    fn a_failed_run_is_kept_and_the_rest_go_on() {
        let p = SweepPlan::new(&[(Knob::O, vec![10e3])], 2).unwrap();
        let mut m = model();
        m.fail_at = Some(("o=10us", 0));
        let r = run_sweep(&p, &mut m, &[], |_, _, _| {});
        assert_eq!(m.calls.len(), 6, "the sweep went on after the failure");
        let o = &r.settings[2];
        // Schedule 2 0 1 1 0 2: o's first run is the first.
        assert_eq!(o.failures, vec!["run 1: exit status 3".to_string()]);
        assert_eq!(o.runs_s.len(), 1);
        assert!((o.slowdown.unwrap() - 0.02).abs() < 1e-9);
        let text = r.render(SweepFormat::Text);
        assert!(
            text.contains("o=10us failed: run 1: exit status 3"),
            "{text}"
        );
    }

    #[test]
    fn nothing_beyond_noise_names_no_knob() {
        let p = SweepPlan::new(&[(Knob::L, vec![1.0])], 2).unwrap();
        let mut m = model();
        m.jitter = vec![("baseline", 1, 0.05)];
        let r = run_sweep(&p, &mut m, &[], |_, _, _| {});
        assert_eq!(r.most_sensitive, None);
        assert!(r.render(SweepFormat::Text).contains("no knob slowed"));
    }

    #[test]
    fn bad_plans_are_refused_by_name() {
        assert_eq!(SweepPlan::new(&[], 1), Err(SweepError::NoKnob));
        assert_eq!(
            SweepPlan::new(&[(Knob::L, vec![0.0])], 1),
            Err(SweepError::OnlyZero(Knob::L))
        );
        assert_eq!(
            SweepPlan::new(&[(Knob::L, vec![1.0]), (Knob::L, vec![2.0])], 1),
            Err(SweepError::Twice(Knob::L))
        );
        assert_eq!(
            SweepPlan::new(&[(Knob::L, vec![1.0])], 0),
            Err(SweepError::Repeat(0))
        );
        let e = SweepPlan::new(&[(Knob::O, vec![2e9])], 1).unwrap_err();
        assert!(e.to_string().contains("knob o"), "{e}");
    }

    #[test]
    fn json_round_trips_and_svg_has_one_panel_per_knob() {
        let p = SweepPlan::new(&[(Knob::L, vec![5e3]), (Knob::LowerG, vec![1e3, 2e3])], 2).unwrap();
        let r = run_sweep(&p, model(), &["a<b".to_string()], |_, _, _| {});
        let j = serde_json::to_string(&r).unwrap();
        // Exact: the workspace's serde_json reads floats back bit for bit (float_roundtrip).
        let back: SweepResult = serde_json::from_str(&j).unwrap();
        assert_eq!(back, r);
        let svg = r.render_svg();
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("a&lt;b") && svg.contains(">Δg, µs (linear scale)</text>"));
        // The grey band is the baseline's noise, once per panel and named in the legend.
        let spread = r.baseline_spread.expect("a spread from the model's runs");
        assert_eq!(svg.matches("<rect class=\"band\"").count(), 2, "{svg}");
        let label = format!("baseline noise ±{:.1} %", 100.0 * spread);
        let legend = svg.split("<g class=\"legend\">").nth(1).unwrap();
        assert!(
            legend.contains(&format!(">{label}</text>")),
            "{label} not in {legend}"
        );
        assert!(svg.contains("Grey: the baseline's noise"), "{svg}");
        assert!(
            svg.contains(&format!("<title>{label}</title></rect>")),
            "{svg}"
        );
        assert_eq!(value_text(Knob::L, 5e3), "5us");
        assert_eq!(value_text(Knob::UpperG, 0.25), "0.25ns/B");
        assert_eq!(value_text(Knob::O, 500.0), "500ns");
    }
}
