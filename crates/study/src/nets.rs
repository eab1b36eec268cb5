//! The clusters under the network stacks of `commperf app` (`ompi-tcp@100mbit`): the stacks
//! themselves, their names and launches are [`crate::stack`]'s; a stack's launch names
//! its cluster by this process's `cpt<pid>-` and the stack's letter before the cluster exists,
//! and [`Nets`] builds (and on drop removes) the clusters under those names.

use crate::stack::Stack;
use commperf_testbed::netns::{Cluster, ClusterSpec, Shaper};

/// The clusters of a study's network stacks, removed when dropped.
#[derive(Debug)]
pub struct Nets {
    built: Vec<(char, Result<Cluster, String>)>,
}

impl Nets {
    /// Builds a cluster of `max(np, 2)` hosts for every network stack (the micro-benchmarks
    /// use two ranks). A cluster that cannot be built is remembered with why, for its cells.
    pub fn build(stacks: &[Stack], np: u32) -> Nets {
        let mut built = Vec::new();
        for s in stacks {
            let Some(n) = s.net else { continue };
            let spec = ClusterSpec {
                hosts: np.max(2),
                rate_bit_per_s: n.rate_bit_per_s,
                // `commperf testbed`'s defaults, measured there to share links as the model
                // does: fair HTB classes per peer, offloads on, GSO packets capped at 16 KiB.
                shaper: Shaper::HtbFair,
                offloads_off: false,
                gso_max_bytes: Some(16 * 1024),
            };
            let c = Cluster::build_tagged(&spec, n.tag).map_err(|e| e.to_string());
            built.push((n.tag, c));
        }
        Nets { built }
    }

    /// Why the stack cannot run (its cluster failed), if it cannot.
    pub fn check(&self, s: Stack) -> Result<(), String> {
        let Some(n) = s.net else { return Ok(()) };
        match self.built.iter().find(|(t, _)| *t == n.tag) {
            Some((_, Ok(_))) => Ok(()),
            Some((_, Err(e))) => Err(format!("cannot build the network of {}: {e}", s.name())),
            None => Err(format!("the network of {} was not built", s.name())),
        }
    }

    /// Notes worth showing (e.g. offloads left on), one per cluster.
    pub fn notes(&self) -> Vec<String> {
        self.built
            .iter()
            .filter_map(|(_, c)| c.as_ref().ok())
            .flat_map(|c| c.notes.iter().map(move |n| format!("{}: {n}", c.prefix)))
            .collect()
    }
}
