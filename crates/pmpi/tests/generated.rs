//! The wrappers generated from the MPI standard (gen/wrappers.py, csrc/gen/): what is in the
//! repository is what the generator writes, and the interposer built for each installed MPI
//! defines a wrapper for every function that library exports, but for the ten MPI-1 functions
//! MPI-3.0 removed from the standard (the libraries keep them for old binaries; mpi.h no longer
//! declares them, so no program built today calls them).

use commperf_pmpi::{interposer, Flavour};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Removed in MPI-3.0: exported by both libraries, absent from the standard's list.
const REMOVED: [&str; 10] = [
    "Address",
    "Errhandler_create",
    "Errhandler_get",
    "Errhandler_set",
    "Type_extent",
    "Type_hindexed",
    "Type_hvector",
    "Type_lb",
    "Type_struct",
    "Type_ub",
];

#[test]
#[cfg_attr(
    not(commperf_has_pympistandard),
    ignore = "needs python3 with pympistandard (pip install pympistandard==0.2.0)"
)]
fn the_generated_wrappers_are_what_the_generator_writes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let o = Command::new("python3")
        .arg(dir.join("gen/wrappers.py"))
        .arg("--check")
        .output()
        .expect("run python3");
    assert!(
        o.status.success(),
        "csrc/gen/ differs from what gen/wrappers.py writes:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Names `nm -D --defined-only` lists in `path` that start with `prefix`, prefix removed.
fn exported(path: &Path, prefix: &str) -> BTreeSet<String> {
    let o = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(path)
        .output()
        .expect("run nm (binutils)");
    assert!(o.status.success(), "nm {}", path.display());
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter_map(|n| n.strip_prefix(prefix))
        .map(str::to_string)
        .collect()
}

fn library(f: Flavour) -> PathBuf {
    match f {
        Flavour::OpenMpi => {
            let o = Command::new("mpicc.openmpi")
                .arg("--showme:libdirs")
                .output()
                .expect("mpicc.openmpi");
            let dir = String::from_utf8_lossy(&o.stdout).trim().to_string();
            Path::new(&dir).join("libmpi.so")
        }
        Flavour::Mpich => {
            let o = Command::new("mpicc.mpich")
                .arg("-show")
                .output()
                .expect("mpicc.mpich");
            let s = String::from_utf8_lossy(&o.stdout).to_string();
            let dir = s
                .split_whitespace()
                .find_map(|w| w.strip_prefix("-L"))
                .expect("a -L directory in mpicc.mpich -show")
                .to_string();
            Path::new(&dir).join("libmpich.so")
        }
    }
}

fn every_export_wrapped(f: Flavour) {
    let shim = interposer(f).expect("this build has the interposer");
    let tmp = std::env::temp_dir().join(format!(
        "commperf-generated-{}-{}.so",
        f.key(),
        std::process::id()
    ));
    std::fs::write(&tmp, shim).unwrap();
    let ours = exported(&tmp, "MPI_");
    let _ = std::fs::remove_file(&tmp);
    let lib = library(f);
    let theirs = exported(&lib, "PMPI_");
    assert!(
        theirs.len() > 300,
        "{}: {} PMPI_ functions",
        lib.display(),
        theirs.len()
    );
    let missing: Vec<&String> = theirs.difference(&ours).collect();
    let removed: Vec<String> = REMOVED.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        missing,
        removed.iter().collect::<Vec<_>>(),
        "{} exports PMPI_ functions the interposer has no MPI_ wrapper for",
        lib.display()
    );
    // The communicating families are wrapped by hand (recorded, not only counted).
    for name in [
        "Ialltoall",
        "Mrecv",
        "Put",
        "Win_fence",
        "Neighbor_alltoall",
        "Iallreduce",
    ] {
        assert!(ours.contains(name), "MPI_{name}");
    }
}

#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin)"
)]
fn every_function_open_mpi_exports_is_wrapped() {
    every_export_wrapped(Flavour::OpenMpi);
}

#[test]
#[cfg_attr(
    not(commperf_has_mpich),
    ignore = "needs MPICH (mpicc.mpich, mpirun.mpich: apt-get install libmpich-dev mpich)"
)]
fn every_function_mpich_exports_is_wrapped() {
    every_export_wrapped(Flavour::Mpich);
}
