//! One crossbar switch: host i's cable is links `2i` (up, host → switch) and `2i+1` (down).

use super::{Link, Network, TopologyError};

#[derive(Debug, Clone)]
pub struct Crossbar {
    hosts: u32,
    links: Vec<Link>,
}

impl Crossbar {
    pub fn new(hosts: u32) -> Self {
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
        Crossbar { hosts, links }
    }
}

impl Network for Crossbar {
    fn describe(&self) -> String {
        format!(
            "crossbar ({} hosts, {} links)",
            self.hosts,
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
        if src != dst {
            out.push(2 * src);
            out.push(2 * dst + 1);
        }
        Ok(())
    }
}
