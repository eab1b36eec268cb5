//! The MPI job as commperf sees it: initialization, the start-up agreement between ranks, the
//! pairs, and small control messages.
//!
//! Every check of the start-up runs on data all ranks share (one all-gather of a fixed-size
//! record per rank), so every rank reaches the same verdict and prints the same error: no rank
//! waits for an answer that a failed rank will never send.

use crate::raw::Comm;
use crate::startup::{agree, clip, fnv, Hello, Pair, HELLO_BYTES, MAGIC};
use crate::MpiError;
use commperf_core::{Disturbance, ProcessId, Row};
use commperf_transport::text::printable;
use mpi::topology::{Color, SimpleCommunicator};
use mpi::traits::*;
use serde::{de::DeserializeOwned, Serialize};

/// Control messages (reports of a whole run included) are bounded before anything is received.
pub(crate) const MAX_CONTROL: usize = 64 << 20;

/// An initialized MPI job that passed the start-up agreement. Dropping it finalizes MPI.
pub struct MpiWorld {
    rank: i32,
    size: i32,
    hosts: Vec<String>,
    library: String,
    /// Measurements run here only.
    data: SimpleCommunicator,
    /// Start-up, barriers and control messages.
    ctl: SimpleCommunicator,
    world: SimpleCommunicator,
    // Last: finalizes MPI after the communicators above are freed.
    _universe: mpi::environment::Universe,
}

impl std::fmt::Debug for MpiWorld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiWorld")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("library", &self.library)
            .finish()
    }
}

/// The MPI library this build is linked with (`Open MPI v4.1.4`, `MPICH Version: 4.0.2`);
/// callable before MPI_Init.
pub fn library_version() -> String {
    crate::startup::library_name(&mpi::environment::library_version().unwrap_or_default())
}

impl MpiWorld {
    /// MPI_Init, and the communicators commperf uses. Call [`MpiWorld::agree`] next.
    pub fn init() -> Result<MpiWorld, MpiError> {
        let universe = mpi::initialize().ok_or(MpiError::AlreadyInitialized)?;
        let world = universe.world();
        let (ctl, data) = (world.duplicate(), world.duplicate());
        for c in [&world, &ctl, &data] {
            Comm(c.as_raw()).errors_return()?;
        }
        let (rank, size) = (world.rank(), world.size());
        Ok(MpiWorld {
            rank,
            size,
            hosts: Vec::new(),
            library: library_version(),
            data,
            ctl,
            world,
            _universe: universe,
        })
    }

    /// The start-up agreement: at least two ranks and an even number of them, one commperf
    /// version and one command line everywhere. `args` is this rank's command line after the
    /// program name; `claim`, the version this rank says it runs in place of its own (the
    /// hidden test option `--claim-version`, to exercise the check under mpirun). Every rank
    /// gets the same verdict; on an error the caller reports it and ends the job with
    /// [`MpiWorld::abort`].
    pub fn agree(&mut self, args: &str, claim: Option<&str>) -> Result<(), MpiError> {
        let mut version = claim.unwrap_or(env!("CARGO_PKG_VERSION")).to_string();
        clip(&mut version, 64);
        let mut host = commperf_transport::launch::hostname();
        clip(&mut host, 255);
        let digest = format!("#{:016x}", fnv(args.as_bytes()));
        let mut hello = Hello {
            magic: MAGIC.into(),
            version,
            host,
            args: args.to_string(),
        };
        let mut json = serde_json::to_vec(&hello).expect("a hello serializes");
        if json.len() > HELLO_BYTES {
            // Too long to show: compared by digest.
            clip(&mut hello.host, 64);
            hello.args = digest;
            json = serde_json::to_vec(&hello).expect("a hello serializes");
        }
        let mut mine = [0u8; HELLO_BYTES];
        mine[..json.len()].copy_from_slice(&json);
        let mut all = vec![0u8; HELLO_BYTES * self.size as usize];
        self.ctl.all_gather_into(&mine[..], &mut all[..]);
        let hellos: Vec<Option<Hello>> = all
            .chunks(HELLO_BYTES)
            .map(|c| {
                let end = c.iter().position(|&b| b == 0).unwrap_or(c.len());
                serde_json::from_slice::<Hello>(&c[..end])
                    .ok()
                    .filter(|h| h.magic == MAGIC)
            })
            .collect();
        agree(self.size, &hellos)?;
        self.hosts = hellos
            .into_iter()
            .map(|h| h.map(|h| h.host).unwrap_or_default())
            .collect();
        Ok(())
    }

    pub fn rank(&self) -> i32 {
        self.rank
    }

    pub fn size(&self) -> i32 {
        self.size
    }

    pub fn host(&self, rank: i32) -> &str {
        &self.hosts[rank as usize]
    }

    pub fn library(&self) -> &str {
        &self.library
    }

    pub fn pair(&self) -> Pair {
        Pair::of(self.rank, self.size)
    }

    /// The communicator measurements run on.
    pub(crate) fn data(&self) -> Comm {
        Comm(self.data.as_raw())
    }

    pub(crate) fn ctl(&self) -> Comm {
        Comm(self.ctl.as_raw())
    }

    /// Every rank waits here until all have arrived.
    pub fn barrier(&self) {
        self.ctl.barrier();
    }

    /// The initiators of all pairs as one communicator (responders get their own), for
    /// starting the pairs' measurements together.
    pub(crate) fn side(&self) -> SimpleCommunicator {
        let color = Color::with_value(i32::from(!self.pair().initiator));
        self.ctl
            .split_by_color(color)
            .expect("every rank has a color")
    }

    /// Ends the whole job: MPI_Abort on the world communicator.
    pub fn abort(&self, code: i32) -> ! {
        self.world.abort(code)
    }

    /// The pairs' rows combined on rank 0 (`None` on the other initiators, which send theirs
    /// there). Call on initiators only.
    pub(crate) fn combine_pairs(&self, rows: Vec<Row>) -> Result<Option<Vec<Row>>, MpiError> {
        if self.rank != 0 {
            self.send_json(0, &rows)?;
            return Ok(None);
        }
        let mut per_pair = vec![rows];
        for p in 1..self.pair().pairs as i32 {
            per_pair.push(self.recv_json::<Vec<Row>>(p)?);
        }
        crate::aggregate::combine(&per_pair)
            .map(Some)
            .map_err(MpiError::Combine)
    }

    /// Every rank's process, by rank: gathered at rank 0 and sent back to each. The ranks are
    /// one measurement (siblings under mpirun, or on other hosts, not parent and child), and
    /// each leaves the others out of what its watch for disturbance finds.
    pub(crate) fn process_ids(&self) -> Result<Vec<ProcessId>, MpiError> {
        let me = ProcessId::me();
        if self.rank != 0 {
            self.send_json(0, &me)?;
            let all: Vec<ProcessId> = self.recv_json(0)?;
            if all.len() != self.size as usize {
                return Err(MpiError::Protocol(format!(
                    "rank 0 sent {} processes for {} ranks",
                    all.len(),
                    self.size
                )));
            }
            return Ok(all);
        }
        let mut all = vec![me];
        for r in 1..self.size {
            all.push(self.recv_json(r)?);
        }
        for r in 1..self.size {
            self.send_json(r, &all)?;
        }
        Ok(all)
    }

    /// What disturbed the run at ranks `from` (each sends `mine`) merged into rank 0's own
    /// findings (`None` on the other ranks): another rank's prefixed with the rank and its
    /// host, and a measurement that two ranks of one machine both saw said once. `ids` are
    /// [`MpiWorld::process_ids`]. Call on rank 0 and the ranks `from`.
    pub(crate) fn merge_findings(
        &self,
        from: std::ops::Range<i32>,
        ids: &[ProcessId],
        mine: Disturbance,
    ) -> Result<Option<Disturbance>, MpiError> {
        if self.rank != 0 {
            self.send_json(0, &mine)?;
            return Ok(None);
        }
        let mut all = mine;
        for r in from.filter(|&r| r != 0) {
            let mut theirs: Disturbance = self.recv_json(r)?;
            for f in &mut theirs.findings {
                f.note = printable(&f.note);
            }
            let whose = format!("rank {r} on {}", printable(self.host(r)));
            let same_machine = ids[0].same_machine(&ids[r as usize]);
            all.merge(&whose, theirs, same_machine);
        }
        Ok(Some(all))
    }

    /// This rank's peer for a report: `rank 1 on node2 (2 pairs)`.
    pub(crate) fn peer_description(&self) -> String {
        let p = self.pair();
        format!(
            "rank {} on {} ({} pair{})",
            p.peer,
            self.host(p.peer),
            p.pairs,
            if p.pairs == 1 { "" } else { "s" }
        )
    }

    /// Sends `msg` as JSON on the control communicator.
    pub(crate) fn send_json<T: Serialize>(&self, dest: i32, msg: &T) -> Result<(), MpiError> {
        let bytes = serde_json::to_vec(msg).expect("control messages serialize");
        Ok(self.ctl().send(dest, CONTROL_TAG, &bytes)?)
    }

    /// Receives one JSON control message from `source`, refusing one longer than
    /// [`MAX_CONTROL`] before allocating for it.
    pub(crate) fn recv_json<T: DeserializeOwned>(&self, source: i32) -> Result<T, MpiError> {
        let ctl = self.ctl();
        let p = ctl.probe(source, CONTROL_TAG)?;
        if p.len > MAX_CONTROL {
            return Err(MpiError::Protocol(format!(
                "rank {source} announced a {}-byte control message (at most {MAX_CONTROL})",
                p.len
            )));
        }
        let mut buf = vec![0u8; p.len];
        ctl.recv(source, CONTROL_TAG, &mut buf)?;
        serde_json::from_slice(&buf).map_err(|e| {
            MpiError::Protocol(format!(
                "rank {source} sent a malformed control message: {e}"
            ))
        })
    }
}

const CONTROL_TAG: i32 = 77;
