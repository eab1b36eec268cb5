//! `commperf app` on its network stacks (`ompi-tcp@RATE`, `mpich-tcp@RATE`): every rank of a real
//! MPI program in a namespace of its own, its messages through shaped veths and a bridge. Checked
//! against the rate (a halo moving a known number of bytes between two ranks cannot finish
//! faster than the link carries them, and does on loopback), the monitor's counts (the same
//! as without namespaces), and the clean-up after a normal run and after Ctrl-C (no namespace,
//! link, rank or relay left). Needs root, iproute2 and both MPIs; elsewhere the tests say why
//! they did not run (and fail under `COMMPERF_REQUIRE_MPI=1`, as in CI).

mod mpi_apps;
use mpi_apps::{exe, need, ok, text, Scratch};
use serde_json::Value;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Network namespaces and both MPIs, or the test fails naming what is missing (the build
/// marks it ignored where they are absent).
fn need_all(test: &str) {
    mpi_apps::need_netns(test);
    need(
        test,
        &[
            "mpicc.openmpi",
            "mpirun.openmpi",
            "mpicc.mpich",
            "mpiexec.mpich",
        ],
    );
}

/// One study at a time: both build clusters and share 2 cores.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn app(s: &Scratch, args: &[&str]) -> Child {
    Command::new(exe())
        .args(["app", "--np", "2", "--no-bench", "--cache"])
        .arg(s.0.join("cache"))
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .current_dir(&s.0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run commperf app")
}

/// Namespaces and root-namespace links of a study run by `pid`.
fn leftovers(pid: u32) -> Vec<String> {
    let prefix = format!("cpt{pid}-");
    let ns = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let links = Command::new("ip").args(["-o", "link"]).output().unwrap();
    String::from_utf8_lossy(&ns.stdout)
        .lines()
        .chain(String::from_utf8_lossy(&links.stdout).lines())
        .filter(|l| l.contains(&prefix))
        .map(str::to_string)
        .collect()
}

/// Processes whose command line contains `needle`.
fn processes(needle: &str) -> Vec<String> {
    let o = Command::new("ps")
        .args(["-eo", "pid,args"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.contains(needle) && !l.contains("ps -eo"))
        .map(str::to_string)
        .collect()
}

fn cell<'a>(j: &'a Value, stack: &str) -> &'a Value {
    j["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .find(|c| c["stack"] == stack)
        .unwrap_or_else(|| panic!("no cell on {stack} in {j}"))
}

#[test]
#[cfg_attr(
    not(all(commperf_has_netns, commperf_has_openmpi, commperf_has_mpich)),
    ignore = "needs root and iproute2's ip and tc (network namespaces) and Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin) and MPICH (mpicc.mpich, mpirun.mpich: apt-get install libmpich-dev mpich)"
)]
fn network_stacks_run_every_rank_in_its_shaped_namespace() {
    let test = "network_stacks_run_every_rank_in_its_shaped_namespace";
    need_all(test);
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = Scratch::new("appnet", "shaped");
    // Two ranks on a 2 × 1 grid: per iteration each sends its north and south edge (n·8 B each)
    // to the other rank, and its west and east edge to itself.
    // 1 Mbit/s and 4 KiB edges: the link's floor (6.6 s) is far above what the unshaped run
    // takes even on a loaded machine, whose time goes with the count of messages (800), not
    // their size: 1.4 s for 2 KiB edges with two CPU hogs and a build beside it (at 5 Mbit/s
    // that was above half the floor, 0.66 s).
    let (n, iters, rate) = (512u64, 100u64, 1e6);
    let crossing_bits = (2 * n * 8 * iters * 8) as f64;
    let floor_s = crossing_bits / rate;
    let (narg, iarg) = (format!("halo:n={n}"), format!("halo:iters={iters}"));
    let child = app(
        &s,
        &[
            "--programs",
            "halo",
            "--arg",
            &narg,
            "--arg",
            &iarg,
            "--stacks",
            "ompi-tcp,ompi-tcp@1mbit,mpich-tcp@1mbit",
            "--json",
        ],
    );
    let pid = child.id();
    let o: Output = child.wait_with_output().expect("wait");
    ok(&o);
    let j: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let plain = cell(&j, "ompi-tcp");
    let t_plain = plain["time_s"].as_f64().expect("time");
    assert!(
        t_plain < 0.5 * floor_s,
        "loopback halo {t_plain} s, the 1 Mbit/s floor {floor_s} s: {j}"
    );
    for stack in ["ompi-tcp@1mbit", "mpich-tcp@1mbit"] {
        let c = cell(&j, stack);
        let t = c["time_s"]
            .as_f64()
            .unwrap_or_else(|| panic!("{stack}: {c}"));
        // The edges cannot cross a 1 Mbit/s link faster than it carries them (2 % for the
        // shaper's token bucket and the clock).
        assert!(
            t >= 0.98 * floor_s,
            "{stack}: {t} s, below the {floor_s} s the link needs: {c}"
        );
        // What the monitor saw in the namespaces is what it saw without them.
        assert_eq!(
            c["profile"]["messages"], plain["profile"]["messages"],
            "{stack}: {c}"
        );
        assert_eq!(c["profile"]["bytes"], plain["profile"]["bytes"], "{c}");
    }
    assert!(leftovers(pid).is_empty(), "{:?}", leftovers(pid));
    assert!(processes("__netns-relay").is_empty());
}

#[test]
#[cfg_attr(
    not(all(commperf_has_netns, commperf_has_openmpi, commperf_has_mpich)),
    ignore = "needs root and iproute2's ip and tc (network namespaces) and Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin) and MPICH (mpicc.mpich, mpirun.mpich: apt-get install libmpich-dev mpich)"
)]
fn ctrl_c_stops_a_study_and_removes_its_networks() {
    let test = "ctrl_c_stops_a_study_and_removes_its_networks";
    need_all(test);
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = Scratch::new("appnet", "ctrlc");
    // A halo that would take hours at 10 Mbit/s.
    let mut child = app(
        &s,
        &[
            "--programs",
            "halo",
            "--arg",
            "halo:n=8192",
            "--arg",
            "halo:iters=1000000",
            "--stacks",
            "ompi-tcp@10mbit",
        ],
    );
    let pid = child.id();
    let cache = s.0.join("cache").display().to_string();
    let t0 = Instant::now();
    // Running: the cluster is up and the program's ranks exist.
    while leftovers(pid).is_empty() || processes(&cache).len() < 3 {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "the study never started its ranks"
        );
        if let Some(st) = child.try_wait().unwrap() {
            panic!("the study ended early: {st}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(1));
    // SAFETY: kill on our own child's pid.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) };
    let t1 = Instant::now();
    let st = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(
            t1.elapsed() < Duration::from_secs(60),
            "the study did not stop within 60 s of SIGINT"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let o = child.wait_with_output().expect("output");
    let err = text(&o.stderr);
    assert_eq!(st.code(), Some(1), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(leftovers(pid).is_empty(), "left: {:?}", leftovers(pid));
    // The ranks and their relays are gone (mpirun takes a moment to reap them).
    let t2 = Instant::now();
    while !(processes(&cache).is_empty() && processes("__netns-relay").is_empty()) {
        assert!(
            t2.elapsed() < Duration::from_secs(20),
            "left running: {:?} {:?}",
            processes(&cache),
            processes("__netns-relay")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}
