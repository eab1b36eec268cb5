//! The machine's state, probed around each run of a sweep or a study: a cache line's one-way trip between the first
//! two CPUs this process may use (the ones `mpirun` binds two ranks to), `commperf limits`'
//! anchor, in a few ms.
//!
//! Why a probe at all: the shared VM this was built on moves its two vCPUs, for seconds to
//! minutes, between two cores that share a cache (a line crosses in 30–32 ns) and dies that
//! share none (150–169 ns), and the programs run 24–42 % slower in the latter. A run in another
//! state than the rest of a study is no failure of the program or of a prediction, and a
//! figure that mixes the two states is not comparable; so `emulate sweep` and `app` record each
//! run's state and say which figures came from another one.

use commperf_transport::clock::Clock;
use std::sync::OnceLock;

/// The probe between two CPUs (see the module's doc).
#[derive(Debug)]
pub struct MachineProbe {
    cpus: [usize; 2],
    clock: Clock,
}

impl MachineProbe {
    /// None with fewer than two CPUs to probe between.
    fn new() -> Option<Self> {
        let cpus = commperf_transport::affinity::allowed_cpus();
        (cpus.len() >= 2).then(|| MachineProbe {
            cpus: [cpus[0], cpus[1]],
            clock: Clock::calibrate(),
        })
    }

    /// One reading (ns), 3 batches of 2000 round trips. On a thread of its own, so that its
    /// pinning never reaches this process's next child.
    pub fn read(&self) -> Option<f64> {
        std::thread::scope(|s| {
            s.spawn(|| {
                commperf_bench::limits::cacheline_one_way_ns(&self.clock, self.cpus, 2000, 3).ok()
            })
            .join()
            .ok()
            .flatten()
        })
    }
}

/// The process's probe, made on first use: one clock calibration for every study and sweep
/// the process runs.
pub fn shared() -> Option<&'static MachineProbe> {
    static PROBE: OnceLock<Option<MachineProbe>> = OnceLock::new();
    PROBE.get_or_init(MachineProbe::new).as_ref()
}

/// Runs `f` between two readings of the shared probe; the run's state is their geometric mean,
/// None when they are two states (the machine changed during the run) or there is no probe.
pub fn around<T>(f: impl FnOnce() -> T) -> (T, Option<f64>) {
    let before = shared().and_then(MachineProbe::read);
    let r = f();
    let after = shared().and_then(MachineProbe::read);
    let state = before
        .zip(after)
        .and_then(|(b, a)| crate::sweep::run_state([b, a]));
    (r, state)
}
