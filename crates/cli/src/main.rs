//! `commperf`: the one binary. Parses the command line with clap, turns it into the validated
//! configurations the library crates take (they never see clap), and prints errors as one
//! `commperf: …` line: exit 2 for a bad option value, 1 for a failure while running.

mod app;
mod bench_args;
mod calibrate;
mod cli;
mod compare;
#[cfg(test)]
mod docs_tests;
mod emulate;
mod emulate_mpi;
mod emulate_sweep;
mod gentrace;
mod monitor;
mod monitor_mpi;
mod mpi;
mod output;
mod predict;
mod progress;
mod schema;
mod shell;
mod testbed;

use anyhow::{Context, Result};
use clap::Parser;
use cli::{Cli, Command};
use commperf_launch::interrupt::{self, Interrupted};
pub(crate) use commperf_launch::say;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = match Cli::try_parse() {
        Ok(a) => a,
        Err(e) => return cli::clap_exit(e),
    };
    let r = match args.command {
        Command::Bench(b) => match b.to_config() {
            Ok(cfg) => match b.check_plot(&cfg).and_then(|()| b.mpi_layers(&cfg)) {
                Ok(None) => run_bench(&b, cfg),
                Ok(Some(layers)) => mpi::bench(&b, cfg, layers),
                Err(e) => return usage_error(e),
            },
            Err(e) => return usage_error(e),
        },
        Command::Calibrate(c) => match c.to_job() {
            Ok(job) => calibrate::run(&c, job),
            Err(e) => return usage_error(e),
        },
        Command::Serve(s) => match serve_token(&s) {
            Ok(()) => serve(&s),
            Err(e) => return usage_error(e),
        },
        Command::Limits(l) => match l.cpus() {
            Ok(cpus) => limits(&l, cpus),
            Err(e) => return usage_error(e),
        },
        Command::Report(r) => report(&r),
        Command::Compare(c) => compare::run(&c),
        Command::Predict(p) => predict::run(&p),
        Command::GenTrace(g) => match g.pattern() {
            Ok(p) => gentrace::run(&g, p),
            Err(e) => return usage_error(e),
        },
        Command::Peer(h) => peer(h.to_hooks()),
        Command::Monitor(m) => monitor::run(&m),
        Command::MonitorPeer => monitor::peer(),
        Command::Emulate(e) => emulate::run(&e),
        Command::EmulatePeer => emulate::peer(),
        Command::Reap { dir } => commperf_launch::run_dir::reap(&dir).map_err(Into::into),
        Command::App(a) => match &a.cmd {
            Some(app::AppCmd::Report(r)) => app::report(r),
            None => match a.to_config() {
                Ok(cfg) => app::run(&a, cfg),
                Err(e) => return usage_error(e),
            },
        },
        Command::Testbed(t) => testbed::testbed(&t),
        Command::TestbedRank(r) => testbed::testbed_rank(&r),
        Command::NetnsRank(r) => testbed::netns_rank(&r),
        Command::NetnsRelay(r) => testbed::netns_relay(&r),
        Command::Completions(c) => shell::run_completions(&c),
        Command::Man(m) => shell::run_man(&m),
        Command::Schema(s) => schema::run(&s),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is::<interrupt::Interrupted>() => {
            say(&format!("commperf: {e}"));
            ExitCode::from(interrupt::EXIT_INTERRUPTED)
        }
        // The reader of our output went away (`| head -1`): it took what it wanted, and a
        // message would only land in the middle of its output.
        Err(e) if output::StdoutError::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            say(&format!("commperf: {e:#}"));
            ExitCode::from(1)
        }
    }
}

fn usage_error(e: impl std::fmt::Display) -> ExitCode {
    say(&format!("commperf: {e}"));
    ExitCode::from(2)
}

fn run_bench(b: &cli::BenchArgs, cfg: commperf_bench::BenchConfig) -> Result<()> {
    for w in [cfg.oversubscription_warning(), cfg.placement_warning()]
        .into_iter()
        .flatten()
    {
        say(&format!("commperf: warning: {w}"));
    }
    preflight_bench(b)?;
    interrupt::install();
    let mut progress = progress::RunProgress::new();
    let report = commperf_bench::run(&cfg, &mut progress).context("benchmark run failed")?;
    // The results first: a figure that cannot be drawn must not cost the measurements.
    output::emit(&report, b.output.format, b.output.out.as_deref())?;
    write_figures(b, &report)?;
    Ok(Interrupted::check(
        report.partial,
        report.results.len(),
        "result row",
    )?)
}

/// Every file `bench` writes, and standard output, checked before it measures anything.
pub(crate) fn preflight_bench(b: &cli::BenchArgs) -> Result<()> {
    output::preflight(&[
        ("-o", b.output.out.as_deref()),
        ("--plot-loggp", b.output.plot_loggp.as_deref()),
        ("--plot", b.plot.as_deref()),
    ])
}

/// `bench --plot-loggp` and `--plot`: the figures of a run's report, after its results.
pub(crate) fn write_figures(b: &cli::BenchArgs, report: &commperf_core::Report) -> Result<()> {
    if let Some(path) = &b.output.plot_loggp {
        let svg = output::loggp_svg(report, path, "this run")?;
        output::write_plot(path, &svg)?;
    }
    if let Some(path) = &b.plot {
        let svg = commperf_report::bench_svg(report)
            .with_context(|| format!("--plot {}: this run", path.display()))?;
        output::write_plot(path, &svg)?;
    }
    Ok(())
}

/// A token the data channels can carry (they send it as one message of at most
/// [`bounds::MAX_TOKEN`] bytes).
///
/// [`bounds::MAX_TOKEN`]: commperf_transport::bounds::MAX_TOKEN
fn serve_token(s: &cli::ServeArgs) -> std::result::Result<(), String> {
    use commperf_transport::bounds::MAX_TOKEN;
    match &s.token {
        Some(t) if t.is_empty() || t.len() > MAX_TOKEN => Err(format!(
            "--token: must be 1 to {MAX_TOKEN} bytes long (got {})",
            t.len()
        )),
        _ => Ok(()),
    }
}

/// `commperf serve`: strangers are authenticated concurrently, each within one deadline, and at
/// most a bounded number wait at once; sessions run one at a time, here, and a client that
/// authenticates while one runs is told the server is busy ([`commperf_transport::serve`]).
fn serve(s: &cli::ServeArgs) -> Result<()> {
    use commperf_transport::launch::Server;
    use commperf_transport::serve::ServeLimits;
    use commperf_transport::text::one_line;
    use std::io::Write;
    // What killed servers or runs left behind before their peers attached.
    for name in commperf_transport::sys::shm::remove_stale_segments() {
        eprintln!(
            "commperf serve: removed /dev/shm/{name}, left by a process that no longer exists"
        );
    }
    let server = Server::bind(s.listen, s.token.clone())
        .with_context(|| format!("--listen {}", s.listen))?;
    let (addr, token) = (server.local_addr(), server.token().to_string());
    // Every line through one_line: whatever a peer put into an event, it stays one line.
    let log = |line: &str| eprintln!("commperf serve: {}", one_line(line));
    let acceptor = server.start(ServeLimits::default(), move |ev| log(&ev.to_string()))?;
    // One write, and best effort: a server whose stdout was closed (a script that read the
    // address and went away) must keep serving. Written once clients are being accepted: it is
    // the line scripts wait for.
    let banner = format!(
        "commperf serve: listening on {addr}\ntoken: {token}\nrun: commperf bench --peer {addr} --token {token}\n"
    );
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(banner.as_bytes()).and_then(|_| out.flush());
    drop(out);
    loop {
        let mut session = acceptor.next_session()?;
        let who = session.ctrl.peer().to_string();
        log(&format!("session with {who} started"));
        let r = session
            .ctrl
            .set_timeout(std::time::Duration::from_secs(600))
            .map_err(commperf_bench::BenchError::from)
            .and_then(|()| {
                let hooks = s.hooks.to_hooks();
                commperf_bench::session::serve_session_with(
                    &mut session.ctrl,
                    &token,
                    addr.ip(),
                    hooks,
                )
            });
        match r {
            Ok(found) => {
                // Also in the client's result; here for whoever runs the server.
                for note in found.notes() {
                    log(&format!("session with {who} disturbed: {note}"));
                }
                log(&format!("session with {who} finished"));
            }
            Err(e) => log(&format!("session with {who} failed: {e:#}")),
        }
        // The next client may start its session from here on.
        drop(session);
        if s.once {
            return Ok(());
        }
    }
}

fn limits(l: &cli::LimitsArgs, cpus: [usize; 2]) -> Result<()> {
    let clock = commperf_transport::clock::Clock::calibrate();
    let lim = commperf_bench::limits::measure(&clock, cpus)?;
    let text = match l.format {
        output::Format::Json => serde_json::to_string_pretty(&lim)? + "\n",
        _ => {
            let both = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.0}"));
            let lines = [
                (
                    "cache-line one-way (us)",
                    format!("{:.3}", lim.cacheline_one_way_us),
                ),
                (
                    "memcpy in cache (MB/s)",
                    format!(
                        "{:.0}   ({} KiB buffers)",
                        lim.memcpy_in_cache_mb_per_s,
                        lim.memcpy_in_cache_bytes >> 10
                    ),
                ),
                (
                    "memcpy out of cache (MB/s)",
                    format!(
                        "{:.0}   ({} MiB buffers)",
                        lim.memcpy_out_of_cache_mb_per_s,
                        lim.memcpy_out_of_cache_bytes >> 20
                    ),
                ),
                (
                    "both CPUs, in cache (MB/s)",
                    format!(
                        "{}   (each CPU copying its half at once)",
                        both(lim.memcpy_two_cpus_in_cache_mb_per_s)
                    ),
                ),
                (
                    "both CPUs, out of cache (MB/s)",
                    both(lim.memcpy_two_cpus_out_of_cache_mb_per_s),
                ),
            ];
            let mut text = format!("# commperf limits | cpus {} and {}\n", cpus[0], cpus[1]);
            for (label, value) in lines {
                text.push_str(&format!("{label:<31} {value}\n"));
            }
            text
        }
    };
    output::print(&text)
}

fn report(r: &cli::ReportArgs) -> Result<()> {
    output::preflight(&[
        ("-o", r.output.out.as_deref()),
        ("--plot-loggp", r.output.plot_loggp.as_deref()),
    ])?;
    let text = commperf_core::read_text(&r.file)?;
    let rep = commperf_report::load_json(&text).with_context(|| r.file.display().to_string())?;
    // A file with nothing to draw against size is refused by name, before anything is written.
    if r.output.format == Some(output::Format::Svg) {
        commperf_report::bench_svg(&rep).with_context(|| r.file.display().to_string())?;
    }
    // Drawn before anything is printed: a file without loggp results is refused up front.
    let svg = match &r.output.plot_loggp {
        Some(path) => Some((
            path,
            output::loggp_svg(&rep, path, &r.file.display().to_string())?,
        )),
        None => None,
    };
    output::emit(&rep, r.output.format, r.output.out.as_deref())?;
    if let Some((path, svg)) = svg {
        output::write_plot(path, &svg)?;
    }
    Ok(())
}

fn peer(hooks: commperf_bench::session::PeerHooks) -> Result<()> {
    use commperf_transport::launch;
    interrupt::ignore_in_peer();
    let token = std::env::var("COMMPERF_SESSION_TOKEN").unwrap_or_default();
    let mut ctrl = launch::inherited_control(launch::PEER_CONTROL_FD)?;
    launch::server_handshake(&mut ctrl, &token)?;
    ctrl.set_timeout(std::time::Duration::from_secs(600))?;
    let localhost = std::net::Ipv4Addr::LOCALHOST.into();
    commperf_bench::session::serve_session_with(&mut ctrl, &token, localhost, hooks)
        .context("peer session")?;
    Ok(())
}
