//! The knobs' calibration at the MPI layer (`commperf emulate calibrate -t mpi`): each knob
//! alone, in the interposer, under `mpirun -np 2 commperf bench loggp -t mpi`, LogGP measured
//! with the same PRTT fit and judged like the transport calibration ([`judge_mpi`]) against
//! knobs-at-zero baselines taken before the first knob and after each knob.

use crate::mpi::{
    env_value, judge_mpi, run_emulated, Collectives, MpiCalibration, MpiParams, MpiRunError,
    RunOptions,
};
use crate::{Knob, Knobs};
use commperf_launch::say;
use std::ffi::OsString;
use std::path::Path;

/// The knobs calibrated when none are given.
pub const DEFAULT_KNOBS: [&str; 4] = ["o=1,2,5us", "g=1,2,5us", "G=0.5", "L=5,20us"];

/// A calibration at the MPI layer: `command` runs `bench loggp -t mpi` under mpirun
/// ([`bench_args`] are its arguments), writing its results to `json`.
#[derive(Debug, Clone)]
pub struct MpiCalibrateConfig<'a> {
    pub command: &'a [String],
    pub json: &'a Path,
    /// The PRTT fit's sizes, as `--sizes` gives them.
    pub sizes: &'a str,
    pub iterations: u64,
    /// Each knob and its values (zeros skipped); empty: [`DEFAULT_KNOBS`].
    pub knobs: &'a [(Knob, Vec<f64>)],
}

/// The arguments of `commperf bench loggp -t mpi` over `sizes`, `iterations` timed
/// repetitions each, its JSON results to `json`.
pub fn bench_args(sizes: &str, iterations: u64, json: &Path) -> Vec<OsString> {
    let iters = iterations.to_string();
    let json = json.display().to_string();
    [
        "bench", "loggp", "-t", "mpi", "--sizes", sizes, "--iters", &iters, "--format", "json",
        "-o", &json,
    ]
    .iter()
    .map(Into::into)
    .collect()
}

/// One `bench loggp` run under the knobs `k`: the parameters it fitted.
fn measure(c: &MpiCalibrateConfig<'_>, k: &Knobs) -> Result<MpiParams, MpiRunError> {
    let opts = RunOptions {
        interposer: None,
        // The bench tables go to stderr: the verb's stdout is its own table.
        program_stdout_to_stderr: true,
        monitor_dir: None,
        collectives: Collectives::P2p,
        // The whole apparatus at every setting, zero included, as in a sweep.
        engaged: true,
    };
    let _ = std::fs::remove_file(c.json);
    let r = run_emulated(k, c.command, &opts)?;
    if !r.success {
        return Err(MpiRunError::Bad(format!(
            "{} failed under {}",
            c.command.join(" "),
            env_value(k)
        )));
    }
    let text = std::fs::read_to_string(c.json).map_err(|source| MpiRunError::Io {
        what: format!("reading {}", c.json.display()),
        source,
    })?;
    MpiParams::from_bench_json(&text)
}

/// Calibrates each knob of `c` at the MPI layer.
pub fn calibrate(c: &MpiCalibrateConfig<'_>) -> Result<MpiCalibration, MpiRunError> {
    let max_size = commperf_core::units::parse_sizes(c.sizes)
        .ok()
        .and_then(|v| v.into_iter().max())
        .unwrap_or(16384) as f64;
    let knobs: Vec<(Knob, Vec<f64>)> = if c.knobs.is_empty() {
        DEFAULT_KNOBS
            .iter()
            .filter_map(|s| crate::parse_knob_list(s).ok())
            .collect()
    } else {
        c.knobs.to_vec()
    };
    let mut baselines = vec![measure(c, &Knobs::default())?];
    let mut rows = Vec::new();
    for (k, values) in &knobs {
        let mut got = Vec::new();
        for &v in values.iter().filter(|v| **v > 0.0) {
            say(&format!("commperf: calibrating {k} = {v}"));
            got.push((v, measure(c, &Knobs::only(*k, v))?));
        }
        baselines.push(measure(c, &Knobs::default())?);
        let n = baselines.len();
        let base = MpiParams::mean(&baselines[n - 2], &baselines[n - 1]);
        rows.extend(
            got.iter()
                .map(|(v, p)| judge_mpi(*k, *v, &base, p, max_size)),
        );
    }
    Ok(MpiCalibration {
        kind: "commperf-emulate-calibrate-mpi",
        command: c.command.join(" "),
        sizes: c.sizes.to_string(),
        iterations: c.iterations,
        baselines,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_args_ask_for_loggp_at_the_mpi_layer_in_json() {
        let a = bench_args("64,1k", 500, Path::new("/tmp/x/loggp.json"));
        let a: Vec<&str> = a.iter().map(|s| s.to_str().unwrap()).collect();
        assert_eq!(
            a,
            [
                "bench",
                "loggp",
                "-t",
                "mpi",
                "--sizes",
                "64,1k",
                "--iters",
                "500",
                "--format",
                "json",
                "-o",
                "/tmp/x/loggp.json"
            ]
        );
    }

    #[test]
    fn the_default_knobs_all_parse() {
        let k: Vec<_> = DEFAULT_KNOBS
            .iter()
            .map(|s| crate::parse_knob_list(s).unwrap())
            .collect();
        assert_eq!(k.len(), 4);
        assert_eq!(k[3], (Knob::L, vec![5000.0, 20000.0]));
    }
}
