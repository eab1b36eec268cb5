//! Links libotf2 when it is installed (Debian: libotf2-trace-dev), emitting `commperf_libotf2`;
//! without it the crate builds and its OTF2 paths return an error naming the package. And the
//! tests' capability cfgs (build-support/caps.rs; `commperf_has_otf2`: libotf2-trace-dev's
//! otf2-config and otf2-tools' otf2-print on the PATH).

include!("../../build-support/caps.rs");

/// Directories the linker searches by default on Debian and most Linux systems.
const LIB_DIRS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
];

fn main() {
    commperf_caps();
    println!("cargo::rustc-check-cfg=cfg(commperf_libotf2)");
    println!("cargo:rerun-if-env-changed=COMMPERF_OTF2_LIB_DIR");
    // COMMPERF_OTF2_DISABLE=1 builds as if libotf2 were absent (how the error path is tested
    // on a machine that has it).
    println!("cargo:rerun-if-env-changed=COMMPERF_OTF2_DISABLE");
    if std::env::var_os("COMMPERF_OTF2_DISABLE").is_some() {
        return;
    }
    let mut dirs: Vec<std::path::PathBuf> = Vec::new();
    if let Some(d) = std::env::var_os("COMMPERF_OTF2_LIB_DIR") {
        dirs.push(d.into());
    }
    dirs.extend(LIB_DIRS.iter().map(std::path::PathBuf::from));
    // The header and the shared library together: a runtime package alone (libotf2-9) has no
    // unversioned libotf2.so to link against.
    let header = ["/usr/include/otf2/otf2.h", "/usr/local/include/otf2/otf2.h"]
        .iter()
        .any(|h| std::path::Path::new(h).exists());
    for h in ["/usr/include/otf2/otf2.h", "/usr/local/include/otf2/otf2.h"] {
        println!("cargo:rerun-if-changed={h}");
    }
    let lib = dirs.iter().find(|d| d.join("libotf2.so").exists());
    for d in &dirs {
        println!("cargo:rerun-if-changed={}", d.join("libotf2.so").display());
    }
    if let (true, Some(dir)) = (header, lib) {
        println!("cargo:rustc-link-search=native={}", dir.display());
        println!("cargo:rustc-link-lib=dylib=otf2");
        println!("cargo:rustc-cfg=commperf_libotf2");
    }
}
