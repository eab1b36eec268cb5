//! The emulated collectives' byte counts (csrc/bytes.h) checked exactly past 2 GiB: the C
//! header is compiled with the system's C compiler into a small program of exact-answer checks
//! (tests/c/bytes.c), which needs no MPI (and sends no 2 GiB).

use std::path::Path;
use std::process::Command;

#[test]
fn byte_counts_of_two_gib_and_more_are_exact_in_64_bits() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The test's own target directory: cargo cleans it, no temporary file is left behind.
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bytes");
    let o = Command::new("cc")
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(root.join("csrc"))
        .arg(root.join("tests/c/bytes.c"))
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("running cc");
    assert!(
        o.status.success(),
        "cc failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = Command::new(&exe).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    assert_eq!(out.trim(), "ok");
}
