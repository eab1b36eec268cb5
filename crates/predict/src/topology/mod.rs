//! Networks: which directed links a message from one host to another crosses.
//!
//! Every cable is full duplex, so it appears as two directed links (Papaefstathiou's (2001) routing
//! array has a column per link and a row per direction; here each (link, direction) is one id). A
//! network only routes; bandwidth and latency belong to link *classes* (`host`, `switch`, …), which
//! the prediction configures, so one topology serves any link speed.

mod clos;
mod crossbar;
mod dot;
mod fattree;
mod simgrid;
mod torus;

pub use clos::Clos;
pub use crossbar::Crossbar;
pub use dot::Dot;
pub use fattree::FatTree;
pub use simgrid::SimGridPlatform;
pub use torus::Torus;

use std::path::{Path, PathBuf};
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

/// A link's own bandwidth and latency, when the topology file gives them (a SimGrid platform);
/// a `--link` class setting still overrides them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkSpec {
    pub bandwidth_bytes_per_ns: f64,
    pub latency_ns: f64,
    /// SimGrid's `FATPIPE`: every message gets the whole bandwidth (no sharing).
    pub fatpipe: bool,
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
    /// Other names of host `h` a rank map may use (a dot file's `hostname=` attribute).
    fn host_aliases(&self, _h: u32) -> Vec<String> {
        Vec::new()
    }
    /// Appends the directed links a message from host `src` to host `dst` crosses, in order.
    /// Nothing for `src == dst`. Deterministic: the same pair always gets the same route.
    fn route(&self, src: u32, dst: u32, out: &mut Vec<u32>) -> Result<(), TopologyError>;
    /// Per link (indexed like [`Network::links`]), its bandwidth and latency when the topology
    /// itself says; None when links are configured by class only.
    fn link_specs(&self) -> Option<&[LinkSpec]> {
        None
    }
    /// Host `h`'s compute speed in flop/s when the topology says.
    fn host_speed(&self, _h: u32) -> Option<f64> {
        None
    }
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
    fn host_aliases(&self, h: u32) -> Vec<String> {
        (**self).host_aliases(h)
    }
    fn route(&self, src: u32, dst: u32, out: &mut Vec<u32>) -> Result<(), TopologyError> {
        (**self).route(src, dst, out)
    }
    fn link_specs(&self) -> Option<&[LinkSpec]> {
        (**self).link_specs()
    }
    fn host_speed(&self, h: u32) -> Option<f64> {
        (**self).host_speed(h)
    }
}

/// `--topology` as written on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopologySpec {
    /// One switch with a port per rank.
    Crossbar,
    /// Papaefstathiou's (2001) two-level network of small switches (Listing One).
    Clos { hosts: u32, group: u32 },
    /// k-ary fat tree (k even): k³/4 hosts.
    FatTree { k: u32 },
    /// 2-D or 3-D torus, dimension-order routing.
    Torus { dims: Vec<u32> },
    /// Graphviz dot file with LogGOPSim routing comments.
    Dot(PathBuf),
    /// SimGrid platform XML (clusters, or hosts, links and routes of a Full zone).
    SimGrid(PathBuf),
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
            _ if s.ends_with(".xml") => Ok(TopologySpec::SimGrid(PathBuf::from(s))),
            _ if s.ends_with(".dot") || s.ends_with(".gv") || std::path::Path::new(s).is_file() => {
                Ok(TopologySpec::Dot(PathBuf::from(s)))
            }
            _ => Err(bad(
                "expected crossbar, clos[:hosts=N,group=G], fattree:k=K, torus:XxY[xZ], a .dot file or a SimGrid platform .xml",
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
        TopologySpec::Dot(path) => Box::new(Dot::from_file(path)?),
        TopologySpec::SimGrid(path) => Box::new(SimGridPlatform::from_file(path)?),
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

    /// Reads a rank map file (see [`RankMap::parse`]).
    pub fn from_file(path: &Path, net: &dyn Network) -> Result<RankMap, TopologyError> {
        let text = commperf_core::read_text(path).map_err(|e| TopologyError::Io(e.to_string()))?;
        RankMap::parse(&text, &path.display().to_string(), net)
    }

    /// Parses a rank map: one `RANK HOST` pair a line, HOST a host name of `net` (e.g. `h3`, or a
    /// dot file's node name or `hostname=`, as LogGOPSim2's mapping files give them) or else a
    /// host index; `#` starts a comment; blank lines are
    /// ignored. The listed ranks must be exactly `0..=max` (an error names the first missing
    /// rank, or the second line of a rank given twice). Several ranks may share a host: their
    /// messages to each other cross no links. `file` names the input in error messages.
    pub fn parse(text: &str, file: &str, net: &dyn Network) -> Result<RankMap, TopologyError> {
        let err = |line: usize, column: usize, why: String| TopologyError::File {
            file: file.to_string(),
            line,
            column,
            why,
        };
        let mut by_name: Option<std::collections::HashMap<String, u32>> = None;
        // (rank, host, line, column) per placement, in file order.
        let mut placed: Vec<(u32, u32, usize, usize)> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let body = raw.split_once('#').map_or(raw, |x| x.0);
            let mut fields = Vec::new();
            let mut rest = body;
            while let Some(start) = rest.find(|c: char| !c.is_whitespace()) {
                let tail = &rest[start..];
                let len = tail.find(char::is_whitespace).unwrap_or(tail.len());
                let column = body.len() - rest.len() + start;
                fields.push((column_of(body, column), &tail[..len]));
                rest = &tail[len..];
            }
            match fields.as_slice() {
                [] => continue,
                [(c, rank), (hc, host)] => {
                    let rank: u32 = rank.parse().map_err(|_| {
                        err(line, *c, format!("`{rank}` is not a rank (a whole number)"))
                    })?;
                    let names = by_name.get_or_insert_with(|| {
                        let mut m: std::collections::HashMap<String, u32> = (0..net.hosts())
                            .flat_map(|h| net.host_aliases(h).into_iter().map(move |a| (a, h)))
                            .collect();
                        m.extend((0..net.hosts()).map(|h| (net.host_name(h), h)));
                        m
                    });
                    let h = match names.get(*host) {
                        Some(&h) => h,
                        None => match host.parse::<u32>() {
                            Ok(h) if h < net.hosts() => h,
                            Ok(h) => {
                                return Err(err(
                                    line,
                                    *hc,
                                    format!(
                                        "host {h} is out of range: the network has hosts 0..{}",
                                        net.hosts()
                                    ),
                                ))
                            }
                            Err(_) => {
                                return Err(err(
                                    line,
                                    *hc,
                                    format!(
                                        "`{host}` is neither a host name nor a host index of {}",
                                        net.describe()
                                    ),
                                ))
                            }
                        },
                    };
                    placed.push((rank, h, line, *c));
                }
                [(c, only)] => {
                    return Err(err(
                        line,
                        *c,
                        format!("expected `RANK HOST`, found only `{only}`"),
                    ))
                }
                [.., (c, extra)] => {
                    return Err(err(
                        line,
                        *c,
                        format!("expected `RANK HOST`, found `{extra}`"),
                    ))
                }
            }
        }
        if placed.is_empty() {
            return Err(err(1, 1, "no ranks placed".into()));
        }
        // Stable: of two lines placing one rank, the later one is reported.
        placed.sort_by_key(|p| p.0);
        let mut hosts = Vec::with_capacity(placed.len());
        for &(rank, h, line, column) in &placed {
            let want = hosts.len() as u32;
            if rank < want {
                let first = placed.iter().find(|p| p.0 == rank).map_or(line, |p| p.2);
                return Err(err(
                    line,
                    column,
                    format!("rank {rank} is placed twice (first on line {first})"),
                ));
            }
            if rank > want {
                return Err(err(
                    text.lines().count().max(1),
                    1,
                    format!(
                        "rank {want} is not placed (ranks 0..={} must all be listed)",
                        placed.last().map_or(rank, |p| p.0)
                    ),
                ));
            }
            hosts.push(h);
        }
        Ok(RankMap(hosts))
    }
}

/// The 1-based column (in characters) of byte offset `byte` of `line`.
fn column_of(line: &str, byte: usize) -> usize {
    line.get(..byte).map_or(byte, |s| s.chars().count()) + 1
}
