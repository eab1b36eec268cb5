//! What `commperf --version` says of the build: the git revision it was built from (and the
//! date of that commit). The features and the MPI interposers are known to the code itself.
//! And the tests' capability cfgs: build-support/caps.rs.

use std::path::{Path, PathBuf};
use std::process::Command;

include!("../../build-support/caps.rs");

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let o = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    let s = String::from_utf8(o.stdout).ok()?.trim().to_string();
    (o.status.success() && !s.is_empty()).then_some(s)
}

fn main() {
    commperf_caps();
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let rev = git(&dir, &["rev-parse", "--short=12", "HEAD"]);
    let date = git(&dir, &["log", "-1", "--format=%cs"]);
    let described = match (rev, date) {
        (Some(r), Some(d)) => format!("git {r}, {d}"),
        (Some(r), None) => format!("git {r}"),
        _ => "not built from a git checkout".to_string(),
    };
    println!("cargo:rustc-env=COMMPERF_GIT={described}");
    // A new commit or checkout moves HEAD or the branch it names.
    if let Some(git_dir) = git(&dir, &["rev-parse", "--absolute-git-dir"]) {
        let git_dir = PathBuf::from(git_dir);
        println!("cargo:rerun-if-changed={}", git_dir.join("HEAD").display());
        if let Some(r) = git(&dir, &["symbolic-ref", "-q", "HEAD"]) {
            let ref_file = git_dir.join(r);
            if ref_file.exists() {
                println!("cargo:rerun-if-changed={}", ref_file.display());
            }
        }
        let packed = git_dir.join("packed-refs");
        if packed.exists() {
            println!("cargo:rerun-if-changed={}", packed.display());
        }
    }
}
