//! Networks: which directed links a message from one host to another crosses.
//!
//! Every cable is full duplex, so it appears as two directed links (seed 003's routing array has
//! a column per link and a row per direction; here each (link, direction) is one id). A network
//! only routes; bandwidth and latency belong to link *classes* (`host`, `switch`, …), which the
//! prediction configures, so one topology serves any link speed.

mod clos;
mod crossbar;
mod fattree;
mod torus;

pub use clos::Clos;
pub use crossbar::Crossbar;
pub use fattree::FatTree;
pub use torus::Torus;

use std::path::PathBuf;
use std::str::FromStr;

/// A directed link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// Node names at both ends, e.g. `h3` and `s0`.
    pub from: String,
    pub to: String,
    /// The link's class, e.g. `host` (a host's own cable) or `switch` (between switches).
    pub class: String,
}

/// Why a route or a topology cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    #[error("bad topology `{spec}`: {why}")]
    Spec { spec: String, why: String },
    #[error("{file}:{line}:{column}: {why}")]
    File {
        file: String,
        line: usize,
        column: usize,
        why: String,
    },
    #[error("{0}")]
    Io(String),
    #[error("the workload has {ranks} ranks but the network has only {hosts} hosts (give a larger network or a --rank-map)")]
    TooFewHosts { ranks: u32, hosts: u32 },
    #[error("no route from {from} to {to}: {why}")]
    NoRoute {
        from: String,
        to: String,
        why: String,
    },
}

/// A network: hosts, directed links, and a deterministic routing function.
pub trait Network: Send + Sync + std::fmt::Debug {
    /// A one-line description, e.g. `fat tree k=16 (1024 hosts, 6144 links)`.
    fn describe(&self) -> String;
    /// Number of hosts (ranks are mapped onto hosts `0..hosts`).
    fn hosts(&self) -> u32;
    /// All directed links; a route names them by index.
    fn links(&self) -> &[Link];
    /// Name of host `h` (for reports and rank maps).
    fn host_name(&self, h: u32) -> String {
        format!("h{h}")
    }
    /// Appends the directed links a message from host `src` to host `dst` crosses, in order.
    /// Nothing for `src == dst`. Deterministic: the same pair always gets the same route.
    fn route(&self, src: u32, dst: u32, out: &mut Vec<u32>) -> Result<(), TopologyError>;
}

impl<N: Network + ?Sized> Network for Box<N> {
    fn describe(&self) -> String {
        (**self).describe()
    }
    fn hosts(&self) -> u32 {
        (**self).hosts()
    }
    fn links(&self) -> &[Link] {
        (**self).links()
    }
    fn host_name(&self, h: u32) -> String {
        (**self).host_name(h)
    }
    fn route(&self, src: u32, dst: u32, out: &mut Vec<u32>) -> Result<(), TopologyError> {
        (**self).route(src, dst, out)
    }
}

/// `--topology` as written on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopologySpec {
    /// One switch with a port per rank.
    Crossbar,
    /// Seed 003's two-level network of small switches (Listing One).
    Clos { hosts: u32, group: u32 },
    /// k-ary fat tree (k even): k³/4 hosts.
    FatTree { k: u32 },
    /// 2-D or 3-D torus, dimension-order routing.
    Torus { dims: Vec<u32> },
    /// Graphviz dot file with LogGOPSim routing comments.
    Dot(PathBuf),
}

impl FromStr for TopologySpec {
    type Err = TopologyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |why: &str| TopologyError::Spec {
            spec: s.to_string(),
            why: why.to_string(),
        };
        let (name, args) = s.split_once(':').unwrap_or((s, ""));
        let kv = |key: &str| -> Result<Option<u32>, TopologyError> {
            for part in args.split(',').filter(|p| !p.is_empty()) {
                let (k, v) = part
                    .split_once('=')
                    .ok_or_else(|| bad(&format!("`{part}` is not KEY=VALUE")))?;
                if k == key {
                    return v
                        .parse::<u32>()
                        .map(Some)
                        .map_err(|_| bad(&format!("`{v}` is not a whole number")));
                }
            }
            Ok(None)
        };
        let known = |keys: &[&str]| -> Result<(), TopologyError> {
            for part in args.split(',').filter(|p| !p.is_empty()) {
                let k = part.split_once('=').map_or(part, |x| x.0);
                if !keys.contains(&k) {
                    return Err(bad(&format!(
                        "unknown parameter `{k}` (expected {})",
                        keys.join(", ")
                    )));
                }
            }
            Ok(())
        };
        match name {
            "crossbar" => {
                known(&[])?;
                Ok(TopologySpec::Crossbar)
            }
            "clos" => {
                known(&["hosts", "group"])?;
                let hosts = kv("hosts")?.unwrap_or(16);
                let group = kv("group")?.unwrap_or(4);
                if group == 0 || hosts == 0 || hosts % group != 0 {
                    return Err(bad("hosts must be a positive multiple of group"));
                }
                Ok(TopologySpec::Clos { hosts, group })
            }
            "fattree" => {
                known(&["k"])?;
                let k = kv("k")?.ok_or_else(|| bad("fattree needs k, e.g. fattree:k=16"))?;
                if k < 2 || k % 2 != 0 || k > 256 {
                    return Err(bad("k must be even, from 2 to 256"));
                }
                Ok(TopologySpec::FatTree { k })
            }
            "torus" => {
                let dims: Result<Vec<u32>, _> = args.split('x').map(str::parse::<u32>).collect();
                let dims = dims.map_err(|_| bad("torus needs dimensions, e.g. torus:8x8 or torus:4x4x4"))?;
                if !(2..=3).contains(&dims.len()) || dims.contains(&0) {
                    return Err(bad("a torus has 2 or 3 dimensions, each at least 1"));
                }
                if dims.iter().map(|&d| d as u64).product::<u64>() > 1 << 24 {
                    return Err(bad("more than 16,777,216 hosts"));
                }
                Ok(TopologySpec::Torus { dims })
            }
            _ if s.ends_with(".dot") || s.ends_with(".gv") || std::path::Path::new(s).is_file() => {
                Ok(TopologySpec::Dot(PathBuf::from(s)))
            }
            _ => Err(bad(
                "expected crossbar, clos[:hosts=N,group=G], fattree:k=K, torus:XxY[xZ] or a .dot file",
            )),
        }
    }
}

/// Builds the network. `nranks` sizes a crossbar; `seed` drives seeded static choices (Clos).
pub fn build(
    spec: &TopologySpec,
    nranks: u32,
    seed: u64,
) -> Result<Box<dyn Network>, TopologyError> {
    Ok(match spec {
        TopologySpec::Crossbar => {
            check_size("crossbar", 2 * nranks.max(1) as u64)?;
            Box::new(Crossbar::new(nranks.max(1)))
        }
        TopologySpec::Clos { hosts, group } => Box::new(Clos::new(*hosts, *group, seed)?),
        TopologySpec::FatTree { k } => Box::new(FatTree::new(*k)?),
        TopologySpec::Torus { dims } => Box::new(Torus::new(dims)?),
        TopologySpec::Dot(path) => {
            return Err(TopologyError::Spec {
                spec: path.display().to_string(),
                why: "dot files are not read yet".into(),
            })
        }
    })
}

/// The most directed links a generated or loaded network may have (a fat tree with k=128 has
/// 3,145,728): every link is a few dozen bytes of names, so this bounds memory to a few hundred
/// MB and turns an absurd spec into an error instead of an allocation failure.
pub const MAX_LINKS: u64 = 1 << 22;

/// An error when a network of `links` directed links would be too large to build.
fn check_size(spec: &str, links: u64) -> Result<(), TopologyError> {
    if links > MAX_LINKS {
        return Err(TopologyError::Spec {
            spec: spec.to_string(),
            why: format!("{links} directed links is more than the {MAX_LINKS} this tool builds"),
        });
    }
    Ok(())
}

/// The error for a route asked between hosts that do not exist.
fn no_such_host(src: u32, dst: u32, hosts: u32) -> TopologyError {
    TopologyError::NoRoute {
        from: format!("host {src}"),
        to: format!("host {dst}"),
        why: format!("the network has hosts 0..{hosts}"),
    }
}

/// Rank → host placement: identity unless a map file says otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankMap(pub Vec<u32>);

impl RankMap {
    /// Identity placement; an error when the network is too small.
    pub fn identity(nranks: u32, net: &dyn Network) -> Result<RankMap, TopologyError> {
        if nranks > net.hosts() {
            return Err(TopologyError::TooFewHosts {
                ranks: nranks,
                hosts: net.hosts(),
            });
        }
        Ok(RankMap((0..nranks).collect()))
    }
}
