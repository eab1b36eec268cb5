//! The synchronization primitives of the runtime's lock-free structures (the event ring and the
//! request tables), from std in every real build and from `loom` under `--cfg loom`.
//!
//! Why a facade: `scripts/loom.sh` model-checks the ring and the request tables for every
//! interleaving of their threads. Loom can only see atomics, cells and threads of its own, so the
//! code it checks must use these names rather than std's; through this module the checked code is
//! the shipped code, not a copy of it. Everything outside those structures (the writer, the
//! registry of rings, the file) uses std directly.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Mutex};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Mutex};

#[cfg(all(test, loom))]
pub(crate) use loom::thread;
#[cfg(all(test, not(loom)))]
pub(crate) use std::thread;

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

/// std's `UnsafeCell` behind loom's closure-based interface: `with` and `with_mut` hand out the
/// raw pointer for the duration of an access, which loom checks for data races.
///
/// `repr(transparent)`: the ring's slots and its `tail_cache` are also written by the C shim
/// through the layout of the plain values (csrc/shim.c `cring`).
#[cfg(not(loom))]
#[repr(transparent)]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(v: T) -> UnsafeCell<T> {
        UnsafeCell(std::cell::UnsafeCell::new(v))
    }

    /// Reads through the pointer; the caller upholds that no one writes meanwhile.
    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Writes through the pointer; the caller upholds that no one else accesses meanwhile.
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}
