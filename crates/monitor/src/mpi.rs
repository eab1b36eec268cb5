//! A monitored MPI program's run directory: the per-rank files the interposer wrote
//! (`crates/pmpi`), read into the plain summary and into a [`MonitorRun`] whose histograms hold
//! every matched message, so that `monitor report` and the signature treat an MPI program as
//! they treat commperf's own workloads; the environment that makes the interposer record.
//!
//! Why here and not in the interposer's crate: the interposer records and reads its own files;
//! turning them into the monitor's run (histograms, clocks, signature) is the monitor's.

use crate::run::{ClockReport, RankClock, Workload, RUN_KIND};
use crate::{Histograms, MonitorRun, MsgKind, MsgRecord, Protocol, RUN_SCHEMA_VERSION};
use commperf_pmpi::{ReadError, Summary, TOP_SITES};
use std::path::Path;

/// What the ranks of a monitored program are given (besides `LD_PRELOAD`): where to write
/// their files, the program's tag, and whether recording starts off (MPI_Pcontrol(1) turns it
/// on).
pub fn recording_vars(dir: &Path, tag: &str, start_disabled: bool) -> Vec<(String, String)> {
    let mut vars = vec![
        ("COMMPERF_PMPI_DIR".to_string(), dir.display().to_string()),
        ("COMMPERF_PMPI_TAG".to_string(), tag.to_string()),
    ];
    if start_disabled {
        vars.push(("COMMPERF_PMPI_START".into(), "off".into()));
    }
    vars
}

/// Reads an MPI run's files (always the rank files, the record of truth: a damaged one is named)
/// into the plain summary and a monitor run whose histograms hold every matched message.
pub fn load(dir: &Path) -> Result<(Summary, MonitorRun), ReadError> {
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
