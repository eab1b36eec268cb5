//! Sensitivity curves for `commperf app --sweep L=0,5,20us`: Martin's (1999) study (which LogGP
//! parameter does each program's run time depend on?) run per program on one stack of the
//! study, so that the page of the study shows them beside the program's profile and its times
//! on the real stacks.
//!
//! Each program's sweep is `commperf emulate sweep` itself, run as a child process (the running
//! binary) on the program's launch on that stack: the same settings, interleaving, medians,
//! noise band and per-run isolation as the verb, and its result (`SweepResult`, the verb's one
//! serde struct) kept whole in the study. A sweep that fails is reported for its program and
//! the study goes on.

use crate::error::{Context, Result, StudyError};
use commperf_emulate::sweep::SweepResult;
use commperf_emulate::Knob;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

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
        _ => Err(StudyError::Sweep {
            status: o,
            why: crate::launch::last_lines(&std::fs::read(&log).unwrap_or_default(), 1),
            log: log.display().to_string(),
        }),
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
