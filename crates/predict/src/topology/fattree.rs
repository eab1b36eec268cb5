//! k-ary fat tree (Al-Fares et al. 2008) with deterministic destination-mod-k routing.
//!
//! `k` pods (k even), each with k/2 edge switches `e{p}.{i}` and k/2 aggregation switches
//! `a{p}.{j}`; (k/2)² core switches `c{j}.{m}`, where core `c{j}.{m}` is cabled to aggregation
//! switch `j` of every pod; k/2 hosts per edge switch, k³/4 hosts in all. Host `h` lives in pod
//! `h / (k/2)²` on edge switch `(h / (k/2)) % (k/2)` at port `h % (k/2)`.
//!
//! Routing is D-mod-k (Zahavi et al., "Optimized InfiniBand fat-tree routing for shift
//! all-to-all communication patterns", 2010): the up-going port at each level is picked from the
//! *destination* id only — at an edge switch aggregation switch `j = d % (k/2)`, at that
//! aggregation switch core `m = (d / (k/2)) % (k/2)`. So all routes towards one destination
//! form a tree (one core switch per destination, which spreads the destinations of a pod over
//! all (k/2)² cores) and a route is a few arithmetic steps with no allocation. Routes cross 2
//! links within an edge switch, 4 within a pod, 6 across pods.
//!
//! Link classes: `host` (host ↔ edge), `edge` (edge ↔ aggregation), `core` (aggregation ↔ core).
//! Layout, each cable as two directed links (up first): host `h` is `2h`/`2h+1`; the cable edge
//! `(p,i)` – aggregation `(p,j)` is `E + 2(p·H² + i·H + j)`; the cable aggregation `(p,j)` – core
//! `(j,m)` is `C + 2(p·H² + j·H + m)`, with H = k/2, E = 2·k³/4 and C = 4·k³/4.

use super::{Link, Network, TopologyError};

/// A k-ary fat tree with D-mod-k routing.
#[derive(Debug, Clone)]
pub struct FatTree {
    k: u32,
    links: Vec<Link>,
}

impl FatTree {
    /// `k` must be even and at least 2 (checked: an error otherwise).
    pub fn new(k: u32) -> Result<Self, TopologyError> {
        let spec = format!("fattree:k={k}");
        if k < 2 || k % 2 != 0 {
            return Err(TopologyError::Spec {
                spec,
                why: "k must be even and at least 2".into(),
            });
        }
        let h = k as u64 / 2;
        let hosts = k as u64 * h * h;
        super::check_size(&spec, 6 * hosts)?;
        let (h, hosts) = (h as u32, hosts as u32);
        let mut links = Vec::with_capacity(6 * hosts as usize);
        let cable = |links: &mut Vec<Link>, a: String, b: String, class: &str| {
            links.push(Link {
                from: a.clone(),
                to: b.clone(),
                class: class.into(),
            });
            links.push(Link {
                from: b,
                to: a,
                class: class.into(),
            });
        };
        for x in 0..hosts {
            let (p, i) = (x / (h * h), (x / h) % h);
            cable(&mut links, format!("h{x}"), format!("e{p}.{i}"), "host");
        }
        for p in 0..k {
            for i in 0..h {
                for j in 0..h {
                    cable(&mut links, format!("e{p}.{i}"), format!("a{p}.{j}"), "edge");
                }
            }
        }
        for p in 0..k {
            for j in 0..h {
                for m in 0..h {
                    cable(&mut links, format!("a{p}.{j}"), format!("c{j}.{m}"), "core");
                }
            }
        }
        Ok(FatTree { k, links })
    }

    fn half(&self) -> u32 {
        self.k / 2
    }
}

impl Network for FatTree {
    fn describe(&self) -> String {
        let h = self.half();
        format!(
            "fat tree k={} ({} hosts, {} pods of {} edge + {} aggregation switches, {} core switches, {} links, D-mod-k routing)",
            self.k,
            self.hosts(),
            self.k,
            h,
            h,
            h * h,
            self.links.len()
        )
    }
    fn hosts(&self) -> u32 {
        let h = self.half();
        self.k * h * h
    }
    fn links(&self) -> &[Link] {
        &self.links
    }
    fn route(&self, src: u32, dst: u32, out: &mut Vec<u32>) -> Result<(), TopologyError> {
        let n = self.hosts();
        if src >= n || dst >= n {
            return Err(super::no_such_host(src, dst, n));
        }
        if src == dst {
            return Ok(());
        }
        let h = self.half();
        let hh = h * h;
        let (edge_base, core_base) = (2 * n, 4 * n);
        let (ps, es) = (src / hh, (src / h) % h);
        let (pd, ed) = (dst / hh, (dst / h) % h);
        out.push(2 * src);
        if (ps, es) != (pd, ed) {
            let j = dst % h;
            out.push(edge_base + 2 * (ps * hh + es * h + j));
            if ps != pd {
                let m = (dst / h) % h;
                out.push(core_base + 2 * (ps * hh + j * h + m));
                out.push(core_base + 2 * (pd * hh + j * h + m) + 1);
            }
            out.push(edge_base + 2 * (pd * hh + ed * h + j) + 1);
        }
        out.push(2 * dst + 1);
        Ok(())
    }
}
