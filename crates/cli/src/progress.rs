//! A one-line progress display on stderr: only on a terminal, and only once a run has taken
//! more than about two seconds (short runs stay quiet, pipes and CI logs stay clean).

use commperf_bench::Progress;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct TtyProgress {
    start: Instant,
    tty: bool,
    shown: bool,
}

impl TtyProgress {
    pub fn new() -> Self {
        TtyProgress {
            start: Instant::now(),
            tty: std::io::stderr().is_terminal(),
            shown: false,
        }
    }
}

impl Progress for TtyProgress {
    fn update(&mut self, label: &str, done: usize, total: usize) {
        if !self.tty || self.start.elapsed() < Duration::from_secs(2) {
            return;
        }
        let width = 30;
        let filled = (done * width).checked_div(total).unwrap_or(0).min(width);
        let mut e = std::io::stderr().lock();
        let _ = write!(
            e,
            "\r\x1b[K[{}{}] {done}/{total} {label}",
            "#".repeat(filled),
            "-".repeat(width - filled)
        );
        let _ = e.flush();
        self.shown = true;
    }

    fn finish(&mut self) {
        if self.shown {
            let _ = write!(std::io::stderr(), "\r\x1b[K");
            self.shown = false;
        }
    }
}
