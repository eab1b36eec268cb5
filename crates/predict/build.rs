//! The tests' capability cfgs (here SimGrid's smpirun): build-support/caps.rs.
include!("../../build-support/caps.rs");

fn main() {
    commperf_caps();
}
