//! Sensitivity curves for `commperf app --sweep L=0,5,20us`: Martin's (1999) study (which LogGP
//! parameter does each program's run time depend on?) run per program on one stack of the
//! study, so that the page of the study shows them beside the program's profile and its times
//! on the real stacks.
//!
//! Each program's sweep is `commperf emulate sweep` itself, run as a child process (this
//! binary) on the program's launch on that stack: the same settings, interleaving, medians,
//! noise band and per-run isolation as the verb, and its result (`SweepResult`, the verb's one
//! serde struct) kept whole in the study. A sweep that fails is reported for its program and
//! the study goes on.

use anyhow::{bail, Context, Result};
use commperf_emulate::sweep::SweepResult;
use commperf_emulate::Knob;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// One program's sensitivity study.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Sensitivity {
    pub program: String,
    /// The stack it was swept on.
    pub stack: String,
    /// Why there is no sweep (the program failed there, the sweep failed).
    pub error: Option<String>,
    /// `commperf emulate sweep`'s result, as its `--format json` writes it.
    pub sweep: Option<SweepResult>,
}

/// `--sweep`'s knobs as `emulate sweep --knob` arguments.
pub fn knob_args(knobs: &[(Knob, Vec<f64>)]) -> Vec<String> {
    knobs
        .iter()
        .flat_map(|(k, vals)| {
            // ns for o, g and L, ns per byte for G: the knob parser's default units.
            let v: Vec<String> = vals.iter().map(|x| format!("{x}")).collect();
            let unit = if *k == Knob::UpperG { "" } else { "ns" };
            ["--knob".to_string(), format!("{k}={}{unit}", v.join(","))]
        })
        .collect()
}

/// Sweeps `command` (a program's launch) with `knobs`, `repeat` rounds, its runs' logs and
/// sweep.json in `dir`.
pub fn sweep(
    command: &[String],
    knobs: &[(Knob, Vec<f64>)],
    repeat: u32,
    timeout: Duration,
    dir: &Path,
) -> Result<SweepResult> {
    let exe = std::env::current_exe().context("locate the commperf binary")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let log = dir.join("sweep.log");
    let err =
        std::fs::File::create(&log).with_context(|| format!("cannot create {}", log.display()))?;
    let json = dir.join("sweep.json");
    let mut cmd = Command::new(exe);
    // Launched from this thread, which waits for it: the sweep (and its runs) die with us.
    let o = commperf_launch::interrupt::die_with_parent(&mut cmd)
        .args(["emulate", "sweep"])
        .args(knob_args(knobs))
        .args(["--repeat", &repeat.to_string()])
        .args(["--timeout", &timeout.as_secs().to_string()])
        .arg("--dir")
        .arg(dir)
        .arg("-o")
        .arg(&json)
        .arg("--")
        .args(command)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err)
        .status()
        .context("cannot run commperf emulate sweep")?;
    let text = std::fs::read_to_string(&json).ok();
    let r = text.as_deref().map(serde_json::from_str::<SweepResult>);
    match r {
        Some(Ok(r)) => Ok(r),
        _ => {
            let why = crate::app::last_lines(&std::fs::read(&log).unwrap_or_default(), 1);
            bail!(
                "emulate sweep exited with {o}: {why} (log {})",
                log.display()
            )
        }
    }
}

/// The table's lines: per program the knob it is most sensitive to and each knob's largest
/// slowdown.
pub fn render(out: &mut String, all: &[Sensitivity]) {
    use std::fmt::Write;
    let Some(first) = all.first() else { return };
    let _ = writeln!(
        out,
        "\n# sensitivity (emulate sweep on {}): largest slowdown per knob over the values tested",
        first.stack
    );
    for s in all {
        match (&s.sweep, &s.error) {
            (Some(r), _) => {
                let knobs: Vec<String> = r
                    .knobs
                    .iter()
                    .map(|k| {
                        let top = k.points.iter().map(|p| p.0).fold(0.0f64, f64::max);
                        format!(
                            "{} (to {top} {}) {}",
                            k.knob,
                            k.unit,
                            k.max_slowdown
                                .map_or("-".into(), |x| format!("{:+.1} %", 100.0 * x))
                        )
                    })
                    .collect();
                let _ = writeln!(
                    out,
                    "{:<12} most sensitive to {}; {}; noise band ±{}",
                    s.program,
                    r.most_sensitive
                        .as_deref()
                        .unwrap_or("none beyond the noise band"),
                    knobs.join(", "),
                    r.baseline_spread
                        .map_or("-".into(), |x| format!("{:.1} %", 100.0 * x))
                );
            }
            (None, e) => {
                let _ = writeln!(
                    out,
                    "{:<12} FAILED: {}",
                    s.program,
                    e.as_deref().unwrap_or("no result")
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knobs_become_the_verbs_arguments_in_its_units() {
        let a = knob_args(&[
            (Knob::L, vec![0.0, 5000.0, 20000.0]),
            (Knob::UpperG, vec![0.0, 0.5]),
        ]);
        assert_eq!(a, ["--knob", "L=0,5000,20000ns", "--knob", "G=0,0.5"]);
        // And the verb's parser reads them back as the same values.
        let (k, v) = commperf_emulate::parse_knob_list("L=0,5000,20000ns").unwrap();
        assert_eq!((k, v), (Knob::L, vec![0.0, 5000.0, 20000.0]));
        let (k, v) = commperf_emulate::parse_knob_list("G=0,0.5").unwrap();
        assert_eq!((k, v), (Knob::UpperG, vec![0.0, 0.5]));
    }
}
