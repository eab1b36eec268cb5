//! `commperf monitor [-o DIR] -- mpirun -np 4 ./app`: the MPI side of the monitor verb. Runs the
//! program under the interposer (the launch, shared with `emulate`, is in `preload`), and prints
//! what was recorded. Until the
//! `monitor` crate's histograms and signatures are merged in, the output is a per-pair, per-size
//! table of message counts and mean stage times, and `DIR/summary.json`.

use anyhow::{bail, Context, Result};
use commperf_monitor::run::{ClockReport, RankClock, Workload, RUN_KIND};
use commperf_monitor::{
    Histograms, MonitorRun, MsgKind, MsgRecord, Protocol, Signature, TableFormat,
    RUN_SCHEMA_VERSION,
};
use commperf_pmpi::{Summary, TOP_SITES};
use std::path::{Path, PathBuf};

/// What `commperf monitor [OPTIONS] -- COMMAND` asks for (parsed by `monitor::MonitorArgs`).
#[derive(Debug)]
pub struct MonitorArgs {
    /// Directory for the per-rank monitor files and summary.json (default:
    /// commperf-monitor-<unix time> in the current directory)
    pub dir: Option<PathBuf>,
    /// Program tag recorded with every rank (two programs monitored at once stay apart)
    pub tag: String,
    /// Start with monitoring off; the program turns it on with MPI_Pcontrol(1)
    pub start_disabled: bool,
    /// Use this interposer instead of the one matching the program (openmpi, mpich)
    pub interposer: Option<String>,
    /// Also write DIR/trace.txt (for `predict`), DIR/timeline.json (Chrome trace events) and
    /// the OTF2 archive DIR/traces.otf2 (Score-P, Vampir, Scalasca; `predict` reads it too)
    pub trace: bool,
    /// The MPI launch command (mpirun …) or a singleton MPI program
    pub command: Vec<String>,
}

/// Removes an earlier run's rank files from a run directory: an earlier run's rank 7 must not
/// join a 4-rank run.
pub(crate) fn clear_rank_files(dir: &Path) -> Result<()> {
    for e in std::fs::read_dir(dir)?.flatten() {
        let n = e.file_name();
        let n = n.to_string_lossy();
        if n.starts_with("rank-") && n.ends_with(".cpmpi") {
            std::fs::remove_file(e.path())
                .with_context(|| format!("cannot remove {}", e.path().display()))?;
        }
    }
    Ok(())
}

/// A run directory for the interposer's rank files ([`crate::output::OutDir`]), cleared of an
/// earlier run's.
pub(crate) fn prepare_dir(flag: &str, dir: &Path) -> Result<crate::output::OutDir> {
    let d = crate::output::OutDir::create(flag, dir)?;
    clear_rank_files(d.path())?;
    Ok(d)
}

pub fn run(a: &MonitorArgs) -> Result<()> {
    if a.command.is_empty() {
        bail!("no command to monitor: commperf monitor [-o DIR] -- mpirun -np 4 ./app");
    }
    let dir = a.dir.clone().unwrap_or_else(|| {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        PathBuf::from(format!("commperf-monitor-{t}"))
    });
    // Everything that can refuse the run does so before anything is created: the outputs
    // first (reported now, before a long run, not at its end), then the command.
    crate::output::OutDir::check("-o", &dir)?;
    crate::output::preflight(&[])?;
    let plan = commperf_launch::preload::plan(&a.command, a.interposer.as_deref())?;
    let preload = plan.preload()?;
    let out = prepare_dir("-o", &dir)?;
    let dir = out.path().to_path_buf();
    let mut vars = vec![
        ("LD_PRELOAD".to_string(), preload),
        ("COMMPERF_PMPI_DIR".to_string(), dir.display().to_string()),
        ("COMMPERF_PMPI_TAG".to_string(), a.tag.clone()),
    ];
    if a.start_disabled {
        vars.push(("COMMPERF_PMPI_START".into(), "off".into()));
    }
    let mut cmd = plan.command(&a.command, &vars);
    crate::say(&format!(
        "commperf: monitoring with {} into {}",
        plan.flavour.file_name(),
        dir.display()
    ));
    let status = cmd
        .status()
        .with_context(|| format!("cannot run {}", a.command[0]))?;
    if !is_mpi_dir(&dir) {
        // Nothing was recorded: the directory this run created goes with it.
        if status.success() {
            bail!(
                "{} left no monitor data: no rank called MPI_Init under the interposer (is it an \
                 MPI program, started by this command?)",
                a.command.join(" ")
            );
        }
        bail!(
            "{} exited with {status} before any rank recorded anything",
            a.command[0]
        );
    }
    let mut r = report(&dir, Some(&status));
    // A run cut short still gets its trace: what was recorded is replayable, the rest is
    // counted as left out.
    if a.trace && r.is_ok() {
        r = write_trace(
            &dir,
            Some(&dir.join("trace.txt")),
            Some(&dir.join("timeline.json")),
            Some(&dir.join("trace-stats.json")),
            Some(&dir),
        );
    }
    if !status.success() {
        r?;
        bail!(
            "{} exited with {status}; the monitor data above covers the run up to its last flush",
            a.command[0]
        );
    }
    r
}

pub(crate) fn report(dir: &Path, status: Option<&std::process::ExitStatus>) -> Result<()> {
    let (s, mon) = load(dir)?;
    let json = dir.join("summary.json");
    std::fs::write(&json, serde_json::to_string_pretty(&s)?)
        .with_context(|| format!("cannot write {}", json.display()))?;
    // The same run file `monitor run` writes, so `monitor report DIR` renders either alike.
    let run_json = dir.join("run.json");
    std::fs::write(&run_json, mon.to_json())
        .with_context(|| format!("cannot write {}", run_json.display()))?;
    print!("{}", table(&s));
    println!();
    print!(
        "{}",
        Signature::new(&mon.histograms, None, None).render_table(TableFormat::Text)
    );
    if s.cut_short {
        println!(
            "run cut short: rank(s) {:?} never reached MPI_Finalize{}; data up to their last flush",
            s.unfinished_ranks,
            if s.missing_ranks.is_empty() {
                String::new()
            } else {
                format!(", rank(s) {:?} left no file", s.missing_ranks)
            }
        );
    }
    if let Some(st) = status {
        if !st.success() && !s.cut_short {
            println!("the program failed ({st}) after every rank finalized");
        }
    }
    println!("summary: {}", json.display());
    Ok(())
}

/// Converts an MPI run's directory into a trace for `predict`, a Chrome timeline and/or an OTF2
/// archive (`OTF2_DIR/traces.otf2`; a build without libotf2 says so and writes the rest), and
/// says what was written and what was left out.
pub fn write_trace(
    dir: &Path,
    trace: Option<&Path>,
    timeline: Option<&Path>,
    stats: Option<&Path>,
    otf2: Option<&Path>,
) -> Result<()> {
    let run = commperf_pmpi::read_dir(dir)?;
    let out = commperf_pmpi::to_trace(&run);
    if let Some(p) = trace {
        crate::output::write_atomically(p, out.text.as_bytes())?;
        crate::say(&format!("commperf: wrote {}", p.display()));
    }
    if let Some(p) = timeline {
        crate::output::write_atomically(p, out.chrome.as_bytes())?;
        crate::say(&format!("commperf: wrote {}", p.display()));
    }
    if let Some(p) = stats {
        let json = serde_json::to_string_pretty(&out.stats)? + "\n";
        crate::output::write_atomically(p, json.as_bytes())?;
    }
    if let Some(d) = otf2 {
        match commperf_otf2::write_run(&run, d) {
            Ok((anchor, _)) => crate::say(&format!("commperf: wrote {}", anchor.display())),
            // The own trace and the timeline need no C library: they are still written.
            Err(e @ commperf_otf2::Otf2Error::Missing(_)) => {
                crate::say(&format!("commperf: OTF2 not written: {e}"))
            }
            Err(e) => return Err(e).context("writing the OTF2 archive"),
        }
    }
    crate::say(&format!("commperf: {}", out.stats.describe()));
    Ok(())
}

/// Whether `dir` holds the per-rank files of a monitored MPI program.
pub fn is_mpi_dir(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut it| {
        it.any(|e| {
            e.ok().is_some_and(|e| {
                let n = e.file_name();
                let n = n.to_string_lossy();
                n.starts_with("rank-") && n.ends_with(".cpmpi")
            })
        })
    })
}

/// Reads an MPI run's files (always the rank files, the record of truth: a damaged one is named)
/// into the plain summary and a monitor run whose histograms hold every matched message.
pub fn load(dir: &Path) -> Result<(Summary, MonitorRun)> {
    let run = commperf_pmpi::read_dir(dir)?;
    let s = commperf_pmpi::summarize(&run);
    let mon = monitor_run(&run, &s);
    Ok((s, mon))
}

/// The MPI run as a monitor run: each matched message, with its four stages, into the stage
/// histograms keyed by sender, receiver, call and program tag (the tag's index among the run's
/// tags); each rank's clock as measured at MPI_Init and MPI_Finalize.
fn monitor_run(run: &commperf_pmpi::Run, s: &Summary) -> MonitorRun {
    let tags = &s.program_tags;
    let program_of: Vec<u32> = run
        .ranks
        .iter()
        .map(|r| {
            tags.iter()
                .position(|t| *t == r.header.program_tag)
                .unwrap_or(0) as u32
        })
        .collect();
    let rank_index = |rank: u32| run.ranks.iter().position(|r| r.header.rank == rank);
    let mut h = Histograms::new();
    let m = commperf_pmpi::match_messages(run);
    let mut sizes: Vec<u64> = Vec::new();
    for msg in &m.messages {
        let stage = |v: f64| v.is_finite().then(|| v.round() as i64);
        h.record(&MsgRecord {
            src: msg.src,
            dst: msg.dst,
            bytes: msg.bytes,
            // MPI does not say which protocol a message took.
            kind: MsgKind::p2p(Protocol::Unknown, msg.send_call.name()),
            program: rank_index(msg.src).map_or(0, |i| program_of[i]),
            source_ns: stage(msg.source_ns),
            net_ns: stage(msg.net_ns),
            destination_ns: stage(msg.destination_ns),
            late_sender_wait_ns: stage(msg.late_sender_ns),
        });
        sizes.push(msg.bytes);
    }
    sizes.sort_unstable();
    sizes.dedup();
    let ranks = run
        .ranks
        .iter()
        .map(|r| {
            let (first, last) = (r.clocks.first(), r.clocks.last());
            let drift = match (first, last) {
                (Some(a), Some(b)) if b.local_ns > a.local_ns => {
                    (b.offset_ns - a.offset_ns) as f64 / (b.local_ns - a.local_ns) as f64
                }
                _ => 0.0,
            };
            RankClock {
                rank: r.header.rank,
                offset_ns: last.map_or(0.0, |c| c.offset_ns as f64),
                drift_ppm: drift * 1e6,
                error_bound_ns: r.clocks.iter().map(|c| c.err_ns).max().unwrap_or(0) as f64,
                syncs: r.clocks.len() as u32,
            }
        })
        .collect();
    MonitorRun {
        schema_version: RUN_SCHEMA_VERSION,
        kind: RUN_KIND.to_string(),
        created_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        complete: !s.cut_short,
        machine: None,
        workload: Workload {
            pattern: "mpi-program".into(),
            transport: s.mpi_library.lines().next().unwrap_or("").to_string(),
            mode: String::new(),
            sizes_bytes: sizes,
            iterations: m.messages.len() as u64,
        },
        clock: ClockReport {
            source: run
                .ranks
                .first()
                .map_or_else(String::new, |r| r.header.clock.clone()),
            syncs: Vec::new(),
            ranks,
        },
        reference_one_way_us: Vec::new(),
        monitored_one_way_us: Vec::new(),
        histograms: h,
        trace: None,
        baseline: None,
    }
}

/// The plain table: calls per rank, then matched messages per pair and size bin.
pub fn table(s: &Summary) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(o, "MPI: {}", s.mpi_library.lines().next().unwrap_or(""));
    let _ = writeln!(
        o,
        "ranks {}  matched messages {}  unmatched sends {}  unmatched receives {}  drops {}  clock error ≤ {} ns  drift ≤ {:.0} ppb",
        s.ranks, s.matched_messages, s.unmatched_sends, s.unmatched_recvs, s.drops, s.clock_error_ns, s.max_drift_ppb
    );
    if !s.functions.is_empty() {
        let _ = writeln!(
            o,
            "\nMPI functions (time in the call; bytes of the send and receive buffer arguments)\n{:>5} {:<28} {:>10} {:>12} {:>11} {:>11} {:>11} {:>14} {:>14}",
            "rank", "function", "count", "total ms", "min µs", "mean µs", "max µs", "sent B", "received B"
        );
        for f in &s.functions {
            let _ = writeln!(
                o,
                "{:>5} {:<28} {:>10} {:>12.3} {:>11.3} {:>11.3} {:>11.3} {:>14} {:>14}",
                f.rank,
                f.call,
                f.count,
                f.estimated_time_ns / 1e6,
                f.min_ns as f64 / 1e3,
                f.mean_ns / 1e3,
                f.max_ns as f64 / 1e3,
                f.sent_bytes,
                f.received_bytes
            );
        }
    }
    if !s.sites.is_empty() {
        let _ = writeln!(
            o,
            "\ncall sites with the most time in MPI (all ranks; bytes per call){}{}\n{:<24} {:>8} {:>10} {:>11} {:>11} {:>11} {:>12}  location",
            if s.sites.len() > TOP_SITES {
                format!(
                    " (the first {TOP_SITES} of {}; all in summary.json)",
                    s.sites.len()
                )
            } else {
                String::new()
            },
            if s.site_overflow_calls > 0 {
                format!(" ({} calls from sites not kept)", s.site_overflow_calls)
            } else {
                String::new()
            },
            "function", "ranks", "count", "total ms", "mean µs", "sent B", "received B"
        );
        for c in s.sites.iter().take(TOP_SITES) {
            let per = |b: u64| b.checked_div(c.count).unwrap_or(0);
            let _ = writeln!(
                o,
                "{:<24} {:>8} {:>10} {:>11.3} {:>11.3} {:>11} {:>12}  {}",
                c.call,
                c.ranks,
                c.count,
                c.estimated_time_ns / 1e6,
                c.mean_ns / 1e3,
                per(c.sent_bytes),
                per(c.received_bytes),
                c.location
            );
        }
    }
    let _ = writeln!(
        o,
        "\nrecorded operations (bytes as recorded: sends the message, receives what arrived, collectives the rank's send buffer)\n{:>5} {:<26} {:>10} {:>14}",
        "rank", "operation", "count", "bytes"
    );
    for c in &s.calls {
        let _ = writeln!(
            o,
            "{:>5} {:<26} {:>10} {:>14}",
            c.rank, c.call, c.count, c.bytes
        );
    }
    let _ = writeln!(
        o,
        "\n{:>4} {:>4} {:<18} {:<18} {:>10} {:>8} {:>11} {:>11} {:>11} {:>11}",
        "src",
        "dst",
        "send",
        "recv",
        "size ≤ B",
        "count",
        "source µs",
        "net µs",
        "dest µs",
        "late-snd µs"
    );
    for p in &s.pairs {
        let _ = writeln!(
            o,
            "{:>4} {:>4} {:<18} {:<18} {:>10} {:>8} {:>11.2} {:>11.2} {:>11.2} {:>11.2}",
            p.src,
            p.dst,
            p.send_call,
            p.recv_call,
            p.size_bin,
            p.count,
            p.mean_source_ns / 1e3,
            p.mean_net_ns / 1e3,
            p.mean_destination_ns / 1e3,
            p.mean_late_sender_ns / 1e3
        );
    }
    if !s.all_pairs.is_empty() {
        let _ = writeln!(o);
    }
    for a in &s.all_pairs {
        let _ = writeln!(o, "{}", all_pairs_line(a));
    }
    o
}

/// One line of the all-pairs clock check: the spread of the ordered pairs' median net
/// latencies for one size, beside what the clocks' error bounds alone could make of it.
pub fn all_pairs_line(a: &commperf_pmpi::AllPairs) -> String {
    format!(
        "all-pairs spread {} B: {:.2} µs over {} ordered pairs (median net {:.2} … {:.2} µs); clock error bound allows {:.2} µs",
        a.bytes,
        a.spread_ns / 1e3,
        a.pairs.len(),
        a.min_median_ns / 1e3,
        a.max_median_ns / 1e3,
        a.clock_bound_ns / 1e3
    )
}
