//! Knob L's arrival dating (csrc/arrival.h) checked exactly: the C header is compiled with the
//! system's C compiler into a small program of exact-answer checks (tests/c/arrival.c), which
//! needs no MPI.

use std::path::Path;
use std::process::Command;

#[test]
fn arrival_dating_takes_the_typical_one_way_time_of_the_size_class() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The test's own target directory: cargo cleans it, no temporary file is left behind.
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join("arrival");
    let o = Command::new("cc")
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(root.join("csrc"))
        .arg(root.join("tests/c/arrival.c"))
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
