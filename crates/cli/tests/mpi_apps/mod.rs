//! What the tests that monitor real MPI programs share: the programs' sources, the check that an
//! MPI is installed (a skip with a message, or a failure under `COMMPERF_REQUIRE_MPI=1` as CI sets
//! it), scratch directories, compiling with an MPI's compiler.

#![allow(dead_code)] // each test file uses its own part

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_commperf")
}

pub fn apps() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../pmpi/tests/apps")
}

fn have(cmd: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(cmd).is_file()))
}

/// Whether every tool is here; prints why not (or panics when CI requires MPI).
pub fn ready(test: &str, tools: &[&str]) -> bool {
    let missing: Vec<&str> = tools.iter().copied().filter(|t| !have(t)).collect();
    missing.is_empty()
        || skip(
            test,
            &format!(
                "{} not installed (apt-get install libopenmpi-dev openmpi-bin libmpich-dev \
                 mpich gfortran hpcc lammps)",
                missing.join(", ")
            ),
        )
}

/// Whether this commperf links an MPI (the `mpi` feature), which a test that runs `bench` over
/// MPI needs besides the installed tools; prints why not (or panics when CI requires MPI).
pub fn mpi_feature_ready(test: &str) -> bool {
    cfg!(feature = "mpi")
        || skip(
            test,
            "this commperf was built without the mpi feature (cargo test --features commperf/mpi)",
        )
}

/// A test that cannot run here: says why and returns false, or panics when CI requires MPI.
fn skip(test: &str, why: &str) -> bool {
    if std::env::var_os("COMMPERF_REQUIRE_MPI").is_some() {
        panic!("{test}: COMMPERF_REQUIRE_MPI is set, but {why}");
    }
    eprintln!("skipping {test}: {why}");
    false
}

/// Whether this process may build network namespaces (root, iproute2's `ip` and `tc`); prints
/// why not.
pub fn netns_ready() -> bool {
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
        eprintln!("SKIPPED: needs root, iproute2 and tc to build network namespaces");
    }
    root && tools
}

/// A scratch directory removed when dropped.
pub struct Scratch(pub PathBuf);
impl Scratch {
    /// `kind` keeps the test files' directories apart (they run in parallel).
    pub fn new(kind: &str, test: &str) -> Scratch {
        let p = std::env::temp_dir().join(format!(
            "commperf-{kind}-test-{}-{test}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("scratch dir");
        Scratch(p)
    }
}
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "failed ({}):\nstdout:\n{}\nstderr:\n{}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    );
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

/// Whether Chromium is here, as [`ready`] decides for the MPI tools.
pub fn chromium_ready(test: &str) -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("chromium").is_file()));
    if found {
        return true;
    }
    let why = "chromium not installed (apt-get install chromium)";
    if std::env::var_os("COMMPERF_REQUIRE_MPI").is_some() {
        panic!("{test}: COMMPERF_REQUIRE_MPI is set, but {why}");
    }
    eprintln!("skipping {test}: {why}");
    false
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
