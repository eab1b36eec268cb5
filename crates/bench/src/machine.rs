//! What machine the local end runs on, for the result file.

use commperf_core::{Machine, TimerInfo};

/// Reads CPU model, CPU count, kernel and hostname from /proc.
pub fn describe(timer: TimerInfo) -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    Machine {
        hostname: commperf_transport::launch::hostname(),
        cpu_model,
        // Online CPUs, not the ones this process may use: under mpirun's binding that is one.
        // SAFETY: sysconf has no preconditions.
        cores: match unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) } {
            n if n > 0 => n as usize,
            _ => std::thread::available_parallelism().map_or(1, |n| n.get()),
        },
        kernel,
        timer,
    }
}
