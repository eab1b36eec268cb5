//! `commperf monitor [-o DIR] -- mpirun -np 4 ./app`: the MPI side of the monitor verb. Runs the
//! program under the interposer (the launch, shared with `emulate`, is in `preload`), and prints
//! what was recorded. Until the
//! `monitor` crate's histograms and signatures are merged in, the output is a per-pair, per-size
//! table of message counts and mean stage times, and `DIR/summary.json`.

use anyhow::{bail, Context, Result};
pub(crate) use commperf_monitor::mpi::{load, table};
use commperf_monitor::{Signature, TableFormat};
pub(crate) use commperf_pmpi::clear_rank_files;
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
    let mut vars = vec![("LD_PRELOAD".to_string(), preload)];
    vars.extend(commperf_monitor::mpi::recording_vars(
        &dir,
        &a.tag,
        a.start_disabled,
    ));
    let mut cmd = plan.command(&a.command, &vars);
    crate::say(&format!(
        "commperf: monitoring with {} into {}",
        plan.flavour.file_name(),
        dir.display()
    ));
    let status = cmd
        .status()
        .with_context(|| format!("cannot run {}", a.command[0]))?;
    if !commperf_pmpi::holds_rank_files(&dir) {
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
