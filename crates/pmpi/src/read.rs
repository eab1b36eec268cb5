//! Reading a monitor directory back, matching sends to receives, and the per-message stages.

use crate::format::{self, ClockSync, Footer, Header, EVENT_BYTES, MAGIC};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// The MPI call an event came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Call {
    Send,
    Ssend,
    Bsend,
    Rsend,
    Isend,
    Issend,
    Ibsend,
    Irsend,
    Recv,
    Irecv,
    /// The send half of MPI_Sendrecv(_replace).
    SendrecvSend,
    /// The receive half of MPI_Sendrecv(_replace).
    SendrecvRecv,
    Probe,
    Iprobe,
    Barrier,
    Bcast,
    Reduce,
    Allreduce,
    Gather,
    Gatherv,
    Scatter,
    Scatterv,
    Allgather,
    Allgatherv,
    Alltoall,
    Alltoallv,
    ReduceScatter,
    ReduceScatterBlock,
    Scan,
    Exscan,
    Pcontrol,
}

impl Call {
    /// From the on-disk kind byte (csrc/shim.c's `K_*`).
    pub fn from_kind(k: u8) -> Option<Call> {
        use Call::*;
        Some(match k {
            1 => Send,
            2 => Ssend,
            3 => Bsend,
            4 => Rsend,
            5 => Isend,
            6 => Issend,
            7 => Ibsend,
            8 => Irsend,
            10 => Recv,
            11 => Irecv,
            12 => SendrecvSend,
            13 => SendrecvRecv,
            20 => Probe,
            21 => Iprobe,
            30 => Barrier,
            31 => Bcast,
            32 => Reduce,
            33 => Allreduce,
            34 => Gather,
            35 => Gatherv,
            36 => Scatter,
            37 => Scatterv,
            38 => Allgather,
            39 => Allgatherv,
            40 => Alltoall,
            41 => Alltoallv,
            42 => ReduceScatter,
            43 => ReduceScatterBlock,
            44 => Scan,
            45 => Exscan,
            60 => Pcontrol,
            _ => return None,
        })
    }

    /// The MPI name (`MPI_Isend`; the halves of MPI_Sendrecv are `MPI_Sendrecv(send)` and
    /// `MPI_Sendrecv(recv)`).
    pub fn name(self) -> &'static str {
        use Call::*;
        match self {
            Send => "MPI_Send",
            Ssend => "MPI_Ssend",
            Bsend => "MPI_Bsend",
            Rsend => "MPI_Rsend",
            Isend => "MPI_Isend",
            Issend => "MPI_Issend",
            Ibsend => "MPI_Ibsend",
            Irsend => "MPI_Irsend",
            Recv => "MPI_Recv",
            Irecv => "MPI_Irecv",
            SendrecvSend => "MPI_Sendrecv(send)",
            SendrecvRecv => "MPI_Sendrecv(recv)",
            Probe => "MPI_Probe",
            Iprobe => "MPI_Iprobe",
            Barrier => "MPI_Barrier",
            Bcast => "MPI_Bcast",
            Reduce => "MPI_Reduce",
            Allreduce => "MPI_Allreduce",
            Gather => "MPI_Gather",
            Gatherv => "MPI_Gatherv",
            Scatter => "MPI_Scatter",
            Scatterv => "MPI_Scatterv",
            Allgather => "MPI_Allgather",
            Allgatherv => "MPI_Allgatherv",
            Alltoall => "MPI_Alltoall",
            Alltoallv => "MPI_Alltoallv",
            ReduceScatter => "MPI_Reduce_scatter",
            ReduceScatterBlock => "MPI_Reduce_scatter_block",
            Scan => "MPI_Scan",
            Exscan => "MPI_Exscan",
            Pcontrol => "MPI_Pcontrol",
        }
    }

    /// A point-to-point send (one message to `peer`).
    pub fn is_send(self) -> bool {
        use Call::*;
        matches!(
            self,
            Send | Ssend | Bsend | Rsend | Isend | Issend | Ibsend | Irsend | SendrecvSend
        )
    }

    /// A completed point-to-point receive (one message from `peer`).
    pub fn is_recv(self) -> bool {
        matches!(self, Call::Recv | Call::Irecv | Call::SendrecvRecv)
    }

    /// A collective: recorded as its own type, never matched.
    pub fn is_collective(self) -> bool {
        (self as u8) >= (Call::Barrier as u8) && self != Call::Pcontrol
    }
}

/// One recorded event (times on the rank's own clock, ns).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Event {
    pub call: Call,
    /// Called from Fortran.
    pub fortran: bool,
    /// A receive posted with MPI_ANY_SOURCE.
    pub any_source: bool,
    pub peer: i32,
    pub tag: i32,
    pub comm: u32,
    pub bytes: u64,
    pub post_enter: u64,
    pub post_exit: u64,
    pub done_enter: u64,
    pub done_exit: u64,
    pub thread: u32,
}

/// Why a monitor directory or file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not a commperf monitor file (it does not start with the commperf-pmpi magic)", path.display())]
    NotMonitorFile { path: PathBuf },
    #[error("{}: format version {found}, but this commperf reads version {}", path.display(), format::VERSION)]
    Version { path: PathBuf, found: String },
    #[error("{} is truncated: the frame at byte {offset} runs past the end of the file", path.display())]
    Truncated { path: PathBuf, offset: u64 },
    #[error("{} is corrupt at byte {offset}: {what}", path.display())]
    Corrupt {
        path: PathBuf,
        offset: u64,
        what: String,
    },
    #[error("{} holds no monitor files (rank-N.cpmpi)", dir.display())]
    Empty { dir: PathBuf },
}

/// Everything one rank recorded.
#[derive(Debug, Clone)]
pub struct RankData {
    pub path: PathBuf,
    pub header: Header,
    pub clocks: Vec<ClockSync>,
    pub events: Vec<Event>,
    pub drops: u64,
    /// None: the rank never reached MPI_Finalize (crashed, killed or aborted).
    pub footer: Option<Footer>,
}

impl RankData {
    /// `t` (this rank's clock) on rank 0's clock: the offset measured at MPI_Init, moved
    /// linearly towards the one at MPI_Finalize (the drift), when both exist.
    pub fn to_global(&self, t: u64) -> f64 {
        let init = self.clocks.iter().find(|c| c.phase == 0);
        let fin = self.clocks.iter().find(|c| c.phase == 1);
        let off = match (init, fin) {
            (Some(a), Some(b)) if b.local_ns > a.local_ns => {
                let f = (t as f64 - a.local_ns as f64) / (b.local_ns - a.local_ns) as f64;
                a.offset_ns as f64 + f * (b.offset_ns - a.offset_ns) as f64
            }
            (Some(a), _) => a.offset_ns as f64,
            _ => 0.0,
        };
        t as f64 + off
    }

    /// The clock's error bound for this rank (half the best round trip; 0 on rank 0).
    pub fn clock_error_ns(&self) -> i64 {
        self.clocks.iter().map(|c| c.err_ns).max().unwrap_or(0)
    }

    /// Change of the offset from MPI_Init to MPI_Finalize, per second of run (ns/s = ppb);
    /// 0 when the change is within the two measurements' error bounds (a short run on one clock
    /// would otherwise report its measurement noise as drift).
    pub fn drift_ppb(&self) -> Option<f64> {
        let a = self.clocks.iter().find(|c| c.phase == 0)?;
        let b = self.clocks.iter().find(|c| c.phase == 1)?;
        let dt = b.local_ns.checked_sub(a.local_ns)? as f64;
        let change = (b.offset_ns - a.offset_ns) as f64;
        if change.abs() <= (a.err_ns + b.err_ns) as f64 {
            return Some(0.0);
        }
        (dt > 0.0).then(|| change / dt * 1e9)
    }
}

/// A monitor directory: one `RankData` per rank file found.
#[derive(Debug, Clone)]
pub struct Run {
    pub dir: PathBuf,
    pub ranks: Vec<RankData>,
}

impl Run {
    /// Ranks that never reached MPI_Finalize, or world ranks with no file at all.
    pub fn cut_short(&self) -> bool {
        !self.unfinished_ranks().is_empty() || !self.missing_ranks().is_empty()
    }

    pub fn unfinished_ranks(&self) -> Vec<u32> {
        self.ranks
            .iter()
            .filter(|r| r.footer.is_none())
            .map(|r| r.header.rank)
            .collect()
    }

    pub fn missing_ranks(&self) -> Vec<u32> {
        let size = self.ranks.iter().map(|r| r.header.size).max().unwrap_or(0);
        (0..size)
            .filter(|k| !self.ranks.iter().any(|r| r.header.rank == *k))
            .collect()
    }

    /// The data of world rank `r`, if its file was found.
    pub fn rank(&self, r: u32) -> Option<&RankData> {
        self.ranks.iter().find(|d| d.header.rank == r)
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn parse_event(b: &[u8]) -> Option<Event> {
    Some(Event {
        call: Call::from_kind(b[0])?,
        fortran: b[1] & 1 != 0,
        any_source: b[1] & 2 != 0,
        peer: u32_at(b, 4) as i32,
        tag: u32_at(b, 8) as i32,
        comm: u32_at(b, 12),
        bytes: u64_at(b, 16),
        post_enter: u64_at(b, 24),
        post_exit: u64_at(b, 32),
        done_enter: u64_at(b, 40),
        done_exit: u64_at(b, 48),
        thread: u64_at(b, 56) as u32,
    })
}

/// Reads one rank file. A file without a footer is valid (the rank was cut short); a partial
/// frame, a bad checksum or an unknown record is an error naming the file and the byte.
pub fn read_file(path: &Path) -> Result<RankData, ReadError> {
    let data = std::fs::read(path).map_err(|source| ReadError::Io {
        path: path.into(),
        source,
    })?;
    let corrupt = |offset: usize, what: String| ReadError::Corrupt {
        path: path.into(),
        offset: offset as u64,
        what,
    };
    if data.len() < MAGIC.len() || &data[..5] != b"CPMPI" {
        return Err(ReadError::NotMonitorFile { path: path.into() });
    }
    if data[..MAGIC.len()] != MAGIC[..] {
        return Err(ReadError::Version {
            path: path.into(),
            found: String::from_utf8_lossy(&data[6..8]).into_owned(),
        });
    }
    let mut at = MAGIC.len();
    let mut header: Option<Header> = None;
    let mut rd = RankData {
        path: path.into(),
        header: dummy_header(),
        clocks: Vec::new(),
        events: Vec::new(),
        drops: 0,
        footer: None,
    };
    while at < data.len() {
        if data.len() - at < 8 {
            return Err(ReadError::Truncated {
                path: path.into(),
                offset: at as u64,
            });
        }
        let kind = u32_at(&data, at);
        let len = u32_at(&data, at + 4) as usize;
        let end = at + 8 + len + 8;
        if end > data.len() {
            return Err(ReadError::Truncated {
                path: path.into(),
                offset: at as u64,
            });
        }
        let payload = &data[at + 8..at + 8 + len];
        if format::fnv1a(payload) != u64_at(&data, at + 8 + len) {
            return Err(corrupt(at, "checksum mismatch".into()));
        }
        if header.is_none() && kind != 1 {
            return Err(corrupt(at, "the first frame is not the header".into()));
        }
        let json_err = |e: serde_json::Error| corrupt(at, format!("bad JSON in frame {kind}: {e}"));
        match kind {
            1 => {
                let h: Header = serde_json::from_slice(payload).map_err(json_err)?;
                if h.version != format::VERSION {
                    return Err(ReadError::Version {
                        path: path.into(),
                        found: h.version.to_string(),
                    });
                }
                header = Some(h);
            }
            2 => {
                if len % EVENT_BYTES != 0 {
                    return Err(corrupt(
                        at,
                        format!("event frame of {len} bytes, not a multiple of {EVENT_BYTES}"),
                    ));
                }
                for (i, c) in payload.chunks_exact(EVENT_BYTES).enumerate() {
                    let e = parse_event(c).ok_or_else(|| {
                        corrupt(
                            at + 8 + i * EVENT_BYTES,
                            format!("unknown event kind {}", c[0]),
                        )
                    })?;
                    rd.events.push(e);
                }
            }
            3 => rd
                .clocks
                .push(serde_json::from_slice(payload).map_err(json_err)?),
            4 => rd.footer = Some(serde_json::from_slice(payload).map_err(json_err)?),
            5 => {
                let v: serde_json::Value = serde_json::from_slice(payload).map_err(json_err)?;
                rd.drops = v["drops"].as_u64().unwrap_or(rd.drops);
            }
            k => return Err(corrupt(at, format!("unknown frame kind {k}"))),
        }
        at = end;
    }
    rd.header = header.ok_or_else(|| corrupt(at, "no header frame".into()))?;
    if let Some(f) = rd.footer {
        rd.drops = rd.drops.max(f.drops);
    }
    Ok(rd)
}

fn dummy_header() -> Header {
    Header {
        format: String::new(),
        version: 0,
        rank: 0,
        size: 0,
        pid: 0,
        host: String::new(),
        mpi_flavour: String::new(),
        mpi_library: String::new(),
        program_tag: String::new(),
        clock: String::new(),
        start_ns: 0,
        empty_wrappers: false,
    }
}

/// Reads every `rank-N.cpmpi` in `dir`.
pub fn read_dir(dir: impl AsRef<Path>) -> Result<Run, ReadError> {
    let dir = dir.as_ref();
    let rd = std::fs::read_dir(dir).map_err(|source| ReadError::Io {
        path: dir.into(),
        source,
    })?;
    let mut paths: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("rank-") && n.ends_with(".cpmpi"))
        })
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(ReadError::Empty { dir: dir.into() });
    }
    let mut ranks = paths
        .iter()
        .map(|p| read_file(p))
        .collect::<Result<Vec<_>, _>>()?;
    ranks.sort_by_key(|r| r.header.rank);
    Ok(Run {
        dir: dir.into(),
        ranks,
    })
}

/// A send matched to its receive, with its stages (ns, on rank 0's clock). Definitions, with
/// S = the send call (enter, exit), R = the receive: posted at R_post (MPI_Recv/MPI_Irecv
/// entered), completed by a call entered at R_center and left at R_done (for MPI_Recv,
/// R_center = R_post), and ready = max(S_exit, R_post), the first moment the message had left the
/// send call and had a receive to go to:
///
/// - source = S_exit − S_enter: time inside the send call;
/// - destination = R_done − R_center if R_center ≥ ready, else 0: time inside the completing
///   receive call when the message could already be there (matching, copy, delivery);
/// - net = max(0, R_done − ready − destination): in flight, as far as software can see. When
///   the receiver comes late to complete (R_center > ready), the time it spent elsewhere is
///   in neither stage;
/// - late_sender = clamp(S_enter − R_post, 0, R_done − R_post): how long the posted receive
///   waited for the send to start.
///
/// For a rendezvous-size message the send returns only once the data is delivered, so the
/// transfer shows as source and net is near zero; for eager sizes the send returns at injection
/// and net carries the flight.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Message {
    pub src: u32,
    pub dst: u32,
    pub tag: i32,
    pub comm: u32,
    pub bytes: u64,
    pub send_call: Call,
    pub recv_call: Call,
    pub source_ns: f64,
    pub net_ns: f64,
    pub destination_ns: f64,
    pub late_sender_ns: f64,
}

/// The matching of a run.
#[derive(Debug, Clone, Default)]
pub struct Matching {
    pub messages: Vec<Message>,
    /// Sends with no receive recorded (the receiver was cut short, stopped by MPI_Pcontrol, or
    /// the receive never completed through a wrapped call).
    pub unmatched_sends: u64,
    pub unmatched_recvs: u64,
}

/// (source, destination, tag, communicator): one non-overtaking stream.
pub type Stream = (u32, u32, i32, u32);

/// A send event matched to its receive event, by index into each rank's `RankData::events`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventPair {
    pub stream: Stream,
    pub send: usize,
    pub recv: usize,
}

/// The matching by event index (what [`match_messages`] computes stages from, and what the
/// trace writer needs to leave out the records whose partner is missing).
#[derive(Debug, Clone, Default)]
pub struct Pairing {
    /// Streams in ascending order, each in post order.
    pub pairs: Vec<EventPair>,
    pub unmatched_sends: u64,
    pub unmatched_recvs: u64,
}

/// Pairs sends with receives: per (source, destination, tag, communicator) MPI does not let
/// messages overtake, so the k-th send posted matches the k-th receive posted on that stream
/// (receives in post order, which is the order MPI matches them in, even when they complete in
/// another order). Exact without piggybacking, as long as each stream is posted from one thread.
/// Pairs whose sender or receiver has no file are not returned (but not counted as unmatched:
/// the other side's count says it).
pub fn pair_events(run: &Run) -> Pairing {
    let mut sends: HashMap<Stream, Vec<(u64, u32, usize)>> = HashMap::new();
    let mut recvs: HashMap<Stream, Vec<(u64, u32, usize)>> = HashMap::new();
    for rd in &run.ranks {
        let me = rd.header.rank;
        for (i, e) in rd.events.iter().enumerate() {
            if e.peer < 0 {
                continue;
            }
            if e.call.is_send() {
                sends
                    .entry((me, e.peer as u32, e.tag, e.comm))
                    .or_default()
                    .push((e.post_enter, e.thread, i));
            } else if e.call.is_recv() {
                recvs
                    .entry((e.peer as u32, me, e.tag, e.comm))
                    .or_default()
                    .push((e.post_enter, e.thread, i));
            }
        }
    }
    let mut m = Pairing::default();
    let mut keys: Vec<Stream> = sends.keys().chain(recvs.keys()).copied().collect();
    keys.sort_unstable();
    keys.dedup();
    for k in keys {
        let mut s = sends.remove(&k).unwrap_or_default();
        let mut r = recvs.remove(&k).unwrap_or_default();
        s.sort_unstable();
        r.sort_unstable();
        let n = s.len().min(r.len());
        m.unmatched_sends += (s.len() - n) as u64;
        m.unmatched_recvs += (r.len() - n) as u64;
        if run.rank(k.0).is_none() || run.rank(k.1).is_none() {
            continue;
        }
        m.pairs.extend((0..n).map(|i| EventPair {
            stream: k,
            send: s[i].2,
            recv: r[i].2,
        }));
    }
    m
}

/// Matches sends to receives ([`pair_events`]) and computes each message's stages.
pub fn match_messages(run: &Run) -> Matching {
    let p = pair_events(run);
    let mut m = Matching {
        messages: Vec::with_capacity(p.pairs.len()),
        unmatched_sends: p.unmatched_sends,
        unmatched_recvs: p.unmatched_recvs,
    };
    for pr in &p.pairs {
        let k = pr.stream;
        let (Some(sr), Some(rr)) = (run.rank(k.0), run.rank(k.1)) else {
            continue;
        };
        let se = &sr.events[pr.send];
        let re = &rr.events[pr.recv];
        let g = |d: &RankData, t: u64| d.to_global(t);
        let (s_in, s_out) = (g(sr, se.post_enter), g(sr, se.post_exit));
        let (r_post, r_center, r_done) = (
            g(rr, re.post_enter),
            g(rr, re.done_enter),
            g(rr, re.done_exit),
        );
        let ready = s_out.max(r_post);
        let destination = if r_center >= ready {
            r_done - r_center
        } else {
            0.0
        };
        let net = (r_done - ready - destination).max(0.0);
        let late = (s_in - r_post).clamp(0.0, (r_done - r_post).max(0.0));
        m.messages.push(Message {
            src: k.0,
            dst: k.1,
            tag: k.2,
            comm: k.3,
            bytes: se.bytes,
            send_call: se.call,
            recv_call: re.call,
            source_ns: s_out - s_in,
            net_ns: net,
            destination_ns: destination,
            late_sender_ns: late,
        });
    }
    m
}

/// Upper bound of a message size's bin: 0, then powers of two (1, 2, 4, …).
pub fn size_bin(bytes: u64) -> u64 {
    if bytes == 0 {
        0
    } else {
        bytes.next_power_of_two()
    }
}

/// Calls made by one rank.
#[derive(Debug, Clone, Serialize)]
pub struct CallCount {
    pub rank: u32,
    pub call: &'static str,
    pub count: u64,
    pub bytes: u64,
}

/// Matched messages of one (sender, receiver, send call, receive call, size bin).
#[derive(Debug, Clone, Serialize)]
pub struct PairBin {
    pub src: u32,
    pub dst: u32,
    pub send_call: &'static str,
    pub recv_call: &'static str,
    /// Messages of more than half this size and at most this size (0: empty messages).
    pub size_bin: u64,
    pub count: u64,
    pub bytes: u64,
    pub mean_source_ns: f64,
    pub mean_net_ns: f64,
    pub mean_destination_ns: f64,
    pub mean_late_sender_ns: f64,
}

/// What `commperf monitor` prints and writes as JSON for an MPI run (until the histograms and
/// signatures of the `monitor` crate take over).
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub schema: &'static str,
    pub schema_version: u32,
    pub dir: PathBuf,
    pub ranks: u32,
    pub mpi_library: String,
    pub program_tags: Vec<String>,
    pub cut_short: bool,
    pub unfinished_ranks: Vec<u32>,
    pub missing_ranks: Vec<u32>,
    pub drops: u64,
    pub pending_requests: u64,
    /// Largest clock error bound of any rank (ns).
    pub clock_error_ns: i64,
    /// Largest |drift| of any rank (ns per s).
    pub max_drift_ppb: f64,
    pub matched_messages: u64,
    pub unmatched_sends: u64,
    pub unmatched_recvs: u64,
    pub calls: Vec<CallCount>,
    pub pairs: Vec<PairBin>,
}

/// Counts every call per rank and folds the matched messages into pair × size bins.
pub fn summarize(run: &Run) -> Summary {
    let m = match_messages(run);
    let mut calls = Vec::new();
    for rd in &run.ranks {
        let mut per: BTreeMap<Call, (u64, u64)> = BTreeMap::new();
        for e in &rd.events {
            let c = per.entry(e.call).or_default();
            c.0 += 1;
            c.1 += e.bytes;
        }
        calls.extend(per.into_iter().map(|(call, (count, bytes))| CallCount {
            rank: rd.header.rank,
            call: call.name(),
            count,
            bytes,
        }));
    }
    let mut bins: BTreeMap<(u32, u32, Call, Call, u64), [f64; 6]> = BTreeMap::new();
    for x in &m.messages {
        let b = bins
            .entry((x.src, x.dst, x.send_call, x.recv_call, size_bin(x.bytes)))
            .or_default();
        b[0] += 1.0;
        b[1] += x.bytes as f64;
        b[2] += x.source_ns;
        b[3] += x.net_ns;
        b[4] += x.destination_ns;
        b[5] += x.late_sender_ns;
    }
    let pairs = bins
        .into_iter()
        .map(|((src, dst, sc, rc, bin), b)| PairBin {
            src,
            dst,
            send_call: sc.name(),
            recv_call: rc.name(),
            size_bin: bin,
            count: b[0] as u64,
            bytes: b[1] as u64,
            mean_source_ns: b[2] / b[0],
            mean_net_ns: b[3] / b[0],
            mean_destination_ns: b[4] / b[0],
            mean_late_sender_ns: b[5] / b[0],
        })
        .collect();
    let mut tags: Vec<String> = run
        .ranks
        .iter()
        .map(|r| r.header.program_tag.clone())
        .collect();
    tags.sort();
    tags.dedup();
    Summary {
        schema: "commperf-pmpi-summary",
        schema_version: 1,
        dir: run.dir.clone(),
        ranks: run.ranks.iter().map(|r| r.header.size).max().unwrap_or(0),
        mpi_library: run
            .ranks
            .first()
            .map(|r| r.header.mpi_library.clone())
            .unwrap_or_default(),
        program_tags: tags,
        cut_short: run.cut_short(),
        unfinished_ranks: run.unfinished_ranks(),
        missing_ranks: run.missing_ranks(),
        drops: run.ranks.iter().map(|r| r.drops).sum(),
        pending_requests: run
            .ranks
            .iter()
            .filter_map(|r| r.footer)
            .map(|f| f.pending_requests)
            .sum(),
        clock_error_ns: run
            .ranks
            .iter()
            .map(|r| r.clock_error_ns())
            .max()
            .unwrap_or(0),
        max_drift_ppb: run
            .ranks
            .iter()
            .filter_map(|r| r.drift_ppb())
            .fold(0.0, |a, d| a.max(d.abs())),
        matched_messages: m.messages.len() as u64,
        unmatched_sends: m.unmatched_sends,
        unmatched_recvs: m.unmatched_recvs,
        calls,
        pairs,
    }
}
