//! `commperf emulate [--o D] [--g D] [--G D] [--L D] -- mpirun -np 4 ./app`: the verb's options
//! and its printing; the run itself is [`commperf_emulate::mpi::run_emulated`], which a sweep
//! and the application study call too.

use anyhow::{bail, Result};
use clap::Args;
use commperf_emulate::mpi::Collectives;
use commperf_emulate::mpi::{run_emulated, RunOptions};
use commperf_emulate::{parse_duration_ns, Knob, Knobs};
use std::path::PathBuf;

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

/// `--collectives`: how the interposer treats collectives while a knob is set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum CollectivesArg {
    /// The common collectives run as point-to-point messages under the knobs.
    #[default]
    P2p,
    /// Every collective runs inside the MPI library, untouched by the knobs.
    Native,
}

impl From<CollectivesArg> for Collectives {
    fn from(c: CollectivesArg) -> Collectives {
        match c {
            CollectivesArg::P2p => Collectives::P2p,
            CollectivesArg::Native => Collectives::Native,
        }
    }
}

/// The knobs and the command of `commperf emulate [KNOBS] -- COMMAND` (flattened into
/// `emulate::EmulateArgs`, beside its subcommands).
#[derive(Debug, Args, Default)]
pub struct RunArgs {
    /// Added overhead o (e.g. 5us): each sender spins this long before handing a message to
    /// MPI, each receiver after a receive completes. No knob touches a message a rank sends
    /// to itself: it never leaves the MPI library
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
    /// Print the outcome as JSON on stdout (the program's own stdout then goes to stderr)
    #[arg(long)]
    pub json: bool,
    /// Also monitor the run into DIR, as `commperf monitor -o DIR` does (the recorded times are
    /// the emulated ones), and print its tables
    #[arg(long, value_name = "DIR", conflicts_with = "json")]
    pub monitor: Option<PathBuf>,
    /// Collectives under the knobs: p2p (Barrier, Bcast, Reduce, Allreduce, Allgather, Alltoall,
    /// Gather, Scatter run as point-to-point messages, each paying the knobs, with `commperf
    /// predict`'s default algorithms) or native (the library's own, untouched)
    #[arg(long, value_enum, value_name = "MODE", default_value_t = CollectivesArg::P2p)]
    pub collectives: CollectivesArg,
    /// Run the whole apparatus whatever the knobs: collectives as messages, every hook, and L's
    /// side band (stamps written and read; nothing held unless L is set), even with every knob
    /// at zero. What `emulate sweep` runs its baseline and every setting with (the apparatus's
    /// own cost then shows as the baseline against the untouched program)
    #[arg(long)]
    pub engaged: bool,
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

/// `commperf emulate [KNOBS] -- COMMAND`: exits with the program's status.
pub fn run(a: &RunArgs) -> Result<()> {
    if a.command.is_empty() {
        bail!(
            "say what to emulate: `commperf emulate --L 20us -- mpirun -np 4 ./app`, or \
             `commperf emulate calibrate …` (the knobs on commperf's transports)"
        );
    }
    let opts = RunOptions {
        interposer: a.interposer.clone(),
        program_stdout_to_stderr: a.json,
        monitor_dir: a.monitor.clone(),
        collectives: a.collectives.into(),
        engaged: a.engaged,
    };
    let r = run_emulated(&a.knobs(), &a.command, &opts)?;
    if let Some(m) = &a.monitor {
        crate::monitor_mpi::report(m, None)?;
    }
    crate::say(&r.describe());
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    }
    if !r.success {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        // The program's own status, so scripts see what the program said.
        std::process::exit(r.exit_code.unwrap_or(1).clamp(1, 255));
    }
    Ok(())
}

/// `commperf emulate calibrate -t mpi`: each knob alone, in the interposer, under
/// `mpirun -np 2 commperf bench loggp -t mpi` (this binary, its own MPI's launcher), LogGP
/// measured at the MPI layer with the same PRTT fit, judged like the transport calibration
/// against knobs-at-zero baselines taken before the first knob and after each knob.
pub(crate) fn calibrate(c: &crate::emulate::CalibrateArgs) -> Result<()> {
    #[cfg(not(feature = "mpi"))]
    {
        let _ = c;
        bail!(commperf_mpi::NOT_BUILT)
    }
    #[cfg(feature = "mpi")]
    {
        use anyhow::Context;
        use commperf_emulate::calibrate::mpi::{self as cal, bench_args, MpiCalibrateConfig};
        use commperf_emulate::mpi::render_mpi;
        use commperf_launch::run_dir::{Kind, RunDir};
        use commperf_mpi::spawn::{self, Flavor, Host};
        let exe = std::env::current_exe().context("finding this program")?;
        let dir = RunDir::new(Kind::Emulate)?;
        let json = dir.path().join("loggp.json");
        let args = bench_args(&c.sizes, c.iters, &json);
        let host = Host {
            cpus: commperf_transport::affinity::allowed_cpus().len(),
            // SAFETY: geteuid has no preconditions and cannot fail.
            root: unsafe { libc::geteuid() } == 0,
        };
        let path = std::env::var_os("PATH");
        let lib = commperf_mpi::library_version();
        let cmd = spawn::mpirun(Flavor::of(&lib), 2, &exe, &args, host, path.as_deref())
            .map_err(anyhow::Error::msg)?;
        let command: Vec<String> = std::iter::once(cmd.program.display().to_string())
            .chain(cmd.args.iter().map(|a| a.to_string_lossy().into_owned()))
            .collect();
        let cal = cal::calibrate(&MpiCalibrateConfig {
            command: &command,
            json: &json,
            sizes: &c.sizes,
            iterations: c.iters,
            knobs: &c.knobs,
        })?;
        print!("{}", render_mpi(&cal));
        if let Some(p) = &c.out {
            crate::output::write_atomically(p, serde_json::to_string_pretty(&cal)?.as_bytes())?;
        }
        Ok(())
    }
}
