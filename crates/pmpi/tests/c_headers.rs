//! The interposer's C headers checked exactly, without MPI: each header is compiled with the
//! system's C compiler into a small program of exact-answer checks (tests/c/NAME.c) that prints
//! `ok` — knob L's arrival dating (csrc/arrival.h), and the emulated collectives' byte counts
//! past 2 GiB (csrc/bytes.h, which sends no 2 GiB); and the invariant-TSC rule (csrc/tsc.h)
//! against the Rust one it implements (`commperf_transport::clock::tsc_invariant_from`).

use commperf_transport::clock::{tsc_invariant_from, CPUID_POWER_LEAF, INVARIANT_TSC_BIT};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Compiles tests/c/`name`.c against csrc/ into the test's own target directory (cargo cleans
/// it, no temporary file is left behind) and returns the program.
fn compile(name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
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
    exe
}

/// Runs `exe` with `args` and `input` on its stdin; its stdout.
fn run(exe: &Path, args: &[&str], input: &str) -> String {
    let mut child = Command::new(exe)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("running the check");
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(input.as_bytes())
        .expect("writing its input");
    let o = child.wait_with_output().expect("its output");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{out}");
    out
}

/// Compiles and runs tests/c/`name`.c: it must print `ok` alone.
fn c_checks_pass(name: &str) {
    assert_eq!(run(&compile(name), &[], "").trim(), "ok");
}

#[test]
fn arrival_dating_takes_the_typical_one_way_time_of_the_size_class() {
    c_checks_pass("arrival");
}

#[test]
fn byte_counts_of_two_gib_and_more_are_exact_in_64_bits() {
    c_checks_pass("bytes");
}

/// The interposer's event clock and the benchmark clock decide "invariant TSC" by one rule:
/// the C (csrc/tsc.h) gives the Rust function's answer on every CPUID value around the rule's
/// edges, and both give the same answer on this CPU.
#[test]
fn the_c_tsc_rule_is_the_rust_one() {
    let leaves = [
        0,
        0x8000_0000,
        CPUID_POWER_LEAF - 1,
        CPUID_POWER_LEAF,
        CPUID_POWER_LEAF + 1,
        u32::MAX,
    ];
    let edxs = [
        0,
        INVARIANT_TSC_BIT,
        !INVARIANT_TSC_BIT,
        INVARIANT_TSC_BIT >> 1 | INVARIANT_TSC_BIT << 1,
        u32::MAX,
    ];
    let cases: Vec<(u32, u32)> = leaves
        .iter()
        .flat_map(|&m| edxs.iter().map(move |&e| (m, e)))
        .collect();
    let input: String = cases
        .iter()
        .map(|(m, e)| format!("{m:x} {e:x}\n"))
        .collect();
    let exe = compile("tsc");
    let c: Vec<bool> = run(&exe, &[], &input).lines().map(|l| l == "1").collect();
    let rust: Vec<bool> = cases
        .iter()
        .map(|&(m, e)| tsc_invariant_from(m, e))
        .collect();
    assert_eq!(c, rust, "cases (max leaf, edx): {cases:x?}");
    // Exactly the leaf-and-bit cases: the power leaf or above (3 leaves) with the bit (2 EDXs).
    assert_eq!(rust.iter().filter(|x| **x).count(), 6);
    let live_c = run(&exe, &["live"], "").trim() == "1";
    assert_eq!(live_c, commperf_transport::clock::invariant_tsc());
}
