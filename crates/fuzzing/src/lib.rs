//! One function per reader of outside input: the fuzz targets of `fuzz/` (cargo-fuzz,
//! libFuzzer) call these, and so does this crate's `tests/corpus.rs`, which replays every seed
//! and every regression input on stable Rust in the normal test suite.
//!
//! [`run`] feeds bytes to a reader the way the command line does (text readers first check the
//! bytes are UTF-8, as `commperf_core::read_text` does) and returns the reader's error message,
//! or `Ok` when the input was read. It panics only when a reader broke its promise: a panic
//! inside the reader, or a property checked here that a read input must have (an error pointing
//! outside the input, a workload whose dependencies leave their rank, a route over a link that
//! does not exist, a result file that does not survive writing and reading back). A panic is
//! therefore always a bug, and libFuzzer reports it as a crash.

use commperf_predict::parse::{parse_str, ParseError, ParseOptions, TraceFormat};
use commperf_predict::topology::{Dot, Network, SimGridPlatform};
use commperf_predict::workload::Workload;
use std::path::Path;

/// The readers of outside input, one fuzz target each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// GOAL schedules (LogGOPSim's format), `predict`.
    Goal,
    /// SimGrid time-independent traces, `predict`.
    SimgridTi,
    /// SimGrid platform XML, `predict --topology FILE.xml`.
    SimgridXml,
    /// Graphviz dot networks with LogGOPSim routing comments, `predict --topology FILE.dot`.
    Dot,
    /// commperf's own trace format (what `monitor --trace` writes), `predict`.
    OwnTrace,
    /// The interposer's binary rank files (`rank-N.cpmpi`), `monitor report`.
    RankFile,
    /// Result JSON (`bench -f json`), `report` and `compare`.
    ResultJson,
    /// The monitor run file (`run.json`), `monitor report`.
    MonitorRun,
}

impl Target {
    pub const ALL: &'static [Target] = &[
        Target::Goal,
        Target::SimgridTi,
        Target::SimgridXml,
        Target::Dot,
        Target::OwnTrace,
        Target::RankFile,
        Target::ResultJson,
        Target::MonitorRun,
    ];

    /// The fuzz target's name (`fuzz/fuzz_targets/NAME.rs`, `fuzz/corpus/NAME/`).
    pub fn name(self) -> &'static str {
        match self {
            Target::Goal => "goal",
            Target::SimgridTi => "simgrid_ti",
            Target::SimgridXml => "simgrid_xml",
            Target::Dot => "dot",
            Target::OwnTrace => "own_trace",
            Target::RankFile => "rank_file",
            Target::ResultJson => "result_json",
            Target::MonitorRun => "monitor_run",
        }
    }

    pub fn from_name(name: &str) -> Option<Target> {
        Target::ALL.iter().copied().find(|t| t.name() == name)
    }
}

/// The name inputs carry in error messages.
const FILE: &str = "input";

/// Feeds `data` to `target`'s reader: `Err` holds the reader's error message. Panics on a bug.
pub fn run(target: Target, data: &[u8]) -> Result<(), String> {
    match target {
        Target::Goal => trace(data, TraceFormat::Goal),
        Target::SimgridTi => trace(data, TraceFormat::SimGrid),
        Target::OwnTrace => trace(data, TraceFormat::Own),
        Target::SimgridXml => {
            let text = text(data)?;
            let net = SimGridPlatform::parse(&text, FILE).map_err(|e| e.to_string())?;
            check_routes(&net);
            Ok(())
        }
        Target::Dot => {
            let text = text(data)?;
            let net = Dot::parse(&text, FILE).map_err(|e| e.to_string())?;
            check_routes(&net);
            Ok(())
        }
        Target::RankFile => rank_file(data),
        Target::ResultJson => result_json(data),
        Target::MonitorRun => monitor_run(data),
    }
}

fn text(data: &[u8]) -> Result<String, String> {
    commperf_core::text::text_from_bytes(data.to_vec(), FILE).map_err(|e| e.to_string())
}

fn trace(data: &[u8], format: TraceFormat) -> Result<(), String> {
    let text = text(data)?;
    match parse_str(&text, FILE, format, &ParseOptions::default()) {
        Ok(w) => {
            check_workload(&w);
            Ok(())
        }
        Err(e) => {
            check_inside(&e, &text);
            Err(e.to_string())
        }
    }
}

/// An error's line and column are inside the input (the column may be one past the line's
/// end), and its quoted token is cut to a readable length.
fn check_inside(e: &ParseError, text: &str) {
    let lines: Vec<&str> = text.split('\n').collect();
    assert!(
        (1..=lines.len()).contains(&e.line),
        "error on line {} of {}: {e}",
        e.line,
        lines.len()
    );
    let chars = lines[e.line - 1].chars().count();
    assert!(
        (1..=chars + 1).contains(&e.column),
        "error at column {} of a {chars}-character line: {e}",
        e.column
    );
    assert!(e.token.chars().count() <= 65, "token too long: {e}");
}

/// The workload's ranks partition its operations, and every dependency names another
/// operation of the same rank (what the engines index without checking).
fn check_workload(w: &Workload) {
    let starts = w.rank_starts();
    assert_eq!(starts.len(), w.nranks() as usize + 1, "rank_start length");
    assert_eq!(starts[0], 0);
    assert_eq!(
        *starts.last().unwrap() as usize,
        w.len(),
        "ranks cover the ops"
    );
    assert!(starts.windows(2).all(|p| p[0] <= p[1]), "rank_start sorted");
    assert!(w.len() as u64 <= commperf_predict::parse::MAX_OPS);
    for r in 0..w.nranks() {
        let range = w.rank_ops(r);
        for i in range.clone() {
            for (d, _) in w.deps(i) {
                assert!(range.contains(&d), "op {i} of rank {r} depends on op {d}");
                assert_ne!(d, i, "op {i} depends on itself");
            }
            if let Some((to, ..)) = w.op(i).send_parts() {
                assert!(to < w.nranks(), "send to rank {to} of {}", w.nranks());
            }
        }
    }
}

/// Routes between the first hosts either fail with an error or cross links that exist.
fn check_routes(net: &dyn Network) {
    let hosts = net.hosts().min(6);
    let mut path = Vec::new();
    for a in 0..hosts {
        for b in 0..hosts {
            path.clear();
            if net.route(a, b, &mut path).is_ok() {
                let n = net.links().len();
                assert!(
                    path.iter().all(|&l| (l as usize) < n),
                    "route {a}→{b} over a link beyond {n}: {path:?}"
                );
            }
        }
    }
}

/// A rank file is read as `monitor report DIR --trace` reads it: parsed, made a one-rank run,
/// summarized, matched and converted to a trace, which predict's own reader must accept.
///
/// Every frame carries a checksum, so almost every mutation is "checksum mismatch". The input is
/// therefore read twice: as it is (the result returned), and with its frames' checksums
/// recomputed, so that the fuzzer also reaches the frames' contents.
fn rank_file(data: &[u8]) -> Result<(), String> {
    let fixed = fix_checksums(data);
    if fixed != data {
        let _ = read_rank_file(&fixed);
    }
    read_rank_file(data)
}

fn read_rank_file(data: &[u8]) -> Result<(), String> {
    let path = Path::new("rank-0.cpmpi");
    let rank = commperf_pmpi::parse_file(path, data).map_err(|e| e.to_string())?;
    let run = commperf_pmpi::Run::new(".".into(), vec![rank]);
    let _ = commperf_pmpi::summarize(&run);
    let _ = commperf_pmpi::match_messages(&run);
    let out = commperf_pmpi::to_trace(&run);
    if let Err(e) = parse_str(
        &out.text,
        "trace",
        TraceFormat::Own,
        &ParseOptions::default(),
    ) {
        panic!(
            "the trace of a rank file does not read back: {e}\n{}",
            out.text
        );
    }
    Ok(())
}

/// `data` with every whole frame's checksum recomputed (for the version its magic names).
fn fix_checksums(data: &[u8]) -> Vec<u8> {
    use commperf_pmpi::format;
    let mut out = data.to_vec();
    let Some(version) = format::READ_VERSIONS
        .into_iter()
        .find(|&v| format::magic(v).is_some_and(|m| out.starts_with(&m[..])))
    else {
        return out;
    };
    let mut at = format::MAGIC.len();
    while out.len() - at >= 16 {
        let len = u32::from_le_bytes(out[at + 4..at + 8].try_into().expect("4 bytes")) as usize;
        let Some(end) = (at + 16).checked_add(len).filter(|&e| e <= out.len()) else {
            break;
        };
        let sum = format::checksum(version, &out[at + 8..at + 8 + len]);
        out[at + 8 + len..end].copy_from_slice(&sum.to_le_bytes());
        at = end;
    }
    out
}

/// A result file is read as `report` reads it, rendered in every text format, and written and
/// read back unchanged.
fn result_json(data: &[u8]) -> Result<(), String> {
    use commperf_report::{load_json, render, Format};
    let text = text(data)?;
    let rep = load_json(&text).map_err(|e| e.to_string())?;
    for &f in Format::ALL {
        let _ = render(&rep, f);
    }
    let again = serde_json::to_string(&rep).expect("a report serializes");
    let back = load_json(&again).unwrap_or_else(|e| panic!("written report unreadable: {e}"));
    assert_eq!(back, rep, "result JSON round trip");
    Ok(())
}

/// A monitor run file is read as `monitor report FILE` reads it (signature and table), and
/// written and read back unchanged.
fn monitor_run(data: &[u8]) -> Result<(), String> {
    use commperf_monitor::{MonitorRun, Signature, TableFormat};
    let path = Path::new("run.json");
    let text = text(data)?;
    let run = MonitorRun::parse(path, &text).map_err(|e| e.to_string())?;
    let sig = Signature::new(&run.histograms, run.baseline.as_ref(), None);
    let _ = sig.render_table(TableFormat::Text);
    let back = MonitorRun::parse(path, &run.to_json())
        .unwrap_or_else(|e| panic!("written run unreadable: {e}"));
    assert_eq!(back, run, "monitor run round trip");
    Ok(())
}
