//! Realizations of [`crate::Endpoint`], one module each.

mod framing;
pub mod model;
pub mod shm;
pub mod socket;
pub mod tcp;
pub mod uds;
pub mod uring;
