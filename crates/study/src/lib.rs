//! The application study's pieces that need no binary, no MPI and no transport.
//!
//! [`verdict`]: what one run of a program said about itself. A benchmark program times its own
//! timed section and checks its own result; the launcher's wall time and exit status alone miss
//! both (a NAS program prints `Time in seconds = 0.70` inside a 1.06 s launch, and prints
//! `Verification = UNSUCCESSFUL` yet exits 0).

pub mod verdict;
