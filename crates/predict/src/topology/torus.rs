//! 2-D and 3-D tori with one host per router and dimension-order routing.
//!
//! Router `r` has coordinates `(x, y[, z])` with `r = x + X·(y + Y·z)` and is named `r{x}.{y}[.{z}]`;
//! host `h{r}` hangs off it. A message goes host → router, then along X, then Y, then Z, each
//! ring the short way round (positive direction when both ways are equally long, so the route
//! is deterministic), then router → host. Dimension-order routing is what torus machines (Blue
//! Gene, Cray XT) do by default and it is deadlock-free with the usual virtual channels, which
//! the contention model does not need to represent.
//!
//! Link classes: `host` (host ↔ router) and `torus` (router ↔ router). Layout: host `r` is links
//! `2r` (up) and `2r+1` (down); then, for each dimension and direction that exists, one block of
//! `n` links (block link `r` leaves router `r`). A ring of 1 has no links; a ring of 2 has only
//! the positive direction (both neighbours are the same router, so one cable per pair).

use super::{Link, Network, TopologyError};

/// A 2-D or 3-D torus.
#[derive(Debug, Clone)]
pub struct Torus {
    dims: Vec<u32>,
    hosts: u32,
    /// `block[d][0]` / `block[d][1]`: first link of the +/− block of dimension `d`
    /// (`u32::MAX` when that direction has no links).
    block: Vec<[u32; 2]>,
    links: Vec<Link>,
}

impl Torus {
    /// `dims` has 2 or 3 entries, each at least 1 (checked: an error otherwise).
    pub fn new(dims: &[u32]) -> Result<Self, TopologyError> {
        let spec = format!(
            "torus:{}",
            dims.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join("x")
        );
        if !(2..=3).contains(&dims.len()) || dims.contains(&0) {
            return Err(TopologyError::Spec {
                spec,
                why: "a torus has 2 or 3 dimensions, each at least 1".into(),
            });
        }
        let hosts: u64 = dims.iter().map(|&d| d as u64).product();
        let blocks: u64 = dims
            .iter()
            .map(|&d| (d >= 2) as u64 + (d >= 3) as u64)
            .sum();
        super::check_size(&spec, hosts.saturating_mul(2 + blocks))?;
        let hosts = hosts as u32;
        let name = |r: u32| -> String {
            let mut rest = r;
            let mut s = String::from("r");
            for (i, &d) in dims.iter().enumerate() {
                if i > 0 {
                    s.push('.');
                }
                s.push_str(&(rest % d).to_string());
                rest /= d;
            }
            s
        };
        let mut links = Vec::with_capacity((hosts as u64 * (2 + blocks)) as usize);
        for r in 0..hosts {
            links.push(Link {
                from: format!("h{r}"),
                to: name(r),
                class: "host".into(),
            });
            links.push(Link {
                from: name(r),
                to: format!("h{r}"),
                class: "host".into(),
            });
        }
        let mut block = Vec::with_capacity(dims.len());
        let mut stride = 1u32;
        for &n in dims {
            let mut b = [u32::MAX; 2];
            for (dir, exists) in [(0usize, n >= 2), (1, n >= 3)] {
                if !exists {
                    continue;
                }
                b[dir] = links.len() as u32;
                for r in 0..hosts {
                    let to = step(r, stride, n, dir == 0);
                    links.push(Link {
                        from: name(r),
                        to: name(to),
                        class: "torus".into(),
                    });
                }
            }
            block.push(b);
            stride *= n;
        }
        Ok(Torus {
            dims: dims.to_vec(),
            hosts,
            block,
            links,
        })
    }
}

/// The router one step from `r` along the dimension with this stride and ring size.
fn step(r: u32, stride: u32, n: u32, positive: bool) -> u32 {
    let c = (r / stride) % n;
    let c2 = if positive {
        (c + 1) % n
    } else {
        (c + n - 1) % n
    };
    r - c * stride + c2 * stride
}

impl Network for Torus {
    fn describe(&self) -> String {
        format!(
            "{}-D torus {} ({} hosts, one per router, {} links, dimension-order routing)",
            self.dims.len(),
            self.dims
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join("x"),
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
        if src >= self.hosts || dst >= self.hosts {
            return Err(super::no_such_host(src, dst, self.hosts));
        }
        if src == dst {
            return Ok(());
        }
        out.push(2 * src);
        let mut r = src;
        let mut stride = 1u32;
        for (&n, b) in self.dims.iter().zip(&self.block) {
            let (cs, cd) = ((r / stride) % n, (dst / stride) % n);
            let ahead = (cd + n - cs) % n;
            if ahead != 0 {
                let positive = ahead <= n - ahead;
                let hops = if positive { ahead } else { n - ahead };
                let base = b[if positive { 0 } else { 1 }];
                for _ in 0..hops {
                    out.push(base + r);
                    r = step(r, stride, n, positive);
                }
            }
            stride *= n;
        }
        out.push(2 * dst + 1);
        Ok(())
    }
}
