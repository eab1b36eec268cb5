//! Ctrl-C during a long measurement. The first interrupt asks the run to stop at the next
//! boundary between measurements (a measurement cut in half would be a wrong number) and to
//! print and save what finished, marked partial; a second one ends the process at once.

use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, OnceLock};

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
static TOLD: AtomicBool = AtomicBool::new(false);

/// The child run in hand (0: none), which an interrupt is passed on to: a child in its own
/// process group is out of the terminal's reach, and would otherwise run on, with its mpirun
/// and ranks, after this process ended. The signal goes to the child alone, not its group:
/// the child passes it on to its mpirun once (Open MPI's mpirun takes a second SIGINT as
/// "terminate at once", leaving ranks and shared memory behind).
static CHILD: AtomicI32 = AtomicI32::new(0);

/// The exit status of a run that an interrupt cut short (128 + SIGINT, as a shell reports it),
/// after what finished was saved.
pub const EXIT_INTERRUPTED: u8 = 130;

/// Routes SIGINT and SIGTERM to the flag [`requested`] reads, for the rest of the process: the
/// first sets it and passes the signal on to the child run in hand ([`Child`]), which stops
/// and cleans up; the next kills that child (whose own children get SIGTERM from their
/// parent-death signal, [`die_with_parent`]) and ends the process (exit 130).
pub fn install() {
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            let f = Arc::clone(&flag);
            let action = move || {
                let child = CHILD.load(Ordering::Relaxed);
                if f.swap(true, Ordering::Relaxed) {
                    if child > 0 {
                        // SAFETY: kill(2) is async-signal-safe; the pid is our own child's.
                        unsafe { libc::kill(child, libc::SIGKILL) };
                    }
                    signal_hook::low_level::exit(i32::from(EXIT_INTERRUPTED));
                }
                if child > 0 {
                    // SAFETY: as above.
                    unsafe { libc::kill(child, sig) };
                }
            };
            // SAFETY: the action only reads and swaps atomics and calls kill(2) and _exit(2),
            // all async-signal-safe; it allocates nothing and takes no lock.
            let _ = unsafe { signal_hook::low_level::register(sig, action) };
        }
        flag
    });
}

/// While alive, an interrupt is passed on to the child `pid` (not yet reaped), and a second
/// one kills it before this process exits.
#[derive(Debug)]
pub struct Child(());

impl Child {
    pub fn of(pid: u32) -> Child {
        CHILD.store(pid as i32, Ordering::Relaxed);
        // An interrupt that came before the child existed is its too.
        if FLAG.get().is_some_and(|f| f.load(Ordering::Relaxed)) {
            // SAFETY: kill(2) on our own child; no memory is involved.
            unsafe { libc::kill(pid as i32, libc::SIGINT) };
        }
        Child(())
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        CHILD.store(0, Ordering::Relaxed);
    }
}

/// Makes the child `cmd` starts die with this process: the kernel sends it SIGTERM when we
/// die, even by SIGKILL (PR_SET_PDEATHSIG). SIGTERM, not SIGKILL, so that the child cleans up
/// as it does for any SIGTERM: mpirun stops its ranks and removes its session files,
/// `commperf emulate` passes it on to its command and removes its run directory. The signal
/// is tied to the thread that spawns: every launch is spawned from the thread that waits for
/// it, which lives as long as the launch.
pub fn die_with_parent(cmd: &mut Command) -> &mut Command {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the forked child before exec and calls only prctl, getppid
    // and raise, which are async-signal-safe; it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent died between the fork and the prctl: no signal will come.
            if libc::getppid() != parent {
                libc::raise(libc::SIGTERM);
            }
            Ok(())
        })
    }
}

/// Whether an interrupt arrived since [`install`]; the first time it is seen, says on stderr
/// what happens now.
pub fn requested() -> bool {
    let set = FLAG.get().is_some_and(|f| f.load(Ordering::Relaxed));
    if set && !TOLD.swap(true, Ordering::Relaxed) {
        crate::say(
            "commperf: interrupted: stopping after the current measurement and saving what \
             finished (interrupt again to quit at once)",
        );
    }
    set
}

/// In a peer process: an interrupt typed at the terminal reaches the whole process group, and
/// the peer must finish the measurement in hand so that the client can end the session and
/// save its results (the peer dies with the client in any case: PR_SET_PDEATHSIG).
pub fn ignore_in_peer() {
    // SAFETY: setting SIGINT's disposition to SIG_IGN installs no handler code.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
    }
}

/// The end of a run an interrupt cut short, after its results were printed and saved: `main`
/// says it and exits [`EXIT_INTERRUPTED`].
#[derive(Debug)]
pub struct Interrupted {
    /// How many of the run's units finished and were kept.
    pub finished: usize,
    /// The unit, singular: "result row" (bench), "run" (emulate sweep).
    pub unit: &'static str,
}

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "interrupted: the {} {}{} that finished {} printed and saved, marked partial",
            self.finished,
            self.unit,
            if self.finished == 1 { "" } else { "s" },
            if self.finished == 1 { "was" } else { "were" }
        )
    }
}

impl std::error::Error for Interrupted {}

impl Interrupted {
    /// `Err(Interrupted)` when the run was cut short (`partial`), after its results were saved.
    pub fn check(partial: bool, finished: usize, unit: &'static str) -> Result<(), Interrupted> {
        if partial {
            return Err(Interrupted { finished, unit });
        }
        Ok(())
    }
}
