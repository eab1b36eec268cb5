//! commperf's application study (`commperf app`) apart from its runs: what a study is, what it
//! writes and how it reads, usable from Rust without the binary. The binary launches the
//! programs, the micro-benchmarks and the monitored and emulated runs, and fills these types.
//!
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

pub mod html;
pub mod rounds;
pub mod schema;
pub mod stack;
pub mod table;
pub mod verdict;

pub use schema::{STUDY_SCHEMA, STUDY_SCHEMA_VERSION};
