//! `commperf monitor -- srun -n 4 ./app` and `commperf emulate … -- srun …` against a real Slurm
//! (`scripts/slurm-local.sh start`: slurmctld, slurmd and munge on this machine, one localhost
//! node; CI starts it). srun starts the ranks itself, so the interposer must reach the ranks
//! (`env VAR=value` in front of the program) and never srun, and every message of a program
//! with known counts must be seen on each rank of one world of 4.
//!
//! Whether Slurm runs is known only at run time: without it the tests say `SKIPPED` on stderr,
//! and under `COMMPERF_REQUIRE_MPI=1` (CI) they fail instead.

mod mpi_apps;
use mpi_apps::{calls, compile, exe, need, ok, skip_visibly, text, Scratch};
use serde_json::Value;
use std::process::{Command, Output};

/// Whether `srun` can start a task now.
fn slurm_up() -> bool {
    Command::new("timeout")
        .args(["20", "srun", "-n", "1", "--mpi=none", "true"])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn commperf(args: &[&str], srun: &[&str], cwd: &std::path::Path) -> Output {
    Command::new("timeout")
        .args(["-k", "10", "300", exe()])
        .args(args)
        .arg("--")
        .arg("srun")
        .args(srun)
        .current_dir(cwd)
        .output()
        .expect("run commperf")
}

fn monitor_under_srun(mpi: &str, mpi_plugin: &str) {
    let test = format!("monitor_under_srun_{mpi}");
    need(&test, &[&format!("mpicc.{mpi}"), "srun"]);
    if !slurm_up() {
        skip_visibly(
            &test,
            "no Slurm answers `srun -n 1 true` (scripts/slurm-local.sh start)",
        );
        return;
    }
    let s = Scratch::new("slurm", &test);
    let prog = s.0.join("counts");
    compile(&format!("mpicc.{mpi}"), "counts.c", &prog);
    let dir = s.0.join("mon");
    let o = commperf(
        &["monitor", "-o", dir.to_str().unwrap()],
        &["-n", "4", mpi_plugin, prog.to_str().unwrap()],
        &s.0,
    );
    ok(&o);
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    // One world of 4 (a wrong PMI plugin gives four worlds of 1, each rank 0), every message
    // seen: the counts program's exact figures (crates/pmpi/tests/apps/counts.c).
    assert_eq!(j["ranks"], 4, "{}", text(&o.stdout));
    assert_eq!(j["matched_messages"], 100, "{}", text(&o.stdout));
    assert_eq!(j["unmatched_sends"], 0);
    for r in 0..4u64 {
        assert_eq!(
            calls(&j, r, "MPI_Isend"),
            (16, 10 * 100 + 4 * 8 + 2 * 16),
            "rank {r}"
        );
        assert_eq!(calls(&j, r, "MPI_Send"), (6, 5 * 1000 + 64), "rank {r}");
        assert_eq!(calls(&j, r, "MPI_Bcast"), (3, 2400), "rank {r}");
    }
    // Only the run's data in the run directory: the interposer came from the user's cache.
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "rank-0.cpmpi",
            "rank-1.cpmpi",
            "rank-2.cpmpi",
            "rank-3.cpmpi",
            "run.json",
            "summary.json"
        ]
    );
}

#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI (mpicc.openmpi: apt-get install libopenmpi-dev openmpi-bin)"
)]
fn monitor_under_srun_openmpi() {
    // Open MPI 4.1 finds its world through Slurm's PMIx plugin.
    monitor_under_srun("openmpi", "--mpi=pmix");
}

#[test]
#[cfg_attr(
    not(commperf_has_mpich),
    ignore = "needs MPICH (mpicc.mpich: apt-get install libmpich-dev mpich)"
)]
fn monitor_under_srun_mpich() {
    // Debian's MPICH speaks PMI-2, not PMIx.
    monitor_under_srun("mpich", "--mpi=pmi2");
}

#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI (mpicc.openmpi: apt-get install libopenmpi-dev openmpi-bin)"
)]
fn emulate_under_srun_reaches_every_rank() {
    let test = "emulate_under_srun_reaches_every_rank";
    need(test, &["mpicc.openmpi", "srun"]);
    if !slurm_up() {
        skip_visibly(
            test,
            "no Slurm answers `srun -n 1 true` (scripts/slurm-local.sh start)",
        );
        return;
    }
    let s = Scratch::new("slurm", test);
    let prog = s.0.join("counts");
    compile("mpicc.openmpi", "counts.c", &prog);
    let o = commperf(
        &["emulate", "--o", "1us", "--json"],
        &["-n", "4", "--mpi=pmix", prog.to_str().unwrap()],
        &s.0,
    );
    ok(&o);
    let j: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&o.stdout), text(&o.stderr)));
    // The knobs ran in all 4 ranks and touched every point-to-point send: per rank 16 Isend,
    // 6 Send, 3 Sendrecv, and the 7 Sendrecv that MPI_Pcontrol(0) hides from the monitor only.
    assert!(j["success"].as_bool().unwrap(), "{j}");
    assert_eq!(j["untouched"]["ranks"], 4, "{j}");
    assert_eq!(j["untouched"]["p2p_messages"], 4 * (16 + 6 + 3 + 7), "{j}");
}
