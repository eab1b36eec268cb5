//! Whether a measurement was disturbed: another commperf measurement running at the same time,
//! or CPU contention, found around the measurement and said with its figures.
//!
//! A measuring instrument must say when its numbers were disturbed. Two `bench` runs on the
//! same CPUs give a third of the bandwidth and two to five times the latency, and the
//! emulator's busy spins stretch eight-fold when another process shares their CPU; none of it
//! shows in the numbers themselves. [`Watch`] is the one way every verb finds out:
//!
//! - **Other measurements**: each measuring process registers in a registry directory
//!   ([`Registry`]) while it measures, and looks there at its start, between runs
//!   ([`Watch::check`]) and at its end. An entry is a file `<pid>-<seq>` holding the pid, the
//!   process's start time, the verb and the CPUs; it is created with `O_EXCL` and removed when
//!   its [`Registration`] is dropped. A process killed with SIGKILL cannot remove its entry:
//!   the next reader finds its pid dead (or reused by a process started at another time),
//!   does not count it, and removes it. The directory is `/dev/shm/commperf.active` (memory,
//!   cleared at boot; `COMMPERF_REGISTRY` names another, e.g. one per container). Its name
//!   does not begin `commperf-` on purpose: that prefix is the shared-memory segments', whose
//!   leftovers are bugs that CI checks for, and a registry entry of a killed process is not
//!   one (it is harmless and removed by the next run).
//! - **CPU contention**, from a [`CpuSample`] before and after:
//!   - involuntary context switches of the measuring processes (this one's threads, live or
//!     ended, and its waited-for children, e.g. a local peer or `mpirun` and its ranks), from
//!     `getrusage`. Reported at [`SWITCHES_MIN`] and at least [`SWITCHES_PER_S`] per second
//!     of the run: a thread that spins alone on its CPU is preempted only by the kernel's own
//!     per-CPU work, about once a second (3 in 2.9 s measured on the 2-CPU VM this was built
//!     on), while one that shares its CPU with one busy process is preempted at every time
//!     slice, about 90 times a second on that VM (179 in 2 s); each costs the measurement a
//!     time slice of milliseconds;
//!   - the run queue, `procs_running` of `/proc/stat` (tasks running or runnable, the sampling
//!     thread included): reported when a sample exceeds the online CPUs, for then some task
//!     waited for a CPU right then. Sampled when this process's own ends are not spinning (at
//!     the start and at the end), so it counts others;
//!   - steal time, the `steal` column of `/proc/stat`'s `cpu` line: time the hypervisor ran
//!     something else on our virtual CPUs. Reported at [`STEAL_MIN_TICKS`] clock ticks and at
//!     least [`STEAL_MIN_SHARE`] of the CPU time that passed: one tick (10 ms) is the
//!     counter's resolution, and a per cent of the time is more than the spread of a quiet
//!     run.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

/// The registry's directory unless `COMMPERF_REGISTRY` names another.
pub const REGISTRY_DIR: &str = "/dev/shm/commperf.active";
/// Involuntary context switches reported from this many on (and [`SWITCHES_PER_S`]).
pub const SWITCHES_MIN: u64 = 10;
/// Involuntary context switches per second of the run reported from this rate on.
pub const SWITCHES_PER_S: f64 = 5.0;
/// Steal reported from this many clock ticks on (and [`STEAL_MIN_SHARE`]).
pub const STEAL_MIN_TICKS: u64 = 2;
/// Steal reported from this share of the CPU time that passed on.
pub const STEAL_MIN_SHARE: f64 = 0.01;
/// Findings taken from another end of a measurement by [`Disturbance::merge`]; the rest are
/// counted (a peer cannot fill the result with them).
pub const MAX_MERGED: usize = 32;
/// Entries larger than this are not ours (an entry is a few dozen bytes).
const MAX_ENTRY_BYTES: u64 = 4096;

/// What kind of disturbance a [`Finding`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// Another commperf measurement ran at the same time.
    OtherMeasurement,
    /// The measuring processes were preempted.
    InvoluntarySwitches,
    /// More tasks were runnable than CPUs online.
    RunQueue,
    /// The hypervisor took CPU time.
    Steal,
}

/// One finding: what disturbed the measurement, in words with its figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Finding {
    pub kind: FindingKind,
    pub note: String,
}

/// Every finding of one measurement; empty when nothing disturbed it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct Disturbance {
    pub findings: Vec<Finding>,
}

impl Disturbance {
    pub fn is_empty(&self) -> bool {
        self.findings.is_empty()
    }

    /// The findings' notes, for a result's notes and a table's header.
    pub fn notes(&self) -> impl Iterator<Item = &str> {
        self.findings.iter().map(|f| f.note.as_str())
    }

    /// Adds what another end of the measurement found (`whose`: "the peer (pid 7 on node2)",
    /// "rank 1 on node2"), each note prefixed with `at {whose}: `, so that the one result a
    /// user reads says what disturbed either end. On the same machine (`same_machine`) both
    /// ends see the same other measurements: one the other end saw and this one did too is
    /// said once. At most [`MAX_MERGED`] are taken; the rest are counted in one more finding.
    /// The caller makes the notes printable first (they come from another process).
    pub fn merge(&mut self, whose: &str, theirs: Disturbance, same_machine: bool) {
        let mine: Vec<String> = self.findings.iter().map(|f| f.note.clone()).collect();
        let new: Vec<Finding> = theirs
            .findings
            .into_iter()
            .filter(|f| {
                !(same_machine && f.kind == FindingKind::OtherMeasurement && mine.contains(&f.note))
            })
            .collect();
        let left = new.len().saturating_sub(MAX_MERGED);
        self.findings
            .extend(new.into_iter().take(MAX_MERGED).map(|f| Finding {
                kind: f.kind,
                note: format!("at {whose}: {}", f.note),
            }));
        if left > 0 {
            self.findings.push(Finding {
                kind: FindingKind::OtherMeasurement,
                note: format!("at {whose}: {left} more findings, left out"),
            });
        }
    }
}

/// Why the registry could not be used.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("measurement registry {path}: {error}")]
    Io { path: String, error: std::io::Error },
}

/// One registered measurement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub pid: i32,
    /// Start time of the process, clock ticks after boot (field 22 of `/proc/PID/stat`): a pid
    /// reused by a later process does not match it.
    pub start_ticks: u64,
    /// `bench`, `emulate sweep`, `app`, …
    pub verb: String,
    /// The CPUs it measures on; empty when it did not pin.
    pub cpus: Vec<usize>,
}

impl Entry {
    fn to_text(&self) -> String {
        let cpus: Vec<String> = self.cpus.iter().map(usize::to_string).collect();
        format!(
            "pid={}\nstart={}\nverb={}\ncpus={}\n",
            self.pid,
            self.start_ticks,
            self.verb.replace('\n', " "),
            cpus.join(",")
        )
    }

    /// An entry's text, or None when it is not one (partly written, or not ours).
    pub fn parse(text: &str) -> Option<Entry> {
        let field = |k: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(k)?.strip_prefix('='))
                .map(str::to_string)
        };
        let pid = field("pid")?.parse().ok()?;
        let start_ticks = field("start")?.parse().ok()?;
        let verb = field("verb")?;
        let cpus = field("cpus")?;
        let cpus = cpus
            .split(',')
            .filter(|c| !c.is_empty())
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?;
        Some(Entry {
            pid,
            start_ticks,
            verb,
            cpus,
        })
    }

    /// "pid 1234 (bench, CPUs 0,1)".
    pub fn describe(&self) -> String {
        let cpus = if self.cpus.is_empty() {
            "not pinned".to_string()
        } else {
            let c: Vec<String> = self.cpus.iter().map(usize::to_string).collect();
            format!("CPUs {}", c.join(","))
        };
        format!("pid {} ({}, {cpus})", self.pid, self.verb)
    }
}

/// A process told apart from every other: its pid, its start time (a pid is reused, the pair
/// is not) and the boot it runs in (the pair repeats on another machine or after a reboot). The
/// ends of one measurement that are not parent and child (a `bench --peer` and its `serve`, the
/// ranks of an MPI job) exchange theirs, so that none reports another as "another measurement".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProcessId {
    pub pid: i32,
    /// Clock ticks after boot, as in [`Entry::start_ticks`].
    pub start_ticks: u64,
    /// `/proc/sys/kernel/random/boot_id`; empty where it could not be read.
    pub boot_id: String,
}

impl ProcessId {
    /// This process.
    pub fn me() -> Self {
        let pid = std::process::id() as i32;
        ProcessId {
            pid,
            start_ticks: start_ticks(pid).unwrap_or(0),
            boot_id: boot_id().to_string(),
        }
    }

    /// Whether `other` runs on the same machine (the same boot of the same kernel); false when
    /// either boot is unknown.
    pub fn same_machine(&self, other: &ProcessId) -> bool {
        !self.boot_id.is_empty() && self.boot_id == other.boot_id
    }

    /// Whether this is a live process of this machine (a partner elsewhere has no entry here,
    /// and its pid here is some other process).
    fn runs_here(&self) -> bool {
        let here = boot_id();
        !here.is_empty()
            && self.boot_id == here
            && self.pid > 0
            && start_ticks(self.pid) == Some(self.start_ticks)
    }
}

/// This boot's id, read once.
fn boot_id() -> &'static str {
    static ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ID.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    })
}

/// The registry of running measurements: one file per measurement in a directory.
#[derive(Debug, Clone)]
pub struct Registry {
    dir: PathBuf,
}

impl Default for Registry {
    /// `COMMPERF_REGISTRY`, else [`REGISTRY_DIR`].
    fn default() -> Self {
        let dir = std::env::var_os("COMMPERF_REGISTRY")
            .filter(|d| !d.is_empty())
            .map_or_else(|| PathBuf::from(REGISTRY_DIR), PathBuf::from);
        Registry { dir }
    }
}

/// Numbers the entries of one process apart (a process may measure twice at once).
static SEQ: AtomicU32 = AtomicU32::new(0);

impl Registry {
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Registry { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn io(&self, error: std::io::Error) -> RegistryError {
        RegistryError::Io {
            path: self.dir.display().to_string(),
            error,
        }
    }

    /// Makes the directory, open to every user like `/tmp` (sticky, so each removes only its
    /// own entries and dead processes' entries of its own user).
    fn ensure_dir(&self) -> Result<(), RegistryError> {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        match std::fs::DirBuilder::new().mode(0o1777).create(&self.dir) {
            // The umask narrowed the mode; widen it so other users can register too (best
            // effort: a directory of another user's stays as it is).
            Ok(()) => {
                let _ =
                    std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o1777));
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(self.io(e)),
        }
    }

    /// Registers this process's measurement until the returned value is dropped.
    pub fn register(&self, verb: &str, cpus: &[usize]) -> Result<Registration, RegistryError> {
        let pid = std::process::id() as i32;
        let entry = Entry {
            pid,
            start_ticks: start_ticks(pid).unwrap_or(0),
            verb: verb.to_string(),
            cpus: cpus.to_vec(),
        };
        let path = self.write_entry(&entry, SEQ.fetch_add(1, Ordering::Relaxed))?;
        Ok(Registration { path })
    }

    /// Writes `entry` as `<pid>-<seq>`, refusing to overwrite one (`O_EXCL`).
    fn write_entry(&self, entry: &Entry, seq: u32) -> Result<PathBuf, RegistryError> {
        self.ensure_dir()?;
        let path = self.dir.join(format!("{}-{seq}", entry.pid));
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| self.io(e))?;
        if let Err(e) = f.write_all(entry.to_text().as_bytes()) {
            let _ = std::fs::remove_file(&path);
            return Err(self.io(e));
        }
        Ok(path)
    }

    /// Every live measurement but `mine` and those of its `partners` (the other ends of the
    /// same measurement: their processes and those of their trees), keyed by file name;
    /// entries of dead processes are removed on the way (best effort) and never returned.
    pub fn others(
        &self,
        mine: Option<&Registration>,
        partners: &[ProcessId],
    ) -> BTreeMap<String, Entry> {
        let mut found = BTreeMap::new();
        let Ok(dir) = std::fs::read_dir(&self.dir) else {
            return found;
        };
        // A partner that ended, or runs on another machine, has no entry here to leave out.
        let partners: Vec<i32> = partners
            .iter()
            .filter(|p| p.runs_here())
            .map(|p| p.pid)
            .collect();
        for ent in dir.flatten() {
            let path = ent.path();
            if mine.is_some_and(|m| m.path == path) {
                continue;
            }
            let name = ent.file_name().to_string_lossy().into_owned();
            let Some(pid) = name.split('-').next().and_then(|p| p.parse::<i32>().ok()) else {
                continue;
            };
            let entry = read_entry(&path);
            let stat = pid_stat(pid);
            let alive = pid > 0
                && process_alive(pid)
                && match (&entry, stat) {
                    // A zombie measures nothing; a pid reused by a process started at another
                    // time is not this entry's.
                    (_, Some(s)) if s.state == 'Z' => false,
                    (Some(e), Some(s)) if e.start_ticks != 0 => e.start_ticks == s.start_ticks,
                    _ => true,
                };
            if !alive {
                let _ = std::fs::remove_file(&path);
                continue;
            }
            let me = std::process::id() as i32;
            // Our own other entries count (a process may measure twice at once); those of
            // processes of our own tree do not.
            if pid != me && same_tree(pid, me) {
                continue;
            }
            if partners.iter().any(|&p| same_tree(pid, p)) {
                continue;
            }
            // An entry still being written is seen at the next look.
            if let Some(e) = entry.filter(|e| e.pid == pid) {
                found.insert(name, e);
            }
        }
        found
    }
}

fn read_entry(path: &Path) -> Option<Entry> {
    use std::io::Read;
    let f = std::fs::File::open(path).ok()?;
    let mut text = String::new();
    f.take(MAX_ENTRY_BYTES).read_to_string(&mut text).ok()?;
    Entry::parse(&text)
}

/// This process's entry in the registry; dropping it removes the entry.
#[derive(Debug)]
pub struct Registration {
    path: PathBuf,
}

impl Registration {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn process_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

fn pid_stat(pid: i32) -> Option<PidStat> {
    parse_pid_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Start time (clock ticks after boot) of `pid`.
fn start_ticks(pid: i32) -> Option<u64> {
    pid_stat(pid).map(|s| s.start_ticks)
}

/// Whether `a` is `b` or one of its ancestors (by parent pids, at most 64 generations).
fn ancestor_of(a: i32, b: i32) -> bool {
    let mut p = b;
    for _ in 0..64 {
        if p == a {
            return true;
        }
        match pid_stat(p) {
            Some(s) if s.ppid > 0 && s.ppid != p => p = s.ppid,
            _ => return false,
        }
    }
    false
}

/// One measurement's own processes: `app` runs `bench` and `emulate sweep`, which register
/// too, and neither disturbs the other.
fn same_tree(a: i32, b: i32) -> bool {
    ancestor_of(a, b) || ancestor_of(b, a)
}

/// The fields of a `/proc/PID/stat` line this module needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PidStat {
    /// Field 3: `R`, `S`, … `Z` for a zombie.
    pub state: char,
    /// Field 4.
    pub ppid: i32,
    /// Field 22 (`starttime`), clock ticks after boot.
    pub start_ticks: u64,
}

/// Reads a `/proc/PID/stat` line. The command name (field 2) is in parentheses and may hold
/// spaces and parentheses itself, so fields are counted after the last `)`.
pub fn parse_pid_stat(text: &str) -> Option<PidStat> {
    let rest = &text[text.rfind(')')? + 1..];
    // After the name come field 3 (state) onwards: field 4 is the 2nd, field 22 the 20th.
    let f: Vec<&str> = rest.split_whitespace().take(20).collect();
    Some(PidStat {
        state: f.first()?.chars().next()?,
        ppid: f.get(1)?.parse().ok()?,
        start_ticks: f.get(19)?.parse().ok()?,
    })
}

/// The figures of `/proc/stat` a [`CpuSample`] needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// Tasks running or runnable at the moment it was read.
    pub procs_running: u64,
    /// `cpuN` lines: the CPUs online.
    pub online_cpus: usize,
    /// The `cpu` line's steal column, clock ticks.
    pub steal_ticks: u64,
    /// The sum of the `cpu` line's columns (guest time is already in user and nice, so the
    /// last two columns are left out), clock ticks.
    pub total_ticks: u64,
}

/// Reads [`ProcStat`] out of `/proc/stat`'s text; None when a needed line is missing.
pub fn parse_proc_stat(text: &str) -> Option<ProcStat> {
    let mut procs_running = None;
    let mut online_cpus = 0;
    let mut ticks = None;
    for line in text.lines() {
        let mut f = line.split_whitespace();
        match f.next() {
            Some("cpu") => {
                let cols: Vec<u64> = f.map_while(|c| c.parse().ok()).collect();
                // user nice system idle iowait irq softirq steal [guest guest_nice]
                if cols.len() >= 8 {
                    ticks = Some((cols[7], cols.iter().take(8).sum()));
                }
            }
            Some(c) if c.starts_with("cpu") && c[3..].parse::<u32>().is_ok() => online_cpus += 1,
            Some("procs_running") => procs_running = f.next().and_then(|n| n.parse().ok()),
            _ => {}
        }
    }
    let (steal_ticks, total_ticks) = ticks?;
    Some(ProcStat {
        procs_running: procs_running?,
        online_cpus,
        steal_ticks,
        total_ticks,
    })
}

/// The machine's and the measuring processes' state at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuSample {
    /// None where `/proc/stat` could not be read.
    pub stat: Option<ProcStat>,
    /// Involuntary context switches of this process's threads and its waited-for children.
    pub involuntary_switches: u64,
    pub at: Instant,
}

impl CpuSample {
    pub fn now() -> Self {
        let stat = std::fs::read_to_string("/proc/stat")
            .ok()
            .and_then(|t| parse_proc_stat(&t));
        CpuSample {
            stat,
            involuntary_switches: nivcsw(libc::RUSAGE_SELF) + nivcsw(libc::RUSAGE_CHILDREN),
            at: Instant::now(),
        }
    }
}

fn nivcsw(who: libc::c_int) -> u64 {
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable rusage; `who` is RUSAGE_SELF or RUSAGE_CHILDREN.
    if unsafe { libc::getrusage(who, &mut u) } != 0 {
        return 0;
    }
    u.ru_nivcsw.max(0) as u64
}

/// The contention findings between two samples, with `peak_running` the most tasks seen
/// runnable at any sample (see the module's doc for the thresholds).
pub fn contention(before: &CpuSample, after: &CpuSample, peak_running: u64) -> Vec<Finding> {
    let mut out = Vec::new();
    let secs = after.at.saturating_duration_since(before.at).as_secs_f64();
    let switches = after
        .involuntary_switches
        .saturating_sub(before.involuntary_switches);
    if switches >= SWITCHES_MIN && switches as f64 >= SWITCHES_PER_S * secs {
        out.push(Finding {
            kind: FindingKind::InvoluntarySwitches,
            note: format!(
                "{switches} involuntary context switches of the measuring processes in {secs:.1} s: \
                 something else ran on their CPUs"
            ),
        });
    }
    if let (Some(b), Some(a)) = (before.stat, after.stat) {
        let cpus = a.online_cpus.max(1) as u64;
        if peak_running > cpus {
            out.push(Finding {
                kind: FindingKind::RunQueue,
                note: format!(
                    "run queue {peak_running} runnable on {cpus} CPUs: tasks waited for a CPU"
                ),
            });
        }
        let steal = a.steal_ticks.saturating_sub(b.steal_ticks);
        let total = a.total_ticks.saturating_sub(b.total_ticks);
        if steal >= STEAL_MIN_TICKS && steal as f64 >= STEAL_MIN_SHARE * total as f64 {
            out.push(Finding {
                kind: FindingKind::Steal,
                note: format!(
                    "steal {:.1}% of the CPU time ({steal} of {total} ticks): the hypervisor \
                     ran something else on these CPUs",
                    100.0 * steal as f64 / total.max(1) as f64
                ),
            });
        }
    }
    out
}

/// Watches one measurement from its start to [`Watch::finish`]: registers it, samples the CPUs,
/// and collects the other measurements seen at any look.
#[derive(Debug)]
pub struct Watch {
    registry: Registry,
    registration: Option<Registration>,
    /// Why registering failed, reported as a finding-free note by [`Watch::finish`].
    unregistered: Option<String>,
    /// The other ends of this measurement, never reported as other measurements.
    partners: Vec<ProcessId>,
    before: CpuSample,
    peak_running: u64,
    others: BTreeMap<String, Entry>,
}

impl Watch {
    /// Starts watching a measurement by `verb` on `cpus` (empty when not pinned), in the
    /// default registry.
    pub fn start(verb: &str, cpus: &[usize]) -> Self {
        Self::start_in(Registry::default(), verb, cpus, Vec::new())
    }

    /// [`Watch::start`] for one end of a measurement whose other ends are `partners` (a
    /// `serve` and its client, the ranks of an MPI job): they and their trees are not
    /// reported as other measurements.
    pub fn start_among(verb: &str, cpus: &[usize], partners: Vec<ProcessId>) -> Self {
        Self::start_in(Registry::default(), verb, cpus, partners)
    }

    pub fn start_in(
        registry: Registry,
        verb: &str,
        cpus: &[usize],
        partners: Vec<ProcessId>,
    ) -> Self {
        let (registration, unregistered) = match registry.register(verb, cpus) {
            Ok(r) => (Some(r), None),
            Err(e) => (None, Some(e.to_string())),
        };
        let before = CpuSample::now();
        let mut w = Watch {
            registry,
            registration,
            unregistered,
            partners,
            peak_running: before.stat.map_or(0, |s| s.procs_running),
            before,
            others: BTreeMap::new(),
        };
        w.look();
        w
    }

    fn look(&mut self) {
        let found = self
            .registry
            .others(self.registration.as_ref(), &self.partners);
        self.others.extend(found);
    }

    /// Looks again (between runs, while nothing of ours spins): other measurements and the
    /// run queue.
    pub fn check(&mut self) {
        self.look();
        if let Some(s) = CpuSample::now().stat {
            self.peak_running = self.peak_running.max(s.procs_running);
        }
    }

    /// The findings of the whole measurement; the registration ends here.
    pub fn finish(mut self) -> Disturbance {
        let after = CpuSample::now();
        self.look();
        let peak = self
            .peak_running
            .max(after.stat.map_or(0, |s| s.procs_running));
        let mut findings: Vec<Finding> = self
            .others
            .values()
            .map(|e| Finding {
                kind: FindingKind::OtherMeasurement,
                note: format!(
                    "another commperf measurement ran at the same time: {}",
                    e.describe()
                ),
            })
            .collect();
        findings.extend(contention(&self.before, &after, peak));
        if let Some(why) = self.unregistered.take() {
            // Not a disturbance, but others could not see this run: said so, not hidden.
            findings.push(Finding {
                kind: FindingKind::OtherMeasurement,
                note: format!("this run could not register itself ({why}): a measurement started alongside it would not know of it"),
            });
        }
        Disturbance { findings }
    }
}

impl fmt::Display for Disturbance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, n) in self.notes().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            f.write_str(n)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROC_STAT: &str = "cpu  3906171 2157 1048113 71433286 31410 0 41221 7370 0 0
cpu0 1955262 1083 524339 35710120 15617 0 28393 3700 0 0
cpu1 1950908 1074 523773 35723165 15793 0 12828 3670 0 0
intr 503466196 0 9 0 0
ctxt 942331218
btime 1764326600
processes 1867392
procs_running 5
procs_blocked 0
softirq 149391113 0 38215167 1 9098399 0 0 1 56470574 0 45606971
";

    #[test]
    fn proc_stat_gives_running_cpus_and_steal() {
        let s = parse_proc_stat(PROC_STAT).unwrap();
        assert_eq!(
            s,
            ProcStat {
                procs_running: 5,
                online_cpus: 2,
                steal_ticks: 7370,
                total_ticks: 3906171 + 2157 + 1048113 + 71433286 + 31410 + 41221 + 7370,
            }
        );
        assert_eq!(parse_proc_stat("cpu 1 2 3\nprocs_running 1\n"), None);
        assert_eq!(parse_proc_stat("procs_running 1\n"), None);
        assert_eq!(parse_proc_stat(""), None);
    }

    #[test]
    fn pid_stat_start_time_survives_odd_names() {
        let line = "1234 (a) b (c)) S 1 1234 1234 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 \
                    987654 1000 200 18446744073709551615";
        assert_eq!(
            parse_pid_stat(line),
            Some(PidStat {
                state: 'S',
                ppid: 1,
                start_ticks: 987654
            })
        );
        assert_eq!(parse_pid_stat("1234 (x) S 1 2"), None);
        assert_eq!(parse_pid_stat("garbage"), None);
        // Our parent is our ancestor, we are not our parent's.
        let me = std::process::id() as i32;
        let parent = std::os::unix::process::parent_id() as i32;
        assert_eq!(pid_stat(me).map(|s| s.ppid), Some(parent));
        assert!(ancestor_of(parent, me) && ancestor_of(1, me) && !ancestor_of(me, parent));
        // Our own start time is readable and stable.
        assert!(start_ticks(me).is_some());
        assert_eq!(start_ticks(me), start_ticks(me));
    }

    #[test]
    fn entries_round_trip_and_describe_themselves() {
        let e = Entry {
            pid: 1234,
            start_ticks: 99,
            verb: "bench".into(),
            cpus: vec![0, 1],
        };
        assert_eq!(Entry::parse(&e.to_text()), Some(e.clone()));
        assert_eq!(e.describe(), "pid 1234 (bench, CPUs 0,1)");
        let unpinned = Entry { cpus: vec![], ..e };
        assert_eq!(Entry::parse(&unpinned.to_text()), Some(unpinned.clone()));
        assert_eq!(unpinned.describe(), "pid 1234 (bench, not pinned)");
        // Half written.
        assert_eq!(Entry::parse("pid=1234\nstart=9"), None);
    }

    fn sample(switches: u64, secs: f64, running: u64, steal: u64, total: u64) -> CpuSample {
        CpuSample {
            stat: Some(ProcStat {
                procs_running: running,
                online_cpus: 2,
                steal_ticks: steal,
                total_ticks: total,
            }),
            involuntary_switches: switches,
            at: Instant::now() + std::time::Duration::from_secs_f64(secs),
        }
    }

    #[test]
    fn contention_thresholds() {
        let b = sample(100, 0.0, 1, 50, 10_000);
        // Quiet: 9 switches, run queue 2 on 2 CPUs, 1 tick of steal.
        assert!(contention(&b, &sample(109, 1.0, 1, 51, 10_200), 2).is_empty());
        // 10 switches in 1 s: reported; 10 in 4 s (2.5/s) is not.
        let f = contention(&b, &sample(110, 1.0, 1, 50, 10_200), 1);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].kind, FindingKind::InvoluntarySwitches);
        assert!(
            f[0].note.starts_with("10 involuntary context switches"),
            "{}",
            f[0].note
        );
        assert!(contention(&b, &sample(110, 4.0, 1, 50, 10_800), 1).is_empty());
        // Run queue 3 on 2 CPUs; steal 2 of 200 ticks (1 %).
        let f = contention(&b, &sample(100, 1.0, 1, 52, 10_200), 3);
        let kinds: Vec<_> = f.iter().map(|f| f.kind).collect();
        assert_eq!(kinds, [FindingKind::RunQueue, FindingKind::Steal]);
        assert_eq!(
            f[0].note,
            "run queue 3 runnable on 2 CPUs: tasks waited for a CPU"
        );
        assert!(f[1]
            .note
            .starts_with("steal 1.0% of the CPU time (2 of 200 ticks)"));
        // 2 ticks of 300 is under 1 %.
        assert!(contention(&b, &sample(100, 1.0, 1, 52, 10_300), 2).is_empty());
    }

    use commperf_testkit::TempDir;

    fn entries(dir: &Path) -> usize {
        std::fs::read_dir(dir).map_or(0, |d| d.count())
    }

    #[test]
    fn two_registrations_see_each_other_and_leave_nothing() {
        let d = TempDir::new("registry-test-two");
        let reg = Registry::at(d.path());
        let a = reg.register("bench", &[0, 1]).unwrap();
        let b = reg.register("emulate sweep", &[]).unwrap();
        let me = std::process::id() as i32;
        let seen_by_a: Vec<Entry> = reg.others(Some(&a), &[]).into_values().collect();
        let seen_by_b: Vec<Entry> = reg.others(Some(&b), &[]).into_values().collect();
        assert_eq!(seen_by_a.len(), 1);
        assert_eq!(
            seen_by_a[0].describe(),
            format!("pid {me} (emulate sweep, not pinned)")
        );
        assert_eq!(seen_by_b.len(), 1);
        assert_eq!(
            seen_by_b[0].describe(),
            format!("pid {me} (bench, CPUs 0,1)")
        );
        assert_eq!(reg.others(None, &[]).len(), 2);
        drop(a);
        assert_eq!(reg.others(Some(&b), &[]).len(), 0);
        drop(b);
        assert_eq!(entries(d.path()), 0);
    }

    #[test]
    fn a_killed_process_entry_is_not_counted_and_is_removed() {
        let d = TempDir::new("registry-test-dead");
        let reg = Registry::at(d.path());
        // A real process, registered under its own pid and start time, then SIGKILLed: it
        // could not remove its entry. Started by a shell that exits at once, so that it is no
        // descendant of ours (those are part of our own measurement and not reported).
        let pid = detached("sleep 30");
        let entry = Entry {
            pid,
            start_ticks: start_ticks(pid).unwrap(),
            verb: "bench".into(),
            cpus: vec![0],
        };
        let path = reg.write_entry(&entry, 0).unwrap();
        let seen = reg.others(None, &[]);
        assert_eq!(seen.values().cloned().collect::<Vec<_>>(), [entry]);
        // SAFETY: kill(2) on the sleep this test started; no memory is involved.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
        assert!(path.exists());
        // Its reaper (init or a subreaper) may take a moment; a zombie already does not count.
        let deadline = Instant::now() + std::time::Duration::from_secs(5);
        while pid_stat(pid).is_some_and(|s| s.state != 'Z') && Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(reg.others(None, &[]).is_empty());
        assert!(!path.exists(), "the dead process's entry was removed");
        // A live pid with another start time is a reused pid: not counted, removed.
        let me = std::process::id() as i32;
        let reused = Entry {
            pid: me,
            start_ticks: start_ticks(me).unwrap() + 1,
            verb: "bench".into(),
            cpus: vec![],
        };
        let path = reg.write_entry(&reused, 1000).unwrap();
        assert!(reg.others(None, &[]).is_empty());
        assert!(!path.exists());
        // The same file name twice is refused (O_EXCL), not overwritten.
        let a = reg.register("bench", &[]).unwrap();
        let name = a.path().file_name().unwrap().to_string_lossy().into_owned();
        let seq: u32 = name.split('-').nth(1).unwrap().parse().unwrap();
        let own = Entry::parse(&std::fs::read_to_string(a.path()).unwrap()).unwrap();
        assert!(matches!(
            reg.write_entry(&own, seq),
            Err(RegistryError::Io { .. })
        ));
        drop(a);
        assert_eq!(entries(d.path()), 0);
    }

    /// The pid of `command` started in the background by a shell that exits at once: no
    /// descendant of ours (those are part of our own measurement and never reported).
    fn detached(command: &str) -> i32 {
        let out = std::process::Command::new("sh")
            .args(["-c", &format!("{command} >/dev/null 2>&1 & echo $!")])
            .output()
            .unwrap();
        String::from_utf8(out.stdout)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    #[test]
    fn a_partner_and_its_tree_are_left_out_and_only_on_its_machine() {
        let d = TempDir::new("registry-test-partner");
        let reg = Registry::at(d.path());
        // A process that is no relative of ours (its shell exits at once), registered as the
        // other end of our measurement would be, and a child of it registered too.
        let pid = detached("sh -c 'sleep 30 & sleep 30'");
        // Its children appear once it has forked them.
        let deadline = Instant::now() + std::time::Duration::from_secs(5);
        let child = loop {
            let kids = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
                .unwrap_or_default();
            if let Some(k) = kids.split_whitespace().next() {
                break k.parse::<i32>().unwrap();
            }
            assert!(Instant::now() < deadline, "sh forked no sleep");
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        let id = |pid: i32| ProcessId {
            pid,
            start_ticks: start_ticks(pid).unwrap(),
            boot_id: boot_id().to_string(),
        };
        let partner = id(pid);
        for (i, p) in [pid, child].into_iter().enumerate() {
            let e = Entry {
                pid: p,
                start_ticks: start_ticks(p).unwrap(),
                verb: "serve".into(),
                cpus: vec![],
            };
            reg.write_entry(&e, i as u32).unwrap();
        }
        assert_eq!(reg.others(None, &[]).len(), 2);
        // The partner and its child are one measurement with us.
        assert!(reg.others(None, std::slice::from_ref(&partner)).is_empty());
        // The same pid and start time on another machine (another boot) is someone else.
        let elsewhere = ProcessId {
            boot_id: "another-boot".into(),
            ..partner.clone()
        };
        assert_eq!(reg.others(None, std::slice::from_ref(&elsewhere)).len(), 2);
        assert!(!partner.same_machine(&elsewhere));
        assert!(partner.same_machine(&ProcessId::me()));
        // A reused pid (another start time) is not the partner either.
        let reused = ProcessId {
            start_ticks: partner.start_ticks + 1,
            ..partner.clone()
        };
        assert_eq!(reg.others(None, &[reused]).len(), 2);
        // SAFETY: kill(2) on the processes this test started; no memory is involved.
        unsafe {
            libc::kill(child, libc::SIGKILL);
            libc::kill(pid, libc::SIGKILL);
        }
    }

    #[test]
    fn another_ends_findings_are_prefixed_deduplicated_on_one_machine_and_bounded() {
        let f = |kind, note: &str| Finding {
            kind,
            note: note.to_string(),
        };
        let other = "another commperf measurement ran at the same time: pid 9 (bench, CPUs 1)";
        let mut mine = Disturbance {
            findings: vec![f(FindingKind::OtherMeasurement, other)],
        };
        let theirs = Disturbance {
            findings: vec![
                f(FindingKind::OtherMeasurement, other),
                f(
                    FindingKind::InvoluntarySwitches,
                    "12 involuntary context switches",
                ),
            ],
        };
        let mut apart = mine.clone();
        mine.merge("the peer (pid 7 on h)", theirs.clone(), true);
        assert_eq!(
            mine.notes().collect::<Vec<_>>(),
            [
                other,
                "at the peer (pid 7 on h): 12 involuntary context switches"
            ]
        );
        // On another machine, pid 9 there is another process than pid 9 here.
        apart.merge("rank 1 on n2", theirs, false);
        assert_eq!(
            apart.notes().collect::<Vec<_>>(),
            [
                other.to_string(),
                format!("at rank 1 on n2: {other}"),
                "at rank 1 on n2: 12 involuntary context switches".to_string()
            ]
        );
        let flood = Disturbance {
            findings: (0..MAX_MERGED + 5)
                .map(|i| f(FindingKind::Steal, &i.to_string()))
                .collect(),
        };
        let mut d = Disturbance::default();
        d.merge("p", flood, true);
        assert_eq!(d.findings.len(), MAX_MERGED + 1);
        assert_eq!(
            d.findings[MAX_MERGED].note,
            "at p: 5 more findings, left out"
        );
    }

    #[test]
    fn a_watch_names_the_other_measurement_and_ends_its_registration() {
        let d = TempDir::new("registry-test-watch");
        let reg = Registry::at(d.path());
        let other = reg.register("app", &[1]).unwrap();
        let w = Watch::start_in(reg.clone(), "bench", &[0], Vec::new());
        drop(other);
        let found = w.finish();
        let me = std::process::id();
        let others: Vec<&str> = found
            .findings
            .iter()
            .filter(|f| f.kind == FindingKind::OtherMeasurement)
            .map(|f| f.note.as_str())
            .collect();
        // Seen at the start, reported though it ended before the watch did.
        assert_eq!(
            others,
            [
                format!(
                    "another commperf measurement ran at the same time: pid {me} (app, CPUs 1)"
                )
                .as_str()
            ]
        );
        assert_eq!(entries(d.path()), 0);
        // Alone: no such finding.
        let alone = Watch::start_in(reg, "bench", &[0], Vec::new()).finish();
        assert!(alone
            .findings
            .iter()
            .all(|f| f.kind != FindingKind::OtherMeasurement));
    }
}
