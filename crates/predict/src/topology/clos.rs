//! Papaefstathiou's (2001) two-level network of small switches (its Listing One, the Myrinet
//! example).
//!
//! `hosts` hosts sit in groups of `group` on first-level switches `sw1_0 … sw1_{F-1}` (F =
//! hosts / group); there are `group` second-level switches `sw2_0 … sw2_{group-1}` and one
//! cable between every first-level and every second-level switch. As in the listing's
//! `S1toS2[i] = rand() % LperG`, each *host* gets one static, seeded choice of second-level
//! switch at build time; a message leaving the group always climbs through its source host's
//! choice: `h_s → sw1_{g(s)} → sw2_{c(s)} → sw1_{g(d)} → h_d`. Within a group it is
//! `h_s → sw1_g → h_d`. The choice is static (not per message) because that is what
//! Papaefstathiou (2001) models: contention depends on which hosts happen to share a second-level switch.
//!
//! Link layout (every cable is two directed links, up first): host `i` is links `2i` (up,
//! class `host`) and `2i+1` (down); the cable between `sw1_f` and `sw2_s` is links
//! `2·hosts + 2(f·group + s)` (up, class `switch`) and `+1` (down).

use super::{Link, Network, TopologyError};
use crate::rng::Rng;

/// Papaefstathiou's (2001) two-level Clos network with static seeded uplink choices.
#[derive(Debug, Clone)]
pub struct Clos {
    hosts: u32,
    group: u32,
    seed: u64,
    /// Second-level switch chosen by each host for traffic leaving its group.
    choice: Vec<u32>,
    links: Vec<Link>,
}

impl Clos {
    /// `hosts` must be a positive multiple of `group` (checked: an error otherwise).
    pub fn new(hosts: u32, group: u32, seed: u64) -> Result<Self, TopologyError> {
        if group == 0 || hosts == 0 || hosts % group != 0 {
            return Err(TopologyError::Spec {
                spec: format!("clos:hosts={hosts},group={group}"),
                why: "hosts must be a positive multiple of group".into(),
            });
        }
        super::check_size(
            &format!("clos:hosts={hosts},group={group}"),
            4 * hosts as u64,
        )?;
        let firsts = hosts / group;
        let mut rng = Rng::new(seed);
        let choice = (0..hosts).map(|_| rng.below(group as u64) as u32).collect();
        let mut links = Vec::with_capacity(4 * hosts as usize);
        for h in 0..hosts {
            let sw = format!("sw1_{}", h / group);
            links.push(Link {
                from: format!("h{h}"),
                to: sw.clone(),
                class: "host".into(),
            });
            links.push(Link {
                from: sw,
                to: format!("h{h}"),
                class: "host".into(),
            });
        }
        for f in 0..firsts {
            for s in 0..group {
                links.push(Link {
                    from: format!("sw1_{f}"),
                    to: format!("sw2_{s}"),
                    class: "switch".into(),
                });
                links.push(Link {
                    from: format!("sw2_{s}"),
                    to: format!("sw1_{f}"),
                    class: "switch".into(),
                });
            }
        }
        Ok(Clos {
            hosts,
            group,
            seed,
            choice,
            links,
        })
    }

    /// The second-level switch host `h` climbs to when leaving its group.
    pub fn uplink_choice(&self, h: u32) -> Option<u32> {
        self.choice.get(h as usize).copied()
    }

    fn uplink(&self, first: u32, second: u32) -> u32 {
        2 * self.hosts + 2 * (first * self.group + second)
    }
}

impl Network for Clos {
    fn describe(&self) -> String {
        format!(
            "two-level Clos (after Papaefstathiou 2001): {} hosts in groups of {} on {} first-level and {} second-level switches, uplinks chosen per host with seed {} ({} links)",
            self.hosts,
            self.group,
            self.hosts / self.group,
            self.group,
            self.seed,
            self.links.len()
        )
    }
    fn hosts(&self) -> u32 {
        self.hosts
    }
    fn links(&self) -> &[Link] {
        &self.links
    }
    fn route(&self, src: u32, dst: u32, out: &mut Vec<u32>) -> Result<(), TopologyError> {
        if src >= self.hosts || dst >= self.hosts {
            return Err(super::no_such_host(src, dst, self.hosts));
        }
        if src == dst {
            return Ok(());
        }
        out.push(2 * src);
        let (gs, gd) = (src / self.group, dst / self.group);
        if gs != gd {
            let s = self.choice[src as usize];
            out.push(self.uplink(gs, s));
            out.push(self.uplink(gd, s) + 1);
        }
        out.push(2 * dst + 1);
        Ok(())
    }
}
