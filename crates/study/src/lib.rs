//! commperf's application study (`commperf app`, `app --loop`), usable from Rust without the
//! binary: what a study is, how it runs, what it writes and how it reads. The binary parses the
//! command line into [`Options`](config::Options), calls [`run::run`] and prints the
//! [`Study`](schema::Study) it returns.
//!
//! - [`config`]: the study's options, checked ([`StudyConfig`](config::StudyConfig)), each
//!   refusal naming its option.
//! - [`run`]: the study's rounds of runs, every program on every stack, then the
//!   micro-benchmarks, the loop's section and the sweeps; where the runs write
//!   ([`Workspace`](run::Workspace)).
//! - [`programs`]: the kit of NAS-pattern programs, compiled with each MPI's mpicc into a
//!   cache, and the [`Program`](programs::Program)s of a study; [`installed`]: the installed
//!   programs beside the kit (hpcc, lammps), their inputs and binaries.
//! - [`launch`]: a program's launch on a stack, one monitored run judged by its verdict, a bench
//!   under a stack's launch, and the watchdog every launch runs under.
//! - [`micro`]: the stacks' micro-benchmark figures and the rows of `bench loggp` the loop takes
//!   its parameters from (the only reader of the benchmark's rows here).
//! - [`looping`]: the loop (`--loop`): the stacks' LogGP parameters, the reference's traces
//!   replayed by the predictor, the emulated runs, and the loop's section of the study.
//! - [`sweep`]: the sensitivity sweeps (`--sweep`), `commperf emulate sweep` per program.
//! - [`nets`]: the rate-limited clusters under the network stacks (`ompi-tcp@100mbit`).
//! - [`error`]: [`StudyError`](error::StudyError), what can go wrong in the runs.
//! - [`schema`]: the study's file (`study.json`, `--json`): [`Study`](schema::Study) and its
//!   cells, profiles, micro-benchmark figures and explanations, the loop's section
//!   ([`Loop`](schema::Loop)) and the sensitivity sweeps, with [`STUDY_SCHEMA_VERSION`].
//! - [`stack`]: the MPI stacks a study runs on, their names and launches.
//! - [`verdict`]: what one run of a program said about itself. A benchmark program times its own
//!   timed section and checks its own result; the launcher's wall time and exit status alone miss
//!   both (a NAS program prints `Time in seconds = 0.70` inside a 1.06 s launch, and prints
//!   `Verification = UNSUCCESSFUL` yet exits 0).
//! - [`rounds`]: the loop's arithmetic: errors against the measured times, the reference stack,
//!   the knobs of an emulation, the causes of each miss, the tally within the goal's 10 %.
//! - [`table`] and [`html`]: the study as the text tables and as one self-contained HTML page.
//!
//! ```
//! use commperf_study::schema::{Cell, Study, STUDY_SCHEMA, STUDY_SCHEMA_VERSION};
//!
//! // One program on two stacks, the second of which failed.
//! let cell = |stack: &str, time_s: Option<f64>| Cell {
//!     program: "halo".into(),
//!     stack: stack.into(),
//!     error: time_s.is_none().then(|| "exit status 1".to_string()),
//!     failures: Vec::new(),
//!     time_s,
//!     time_source: time_s.map(|_| "program".to_string()),
//!     time_pattern: None,
//!     times_s: time_s.into_iter().collect(),
//!     wall_s: time_s,
//!     profile: None,
//!     micro: None,
//!     monitor_dirs: Vec::new(),
//!     notes: Vec::new(),
//!     run_states_ns: Vec::new(),
//! };
//! let study = Study {
//!     schema: STUDY_SCHEMA.into(),
//!     schema_version: STUDY_SCHEMA_VERSION,
//!     np: 4,
//!     repeat: 1,
//!     programs: vec!["halo".into()],
//!     stacks: vec!["ompi-shm".into(), "mpich-tcp".into()],
//!     wall_time_s: 2.5,
//!     oversubscribed: None,
//!     cells: vec![cell("ompi-shm", Some(0.0123)), cell("mpich-tcp", None)],
//!     benches: Vec::new(),
//!     explanations: Vec::new(),
//!     loop_study: None,
//!     sensitivity: Vec::new(),
//!     disturbance: Default::default(),
//! };
//! let table = commperf_study::table::render(&study);
//! assert!(table.contains("| 4 ranks | median of 1 run(s) |"), "{table}");
//! assert!(table.lines().any(|l| l.starts_with("halo") && l.contains("0.0123")), "{table}");
//! assert!(table.ends_with("study wall time 2.5 s\n"), "{table}");
//! ```

pub mod config;
pub mod error;
pub mod html;
pub mod installed;
pub mod launch;
pub mod looping;
pub mod micro;
pub mod nets;
pub mod programs;
pub mod rounds;
pub mod run;
pub mod schema;
pub mod stack;
pub mod sweep;
pub mod table;
pub mod verdict;

#[cfg(test)]
pub(crate) mod fixtures;

pub use config::{ConfigError, Options, StudyConfig};
pub use error::StudyError;

pub use schema::{STUDY_SCHEMA, STUDY_SCHEMA_VERSION};
