//! The interposer's C headers checked exactly, without MPI: each header is compiled with the
//! system's C compiler into a small program of exact-answer checks (tests/c/NAME.c) that prints
//! `ok` — knob L's arrival dating (csrc/arrival.h), and the emulated collectives' byte counts
//! past 2 GiB (csrc/bytes.h, which sends no 2 GiB).

use std::path::Path;
use std::process::Command;

/// Compiles tests/c/`name`.c against csrc/ and runs it: it must print `ok` alone.
fn c_checks_pass(name: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The test's own target directory: cargo cleans it, no temporary file is left behind.
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let o = Command::new("cc")
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(root.join("csrc"))
        .arg(root.join(format!("tests/c/{name}.c")))
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

#[test]
fn arrival_dating_takes_the_typical_one_way_time_of_the_size_class() {
    c_checks_pass("arrival");
}

#[test]
fn byte_counts_of_two_gib_and_more_are_exact_in_64_bits() {
    c_checks_pass("bytes");
}
