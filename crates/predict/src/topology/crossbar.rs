//! One crossbar switch: host i's cable is links `2i` (up, host → switch) and `2i+1` (down).

use super::{Link, Network, TopologyError};

/// The link table is built on first use: the LogGP model never asks for it, and for a million
/// hosts it would be hundreds of megabytes of names.
#[derive(Debug, Clone)]
pub struct Crossbar {
    hosts: u32,
    links: std::sync::OnceLock<Vec<Link>>,
}

impl Crossbar {
    pub fn new(hosts: u32) -> Self {
        Crossbar {
            hosts,
            links: std::sync::OnceLock::new(),
        }
    }

    fn build_links(hosts: u32) -> Vec<Link> {
        let mut links = Vec::with_capacity(2 * hosts as usize);
        for h in 0..hosts {
            links.push(Link {
                from: format!("h{h}"),
                to: "s0".into(),
                class: "host".into(),
            });
            links.push(Link {
                from: "s0".into(),
                to: format!("h{h}"),
                class: "host".into(),
            });
        }
        links
    }
}

impl Network for Crossbar {
    fn describe(&self) -> String {
        format!(
            "crossbar ({} hosts, {} links)",
            self.hosts,
            2 * self.hosts as u64
        )
    }
    fn hosts(&self) -> u32 {
        self.hosts
    }
    fn links(&self) -> &[Link] {
        self.links.get_or_init(|| Crossbar::build_links(self.hosts))
    }
    fn route(&self, src: u32, dst: u32, out: &mut Vec<u32>) -> Result<(), TopologyError> {
        if src != dst {
            out.push(2 * src);
            out.push(2 * dst + 1);
        }
        Ok(())
    }
}
