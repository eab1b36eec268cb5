//! Accepting clients for `commperf serve` so that no client can hold the server.
//!
//! - **Handshakes run concurrently**, one short-lived thread per connection that has not
//!   authenticated yet, so an idle or slow connection delays nobody else.
//! - **One deadline per handshake** ([`ServeLimits::handshake`], from accept to a complete,
//!   authenticated hello), however the bytes trickle in.
//! - **A cap on pending connections** ([`ServeLimits::max_pending`]): a new connection beyond it
//!   closes the one that has waited longest. Oldest-first because the newest is most likely
//!   the user who is asking now, while a connection that has sat silent longest is the least
//!   likely to ever say hello; refusing the newest would let anyone who holds the cap's worth
//!   of idle connections lock everybody out.
//! - **Sessions are exclusive**: the handshake is concurrent, the measurement is not. A client
//!   that authenticates while a session runs waits up to [`BUSY_GRACE`] for it to end (so that
//!   runs a script starts one after the other never collide), then is refused with "busy: a
//!   session with … is running" rather than queued: a session can last many minutes, and a
//!   client waiting silently in a queue could not tell a busy server from a dead one.
//!
//! - **The log stays readable under a flood**: of each kind of event (connections closed to
//!   make room, connections turned away), the first [`LINES_PER_WINDOW`] of a
//!   [`ServeLimits::log_window`] get a line each and the rest one summary line with their count
//!   when the window ends, so a flood of any size writes at most `2 × (LINES_PER_WINDOW + 1)`
//!   lines per window instead of one per connection.
//!
//! Every pending connection costs two descriptors (the handshake's and the one kept to close it)
//! and one thread, so a server holds at most `2 × max_pending` of them however many strangers
//! connect.

use crate::bounds;
use crate::launch::{server_handshake_with, ClientHello, Control, LaunchError, MAX_CONTROL};
use std::collections::VecDeque;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long an authenticated client waits for a running session to end before it is told the
/// server is busy (never beyond its handshake deadline).
pub const BUSY_GRACE: Duration = Duration::from_secs(2);

/// Events of one kind logged one by one in each [`ServeLimits::log_window`]; the rest are
/// counted in one summary line at the window's end.
pub const LINES_PER_WINDOW: u32 = 3;

/// The default [`ServeLimits::log_window`].
pub const LOG_WINDOW: Duration = Duration::from_secs(10);

/// How long a handshake may take and how many may wait at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeLimits {
    /// From accept to a complete, authenticated hello.
    pub handshake: Duration,
    /// Connections held while they have not authenticated.
    pub max_pending: usize,
    /// Beyond [`LINES_PER_WINDOW`] events of a kind in this long, the rest are summarised.
    pub log_window: Duration,
}

impl Default for ServeLimits {
    fn default() -> Self {
        ServeLimits {
            handshake: bounds::HANDSHAKE_DEADLINE,
            max_pending: bounds::MAX_PENDING,
            log_window: LOG_WINDOW,
        }
    }
}

/// A connection that did not become a session, for the server's log.
#[derive(Debug)]
pub enum ServeEvent {
    /// Wrong token or protocol, a malformed or oversized hello, a deadline that passed, a
    /// connection closed before its hello, or a server busy with another session.
    TurnedAway { peer: String, error: LaunchError },
    /// Closed without a hello to make room for a newer connection.
    Evicted {
        peer: String,
        waited: Duration,
        cap: usize,
    },
    /// `accept` itself failed (out of descriptors, for instance).
    AcceptFailed { cause: io::Error },
    /// Events of one kind beyond the first [`LINES_PER_WINDOW`] of a window, counted instead
    /// of logged one by one.
    Summary {
        kind: EventKind,
        count: u64,
        window: Duration,
        cap: usize,
    },
}

/// The kinds of [`ServeEvent`] that a flood repeats, each summarised on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// [`ServeEvent::Evicted`].
    Evicted,
    /// [`ServeEvent::TurnedAway`].
    TurnedAway,
}

impl fmt::Display for ServeEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServeEvent::TurnedAway {
                peer,
                error: LaunchError::Refused { reason, .. },
            } => write!(f, "turned away {peer}: {reason}"),
            ServeEvent::TurnedAway {
                peer,
                error: LaunchError::Control { cause, .. },
            } => write!(f, "turned away {peer}: {cause}"),
            ServeEvent::TurnedAway {
                peer,
                error: LaunchError::Malformed { what, .. },
            } => write!(f, "turned away {peer}: malformed hello: {what}"),
            ServeEvent::TurnedAway {
                peer,
                error: LaunchError::ControlClosed { .. },
            } => write!(f, "{peer} closed the connection before its hello"),
            ServeEvent::TurnedAway { peer, error } => write!(f, "turned away {peer}: {error}"),
            ServeEvent::Evicted { peer, waited, cap } => write!(
                f,
                "closed {peer} after {:.1} s without a hello: {cap} connections were already \
                 waiting to authenticate, and the one that waited longest makes room",
                waited.as_secs_f64()
            ),
            ServeEvent::AcceptFailed { cause } => write!(f, "accept failed: {cause}"),
            ServeEvent::Summary {
                kind: EventKind::Evicted,
                count,
                window,
                cap,
            } => write!(
                f,
                "closed {count} more connections without a hello in the last {} s to make room \
                 ({cap} were already waiting to authenticate each time; only the first \
                 {LINES_PER_WINDOW} of a {} s window get a line each)",
                window.as_secs_f64(),
                window.as_secs_f64()
            ),
            ServeEvent::Summary {
                kind: EventKind::TurnedAway,
                count,
                window,
                ..
            } => write!(
                f,
                "turned away {count} more connections in the last {} s (only the first \
                 {LINES_PER_WINDOW} of a {} s window get a line each)",
                window.as_secs_f64(),
                window.as_secs_f64()
            ),
        }
    }
}

/// An authenticated client whose session may run now. The server is busy until it is dropped.
#[derive(Debug)]
pub struct Session {
    // Dropped first: a client that sees its connection close may start the next session.
    _slot: Slot,
    pub ctrl: Control,
    pub hello: ClientHello,
}

/// The one session that may run; cleared on drop.
struct Slot(Arc<Shared>);

impl fmt::Debug for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Slot")
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        *lock(&self.0.running) = None;
        self.0.freed.notify_all();
    }
}

struct PendingConn {
    id: u64,
    /// A second descriptor of the connection, to close it from here.
    stream: TcpStream,
    peer: String,
    since: Instant,
    evicted: Arc<AtomicBool>,
}

#[derive(Default)]
struct Pending {
    next_id: u64,
    conns: VecDeque<PendingConn>,
    /// Handshake threads still running.
    threads: usize,
}

/// Events of one kind in the current log window.
#[derive(Default)]
struct Tally {
    /// When the window opened (its first event); `None`: no window is open.
    opened: Option<Instant>,
    logged: u32,
    held: u64,
}

/// The log's two tallies, by [`EventKind`].
#[derive(Default)]
struct Tallies([Tally; 2]);

impl Tallies {
    fn of(&mut self, kind: EventKind) -> &mut Tally {
        &mut self.0[kind as usize]
    }
}

struct Shared {
    token: String,
    limits: ServeLimits,
    log: Box<dyn Fn(&ServeEvent) + Send + Sync>,
    tallies: Mutex<Tallies>,
    /// Written to when a log window opens, so that the accept loop wakes to close it in time.
    nudge: UnixStream,
    /// Who the running session is with, and since when.
    running: Mutex<Option<(String, Instant)>>,
    /// Signalled when the running session ends.
    freed: Condvar,
    pending: Mutex<Pending>,
    /// Signalled when the last handshake thread ends.
    drained: Condvar,
}

/// A poisoned lock only means a thread panicked while holding it; the data (a list of
/// connections, a name) stays usable, and the server must keep serving.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    /// Logs `ev`, or counts it if its kind has had its lines in this window.
    fn emit(&self, ev: &ServeEvent) {
        let kind = match ev {
            ServeEvent::Evicted { .. } => EventKind::Evicted,
            ServeEvent::TurnedAway { .. } => EventKind::TurnedAway,
            _ => return (self.log)(ev),
        };
        let now = Instant::now();
        // Held while logging: a summary never overtakes the events it counts.
        let mut t = lock(&self.tallies);
        self.close_window(&mut t, kind, now);
        let tally = t.of(kind);
        if tally.opened.is_none() {
            *tally = Tally {
                opened: Some(now),
                ..Tally::default()
            };
            // Best effort: a full socket already holds a nudge.
            let _ = (&self.nudge).write(&[1]);
        }
        if tally.logged < LINES_PER_WINDOW {
            tally.logged += 1;
            (self.log)(ev);
        } else {
            tally.held += 1;
        }
    }

    /// Closes `kind`'s window if it has ended by `now` (or `now` is `None`: the server is
    /// stopping), logging the summary of what it held.
    fn close_window(&self, t: &mut Tallies, kind: EventKind, now: impl Into<Option<Instant>>) {
        let window = self.limits.log_window;
        let tally = t.of(kind);
        let ended = match (tally.opened, now.into()) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(at), Some(now)) => now.saturating_duration_since(at) >= window,
        };
        if !ended {
            return;
        }
        if tally.held > 0 {
            (self.log)(&ServeEvent::Summary {
                kind,
                count: tally.held,
                window,
                cap: self.limits.max_pending,
            });
        }
        *tally = Tally::default();
    }

    /// Closes the windows that have ended (all of them if `stopping`); returns how long until
    /// the next open one ends.
    fn close_windows(&self, stopping: bool) -> Option<Duration> {
        let now = Instant::now();
        let mut t = lock(&self.tallies);
        let mut next = None::<Duration>;
        for kind in [EventKind::Evicted, EventKind::TurnedAway] {
            self.close_window(&mut t, kind, (!stopping).then_some(now));
            if let Some(at) = t.of(kind).opened {
                let left = (at + self.limits.log_window).saturating_duration_since(now);
                next = Some(next.map_or(left, |n| n.min(left)));
            }
        }
        next
    }

    /// Takes connection `id` off the pending list; false if it was closed to make room.
    fn take_pending(&self, id: u64) -> bool {
        let mut p = lock(&self.pending);
        match p.conns.iter().position(|c| c.id == id) {
            Some(i) => {
                p.conns.remove(i);
                true
            }
            None => false,
        }
    }

    fn thread_done(&self) {
        let mut p = lock(&self.pending);
        p.threads -= 1;
        if p.threads == 0 {
            self.drained.notify_all();
        }
    }

    /// The session slot for `peer`, waiting until `until` for a running session to end; or why
    /// not.
    fn claim(self: &Arc<Self>, peer: &str, until: Instant) -> Result<Slot, String> {
        let mut running = lock(&self.running);
        while running.is_some() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            running = self
                .freed
                .wait_timeout(running, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        if let Some((who, since)) = running.as_ref() {
            return Err(format!(
                "busy: a session with {who} is running (for {} s); sessions never overlap, so \
                 that measurements stay undisturbed: try again when it has finished",
                since.elapsed().as_secs()
            ));
        }
        *running = Some((peer.to_string(), Instant::now()));
        Ok(Slot(self.clone()))
    }

    /// Closes the connection that has waited longest; false if none waits.
    fn evict_oldest(&self) -> bool {
        let old = lock(&self.pending).conns.pop_front();
        let Some(old) = old else {
            return false;
        };
        old.evicted.store(true, Ordering::Release);
        // Its handshake thread sees the end of the stream at once and leaves.
        let _ = old.stream.shutdown(Shutdown::Both);
        self.emit(&ServeEvent::Evicted {
            peer: old.peer,
            waited: old.since.elapsed(),
            cap: self.limits.max_pending,
        });
        true
    }
}

/// The running accept loop of a server; stops (closing every pending connection) on drop.
pub struct Acceptor {
    sessions: Receiver<Session>,
    /// Dropping it wakes the accept loop to stop.
    wake: Option<UnixStream>,
    thread: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
}

impl fmt::Debug for Acceptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Acceptor")
            .field("limits", &self.shared.limits)
            .finish_non_exhaustive()
    }
}

impl Acceptor {
    pub(crate) fn start(
        listener: TcpListener,
        token: String,
        limits: ServeLimits,
        log: Box<dyn Fn(&ServeEvent) + Send + Sync>,
    ) -> Result<Acceptor, LaunchError> {
        let io_err = |what: &str| {
            let what = what.to_string();
            move |cause| LaunchError::Io { what, cause }
        };
        listener.set_nonblocking(true).map_err(io_err("listener"))?;
        let (wake, wake_rx) = UnixStream::pair().map_err(io_err("wake-up socket pair"))?;
        let (nudge, nudge_rx) = UnixStream::pair().map_err(io_err("log-window socket pair"))?;
        for s in [&nudge, &nudge_rx] {
            s.set_nonblocking(true)
                .map_err(io_err("log-window socket pair"))?;
        }
        let shared = Arc::new(Shared {
            token,
            limits,
            log,
            tallies: Mutex::new(Tallies::default()),
            nudge,
            running: Mutex::new(None),
            freed: Condvar::new(),
            pending: Mutex::new(Pending::default()),
            drained: Condvar::new(),
        });
        let (tx, sessions) = mpsc::channel();
        let sh = shared.clone();
        let thread = std::thread::Builder::new()
            .name("commperf-accept".into())
            .spawn(move || accept_loop(&listener, &wake_rx, &nudge_rx, &sh, &tx))
            .map_err(io_err("starting the accept thread"))?;
        Ok(Acceptor {
            sessions,
            wake: Some(wake),
            thread: Some(thread),
            shared,
        })
    }

    /// Waits for the next authenticated client. The server counts as busy until the returned
    /// session is dropped.
    pub fn next_session(&self) -> Result<Session, LaunchError> {
        self.sessions.recv().map_err(|_| LaunchError::Io {
            what: "accepting clients".into(),
            cause: io::Error::other("the accept loop stopped"),
        })
    }

    /// Connections now waiting to authenticate.
    pub fn pending(&self) -> usize {
        lock(&self.shared.pending).conns.len()
    }
}

impl Drop for Acceptor {
    fn drop(&mut self) {
        drop(self.wake.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn accept_loop(
    listener: &TcpListener,
    wake: &UnixStream,
    nudge: &UnixStream,
    sh: &Arc<Shared>,
    tx: &Sender<Session>,
) {
    // Out of descriptors with nobody to close (or another failing accept): wait a little
    // instead of spinning on a listener that stays readable.
    let mut backing_off = false;
    let mut last_fail_logged: Option<Instant> = None;
    loop {
        let mut fds = [
            libc::pollfd {
                fd: wake.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: nudge.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: listener.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // Wakes when the next log window ends, to write its summary.
        let window_ms = sh
            .close_windows(false)
            .map_or(-1, |d| d.as_millis().clamp(1, i32::MAX as u128) as i32);
        let (n, timeout) = if backing_off {
            (2, if window_ms < 0 { 50 } else { window_ms.min(50) })
        } else {
            (3, window_ms)
        };
        // SAFETY: `n` valid pollfds we own.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), n, timeout) };
        if r < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            break;
        }
        if fds[0].revents != 0 {
            break;
        }
        if fds[1].revents != 0 {
            let mut b = [0u8; 64];
            while matches!((&*nudge).read(&mut b), Ok(n) if n > 0) {}
        }
        if fds[2].revents == 0 && !backing_off {
            continue;
        }
        backing_off = false;
        loop {
            match listener.accept() {
                Ok((s, from)) => admit(sh, tx, s, format!("client {from}")),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let out_of_fds = matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE));
                    if out_of_fds && sh.evict_oldest() {
                        continue;
                    }
                    // A connection that died in the queue is its own problem; anything else
                    // would fail again at once.
                    backing_off =
                        !matches!(e.raw_os_error(), Some(libc::ECONNABORTED | libc::EPROTO));
                    if last_fail_logged.is_none_or(|t| t.elapsed() > Duration::from_secs(1)) {
                        (sh.log)(&ServeEvent::AcceptFailed { cause: e });
                        last_fail_logged = Some(Instant::now());
                    }
                    break;
                }
            }
        }
    }
    // Stopping: close every pending connection and wait for their threads, which leave at once.
    let mut p = lock(&sh.pending);
    for c in p.conns.drain(..) {
        c.evicted.store(true, Ordering::Release);
        let _ = c.stream.shutdown(Shutdown::Both);
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while p.threads > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        p = sh
            .drained
            .wait_timeout(p, left)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    drop(p);
    // Nothing counted goes unsaid.
    sh.close_windows(true);
}

/// Puts a new connection on the pending list (closing the longest-waiting one beyond the cap)
/// and starts its handshake.
fn admit(sh: &Arc<Shared>, tx: &Sender<Session>, s: TcpStream, peer: String) {
    let accepted = Instant::now();
    let _ = s.set_nodelay(true);
    let closer = match s.try_clone() {
        Ok(c) => c,
        Err(cause) => {
            (sh.log)(&ServeEvent::AcceptFailed { cause });
            return;
        }
    };
    while lock(&sh.pending).conns.len() >= sh.limits.max_pending.max(1) {
        if !sh.evict_oldest() {
            break;
        }
    }
    let evicted = Arc::new(AtomicBool::new(false));
    let id = {
        let mut p = lock(&sh.pending);
        let id = p.next_id;
        p.next_id += 1;
        p.conns.push_back(PendingConn {
            id,
            stream: closer,
            peer: peer.clone(),
            since: accepted,
            evicted: evicted.clone(),
        });
        p.threads += 1;
        id
    };
    let (sh2, tx) = (sh.clone(), tx.clone());
    let spawned = std::thread::Builder::new()
        .name("commperf-hello".into())
        .stack_size(256 << 10)
        .spawn(move || {
            handshake(&sh2, &tx, s, peer, id, &evicted, accepted);
            sh2.thread_done();
        });
    if let Err(cause) = spawned {
        // The closure, and the connection with it, is gone.
        sh.take_pending(id);
        sh.thread_done();
        (sh.log)(&ServeEvent::AcceptFailed { cause });
    }
}

fn handshake(
    sh: &Arc<Shared>,
    tx: &Sender<Session>,
    s: TcpStream,
    peer: String,
    id: u64,
    evicted: &AtomicBool,
    accepted: Instant,
) {
    let mut c = Control::new(Box::new(s), peer.clone());
    c.set_max_frame(bounds::MAX_HELLO);
    c.set_deadline_at(accepted + sh.limits.handshake, sh.limits.handshake);
    let deadline = accepted + sh.limits.handshake;
    let r = server_handshake_with(&mut c, &sh.token, || {
        // Waiting for a session to end, it still counts against the cap.
        let slot = sh.claim(&peer, deadline.min(Instant::now() + BUSY_GRACE))?;
        // Off the pending list before the welcome: from here on nothing closes it.
        if !sh.take_pending(id) {
            return Err("closed to make room for newer connections".into());
        }
        Ok(slot)
    });
    sh.take_pending(id);
    match r {
        Ok((hello, slot)) => {
            c.set_deadline(None);
            c.set_max_frame(MAX_CONTROL);
            // Strangers on the session's data ports are logged like those on this port.
            let log = sh.clone();
            c.set_event_log(Arc::new(move |ev| log.emit(ev)));
            // If nobody takes sessions any more (the server is stopping), dropping it frees
            // the slot.
            let _ = tx.send(Session {
                ctrl: c,
                hello,
                _slot: slot,
            });
        }
        // Logged by whoever closed it.
        Err(_) if evicted.load(Ordering::Acquire) => {}
        Err(error) => sh.emit(&ServeEvent::TurnedAway { peer, error }),
    }
}
