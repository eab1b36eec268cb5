//! Ctrl-C during a long measurement. The first interrupt asks the run to stop at the next
//! boundary between measurements (a measurement cut in half would be a wrong number) and to
//! print and save what finished, marked partial; a second one ends the process at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
static TOLD: AtomicBool = AtomicBool::new(false);

/// The exit status of a run that an interrupt cut short (128 + SIGINT, as a shell reports it),
/// after what finished was saved.
pub const EXIT_INTERRUPTED: u8 = 130;

/// Routes SIGINT and SIGTERM to the flag [`requested`] reads, for the rest of the process: the
/// first sets it, the next ends the process (exit 130).
pub fn install() {
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            // In this order: the shutdown sees the flag still clear on the first signal.
            let _ = signal_hook::flag::register_conditional_shutdown(
                sig,
                i32::from(EXIT_INTERRUPTED),
                Arc::clone(&flag),
            );
            let _ = signal_hook::flag::register(sig, Arc::clone(&flag));
        }
        flag
    });
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

/// `Err(Interrupted)` when the run was cut short (`partial`), after its results were saved.
pub fn check_partial(partial: bool, finished: usize, unit: &'static str) -> anyhow::Result<()> {
    if partial {
        return Err(Interrupted { finished, unit }.into());
    }
    Ok(())
}
