//! Checks and helpers shared by the integration tests.

use serde_json::Value;

/// An extended test's cost as `commperf` judges it (crates/bench/src/cost.rs): the row's p50
/// less its baseline's when that is not negative; 0 when below zero within the row's noise
/// band; below zero beyond it only where the variant can save time (registered memory used in
/// place, a completion queue); otherwise absent, with a note saying why.
#[allow(dead_code)] // not every test file checks costs
pub fn assert_cost_judged(r: &Value) {
    let num = |k: &str| r[k].as_f64().unwrap_or_else(|| panic!("no {k} in {r}"));
    let raw = num("p50_us") - num("baseline_p50_us");
    let band = num("cost_noise_us");
    assert!(band >= 0.0, "{r}");
    // At the MPI layer every variant is judged as one that cannot save time: a variant below
    // its baseline beyond noise is left out there rather than measured again, since both ranks
    // would have to agree to repeat it (crates/mpi/src/suite.rs). Seen under load: a cq row
    // over MPI 0.1 µs below its baseline.
    let saving =
        r["transport"] != "mpi" && (r["buffers"] == "registered" || r["benchmark"] == "cq");
    match r["cost_us"].as_f64() {
        Some(c) if raw >= 0.0 => assert!((c - raw).abs() < 1e-9, "cost of {r}"),
        Some(c) if raw >= -band => assert_eq!(c, 0.0, "cost within noise of {r}"),
        Some(c) => {
            assert!(saving, "a negative cost beyond noise: {r}");
            assert!((c - raw).abs() < 1e-9, "saving of {r}");
        }
        None => {
            assert!(raw < -band && !saving, "cost left out: {r}");
            let notes = r["notes"].as_array().expect("a note says why");
            assert!(
                notes
                    .iter()
                    .any(|n| n.as_str().unwrap().contains("below its baseline")),
                "{r}"
            );
        }
    }
}

/// The CPUs this process may run on.
#[allow(dead_code)] // not every test file pins
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity writes at most its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is this thread; the size is the set's.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    assert_eq!(r, 0);
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: c is below CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}
