#![no_main]
// The reader and the properties checked live in commperf_fuzzing (one home for libFuzzer and
// the corpus test).
use commperf_fuzzing::{run, Target};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = run(Target::ResultJson, data);
});
