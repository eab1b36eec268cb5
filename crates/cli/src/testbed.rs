//! `commperf testbed`: a rate-limited cluster of network namespaces, real patterns measured on
//! it and predicted with a profile calibrated on it; and the hidden `__testbed-rank` that runs
//! inside each namespace. Kept here so that `cli.rs` and `main.rs` only gain a line each.

use anyhow::{bail, Context, Result};
use clap::Args;
use commperf_testbed::netns::{self, Shaper};
use commperf_testbed::proto::TOKEN_ENV;
use commperf_testbed::rank::{rank_main, RankArgs};
use commperf_testbed::run::{self, TestbedConfig, MAX_ITERS};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

fn rate(s: &str) -> Result<u64, String> {
    netns::parse_rate(s)
}
/// A comma-separated list of pattern names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternList(pub Vec<String>);

fn patterns(s: &str) -> Result<PatternList, String> {
    let v: Vec<String> = s
        .split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect();
    for p in &v {
        if !["incast", "alltoall", "ring", "halo"].contains(&p.as_str()) {
            return Err(format!(
                "unknown pattern '{p}' (incast, alltoall, ring, halo)"
            ));
        }
    }
    if v.is_empty() {
        return Err("empty list".into());
    }
    Ok(PatternList(v))
}

/// Output format of `testbed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TbFormat {
    Table,
    Json,
}

#[derive(Debug, Args)]
pub struct TestbedArgs {
    /// Hosts (network namespaces) on the bridge
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u32).range(2..=99))]
    pub hosts: u32,
    /// Rate of every host link in each direction: 100mbit, 1Gb/s, 12.5MB/s (B bytes, b bits)
    #[arg(long, value_name = "RATE", default_value = "100mbit", value_parser = rate)]
    pub rate: u64,
    /// Patterns to measure and predict, comma-separated: incast (N-1 → 1), alltoall, ring
    /// (shift by one), halo (2-D periodic grid, four neighbours)
    #[arg(
        long,
        value_name = "LIST",
        default_value = "incast,alltoall,ring,halo",
        value_parser = patterns
    )]
    pub patterns: PatternList,
    /// Size of every message of every pattern (k/M suffixes)
    #[arg(long, value_name = "SIZE", default_value = "1M", value_parser = crate::cli::size)]
    pub bytes: u64,
    /// Timed iterations per pattern (the median is compared)
    #[arg(long, value_name = "R", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=MAX_ITERS as i64))]
    pub iters: u32,
    /// Untimed warm-up iterations per pattern
    #[arg(long, value_name = "W", default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=MAX_ITERS as i64))]
    pub warmup: u32,
    /// How each link is limited: htb-fair (HTB with a class per peer: the link is shared
    /// equally among the pairs using it), htb (one HTB class, FIFO), tbf (token bucket, FIFO)
    #[arg(long, value_name = "QDISC", default_value = "htb-fair")]
    pub shaper: Shaper,
    /// Turn segmentation and receive offloads off on every veth (needs ethtool), so that the
    /// shapers see wire-sized packets. Off costs far more CPU per byte; on a busy 2-core
    /// machine that cost showed as slower, noisier patterns, so offloads stay on by default
    #[arg(long)]
    pub offloads_off: bool,
    /// Largest offload (GSO) packet on every veth; 0 = the kernel's default (64K). A shaper
    /// releases a whole GSO packet at once: with 64K ones, links shared by several pairs were
    /// shared unevenly (all-to-all 14 % slower than with 16K, measured)
    #[arg(long, value_name = "SIZE", default_value = "16K", value_parser = crate::cli::size)]
    pub gso_max: u64,
    /// Calibration sizes (ping-pong host 0 <-> 1), e.g. 1,4K,64K:4M [default: 1 B .. 4 MiB]
    #[arg(long, value_name = "SIZES")]
    pub ladder: Option<String>,
    /// Round trips per calibration size [default: about one second per size, 3..30]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=MAX_ITERS as i64))]
    pub ladder_reps: Option<u32>,
    /// Output format on stdout
    #[arg(long, value_enum, default_value_t = TbFormat::Table)]
    pub format: TbFormat,
    /// Also write the report as JSON to FILE
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Write the calibrated profile (Tcom) as JSON to FILE, for `commperf predict`
    #[arg(long, value_name = "FILE")]
    pub profile_out: Option<PathBuf>,
    /// Leave the namespaces, veths and bridge in place afterwards (remove with --cleanup)
    #[arg(long)]
    pub keep: bool,
    /// Only remove what earlier runs left behind (namespaces and links named cpt<pid>- of
    /// runs that no longer exist), then exit
    #[arg(long)]
    pub cleanup: bool,
    /// Test hook: kill this rank after calibration, to check that a failure cleans up
    #[arg(long, hide = true, value_name = "RANK")]
    pub kill_rank: Option<u32>,
}

#[derive(Debug, Args)]
pub struct TestbedRankArgs {
    #[arg(long)]
    pub rank: u32,
    #[arg(long)]
    pub ctrl: SocketAddr,
    #[arg(long)]
    pub listen: IpAddr,
}

/// `commperf testbed`.
pub fn testbed(a: &TestbedArgs) -> Result<()> {
    if a.cleanup {
        netns::check_prerequisites()?;
        let removed = netns::cleanup_stale()?;
        if removed.is_empty() {
            crate::say("commperf testbed: nothing to clean up");
        } else {
            crate::say(&format!("commperf testbed: removed {}", removed.join(" ")));
        }
        return Ok(());
    }
    netns::check_prerequisites()?;
    crate::output::preflight(&[
        ("-o", a.out.as_deref()),
        ("--profile-out", a.profile_out.as_deref()),
    ])?;
    let ladder = match &a.ladder {
        None => None,
        Some(s) => {
            let sizes =
                commperf_core::parse_sizes(s).map_err(|e| anyhow::anyhow!("--ladder: {e}"))?;
            if sizes.len() < 2 {
                bail!("--ladder needs at least 2 sizes");
            }
            let def = run::default_ladder(a.rate, a.bytes);
            Some(
                sizes
                    .into_iter()
                    .map(|b| commperf_testbed::proto::Rung {
                        bytes: b,
                        reps: a.ladder_reps.unwrap_or_else(|| {
                            def.iter().find(|r| r.bytes >= b).map_or(3, |r| r.reps)
                        }),
                    })
                    .collect(),
            )
        }
    };
    let ladder = match (ladder, a.ladder_reps) {
        (None, Some(n)) => Some(
            run::default_ladder(a.rate, a.bytes)
                .into_iter()
                .map(|r| commperf_testbed::proto::Rung { reps: n, ..r })
                .collect(),
        ),
        (l, _) => l,
    };
    let cfg = TestbedConfig {
        hosts: a.hosts,
        rate_bit_per_s: a.rate,
        shaper: a.shaper,
        offloads_off: a.offloads_off,
        gso_max_bytes: (a.gso_max > 0).then_some(a.gso_max.min(65536) as u32),
        patterns: a.patterns.0.clone(),
        bytes: a.bytes,
        iters: a.iters,
        warmup: a.warmup,
        ladder,
        exe: std::env::current_exe().context("cannot find the commperf binary to start ranks")?,
        keep: a.keep,
        kill_rank_for_test: a.kill_rank,
    };
    run::install_interrupt_handler();
    let report = run::run(&cfg, &mut |line| {
        crate::say(&format!("commperf testbed: {line}"))
    })?;
    let json = serde_json::to_string_pretty(&report)? + "\n";
    match a.format {
        TbFormat::Table => crate::output::print(&run::render_table(&report))?,
        TbFormat::Json => crate::output::print(&json)?,
    }
    if let Some(p) = &a.out {
        std::fs::write(p, &json).with_context(|| format!("write {}", p.display()))?;
    }
    if let Some(p) = &a.profile_out {
        let text = serde_json::to_string_pretty(&report.profile)? + "\n";
        std::fs::write(p, text).with_context(|| format!("write {}", p.display()))?;
    }
    Ok(())
}

/// `commperf __testbed-rank`: one rank inside its namespace.
pub fn testbed_rank(a: &TestbedRankArgs) -> Result<()> {
    let token = std::env::var(TOKEN_ENV).with_context(|| format!("{TOKEN_ENV} is not set"))?;
    rank_main(&RankArgs {
        rank: a.rank,
        ctrl: a.ctrl,
        listen: a.listen,
        token,
    })
    .with_context(|| format!("testbed rank {}", a.rank))
}

/// `commperf __netns-rank PREFIX -- PROGRAM …`: started by mpirun as each rank of a program on
/// an `app` network stack; moves into namespace `PREFIX h<rank>` and becomes the program.
#[derive(Debug, Args)]
pub struct NetnsRankArgs {
    /// The cluster's name prefix (`cpt<pid>-<tag>`)
    pub prefix: String,
    /// The program and its arguments
    #[arg(last = true, required = true)]
    pub command: Vec<std::ffi::OsString>,
}

/// `commperf __netns-relay NETNS PORT…` (see `commperf_testbed::mpirank`).
#[derive(Debug, Args)]
pub struct NetnsRelayArgs {
    pub netns: String,
    #[arg(required = true)]
    pub ports: Vec<u16>,
}

pub fn netns_rank(a: &NetnsRankArgs) -> Result<()> {
    use commperf_testbed::mpirank;
    let rank = mpirank::rank_from_env()?;
    let netns = format!("{}h{rank}", a.prefix);
    let exe = std::env::current_exe().context("locate the commperf binary")?;
    let mut relay = std::process::Command::new(exe);
    relay.arg("__netns-relay");
    match mpirank::exec_in(&netns, &a.command, relay)? {}
}

pub fn netns_relay(a: &NetnsRelayArgs) -> Result<()> {
    match commperf_testbed::mpirank::relay(&a.netns, &a.ports)? {}
}
