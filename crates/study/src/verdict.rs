//! The verdict on one run of a program: whether it failed (by its own account, by its exit, or
//! by a rank's death the launcher reports), and the time it reports for its own timed section.
//!
//! What to look for is a [`Judge`]: a [`Builtin`] set of patterns for a known program's output
//! (NAS, hpcc, LAMMPS, commperf's kit), or one recognised from the output itself, and the
//! user's own patterns over it. [`Judge::judge`] applies it to an [`Output`] and gives
//! [`Passed`] (with the program's own time, if it has a time pattern) or [`Failed`], every
//! reason typed and named.
//!
//! Patterns are regular expressions (the `regex` crate's syntax) matched against each line of
//! each text separately, so `^` and `$` anchor a line. A time pattern holds the time in one
//! capture group (seconds), or in named groups among `h`, `min`, `s`, `ms`, `us` and `ns`,
//! which are added up (`real\s+(?P<min>\d+)m(?P<s>[\d.]+)s`). The first line that matches gives
//! the time.
//!
//! ```
//! use commperf_study::verdict::{Builtin, Judge, Output, Status};
//! let out = " CG Benchmark Completed.\n Time in seconds =                     0.70\n \
//!            Verification    =               SUCCESSFUL\n";
//! let v = Judge::builtin(Builtin::Nas).judge(&Output::new(out, "", Some(Status::Exited(0))));
//! assert_eq!(v.unwrap().time.unwrap().seconds, 0.70);
//! ```

use regex::Regex;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::LazyLock;

/// A pattern that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PatternError {
    #[error("not a regular expression: {0}")]
    Regex(#[from] regex::Error),
    #[error(
        "a time pattern needs one capture group holding seconds, or named groups among h, min, \
         s, ms, us, ns (this one has {groups} capture groups and no unit group)"
    )]
    TimeGroups { groups: usize },
}

/// A regular expression matched against each line, and where it comes from (`NAS`,
/// `--failure-pattern`), to name it when it decides a verdict.
#[derive(Debug, Clone)]
pub struct Pattern {
    regex: Regex,
    origin: String,
}

impl Pattern {
    pub fn new(regex: &str, origin: &str) -> Result<Pattern, PatternError> {
        Ok(Pattern {
            regex: Regex::new(regex)?,
            origin: origin.to_string(),
        })
    }

    pub fn as_str(&self) -> &str {
        self.regex.as_str()
    }

    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The first line of `texts` (in order) the pattern matches.
    fn find<'t>(&self, texts: &[Text<'t>]) -> Option<(At, regex::Captures<'t>)> {
        texts.iter().find_map(|t| {
            t.text.lines().enumerate().find_map(|(i, l)| {
                self.regex
                    .captures(l)
                    .map(|c| (At::new(t.name, i + 1, l), c))
            })
        })
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` ({})", self.regex.as_str(), self.origin)
    }
}

/// Where the time is in a time pattern's match.
#[derive(Debug, Clone)]
enum TimeGroups {
    /// The group's index: seconds.
    Seconds(usize),
    /// Named groups' indices and their units in seconds.
    Units(Vec<(usize, f64)>),
}

const UNITS: &[(&str, f64)] = &[
    ("h", 3600.0),
    ("min", 60.0),
    ("s", 1.0),
    ("ms", 1e-3),
    ("us", 1e-6),
    ("ns", 1e-9),
];

/// A pattern whose match holds the program's time.
#[derive(Debug, Clone)]
pub struct TimePattern {
    pattern: Pattern,
    groups: TimeGroups,
}

impl TimePattern {
    pub fn new(regex: &str, origin: &str) -> Result<TimePattern, PatternError> {
        let pattern = Pattern::new(regex, origin)?;
        let units: Vec<(usize, f64)> = pattern
            .regex
            .capture_names()
            .enumerate()
            .filter_map(|(i, n)| Some((i, UNITS.iter().find(|u| Some(u.0) == n)?.1)))
            .collect();
        // captures_len counts the whole match as group 0.
        let groups = pattern.regex.captures_len() - 1;
        let groups = match (units.is_empty(), groups) {
            (false, _) => TimeGroups::Units(units),
            (true, 1) => TimeGroups::Seconds(1),
            (true, groups) => return Err(PatternError::TimeGroups { groups }),
        };
        Ok(TimePattern { pattern, groups })
    }

    pub fn pattern(&self) -> &Pattern {
        &self.pattern
    }

    /// The seconds of one match, or the text that is not a time.
    fn seconds(&self, c: &regex::Captures<'_>) -> Result<f64, String> {
        let parse = |m: regex::Match<'_>| -> Result<f64, String> {
            m.as_str()
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| m.as_str().to_string())
        };
        match &self.groups {
            TimeGroups::Seconds(i) => c.get(*i).map_or_else(|| Err(String::new()), parse),
            TimeGroups::Units(units) => {
                let mut any = false;
                let mut total = 0.0;
                for &(i, unit) in units {
                    if let Some(m) = c.get(i) {
                        total += parse(m)? * unit;
                        any = true;
                    }
                }
                if any {
                    Ok(total)
                } else {
                    Err(String::new())
                }
            }
        }
    }
}

impl fmt::Display for TimePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.pattern.fmt(f)
    }
}

/// What to look for in one program's output.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    /// The program's own time; when set, an output without it fails.
    pub time: Option<TimePattern>,
    /// Each must match some line, or the run fails.
    pub success: Vec<Pattern>,
    /// Any that matches a line fails the run.
    pub failure: Vec<Pattern>,
}

/// The programs whose output commperf knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Builtin {
    /// The NAS Parallel Benchmarks (`Time in seconds =`, `Verification = SUCCESSFUL`).
    Nas,
    /// HPC Challenge's `hpccoutf.txt`: its summary's `HPL_time=` (HPL's solve of the linear
    /// system, the part its matrix order sizes) and `Success=1`; HPL's residual check, PTRANS
    /// and RandomAccess saying FAILED fail the run.
    Hpcc,
    /// LAMMPS: `Loop time of T on N procs`, `Total wall time:` at its end, `ERROR:` lines.
    Lammps,
    /// commperf's kit (`apps/nas/`): its report line's `time T s`, ending OK or WRONG.
    Kit,
}

/// The patterns of every [`Builtin`], compiled once. (time, successes, failures)
type Compiled = (TimePattern, Vec<Pattern>, Vec<Pattern>);

fn compiled(b: Builtin) -> Compiled {
    let (time, success, failure): (&str, &[&str], &[&str]) = match b {
        Builtin::Nas => (
            r"^\s*Time in seconds\s*=\s*(\S+)",
            &[r"^\s*Verification\s*=\s*SUCCESSFUL\s*$"],
            &[r"^\s*Verification\s*=\s*UNSUCCESSFUL"],
        ),
        Builtin::Hpcc => (
            r"^HPL_time=(\S+)$",
            &[r"^Success=1$"],
            &[
                r"^Success=0$",
                // HPL's scaled residual: `||Ax-b||_oo/(…)=  0.0056546 ...... PASSED`.
                r"\.\.\.\.\.\. FAILED",
                // PTRANS's rows: `WALL  1760  1760  80  80   1   2     0.04 PASSED …`.
                r"^(WALL|CPU)\s.*\sFAILED\s",
                // RandomAccess: `Found 0 errors in 8388608 locations (passed).`
                r"locations \(failed\)",
            ],
        ),
        Builtin::Lammps => (
            r"^Loop time of (\S+) on",
            &[r"^Total wall time:"],
            &[r"^ERROR( on proc \d+)?:"],
        ),
        Builtin::Kit => (r"\btime (\S+) s\b", &[r" OK$"], &[r" WRONG$"]),
    };
    let origin = b.name();
    let p = |r: &str| Pattern::new(r, origin).expect("a built-in pattern compiles");
    (
        TimePattern::new(time, origin).expect("a built-in time pattern compiles"),
        success.iter().map(|r| p(r)).collect(),
        failure.iter().map(|r| p(r)).collect(),
    )
}

static COMPILED: LazyLock<Vec<(Builtin, Compiled)>> =
    LazyLock::new(|| Builtin::ALL.iter().map(|&b| (b, compiled(b))).collect());

/// How the launchers say that a rank died by a signal: Open MPI's mpirun (`… noticed that
/// process rank 1 with PID 0 on node vm exited on signal 11 (Segmentation fault).`) and
/// MPICH's Hydra (`YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Segmentation fault (signal
/// 11)`). The launcher's own exit status then is only a code (139, 11).
static RANK_SIGNAL: LazyLock<[Regex; 2]> = LazyLock::new(|| {
    [
        Regex::new(
            r"process rank (?P<rank>\d+) with PID \d+ on node \S+ exited on signal (?P<sig>\d+)",
        )
        .expect("compiles"),
        Regex::new(r"TERMINATED WITH THE EXIT STRING: .*\(signal (?P<sig>\d+)\)")
            .expect("compiles"),
    ]
});

impl Builtin {
    pub const ALL: [Builtin; 4] = [Builtin::Nas, Builtin::Hpcc, Builtin::Lammps, Builtin::Kit];

    pub fn name(self) -> &'static str {
        match self {
            Builtin::Nas => "NAS",
            Builtin::Hpcc => "hpcc",
            Builtin::Lammps => "LAMMPS",
            Builtin::Kit => "kit",
        }
    }

    pub fn rules(self) -> Rules {
        let (time, success, failure) = COMPILED
            .iter()
            .find(|c| c.0 == self)
            .map(|c| c.1.clone())
            .expect("every builtin is compiled");
        Rules {
            time: Some(time),
            success,
            failure,
        }
    }

    /// The program whose banner `out` carries, for a command that commperf does not know by
    /// name: NAS's `NAS Parallel Benchmarks 3.4 -- CG Benchmark`, LAMMPS's first line `LAMMPS
    /// (29 Oct 2020 - Update 2)`, a kit program's report line (`ep: ranks 2 … time 0.012 s
    /// checksum …`: a kit binary run after `--`). hpcc prints nothing telling to its standard
    /// output.
    pub fn recognise(out: &Output<'_>) -> Option<Builtin> {
        static BANNERS: LazyLock<[(Builtin, Regex); 3]> = LazyLock::new(|| {
            [
                (
                    Builtin::Nas,
                    Regex::new(r"^\s*NAS Parallel Benchmarks\b").expect("compiles"),
                ),
                (
                    Builtin::Lammps,
                    Regex::new(r"^LAMMPS \(").expect("compiles"),
                ),
                (
                    Builtin::Kit,
                    Regex::new(r"^[a-z]+: ranks \d+ .*\btime \S+ s checksum [0-9a-f]+ expected ")
                        .expect("compiles"),
                ),
            ]
        });
        BANNERS.iter().find_map(|(b, re)| {
            out.texts()
                .iter()
                .any(|t| t.text.lines().any(|l| re.is_match(l)))
                .then_some(*b)
        })
    }
}

/// What a program is judged by: a built-in set of patterns (or one recognised from its output)
/// with the user's patterns over it. The user's time pattern and success patterns replace the
/// built-in ones; the user's failure patterns are added to them (a built-in failure is never
/// wanted quietly off).
#[derive(Debug, Clone, Default)]
pub struct Judge {
    base: Base,
    user: Rules,
}

#[derive(Debug, Clone, Copy, Default)]
enum Base {
    /// Only the user's patterns (and the exit status).
    #[default]
    None,
    Builtin(Builtin),
    /// The builtin whose banner the output carries, if any.
    Recognise,
}

impl Judge {
    /// The exit status only.
    pub fn none() -> Judge {
        Judge::default()
    }

    /// A known program's patterns.
    pub fn builtin(b: Builtin) -> Judge {
        Judge {
            base: Base::Builtin(b),
            user: Rules::default(),
        }
    }

    /// The patterns of the program whose banner the output carries ([`Builtin::recognise`]).
    pub fn recognise() -> Judge {
        Judge {
            base: Base::Recognise,
            user: Rules::default(),
        }
    }

    /// The user's patterns over the base.
    pub fn with_user(mut self, user: Rules) -> Judge {
        self.user = user;
        self
    }

    /// The rules for `out`, and the builtin they start from.
    pub fn rules(&self, out: &Output<'_>) -> (Option<Builtin>, Rules) {
        let builtin = match self.base {
            Base::None => None,
            Base::Builtin(b) => Some(b),
            Base::Recognise => Builtin::recognise(out),
        };
        let mut r = builtin.map(Builtin::rules).unwrap_or_default();
        if let Some(t) = &self.user.time {
            r.time = Some(t.clone());
        }
        if !self.user.success.is_empty() {
            r.success = self.user.success.clone();
        }
        r.failure.extend(self.user.failure.iter().cloned());
        (builtin, r)
    }

    /// The verdict on one run.
    pub fn judge(&self, out: &Output<'_>) -> Result<Passed, Failed> {
        let (builtin, rules) = self.rules(out);
        judge(builtin, &rules, out)
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Exited(i32),
    Signaled(i32),
}

impl From<std::process::ExitStatus> for Status {
    fn from(s: std::process::ExitStatus) -> Status {
        use std::os::unix::process::ExitStatusExt;
        match (s.code(), s.signal()) {
            (Some(c), _) => Status::Exited(c),
            (None, Some(sig)) => Status::Signaled(sig),
            // Stopped or continued: only with WUNTRACED, which Command never asks for.
            (None, None) => Status::Exited(-1),
        }
    }
}

/// One named text of a run.
#[derive(Debug, Clone, Copy)]
pub struct Text<'a> {
    pub name: &'a str,
    pub text: &'a str,
}

/// What a run left: the files it writes its results to (hpcc's `hpccoutf.txt`), its standard
/// output and error, and how it ended (None: unknown, e.g. stopped by the caller after its
/// results were complete).
#[derive(Debug, Clone)]
pub struct Output<'a> {
    pub files: Vec<Text<'a>>,
    pub stdout: &'a str,
    pub stderr: &'a str,
    pub status: Option<Status>,
}

impl<'a> Output<'a> {
    pub fn new(stdout: &'a str, stderr: &'a str, status: Option<Status>) -> Output<'a> {
        Output {
            files: Vec::new(),
            stdout,
            stderr,
            status,
        }
    }

    /// Every text, in the order patterns look at them: the files, stdout, stderr.
    fn texts(&self) -> Vec<Text<'a>> {
        let mut v = self.files.clone();
        v.push(Text {
            name: "stdout",
            text: self.stdout,
        });
        v.push(Text {
            name: "stderr",
            text: self.stderr,
        });
        v
    }
}

/// A line of a text: `stdout line 12`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct At {
    pub source: String,
    /// From 1.
    pub line: usize,
    /// The line, cut at 200 characters.
    pub text: String,
}

impl At {
    fn new(source: &str, line: usize, text: &str) -> At {
        let text = match text.char_indices().nth(200) {
            Some((i, _)) => format!("{}…", &text[..i]),
            None => text.to_string(),
        };
        At {
            source: source.to_string(),
            line,
            text: text.trim_end().to_string(),
        }
    }
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} line {}: {:?}", self.source, self.line, self.text)
    }
}

/// The program's own time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProgramTime {
    pub seconds: f64,
    /// The pattern that found it and its origin: "`…` (NAS)".
    pub pattern: String,
    pub at: At,
}

/// A run that passed every check.
#[derive(Debug, Clone, PartialEq)]
pub struct Passed {
    /// The built-in patterns it was judged by, if any.
    pub builtin: Option<Builtin>,
    /// None: no time pattern (the caller's wall time is the run's time).
    pub time: Option<ProgramTime>,
}

/// Why a run failed.
#[derive(
    Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Failure {
    #[error("failure pattern {pattern} matched {at}")]
    FailurePattern { pattern: String, at: At },
    #[error("{} died by signal {signal} ({}), says the launcher on {at}",
            rank.map_or_else(|| "a rank".to_string(), |r| format!("rank {r}")),
            signal_name(*signal))]
    RankSignal {
        rank: Option<u32>,
        signal: i32,
        at: At,
    },
    #[error("killed by signal {signal} ({})", signal_name(*signal))]
    Signal { signal: i32 },
    #[error("exit status {code}{}", if stderr_tail.is_empty() { String::new() } else { format!(" (stderr ends: {stderr_tail})") })]
    ExitStatus { code: i32, stderr_tail: String },
    #[error("no line matched the success pattern {pattern}")]
    MissingSuccess { pattern: String },
    #[error("no line matched the time pattern {pattern}")]
    MissingTime { pattern: String },
    #[error("the time pattern {pattern} matched {at}, but {value:?} is not a number of seconds")]
    BadTime {
        pattern: String,
        at: At,
        value: String,
    },
}

/// A run that failed, every reason in order: failure patterns, a rank's signal, the exit, then
/// (only when none of those) missing success and time.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct Failed {
    pub builtin: Option<Builtin>,
    pub failures: Vec<Failure>,
}

impl fmt::Display for Failed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, x) in self.failures.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{x}")?;
        }
        Ok(())
    }
}

/// A signal's name, for the common ones.
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => "unnamed",
    }
}

/// The last `n` non-empty lines of `t`, joined by ` | `.
fn tail(t: &str, n: usize) -> String {
    let v: Vec<&str> = t.lines().filter(|l| !l.trim().is_empty()).collect();
    v[v.len().saturating_sub(n)..].join(" | ")
}

/// The verdict on `out` by `rules` (`builtin`: where they come from, for the result).
pub fn judge(builtin: Option<Builtin>, rules: &Rules, out: &Output<'_>) -> Result<Passed, Failed> {
    let texts = out.texts();
    let mut failures = Vec::new();
    for p in &rules.failure {
        if let Some((at, _)) = p.find(&texts) {
            failures.push(Failure::FailurePattern {
                pattern: p.to_string(),
                at,
            });
        }
    }
    let rank_signal = texts.iter().find_map(|t| {
        t.text.lines().enumerate().find_map(|(i, l)| {
            RANK_SIGNAL.iter().find_map(|re| {
                let c = re.captures(l)?;
                let rank = c.name("rank").and_then(|r| r.as_str().parse().ok());
                Some((rank, c["sig"].parse().ok()?, At::new(t.name, i + 1, l)))
            })
        })
    });
    if let Some((rank, signal, at)) = rank_signal {
        failures.push(Failure::RankSignal { rank, signal, at });
    }
    match out.status {
        Some(Status::Signaled(signal)) => failures.push(Failure::Signal { signal }),
        Some(Status::Exited(code)) if code != 0 => failures.push(Failure::ExitStatus {
            code,
            // What the program or launcher last said, unless a line above already says why.
            stderr_tail: if failures.is_empty() {
                tail(out.stderr, 2)
            } else {
                String::new()
            },
        }),
        _ => {}
    }
    if !failures.is_empty() {
        return Err(Failed { builtin, failures });
    }
    for p in &rules.success {
        if p.find(&texts).is_none() {
            failures.push(Failure::MissingSuccess {
                pattern: p.to_string(),
            });
        }
    }
    let time = match &rules.time {
        None => None,
        Some(tp) => match tp.pattern.find(&texts) {
            None => {
                failures.push(Failure::MissingTime {
                    pattern: tp.to_string(),
                });
                None
            }
            Some((at, c)) => match tp.seconds(&c) {
                Ok(seconds) => Some(ProgramTime {
                    seconds,
                    pattern: tp.to_string(),
                    at,
                }),
                Err(value) => {
                    failures.push(Failure::BadTime {
                        pattern: tp.to_string(),
                        at,
                        value,
                    });
                    None
                }
            },
        },
    };
    if failures.is_empty() {
        Ok(Passed { builtin, time })
    } else {
        Err(Failed { builtin, failures })
    }
}
