//! Completion queues: one wait over many endpoints that says which one has work, instead of
//! asking each endpoint in turn (seed 004 §3.3.9). Socket realizations offer their descriptor to
//! an epoll set; shared-memory rings have no kernel object to wait on, so shm has no completion
//! queue here (sweeping its rings is what the `conns` benchmark measures).

use crate::TransportError;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// An epoll set of endpoint descriptors, each registered with a key.
#[derive(Debug)]
pub struct EpollSet {
    epfd: OwnedFd,
    len: usize,
}

fn err(op: &str) -> TransportError {
    TransportError::io(op.to_string(), io::Error::last_os_error())
}

impl EpollSet {
    pub fn new() -> Result<Self, TransportError> {
        // SAFETY: epoll_create1 takes flags and returns a new descriptor or -1.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(err("epoll_create1"));
        }
        // SAFETY: fd is a fresh descriptor we own.
        let epfd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(EpollSet { epfd, len: 0 })
    }

    /// Watches `fd` for input (level-triggered), reporting it as `key`.
    pub fn add(&mut self, fd: RawFd, key: u64) -> Result<(), TransportError> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: key,
        };
        // SAFETY: valid epoll fd, a descriptor of an open endpoint and an initialized event.
        if unsafe { libc::epoll_ctl(self.epfd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) } < 0 {
            return Err(err("epoll_ctl"));
        }
        self.len += 1;
        Ok(())
    }

    /// Descriptors watched.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Waits up to `timeout_ms` (0: just look; -1: forever) and returns the key of one endpoint
    /// with input, if any.
    #[inline]
    pub fn wait(&self, timeout_ms: i32) -> Result<Option<u64>, TransportError> {
        let mut ev = libc::epoll_event { events: 0, u64: 0 };
        loop {
            // SAFETY: one writable event slot.
            let n = unsafe { libc::epoll_wait(self.epfd.as_raw_fd(), &mut ev, 1, timeout_ms) };
            if n > 0 {
                return Ok(Some(ev.u64));
            }
            if n == 0 {
                return Ok(None);
            }
            if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                return Err(err("epoll_wait"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::net::UnixStream;

    #[test]
    fn the_set_reports_the_endpoint_that_has_input() {
        let pairs: Vec<(UnixStream, UnixStream)> =
            (0..5).map(|_| UnixStream::pair().unwrap()).collect();
        let mut set = EpollSet::new().unwrap();
        for (k, (a, _)) in pairs.iter().enumerate() {
            set.add(a.as_raw_fd(), 100 + k as u64).unwrap();
        }
        assert_eq!(set.len(), 5);
        assert_eq!(set.wait(0).unwrap(), None, "nothing arrived yet");
        (&pairs[3].1).write_all(b"x").unwrap();
        assert_eq!(set.wait(1000).unwrap(), Some(103));
    }
}
