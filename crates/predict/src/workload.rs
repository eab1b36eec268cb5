//! One representation of every workload: per rank, a list of operations with dependencies.
//!
//! It is GOAL's (LogGOPSim's) model, because it is the most general of the three inputs: an
//! operation starts when every operation it `requires` has completed and every operation it
//! `irequires` has started. A sequential program (commperf's own traces, SimGrid traces) is the
//! special case built by [`SeqProgram`]: each operation requires the last blocking one, and
//! irequires the one before it when that one was non-blocking, so posting order is kept.
//!
//! The layout is flat (one vector of operations, ranks as ranges, dependencies in compressed
//! rows) because a million-rank schedule must fit in a few hundred megabytes.

/// A rank (an MPI process) of the workload.
pub type Rank = u32;

/// Wildcard for a receive's source or tag (`MPI_ANY_SOURCE`, `MPI_ANY_TAG`).
pub const ANY: u32 = u32::MAX;

/// One operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    /// Local work of `ns` nanoseconds of virtual time: compute, sleep, or (with 0) a join point
    /// such as a wait. Occupies the rank's CPU.
    Calc { ns: u64 },
    /// Sends `bytes` to `to` with `tag`.
    Send { to: Rank, tag: u32, bytes: u64 },
    /// Receives `bytes` from `from` (or [`ANY`]) with `tag` (or [`ANY`]).
    Recv { from: Rank, tag: u32, bytes: u64 },
    /// A synchronous send (MPI_Ssend, MPI_Issend): like [`OpKind::Send`], but it completes
    /// only once the matching receive has been posted, whatever its size, as a send above the
    /// eager threshold does (rendezvous).
    Ssend { to: Rank, tag: u32, bytes: u64 },
    /// A one-sided transfer (MPI_Put/Get/Accumulate…): a request of `out` bytes from this rank
    /// to `target`, then a reply of `back` bytes to this rank (a put's reply is its empty
    /// acknowledgement). Only this rank's CPU is involved: no operation of the target matches
    /// it. It completes when the reply is in, so a wait for it is the origin knowing the
    /// transfer is done at the target (what closing an epoch waits for).
    Rma { target: Rank, out: u64, back: u64 },
}

impl OpKind {
    /// A send to `peer` or a receive from it: the readers parse both with one grammar.
    pub fn p2p(is_send: bool, peer: Rank, tag: u32, bytes: u64) -> OpKind {
        if is_send {
            OpKind::Send {
                to: peer,
                tag,
                bytes,
            }
        } else {
            OpKind::Recv {
                from: peer,
                tag,
                bytes,
            }
        }
    }

    /// A send's (destination, tag, bytes, synchronous), standard or synchronous; None for
    /// anything else.
    pub fn send_parts(self) -> Option<(Rank, u32, u64, bool)> {
        match self {
            OpKind::Send { to, tag, bytes } => Some((to, tag, bytes, false)),
            OpKind::Ssend { to, tag, bytes } => Some((to, tag, bytes, true)),
            _ => None,
        }
    }
}

/// How an operation depends on an earlier one of the same rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DepKind {
    /// Start only after the other operation completed.
    Requires,
    /// Start only after the other operation started.
    IRequires,
}

/// Index of an operation within its rank.
pub type Local = u32;

const IREQ_BIT: u32 = 1 << 31;

/// A finished workload: every rank's operations and dependencies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Workload {
    nranks: u32,
    ops: Vec<OpKind>,
    /// Operations of rank r are `ops[rank_start[r]..rank_start[r + 1]]`.
    rank_start: Vec<u32>,
    /// Dependencies of global operation i are `deps[dep_start[i]..dep_start[i + 1]]`: a local
    /// index of the same rank, with [`IREQ_BIT`] set for `irequires`.
    dep_start: Vec<u32>,
    deps: Vec<u32>,
}

impl Workload {
    pub fn nranks(&self) -> u32 {
        self.nranks
    }

    /// Every operation of every rank.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Global index range of rank `r`'s operations.
    pub fn rank_ops(&self, r: Rank) -> std::ops::Range<usize> {
        self.rank_start[r as usize] as usize..self.rank_start[r as usize + 1] as usize
    }

    /// The operation at global index `i`.
    pub fn op(&self, i: usize) -> OpKind {
        self.ops[i]
    }

    /// All operations, by global index.
    pub fn ops(&self) -> &[OpKind] {
        &self.ops
    }

    /// The rank owning global operation `i` (binary search: for reports, not hot loops).
    pub fn rank_of(&self, i: usize) -> Rank {
        (self.rank_start.partition_point(|&s| s as usize <= i) - 1) as Rank
    }

    /// Dependencies of global operation `i`, as (global index of the other operation, kind).
    pub fn deps(&self, i: usize) -> impl Iterator<Item = (usize, DepKind)> + '_ {
        let base = self.rank_start[self.rank_of(i) as usize] as usize;
        self.deps[self.dep_start[i] as usize..self.dep_start[i + 1] as usize]
            .iter()
            .map(move |&d| {
                let (local, kind) = Workload::decode_dep(d);
                (base + local as usize, kind)
            })
    }

    /// Raw dependency rows for engines: `(dep_start, deps)`; entries are local indices with the
    /// top bit set for `irequires` (see [`Workload::decode_dep`]).
    pub fn dep_rows(&self) -> (&[u32], &[u32]) {
        (&self.dep_start, &self.deps)
    }

    /// Splits a raw dependency entry into (local index, kind).
    pub fn decode_dep(d: u32) -> (Local, DepKind) {
        if d & IREQ_BIT != 0 {
            (d & !IREQ_BIT, DepKind::IRequires)
        } else {
            (d, DepKind::Requires)
        }
    }

    /// `rank_start` (length `nranks + 1`).
    pub fn rank_starts(&self) -> &[u32] {
        &self.rank_start
    }

    /// Counts of (sends, receives, calcs).
    pub fn counts(&self) -> (usize, usize, usize) {
        let mut c = (0, 0, 0);
        for op in &self.ops {
            match op {
                OpKind::Send { .. } | OpKind::Ssend { .. } => c.0 += 1,
                OpKind::Recv { .. } => c.1 += 1,
                OpKind::Calc { .. } => c.2 += 1,
                OpKind::Rma { .. } => {}
            }
        }
        c
    }
}

/// Why a workload cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    #[error("rank {rank} is outside 0..{nranks}")]
    RankOutOfRange { rank: u64, nranks: u32 },
    #[error("rank {0} is defined twice")]
    DuplicateRank(Rank),
    #[error("operation {op} of rank {rank} depends on operation {on}, which does not exist")]
    BadDependency { rank: Rank, op: Local, on: Local },
    #[error("operation {op} of rank {rank} depends on itself")]
    SelfDependency { rank: Rank, op: Local },
    #[error("more than {max} operations")]
    TooLarge { max: u64 },
}

/// Builds a [`Workload`] rank by rank, in any rank order.
#[derive(Debug)]
pub struct WorkloadBuilder {
    nranks: u32,
    ops: Vec<OpKind>,
    dep_start: Vec<u32>,
    deps: Vec<u32>,
    /// (rank, first global op, end) of each rank added, in the order added.
    chunks: Vec<(Rank, u32, u32)>,
    defined: Vec<bool>,
    scratch: Vec<(Local, u32)>,
}

impl WorkloadBuilder {
    pub fn new(nranks: u32) -> Self {
        WorkloadBuilder {
            nranks,
            ops: Vec::new(),
            dep_start: vec![0],
            deps: Vec::new(),
            chunks: Vec::new(),
            defined: vec![false; nranks as usize],
            scratch: Vec::new(),
        }
    }

    pub fn nranks(&self) -> u32 {
        self.nranks
    }

    /// Whether rank `r` was added already.
    pub fn is_defined(&self, r: Rank) -> bool {
        self.defined.get(r as usize).copied().unwrap_or(false)
    }

    /// Adds rank `r` with its operations and its dependencies `(op, on, kind)` (local indices).
    pub fn add_rank(
        &mut self,
        r: Rank,
        ops: &[OpKind],
        deps: &[(Local, Local, DepKind)],
    ) -> Result<(), BuildError> {
        if r >= self.nranks {
            return Err(BuildError::RankOutOfRange {
                rank: r as u64,
                nranks: self.nranks,
            });
        }
        if self.defined[r as usize] {
            return Err(BuildError::DuplicateRank(r));
        }
        let n = ops.len() as u64;
        if self.ops.len() as u64 + n >= u32::MAX as u64
            || self.deps.len() as u64 + deps.len() as u64 >= u32::MAX as u64
        {
            return Err(BuildError::TooLarge {
                max: u32::MAX as u64 - 1,
            });
        }
        self.scratch.clear();
        for &(op, on, kind) in deps {
            if op as u64 >= n || on as u64 >= n {
                return Err(BuildError::BadDependency { rank: r, op, on });
            }
            if op == on {
                return Err(BuildError::SelfDependency { rank: r, op });
            }
            let enc = match kind {
                DepKind::Requires => on,
                DepKind::IRequires => on | IREQ_BIT,
            };
            self.scratch.push((op, enc));
        }
        // Stable by operation, so a rank's dependencies keep the order they were written in.
        self.scratch.sort_by_key(|&(op, _)| op);
        self.scratch.dedup();
        let first = self.ops.len() as u32;
        self.ops.extend_from_slice(ops);
        let mut k = 0;
        for op in 0..ops.len() as u32 {
            while k < self.scratch.len() && self.scratch[k].0 == op {
                self.deps.push(self.scratch[k].1);
                k += 1;
            }
            self.dep_start.push(self.deps.len() as u32);
        }
        self.chunks.push((r, first, self.ops.len() as u32));
        self.defined[r as usize] = true;
        Ok(())
    }

    /// Adds a sequential program as rank `r`.
    pub fn add_program(&mut self, r: Rank, p: &SeqProgram) -> Result<(), BuildError> {
        self.add_rank(r, &p.ops, &p.deps)
    }

    /// Finishes: ranks never added have no operations.
    pub fn finish(self) -> Workload {
        let WorkloadBuilder {
            nranks,
            ops,
            dep_start,
            deps,
            mut chunks,
            ..
        } = self;
        let in_order = chunks.windows(2).all(|w| w[0].0 < w[1].0);
        let (ops, dep_start, deps) = if in_order {
            (ops, dep_start, deps)
        } else {
            chunks.sort_by_key(|c| c.0);
            let mut o = Vec::with_capacity(ops.len());
            let mut ds = Vec::with_capacity(dep_start.len());
            let mut d = Vec::with_capacity(deps.len());
            ds.push(0);
            for &(_, a, b) in &chunks {
                for i in a as usize..b as usize {
                    o.push(ops[i]);
                    d.extend_from_slice(&deps[dep_start[i] as usize..dep_start[i + 1] as usize]);
                    ds.push(d.len() as u32);
                }
            }
            (o, ds, d)
        };
        let mut rank_start = Vec::with_capacity(nranks as usize + 1);
        let mut ci = 0;
        let mut pos = 0u32;
        for r in 0..nranks {
            rank_start.push(pos);
            if ci < chunks.len() && chunks[ci].0 == r {
                pos += chunks[ci].2 - chunks[ci].1;
                ci += 1;
            }
        }
        rank_start.push(pos);
        Workload {
            nranks,
            ops,
            rank_start,
            dep_start,
            deps,
        }
    }
}

/// A request handle of a sequential program: the local index of a non-blocking operation.
pub type Request = Local;

/// One rank's program written in program order (blocking and non-blocking calls), turned into
/// operations with dependencies.
#[derive(Debug, Clone, Default)]
pub struct SeqProgram {
    ops: Vec<OpKind>,
    deps: Vec<(Local, Local, DepKind)>,
    last_blocking: Option<Local>,
    last: Option<Local>,
}

impl SeqProgram {
    pub fn new() -> Self {
        SeqProgram::default()
    }

    pub fn len(&self) -> usize {
        self.ops.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    pub fn ops(&self) -> &[OpKind] {
        &self.ops
    }

    pub fn deps(&self) -> &[(Local, Local, DepKind)] {
        &self.deps
    }

    fn push(&mut self, op: OpKind) -> Local {
        let i = self.ops.len() as Local;
        self.ops.push(op);
        if let Some(b) = self.last_blocking {
            self.deps.push((i, b, DepKind::Requires));
        }
        if let Some(l) = self.last {
            if Some(l) != self.last_blocking {
                self.deps.push((i, l, DepKind::IRequires));
            }
        }
        self.last = Some(i);
        i
    }

    /// A blocking call: everything after it waits for it to complete.
    pub fn blocking(&mut self, op: OpKind) -> Local {
        let i = self.push(op);
        self.last_blocking = Some(i);
        i
    }

    /// A non-blocking call: later calls only wait for it to have started. Returns its request.
    pub fn nonblocking(&mut self, op: OpKind) -> Request {
        self.push(op)
    }

    /// Waits for the given requests (MPI_Wait / MPI_Waitall): a zero-time blocking join point.
    /// Requests that are not operations of this program are ignored by the builder's checks.
    pub fn wait(&mut self, reqs: &[Request]) -> Local {
        let i = self.blocking(OpKind::Calc { ns: 0 });
        for &r in reqs {
            if r != i {
                self.deps.push((i, r, DepKind::Requires));
            }
        }
        i
    }

    /// Local work of `ns` nanoseconds (blocking).
    pub fn calc(&mut self, ns: u64) -> Local {
        self.blocking(OpKind::Calc { ns })
    }

    /// Rewrites the peers of the operations from local index `from` on with `f` (a receive
    /// from [`ANY`] stays one): how a collective expanded over a group's ranks addresses the
    /// members' world ranks.
    pub fn map_peers(&mut self, from: usize, f: impl Fn(Rank) -> Rank) {
        for op in self.ops.iter_mut().skip(from) {
            match op {
                OpKind::Send { to, .. }
                | OpKind::Ssend { to, .. }
                | OpKind::Rma { target: to, .. } => *to = f(*to),
                OpKind::Recv { from, .. } if *from != ANY => *from = f(*from),
                _ => {}
            }
        }
    }

    /// Adds `other`, a program of its own (one nonblocking collective's expansion), as started
    /// by a nonblocking call at this point: its first operation depends on what came before as
    /// the next call would, its own operations keep their dependencies among themselves, and
    /// the calls after it only wait for it to have started (MPI_Iallreduce returns at once; its
    /// messages then progress beside the program). Returns the operations a wait for it must
    /// join: those of `other` no later one of `other` requires, whose completion is its
    /// completion. An empty `other` (a collective of one rank) needs no waiting.
    pub fn nonblocking_program(&mut self, other: &SeqProgram) -> Vec<Request> {
        let Some(&first) = other.ops.first() else {
            return Vec::new();
        };
        let base = self.ops.len() as Local;
        // The first operation enters through `push`, which gives it the posting-order
        // dependencies and makes it `last`: later calls irequire it. `last_blocking` stays, so
        // they need not wait for any of `other` to complete.
        let keep = self.last_blocking;
        self.push(first);
        self.ops.extend_from_slice(&other.ops[1..]);
        self.last_blocking = keep;
        self.last = Some(base);
        let mut required = vec![false; other.ops.len()];
        for &(op, on, kind) in &other.deps {
            self.deps.push((op + base, on + base, kind));
            if kind == DepKind::Requires && op != on {
                if let Some(r) = required.get_mut(on as usize) {
                    *r = true;
                }
            }
        }
        (0..other.ops.len() as Local)
            .filter(|&i| !required[i as usize])
            .map(|i| i + base)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_added_out_of_order_are_laid_out_by_rank() {
        let mut b = WorkloadBuilder::new(3);
        let mut p = SeqProgram::new();
        p.calc(5);
        let r = p.nonblocking(OpKind::Send {
            to: 0,
            tag: 1,
            bytes: 8,
        });
        p.calc(7);
        p.wait(&[r]);
        b.add_program(2, &p).unwrap();
        b.add_rank(
            0,
            &[OpKind::Recv {
                from: 2,
                tag: 1,
                bytes: 8,
            }],
            &[],
        )
        .unwrap();
        assert_eq!(b.add_rank(0, &[], &[]), Err(BuildError::DuplicateRank(0)));
        let w = b.finish();
        assert_eq!(w.rank_ops(0), 0..1);
        assert_eq!(w.rank_ops(1), 1..1);
        assert_eq!(w.rank_ops(2), 1..5);
        assert_eq!(w.rank_of(3), 2);
        // The isend requires the calc; the second calc requires the first calc and irequires
        // the isend; the wait requires the second calc and the isend.
        let d: Vec<_> = w.deps(2).collect();
        assert_eq!(d, vec![(1, DepKind::Requires)]);
        let d: Vec<_> = w.deps(3).collect();
        assert_eq!(d, vec![(1, DepKind::Requires), (2, DepKind::IRequires)]);
        let mut d: Vec<_> = w.deps(4).collect();
        d.sort_by_key(|x| x.0);
        assert_eq!(d, vec![(2, DepKind::Requires), (3, DepKind::Requires)]);
    }

    #[test]
    fn a_nonblocking_program_starts_at_its_call_and_its_sinks_are_waited() {
        let mut main = SeqProgram::new();
        main.calc(3); // 0
        let mut coll = SeqProgram::new();
        coll.blocking(OpKind::Recv {
            from: 1,
            tag: 9,
            bytes: 8,
        });
        let s = coll.nonblocking(OpKind::Send {
            to: 2,
            tag: 9,
            bytes: 8,
        });
        let r = coll.nonblocking(OpKind::Recv {
            from: 2,
            tag: 9,
            bytes: 8,
        });
        coll.wait(&[s, r]);
        let sinks = main.nonblocking_program(&coll); // 1..=4
        assert_eq!(sinks, vec![4]);
        main.calc(7); // 5
        main.wait(&sinks); // 6
        let mut b = WorkloadBuilder::new(3);
        b.add_program(0, &main).unwrap();
        let w = b.finish();
        let deps = |i: usize| {
            let mut d: Vec<_> = w.deps(i).collect();
            d.sort_by_key(|x| x.0);
            d
        };
        // The collective's first operation waits for the compute before the call.
        assert_eq!(deps(1), vec![(0, DepKind::Requires)]);
        // Its own order is kept, shifted.
        assert_eq!(deps(2), vec![(1, DepKind::Requires)]);
        assert_eq!(
            deps(4),
            vec![
                (1, DepKind::Requires),
                (2, DepKind::Requires),
                (3, DepKind::IRequires),
                (3, DepKind::Requires)
            ]
        );
        // The compute after the call needs the earlier compute done and the call started only.
        assert_eq!(
            deps(5),
            vec![(0, DepKind::Requires), (1, DepKind::IRequires)]
        );
        // The wait joins the compute and the collective's last operation.
        assert_eq!(
            deps(6),
            vec![(4, DepKind::Requires), (5, DepKind::Requires)]
        );
        assert!(SeqProgram::new()
            .nonblocking_program(&SeqProgram::new())
            .is_empty());
    }

    #[test]
    fn bad_dependencies_are_refused() {
        let mut b = WorkloadBuilder::new(1);
        let e = b.add_rank(0, &[OpKind::Calc { ns: 1 }], &[(0, 3, DepKind::Requires)]);
        assert_eq!(
            e,
            Err(BuildError::BadDependency {
                rank: 0,
                op: 0,
                on: 3
            })
        );
        let e = b.add_rank(0, &[OpKind::Calc { ns: 1 }], &[(0, 0, DepKind::Requires)]);
        assert_eq!(e, Err(BuildError::SelfDependency { rank: 0, op: 0 }));
        assert!(matches!(
            b.add_rank(4, &[], &[]),
            Err(BuildError::RankOutOfRange { rank: 4, .. })
        ));
    }
}
