//! The cluster itself: N network namespaces, each with one veth to a Linux bridge in the root
//! namespace, every link rate-limited in both directions with `tc`.
//!
//! Everything is made with `ip` and `tc` (iproute2) through `std::process::Command`, so there
//! is no netlink code to get wrong and every step can be replayed by hand. Every object's name
//! starts with a per-run prefix `cpt<pid>-`: the [`Cluster`]'s `Drop` removes exactly what
//! this run made, also after an error, and [`cleanup_stale`] removes what a run killed
//! without a chance to clean (SIGKILL, power loss) left behind, recognising dead runs by their
//! pid. Interface names are limited to 15 bytes by the kernel, which the short prefix respects
//! for every pid (at most 7 digits) and up to 99 hosts.
//!
//! Shaping: the host → switch direction is the egress of the namespace-side veth, the switch
//! → host direction the egress of the bridge-side veth (a bridge port's egress is where the
//! bridge hands a frame to that host). Both carry the same qdisc, so a message from a to b is
//! limited on a's uplink and on b's downlink, the two directed links of Papaefstathiou's (2001)
//! crossbar.

use std::net::Ipv4Addr;
use std::process::{Command, Stdio};

/// Why building or removing the cluster failed.
#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    #[error(
        "the testbed needs root (CAP_NET_ADMIN) to create network namespaces; run it with sudo"
    )]
    NotRoot,
    #[error("the testbed needs iproute2's `{0}` command, which could not be run: {1}")]
    MissingTool(&'static str, std::io::Error),
    #[error("`{cmd}` failed: {stderr}")]
    Command { cmd: String, stderr: String },
    #[error("cannot run `{cmd}`: {cause}")]
    Spawn { cmd: String, cause: std::io::Error },
    #[error("{0} hosts requested; the testbed supports 2 to {MAX_HOSTS}")]
    Hosts(u32),
    #[error("rate {0} bit/s is out of range (1 kbit/s to 100 Gbit/s)")]
    Rate(u64),
    #[error("no free 10.77.x.0/24 subnet to use (every one is already assigned on this machine)")]
    NoSubnet,
}

/// Most hosts of one testbed (names and addresses stay short and unique below this).
pub const MAX_HOSTS: u32 = 99;

/// The queueing discipline that limits each link's rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shaper {
    /// A hierarchical token bucket class at the rate, with a deep FIFO below it (no drops).
    Htb,
    /// The same rate with one HTB class per peer below it: the link is shared equally among
    /// the pairs using it at each moment (per-flow fair queueing), each with a deep FIFO.
    HtbFair,
    /// A token bucket filter at the rate with a deep queue.
    Tbf,
}

impl std::str::FromStr for Shaper {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "htb" => Ok(Shaper::Htb),
            "htb-fair" | "fair" => Ok(Shaper::HtbFair),
            "tbf" => Ok(Shaper::Tbf),
            o => Err(format!("unknown shaper '{o}' (htb-fair, htb or tbf)")),
        }
    }
}

/// What to build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSpec {
    pub hosts: u32,
    /// Per-link rate in each direction, bits per second.
    pub rate_bit_per_s: u64,
    pub shaper: Shaper,
    /// Turn segmentation/receive offloads off on every veth (needs `ethtool`; skipped with a
    /// note where it is missing). Off means the shaper sees wire-sized packets.
    pub offloads_off: bool,
    /// Largest segmentation-offload packet on every veth (`ip link set … gso_max_size`), so
    /// that with offloads on a shaper never releases more than this in one piece. None = the
    /// kernel's default (64 KiB).
    pub gso_max_bytes: Option<u32>,
}

/// One host: a namespace and the two ends of its cable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    pub netns: String,
    /// The veth end inside the namespace.
    pub dev: String,
    /// The veth end in the root namespace, a port of the bridge.
    pub port: String,
    pub addr: Ipv4Addr,
}

/// A built cluster; removed on drop unless [`Cluster::keep`] was called.
#[derive(Debug)]
pub struct Cluster {
    pub prefix: String,
    pub bridge: String,
    /// The bridge's own address, in the root namespace: where the coordinator listens.
    pub bridge_addr: Ipv4Addr,
    pub hosts: Vec<Host>,
    /// Things worth telling the user (e.g. offloads left on because ethtool is missing).
    pub notes: Vec<String>,
    keep: bool,
}

/// The per-run name prefix: `cpt<pid>-`.
pub fn run_prefix() -> String {
    format!("cpt{}-", std::process::id())
}

/// The prefix of this run's cluster `tag` (see [`Cluster::build_tagged`]); the namespace of
/// host `i` is `{prefix}h{i}`.
pub fn tagged_prefix(tag: char) -> String {
    format!("{}{tag}", run_prefix())
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Checks that we are root and that `ip` and `tc` run.
pub fn check_prerequisites() -> Result<(), NetnsError> {
    if !is_root() {
        return Err(NetnsError::NotRoot);
    }
    for tool in ["ip", "tc"] {
        Command::new(tool)
            .arg("-V")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map_err(|e| NetnsError::MissingTool(tool, e))?;
    }
    Ok(())
}

/// Runs a command; its stderr becomes the error.
pub(crate) fn run(prog: &str, args: &[&str]) -> Result<String, NetnsError> {
    let cmd = format!("{prog} {}", args.join(" "));
    let out = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|cause| NetnsError::Spawn {
            cmd: cmd.clone(),
            cause,
        })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(NetnsError::Command {
            cmd,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

fn ip(args: &[&str]) -> Result<String, NetnsError> {
    run("ip", args)
}

/// Network namespaces whose name starts with `prefix`.
pub fn netns_with_prefix(prefix: &str) -> Result<Vec<String>, NetnsError> {
    let out = ip(&["netns", "list"])?;
    // Lines are `name` or `name (id: N)`.
    Ok(out
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(prefix))
        .map(str::to_string)
        .collect())
}

/// Links of the root namespace whose name starts with `prefix`.
pub fn links_with_prefix(prefix: &str) -> Result<Vec<String>, NetnsError> {
    let out = ip(&["-o", "link", "show"])?;
    // Lines are `N: name[@peer]: <FLAGS> …`.
    Ok(out
        .lines()
        .filter_map(|l| l.split(": ").nth(1))
        .map(|n| n.split('@').next().unwrap_or(n))
        .filter(|n| n.starts_with(prefix))
        .map(str::to_string)
        .collect())
}

/// Removes every namespace and root-namespace link whose name starts with `prefix`. Best
/// effort: keeps going past failures and returns what it removed.
pub fn remove_prefix(prefix: &str) -> Vec<String> {
    let mut removed = Vec::new();
    // Deleting a namespace deletes the veth end inside it, and with it the pair.
    for ns in netns_with_prefix(prefix).unwrap_or_default() {
        if ip(&["netns", "del", &ns]).is_ok() {
            removed.push(ns);
        }
    }
    for link in links_with_prefix(prefix).unwrap_or_default() {
        if ip(&["link", "del", &link]).is_ok() {
            removed.push(link);
        }
    }
    removed
}

/// The pid in a `cpt<pid>-…` name, if it is one of ours.
fn prefix_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("cpt")?;
    let (digits, _) = rest.split_once('-')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

fn pid_alive(pid: u32) -> bool {
    // A zombie (killed, not yet reaped: common where pid 1 does not reap) is dead.
    if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        if let Some((_, rest)) = stat.rsplit_once(") ") {
            if rest.starts_with('Z') || rest.starts_with('X') {
                return false;
            }
        }
    }
    // SAFETY: kill with signal 0 only checks for existence and permission.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Removes what earlier runs left behind: every `cpt<pid>-` namespace and link whose run
/// (pid) no longer exists. Runs still alive are left alone.
pub fn cleanup_stale() -> Result<Vec<String>, NetnsError> {
    let mut prefixes: Vec<String> = Vec::new();
    for name in netns_with_prefix("cpt")?
        .into_iter()
        .chain(links_with_prefix("cpt")?)
    {
        if let Some(pid) = prefix_pid(&name) {
            let p = format!("cpt{pid}-");
            if pid != std::process::id() && !pid_alive(pid) && !prefixes.contains(&p) {
                prefixes.push(p);
            }
        }
    }
    Ok(prefixes.iter().flat_map(|p| remove_prefix(p)).collect())
}

/// A 10.77.x.0/24 subnet no interface of this machine is in.
fn free_subnet() -> Result<u8, NetnsError> {
    let used = ip(&["-o", "-4", "addr", "show"])?;
    let start = (std::process::id() % 200) as u8;
    (0..=250u16)
        .map(|k| ((start as u16 + k) % 251) as u8)
        .find(|x| !used.contains(&format!(" 10.77.{x}.")))
        .ok_or(NetnsError::NoSubnet)
}

/// Which way a shaped device faces: its classes select peers by destination (a host's
/// uplink) or by source (a host's downlink, the bridge port).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Facing {
    Up,
    Down,
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// The tc commands (without `tc` and the namespace) that shape `dev`. `peers` are the other
/// hosts' addresses and the bridge's, for the fair shaper.
fn shaper_cmds(
    shaper: Shaper,
    rate_bit: u64,
    dev: &str,
    facing: Facing,
    peers: &[Ipv4Addr],
) -> Vec<Vec<String>> {
    let rate = format!("{rate_bit}bit");
    // Burst: one full frame (and a little). As small as it can be, because every byte of
    // burst goes at veth speed: a lone ping-pong message gets the buckets of both its links
    // for free, a message sharing a busy link does not, and the calibrated Tcom would carry
    // that gift into every prediction. The watchdog is a high-resolution timer, so a
    // one-frame bucket still keeps the rate (measured: sustained transfers at 101 % of it).
    let burst = "1600".to_string();
    let _ = rate_bit;
    // A deep FIFO under every class: a drop means a TCP retransmission timeout, hundreds of
    // ms of noise.
    let fifo = |parent: &str, handle: &str| {
        strings(&[
            "qdisc", "add", "dev", dev, "parent", parent, "handle", handle, "pfifo", "limit",
            "100000",
        ])
    };
    let class_prio = |parent: &str, id: &str, r: &str, prio: &str| {
        strings(&[
            "class", "add", "dev", dev, "parent", parent, "classid", id, "htb", "rate", r, "ceil",
            &rate, "burst", &burst, "cburst", &burst, "quantum", "15140", "prio", prio,
        ])
    };
    let class = |parent: &str, id: &str, r: &str| class_prio(parent, id, r, "1");
    let root = strings(&[
        "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "2",
    ]);
    match shaper {
        Shaper::Htb => vec![root, class("1:", "1:1", &rate), fifo("1:1", "10:")]
            .into_iter()
            .map(|mut c| {
                // One class takes everything: make it the default.
                if c[4] == "root" {
                    c[9] = "1".into();
                }
                c
            })
            .collect(),
        Shaper::HtbFair => {
            // A class per peer under one rate-limited parent: HTB shares the parent among the
            // active classes by deficit round robin, so every active pair gets an equal share
            // of the link at every moment (per-flow fair queueing; one TCP connection per
            // directed pair makes a peer a flow). Without it, FIFO links in tandem let TCP
            // flows drift apart and links go idle while others still have a backlog.
            let share = format!("{}bit", (rate_bit / (peers.len() as u64 + 1)).max(8));
            let field = match facing {
                Facing::Up => "dst",
                Facing::Down => "src",
            };
            let mut v = vec![
                root,
                class("1:", "1:1", &rate),
                // Class 1:2, served first: packets under 128 bytes (TCP's pure ACKs, control
                // messages). An ACK queued behind the data of a backlogged link would stretch
                // the round trip of the flow coming the other way and starve it of window;
                // every host sends and receives at once in most patterns.
                class_prio("1:1", "1:2", &share, "0"),
                fifo("1:2", "2:"),
                strings(&[
                    "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1",
                    "u32", "match", "u16", "0x0000", "0xff80", "at", "2", "flowid", "1:2",
                ]),
            ];
            for (k, a) in peers.iter().enumerate() {
                let id = format!("{:x}", 16 + k);
                v.push(class("1:1", &format!("1:{id}"), &share));
                v.push(fifo(&format!("1:{id}"), &format!("{id}:")));
                v.push(strings(&[
                    "filter",
                    "add",
                    "dev",
                    dev,
                    "parent",
                    "1:",
                    "protocol",
                    "ip",
                    "prio",
                    "2",
                    "u32",
                    "match",
                    "ip",
                    field,
                    &format!("{a}/32"),
                    "flowid",
                    &format!("1:{id}"),
                ]));
            }
            v
        }
        Shaper::Tbf => vec![strings(&[
            "qdisc",
            "add",
            "dev",
            dev,
            "root",
            "tbf",
            "rate",
            &rate,
            "burst",
            &burst,
            "limit",
            "1000000000",
        ])],
    }
}

impl Cluster {
    /// Builds the cluster. On any failure, whatever was made is removed before returning.
    pub fn build(spec: &ClusterSpec) -> Result<Cluster, NetnsError> {
        Cluster::build_with_prefix(spec, run_prefix())
    }

    /// Builds one of several clusters of this run: names start with `cpt<pid>-<tag>` (a lower-
    /// case letter, so that names stay within 15 bytes and each cluster is removed alone).
    pub fn build_tagged(spec: &ClusterSpec, tag: char) -> Result<Cluster, NetnsError> {
        Cluster::build_with_prefix(spec, tagged_prefix(tag))
    }

    fn build_with_prefix(spec: &ClusterSpec, prefix: String) -> Result<Cluster, NetnsError> {
        check_prerequisites()?;
        if !(2..=MAX_HOSTS).contains(&spec.hosts) {
            return Err(NetnsError::Hosts(spec.hosts));
        }
        if !(1_000..=100_000_000_000).contains(&spec.rate_bit_per_s) {
            return Err(NetnsError::Rate(spec.rate_bit_per_s));
        }
        let x = free_subnet()?;
        let mut c = Cluster {
            bridge: format!("{prefix}br"),
            bridge_addr: Ipv4Addr::new(10, 77, x, 254),
            hosts: (0..spec.hosts)
                .map(|i| Host {
                    netns: format!("{prefix}h{i}"),
                    dev: format!("{prefix}n{i}"),
                    port: format!("{prefix}b{i}"),
                    addr: Ipv4Addr::new(10, 77, x, i as u8 + 1),
                })
                .collect(),
            prefix,
            notes: Vec::new(),
            keep: false,
        };
        // From here on, a failure drops `c`, which removes everything with the prefix.
        c.make(spec)?;
        Ok(c)
    }

    fn make(&mut self, spec: &ClusterSpec) -> Result<(), NetnsError> {
        let br = self.bridge.clone();
        ip(&["link", "add", &br, "type", "bridge"])?;
        // No STP and no forwarding delay: ports forward at once.
        ip(&["link", "set", &br, "type", "bridge", "stp_state", "0"])?;
        ip(&["link", "set", &br, "type", "bridge", "forward_delay", "0"])?;
        let cidr = format!("{}/24", self.bridge_addr);
        ip(&["addr", "add", &cidr, "dev", &br])?;
        ip(&["link", "set", &br, "up"])?;
        let ethtool = spec.offloads_off && ethtool_present();
        if spec.offloads_off && !ethtool {
            self.notes
                .push("ethtool not found: segmentation offloads left on".to_string());
        }
        for h in self.hosts.clone() {
            ip(&["netns", "add", &h.netns])?;
            ip(&[
                "link", "add", &h.port, "type", "veth", "peer", "name", &h.dev,
            ])?;
            ip(&["link", "set", &h.dev, "netns", &h.netns])?;
            ip(&["link", "set", &h.port, "master", &br])?;
            let cidr = format!("{}/24", h.addr);
            ip(&["-n", &h.netns, "addr", "add", &cidr, "dev", &h.dev])?;
            ip(&["-n", &h.netns, "link", "set", "lo", "up"])?;
            if let Some(g) = spec.gso_max_bytes {
                let g = g.to_string();
                ip(&["link", "set", "dev", &h.port, "gso_max_size", &g])?;
                ip(&[
                    "-n",
                    &h.netns,
                    "link",
                    "set",
                    "dev",
                    &h.dev,
                    "gso_max_size",
                    &g,
                ])?;
            }
            if ethtool {
                let off = ["tso", "off", "gso", "off", "gro", "off"];
                run("ethtool", &[&["-K", &h.port][..], &off].concat())?;
                run(
                    "ip",
                    &[
                        &["netns", "exec", &h.netns, "ethtool", "-K", &h.dev][..],
                        &off,
                    ]
                    .concat(),
                )?;
            }
            let peers: Vec<Ipv4Addr> = self
                .hosts
                .iter()
                .filter(|o| o.addr != h.addr)
                .map(|o| o.addr)
                .chain([self.bridge_addr])
                .collect();
            let rate = spec.rate_bit_per_s;
            for cmd in shaper_cmds(spec.shaper, rate, &h.dev, Facing::Up, &peers) {
                let args: Vec<&str> = ["-n", h.netns.as_str()]
                    .into_iter()
                    .chain(cmd.iter().map(String::as_str))
                    .collect();
                run("tc", &args)?;
            }
            for cmd in shaper_cmds(spec.shaper, rate, &h.port, Facing::Down, &peers) {
                run("tc", &cmd.iter().map(String::as_str).collect::<Vec<_>>())?;
            }
            ip(&["-n", &h.netns, "link", "set", &h.dev, "up"])?;
            ip(&["link", "set", &h.port, "up"])?;
        }
        Ok(())
    }

    /// Leave everything in place on drop (for inspection); remove later with
    /// `commperf testbed --cleanup`.
    pub fn keep(&mut self) {
        self.keep = true;
    }

    /// Removes everything with this run's prefix now.
    pub fn remove(&mut self) -> Vec<String> {
        self.keep = true; // done: the drop has nothing left to do
        remove_prefix(&self.prefix)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if !self.keep {
            remove_prefix(&self.prefix);
        }
    }
}

fn ethtool_present() -> bool {
    Command::new("ethtool")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Parses a rate in commperf's one rate syntax (`commperf_core::rate`: `100mbit`, `1Gb/s`,
/// `12.5MB/s`; B bytes, b bits). Returns bits per second, what tc is given.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let bits = commperf_core::parse_rate(s)
        .map_err(|e| e.to_string())?
        .bits_per_s();
    if bits < 1.0 || bits > u64::MAX as f64 {
        return Err(format!("'{s}' is not between 1 bit/s and 2^64 bit/s"));
    }
    Ok(bits.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("100mbit"), Ok(100_000_000));
        assert_eq!(parse_rate("1Gbit"), Ok(1_000_000_000));
        assert_eq!(parse_rate("1.5mbit"), Ok(1_500_000));
        assert_eq!(parse_rate("10MBps"), Ok(80_000_000));
        assert_eq!(parse_rate("12.5MB/s"), Ok(100_000_000));
        // tc reads `mbps` as megabytes, SimGrid's `Mbps` is megabits: refused, not guessed.
        assert!(parse_rate("10mbps").is_err());
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("10furlongs").is_err());
        assert!(parse_rate("0bit").is_err());
    }

    /// `testbed --rate` accepts exactly what `predict --link` accepts (one parser, in core),
    /// converted to the whole bits per second tc is given; what core refuses is refused with
    /// core's words.
    #[test]
    fn rates_are_the_one_syntax_of_core() {
        for s in [
            "100mbit",
            "1Gb/s",
            "12.5MB/s",
            "1.25GB/s",
            "10Gbit/s",
            "40Gb/s",
            "125MBps",
            "1Gbps",
            "100kbps",
            "1KiBps",
            "1e9bit/s",
            "2GByte/s",
            "500kbit",
            "2000000bit",
        ] {
            let bits = commperf_core::parse_rate(s).unwrap().bits_per_s();
            assert_eq!(parse_rate(s), Ok(bits.round() as u64), "{s}");
        }
        for s in [
            "10mbps",
            "1gB/s",
            "100",
            "10GB",
            "fast",
            "10furlongs",
            "0bit",
        ] {
            let why = commperf_core::parse_rate(s).unwrap_err().to_string();
            assert_eq!(parse_rate(s), Err(why), "{s}");
        }
    }

    #[test]
    fn liveness() {
        assert!(pid_alive(std::process::id()));
        assert!(!pid_alive(u32::MAX / 2));
    }

    #[test]
    fn prefixes() {
        assert_eq!(prefix_pid("cpt123-h0"), Some(123));
        assert_eq!(prefix_pid("cpt-h0"), None);
        assert_eq!(prefix_pid("cptx1-h0"), None);
        assert_eq!(prefix_pid("eth0"), None);
        // The longest names fit the kernel's 15-byte interface names.
        assert!("cpt4194304-b98".len() <= 15);
    }
}
