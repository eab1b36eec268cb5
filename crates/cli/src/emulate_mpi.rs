//! `commperf emulate [--o D] [--g D] [--G D] [--L D] -- mpirun -np 4 ./app`: an unmodified MPI
//! program run with seed 001's LogGP knobs inside the interposer `monitor` preloads (the knobs
//! themselves are C, crates/pmpi/csrc/emulate.c, applied on point-to-point calls).
//!
//! Why its own module beside `emulate` (the transport calibration): it is the MPI counterpart,
//! sharing the launch (`preload`) with `monitor`, and [`run_emulated`] is the one entry point a
//! sensitivity sweep calls once per setting. The knobs travel to the ranks as
//! `COMMPERF_EMULATE=o=…ns,g=…ns,G=…ns,L=…ns`, validated here first by the emulate crate's rules
//! (negative, over 1 s or malformed values refused naming the knob and the range). Collectives
//! are left untouched: each rank counts them (calls and its bytes) beside the point-to-point
//! traffic the knobs did touch, and the verb prints the share the knobs did not reach.

use anyhow::{bail, Context, Result};
use clap::Args;
use commperf_emulate::{parse_duration_ns, Knob, Knobs};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;

fn knob_value(knob: Knob, s: &str) -> Result<f64, String> {
    parse_duration_ns(knob, s).map_err(|e| e.to_string())
}
fn o_value(s: &str) -> Result<f64, String> {
    knob_value(Knob::O, s)
}
fn g_value(s: &str) -> Result<f64, String> {
    knob_value(Knob::LowerG, s)
}
fn big_g_value(s: &str) -> Result<f64, String> {
    knob_value(Knob::UpperG, s)
}
fn l_value(s: &str) -> Result<f64, String> {
    knob_value(Knob::L, s)
}

/// The knobs and the command of `commperf emulate [KNOBS] -- COMMAND` (flattened into
/// `emulate::EmulateArgs`, beside its subcommands).
#[derive(Debug, Args, Default)]
pub struct RunArgs {
    /// Added overhead o (e.g. 5us): each sender spins this long before handing a message to
    /// MPI, each receiver after a receive completes
    #[arg(long = "o", value_name = "DURATION", value_parser = o_value, allow_hyphen_values = true)]
    pub o: Option<f64>,
    /// Added gap g (e.g. 2us): successive sends of one rank at least this much further apart
    #[arg(long = "g", value_name = "DURATION", value_parser = g_value, allow_hyphen_values = true)]
    pub g: Option<f64>,
    /// Added Gap per byte G, in ns per byte (e.g. 0.5 or 0.5ns): a message of s bytes occupies
    /// its sender G·s longer
    #[arg(long = "G", value_name = "NS_PER_BYTE", value_parser = big_g_value, allow_hyphen_values = true)]
    pub big_g: Option<f64>,
    /// Added latency L (e.g. 20us): a message is not delivered before its arrival + L (a delay
    /// queue at the receiver; ranks on one host)
    #[arg(long = "L", value_name = "DURATION", value_parser = l_value, allow_hyphen_values = true)]
    pub l: Option<f64>,
    /// Use this interposer instead of the one matching the program (openmpi, mpich)
    #[arg(long, value_name = "MPI")]
    pub interposer: Option<String>,
    /// Print the outcome as JSON on stdout (the program's own output is left as it is)
    #[arg(long)]
    pub json: bool,
    /// The MPI launch command (mpirun …) or a singleton MPI program
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

impl RunArgs {
    pub fn knobs(&self) -> Knobs {
        Knobs {
            o_ns: self.o.unwrap_or(0.0),
            g_ns: self.g.unwrap_or(0.0),
            gap_per_byte_ns: self.big_g.unwrap_or(0.0),
            l_ns: self.l.unwrap_or(0.0),
        }
    }
}

/// What the knobs did and did not touch, summed over the ranks that reached MPI_Finalize.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub(crate) struct Untouched {
    /// Ranks that wrote their counts (reached MPI_Finalize with a knob set).
    pub ranks: u64,
    /// Point-to-point messages sent under the knobs, and their bytes.
    pub p2p_messages: u64,
    pub p2p_bytes: u64,
    /// Point-to-point receives delivered under the knobs.
    pub p2p_receives: u64,
    /// Collective calls (left untouched by the knobs) and the ranks' own bytes in them.
    pub collective_calls: u64,
    pub collective_bytes: u64,
    /// Share of calls (sends + collective calls) and of bytes the knobs did not touch, percent.
    pub untouched_calls_percent: f64,
    pub untouched_bytes_percent: f64,
    /// Receives whose sender stamp was missing (L fell back to the completion time).
    pub unstamped_receives: u64,
    /// Irecvs the per-thread table could not track (their completion was not emulated).
    pub untracked_requests: u64,
    /// Time the L delay queue held messages, and the g/G pacing made senders wait, ns.
    pub held_ns: f64,
    pub paced_ns: f64,
}

impl Untouched {
    fn add(&mut self, key: &str, v: f64) {
        match key {
            "p2p_sent" => self.p2p_messages += v as u64,
            "p2p_sent_bytes" => self.p2p_bytes += v as u64,
            "p2p_recv" => self.p2p_receives += v as u64,
            "coll_calls" => self.collective_calls += v as u64,
            "coll_bytes" => self.collective_bytes += v as u64,
            "unstamped" => self.unstamped_receives += v as u64,
            "untracked" => self.untracked_requests += v as u64,
            "hold_ns" => self.held_ns += v,
            "pace_ns" => self.paced_ns += v,
            _ => {}
        }
    }

    fn finish(&mut self) {
        let pct = |part: u64, other: u64| {
            if part + other == 0 {
                0.0
            } else {
                100.0 * part as f64 / (part + other) as f64
            }
        };
        self.untouched_calls_percent = pct(self.collective_calls, self.p2p_messages);
        self.untouched_bytes_percent = pct(self.collective_bytes, self.p2p_bytes);
    }

    /// Sums the ranks' `rank-N.emu` files in `dir` (each `key value` per line).
    fn read(dir: &Path) -> Result<Untouched> {
        let mut u = Untouched::default();
        let rd = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
        for e in rd.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if !(name.starts_with("rank-") && name.ends_with(".emu")) {
                continue;
            }
            let text = std::fs::read_to_string(e.path())
                .with_context(|| format!("reading {}", e.path().display()))?;
            u.ranks += 1;
            for line in text.lines() {
                if let Some((k, v)) = line.split_once(' ') {
                    let v: f64 = v
                        .trim()
                        .parse()
                        .with_context(|| format!("{}: bad line {line:?}", e.path().display()))?;
                    u.add(k, v);
                }
            }
        }
        u.finish();
        Ok(u)
    }
}

/// One emulated run: what a sweep needs per setting.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RunOutcome {
    /// The knobs in ns (G in ns per byte).
    pub o_ns: f64,
    pub g_ns: f64,
    #[serde(rename = "G_ns_per_byte")]
    pub gap_per_byte_ns: f64,
    #[serde(rename = "L_ns")]
    pub l_ns: f64,
    /// Wall time of the whole command (launch included), seconds.
    pub wall_s: f64,
    /// The command's exit code (None: killed by a signal).
    pub exit_code: Option<i32>,
    pub success: bool,
    /// None when every knob is zero (the interposer then passes every call straight through).
    pub untouched: Option<Untouched>,
}

/// The `COMMPERF_EMULATE` value: every knob, in ns (G in ns per byte), exact to the ns.
pub(crate) fn env_value(k: &Knobs) -> String {
    format!(
        "o={}ns,g={}ns,G={}ns,L={}ns",
        k.o_ns, k.g_ns, k.gap_per_byte_ns, k.l_ns
    )
}

/// A private run directory (the interposer, the L side band, the per-rank counts), removed on
/// drop.
struct RunDir(PathBuf);

impl RunDir {
    fn new() -> Result<RunDir> {
        let base = std::env::temp_dir();
        for i in 0..100u32 {
            let d = base.join(format!("commperf-emulate-{}-{i}", std::process::id()));
            match std::fs::create_dir(&d) {
                Ok(()) => return Ok(RunDir(d)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e).with_context(|| format!("cannot create {}", d.display())),
            }
        }
        bail!("cannot create a run directory in {}", base.display())
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `command` (an MPI launch or a singleton MPI program) under the interposer with `knobs`,
/// and reports its wall time, exit status and what the knobs did not touch. `interposer`
/// overrides the MPI found from the command. The program's output goes to this process's
/// stdout/stderr. A failing program is an outcome (`success: false`), not an error; errors are
/// what prevents running it (bad knobs, no interposer, no such command).
pub(crate) fn run_emulated(
    knobs: &Knobs,
    command: &[String],
    interposer: Option<&str>,
) -> Result<RunOutcome> {
    knobs.validate()?;
    if command.is_empty() {
        bail!("no command to emulate: commperf emulate --L 20us -- mpirun -np 4 ./app");
    }
    let plan = crate::preload::plan(command, interposer)?;
    let dir = RunDir::new()?;
    let preload = plan.install(&dir.0.join(".lib"))?;
    let vars = vec![
        ("LD_PRELOAD".to_string(), preload),
        ("COMMPERF_EMULATE".to_string(), env_value(knobs)),
        (
            "COMMPERF_EMULATE_DIR".to_string(),
            dir.0.display().to_string(),
        ),
    ];
    let mut cmd = plan.command(command, &vars);
    let t0 = Instant::now();
    let status = cmd
        .status()
        .with_context(|| format!("cannot run {}", command[0]))?;
    let wall = t0.elapsed();
    let untouched = if knobs.is_zero() {
        None
    } else {
        Some(Untouched::read(&dir.0)?)
    };
    Ok(RunOutcome {
        o_ns: knobs.o_ns,
        g_ns: knobs.g_ns,
        gap_per_byte_ns: knobs.gap_per_byte_ns,
        l_ns: knobs.l_ns,
        wall_s: wall.as_secs_f64(),
        exit_code: status.code(),
        success: status.success(),
        untouched,
    })
}

fn describe(r: &RunOutcome) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = write!(
        o,
        "commperf: emulated o=+{} ns g=+{} ns G=+{} ns/B L=+{} ns: wall time {:.3} s, ",
        r.o_ns, r.g_ns, r.gap_per_byte_ns, r.l_ns, r.wall_s
    );
    let _ = match r.exit_code {
        Some(c) => write!(o, "exit status {c}"),
        None => write!(o, "killed by a signal"),
    };
    match &r.untouched {
        None => o.push_str("\ncommperf: every knob is zero: the program ran untouched"),
        Some(u) => {
            let _ = write!(
                o,
                "\ncommperf: knobs applied to {} point-to-point messages ({} B) on {} rank(s); \
                 not touched: {} collective calls ({} B) = {:.1} % of calls, {:.1} % of bytes",
                u.p2p_messages,
                u.p2p_bytes,
                u.ranks,
                u.collective_calls,
                u.collective_bytes,
                u.untouched_calls_percent,
                u.untouched_bytes_percent
            );
            if u.unstamped_receives > 0 || u.untracked_requests > 0 {
                let _ = write!(
                    o,
                    "\ncommperf: {} receive(s) without their sender's stamp (L from the completion \
                     time), {} Irecv(s) not tracked",
                    u.unstamped_receives, u.untracked_requests
                );
            }
        }
    }
    o
}

/// `commperf emulate [KNOBS] -- COMMAND`: exits with the program's status.
pub fn run(a: &RunArgs) -> Result<()> {
    if a.command.is_empty() {
        bail!(
            "say what to emulate: `commperf emulate --L 20us -- mpirun -np 4 ./app`, or \
             `commperf emulate calibrate …` (the knobs on commperf's transports)"
        );
    }
    let r = run_emulated(&a.knobs(), &a.command, a.interposer.as_deref())?;
    let text = describe(&r);
    if a.json {
        crate::say(&text);
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        crate::say(&text);
    }
    if !r.success {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        // The program's own status, so scripts see what the program said.
        std::process::exit(r.exit_code.unwrap_or(1).clamp(1, 255));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_value_carries_every_knob_in_ns() {
        let k = Knobs {
            o_ns: 5000.0,
            g_ns: 0.0,
            gap_per_byte_ns: 0.5,
            l_ns: 20000.0,
        };
        assert_eq!(env_value(&k), "o=5000ns,g=0ns,G=0.5ns,L=20000ns");
    }

    #[test]
    fn counts_are_summed_and_shares_computed() {
        let d = RunDir::new().unwrap();
        std::fs::write(
            d.0.join("rank-0.emu"),
            "p2p_sent 30\np2p_sent_bytes 3000\ncoll_calls 10\ncoll_bytes 1000\nhold_ns 5\n",
        )
        .unwrap();
        std::fs::write(
            d.0.join("rank-1.emu"),
            "p2p_sent 30\np2p_sent_bytes 3000\ncoll_calls 20\ncoll_bytes 3000\nhold_ns 7\n",
        )
        .unwrap();
        let u = Untouched::read(&d.0).unwrap();
        assert_eq!(u.ranks, 2);
        assert_eq!(u.p2p_messages, 60);
        assert_eq!(u.collective_calls, 30);
        assert_eq!(u.held_ns, 12.0);
        // 30 of 90 calls, 4000 of 10000 bytes.
        assert!((u.untouched_calls_percent - 100.0 / 3.0).abs() < 1e-9);
        assert!((u.untouched_bytes_percent - 40.0).abs() < 1e-9);
    }
}
