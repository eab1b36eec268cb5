//! Builds what the commperf binary carries into the ranks of an MPI program:
//!
//! - the C interposer, once per MPI library found here (Open MPI's `mpicc.openmpi`, MPICH's
//!   `mpicc.mpich`; plain `mpicc` counts as whichever it is), into
//!   `OUT_DIR/libcommperf_pmpi_<mpi>.so`. An MPI that is not installed leaves an empty file: the
//!   CLI then says which interposer this build lacks. Why not the `cc` crate: it builds static
//!   archives to link into this crate, and these are standalone shared objects linked against
//!   one MPI each.
//! - the recording runtime, the `commperf-pmpi-rt` crate's cdylib, into
//!   `OUT_DIR/libcommperf_pmpi_rt.so`. Cargo cannot give one crate's cdylib to another crate's
//!   build, so it is built here by a cargo of its own (the way wasm and eBPF builders do), in a
//!   build tree of its own under the target directory, shared by every profile.
//!
//! The rlib embeds all three (`commperf_pmpi::interposer`, `commperf_pmpi::runtime_library`).
//!
//! A build made before MPI was installed must not keep its empty interposers: the script reruns
//! when PATH changes and when any directory on PATH changes (installing or upgrading a package
//! that puts `mpicc` there changes its directory: build-support/caps.rs), and when the links that
//! lead to a found `mpicc` change (Debian's alternatives).

use std::path::{Path, PathBuf};
use std::process::Command;

include!("../../build-support/caps.rs");

fn flavour_of(mpicc: &Path) -> Option<&'static str> {
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

/// The MPI library's name and version as its compiler wrapper states them ("Open MPI 4.1.4",
/// "MPICH 4.0.2"), for `commperf --version`.
fn version_of(mpicc: &Path, flavour: &str) -> String {
    let first_line = |args: &[&str]| -> Option<String> {
        let o = Command::new(mpicc).args(args).output().ok()?;
        let s = String::from_utf8_lossy(&o.stdout);
        s.lines().next().map(str::to_string)
    };
    let found = if flavour == "openmpi" {
        // "mpicc.openmpi: Open MPI 4.1.4 (Language: C)"
        first_line(&["--showme:version"]).and_then(|l| {
            let at = l.find("Open MPI")?;
            Some(l[at..].split(" (").next()?.trim().to_string())
        })
    } else {
        // "mpicc for MPICH version 4.0.2"
        first_line(&["-v"]).and_then(|l| {
            let v = l.split("version").nth(1)?.trim().to_string();
            Some(format!("MPICH {v}"))
        })
    };
    found.unwrap_or_else(|| {
        if flavour == "openmpi" {
            "Open MPI".into()
        } else {
            "MPICH".into()
        }
    })
}

/// `OUT_DIR/have_<mpi>.h`: `#define CPMPI_HAVE_<name>` for every `PMPI_<name>` the library's
/// mpi.h declares (read from its preprocessed text, so a name mpi.h makes a macro is not one),
/// which the generated wrappers (csrc/gen/wrappers_c.h) are conditional on: a library that lacks
/// an MPI-4.0 function gets no wrapper for it, one that has it gets one.
fn have_header(out: &Path, flavour: &str, mpicc: &Path) -> Result<PathBuf, String> {
    let src = out.join(format!("have_{flavour}.c"));
    std::fs::write(&src, "#include <mpi.h>\n").map_err(|e| format!("{}: {e}", src.display()))?;
    let o = Command::new(mpicc)
        .arg("-E")
        .arg(&src)
        .output()
        .map_err(|e| format!("{}: {e}", mpicc.display()))?;
    if !o.status.success() {
        return Err(format!(
            "{} -E failed:\n{}",
            mpicc.display(),
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    let text = String::from_utf8_lossy(&o.stdout);
    let mut names = std::collections::BTreeSet::new();
    let b = text.as_bytes();
    let mut at = 0;
    while let Some(i) = text[at..].find("PMPI_") {
        let start = at + i;
        at = start + 5;
        if start > 0 && (b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'_') {
            continue;
        }
        let end = text[at..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(text.len(), |k| at + k);
        if text[end..].trim_start().starts_with('(') {
            names.insert(text[at..end].to_string());
        }
    }
    let mut h =
        String::from("/* The PMPI_ functions this library's mpi.h declares (build.rs). */\n");
    for n in &names {
        h.push_str(&format!("#define CPMPI_HAVE_{n} 1\n"));
    }
    let path = out.join(format!("have_{flavour}.h"));
    std::fs::write(&path, h).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

fn build(out: &Path, flavour: &str, mpicc: &Path) -> Result<(), String> {
    let so = out.join(format!("libcommperf_pmpi_{flavour}.so"));
    let have = have_header(out, flavour, mpicc)?;
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
    .arg("-include")
    .arg(&have)
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
    // The cpmpi_rt_* symbols come from the runtime, preloaded beside this one.
    c.arg("-Wl,--allow-shlib-undefined").arg("-lpthread");
    let o = c
        .output()
        .map_err(|e| format!("{}: {e}", mpicc.display()))?;
    if !o.status.success() {
        return Err(format!(
            "{} failed:\n{}",
            mpicc.display(),
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    Ok(())
}

/// `name` on PATH, and the directory of every link on the way to the file it names (so that
/// retargeting an alternative reruns this script).
fn find_on_path(name: &str, dirs: &[PathBuf]) -> Option<PathBuf> {
    let p = dirs.iter().map(|d| d.join(name)).find(|p| p.is_file())?;
    let mut hop = p.clone();
    for _ in 0..16 {
        let Ok(next) = std::fs::read_link(&hop) else {
            break;
        };
        let next = match hop.parent() {
            Some(parent) if next.is_relative() => parent.join(next),
            _ => next,
        };
        if let Some(d) = next.parent() {
            commperf_watch_dir(d);
        }
        hop = next;
    }
    Some(p)
}

/// Builds the `commperf-pmpi-rt` cdylib with a cargo of its own and copies it to `dest`.
fn build_runtime(out: &Path, dest: &Path) -> Result<(), String> {
    let env = |k: &str| std::env::var(k).map_err(|_| format!("{k} is not set"));
    let manifest_dir = PathBuf::from(env("CARGO_MANIFEST_DIR")?);
    let rt = manifest_dir.join("../pmpi-rt");
    let target = env("TARGET")?;
    // OUT_DIR is <target dir>[/<triple>]/<profile>/build/<pkg>-<hash>/out: one runtime build
    // tree per target directory and kind, shared by the profiles of that kind (the runtime is
    // always an optimized build). The kinds: the runtime's test hook (its `test-hooks`
    // feature) goes only into the runtime of a build with debug assertions, the build `cargo
    // test` and `cargo clippy` run; a release build carries none.
    let hooks = std::env::var_os("CARGO_CFG_DEBUG_ASSERTIONS").is_some();
    let name = if hooks {
        "commperf-pmpi-rt-test-hooks"
    } else {
        "commperf-pmpi-rt"
    };
    let tree = out
        .ancestors()
        .nth(4)
        .map(|t| t.join(name))
        .unwrap_or_else(|| out.join("rt"));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut c = Command::new(cargo);
    c.arg("build")
        .arg("--manifest-path")
        .arg(rt.join("Cargo.toml"))
        .args(["--lib", "--release", "--locked", "--target", &target]);
    if hooks {
        c.args(["--features", "test-hooks"]);
    }
    c.arg("--target-dir")
        .arg(&tree)
        // Preloaded into every rank of every program: symbols for a profiler, no debug info.
        .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
        .env("CARGO_PROFILE_RELEASE_STRIP", "debuginfo")
        // A plain build even under `cargo clippy` (which wraps rustc for the outer build), and
        // into the tree chosen above.
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CLIPPY_ARGS")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET_DIR");
    let o = c
        .output()
        .map_err(|e| format!("cannot run cargo to build the runtime: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "building the recording runtime (commperf-pmpi-rt) failed:\n{}",
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    let so = tree
        .join(&target)
        .join("release")
        .join("libcommperf_pmpi_rt.so");
    std::fs::copy(&so, dest).map_err(|e| format!("{}: {e}", so.display()))?;
    Ok(())
}

fn main() {
    commperf_caps();
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    for f in [
        // Every C source and header, the generated ones included (a directory is watched
        // whole).
        "csrc",
        "../pmpi-rt/src",
        "../pmpi-rt/Cargo.toml",
        "../../Cargo.lock",
    ] {
        println!("cargo:rerun-if-changed={f}");
    }
    // A fuzzing build (`--cfg fuzzing`, scripts/fuzz.sh) reads files, never launches MPI: no
    // interposer, no runtime (the runtime's own release build would double the fuzz build).
    if std::env::var_os("CARGO_CFG_FUZZING").is_some() {
        for name in [
            "libcommperf_pmpi_openmpi.so",
            "libcommperf_pmpi_mpich.so",
            "libcommperf_pmpi_rt.so",
        ] {
            std::fs::write(out.join(name), b"").expect("write placeholder");
        }
        for flavour in ["OPENMPI", "MPICH"] {
            println!("cargo:rustc-env=COMMPERF_PMPI_{flavour}_VERSION=");
        }
        return;
    }
    // PATH and its directories are watched by commperf_caps.
    let dirs: Vec<PathBuf> = commperf_path_dirs()
        .into_iter()
        .filter(|d| d.is_absolute())
        .collect();
    for flavour in ["openmpi", "mpich"] {
        let so = out.join(format!("libcommperf_pmpi_{flavour}.so"));
        let mpicc = [format!("mpicc.{flavour}"), "mpicc".to_string()]
            .iter()
            .filter_map(|c| find_on_path(c, &dirs))
            .find(|c| flavour_of(c) == Some(flavour));
        let built = match &mpicc {
            Some(m) => match build(&out, flavour, m) {
                Ok(()) => Some(version_of(m, flavour)),
                Err(e) => {
                    println!(
                        "cargo:warning=commperf-pmpi: no {flavour} interposer: {}",
                        e.lines().next().unwrap_or("")
                    );
                    None
                }
            },
            None => None,
        };
        if built.is_none() {
            std::fs::write(&so, b"").expect("write placeholder");
        }
        println!(
            "cargo:rustc-env=COMMPERF_PMPI_{}_VERSION={}",
            flavour.to_uppercase(),
            built.unwrap_or_default()
        );
    }
    if let Err(e) = build_runtime(&out, &out.join("libcommperf_pmpi_rt.so")) {
        panic!("{e}");
    }
}
