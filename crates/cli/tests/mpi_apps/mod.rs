//! What the tests that monitor real MPI programs share: the programs' sources, the check that an
//! MPI is installed (its absence is a failure: a test that needs a tool the build did not find
//! is `ignored` with its reason, see build-support/caps.rs), scratch directories, compiling with
//! an MPI's compiler.

#![allow(dead_code)] // each test file uses its own part

use commperf_testkit::TempDir;
pub use commperf_testkit::{exe, ok, text};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn apps() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../pmpi/tests/apps")
}

/// Whether `cmd` is a file in a directory of the PATH.
pub fn have(cmd: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(cmd).is_file()))
}

/// Fails the test naming what is missing. A test that needs a tool carries
/// `#[cfg_attr(not(commperf_has_…), ignore = "…")]`: the build found the tool absent
/// (build-support/caps.rs) and libtest lists the test as ignored with its reason. So a test
/// that runs without its tools was forced to by `COMMPERF_REQUIRE_MPI=1` (CI), or lost them
/// after the build: a failure either way, never a silent pass.
fn missing(test: &str, why: &str) -> ! {
    let forced = if std::env::var_os("COMMPERF_REQUIRE_MPI").is_some() {
        "COMMPERF_REQUIRE_MPI is set, but "
    } else {
        ""
    };
    panic!("{test}: {forced}{why}")
}

/// Every tool is on the PATH, or the test fails naming the missing ones.
pub fn need(test: &str, tools: &[&str]) {
    let missing_tools: Vec<&str> = tools.iter().copied().filter(|t| !have(t)).collect();
    if !missing_tools.is_empty() {
        missing(
            test,
            &format!(
                "{} not installed (apt-get install libopenmpi-dev openmpi-bin libmpich-dev \
                 mpich gfortran hpcc lammps)",
                missing_tools.join(", ")
            ),
        );
    }
}

/// This commperf links an MPI (the `mpi` feature), which a test that runs `bench` over MPI
/// needs besides the installed tools, or the test fails saying so.
pub fn need_mpi_feature(test: &str) {
    if !cfg!(feature = "mpi") {
        missing(
            test,
            "this commperf was built without the mpi feature (cargo test --features commperf/mpi)",
        );
    }
}

/// This process may build network namespaces (root, iproute2's `ip` and `tc`), or the test
/// fails saying why not.
pub fn need_netns(test: &str) {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let tools = ["ip", "tc"].iter().all(|t| {
        Command::new(t)
            .arg("-V")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    if !(root && tools) {
        missing(test, "network namespaces need root, iproute2's ip and tc");
    }
}

/// A scratch directory of one test (`commperf-KIND-test-TEST-…` in the temp dir), removed when
/// dropped: also when the test fails or panics.
pub struct Scratch(pub TempDir);
impl Scratch {
    /// `kind` keeps the test files' directories apart (they run in parallel).
    pub fn new(kind: &str, test: &str) -> Scratch {
        Scratch(TempDir::new(&format!("{kind}-test-{test}")))
    }
}

/// (count, bytes) of `call` made by `rank` in a monitor summary (0s when none).
/// `commperf predict --format json --trace TRACE ARGS…`, time-limited: a deadlock in the replay
/// is an error or a timeout, either fails the test.
pub fn predict(trace: &Path, args: &[&str]) -> serde_json::Value {
    let o = Command::new("timeout")
        .args([
            "-k",
            "5",
            "120",
            exe(),
            "predict",
            "--format",
            "json",
            "--trace",
        ])
        .arg(trace)
        .args(args)
        .output()
        .expect("run commperf predict");
    ok(&o);
    serde_json::from_slice(&o.stdout).expect("predict JSON")
}

pub fn calls(s: &serde_json::Value, rank: u64, call: &str) -> (u64, u64) {
    s["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .find(|c| c["rank"].as_u64() == Some(rank) && c["call"] == call)
        .map_or((0, 0), |c| {
            (
                c["count"].as_u64().unwrap_or(0),
                c["bytes"].as_u64().unwrap_or(0),
            )
        })
}

pub fn compile(compiler: &str, src: &str, out: &Path) {
    let o = Command::new(compiler)
        .args(["-O1", "-w", "-pthread", "-o"])
        .arg(out)
        .arg(apps().join(src))
        .output()
        .expect("run the MPI compiler");
    assert!(o.status.success(), "{compiler} {src}: {}", text(&o.stderr));
}

/// Chromium is on the PATH, or the test fails saying so (as [`need`] for the MPI tools).
pub fn need_chromium(test: &str) {
    if !have("chromium") {
        missing(test, "chromium not installed (apt-get install chromium)");
    }
}

/// Headless Chromium on `page` with `args` (its own profile directory under `s`, logging to
/// stderr): (output, the console lines of its log).
pub fn chromium(s: &Scratch, page: &Path, args: &[&str]) -> (Output, Vec<String>) {
    let o = Command::new("timeout")
        .args([
            "-k",
            "5",
            "120",
            "chromium",
            "--headless=new",
            "--no-sandbox",
        ])
        .args(["--disable-gpu", "--enable-logging=stderr", "--v=0"])
        .arg(format!(
            "--user-data-dir={}",
            s.0.join("chromium").display()
        ))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    let console = text(&o.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .map(String::from)
        .collect();
    (o, console)
}

/// A test that finds at run time that it cannot run (what it needs is made by a script, not
/// installed, so the build cannot know): one line `SKIPPED: test: why` written to the process's
/// stderr itself, past libtest's capture, so that it shows in the run's output; or a failure
/// under `COMMPERF_REQUIRE_MPI=1`.
pub fn skip_visibly(test: &str, why: &str) {
    if std::env::var_os("COMMPERF_REQUIRE_MPI").is_some() {
        missing(test, why);
    }
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "SKIPPED: {test}: {why}");
}
