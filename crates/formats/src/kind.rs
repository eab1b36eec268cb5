//! The kinds of kept files and what is known about each.

use crate::version as v;

/// One kind of file users keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// `commperf bench`'s result file (`--json`, `-o FILE.json`).
    Result,
    /// `commperf calibrate`'s profile.
    Profile,
    /// A profile's `pipeline` section, versioned on its own (its field is `version`).
    Pipeline,
    /// `commperf compare --json`: two result files, layer against layer.
    Comparison,
    /// `commperf monitor run -o FILE`: a monitored run.
    MonitorRun,
    /// `commperf monitor signature --json`: a run's signature against a baseline.
    Signature,
    /// `commperf predict --json`: a prediction's summary.
    Prediction,
    /// `commperf emulate sweep --json`: a sensitivity sweep.
    Sweep,
    /// `commperf emulate run --json`: one program run under the knobs.
    EmulatedRun,
    /// `commperf app --json` / `-o DIR`'s `study.json`: an application study.
    Study,
    /// `commperf testbed run`'s report.
    Testbed,
}

/// What one version of a kind changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change {
    pub version: u32,
    pub what: &'static str,
}

/// A [`Change`] literal (a macro, not a `const fn`, so the history arrays are promoted to
/// statics).
macro_rules! c {
    ($version:literal, $what:literal) => {
        Change {
            version: $version,
            what: $what,
        }
    };
}

impl Kind {
    /// Every kind, in the order of the manual's table.
    pub const ALL: [Kind; 11] = [
        Kind::Result,
        Kind::Profile,
        Kind::Pipeline,
        Kind::Comparison,
        Kind::MonitorRun,
        Kind::Signature,
        Kind::Prediction,
        Kind::Sweep,
        Kind::EmulatedRun,
        Kind::Study,
        Kind::Testbed,
    ];

    /// The kind's name on the command line and in file names (`<name>.schema.json`).
    pub const fn name(self) -> &'static str {
        match self {
            Kind::Result => "result",
            Kind::Profile => "profile",
            Kind::Pipeline => "pipeline",
            Kind::Comparison => "comparison",
            Kind::MonitorRun => "monitor-run",
            Kind::Signature => "signature",
            Kind::Prediction => "prediction",
            Kind::Sweep => "sweep",
            Kind::EmulatedRun => "emulated-run",
            Kind::Study => "study",
            Kind::Testbed => "testbed",
        }
    }

    /// The kind named `name` (see [`Kind::name`]).
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The command that writes it and the file names it usually has.
    pub const fn written_by(self) -> &'static str {
        match self {
            Kind::Result => "`commperf bench --format json` (`-o results.json`)",
            Kind::Profile => "`commperf calibrate -o profile.json`",
            Kind::Pipeline => "the `pipeline` section of a profile (`calibrate -t shm`)",
            Kind::Comparison => "`commperf compare --format json`",
            Kind::MonitorRun => "`commperf monitor run -o run.json`",
            Kind::Signature => "`commperf monitor signature --json`",
            Kind::Prediction => "`commperf predict --json`",
            Kind::Sweep => "`commperf emulate sweep --json` (`sweep.json`)",
            Kind::EmulatedRun => "`commperf emulate run --json`",
            Kind::Study => "`commperf app --json`, `app -o DIR` (`DIR/study.json`)",
            Kind::Testbed => "`commperf testbed run` (`report.json`)",
        }
    }

    /// The field that holds the version.
    pub const fn version_field(self) -> &'static str {
        match self {
            Kind::Pipeline => "version",
            _ => "schema_version",
        }
    }

    /// The version this build writes.
    pub const fn current(self) -> u32 {
        match self {
            Kind::Result => v::RESULT,
            Kind::Profile => v::PROFILE,
            Kind::Pipeline => v::PIPELINE,
            Kind::Comparison => v::COMPARISON,
            Kind::MonitorRun => v::MONITOR_RUN,
            Kind::Signature => v::SIGNATURE,
            Kind::Prediction => v::PREDICTION,
            Kind::Sweep => v::SWEEP,
            Kind::EmulatedRun => v::EMULATED_RUN,
            Kind::Study => v::STUDY,
            Kind::Testbed => v::TESTBED,
        }
    }

    /// The oldest version this build's reader accepts (through [`upgrade`](crate::upgrade)
    /// where the shape changed). Kinds no commperf command reads back accept only the current.
    pub const fn oldest(self) -> u32 {
        match self {
            // Version 1 files are read; those whose loggp rows carry the old `L_us` are
            // refused by name (see `upgrade`).
            Kind::Result => 1,
            Kind::Profile => v::PROFILE_OLDEST,
            Kind::Study => v::STUDY_OLDEST,
            other => other.current(),
        }
    }

    /// What each version changed, oldest first; the last entry is [`Kind::current`].
    pub const fn history(self) -> &'static [Change] {
        match self {
            Kind::Result => &[
                c!(1, "first version; a loggp row's `L_us` was Kutluğ's (2000) latency − o_s − o_r at the row's size (it could be negative)"),
                c!(2, "a loggp row's `L_us` is LogGOPS's size-independent L of the row's protocol piece; loggp rows gained the per-byte overheads, the overlap and the piece; any row may carry `notes`"),
            ],
            Kind::Profile => &[
                c!(1, "first version: `tcom` pieces, `loggp` points, measured `points`"),
                c!(2, "the optional `pipeline` section (absent from version 1 files, which read as profiles without one)"),
            ],
            Kind::Pipeline => &[c!(1, "first version: stages as β + P·τ, the ring's capacity and per-packet overhead, the fragment bounds, start-up and running corrections")],
            Kind::Comparison => &[c!(1, "first version")],
            Kind::MonitorRun => &[c!(1, "first version (`kind`: `commperf-monitor-run`)")],
            Kind::Signature => &[c!(1, "first version")],
            Kind::Prediction => &[c!(1, "first version")],
            Kind::Sweep => &[
                c!(1, "first version: the baseline was the untouched program"),
                c!(2, "the baseline is the emulator engaged at zero; the `untouched` reference row and `emulator_cost`"),
                c!(3, "`statistic` (how run times become slowdowns; 2 compared medians) and each setting's `rounds_s`; `partial`, present only when true, was added within 3"),
            ],
            Kind::EmulatedRun => &[
                c!(1, "unnumbered: every collective native, `collective_calls` all untouched"),
                c!(2, "`collectives` and the emulated/native collective counts in `untouched`"),
                c!(3, "`engaged`: the whole apparatus ran whatever the knobs"),
                c!(4, "nonblocking and persistent collectives and one-sided transfers are charged under the knobs (their counts in `untouched`)"),
            ],
            Kind::Study => &[
                c!(1, "first version (`schema`: `commperf-app-study`)"),
                c!(2, "the `loop` section (`--loop`); version 1 files read as studies without a loop"),
            ],
            Kind::Testbed => &[c!(1, "first version")],
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
