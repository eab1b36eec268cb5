//! `bench` at the MPI layer (`--transport mpi`), between MPI-placed ranks (`--launcher mpi`)
//! and layer against layer (`--layers`): outside mpirun, starts `mpirun -np 2` on itself; under
//! mpirun, runs as one rank, rank 0 printing and writing the results.

use crate::cli::BenchArgs;
use anyhow::Result;
use commperf_bench::BenchConfig;
use commperf_core::TransportKind;

#[cfg(not(feature = "mpi"))]
pub fn bench(_: &BenchArgs, _: BenchConfig, _: Vec<Vec<TransportKind>>) -> Result<()> {
    anyhow::bail!(commperf_mpi::NOT_BUILT)
}

#[cfg(feature = "mpi")]
pub use with_mpi::bench;

#[cfg(feature = "mpi")]
mod with_mpi {
    use super::*;
    use crate::output;
    use crate::progress::RunProgress;
    use anyhow::Context;
    use commperf_core::Report;
    use commperf_mpi::spawn::{self, Flavor, Host};
    use commperf_mpi::MpiWorld;

    pub fn bench(b: &BenchArgs, cfg: BenchConfig, layers: Vec<Vec<TransportKind>>) -> Result<()> {
        if !spawn::launched_by_mpi() {
            crate::preflight_bench(b)?;
            return relaunch();
        }
        let args: Vec<String> = std::env::args().skip(1).collect();
        let mut world = MpiWorld::init().context("starting MPI")?;
        let rank = world.rank();
        if let Err(e) = world.agree(&args.join(" "), b.claim_version.as_deref()) {
            say(&format!("commperf: rank {rank}: {e}\n"));
            // Every rank reached this same verdict: all have said so before the abort.
            world.barrier();
            world.abort(2);
        }
        let mut tty;
        let progress: &mut dyn commperf_bench::Progress = if rank == 0 {
            tty = RunProgress::new();
            &mut tty
        } else {
            &mut ()
        };
        let reports = match commperf_mpi::run(&world, &cfg, &layers, progress) {
            Ok(r) => r,
            Err(e) => {
                say(&format!("commperf: rank {rank}: {e:#}\n"));
                world.abort(1);
            }
        };
        let Some(reports) = reports else {
            return Ok(());
        };
        emit(b, &reports)
    }

    /// One line to stderr in one write, so the lines of ranks sharing a terminal do not mix.
    fn say(line: &str) {
        use std::io::Write;
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }

    /// Rank 0's output: one report, or for `--layers` both reports and their comparison.
    fn emit(b: &BenchArgs, reports: &[Report]) -> Result<()> {
        let [lower, upper] = reports else {
            for r in reports {
                output::emit(r, b.output.format, b.output.out.as_deref())?;
            }
            if let Some(r) = reports.first() {
                crate::write_figures(b, r)?;
            }
            return Ok(());
        };
        emit_layers(lower, upper, b)
    }

    /// `--layers`: both layers' tables, then their comparison. With `-o FILE`, each layer's
    /// report goes to FILE's name with the layer added (`out.shm.json`, `out.mpi.json`, in
    /// FILE's format), so `commperf compare` can be run on them again later.
    fn emit_layers(lower: &Report, upper: &Report, b: &BenchArgs) -> Result<()> {
        let mut sources = Vec::new();
        for r in [lower, upper] {
            let layer = commperf_mpi::layer_name(&r.options.transports);
            let path = b.output.out.as_deref().map(|p| layer_path(p, &layer));
            output::emit(r, b.output.format, path.as_deref())?;
            sources.push(path.map_or(layer, |p| p.display().to_string()));
        }
        // Both layers' results are out before the comparison can fail.
        let mut c = commperf_report::compare(lower, upper).context("comparing the layers")?;
        c.lower.source = Some(sources[0].clone());
        c.upper.source = Some(sources[1].clone());
        output::print("\n")?;
        output::emit_with(
            |f| commperf_report::render_comparison(&c, f),
            b.output.format,
            b.output.out.as_deref(),
        )?;
        // `--plot`: both layers' curves on one figure.
        if let Some(path) = &b.plot {
            let svg = commperf_report::plot::comparison_figure(&c)
                .with_context(|| format!("--plot {}: this run", path.display()))?
                .document();
            output::write_plot(path, &svg)?;
        }
        Ok(())
    }

    fn layer_path(p: &std::path::Path, layer: &str) -> std::path::PathBuf {
        let stem = p
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = match p.extension() {
            Some(ext) => format!("{stem}.{layer}.{}", ext.to_string_lossy()),
            None => format!("{stem}.{layer}"),
        };
        p.with_file_name(name)
    }

    /// Starts `mpirun -np 2` on this same command line and waits for it.
    fn relaunch() -> Result<()> {
        let exe = std::env::current_exe().context("finding this program to start under mpirun")?;
        let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
        let host = Host {
            cpus: commperf_transport::affinity::allowed_cpus().len(),
            // SAFETY: geteuid has no preconditions and cannot fail.
            root: unsafe { libc::geteuid() } == 0,
        };
        let lib = commperf_mpi::library_version();
        let path = std::env::var_os("PATH");
        let cmd = spawn::mpirun(Flavor::of(&lib), 2, &exe, &args, host, path.as_deref())
            .map_err(anyhow::Error::msg)?;
        crate::say(&format!(
            "commperf: not started by mpirun; running {} ranks with {lib}: {}",
            2,
            cmd.display()
        ));
        // The ranks' output reaches us through mpirun, which ignores its own write errors: it
        // is copied to our stdout here, so a full disk is reported as for any other run.
        let mut launch = std::process::Command::new(&cmd.program);
        commperf_launch::interrupt::die_with_parent(&mut launch)
            .args(&cmd.args)
            .stdout(std::process::Stdio::piped());
        let mut shm = commperf_launch::run_dir::RunDir::ompi(&mut launch)?;
        let mut child = launch
            .spawn()
            .with_context(|| format!("starting {}", cmd.program.display()))?;
        shm.launched(child.id());
        let copied = copy_out(child.stdout.take());
        let status = child.wait().context("waiting for mpirun")?;
        copied?;
        if !status.success() {
            anyhow::bail!("{} failed ({status})", cmd.program.display());
        }
        Ok(())
    }

    /// Copies the ranks' output to stdout until mpirun closes it. After a failed write the
    /// rest is read and dropped, so that mpirun never blocks on a full pipe.
    fn copy_out(from: Option<std::process::ChildStdout>) -> Result<()> {
        use std::io::Read;
        let Some(mut from) = from else {
            return Ok(());
        };
        let mut buf = vec![0u8; 64 << 10];
        let mut result = Ok(());
        loop {
            match from.read(&mut buf) {
                Ok(0) => return result,
                Ok(n) if result.is_ok() => result = output::print_bytes(&buf[..n]),
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return result.and(Err(e).context("reading mpirun's output")),
            }
        }
    }
}
