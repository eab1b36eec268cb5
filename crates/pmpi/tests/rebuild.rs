//! A build made before MPI was installed must not keep its empty interposer: build this crate
//! with no MPI compiler wrapper on the PATH (the Open MPI interposer is then an empty file), add
//! `mpicc.openmpi` to a directory on that same PATH, build again, and the interposer is there.
//! That is build.rs watching the directories on PATH, as a package install changes them.
//!
//! The builds run in a target directory of their own under the tests' (kept between runs, so
//! only the first run compiles the dependencies), with a PATH holding only the tools they need.

use std::path::{Path, PathBuf};
use std::process::Command;

fn out_dirs(target: &Path) -> Vec<PathBuf> {
    let build = target.join("debug/build");
    std::fs::read_dir(&build)
        .map(|it| {
            it.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("commperf-pmpi-"))
                        && p.join("out/libcommperf_pmpi_openmpi.so").exists()
                })
                .map(|p| p.join("out"))
                .collect()
        })
        .unwrap_or_default()
}

/// The size of the Open MPI interposer the last build embedded.
fn built_interposer_size(target: &Path) -> u64 {
    let newest = out_dirs(target)
        .into_iter()
        .max_by_key(|d| {
            std::fs::metadata(d.join("libcommperf_pmpi_openmpi.so"))
                .and_then(|m| m.modified())
                .ok()
        })
        .expect("a build of commperf-pmpi");
    std::fs::metadata(newest.join("libcommperf_pmpi_openmpi.so"))
        .unwrap()
        .len()
}

fn build(target: &Path, path: &Path) {
    // Cargo finds rustc beside itself in a toolchain, not on this PATH.
    let rustc = Path::new(env!("CARGO")).with_file_name("rustc");
    let mut c = Command::new(env!("CARGO"));
    if rustc.exists() {
        c.env("RUSTC", rustc);
    }
    let o = c
        .args(["build", "--quiet", "-p", "commperf-pmpi", "--target-dir"])
        .arg(target)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("PATH", path)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .output()
        .expect("run cargo");
    assert!(
        o.status.success(),
        "cargo build failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI's mpicc.openmpi (apt-get install libopenmpi-dev)"
)]
fn installing_mpi_after_a_first_build_rebuilds_the_interposer() {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("rebuild");
    let bin = tmp.join("bin");
    let target = tmp.join("target");
    let _ = std::fs::remove_dir_all(&bin);
    std::fs::create_dir_all(&bin).unwrap();
    // What a build needs besides MPI: the C compiler and linker rustc and mpicc call, and git.
    for tool in ["cc", "gcc", "as", "ld", "git"] {
        let real = ["/usr/bin", "/bin", "/usr/local/bin"]
            .iter()
            .map(|d| Path::new(d).join(tool))
            .find(|p| p.exists())
            .unwrap_or_else(|| panic!("{tool} not found"));
        std::os::unix::fs::symlink(real, bin.join(tool)).unwrap();
    }
    build(&target, &bin);
    assert_eq!(
        built_interposer_size(&target),
        0,
        "no mpicc on PATH: the Open MPI interposer is an empty placeholder"
    );
    // "Installing Open MPI": its compiler wrapper appears in a directory on the same PATH.
    std::os::unix::fs::symlink("/usr/bin/mpicc.openmpi", bin.join("mpicc.openmpi")).unwrap();
    build(&target, &bin);
    let size = built_interposer_size(&target);
    assert!(
        size > 10_000,
        "after mpicc.openmpi appeared, the build made the interposer ({size} bytes)"
    );
    // And once more with the wrapper gone: an uninstalled MPI is not kept either.
    std::fs::remove_file(bin.join("mpicc.openmpi")).unwrap();
    build(&target, &bin);
    assert_eq!(built_interposer_size(&target), 0);
}
