//! A sweep's predictions: the monitored run's trace replayed by `commperf_predict` with each
//! knob raised, in LogGP mode (the knob added to its parameter) and in contention mode (the
//! knob shifting Tcom), each setting's predicted slowdown beside its measured one.

use super::emulated::{PredictOptions, SweepRunError};
use super::loggp::{measure_loggp, WantedState};
use super::SweepResult;
use crate::state::MachineProbe;
use crate::Knob;
use commperf_model::loggp::LogGp;
use commperf_model::tcom::Tcom;
use commperf_predict::engine::{self, Inputs, LoggpReceive, Model, PredictConfig, SelfOverheads};
use commperf_predict::parse::{self, ParseOptions};
use commperf_predict::topology::{self, RankMap, TopologySpec};
use commperf_predict::workload::Workload;
use std::path::Path;
use std::time::Duration;

/// The knobs' deltas on LogGP parameters: o on both sides, g, G and L as they are.
pub(crate) fn raised(base: LogGp, knob: Knob, v: f64) -> LogGp {
    let mut p = base;
    match knob {
        Knob::O => {
            p.o_s_ns += v;
            p.o_r_ns += v;
        }
        Knob::LowerG => p.g_ns += v,
        Knob::UpperG => p.G_ns_per_byte += v,
        Knob::L => p.L_ns += v,
    }
    p
}

/// The size of each point-to-point send of `w` (collectives expanded).
fn send_sizes(w: &Workload) -> impl Iterator<Item = u64> + '_ {
    w.ops()
        .iter()
        .filter_map(|op| op.send_parts().map(|(_, _, bytes, _)| bytes))
}

/// The median message size of a workload's sends (collectives expanded), by count, bytes;
/// `None` when it sends none.
pub fn median_send_bytes(w: &Workload) -> Option<u64> {
    let mut sizes: Vec<u64> = send_sizes(w).collect();
    if sizes.is_empty() {
        return None;
    }
    let mid = sizes.len() / 2;
    Some(*sizes.select_nth_unstable(mid).1)
}

/// The share of `w`'s point-to-point bytes (%) in messages larger than `size`; None without
/// any.
pub fn send_bytes_above_percent(w: &Workload, size: u64) -> Option<f64> {
    let (mut all, mut above) = (0u128, 0u128);
    for bytes in send_sizes(w) {
        all += u128::from(bytes);
        if bytes > size {
            above += u128::from(bytes);
        }
    }
    (all > 0).then(|| 100.0 * above as f64 / all as f64)
}

/// Where the replay's inputs come from, and how LogGP is measured when it must be.
pub(crate) struct Replay<'a> {
    /// The monitored run's trace.
    pub(crate) trace: &'a Path,
    /// The commperf executable (`exe bench loggp`).
    pub(crate) exe: &'a Path,
    /// The sweep's directory (the LogGP runs' files).
    pub(crate) dir: &'a Path,
    pub(crate) timeout: Duration,
    /// The sweep's own machine probe, which holds the LogGP runs to the state the sweep's runs
    /// were compared in.
    pub(crate) probe: Option<&'a MachineProbe>,
}

/// The trace as a workload. A trace with dropped events is not the program: the replay would
/// pair the wrong sends and receives (or deadlock). Refused by name rather than predicted from.
fn read_trace(trace: &Path) -> Result<(Workload, parse::TraceFormat), SweepRunError> {
    let stats_path = trace.with_file_name("trace-stats.json");
    if let Ok(text) = std::fs::read_to_string(&stats_path) {
        let v: serde_json::Value =
            serde_json::from_str(&text).map_err(|source| SweepRunError::StatsJson {
                path: stats_path.clone(),
                source,
            })?;
        let drops = v["drops"].as_u64().unwrap_or(0);
        if drops > 0 {
            return Err(SweepRunError::Dropped {
                drops,
                trace: trace.to_path_buf(),
            });
        }
    }
    parse::read_trace_as(trace, None, &ParseOptions::default()).map_err(|source| {
        SweepRunError::Trace {
            path: trace.to_path_buf(),
            source,
        }
    })
}

/// The LogGP parameters the knobs add to and the contention model's Tcom: given, from the
/// profile, or (neither given) measured now, its notes added to `result`.
fn base_parameters(
    result: &mut SweepResult,
    p: &PredictOptions,
    workload: &Workload,
    how: &Replay<'_>,
) -> Result<(LogGp, Tcom), SweepRunError> {
    let profile = p
        .profile
        .as_deref()
        .map(commperf_predict::values::read_profile)
        .transpose()?;
    let from_profile = |prof| Tcom::from_profile(prof).map_err(SweepRunError::Tcom);
    Ok(match (p.loggp, &profile) {
        (Some(l), Some(prof)) => (l, from_profile(prof)?),
        // No profile: the contention model's Tcom from the LogGP (a lone message costs
        // o_s + L + o_r + G·s end to end).
        (Some(l), None) => (l, Tcom::from_loggp(&l)),
        (None, Some(prof)) => {
            let tcom = from_profile(prof)?;
            (LogGp::from_profile(Some(prof), &tcom), tcom)
        }
        (None, None) => {
            let l = measured_loggp(result, workload, how)?;
            (l, Tcom::from_loggp(&l))
        }
    })
}

/// LogGP measured now for the trace's median message. The parameters should describe the
/// machine in the state the runs were compared in: when most settings compared runs in one
/// state, LogGP runs in another are measured again.
fn measured_loggp(
    result: &mut SweepResult,
    workload: &Workload,
    how: &Replay<'_>,
) -> Result<LogGp, SweepRunError> {
    let size = median_send_bytes(workload).unwrap_or(8);
    let knobs: Vec<_> = result
        .settings
        .iter()
        .filter(|s| s.knob.is_some())
        .collect();
    let insist = 2 * knobs.iter().filter(|s| s.compared_same_state).count() > knobs.len();
    let state = how
        .probe
        .zip(result.probe_reference_ns)
        .map(|(probe, reference_ns)| WantedState {
            probe,
            reference_ns,
            insist,
        });
    let (l, notes) = measure_loggp(how.exe, how.dir, size, how.timeout, state)?;
    result.notes.extend(notes);
    Ok(l)
}

/// Predicts each knob's slowdown from the monitored run's trace (`how`) and adds both models'
/// predictions, and a note saying how, to `result`.
pub(crate) fn add_predictions(
    result: &mut SweepResult,
    p: &PredictOptions,
    how: &Replay<'_>,
) -> Result<(), SweepRunError> {
    let (workload, fmt) = read_trace(how.trace)?;
    let (base, tcom) = base_parameters(result, p, &workload, how)?;
    let net = topology::build(&TopologySpec::Crossbar, workload.nranks(), 1)?;
    let map = RankMap::identity(workload.nranks(), &*net)?;
    let trace_name = how.trace.display().to_string();
    let fmt_name = fmt.to_string();
    let predict_ns = |model: Model, loggp: &LogGp, tcom: &Tcom| -> Result<f64, String> {
        // The knobs leave a message to oneself alone (it never leaves the library): it costs
        // the unknobbed overheads in every setting. And the g knob paces a rank's sends, not its
        // receives: no receive gap (the preset's).
        let cfg = PredictConfig {
            model,
            loggp_receive: p.loggp_receive,
            ..PredictConfig::one_node_mpi(p.eager, SelfOverheads::of(&base))
        };
        let inputs = Inputs {
            workload: &workload,
            network: &*net,
            rank_map: &map,
            tcom,
            loggp: Some(loggp),
            trace_name: &trace_name,
            trace_format: &fmt_name,
            profile_name: "sweep",
        };
        engine::predict(&inputs, &cfg)
            .map(|o| o.prediction.total_us * 1e3)
            .map_err(|e| e.to_string())
    };
    let base_loggp = predict_ns(Model::LogGp, &base, &tcom).map_err(SweepRunError::Predict)?;
    result.add_prediction("loggp", |k, v| {
        predict_ns(Model::LogGp, &raised(base, k, v), &tcom).map(|t| (t - base_loggp) * 1e-9)
    });
    let base_cont = predict_ns(Model::Contention, &base, &tcom).map_err(SweepRunError::Predict)?;
    result.add_prediction("contention", |k, v| {
        // Papaefstathiou's (2001) model has a message's end-to-end cost and the links, no separate
        // overhead or gap: L and 2·o shift Tcom, G raises its slope; g has no place in it.
        let t = match k {
            Knob::L => tcom.shifted(v, 0.0),
            Knob::O => tcom.shifted(2.0 * v, 0.0),
            Knob::UpperG => tcom.shifted(0.0, v),
            Knob::LowerG => {
                return Err("the contention model has no gap: g is not predicted".into())
            }
        };
        predict_ns(Model::Contention, &base, &t).map(|t| (t - base_cont) * 1e-9)
    });
    result
        .notes
        .push(replay_note(how.trace, &base, p.loggp_receive));
    Ok(())
}

/// The note saying what the predictions replayed, with which parameters and receive rule.
fn replay_note(trace: &Path, base: &LogGp, receive: LoggpReceive) -> String {
    format!(
        "predictions replay {} (one monitored run, knobs at zero) with LogGP L={:.1} o_s={:.1} o_r={:.1} g={:.1} ns G={:.4} O={:.4} ns/B plus each knob; LogGP mode {}",
        trace.display(),
        base.L_ns,
        base.o_s_ns,
        base.o_r_ns,
        base.g_ns,
        base.G_ns_per_byte,
        base.O_ns_per_byte,
        match receive {
            LoggpReceive::LastByte =>
                "with LogGP's own receive (last byte: the receiving CPU is free while the bytes travel, as the emulator slows G; --loggp-receive first-byte for LogGOPSim's)",
            LoggpReceive::FirstByte =>
                "with LogGOPSim's receive (first byte: the receive holds the CPU while the bytes come in)",
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raised_adds_each_knob_to_its_own_parameter() {
        let b = LogGp {
            L_ns: 1.0,
            o_s_ns: 2.0,
            o_r_ns: 3.0,
            g_ns: 4.0,
            G_ns_per_byte: 0.5,
            O_ns_per_byte: 0.0,
        };
        let o = raised(b, Knob::O, 10.0);
        assert_eq!((o.o_s_ns, o.o_r_ns, o.L_ns, o.g_ns), (12.0, 13.0, 1.0, 4.0));
        assert_eq!(raised(b, Knob::UpperG, 0.25).G_ns_per_byte, 0.75);
        assert_eq!(raised(b, Knob::L, 7.0).L_ns, 8.0);
        assert_eq!(raised(b, Knob::LowerG, 7.0).g_ns, 11.0);
    }
}
