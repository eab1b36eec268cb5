//! Getting two ends connected: a control channel, a versioned handshake, and data-channel setup
//! for every realization, whether the peer is a process we started (`local`) or a
//! `commperf serve` on another host (`peer`).
//!
//! The control channel carries small length-prefixed JSON messages (bounded: a peer cannot make
//! us allocate more than [`MAX_CONTROL`] bytes). The client decides every option and the server
//! follows; the server is the side that listens or creates, the client the side that connects or
//! attaches, so the same code serves the local and the two-host case. Every data channel's first
//! message is the session token, so a stranger who finds the listening port gets nothing.

use crate::bounds::{self, BoundError};
use crate::sys::shm::{self, ShmEndpoint, ShmOptions};
use crate::sys::tcp::{self, TcpEndpoint};
use crate::sys::uds::{self, UdsEndpoint};
use crate::sys::uring::{UringEndpoint, UringOptions};
use crate::text::{one_line, printable, printable_debug};
use crate::{Endpoint, EndpointConfig, TransportError};
use commperf_core::{Mode, ProcessId, TransportKind};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// Version of the control protocol; both ends must speak the same. 2: the hello and the welcome
/// say which process each end is (so that neither reports the other as another measurement),
/// and a session's peer can watch for disturbance and send its findings.
pub const PROTOCOL_VERSION: u32 = 2;
/// Largest control message accepted.
pub const MAX_CONTROL: usize = 1 << 20;
const MAGIC: &str = "commperf";
/// Tag of the token message that opens every data channel.
pub const TOKEN_TAG: u32 = 0xC0DE_70CE;

/// Errors of the launch layer.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("control channel to {peer}: {cause}")]
    Control { peer: String, cause: io::Error },
    #[error("control channel to {peer}: peer closed the connection{}", phase_suffix(.phase))]
    ControlClosed { peer: String, phase: String },
    #[error("control message from {peer} is malformed: {what}")]
    Malformed { peer: String, what: String },
    #[error("{peer} refused the session: {reason}")]
    Refused { peer: String, reason: String },
    #[error("{peer} reported an error: {message}")]
    Remote { peer: String, message: String },
    #[error(transparent)]
    Transport(#[from] TransportError),
    #[error("{what}: {cause}")]
    Io { what: String, cause: io::Error },
    /// A request outside the bounds both ends share, refused before it was sent or used.
    #[error(transparent)]
    Bound(#[from] BoundError),
}

fn phase_suffix(p: &str) -> String {
    if p.is_empty() {
        String::new()
    } else {
        format!(" during {p}")
    }
}

/// A stream that can carry the control channel.
pub trait ControlStream: Read + Write + Send + std::fmt::Debug {
    fn set_timeout(&self, t: Option<Duration>) -> io::Result<()>;
}

impl ControlStream for TcpStream {
    fn set_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.set_read_timeout(t)?;
        self.set_write_timeout(t)
    }
}

impl ControlStream for UnixStream {
    fn set_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.set_read_timeout(t)?;
        self.set_write_timeout(t)
    }
}

/// Sets the time left until `at` as the stream's timeout; `TimedOut` once it has passed.
fn arm(stream: &dyn ControlStream, at: Instant) -> io::Result<()> {
    let left = at.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(io::ErrorKind::TimedOut.into());
    }
    // A zero timeout means "none" to the socket: never hand it one.
    stream.set_timeout(Some(left.max(Duration::from_millis(1))))
}

/// Fills `buf` by `at`, however the bytes trickle in (a per-read timeout would let one byte per
/// timeout hold us forever).
fn read_until(stream: &mut dyn ControlStream, buf: &mut [u8], at: Instant) -> io::Result<()> {
    let mut off = 0;
    while off < buf.len() {
        arm(stream, at)?;
        match stream.read(&mut buf[off..]) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => off += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Where a server reports connections it turned away (see [`crate::serve::ServeEvent`]).
pub type EventLog = std::sync::Arc<dyn Fn(&crate::serve::ServeEvent) + Send + Sync>;

struct Reporter(Option<EventLog>);

impl std::fmt::Debug for Reporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Some(EventLog)"
        } else {
            "None"
        })
    }
}

/// The control channel: framed JSON messages with a bound and a timeout.
#[derive(Debug)]
pub struct Control {
    stream: Box<dyn ControlStream>,
    peer: String,
    phase: String,
    /// Largest frame accepted (smaller while a stranger has not authenticated).
    max_frame: usize,
    /// One deadline for everything until it is cleared (when it is, and how long it allowed).
    deadline: Option<(Instant, Duration)>,
    /// Hears of strangers turned away from this session's data ports.
    events: Reporter,
    /// The process at the other end, once the handshake has said it, and any other process of
    /// the same measurement the caller added ([`Control::add_partners`]).
    partners: Vec<ProcessId>,
}

impl Control {
    pub fn new(stream: Box<dyn ControlStream>, peer: String) -> Self {
        Control {
            stream,
            peer,
            phase: String::new(),
            max_frame: MAX_CONTROL,
            deadline: None,
            events: Reporter(None),
            partners: Vec::new(),
        }
    }

    /// The processes of this session's measurement besides this one: the other end, as its
    /// hello or welcome said (none before the handshake, or from a client that did not say),
    /// and those added with [`Control::add_partners`].
    pub fn partners(&self) -> &[ProcessId] {
        &self.partners
    }

    /// Adds processes that are part of this session's measurement (the other ranks of an MPI
    /// job), so that its watch does not report them as other measurements.
    pub fn add_partners(&mut self, more: impl IntoIterator<Item = ProcessId>) {
        self.partners.extend(more);
    }

    /// Reports to `log` every connection that a data port of this session turns away (by
    /// default they are only counted in the error if the client never comes).
    pub fn set_event_log(&mut self, log: EventLog) {
        self.events = Reporter(Some(log));
    }

    fn report(&self, event: &crate::serve::ServeEvent) {
        if let Some(log) = &self.events.0 {
            log(event);
        }
    }

    /// Refuses frames above `max` (at most [`MAX_CONTROL`]) before allocating them.
    pub fn set_max_frame(&mut self, max: usize) {
        self.max_frame = max.min(MAX_CONTROL);
    }

    /// Bounds every later send and receive by one deadline, `within` from now, however the
    /// bytes trickle in (a per-read timeout would let one byte per timeout hold us forever).
    /// `None` returns to the per-read timeout of [`Control::set_timeout`], which the caller sets
    /// again.
    pub fn set_deadline(&mut self, within: Option<Duration>) {
        self.deadline = within.map(|d| (Instant::now() + d, d));
    }

    /// Bounds everything until `at` (see [`Control::set_deadline`]); `total` is what is named
    /// when it passes.
    pub fn set_deadline_at(&mut self, at: Instant, total: Duration) {
        self.deadline = Some((at, total));
    }

    /// Before each write under a deadline: the time left as the socket's timeout.
    fn arm_deadline(&mut self) -> io::Result<()> {
        match self.deadline {
            Some((at, _)) => arm(&*self.stream, at),
            None => Ok(()),
        }
    }

    fn read_full(&mut self, buf: &mut [u8]) -> io::Result<()> {
        match self.deadline {
            None => self.stream.read_exact(buf),
            Some((at, _)) => read_until(&mut *self.stream, buf, at),
        }
    }

    /// Names the peer in every later error.
    pub fn peer(&self) -> &str {
        &self.peer
    }

    pub fn set_peer(&mut self, peer: String) {
        self.peer = peer;
    }

    /// What the session is doing now, named in a closed-connection error.
    pub fn set_phase(&mut self, phase: impl Into<String>) {
        self.phase = phase.into();
    }

    /// Sets the longest wait for a message.
    pub fn set_timeout(&mut self, t: Duration) -> Result<(), LaunchError> {
        self.stream.set_timeout(Some(t)).map_err(|e| self.err(e))
    }

    fn err(&self, e: io::Error) -> LaunchError {
        match e.kind() {
            io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::BrokenPipe => LaunchError::ControlClosed {
                peer: self.peer.clone(),
                phase: self.phase.clone(),
            },
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                let what = match self.deadline {
                    Some((at, total)) if Instant::now() + Duration::from_millis(50) >= at => {
                        format!(
                            "{} not completed within its {} s deadline",
                            if self.phase.is_empty() {
                                "exchange"
                            } else {
                                &self.phase
                            },
                            total.as_secs_f64()
                        )
                    }
                    _ => format!("no answer{} (timed out)", phase_suffix(&self.phase)),
                };
                LaunchError::Control {
                    peer: self.peer.clone(),
                    cause: io::Error::new(io::ErrorKind::TimedOut, what),
                }
            }
            _ => LaunchError::Control {
                peer: self.peer.clone(),
                cause: e,
            },
        }
    }

    /// Sends one message.
    pub fn send<T: Serialize>(&mut self, msg: &T) -> Result<(), LaunchError> {
        let body = serde_json::to_vec(msg).expect("control messages serialize");
        let mut frame = Vec::with_capacity(4 + body.len());
        frame.extend_from_slice(&(body.len() as u32).to_le_bytes());
        frame.extend_from_slice(&body);
        self.arm_deadline()
            .and_then(|_| self.stream.write_all(&frame))
            .and_then(|_| self.stream.flush())
            .map_err(|e| self.err(e))
    }

    /// Receives one message, refusing frames above the limit ([`MAX_CONTROL`], or
    /// [`Control::set_max_frame`]) before allocating them.
    pub fn recv<T: DeserializeOwned>(&mut self) -> Result<T, LaunchError> {
        let mut len = [0u8; 4];
        self.read_full(&mut len).map_err(|e| self.err(e))?;
        let len = u32::from_le_bytes(len) as usize;
        if len > self.max_frame {
            return Err(LaunchError::Malformed {
                peer: self.peer.clone(),
                what: format!(
                    "frame of {len} bytes exceeds the {}-byte limit{}",
                    self.max_frame,
                    phase_suffix(&self.phase)
                ),
            });
        }
        let mut body = vec![0u8; len];
        self.read_full(&mut body).map_err(|e| self.err(e))?;
        // serde names unknown variants and fields as the peer spelled them.
        serde_json::from_slice(&body).map_err(|e| LaunchError::Malformed {
            peer: self.peer.clone(),
            what: printable(&e.to_string()),
        })
    }
}

/// Messages of the handshake and data-channel setup.
// A data spec carries two fragment plans (about 270 bytes); a setup message is built a few
// times per session, so boxing it would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SetupMsg {
    Hello {
        magic: String,
        protocol: u32,
        version: String,
        token: String,
        /// The client process (protocol 2; a hand-made client may leave it out, and is then
        /// not told apart from other measurements).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        process: Option<ProcessId>,
    },
    Welcome {
        protocol: u32,
        version: String,
        pid: u32,
        hostname: String,
        /// The server process (protocol 2).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        process: Option<ProcessId>,
    },
    Refused {
        reason: String,
    },
    /// Client → server: build a data channel like this.
    Data(DataSpec),
    /// Server → client: where to connect or attach.
    Offer {
        address: String,
    },
    /// Server → client: the data channel is up and the token checked.
    DataReady,
    /// Either way: something failed; the session ends.
    Error {
        message: String,
    },
}

/// How to build a data channel; chosen by the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataSpec {
    pub transport: TransportKind,
    pub mode: Mode,
    pub max_message: usize,
    pub idle_timeout_ms: u64,
    pub shm_ring_bytes: usize,
    pub shm_frag_bytes: usize,
    pub shm_single_copy_from: Option<usize>,
    /// shm: the fragment size per message length each end sends in (`None`: `shm_frag_bytes`
    /// for every message; then `shm_frag_bytes` is also the largest piece, else only that).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shm_fragments: Option<crate::FragmentPlan>,
    /// tcp, uds: the most payload bytes per `sendmsg` per message length (`None`: whole).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket_fragments: Option<crate::FragmentPlan>,
    /// An additional channel the server only keeps open (the conns benchmark).
    #[serde(default)]
    pub extra: bool,
    /// io_uring transports: a kernel thread polls the submission queue.
    #[serde(default)]
    pub uring_sqpoll: bool,
}

impl DataSpec {
    pub fn new(transport: TransportKind, mode: Mode, max_message: usize) -> Self {
        let o = ShmOptions::default();
        DataSpec {
            transport,
            mode,
            max_message,
            idle_timeout_ms: 60_000,
            shm_ring_bytes: o.ring_bytes,
            shm_frag_bytes: o.frag_bytes,
            shm_single_copy_from: o.single_copy_from,
            shm_fragments: o.fragments,
            socket_fragments: None,
            extra: false,
            uring_sqpoll: false,
        }
    }

    pub fn endpoint_config(&self) -> EndpointConfig {
        EndpointConfig {
            mode: self.mode,
            max_message: self.max_message,
            idle_timeout: Duration::from_millis(self.idle_timeout_ms),
            block_spins: 0,
        }
    }

    /// Held-open extra channels get small registered buffers and no SQPOLL thread: a thousand
    /// of them must not pin hundreds of MiB or start a thousand kernel pollers.
    fn uring_options(&self) -> UringOptions {
        if self.extra {
            UringOptions::small()
        } else {
            UringOptions {
                sqpoll: self.uring_sqpoll,
                ..UringOptions::default()
            }
        }
    }

    fn shm_options(&self) -> ShmOptions {
        ShmOptions {
            ring_bytes: self.shm_ring_bytes,
            frag_bytes: self.shm_frag_bytes,
            single_copy_from: self.shm_single_copy_from,
            fragments: self.shm_fragments,
        }
    }

    /// The spec of a channel held open beside this one (the conns benchmark): the smallest
    /// rings, since it carries nothing but the token.
    pub fn held_open(&self) -> DataSpec {
        DataSpec {
            extra: true,
            shm_ring_bytes: bounds::MAX_EXTRA_SHM_RING_BYTES,
            shm_frag_bytes: 8 << 10,
            shm_fragments: None,
            socket_fragments: None,
            ..*self
        }
    }

    /// Checks every size in the spec against [`crate::bounds`]: the server before it builds
    /// anything, the client before it asks. Bounds that depend on the whole session (how many
    /// extra channels, how much memory in all) are the session's to check.
    pub fn check(&self) -> Result<(), BoundError> {
        use bounds::*;
        at_most_bytes("max_message", self.max_message as u64, MAX_SIZE)?;
        within(
            "idle_timeout_ms",
            self.idle_timeout_ms,
            1,
            MAX_IDLE_TIMEOUT_MS,
        )?;
        if let Some(from) = self.shm_single_copy_from {
            at_most_bytes("shm_single_copy_from", from as u64, MAX_SIZE)?;
        }
        if let Some(p) = &self.socket_fragments {
            p.check("socket_fragments", 1, MAX_SIZE as usize)?;
        }
        if self.transport != TransportKind::Shm {
            return Ok(());
        }
        let (ring_field, max_ring) = if self.extra {
            (
                "shm_ring_bytes (held-open channel)",
                MAX_EXTRA_SHM_RING_BYTES,
            )
        } else {
            ("shm_ring_bytes", MAX_SHM_RING_BYTES)
        };
        at_most_bytes(ring_field, self.shm_ring_bytes as u64, max_ring as u64)?;
        if self.shm_ring_bytes < MIN_SHM_RING_BYTES || !self.shm_ring_bytes.is_power_of_two() {
            return Err(BoundError::new(
                ring_field,
                self.shm_ring_bytes,
                format!("a power of two between {MIN_SHM_RING_BYTES} and {max_ring}"),
            ));
        }
        within(
            "shm_frag_bytes",
            self.shm_frag_bytes,
            MIN_SHM_FRAG_BYTES,
            max_shm_frag_bytes(self.shm_ring_bytes),
        )
        .map_err(|mut e| {
            e.rule += &format!(
                " (a quarter of the {} B ring, less 64)",
                self.shm_ring_bytes
            );
            e
        })?;
        match &self.shm_fragments {
            Some(p) => p.check("shm_fragments", MIN_SHM_FRAG_BYTES, self.shm_frag_bytes),
            None => Ok(()),
        }
    }

    /// Memory the server holds for this channel (the client's end holds about the same): the
    /// shared segment, io_uring's registered buffers and ring, or a socket endpoint's staging
    /// buffers. Call after [`DataSpec::check`].
    pub fn memory_bytes(&self) -> u64 {
        use crate::sys::socket::{HEADER_LEN, READ_BUF_LEN, SEND_CHUNK};
        // Submission and completion rings of a small io_uring, and the socket's staging.
        const URING_RING: u64 = 16 << 10;
        let socket =
            (READ_BUF_LEN + SEND_CHUNK.min(HEADER_LEN.saturating_add(self.max_message))) as u64;
        match self.transport {
            TransportKind::Shm => shm::segment_bytes(self.shm_ring_bytes) as u64,
            TransportKind::Tcp | TransportKind::Uds => socket,
            TransportKind::UringTcp | TransportKind::UringUds => {
                let o = self.uring_options();
                URING_RING + (o.send_buf_bytes + o.recv_buf_bytes) as u64
            }
            TransportKind::Model | TransportKind::Mpi => 0,
        }
    }

    /// Descriptors the server holds for this channel once it is up.
    pub fn descriptors(&self) -> u64 {
        match self.transport {
            // The peer's pidfd (the segment's own descriptor is closed once mapped).
            TransportKind::Shm => 1,
            TransportKind::Tcp | TransportKind::Uds => 1,
            // The socket and the ring.
            TransportKind::UringTcp | TransportKind::UringUds => 2,
            TransportKind::Model | TransportKind::Mpi => 0,
        }
    }
}

/// What the server learned about the client in the handshake.
#[derive(Debug, Clone)]
pub struct ClientHello {
    pub version: String,
    /// The client process, where it said.
    pub process: Option<ProcessId>,
}

/// What the client learned about the server.
#[derive(Debug, Clone)]
pub struct ServerHello {
    pub version: String,
    pub pid: u32,
    pub hostname: String,
    /// The server process, where it said.
    pub process: Option<ProcessId>,
}

/// A fresh random session token (128 bits, hex).
pub fn new_token() -> String {
    let mut b = [0u8; 16];
    let ok = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .is_ok();
    assert!(
        ok,
        "/dev/urandom is unreadable: cannot make a session token"
    );
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn same_token(a: &str, b: &str) -> bool {
    // Length leaks nothing useful (tokens have a fixed length); compare every byte regardless.
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// Local hostname, for reports and welcome messages.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// Client side of the handshake.
pub fn client_handshake(ctrl: &mut Control, token: &str) -> Result<ServerHello, LaunchError> {
    ctrl.set_phase("handshake");
    ctrl.send(&SetupMsg::Hello {
        magic: MAGIC.into(),
        protocol: PROTOCOL_VERSION,
        version: env!("CARGO_PKG_VERSION").into(),
        token: token.into(),
        process: Some(ProcessId::me()),
    })?;
    match ctrl.recv::<SetupMsg>()? {
        SetupMsg::Welcome {
            protocol,
            version,
            pid,
            hostname,
            process,
        } if protocol == PROTOCOL_VERSION => {
            ctrl.partners.extend(process.clone());
            Ok(ServerHello {
                version,
                pid,
                hostname,
                process,
            })
        }
        SetupMsg::Welcome {
            protocol, version, ..
        } => Err(LaunchError::Refused {
            peer: ctrl.peer().into(),
            reason: format!(
                "it speaks protocol {protocol} (commperf {}), we speak {PROTOCOL_VERSION}",
                printable(&version)
            ),
        }),
        SetupMsg::Refused { reason } => Err(LaunchError::Refused {
            peer: ctrl.peer().into(),
            reason: one_line(&reason),
        }),
        other => Err(unexpected(ctrl, &other)),
    }
}

fn unexpected(ctrl: &Control, m: &SetupMsg) -> LaunchError {
    LaunchError::Malformed {
        peer: ctrl.peer().into(),
        what: format!("unexpected message {}", printable_debug(m)),
    }
}

/// Server side of the handshake: refuses (with a message to the client) a wrong magic, protocol
/// version or token.
pub fn server_handshake(ctrl: &mut Control, token: &str) -> Result<ClientHello, LaunchError> {
    server_handshake_with(ctrl, token, || Ok(())).map(|(hello, ())| hello)
}

/// [`server_handshake`] that, once the client has proven it holds the token, asks `admit`
/// whether it may start a session now; `Err(reason)` refuses it with that reason (a server
/// busy with another session). What `admit` returns is handed back with the hello, and dropped
/// if the welcome cannot be sent.
pub fn server_handshake_with<T>(
    ctrl: &mut Control,
    token: &str,
    admit: impl FnOnce() -> Result<T, String>,
) -> Result<(ClientHello, T), LaunchError> {
    ctrl.set_phase("handshake");
    let refuse = |ctrl: &mut Control, reason: String| {
        let _ = ctrl.send(&SetupMsg::Refused {
            reason: reason.clone(),
        });
        Err(LaunchError::Refused {
            peer: ctrl.peer().into(),
            reason,
        })
    };
    match ctrl.recv::<SetupMsg>() {
        Ok(SetupMsg::Hello {
            magic,
            protocol,
            version,
            token: t,
            process,
        }) => {
            if magic != MAGIC {
                let magic = printable(&magic);
                return refuse(ctrl, format!("not a commperf client (magic '{magic}')"));
            }
            if protocol != PROTOCOL_VERSION {
                return refuse(
                    ctrl,
                    format!(
                        "protocol version {protocol} (commperf {}) is not supported; this \
                         server speaks {PROTOCOL_VERSION} (commperf {})",
                        printable(&version),
                        env!("CARGO_PKG_VERSION")
                    ),
                );
            }
            if !same_token(&t, token) {
                return refuse(ctrl, "wrong session token".into());
            }
            let admitted = match admit() {
                Ok(a) => a,
                Err(reason) => return refuse(ctrl, reason),
            };
            ctrl.send(&SetupMsg::Welcome {
                protocol: PROTOCOL_VERSION,
                version: env!("CARGO_PKG_VERSION").into(),
                pid: std::process::id(),
                hostname: hostname(),
                process: Some(ProcessId::me()),
            })?;
            ctrl.partners.extend(process.clone());
            Ok((ClientHello { version, process }, admitted))
        }
        Ok(other) => refuse(
            ctrl,
            format!("expected a hello, got {}", printable_debug(&other)),
        ),
        Err(e @ LaunchError::Malformed { .. }) => {
            let _ = ctrl.send(&SetupMsg::Refused {
                reason: e.to_string(),
            });
            Err(e)
        }
        Err(e) => {
            // A deadline that passed: say so to a client that is merely slow.
            if let LaunchError::Control { cause, .. } = &e {
                if cause.kind() == io::ErrorKind::TimedOut {
                    let reason = cause.to_string();
                    ctrl.set_deadline(None);
                    if ctrl.set_timeout(Duration::from_millis(200)).is_ok() {
                        let _ = ctrl.send(&SetupMsg::Refused { reason });
                    }
                }
            }
            Err(e)
        }
    }
}

/// A connected endpoint of any realization; benchmarks dispatch on it once, outside their loops.
#[derive(Debug)]
pub enum AnyEndpoint {
    Shm(ShmEndpoint),
    Tcp(TcpEndpoint),
    Uds(UdsEndpoint),
    UringTcp(UringEndpoint<TcpStream>),
    UringUds(UringEndpoint<UnixStream>),
}

/// Runs `$body` with `$e` bound to the concrete endpoint inside an [`AnyEndpoint`], so the code
/// in `$body` is monomorphized per realization.
#[macro_export]
macro_rules! with_endpoint {
    ($any:expr, $e:ident => $body:expr) => {
        match $any {
            $crate::launch::AnyEndpoint::Shm($e) => $body,
            $crate::launch::AnyEndpoint::Tcp($e) => $body,
            $crate::launch::AnyEndpoint::Uds($e) => $body,
            $crate::launch::AnyEndpoint::UringTcp($e) => $body,
            $crate::launch::AnyEndpoint::UringUds($e) => $body,
        }
    };
}

impl AnyEndpoint {
    pub fn info(&self) -> &crate::EndpointInfo {
        with_endpoint!(self, e => e.info())
    }

    /// The descriptor a completion queue can watch, if the realization has one.
    pub fn completion_fd(&self) -> Option<std::os::fd::RawFd> {
        match self {
            AnyEndpoint::Shm(_) => None,
            AnyEndpoint::Tcp(e) => Some(e.as_raw_fd()),
            AnyEndpoint::Uds(e) => Some(e.as_raw_fd()),
            AnyEndpoint::UringTcp(e) => Some(e.as_raw_fd()),
            AnyEndpoint::UringUds(e) => Some(e.as_raw_fd()),
        }
    }
}

/// Whether `t` lends registered memory on its lending path (`send_with`/`recv_with` work in the
/// shm segment, or in io_uring's fixed buffers), so that using it in place saves the copies.
pub fn has_registered_memory(t: TransportKind) -> bool {
    matches!(
        t,
        TransportKind::Shm | TransportKind::UringTcp | TransportKind::UringUds
    )
}

/// Whether `t` can put its endpoints on a completion queue (epoll for sockets, an io_uring for
/// the uring transports, a shared-memory queue the peer posts to for shm) ([`crate::cq`]).
pub fn has_completion_queue(t: TransportKind) -> bool {
    t != TransportKind::Model
}

impl crate::Readiness for AnyEndpoint {
    #[inline]
    fn readable_now(&self) -> Result<bool, TransportError> {
        with_endpoint!(self, e => e.readable_now())
    }

    fn check_alive(&self) -> Result<(), TransportError> {
        with_endpoint!(self, e => e.check_alive())
    }
}

fn accept_within<L, S>(
    what: &str,
    fd: i32,
    timeout: Duration,
    accept: impl FnOnce() -> io::Result<(S, L)>,
) -> Result<(S, L), LaunchError> {
    if timeout.is_zero() {
        return Err(never_connected(what, "the client never connected".into()));
    }
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the listener's fd.
    let r = unsafe { libc::poll(&mut p, 1, timeout.as_millis().min(i32::MAX as u128) as i32) };
    if r <= 0 {
        return Err(never_connected(what, "the client never connected".into()));
    }
    accept().map_err(|e| LaunchError::Io {
        what: format!("accept on {what}"),
        cause: e,
    })
}

fn never_connected(port: &str, why: String) -> LaunchError {
    LaunchError::Io {
        what: format!("waiting for the data connection on {port}"),
        cause: io::Error::new(io::ErrorKind::TimedOut, why),
    }
}

/// How long a connection to a data port may take to present the session token. The client
/// sends it as soon as it is connected, so a connection that takes longer is not the client's.
pub const DATA_TOKEN_WAIT: Duration = bounds::HANDSHAKE_DEADLINE;

/// Accepts connections on the data port `port` until `until`, and returns the first that
/// presents the session token (read from the raw stream, in the header-and-payload framing
/// every socket endpoint uses). A stranger who connects first is closed and reported on
/// `ctrl`'s event log, and the port keeps waiting for the client; if the client never comes,
/// the error counts the strangers and names the first.
fn accept_client<S: ControlStream>(
    ctrl: &Control,
    port: &str,
    fd: i32,
    until: Instant,
    token: &str,
    mut accept: impl FnMut() -> io::Result<(S, String)>,
) -> Result<S, LaunchError> {
    let mut strangers = 0usize;
    let mut first = String::new();
    loop {
        let left = until.saturating_duration_since(Instant::now());
        let (mut s, from) = match accept_within(port, fd, left, &mut accept) {
            Ok(c) => c,
            Err(LaunchError::Io { cause, .. })
                if strangers > 0 && cause.kind() == io::ErrorKind::TimedOut =>
            {
                return Err(never_connected(
                    port,
                    format!(
                        "the client never connected; {strangers} connection(s) that were not                          the client's were turned away, the first {first}"
                    ),
                ));
            }
            Err(e) => return Err(e),
        };
        let wait = DATA_TOKEN_WAIT.min(left);
        match read_token(&mut s, token, wait) {
            Ok(()) => {
                s.set_timeout(None).map_err(|cause| LaunchError::Io {
                    what: format!("data connection from {from}"),
                    cause,
                })?;
                return Ok(s);
            }
            Err(reason) => {
                strangers += 1;
                if strangers == 1 {
                    first = format!("(from {from}) {reason}");
                }
                let peer = format!(
                    "a connection from {from} to the data port {port} of the session with {}",
                    ctrl.peer()
                );
                ctrl.report(&crate::serve::ServeEvent::TurnedAway {
                    error: LaunchError::Refused {
                        peer: peer.clone(),
                        reason,
                    },
                    peer,
                });
            }
        }
    }
}

/// Reads the token message a data connection opens with, within `wait`; or why it is not the
/// client's (never the bytes it sent: a wrong guess at the token stays out of the log).
fn read_token(s: &mut dyn ControlStream, token: &str, wait: Duration) -> Result<(), String> {
    use crate::sys::socket::{parse_header, HEADER_LEN};
    let at = Instant::now() + wait;
    let io_why = |e: io::Error| match e.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => {
            format!("presented no session token within {} s", wait.as_secs_f64())
        }
        io::ErrorKind::UnexpectedEof => "closed without presenting the session token".into(),
        _ => format!("failed before presenting the session token: {e}"),
    };
    let not_token = "sent something other than the session token".to_string();
    let mut h = [0u8; HEADER_LEN];
    read_until(s, &mut h, at).map_err(io_why)?;
    let (tag, len) = parse_header(&h, bounds::MAX_TOKEN, "").map_err(|_| not_token.clone())?;
    if tag != TOKEN_TAG {
        return Err(not_token);
    }
    let mut t = [0u8; bounds::MAX_TOKEN];
    read_until(s, &mut t[..len], at).map_err(io_why)?;
    if !same_token(std::str::from_utf8(&t[..len]).unwrap_or(""), token) {
        return Err("presented a wrong session token".into());
    }
    Ok(())
}

fn check_token<E: Endpoint>(e: &mut E, token: &str) -> Result<(), LaunchError> {
    let mut buf = [0u8; 64];
    let peer = e.info().peer.clone();
    let bad = || LaunchError::Refused {
        peer,
        reason: "the data channel did not present the session token".into(),
    };
    match e.recv(&mut buf) {
        Ok(i)
            if i.tag == TOKEN_TAG
                && same_token(std::str::from_utf8(&buf[..i.len]).unwrap_or(""), token) =>
        {
            Ok(())
        }
        Ok(_) | Err(TransportError::Truncated { .. }) => Err(bad()),
        Err(e) => Err(e.into()),
    }
}

/// Server side: builds the data channel the client asked for, listening on `bind_ip` for
/// sockets, and checks the token on it. Reports failures to the client before returning them.
/// `pause`: a test's kill point in creating a shared-memory segment (`--pause-shm-create`).
pub fn serve_data(
    ctrl: &mut Control,
    spec: &DataSpec,
    bind_ip: IpAddr,
    token: &str,
    pause: Option<shm::ShmPause>,
) -> Result<AnyEndpoint, LaunchError> {
    ctrl.set_phase(format!("{} data channel setup", spec.transport));
    let r = match spec.check() {
        Ok(()) => serve_data_inner(ctrl, spec, bind_ip, token, pause),
        Err(e) => Err(e.into()),
    };
    match r {
        Ok(mut ep) => {
            socket_fragments(&mut ep, spec);
            ctrl.send(&SetupMsg::DataReady)?;
            Ok(ep)
        }
        Err(e) => {
            let _ = ctrl.send(&SetupMsg::Error {
                message: format!("{e:#}"),
            });
            Err(e)
        }
    }
}

fn serve_data_inner(
    ctrl: &mut Control,
    spec: &DataSpec,
    bind_ip: IpAddr,
    token: &str,
    pause: Option<shm::ShmPause>,
) -> Result<AnyEndpoint, LaunchError> {
    let cfg = spec.endpoint_config();
    let wait = cfg.idle_timeout.min(Duration::from_secs(30));
    let until = Instant::now() + wait;
    match spec.transport {
        TransportKind::Model | TransportKind::Mpi => Err(not_launchable(spec.transport)),
        TransportKind::Shm => {
            shm::remove_stale_segments();
            let seg = shm::ShmSegment::create_pausing(spec.shm_options(), spec.max_message, pause)?;
            ctrl.send(&SetupMsg::Offer {
                address: seg.name().into(),
            })?;
            let mut e = seg.accept(cfg, wait)?;
            e.set_single_copy_from(spec.shm_single_copy_from);
            e.set_fragments(spec.shm_fragments);
            check_token(&mut e, token)?;
            Ok(AnyEndpoint::Shm(e))
        }
        TransportKind::Tcp | TransportKind::UringTcp => {
            let l = tcp::listen(SocketAddr::new(bind_ip, 0))?;
            let addr = l.local_addr().map_err(|e| LaunchError::Io {
                what: "listener".into(),
                cause: e,
            })?;
            ctrl.send(&SetupMsg::Offer {
                address: addr.to_string(),
            })?;
            let s = accept_client(ctrl, &addr.to_string(), l.as_raw_fd(), until, token, || {
                l.accept().map(|(s, from)| (s, from.to_string()))
            })?;
            let from = s.peer_addr().map_err(|e| LaunchError::Io {
                what: format!("data connection on {addr}"),
                cause: e,
            })?;
            wrap_tcp(spec, s, from.to_string())
        }
        TransportKind::Uds | TransportKind::UringUds => {
            let path = uds_path();
            let l = UnixListener::bind(&path).map_err(|e| LaunchError::Io {
                what: format!("bind {}", path.display()),
                cause: e,
            })?;
            let _unlink = Unlink(path.clone());
            ctrl.send(&SetupMsg::Offer {
                address: path.display().to_string(),
            })?;
            let port = path.display().to_string();
            let s = accept_client(ctrl, &port, l.as_raw_fd(), until, token, || {
                let (s, _) = l.accept()?;
                let from = match uds::peer_pid(s.as_raw_fd()) {
                    Some(pid) => format!("local process {pid}"),
                    None => "a local process".into(),
                };
                Ok((s, from))
            })?;
            let peer = format!("{} via {}", ctrl.peer(), path.display());
            wrap_uds(spec, s, peer)
        }
    }
}

/// A connected TCP stream as the endpoint `spec` asks for (`TCP_NODELAY` either way).
fn wrap_tcp(spec: &DataSpec, s: TcpStream, peer: String) -> Result<AnyEndpoint, LaunchError> {
    let cfg = spec.endpoint_config();
    if spec.transport == TransportKind::Tcp {
        return Ok(AnyEndpoint::Tcp(tcp::from_stream(s, cfg, peer)?));
    }
    s.set_nodelay(true).map_err(|e| LaunchError::Io {
        what: format!("set TCP_NODELAY on connection to {peer}"),
        cause: e,
    })?;
    Ok(AnyEndpoint::UringTcp(UringEndpoint::new(
        s,
        cfg,
        TransportKind::UringTcp,
        peer,
        spec.uring_options(),
    )?))
}

/// A connected Unix stream as the endpoint `spec` asks for.
fn wrap_uds(spec: &DataSpec, s: UnixStream, peer: String) -> Result<AnyEndpoint, LaunchError> {
    let cfg = spec.endpoint_config();
    if spec.transport == TransportKind::Uds {
        return Ok(AnyEndpoint::Uds(uds::from_stream(s, cfg, peer)?));
    }
    Ok(AnyEndpoint::UringUds(UringEndpoint::new(
        s,
        cfg,
        TransportKind::UringUds,
        peer,
        spec.uring_options(),
    )?))
}

/// Transports that no data-channel handshake can build: the model lives in one process, and
/// MPI's channel is the MPI library's, between ranks mpirun started.
fn not_launchable(t: TransportKind) -> LaunchError {
    let why = match t {
        TransportKind::Mpi => "MPI ranks are started by mpirun, not by a commperf launcher",
        _ => "the LogGP model runs in-process only; it has no peer to launch",
    };
    LaunchError::Io {
        what: format!("transport {t}"),
        cause: io::Error::other(why),
    }
}

struct Unlink(PathBuf);
impl Drop for Unlink {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn uds_path() -> PathBuf {
    let dir = std::env::var_os("TMPDIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/tmp".into());
    dir.join(format!(
        "commperf-{}-{}.sock",
        std::process::id(),
        &new_token()[..12]
    ))
}

/// Client side: asks for a data channel, connects to what the server offers, presents the token
/// and waits for the server's go-ahead.
pub fn connect_data(
    ctrl: &mut Control,
    spec: &DataSpec,
    token: &str,
) -> Result<AnyEndpoint, LaunchError> {
    ctrl.set_phase(format!("{} data channel setup", spec.transport));
    // The server refuses the same: better said here, before anything is sent.
    spec.check()?;
    ctrl.send(&SetupMsg::Data(*spec))?;
    let address = match ctrl.recv::<SetupMsg>()? {
        SetupMsg::Offer { address } => address,
        SetupMsg::Error { message } => {
            return Err(LaunchError::Remote {
                peer: ctrl.peer().into(),
                message: one_line(&message),
            })
        }
        other => return Err(unexpected(ctrl, &other)),
    };
    let cfg = spec.endpoint_config();
    let mut ep = match spec.transport {
        TransportKind::Model | TransportKind::Mpi => return Err(not_launchable(spec.transport)),
        TransportKind::Shm => {
            let mut e = shm::attach(&address, cfg).map_err(|e| match e {
                TransportError::Io { op, cause } if cause.kind() == io::ErrorKind::NotFound => {
                    LaunchError::Io {
                        what: format!(
                            "{op}: transport shm needs both ends on one host ({} is elsewhere?)",
                            ctrl.peer()
                        ),
                        cause,
                    }
                }
                e => e.into(),
            })?;
            e.set_single_copy_from(spec.shm_single_copy_from);
            e.set_fragments(spec.shm_fragments);
            AnyEndpoint::Shm(e)
        }
        TransportKind::Tcp | TransportKind::UringTcp => {
            let addr: SocketAddr = address.parse().map_err(|_| LaunchError::Malformed {
                peer: ctrl.peer().into(),
                what: format!("offered address '{address}' is not host:port"),
            })?;
            let s = if cfg.idle_timeout.is_zero() {
                TcpStream::connect(addr)
            } else {
                TcpStream::connect_timeout(&addr, cfg.idle_timeout)
            }
            .map_err(|e| LaunchError::Io {
                what: format!("connect to {addr}"),
                cause: e,
            })?;
            wrap_tcp(spec, s, addr.to_string())?
        }
        TransportKind::Uds | TransportKind::UringUds => {
            let s = UnixStream::connect(&address).map_err(|e| LaunchError::Io {
                what: format!(
                    "connect to unix socket {address}: transport {} needs both ends on one host",
                    spec.transport
                ),
                cause: e,
            })?;
            let peer = match uds::peer_pid(s.as_raw_fd()) {
                Some(pid) => format!("local peer process {pid} at {address}"),
                None => format!("unix socket {address}"),
            };
            wrap_uds(spec, s, peer)?
        }
    };
    with_endpoint!(&mut ep, e => e.send(TOKEN_TAG, token.as_bytes()))?;
    socket_fragments(&mut ep, spec);
    match ctrl.recv::<SetupMsg>()? {
        SetupMsg::DataReady => Ok(ep),
        SetupMsg::Error { message } => Err(LaunchError::Remote {
            peer: ctrl.peer().into(),
            message: one_line(&message),
        }),
        other => Err(unexpected(ctrl, &other)),
    }
}

/// tcp, uds: the spec's chunked sends (after the token, which goes whole).
fn socket_fragments(ep: &mut AnyEndpoint, spec: &DataSpec) {
    match ep {
        AnyEndpoint::Tcp(e) => e.set_fragments(spec.socket_fragments),
        AnyEndpoint::Uds(e) => e.set_fragments(spec.socket_fragments),
        _ => {}
    }
}

// ---- local peer process -------------------------------------------------------------------------

/// The file descriptor number the local peer finds its control channel on.
pub const PEER_CONTROL_FD: i32 = 3;

/// A peer process started by this process. Killed and reaped on drop if still running, so no
/// run leaves processes behind.
#[derive(Debug)]
pub struct LocalPeer {
    child: Child,
}

impl LocalPeer {
    /// Starts `exe args…` with the other end of a socketpair as fd 3, dying with us
    /// (PR_SET_PDEATHSIG). Returns the peer and our end of the control channel.
    pub fn spawn(
        exe: &std::path::Path,
        args: &[String],
        envs: &[(&str, &str)],
    ) -> Result<(LocalPeer, Control), LaunchError> {
        let (ours, theirs) = UnixStream::pair().map_err(|e| LaunchError::Io {
            what: "socketpair for the peer".into(),
            cause: e,
        })?;
        let child_fd = theirs.as_raw_fd();
        let parent = std::process::id() as i32;
        let mut cmd = Command::new(exe);
        cmd.args(args);
        cmd.envs(envs.iter().copied());
        // SAFETY: only async-signal-safe calls (dup2, prctl, getppid, _exit) run in the child
        // between fork and exec.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(move || {
                if libc::dup2(child_fd, PEER_CONTROL_FD) < 0 {
                    return Err(io::Error::last_os_error());
                }
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                // If we were orphaned before prctl took effect, leave now.
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(|e| LaunchError::Io {
            what: format!("starting the peer process {}", exe.display()),
            cause: e,
        })?;
        drop(theirs);
        let pid = child.id();
        let ctrl = Control::new(Box::new(ours), format!("local peer process {pid}"));
        Ok((LocalPeer { child }, ctrl))
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits up to `grace` for the peer to exit by itself, then kills it; always reaps.
    pub fn finish(&mut self, grace: Duration) -> Option<std::process::ExitStatus> {
        let start = Instant::now();
        loop {
            match self.child.try_wait() {
                Ok(Some(st)) => return Some(st),
                Ok(None) if start.elapsed() < grace => std::thread::sleep(Duration::from_millis(5)),
                _ => break,
            }
        }
        let _ = self.child.kill();
        self.child.wait().ok()
    }
}

impl Drop for LocalPeer {
    fn drop(&mut self) {
        self.finish(Duration::from_millis(200));
    }
}

/// The local pair `monitor run` and `emulate calibrate` measure over, client's half: this
/// binary re-executed as the hidden peer verb `verb`, its control channel authenticated by a
/// session token (waiting at most `timeout`), and this process pinned as `bench` places its pair
/// (peer on the first allowed CPU, this end on the second). Returns the peer, the control
/// channel, the CPU the peer should pin itself to (sent in the job), and the token the data
/// channel is opened with. One copy of the start-up, so both verbs start, authenticate and pin
/// the same way.
pub fn spawn_local_pair(
    verb: &str,
    timeout: Duration,
) -> Result<(LocalPeer, Control, Option<usize>, String), LaunchError> {
    let io_err = |what: &str| {
        let what = what.to_string();
        move |cause| LaunchError::Io { what, cause }
    };
    let exe = std::env::current_exe().map_err(io_err("finding this executable"))?;
    crate::sys::shm::remove_stale_segments();
    let token = new_token();
    let (peer, mut ctrl) = LocalPeer::spawn(
        &exe,
        &[verb.to_string()],
        &[("COMMPERF_SESSION_TOKEN", &token)],
    )?;
    ctrl.set_timeout(timeout)?;
    client_handshake(&mut ctrl, &token)?;
    let cpus = crate::affinity::allowed_cpus();
    let (mine, theirs) = match cpus.as_slice() {
        [p, m, ..] => (Some(*m), Some(*p)),
        _ => (None, None),
    };
    if let Some(cpu) = mine {
        crate::affinity::pin_to(cpu).map_err(io_err("pinning to a CPU"))?;
    }
    Ok((peer, ctrl, theirs, token))
}

/// The local pair's peer half ([`spawn_local_pair`]): the inherited control channel
/// authenticated, the job received, this process pinned to the CPU the job names (`cpu_of`),
/// and the data endpoint the client asks for served.
pub fn accept_local_pair<J: serde::de::DeserializeOwned>(
    timeout: Duration,
    cpu_of: impl Fn(&J) -> Option<usize>,
) -> Result<(Control, J, AnyEndpoint), LaunchError> {
    let token = std::env::var("COMMPERF_SESSION_TOKEN").unwrap_or_default();
    let mut ctrl: Control = inherited_control(PEER_CONTROL_FD)?;
    server_handshake(&mut ctrl, &token)?;
    ctrl.set_timeout(timeout)?;
    let job: J = ctrl.recv()?;
    if let Some(cpu) = cpu_of(&job) {
        crate::affinity::pin_to(cpu).map_err(|cause| LaunchError::Io {
            what: "pinning the peer".into(),
            cause,
        })?;
    }
    let SetupMsg::Data(spec) = ctrl.recv::<SetupMsg>()? else {
        return Err(LaunchError::Malformed {
            peer: ctrl.peer().to_string(),
            what: "the client did not ask for a data channel".into(),
        });
    };
    let ep = serve_data(
        &mut ctrl,
        &spec,
        std::net::Ipv4Addr::LOCALHOST.into(),
        &token,
        None,
    )?;
    Ok((ctrl, job, ep))
}

/// In the peer process: the control channel the parent left on fd 3.
pub fn inherited_control(fd: i32) -> Result<Control, LaunchError> {
    // SAFETY: fcntl F_GETFD only checks the fd is open.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Err(LaunchError::Io {
            what: format!("control fd {fd} (this command is started by 'commperf bench')"),
            cause: io::Error::last_os_error(),
        });
    }
    // SAFETY: the fd is open and handed to us by the parent; we become its only owner.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: F_SETFD on an open fd.
    unsafe { libc::fcntl(owned.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) };
    let ppid = std::os::unix::process::parent_id();
    Ok(Control::new(
        Box::new(UnixStream::from(owned)),
        format!("parent process {ppid}"),
    ))
}

// ---- two hosts ------------------------------------------------------------------------------

/// Connects to a `commperf serve` at `addr`.
pub fn connect_peer(addr: &str, timeout: Duration) -> Result<Control, LaunchError> {
    use std::net::ToSocketAddrs;
    let io_err = |what: String| move |e: io::Error| LaunchError::Io { what, cause: e };
    let sa = addr
        .to_socket_addrs()
        .map_err(io_err(format!("resolving peer '{addr}'")))?
        .next()
        .ok_or_else(|| LaunchError::Io {
            what: format!("resolving peer '{addr}'"),
            cause: io::Error::other("no address"),
        })?;
    let s = TcpStream::connect_timeout(&sa, timeout)
        .map_err(io_err(format!("connecting to commperf serve at {sa}")))?;
    let _ = s.set_nodelay(true);
    let mut c = Control::new(Box::new(s), format!("peer {sa}"));
    c.set_timeout(timeout)?;
    Ok(c)
}

/// A listening `commperf serve`.
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    token: String,
}

impl Server {
    /// Binds `addr`; `token` None makes a random one.
    pub fn bind(addr: SocketAddr, token: Option<String>) -> Result<Server, LaunchError> {
        let listener = TcpListener::bind(addr).map_err(|e| LaunchError::Io {
            what: format!("listen on {addr}"),
            cause: e,
        })?;
        Ok(Server {
            listener,
            token: token.unwrap_or_else(new_token),
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("bound listener has an address")
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    /// Accepts the next client and runs the handshake, bounded as a whole by
    /// `handshake_timeout`. A refused client is an `Err` the caller logs before accepting again.
    /// One connection at a time: for a server that strangers may reach, [`Server::start`]
    /// authenticates concurrently.
    pub fn accept(
        &self,
        handshake_timeout: Duration,
    ) -> Result<(Control, ClientHello), LaunchError> {
        let (s, from) = self.listener.accept().map_err(|e| LaunchError::Io {
            what: "accept".into(),
            cause: e,
        })?;
        let _ = s.set_nodelay(true);
        let mut c = Control::new(Box::new(s), format!("client {from}"));
        c.set_max_frame(bounds::MAX_HELLO);
        c.set_deadline(Some(handshake_timeout));
        let hello = server_handshake(&mut c, &self.token)?;
        c.set_deadline(None);
        c.set_max_frame(MAX_CONTROL);
        c.set_timeout(handshake_timeout)?;
        Ok((c, hello))
    }

    /// Starts accepting and authenticating clients concurrently (see [`crate::serve`]): each
    /// connection gets one deadline for its whole handshake, at most `limits.max_pending`
    /// unauthenticated connections are held, and one authenticated session at a time is
    /// handed out by [`crate::serve::Acceptor::next_session`]; clients that authenticate while
    /// it runs are told the server is busy. `log` hears of every connection turned away.
    pub fn start(
        self,
        limits: crate::serve::ServeLimits,
        log: impl Fn(&crate::serve::ServeEvent) + Send + Sync + 'static,
    ) -> Result<crate::serve::Acceptor, LaunchError> {
        crate::serve::Acceptor::start(self.listener, self.token, limits, Box::new(log))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_deadline_bounds_a_message_that_trickles_in() {
        let (a, mut b) = UnixStream::pair().unwrap();
        // A frame announcing 100 bytes, then one byte every 50 ms: each read succeeds long
        // before any per-read timeout would fire.
        let writer = std::thread::spawn(move || {
            let _ = b.write_all(&100u32.to_le_bytes());
            for _ in 0..100 {
                if b.write_all(b" ").is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let mut c = Control::new(Box::new(a), "trickler".into());
        c.set_timeout(Duration::from_secs(1)).unwrap();
        c.set_phase("handshake");
        c.set_deadline(Some(Duration::from_millis(400)));
        let t = Instant::now();
        let e = c.recv::<SetupMsg>().unwrap_err();
        let took = t.elapsed();
        assert!(
            took >= Duration::from_millis(380) && took < Duration::from_secs(3),
            "{took:?}"
        );
        assert_eq!(
            e.to_string(),
            "control channel to trickler: handshake not completed within its 0.4 s deadline"
        );
        drop(c);
        writer.join().unwrap();
    }

    #[test]
    fn a_hello_frame_is_refused_beyond_its_own_limit() {
        let (a, mut b) = UnixStream::pair().unwrap();
        b.write_all(&(bounds::MAX_HELLO as u32 + 1).to_le_bytes())
            .unwrap();
        let mut c = Control::new(Box::new(a), "stranger".into());
        c.set_max_frame(bounds::MAX_HELLO);
        let e = c.recv::<SetupMsg>().unwrap_err().to_string();
        assert!(
            e.contains("frame of 65537 bytes exceeds the 65536-byte limit"),
            "{e}"
        );
    }

    #[test]
    fn the_client_checks_a_data_spec_before_sending_it() {
        let spec = DataSpec::new(TransportKind::Shm, Mode::Poll, 1 << 20);
        spec.check().unwrap();
        spec.held_open().check().unwrap();
        assert_eq!(
            spec.memory_bytes(),
            shm::segment_bytes(ShmOptions::default().ring_bytes) as u64
        );
        let (a, b) = UnixStream::pair().unwrap();
        let mut c = Control::new(Box::new(a), "server".into());
        let huge = DataSpec {
            shm_ring_bytes: 1 << 41,
            ..spec
        };
        let e = connect_data(&mut c, &huge, "token").unwrap_err();
        assert_eq!(
            e.to_string(),
            "shm_ring_bytes = 2199023255552 is out of bounds: at most 67108864 (64 MiB)"
        );
        drop(c);
        let mut sent = Vec::new();
        (&b).read_to_end(&mut sent).unwrap();
        assert!(sent.is_empty(), "nothing was sent");
    }
}
