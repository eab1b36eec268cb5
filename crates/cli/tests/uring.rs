//! End-to-end tests of the io_uring transports: the suite over them, and the kernel refusing
//! io_uring (a real seccomp filter on the commperf processes, as container runtimes install).

use commperf_testkit::{exe, json_of, stderr};
use serde_json::Value;
use std::process::{Command, Output};

mod common;

fn rows(o: &Output) -> Vec<Value> {
    json_of(o)["results"].as_array().expect("results").clone()
}

#[test]
fn the_suite_runs_over_both_uring_transports() {
    let o = Command::new(exe())
        .args([
            "bench",
            "latency",
            "bw",
            "bufmgmt",
            "cq",
            "-t",
            "uring",
            "--sizes",
            "16,100000",
            "--iters",
            "200",
            "--conns-max",
            "4",
            "--validate",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let rows = rows(&o);
    for t in ["uring-tcp", "uring-uds"] {
        let of = |b: &str| -> Vec<&Value> {
            rows.iter()
                .filter(|r| r["transport"] == t && r["benchmark"] == b)
                .collect()
        };
        assert_eq!(of("latency").len(), 2, "{t}");
        assert!(of("latency").iter().all(|r| r["validated"] == true));
        assert_eq!(of("bw").len(), 2, "{t}");
        // bufmgmt: fresh buffers and registered memory in place, per size, each against the
        // standard (private, copied) latency of the same connection.
        let buf = of("bufmgmt");
        let mut kinds: Vec<(u64, &str)> = buf
            .iter()
            .map(|r| {
                (
                    r["size_bytes"].as_u64().unwrap(),
                    r["buffers"].as_str().unwrap(),
                )
            })
            .collect();
        kinds.sort();
        assert_eq!(
            kinds,
            [
                (16, "fresh"),
                (16, "registered"),
                (100000, "fresh"),
                (100000, "registered")
            ],
            "{t}"
        );
        for r in &buf {
            common::assert_cost_judged(r);
            assert_eq!(r["validated"], true, "{r}");
        }
        // cq: the io_uring completion queue at N = 1, 2, 4.
        let conns: Vec<u64> = of("cq")
            .iter()
            .map(|r| r["connections"].as_u64().unwrap())
            .collect();
        assert_eq!(conns, [1, 2, 4], "{t}");
    }
}

/// Runs `args` with io_uring_setup forbidden (EPERM) by a seccomp filter, inherited by the peer.
#[cfg(target_arch = "x86_64")]
fn without_io_uring(args: &[&str]) -> Output {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(exe());
    c.args(args);
    // SAFETY: the closure runs in the forked child before exec and only makes two prctl calls
    // on data it owns (no allocation, no locks).
    unsafe {
        c.pre_exec(|| {
            // BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_RET|BPF_K (BPF_LD, BPF_W and
            // BPF_K are 0).
            const BPF_LD_W_ABS: u16 = 0x20;
            const BPF_JEQ_K: u16 = 0x05 | 0x10;
            const BPF_RET_K: u16 = 0x06;
            let stmt = |code, k| libc::sock_filter {
                code,
                jt: 0,
                jf: 0,
                k,
            };
            let filter = [
                // Load the system-call number (offset 0 of seccomp_data).
                stmt(BPF_LD_W_ABS, 0),
                libc::sock_filter {
                    code: BPF_JEQ_K,
                    jt: 0,
                    jf: 1,
                    k: libc::SYS_io_uring_setup as u32,
                },
                stmt(BPF_RET_K, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32),
                stmt(BPF_RET_K, libc::SECCOMP_RET_ALLOW),
            ];
            let prog = libc::sock_fprog {
                len: filter.len() as u16,
                filter: filter.as_ptr() as *mut libc::sock_filter,
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    &prog as *const libc::sock_fprog,
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    c.output().expect("run commperf under seccomp")
}

#[cfg(target_arch = "x86_64")]
#[test]
fn a_kernel_that_refuses_io_uring_gets_a_clear_message() {
    let o = without_io_uring(&[
        "bench",
        "latency",
        "-t",
        "uring-uds",
        "--sizes",
        "8",
        "--iters",
        "10",
    ]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("io_uring_setup"), "{e}");
    assert!(e.contains("refuses io_uring to this process"), "{e}");
    assert!(e.contains("seccomp"), "{e}");
    assert!(e.contains("tcp and uds need no io_uring"), "{e}");
    assert!(!e.contains("panicked"), "{e}");
    // The plain transports still work under the same filter.
    let o = without_io_uring(&[
        "bench", "latency", "-t", "uds", "--sizes", "8", "--iters", "10",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}
