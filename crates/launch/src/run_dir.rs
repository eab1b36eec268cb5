//! Run directories that outlive nothing: a private directory a launched command writes into,
//! removed when the verb ends, and also when the verb is killed outright (SIGKILL runs no drop)
//! by a small guard process, `commperf __reap DIR`.
//!
//! Why a module of its own: `emulate` keeps its interposer, the L side band and the per-rank
//! counts in one, and the verbs that launch MPI on this host themselves (`bench -t mpi`,
//! `app`) give Open MPI one for its session directory and the segments of its shared-memory
//! transport (vader). Not `monitor` and `emulate`: their commands are the user's, and may
//! start ranks on other hosts, where a directory made here does not exist. Open MPI removes those files itself when a job ends normally, but a job
//! stopped by a signal while its ranks set up shared memory leaves them behind (seen in 22 of
//! 50 `kill -9`s of `commperf app` on the ompi-shm stack: segment files in `/dev/shm`, and,
//! once those were moved, session directories in `$TMPDIR` in 7 of 12); the guard removes
//! them once mpirun is gone.

use crate::LaunchError;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// What a run directory holds; the middle of its name, `commperf-KIND-PID-N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `emulate`'s interposer, L side band and per-rank counts (in the temporary directory).
    Emulate,
    /// Open MPI's session directory and shared-memory segments (`orte_tmpdir_base`,
    /// `btl_vader_backing_directory`).
    Ompi,
}

impl Kind {
    const ALL: [Kind; 2] = [Kind::Emulate, Kind::Ompi];

    fn name(self) -> &'static str {
        match self {
            Kind::Emulate => "emulate",
            Kind::Ompi => "ompi",
        }
    }

    /// Where this kind's directories go: the temporary directory for `emulate`; for Open MPI,
    /// the segments' backing directory the user chose (`OMPI_MCA_btl_vader_backing_directory`)
    /// or Open MPI's own default for it, `/dev/shm` (memory, not disk: the transport's speed is
    /// what the user measures).
    fn base(self) -> PathBuf {
        match self {
            Kind::Emulate => std::env::temp_dir(),
            Kind::Ompi => std::env::var_os(OMPI_BACKING)
                .map(PathBuf::from)
                .filter(|p| p.is_dir())
                .or_else(|| Some(PathBuf::from("/dev/shm")).filter(|p| p.is_dir()))
                .unwrap_or_else(std::env::temp_dir),
        }
    }
}

/// Open MPI's parameters for the directory of its shared-memory segments and of its session
/// directory, as environment variables (mpirun reads them and passes them to its ranks; an
/// `--mca` on the command line wins).
const OMPI_BACKING: &str = "OMPI_MCA_btl_vader_backing_directory";
const OMPI_SESSION_BASE: &str = "OMPI_MCA_orte_tmpdir_base";

/// How long the guard waits for the launched command to end before it removes the directory
/// anyway (mpirun stops its ranks within a second or two of SIGTERM).
const REAP_WAIT: Duration = Duration::from_secs(10);

/// A private run directory, removed on drop and, if this process is killed, by its guard: a
/// `commperf __reap DIR` child blocked reading a pipe whose writing end only this process
/// holds. The kernel closes that end when this process ends, however it ends; the guard then
/// waits for the launched command (its pid came through the pipe; it got SIGTERM from its
/// parent-death signal, [`crate::interrupt::die_with_parent`]) to stop writing there, and
/// removes the directory. A pipe, not a parent-death signal, for the guard: its EOF comes
/// exactly once whatever killed us and whichever thread spawned it. The guard has its own
/// process group, so that a signal to ours (a Ctrl-C, a sweep killing a run's group) leaves it
/// to clean up. The name carries our pid: a directory whose process and guard both died (a
/// machine crash) is removed by the next run of its kind ([`remove_stale`]).
#[derive(Debug)]
pub struct RunDir {
    path: PathBuf,
    /// None only in unit tests, whose executable is the test harness.
    reaper: Option<std::process::Child>,
}

impl RunDir {
    /// A new guarded directory of `kind` in its base directory.
    pub fn new(kind: Kind) -> Result<RunDir, LaunchError> {
        let base = kind.base();
        remove_stale(&base, kind);
        for i in 0..100u32 {
            let d = base.join(format!(
                "commperf-{}-{}-{i}",
                kind.name(),
                std::process::id()
            ));
            match std::fs::create_dir(&d) {
                Ok(()) => return RunDir::guarded(d),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(LaunchError::Io {
                        what: format!("cannot create {}", d.display()),
                        source: e,
                    })
                }
            }
        }
        Err(LaunchError::NoRunDir(base))
    }

    /// A guarded directory for Open MPI's session files and shared-memory segments, given to
    /// `cmd` (a launch this process is about to spawn; call [`RunDir::launched`] with its pid).
    /// Harmless to other MPIs, which do not read these variables.
    pub fn ompi(cmd: &mut Command) -> Result<RunDir, LaunchError> {
        let d = RunDir::new(Kind::Ompi)?;
        cmd.env(OMPI_BACKING, &d.path)
            .env(OMPI_SESSION_BASE, &d.path);
        Ok(d)
    }

    fn guarded(path: PathBuf) -> Result<RunDir, LaunchError> {
        let reaper = std::env::current_exe()
            .and_then(|exe| {
                let mut cmd = Command::new(exe);
                cmd.arg("__reap")
                    .arg(&path)
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null());
                std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
                cmd.spawn()
            })
            .map_err(|e| {
                let _ = std::fs::remove_dir(&path);
                LaunchError::Io {
                    what: format!("cannot start the guard of {}", path.display()),
                    source: e,
                }
            })?;
        Ok(RunDir {
            path,
            reaper: Some(reaper),
        })
    }

    /// A run directory without its guard, which nothing removes if this process is killed:
    /// for tests, whose executable is a test harness that cannot be the guard.
    pub fn unguarded() -> std::io::Result<RunDir> {
        let path = std::env::temp_dir().join(format!(
            "commperf-emulate-{}-test-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&path)?;
        Ok(RunDir { path, reaper: None })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Tells the guard which process writes into the directory.
    pub fn launched(&mut self, pid: u32) {
        use std::io::Write;
        if let Some(w) = self.reaper.as_mut().and_then(|r| r.stdin.as_mut()) {
            let _ = writeln!(w, "{pid}");
        }
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
        // The guard finds the directory gone and ends at once.
        if let Some(r) = self.reaper.as_mut() {
            drop(r.stdin.take());
            let _ = r.wait();
        }
    }
}

/// The kind and owner of a run directory, from its name `commperf-KIND-PID-N`.
fn parse_name(name: &str) -> Option<(Kind, u32)> {
    let rest = name.strip_prefix("commperf-")?;
    Kind::ALL.into_iter().find_map(|k| {
        let (pid, n) = rest
            .strip_prefix(k.name())?
            .strip_prefix('-')?
            .split_once('-')?;
        n.parse::<u32>().ok()?;
        Some((k, pid.parse().ok()?))
    })
}

/// Removes `kind`'s run directories in `base` left by processes that no longer exist (both the
/// run and its guard were killed); a directory whose process lives, or that another user owns,
/// is kept.
fn remove_stale(base: &Path, kind: Kind) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    for e in entries.flatten() {
        let Some((k, pid)) = e.file_name().to_str().and_then(parse_name) else {
            continue;
        };
        let mine = e.metadata().is_ok_and(|m| m.is_dir() && m.uid() == me);
        if k == kind && mine && !alive(pid) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Whether process `pid` exists and has not ended (a zombie has).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        // The state follows the command name, which is in parentheses and may hold any byte.
        s.rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_some_and(|state| !matches!(state, 'Z' | 'X'))
    })
}

/// `commperf __reap DIR`: the guard [`RunDir`] starts. Waits for its parent to close the pipe
/// (stdin), then, if DIR is still there (the parent was killed), waits up to [`REAP_WAIT`] for
/// the command the parent launched and removes DIR. Only a run directory's name is accepted.
pub fn reap(dir: &Path) -> Result<(), LaunchError> {
    use std::io::Read;
    if dir
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(parse_name)
        .is_none()
    {
        return Err(LaunchError::NotARunDir(dir.to_path_buf()));
    }
    let mut told = String::new();
    let _ = std::io::stdin().read_to_string(&mut told);
    if !dir.exists() {
        return Ok(());
    }
    if let Some(pid) = told
        .lines()
        .filter_map(|l| l.trim().parse::<u32>().ok())
        .next_back()
    {
        let until = Instant::now() + REAP_WAIT;
        while alive(pid) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let _ = std::fs::remove_dir_all(dir);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_read_back_by_kind_and_others_refused() {
        assert_eq!(
            parse_name("commperf-emulate-123-0"),
            Some((Kind::Emulate, 123))
        );
        assert_eq!(parse_name("commperf-ompi-77-12"), Some((Kind::Ompi, 77)));
        for n in [
            "commperf-emulate-calibrate-mpi",
            "commperf-emulate-123",
            "commperf-emulate-12x-0",
            "commperf-other-1-0",
            "vader_segment.vm.0.1",
            "commperf-ompi-1-",
            "commperf-ompi-shm-1-0",
        ] {
            assert_eq!(parse_name(n), None, "{n}");
        }
    }

    #[test]
    fn a_dead_owners_directory_of_the_kind_is_removed_and_the_rest_kept() {
        let base =
            std::env::temp_dir().join(format!("commperf-rundir-test-{}", std::process::id()));
        std::fs::create_dir_all(&base).unwrap();
        // pid 0 is never a process's; ours is alive.
        let dead = base.join("commperf-ompi-0-0");
        let live = base.join(format!("commperf-ompi-{}-0", std::process::id()));
        let other_kind = base.join("commperf-emulate-0-0");
        for d in [&dead, &live, &other_kind] {
            std::fs::create_dir_all(d).unwrap();
            std::fs::write(d.join("vader_segment.x"), b"x").unwrap();
        }
        remove_stale(&base, Kind::Ompi);
        assert!(!dead.exists());
        assert!(live.exists() && other_kind.exists());
        std::fs::remove_dir_all(&base).unwrap();
    }
}
