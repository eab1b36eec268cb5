// What this machine offers the tests, found when the crate is built: one `commperf_*` cfg per
// capability present, so that a test needing one that is absent is marked
// `#[cfg_attr(not(commperf_has_openmpi), ignore = "why")]` and shows as `ignored` with its
// reason in libtest's summary, never as a pass that did nothing.
//
// Pulled into a crate's build script with `include!("../../build-support/caps.rs");`, then
// `commperf_caps();` from its `main`. Plain functions, no dependencies: a build script's only
// crates are its own build-dependencies.
//
// The probes only look (files on the PATH, the effective user; python3 is asked whether it can
// import pympistandard), and the build script runs again
// when one could change: on PATH itself and on every directory in it (a package install adds a
// file there), and on COMMPERF_REQUIRE_MPI. With COMMPERF_REQUIRE_MPI set (CI sets it) every
// cfg is emitted whatever is found: the tests run, and one whose tool is missing fails naming
// it, so CI never passes by skipping.

/// The capabilities, each a cfg name and the commands that must be on the PATH.
const COMMPERF_CAPS: &[(&str, &[&str])] = &[
    // Open MPI's launcher under its plain name (the MPI layer's tests run `mpirun`).
    ("commperf_has_mpirun", &["mpirun"]),
    ("commperf_has_openmpi", &["mpicc.openmpi", "mpirun.openmpi"]),
    (
        "commperf_has_openmpi_fortran",
        &["mpif90.openmpi", "mpirun.openmpi"],
    ),
    (
        "commperf_has_mpich",
        &["mpicc.mpich", "mpirun.mpich", "mpiexec.mpich"],
    ),
    (
        "commperf_has_mpich_fortran",
        &["mpif90.mpich", "mpirun.mpich"],
    ),
    // Debian's hpcc and lammps, which link Open MPI.
    ("commperf_has_hpcc", &["hpcc", "mpirun.openmpi"]),
    ("commperf_has_lammps", &["lmp", "mpirun.openmpi"]),
    ("commperf_has_chromium", &["chromium"]),
    ("commperf_has_simgrid", &["smpirun"]),
    // libotf2-trace-dev (otf2-config; commperf-otf2 links its libotf2) and otf2-tools
    // (otf2-print, which the OTF2 tests read the archives back with).
    ("commperf_has_otf2", &["otf2-config", "otf2-print"]),
    // Debian's NWChem (one-sided MPI through its ARMCI), counted call by call against ltrace.
    (
        "commperf_has_nwchem",
        &["nwchem.openmpi", "mpirun.openmpi", "ltrace"],
    ),
];

/// The MPI Forum's API list for Python (`pip install pympistandard`), which the interposer's
/// generated wrappers come from (crates/pmpi/gen/wrappers.py): a module, not a command, so it
/// is asked of python3 itself.
const COMMPERF_PYMPISTANDARD: &str = "commperf_has_pympistandard";

/// Network namespaces with shaped links: root, and iproute2's `ip` and `tc`.
const COMMPERF_NETNS: &str = "commperf_has_netns";
/// The crate's `mpi` feature (a build that links an MPI), or COMMPERF_REQUIRE_MPI.
const COMMPERF_MPI_FEATURE: &str = "commperf_mpi_feature";

fn commperf_path_dirs() -> Vec<std::path::PathBuf> {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default()
}

fn commperf_on_path(dirs: &[std::path::PathBuf], cmd: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    dirs.iter().any(|d| {
        std::fs::metadata(d.join(cmd))
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// The effective user is root: /proc/self belongs to the process's effective uid.
fn commperf_is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// Runs the build script again when `dir` changes (a package install adds a file to it). Only
/// absolute directories that exist (a missing one would make cargo run the script on every
/// build) and hold no subdirectory: cargo scans a watched directory recursively, and a PATH
/// entry holding subdirectories (a home directory, a build tree that changes on every build)
/// would be slow to scan or would rerun the script every time.
fn commperf_watch_dir(dir: &std::path::Path) {
    let flat = std::fs::read_dir(dir).is_ok_and(|it| {
        it.flatten()
            .all(|e| e.file_type().is_ok_and(|t| !t.is_dir()))
    });
    if dir.is_absolute() && flat {
        println!("cargo:rerun-if-changed={}", dir.display());
    }
}

/// Emits `cargo::rustc-check-cfg` for every capability cfg, `cargo:rustc-cfg` for each one
/// found (all of them under COMMPERF_REQUIRE_MPI), and what makes the script run again.
#[allow(dead_code)] // a crate's build script may use only its own part
fn commperf_caps() {
    let dirs = commperf_path_dirs();
    println!("cargo:rerun-if-env-changed=PATH");
    println!("cargo:rerun-if-env-changed=COMMPERF_REQUIRE_MPI");
    for d in &dirs {
        commperf_watch_dir(d);
    }
    let require = std::env::var_os("COMMPERF_REQUIRE_MPI").is_some();
    let mut found: Vec<&str> = COMMPERF_CAPS
        .iter()
        .filter(|(_, cmds)| cmds.iter().all(|c| commperf_on_path(&dirs, c)))
        .map(|(cfg, _)| *cfg)
        .collect();
    if commperf_is_root() && ["ip", "tc"].iter().all(|c| commperf_on_path(&dirs, c)) {
        found.push(COMMPERF_NETNS);
    }
    if std::env::var_os("CARGO_FEATURE_MPI").is_some() {
        found.push(COMMPERF_MPI_FEATURE);
    }
    let pympistandard = commperf_on_path(&dirs, "python3")
        && std::process::Command::new("python3")
            .args(["-c", "import pympistandard"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if pympistandard {
        found.push(COMMPERF_PYMPISTANDARD);
    }
    let all = COMMPERF_CAPS
        .iter()
        .map(|(cfg, _)| *cfg)
        .chain([COMMPERF_NETNS, COMMPERF_MPI_FEATURE, COMMPERF_PYMPISTANDARD]);
    for cfg in all {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        if require || found.contains(&cfg) {
            println!("cargo:rustc-cfg={cfg}");
        }
    }
}
