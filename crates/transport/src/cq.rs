//! Completion queues: one wait over many endpoints that says which one has work, instead of
//! asking each endpoint in turn (Kutluğ 2000, §3.3.9). One small trait, two realizations: an epoll
//! set (for the tcp and uds transports) and an io_uring whose completion queue receives a
//! multishot poll completion per endpoint that has input (for the uring transports, whose
//! process already speaks io_uring). Shared-memory rings have no kernel object to wait on; their
//! queue, [`crate::sys::shm::ShmCq`], is a ring in shared memory that the other process's
//! endpoints post to as they publish.

use crate::TransportError;
use io_uring::{cqueue, opcode, types, IoUring};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// One wait over many endpoints.
pub trait CompletionQueue {
    /// Waits up to `timeout_ms` (0: just look; -1: forever) and returns the key of one endpoint
    /// with input, if any.
    fn wait(&mut self, timeout_ms: i32) -> Result<Option<u64>, TransportError>;
}

macro_rules! forward_cq {
    ($($wrapper:ty),+) => {$(
        impl<Q: CompletionQueue + ?Sized> CompletionQueue for $wrapper {
            #[inline]
            fn wait(&mut self, timeout_ms: i32) -> Result<Option<u64>, TransportError> {
                (**self).wait(timeout_ms)
            }
        }
    )+};
}

forward_cq!(&mut Q, Box<Q>);

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
    pub fn wait_one(&self, timeout_ms: i32) -> Result<Option<u64>, TransportError> {
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

impl CompletionQueue for EpollSet {
    #[inline]
    fn wait(&mut self, timeout_ms: i32) -> Result<Option<u64>, TransportError> {
        self.wait_one(timeout_ms)
    }
}

/// An io_uring used as a completion queue: a multishot `POLL_ADD` per descriptor (its
/// `user_data` is the key) posts a completion each time that descriptor turns readable.
pub struct UringPollSet {
    ring: IoUring,
    /// (key, descriptor) of every armed poll, to re-arm one the kernel ended.
    watched: Vec<(u64, RawFd)>,
}

impl std::fmt::Debug for UringPollSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UringPollSet")
            .field("watched", &self.watched.len())
            .finish()
    }
}

impl UringPollSet {
    /// Entries of the completion queue: a burst of readiness on every endpoint must fit.
    const CQ_ENTRIES: u32 = 4096;

    pub fn new() -> Result<Self, TransportError> {
        let ring = IoUring::builder()
            .setup_cqsize(Self::CQ_ENTRIES)
            .setup_coop_taskrun()
            .setup_taskrun_flag()
            .build(64)
            .map_err(|e| TransportError::io("io_uring_setup for the completion queue", e))?;
        Ok(UringPollSet {
            ring,
            watched: Vec::new(),
        })
    }

    /// Watches `fd` for input, reporting it as `key`.
    pub fn add(&mut self, fd: RawFd, key: u64) -> Result<(), TransportError> {
        self.arm(fd, key)?;
        self.watched.push((key, fd));
        Ok(())
    }

    fn arm(&mut self, fd: RawFd, key: u64) -> Result<(), TransportError> {
        let e = opcode::PollAdd::new(types::Fd(fd), libc::POLLIN as u32)
            .multi(true)
            .build()
            .user_data(key);
        // SAFETY: a poll names no memory; the descriptor belongs to an endpoint the caller
        // keeps open while it uses this set.
        while unsafe { self.ring.submission().push(&e) }.is_err() {
            self.submit()?;
        }
        self.submit()
    }

    fn submit(&mut self) -> Result<(), TransportError> {
        match self.ring.submit() {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
            Err(e) => Err(TransportError::io("io_uring_enter (completion queue)", e)),
        }
    }

    /// Descriptors watched.
    pub fn len(&self) -> usize {
        self.watched.len()
    }

    pub fn is_empty(&self) -> bool {
        self.watched.is_empty()
    }

    fn reap(&mut self) -> Result<Option<u64>, TransportError> {
        let Some(c) = self.ring.completion().next() else {
            return Ok(None);
        };
        let key = c.user_data();
        if !cqueue::more(c.flags()) {
            // The kernel ended this multishot poll (an error, or a full completion queue):
            // arm it again so the endpoint stays watched.
            if let Some(&(_, fd)) = self.watched.iter().find(|w| w.0 == key) {
                self.arm(fd, key)?;
            }
        }
        if c.result() < 0 {
            return Err(TransportError::io(
                "io_uring poll (completion queue)",
                io::Error::from_raw_os_error(-c.result()),
            ));
        }
        Ok(Some(key))
    }
}

impl CompletionQueue for UringPollSet {
    #[inline]
    fn wait(&mut self, timeout_ms: i32) -> Result<Option<u64>, TransportError> {
        if let Some(k) = self.reap()? {
            return Ok(Some(k));
        }
        if timeout_ms == 0 {
            // Completions wait as task work until this process enters the kernel.
            if self.ring.submission().taskrun() {
                self.submit()?;
                return self.reap();
            }
            return Ok(None);
        }
        let limit = if timeout_ms < 0 {
            Duration::from_secs(u32::MAX as u64)
        } else {
            Duration::from_millis(timeout_ms as u64)
        };
        let ts = types::Timespec::from(limit);
        let args = types::SubmitArgs::new().timespec(&ts);
        match self.ring.submitter().submit_with_args(1, &args) {
            Ok(_) => {}
            Err(e)
                if e.raw_os_error() == Some(libc::ETIME)
                    || e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(TransportError::io("io_uring_enter (completion queue)", e)),
        }
        self.reap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::net::UnixStream;

    /// Five socket pairs, the first end of pair k watched as key 100 + k.
    fn five_watched(mut add: impl FnMut(RawFd, u64)) -> Vec<(UnixStream, UnixStream)> {
        let pairs: Vec<(UnixStream, UnixStream)> =
            (0..5).map(|_| UnixStream::pair().unwrap()).collect();
        for (k, (a, _)) in pairs.iter().enumerate() {
            add(a.as_raw_fd(), 100 + k as u64);
        }
        pairs
    }

    #[test]
    fn the_set_reports_the_endpoint_that_has_input() {
        let mut set = EpollSet::new().unwrap();
        let pairs = five_watched(|fd, k| set.add(fd, k).unwrap());
        assert_eq!(set.len(), 5);
        assert_eq!(set.wait(0).unwrap(), None, "nothing arrived yet");
        (&pairs[3].1).write_all(b"x").unwrap();
        assert_eq!(set.wait(1000).unwrap(), Some(103));
    }

    #[test]
    fn the_uring_queue_reports_each_arrival_with_its_key() {
        let mut set = UringPollSet::new().unwrap();
        let pairs = five_watched(|fd, k| set.add(fd, k).unwrap());
        assert_eq!(set.len(), 5);
        assert_eq!(set.wait(0).unwrap(), None, "nothing arrived yet");
        (&pairs[3].1).write_all(b"x").unwrap();
        assert_eq!(set.wait(1000).unwrap(), Some(103));
        // The poll stays armed: the next arrival, elsewhere, is reported too.
        (&pairs[1].1).write_all(b"y").unwrap();
        assert_eq!(set.wait(1000).unwrap(), Some(101));
        let start = std::time::Instant::now();
        assert_eq!(set.wait(200).unwrap(), None, "nothing more arrived");
        assert!(start.elapsed() >= Duration::from_millis(190));
    }
}
