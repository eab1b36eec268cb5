//! `commperf calibrate`: measure a network path (or read a Netgauge file, or take Tcom by hand)
//! and write the profile `predict` reads.
//!
//! Three sources, exactly one per run: `--transport T` measures (latency ping-pong, plus the
//! LogGP benchmark unless `--no-loggp`) with the same launch options as `bench`, so the two ends
//! can be two hosts or two network namespaces (`commperf serve` there, `--peer`/`--token`
//! here); `--from-netgauge FILE` converts Netgauge `loggp` output; `--tcom SPEC` takes the pieces
//! by hand. The profile goes to `-o FILE` as JSON (or to stdout), a short summary to stderr.

use crate::cli::List;
use anyhow::{Context, Result};
use clap::{ArgGroup, Args};
use commperf_bench::calibrate::{self, CalibrateConfig, TCOM_SYNTAX};
use commperf_bench::{ConfigError, Launcher};
use commperf_core::{parse_sizes, Profile, TcomPiece, TransportKind};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("source").required(true).args(["transport", "from_netgauge", "tcom"])))]
pub struct CalibrateArgs {
    #[arg(long, short = 't', value_name = "T", value_parser = transport, help = transport_help())]
    pub transport: Option<TransportKind>,
    /// Convert a Netgauge `loggp` output file instead of measuring
    #[arg(long, value_name = "FILE")]
    pub from_netgauge: Option<PathBuf>,
    /// Give Tcom by hand: FROM-[TO]:TIME[+TIME/B],… e.g. '0-2020:10us+0.01us/B,2021-:25us+0.008us/B'
    /// (sizes with optional k/M/G; times in ns, us or ms; the last piece open-ended)
    #[arg(long, value_name = "SPEC", value_parser = tcom_spec, allow_hyphen_values = true)]
    pub tcom: Option<HandTcom>,
    /// Message sizes to measure: a list (8,64,1KiB), a power-of-two ladder (1:4M), or both
    /// [default: 1:4M]
    #[arg(long, value_name = "SIZES", value_parser = sizes, conflicts_with_all = ["from_netgauge", "tcom"])]
    pub sizes: Option<List<u64>>,
    /// Timed iterations per size (and PRTT repetitions for LogGP) [default: OSU-like]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), conflicts_with_all = ["from_netgauge", "tcom"])]
    pub iters: Option<u64>,
    /// Skip the LogGP benchmark (the profile then has Tcom only)
    #[arg(long, conflicts_with_all = ["from_netgauge", "tcom"])]
    pub no_loggp: bool,
    /// Use a `commperf serve` at HOST:PORT as the other end instead of starting one locally
    #[arg(long, value_name = "HOST:PORT", requires = "token", conflicts_with_all = ["from_netgauge", "tcom"])]
    pub peer: Option<String>,
    /// The session token `commperf serve` printed
    #[arg(long, value_name = "TOKEN", requires = "peer")]
    pub token: Option<String>,
    /// Pin the local end to CPU A and the peer to CPU B [default: as `bench` places them]
    #[arg(long, value_name = "A,B", value_parser = crate::cli::cpu_pair, conflicts_with_all = ["from_netgauge", "tcom"])]
    pub cpus: Option<(usize, usize)>,
    /// Give up when the peer makes no progress for this many seconds
    #[arg(long, value_name = "SECS", value_parser = crate::cli::seconds, default_value = "60")]
    pub timeout: Duration,
    /// Write the profile JSON to FILE [default: stdout]
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// `--tcom`: the parsed pieces and the text they came from.
#[derive(Debug, Clone, PartialEq)]
pub struct HandTcom {
    pub pieces: Vec<TcomPiece>,
    pub text: String,
}

fn transport(s: &str) -> Result<TransportKind, String> {
    crate::cli::transport_in(s, &crate::cli::calibrate_transports(), false)
}

fn transport_help() -> String {
    format!(
        "Measure this transport: {}",
        crate::cli::names(&crate::cli::calibrate_transports())
    )
}

fn tcom_spec(s: &str) -> Result<HandTcom, String> {
    calibrate::parse_tcom(s)
        .map(|pieces| HandTcom {
            pieces,
            text: s.to_string(),
        })
        .map_err(|e| format!("{e} (expected {TCOM_SYNTAX})"))
}

/// `--sizes`, also accepting the IEC spellings `KiB`, `MiB`, `GiB` (and a trailing `B`).
fn sizes(s: &str) -> Result<List<u64>, String> {
    let norm = s
        .split(',')
        .map(|p| {
            let p = p.trim();
            for (long, short) in [("KiB", "K"), ("MiB", "M"), ("GiB", "G")] {
                if let Some(n) = p.strip_suffix(long) {
                    return format!("{n}{short}");
                }
            }
            p.strip_suffix('B').unwrap_or(p).to_string()
        })
        .collect::<Vec<_>>()
        .join(",");
    parse_sizes(&norm).map(List).map_err(|e| e.to_string())
}

/// What a validated command line asks for.
#[derive(Debug)]
pub enum Job {
    Measure(Box<CalibrateConfig>),
    Netgauge(PathBuf),
    Hand(HandTcom),
}

impl CalibrateArgs {
    pub fn to_job(&self) -> Result<Job, ConfigError> {
        if let Some(f) = &self.from_netgauge {
            return Ok(Job::Netgauge(f.clone()));
        }
        if let Some(h) = &self.tcom {
            return Ok(Job::Hand(h.clone()));
        }
        let transport = self.transport.ok_or_else(|| {
            ConfigError::Transport("give --transport, --from-netgauge or --tcom".into())
        })?;
        let launcher = match (&self.peer, &self.token) {
            (Some(addr), Some(token)) => Launcher::Peer {
                addr: addr.clone(),
                token: token.clone(),
            },
            _ => Launcher::Local {
                exe: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("commperf")),
            },
        };
        let mut cfg = CalibrateConfig::new(
            transport,
            self.sizes.as_ref().map(|s| s.0.clone()),
            self.iters,
            !self.no_loggp,
            launcher,
        )?;
        cfg.bench.cpus = self.cpus;
        cfg.bench.idle_timeout = self.timeout;
        cfg.bench.validate()?;
        Ok(Job::Measure(Box::new(cfg)))
    }
}

/// Runs the job and writes the profile.
pub fn run(args: &CalibrateArgs, job: Job) -> Result<()> {
    crate::output::preflight(&[("-o", args.out.as_deref())])?;
    let profile: Profile = match job {
        Job::Measure(cfg) => {
            if let Some(w) = cfg.bench.placement_warning() {
                crate::say(&format!("commperf: warning: {w}"));
            }
            let mut progress = crate::progress::RunProgress::new();
            calibrate::run(&cfg, &mut progress).context("calibration failed")?
        }
        Job::Netgauge(path) => commperf_predict::netgauge::profile_from_file(&path)?,
        Job::Hand(h) => calibrate::hand_profile(h.pieces, &h.text),
    };
    let json = serde_json::to_string_pretty(&profile)? + "\n";
    match &args.out {
        Some(path) => {
            crate::output::write_atomically(path, json.as_bytes())?;
            crate::say(&format!("commperf: wrote {}", path.display()));
        }
        None => crate::output::print(&json)?,
    }
    crate::say(calibrate::summary(&profile).trim_end());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{one_line, Cli, Command};
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<CalibrateArgs, clap::Error> {
        let mut argv = vec!["commperf", "calibrate"];
        argv.extend(args);
        match Cli::try_parse_from(&argv)?.command {
            Command::Calibrate(c) => Ok(*c),
            _ => panic!("calibrate expected"),
        }
    }

    #[test]
    fn options_become_a_calibration() {
        let a = parse(&["-t", "shm", "--sizes", "8,1KiB,64KiB,1MiB", "--iters", "20"]).unwrap();
        let Job::Measure(c) = a.to_job().unwrap() else {
            panic!("measure expected")
        };
        assert_eq!(c.bench.sizes, [8, 1024, 65536, 1 << 20]);
        assert_eq!(c.bench.iterations, Some(20));
        assert_eq!(c.transport, TransportKind::Shm);
        assert_eq!(c.bench.benchmarks.len(), 2, "latency and loggp");
        let a = parse(&["-t", "tcp", "--no-loggp", "--peer", "h:1", "--token", "x"]).unwrap();
        let Job::Measure(c) = a.to_job().unwrap() else {
            panic!("measure expected")
        };
        assert_eq!(c.bench.benchmarks.len(), 1);
        assert!(matches!(c.bench.launcher, Launcher::Peer { .. }));
        let a = parse(&["--tcom", "0-:5us+0.8ns/B"]).unwrap();
        assert!(matches!(a.to_job().unwrap(), Job::Hand(_)));
    }

    #[test]
    fn bad_command_lines_are_refused() {
        for (args, needle) in [
            (vec![], "required arguments were not provided"),
            (
                vec!["-t", "shm", "--tcom", "0-:1us+1ns/B"],
                "cannot be used with",
            ),
            (vec!["--tcom", "0-:1us"], "positive slope"),
            (vec!["--tcom", "0-5:1us+1ns/B"], "open-ended"),
            (
                vec!["--from-netgauge", "f", "--sizes", "8"],
                "cannot be used with",
            ),
            (vec!["-t", "shm", "--sizes", "8KB:x"], "not a size"),
        ] {
            let e = parse(&args).unwrap_err();
            let line = one_line(&e);
            assert!(line.contains(needle), "{args:?}: {line}");
        }
        let a = parse(&["-t", "shm", "--sizes", "8"]).unwrap();
        let e = a.to_job().unwrap_err().to_string();
        assert!(e.contains("at least two sizes"), "{e}");
    }
}
