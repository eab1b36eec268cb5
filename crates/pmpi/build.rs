//! Compiles the C interposer once per MPI library found here (Open MPI's `mpicc.openmpi`, MPICH's
//! `mpicc.mpich`; plain `mpicc` counts as whichever it is) into `OUT_DIR/libcommperf_pmpi_<mpi>.so`.
//! The rlib embeds them (`commperf_pmpi::interposer`), so `commperf monitor` can install the one
//! the program needs. An MPI that is not installed leaves an empty file: the CLI then says which
//! interposer this build lacks. Why not the `cc` crate: it builds static archives to link into
//! this crate, and these are standalone shared objects linked against one MPI each.

use std::path::{Path, PathBuf};
use std::process::Command;

fn flavour_of(mpicc: &str) -> Option<&'static str> {
    let o = Command::new(mpicc).arg("-show").output().ok()?;
    let s = String::from_utf8_lossy(&o.stdout);
    if s.contains("mpich") {
        Some("mpich")
    } else if s.contains("openmpi") || s.contains("-lmpi") {
        Some("openmpi")
    } else {
        None
    }
}

fn build(out: &Path, flavour: &str, mpicc: &str) -> Result<(), String> {
    let so = out.join(format!("libcommperf_pmpi_{flavour}.so"));
    let mut c = Command::new(mpicc);
    c.args([
        "-shared",
        "-fPIC",
        "-O2",
        "-g",
        "-Wall",
        "-Wextra",
        "-Wno-unused-parameter",
    ])
    .arg(format!("-DCPMPI_{}", flavour.to_uppercase()))
    .arg("-Icsrc")
    .arg("csrc/shim.c")
    .arg("csrc/emulate.c")
    .arg("csrc/coll.c")
    .arg("-o")
    .arg(&so);
    if flavour == "openmpi" {
        // The Fortran wrappers call Open MPI's pmpi_*_ from its Fortran binding library.
        c.arg("-lmpi_mpifh");
    }
    // The cpmpi_rt_* symbols come from libcommperf_pmpi.so, preloaded beside this one.
    c.arg("-Wl,--allow-shlib-undefined").arg("-lpthread");
    let o = c.output().map_err(|e| format!("{mpicc}: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "{mpicc} failed:\n{}",
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    Ok(())
}

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    println!("cargo:rerun-if-changed=csrc/shim.c");
    println!("cargo:rerun-if-changed=csrc/fortran_openmpi.h");
    println!("cargo:rerun-if-changed=csrc/emulate.c");
    println!("cargo:rerun-if-changed=csrc/emulate.h");
    println!("cargo:rerun-if-changed=csrc/arrival.h");
    println!("cargo:rerun-if-changed=csrc/coll.c");
    println!("cargo:rerun-if-changed=csrc/coll.h");
    println!("cargo:rerun-if-env-changed=PATH");
    for flavour in ["openmpi", "mpich"] {
        let so = out.join(format!("libcommperf_pmpi_{flavour}.so"));
        let candidates = [format!("mpicc.{flavour}"), "mpicc".to_string()];
        let mpicc = candidates.iter().find(|c| flavour_of(c) == Some(flavour));
        let built = match mpicc {
            Some(m) => match build(&out, flavour, m) {
                Ok(()) => true,
                Err(e) => {
                    println!(
                        "cargo:warning=commperf-pmpi: no {flavour} interposer: {}",
                        e.lines().next().unwrap_or("")
                    );
                    false
                }
            },
            None => false,
        };
        if !built {
            std::fs::write(&so, b"").expect("write placeholder");
        }
    }
}
