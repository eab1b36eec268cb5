//! The prediction side: a [`Pattern`] as the engine's workload, and one call of the contention
//! engine on the testbed's topology (one crossbar switch, every host cable two directed links
//! of class `host`, ranks on hosts by identity).
//!
//! Each rank posts all its receives and sends as non-blocking operations, in that order, then
//! waits for all of them: what the rank processes do with a thread per connection. One
//! iteration is predicted and compared with the median measured iteration.

use crate::pattern::Pattern;
use commperf_core::Profile;
use commperf_model::tcom::{Tcom, TcomError};
use commperf_predict::engine::{predict, Inputs, PredictConfig, PredictError};
use commperf_predict::topology::{Crossbar, RankMap};
use commperf_predict::workload::{BuildError, OpKind, SeqProgram, Workload, WorkloadBuilder};

/// Tag of every message of a pattern (one stream per directed pair keeps them in order).
const TAG: u32 = 1;

/// Why a prediction could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TestbedPredictError {
    #[error("workload: {0}")]
    Build(#[from] BuildError),
    #[error("profile: {0}")]
    Tcom(#[from] TcomError),
    #[error("engine: {0}")]
    Engine(#[from] PredictError),
}

/// The pattern's one iteration as a workload.
pub fn workload(p: &Pattern) -> Result<Workload, BuildError> {
    let mut b = WorkloadBuilder::new(p.nranks());
    for (r, part) in p.ranks.iter().enumerate() {
        let mut prog = SeqProgram::new();
        let mut reqs = Vec::with_capacity(part.sends.len() + part.recvs.len());
        for m in &part.recvs {
            reqs.push(prog.nonblocking(OpKind::Recv {
                from: m.peer,
                tag: TAG,
                bytes: m.bytes,
            }));
        }
        for m in &part.sends {
            reqs.push(prog.nonblocking(OpKind::Send {
                to: m.peer,
                tag: TAG,
                bytes: m.bytes,
            }));
        }
        if !reqs.is_empty() {
            prog.wait(&reqs);
        }
        b.add_program(r as u32, &prog)?;
    }
    Ok(b.finish())
}

/// Predicts one iteration of `p` on the testbed, with Tcom from `profile`. Returns µs.
pub fn predict_pattern(p: &Pattern, profile: &Profile) -> Result<f64, TestbedPredictError> {
    let w = workload(p)?;
    let tcom = Tcom::from_profile(profile)?;
    let net = Crossbar::new(p.nranks());
    let map = RankMap((0..p.nranks()).collect());
    let name = format!("testbed {}", p.name);
    let inputs = Inputs {
        workload: &w,
        network: &net,
        rank_map: &map,
        tcom: &tcom,
        loggp: None,
        trace_name: &name,
        trace_format: "testbed",
        profile_name: &profile.source,
    };
    let out = predict(&inputs, &PredictConfig::default())?;
    Ok(out.prediction.total_us)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incast_workload_has_every_message() {
        let p = Pattern::incast(4, 1000).unwrap();
        let w = workload(&p).unwrap();
        assert_eq!(w.nranks(), 4);
        let (s, r, c) = w.counts();
        assert_eq!((s, r), (3, 3));
        // One wait per rank.
        assert_eq!(c, 4);
    }
}
