//! Progress of a long run on stderr. On a terminal, an indicatif bar; elsewhere (a log file, a
//! CI job, `2>&1 | tee`), one line per finished benchmark, which a log keeps and a bar's
//! carriage returns would garble. Both only once a run has taken about two seconds: a short run
//! stays quiet, so its stderr holds nothing but warnings and errors.

use commperf_bench::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// How long a run is quiet before it reports progress.
const QUIET: Duration = Duration::from_secs(2);

#[derive(Debug)]
pub struct RunProgress {
    start: Instant,
    /// When the last benchmark finished (or the run started).
    last: Instant,
    quiet: Duration,
    tty: bool,
    bar: Option<ProgressBar>,
}

impl RunProgress {
    pub fn new() -> Self {
        // A user's setting, read once (docs/src/reference/environment.md): `0` reports from
        // the start (a CI log that must show every run; the tests, whose runs take less than
        // two seconds), a large value keeps a long run quiet. The environment, not an option:
        // it is set once for every command of a job or a wrapper script.
        let quiet = std::env::var("COMMPERF_PROGRESS_AFTER_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map_or(QUIET, Duration::from_millis);
        let now = Instant::now();
        RunProgress {
            start: now,
            last: now,
            quiet,
            tty: std::io::stderr().is_terminal(),
            bar: None,
        }
    }

    fn quiet(&self) -> bool {
        self.start.elapsed() < self.quiet
    }
}

impl Progress for RunProgress {
    fn update(&mut self, label: &str, done: usize, total: usize) {
        if !self.tty || self.quiet() {
            return;
        }
        let bar = self.bar.get_or_insert_with(|| {
            let b = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
            if let Ok(style) =
                ProgressStyle::with_template("[{bar:30}] {pos}/{len} {wide_msg} {elapsed}")
            {
                b.set_style(style.progress_chars("#>-"));
            }
            b
        });
        bar.set_length(total as u64);
        bar.set_position(done as u64);
        bar.set_message(label.to_string());
    }

    fn finished(&mut self, what: &str, done: usize, total: usize) {
        let took = self.last.elapsed();
        self.last = Instant::now();
        if self.tty || self.quiet() {
            return;
        }
        crate::say(&finished_line(what, took, done, total));
    }

    fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }

    fn note(&mut self, line: &str) {
        // Above the bar, which redraws below it.
        match &self.bar {
            Some(bar) => bar.suspend(|| crate::say(&format!("commperf: {line}"))),
            None => crate::say(&format!("commperf: {line}")),
        }
    }

    fn stop_requested(&self) -> bool {
        commperf_launch::interrupt::requested()
    }
}

impl Drop for RunProgress {
    /// A run that failed never called `finish`: its error line must not land on the bar's.
    fn drop(&mut self) {
        self.finish();
    }
}

/// `commperf: [3/12] latency over shm (poll) finished in 4.2 s, 9 to go`.
fn finished_line(what: &str, took: Duration, done: usize, total: usize) -> String {
    format!(
        "commperf: [{done}/{total}] {what} finished in {:.1} s, {} to go",
        took.as_secs_f64(),
        total.saturating_sub(done)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finished_line_says_what_how_long_and_how_many_remain() {
        assert_eq!(
            finished_line(
                "latency over shm (poll)",
                Duration::from_millis(4249),
                3,
                12
            ),
            "commperf: [3/12] latency over shm (poll) finished in 4.2 s, 9 to go"
        );
        assert_eq!(
            finished_line("cq over mpi", Duration::from_millis(50), 10, 10),
            "commperf: [10/10] cq over mpi finished in 0.1 s, 0 to go"
        );
    }
}
