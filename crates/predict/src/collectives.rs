//! Collectives expanded into point-to-point operations by named, selectable algorithms.
//!
//! A trace names a collective (`allreduce 1KiB`); the engines only know sends, receives and
//! local work. Each rank expands its own part of the collective into its [`SeqProgram`] from
//! (rank, number of ranks, tag) alone, so the expansion of a million-rank trace never needs a
//! global view. The algorithms are the textbook ones used by MPICH and Open MPI (binomial trees,
//! recursive doubling with the fold of the ranks beyond the largest power of two, rings,
//! pairwise exchange, dissemination), chosen per family by [`Algorithms`].
//!
//! Every message of one collective call carries the same tag, taken from a reserved space
//! ([`coll_tag`], [`group_coll_tag`]) that user point-to-point tags (< 2^31) cannot reach.
//! Messages between the same pair within one call are matched in order, as MPI's
//! non-overtaking rule guarantees.
//!
//! A collective on a communicator group ([`Algorithms::expand_on`]) runs the same algorithms
//! over the group's members: group rank i is world rank `members[i]`, and every message is
//! between world ranks.

use crate::workload::{OpKind, Rank, Request, SeqProgram};
use std::fmt;
use std::str::FromStr;

/// First tag of the space reserved for collectives; user tags must be below it.
pub const COLL_TAG_BASE: u32 = 0x8000_0000;

/// First tag of the part of the reserved space given to communicator groups: the world-wide
/// collectives keep `COLL_TAG_BASE..GROUP_TAG_BASE`, groups the rest.
pub const GROUP_TAG_BASE: u32 = 0xC000_0000;

/// Bits of a group collective's tag that number its calls; the 14 bits above them (below
/// [`GROUP_TAG_BASE`]'s two) number the group.
const GROUP_CALL_BITS: u32 = 16;

/// Most communicator groups a trace may define (2^14): each needs its own tags.
pub const MAX_GROUPS: u32 = 1 << (30 - GROUP_CALL_BITS);

/// The tag of a rank's `seq`-th world-wide collective call (0-based): `0x8000_0000 | seq`.
/// Wraps after 2^30 calls, so it never reaches the groups' tags nor [`crate::workload::ANY`]
/// (`u32::MAX`). A wrapped tag is harmless: every rank calls the same collectives in the same
/// order and messages of one (source, destination, tag) match in order, so two calls 2^30
/// apart never pair each other's messages unless both are in flight at once.
pub fn coll_tag(seq: u64) -> u32 {
    COLL_TAG_BASE | (seq % (1 << 30)) as u32
}

/// The tag of the `seq`-th collective call (0-based) on communicator group `group` (0-based,
/// below [`MAX_GROUPS`]): `0xC000_0000 | group << 16 | seq mod 65535`. Unique per (group, call)
/// among any 65535 consecutive calls of the group, distinct from every world-wide collective's
/// and user tag, and never [`crate::workload::ANY`] (the call number stops short of 0xFFFF).
/// Groups are numbered by the caller; an out-of-range group wraps (the readers refuse it).
pub fn group_coll_tag(group: u32, seq: u64) -> u32 {
    let g = group % MAX_GROUPS;
    GROUP_TAG_BASE | g << GROUP_CALL_BITS | (seq % 0xFFFF) as u32
}

macro_rules! algo_enum {
    ($(#[$doc:meta])* $name:ident, $family:literal, default $def:ident,
     $($(#[$vdoc:meta])* $var:ident = $text:literal),+ $(,)?) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $var),+
        }

        impl $name {
            /// Every choice, by name.
            pub const NAMES: &'static [&'static str] = &[$($text),+];
            /// The collective family this choice is for (`bcast`, `allreduce`, ...).
            pub const FAMILY: &'static str = $family;

            pub fn name(self) -> &'static str {
                match self {
                    $($name::$var => $text),+
                }
            }
        }

        impl Default for $name {
            fn default() -> Self {
                $name::$def
            }
        }

        impl FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($text => Ok($name::$var),)+
                    _ => Err(format!(
                        "unknown {} algorithm `{}` (expected one of: {})",
                        $family,
                        s,
                        Self::NAMES.join(", ")
                    )),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

algo_enum!(
    /// Broadcast.
    BcastAlgo, "bcast", default Binomial,
    /// Binomial tree: ⌈log2 n⌉ rounds, n − 1 messages.
    Binomial = "binomial",
    /// The root sends to every rank in turn.
    Linear = "linear",
);
algo_enum!(
    /// Reduce to a root.
    ReduceAlgo, "reduce", default Binomial,
    /// Binomial tree, children combined on the way up.
    Binomial = "binomial",
    /// Every rank sends to the root.
    Linear = "linear",
);
algo_enum!(
    /// Allreduce.
    AllreduceAlgo, "allreduce", default RecursiveDoubling,
    /// Recursive doubling; ranks beyond the largest power of two first fold into a partner.
    RecursiveDoubling = "recursive-doubling",
    /// Ring reduce-scatter then ring allgather: 2(n − 1) steps of 1/n of the data.
    Ring = "ring",
    /// Binomial reduce to rank 0 then binomial broadcast.
    ReduceBcast = "reduce-bcast",
);
algo_enum!(
    /// Allgather.
    AllgatherAlgo, "allgather", default RecursiveDoubling,
    /// Recursive doubling with the fold of the extra ranks.
    RecursiveDoubling = "recursive-doubling",
    /// Ring: n − 1 steps, each passing one block on.
    Ring = "ring",
);
algo_enum!(
    /// All-to-all (and alltoallv).
    AlltoallAlgo, "alltoall", default Pairwise,
    /// Step i sends to (r + i) mod n and receives from (r − i) mod n.
    Pairwise = "pairwise",
    /// Every send and receive posted at once, then one wait.
    Linear = "linear",
);
algo_enum!(
    /// Gather to a root (and gatherv).
    GatherAlgo, "gather", default Binomial,
    /// Binomial tree, each rank forwarding its subtree's blocks.
    Binomial = "binomial",
    /// Every rank sends to the root.
    Linear = "linear",
);
algo_enum!(
    /// Scatter from a root (and scatterv).
    ScatterAlgo, "scatter", default Binomial,
    /// Binomial tree, each rank receiving its subtree's blocks.
    Binomial = "binomial",
    /// The root sends to every rank.
    Linear = "linear",
);
algo_enum!(
    /// Reduce-scatter.
    ReduceScatterAlgo, "reducescatter", default Ring,
    /// Ring: n − 1 steps, each passing one partially reduced block on.
    Ring = "ring",
    /// Every rank sends block j directly to rank j, pairwise.
    Pairwise = "pairwise",
);
algo_enum!(
    /// Barrier.
    BarrierAlgo, "barrier", default Dissemination,
    /// Dissemination: ⌈log2 n⌉ rounds of 0-byte messages to (r + 2^k) mod n.
    Dissemination = "dissemination",
);

/// Algorithm choices, one per collective family, plus the cost of combining data in reductions.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Algorithms {
    pub bcast: BcastAlgo,
    pub reduce: ReduceAlgo,
    pub allreduce: AllreduceAlgo,
    pub allgather: AllgatherAlgo,
    pub alltoall: AlltoallAlgo,
    pub gather: GatherAlgo,
    pub scatter: ScatterAlgo,
    pub reducescatter: ReduceScatterAlgo,
    pub barrier: BarrierAlgo,
    /// Virtual nanoseconds of local work after each received contribution of a reduction
    /// (reduce, allreduce, reduce-scatter). 0 models free arithmetic.
    pub reduce_step_ns: u64,
}

const FAMILIES: &[&str] = &[
    "bcast",
    "reduce",
    "allreduce",
    "allgather",
    "alltoall",
    "gather",
    "scatter",
    "reducescatter",
    "barrier",
];

impl Algorithms {
    /// Every family with its algorithms' names, the default first: what `--algo` offers.
    pub fn choices() -> [(&'static str, &'static [&'static str]); 9] {
        [
            (BcastAlgo::FAMILY, BcastAlgo::NAMES),
            (ReduceAlgo::FAMILY, ReduceAlgo::NAMES),
            (AllreduceAlgo::FAMILY, AllreduceAlgo::NAMES),
            (AllgatherAlgo::FAMILY, AllgatherAlgo::NAMES),
            (AlltoallAlgo::FAMILY, AlltoallAlgo::NAMES),
            (GatherAlgo::FAMILY, GatherAlgo::NAMES),
            (ScatterAlgo::FAMILY, ScatterAlgo::NAMES),
            (ReduceScatterAlgo::FAMILY, ReduceScatterAlgo::NAMES),
            (BarrierAlgo::FAMILY, BarrierAlgo::NAMES),
        ]
    }

    /// Parses a CLI list such as `bcast=binomial,allreduce=ring,alltoall=pairwise`; families
    /// not named keep their defaults. An empty string gives the defaults.
    pub fn parse_list(s: &str) -> Result<Algorithms, String> {
        let mut a = Algorithms::default();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let Some((family, name)) = item.split_once('=') else {
                return Err(format!(
                    "`{item}` is not FAMILY=ALGORITHM (families: {})",
                    FAMILIES.join(", ")
                ));
            };
            let (family, name) = (family.trim(), name.trim());
            match family {
                "bcast" => a.bcast = name.parse()?,
                "reduce" => a.reduce = name.parse()?,
                "allreduce" => a.allreduce = name.parse()?,
                "allgather" => a.allgather = name.parse()?,
                "alltoall" => a.alltoall = name.parse()?,
                "gather" => a.gather = name.parse()?,
                "scatter" => a.scatter = name.parse()?,
                "reducescatter" => a.reducescatter = name.parse()?,
                "barrier" => a.barrier = name.parse()?,
                _ => {
                    return Err(format!(
                        "unknown collective family `{family}` (expected one of: {})",
                        FAMILIES.join(", ")
                    ))
                }
            }
        }
        Ok(a)
    }

    /// Expands rank `rank`'s part of `coll` (one call in a communicator of `nranks` ranks, every
    /// message tagged `tag`) into `p`. Ranks named by the collective (roots) must be < nranks and
    /// per-rank count lists must have `nranks` entries; the readers check both.
    pub fn expand(&self, p: &mut SeqProgram, rank: Rank, nranks: u32, tag: u32, coll: &Collective) {
        if nranks == 0 || rank >= nranks {
            return;
        }
        let c = Ctx {
            r: rank,
            n: nranks,
            tag,
            step_ns: self.reduce_step_ns,
        };
        match coll {
            Collective::Barrier => dissemination_barrier(p, &c),
            Collective::Bcast { root, bytes } => match self.bcast {
                BcastAlgo::Binomial => binomial_bcast(p, &c, *root, *bytes),
                BcastAlgo::Linear => linear_bcast(p, &c, *root, *bytes),
            },
            Collective::Reduce {
                root,
                bytes,
                compute_ns,
            } => {
                match self.reduce {
                    ReduceAlgo::Binomial => binomial_reduce(p, &c, *root, *bytes),
                    ReduceAlgo::Linear => linear_reduce(p, &c, *root, *bytes),
                }
                extra_compute(p, *compute_ns);
            }
            Collective::Allreduce { bytes, compute_ns } => {
                match self.allreduce {
                    AllreduceAlgo::RecursiveDoubling => rd_allreduce(p, &c, *bytes),
                    AllreduceAlgo::Ring => ring_allreduce(p, &c, *bytes),
                    AllreduceAlgo::ReduceBcast => {
                        binomial_reduce(p, &c, 0, *bytes);
                        binomial_bcast(p, &c, 0, *bytes);
                    }
                }
                extra_compute(p, *compute_ns);
            }
            Collective::Allgather { bytes } => self.allgather(p, &c, Blocks::Uniform(*bytes)),
            Collective::Allgatherv { counts } => self.allgather(p, &c, Blocks::PerRank(counts)),
            Collective::Alltoall { bytes } => {
                let b = *bytes;
                self.alltoall(p, &c, &|_| b, &|_| b)
            }
            Collective::Alltoallv { send, recv } => self.alltoall(
                p,
                &c,
                &|j| send.get(j as usize).copied().unwrap_or(0),
                &|j| recv.get(j as usize).copied().unwrap_or(0),
            ),
            Collective::Gather { root, bytes } => {
                self.gather(p, &c, *root, Blocks::Uniform(*bytes))
            }
            Collective::Gatherv { root, counts } => {
                self.gather(p, &c, *root, Blocks::PerRank(counts))
            }
            Collective::Scatter { root, bytes } => {
                self.scatter(p, &c, *root, Blocks::Uniform(*bytes))
            }
            Collective::Scatterv { root, counts } => {
                self.scatter(p, &c, *root, Blocks::PerRank(counts))
            }
            Collective::Scan { bytes } => chain_scan(p, &c, *bytes, false),
            Collective::Exscan { bytes } => chain_scan(p, &c, *bytes, true),
            Collective::ReduceScatter { counts, compute_ns } => {
                let blocks = match counts {
                    BlockCounts::Uniform(b) => Blocks::Uniform(*b),
                    BlockCounts::PerRank(v) => Blocks::PerRank(v),
                };
                match self.reducescatter {
                    ReduceScatterAlgo::Ring => ring_reduce_scatter(p, &c, blocks),
                    ReduceScatterAlgo::Pairwise => pairwise_reduce_scatter(p, &c, blocks),
                }
                extra_compute(p, *compute_ns);
            }
        }
    }

    /// Expands the part of `coll` of the member at position `pos` of a communicator group
    /// whose world ranks, in communicator rank order, are `members`: the same algorithms as
    /// [`Algorithms::expand`] over `members.len()` ranks (roots and per-rank counts are group
    /// ranks, as in MPI), every message addressed to the world rank of its group peer.
    pub fn expand_on(
        &self,
        p: &mut SeqProgram,
        members: &[Rank],
        pos: u32,
        tag: u32,
        coll: &Collective,
    ) {
        let first = p.len();
        self.expand(p, pos, members.len() as u32, tag, coll);
        p.map_peers(first, |g| members.get(g as usize).copied().unwrap_or(g));
    }

    /// An upper bound on the operations [`Algorithms::expand`] adds to one rank's program, so
    /// readers can refuse a two-line trace that would expand into billions of operations
    /// (`ranks 16777216` and one `alltoall`) before allocating them.
    pub fn ops_bound(&self, coll: &Collective, nranks: u32) -> u64 {
        let log = (nranks as u64).next_power_of_two().trailing_zeros() as u64 + 2;
        let lin = nranks as u64 + 2;
        let steps = match coll {
            Collective::Barrier => log,
            Collective::Bcast { .. } => match self.bcast {
                BcastAlgo::Binomial => log,
                BcastAlgo::Linear => lin,
            },
            Collective::Reduce { .. } => match self.reduce {
                ReduceAlgo::Binomial => log,
                ReduceAlgo::Linear => lin,
            },
            Collective::Allreduce { .. } => match self.allreduce {
                AllreduceAlgo::RecursiveDoubling | AllreduceAlgo::ReduceBcast => 2 * log,
                AllreduceAlgo::Ring => 2 * lin,
            },
            Collective::Allgather { .. } | Collective::Allgatherv { .. } => match self.allgather {
                AllgatherAlgo::RecursiveDoubling => log,
                AllgatherAlgo::Ring => lin,
            },
            Collective::Alltoall { .. } | Collective::Alltoallv { .. } => lin,
            Collective::Gather { .. } | Collective::Gatherv { .. } => match self.gather {
                GatherAlgo::Binomial => log,
                GatherAlgo::Linear => lin,
            },
            Collective::Scatter { .. } | Collective::Scatterv { .. } => match self.scatter {
                ScatterAlgo::Binomial => log,
                ScatterAlgo::Linear => lin,
            },
            Collective::ReduceScatter { .. } => lin,
            Collective::Scan { .. } | Collective::Exscan { .. } => 1,
        };
        // At most a send, a receive, a wait and a combine step per step, plus the final compute.
        4 * steps + 1
    }

    fn allgather(&self, p: &mut SeqProgram, c: &Ctx, b: Blocks<'_>) {
        match self.allgather {
            AllgatherAlgo::RecursiveDoubling => rd_allgather(p, c, b),
            AllgatherAlgo::Ring => ring_allgather(p, c, b),
        }
    }

    fn alltoall(
        &self,
        p: &mut SeqProgram,
        c: &Ctx,
        send: &dyn Fn(u32) -> u64,
        recv: &dyn Fn(u32) -> u64,
    ) {
        match self.alltoall {
            AlltoallAlgo::Pairwise => pairwise_alltoall(p, c, send, recv),
            AlltoallAlgo::Linear => linear_alltoall(p, c, send, recv),
        }
    }

    fn gather(&self, p: &mut SeqProgram, c: &Ctx, root: Rank, b: Blocks<'_>) {
        match self.gather {
            GatherAlgo::Binomial => binomial_gather(p, c, root, b),
            GatherAlgo::Linear => linear_gather(p, c, root, b),
        }
    }

    fn scatter(&self, p: &mut SeqProgram, c: &Ctx, root: Rank, b: Blocks<'_>) {
        match self.scatter {
            ScatterAlgo::Binomial => binomial_scatter(p, c, root, b),
            ScatterAlgo::Linear => linear_scatter(p, c, root, b),
        }
    }
}

impl FromStr for Algorithms {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Algorithms::parse_list(s)
    }
}

/// Per-rank block sizes of reduce-scatter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockCounts {
    /// Every rank receives this many bytes.
    Uniform(u64),
    /// Rank j receives `v[j]` bytes.
    PerRank(Vec<u64>),
}

/// One collective call, sizes in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Collective {
    Barrier,
    /// `bytes` from `root` to everyone.
    Bcast {
        root: Rank,
        bytes: u64,
    },
    /// `bytes` combined into `root`, then `compute_ns` of local work on every rank (SimGrid's
    /// computation part of a reduce).
    Reduce {
        root: Rank,
        bytes: u64,
        compute_ns: u64,
    },
    /// `bytes` combined everywhere, then `compute_ns` of local work.
    Allreduce {
        bytes: u64,
        compute_ns: u64,
    },
    /// Every rank contributes `bytes`.
    Allgather {
        bytes: u64,
    },
    /// Rank j contributes `counts[j]` bytes.
    Allgatherv {
        counts: Vec<u64>,
    },
    /// `bytes` from every rank to every other.
    Alltoall {
        bytes: u64,
    },
    /// This rank sends `send[j]` bytes to j and receives `recv[j]` bytes from j.
    Alltoallv {
        send: Vec<u64>,
        recv: Vec<u64>,
    },
    /// Every rank sends `bytes` to `root`.
    Gather {
        root: Rank,
        bytes: u64,
    },
    /// Rank j sends `counts[j]` bytes to `root`.
    Gatherv {
        root: Rank,
        counts: Vec<u64>,
    },
    /// `root` sends `bytes` to every rank.
    Scatter {
        root: Rank,
        bytes: u64,
    },
    /// `root` sends `counts[j]` bytes to rank j.
    Scatterv {
        root: Rank,
        counts: Vec<u64>,
    },
    /// Reduce then scatter blocks; then `compute_ns` of local work.
    ReduceScatter {
        counts: BlockCounts,
        compute_ns: u64,
    },
    /// Inclusive prefix reduction of `bytes` (MPI_Scan): rank j gets ranks 0..=j combined.
    Scan {
        bytes: u64,
    },
    /// Exclusive prefix reduction of `bytes` (MPI_Exscan): rank j gets ranks 0..j combined.
    Exscan {
        bytes: u64,
    },
}

impl Collective {
    /// The collective's name as written in traces.
    pub fn name(&self) -> &'static str {
        match self {
            Collective::Barrier => "barrier",
            Collective::Bcast { .. } => "bcast",
            Collective::Reduce { .. } => "reduce",
            Collective::Allreduce { .. } => "allreduce",
            Collective::Allgather { .. } => "allgather",
            Collective::Allgatherv { .. } => "allgatherv",
            Collective::Alltoall { .. } => "alltoall",
            Collective::Alltoallv { .. } => "alltoallv",
            Collective::Gather { .. } => "gather",
            Collective::Gatherv { .. } => "gatherv",
            Collective::Scatter { .. } => "scatter",
            Collective::Scatterv { .. } => "scatterv",
            Collective::ReduceScatter { .. } => "reducescatter",
            Collective::Scan { .. } => "scan",
            Collective::Exscan { .. } => "exscan",
        }
    }

    /// The root, for rooted collectives.
    pub fn root(&self) -> Option<Rank> {
        match self {
            Collective::Bcast { root, .. }
            | Collective::Reduce { root, .. }
            | Collective::Gather { root, .. }
            | Collective::Gatherv { root, .. }
            | Collective::Scatter { root, .. }
            | Collective::Scatterv { root, .. } => Some(*root),
            _ => None,
        }
    }
}

struct Ctx {
    r: Rank,
    n: u32,
    tag: u32,
    step_ns: u64,
}

/// Block sizes of the ranks, by original rank.
#[derive(Clone, Copy)]
enum Blocks<'a> {
    Uniform(u64),
    PerRank(&'a [u64]),
}

impl Blocks<'_> {
    fn get(&self, j: u32) -> u64 {
        match self {
            Blocks::Uniform(b) => *b,
            Blocks::PerRank(v) => v.get(j as usize).copied().unwrap_or(0),
        }
    }

    /// Sum over ranks `lo..hi` (saturating: sizes are bounded by the readers anyway).
    fn sum(&self, lo: u32, hi: u32) -> u64 {
        match self {
            Blocks::Uniform(b) => b.saturating_mul(hi.saturating_sub(lo) as u64),
            Blocks::PerRank(v) => (lo..hi).fold(0u64, |s, j| {
                s.saturating_add(v.get(j as usize).copied().unwrap_or(0))
            }),
        }
    }

    /// Sum over the virtual ranks `lo..hi` of a tree rooted at `root` (virtual v is real
    /// (v + root) mod n).
    fn sum_virtual(&self, lo: u32, hi: u32, root: u32, n: u32) -> u64 {
        match self {
            Blocks::Uniform(_) => self.sum(lo, hi),
            Blocks::PerRank(_) => {
                (lo..hi).fold(0u64, |s, v| s.saturating_add(self.get(real(v, root, n))))
            }
        }
    }
}

fn send_op(to: Rank, tag: u32, bytes: u64) -> OpKind {
    OpKind::Send { to, tag, bytes }
}

fn recv_op(from: Rank, tag: u32, bytes: u64) -> OpKind {
    OpKind::Recv { from, tag, bytes }
}

/// Blocking send.
fn send(p: &mut SeqProgram, c: &Ctx, to: Rank, bytes: u64) {
    p.blocking(send_op(to, c.tag, bytes));
}

/// Blocking receive.
fn recv(p: &mut SeqProgram, c: &Ctx, from: Rank, bytes: u64) {
    p.blocking(recv_op(from, c.tag, bytes));
}

/// MPI_Sendrecv as an isend and an irecv waited together, so that two ranks exchanging with
/// each other never deadlock whatever the engine's send protocol.
fn sendrecv(p: &mut SeqProgram, c: &Ctx, to: Rank, sbytes: u64, from: Rank, rbytes: u64) {
    let s = p.nonblocking(send_op(to, c.tag, sbytes));
    let r = p.nonblocking(recv_op(from, c.tag, rbytes));
    p.wait(&[s, r]);
}

fn combine(p: &mut SeqProgram, c: &Ctx) {
    if c.step_ns > 0 {
        p.calc(c.step_ns);
    }
}

fn extra_compute(p: &mut SeqProgram, ns: u64) {
    if ns > 0 {
        p.calc(ns);
    }
}

fn virt(r: u32, root: u32, n: u32) -> u32 {
    ((r as u64 + n as u64 - (root % n) as u64) % n as u64) as u32
}

fn real(v: u32, root: u32, n: u32) -> u32 {
    ((v as u64 + (root % n) as u64) % n as u64) as u32
}

/// Lowest set bit of v, or the smallest power of two ≥ n for v = 0 (the root's "subtree").
fn subtree_mask(v: u32, n: u32) -> u64 {
    if v == 0 {
        (n as u64).next_power_of_two()
    } else {
        1u64 << v.trailing_zeros()
    }
}

/// The end (exclusive) of the subtree of virtual rank v in a binomial tree over n ranks.
fn subtree_end(v: u32, n: u32) -> u32 {
    (v as u64 + subtree_mask(v, n)).min(n as u64) as u32
}

/// The binomial tree's parent of virtual rank v > 0 (v with its lowest bit cleared) and its
/// children, largest subtree first (MPICH's order).
fn binomial_children(v: u32, n: u32) -> impl Iterator<Item = (u32, u64)> {
    let top = subtree_mask(v, n);
    let mut mask = top >> 1;
    std::iter::from_fn(move || {
        while mask > 0 {
            let m = mask;
            mask >>= 1;
            let child = v as u64 + m;
            if child < n as u64 {
                return Some((child as u32, m));
            }
        }
        None
    })
}

fn binomial_bcast(p: &mut SeqProgram, c: &Ctx, root: Rank, bytes: u64) {
    let v = virt(c.r, root, c.n);
    if v != 0 {
        recv(p, c, real(v & (v - 1), root, c.n), bytes);
    }
    let mut reqs: Vec<Request> = Vec::new();
    for (child, _) in binomial_children(v, c.n) {
        reqs.push(p.nonblocking(send_op(real(child, root, c.n), c.tag, bytes)));
    }
    if !reqs.is_empty() {
        p.wait(&reqs);
    }
}

fn linear_bcast(p: &mut SeqProgram, c: &Ctx, root: Rank, bytes: u64) {
    if c.r == root {
        let reqs: Vec<Request> = (0..c.n)
            .filter(|&j| j != root)
            .map(|j| p.nonblocking(send_op(j, c.tag, bytes)))
            .collect();
        if !reqs.is_empty() {
            p.wait(&reqs);
        }
    } else {
        recv(p, c, root, bytes);
    }
}

fn binomial_reduce(p: &mut SeqProgram, c: &Ctx, root: Rank, bytes: u64) {
    let v = virt(c.r, root, c.n);
    // Children in increasing mask order: the smallest subtrees finish first.
    let mut mask: u64 = 1;
    while mask < c.n as u64 {
        if v as u64 & mask != 0 {
            send(p, c, real((v as u64 - mask) as u32, root, c.n), bytes);
            return;
        }
        let child = v as u64 + mask;
        if child < c.n as u64 {
            recv(p, c, real(child as u32, root, c.n), bytes);
            combine(p, c);
        }
        mask <<= 1;
    }
}

fn linear_reduce(p: &mut SeqProgram, c: &Ctx, root: Rank, bytes: u64) {
    if c.r == root {
        for j in (0..c.n).filter(|&j| j != root) {
            recv(p, c, j, bytes);
            combine(p, c);
        }
    } else {
        send(p, c, root, bytes);
    }
}

fn binomial_gather(p: &mut SeqProgram, c: &Ctx, root: Rank, b: Blocks<'_>) {
    let v = virt(c.r, root, c.n);
    let mut mask: u64 = 1;
    while mask < c.n as u64 {
        if v as u64 & mask != 0 {
            let bytes = b.sum_virtual(v, subtree_end(v, c.n), root, c.n);
            send(p, c, real((v as u64 - mask) as u32, root, c.n), bytes);
            return;
        }
        let child = v as u64 + mask;
        if child < c.n as u64 {
            let child = child as u32;
            let bytes = b.sum_virtual(child, subtree_end(child, c.n), root, c.n);
            recv(p, c, real(child, root, c.n), bytes);
        }
        mask <<= 1;
    }
}

fn linear_gather(p: &mut SeqProgram, c: &Ctx, root: Rank, b: Blocks<'_>) {
    if c.r == root {
        let reqs: Vec<Request> = (0..c.n)
            .filter(|&j| j != root)
            .map(|j| p.nonblocking(recv_op(j, c.tag, b.get(j))))
            .collect();
        if !reqs.is_empty() {
            p.wait(&reqs);
        }
    } else {
        send(p, c, root, b.get(c.r));
    }
}

fn binomial_scatter(p: &mut SeqProgram, c: &Ctx, root: Rank, b: Blocks<'_>) {
    let v = virt(c.r, root, c.n);
    if v != 0 {
        let bytes = b.sum_virtual(v, subtree_end(v, c.n), root, c.n);
        recv(p, c, real(v & (v - 1), root, c.n), bytes);
    }
    let mut reqs: Vec<Request> = Vec::new();
    for (child, _) in binomial_children(v, c.n) {
        let bytes = b.sum_virtual(child, subtree_end(child, c.n), root, c.n);
        reqs.push(p.nonblocking(send_op(real(child, root, c.n), c.tag, bytes)));
    }
    if !reqs.is_empty() {
        p.wait(&reqs);
    }
}

fn linear_scatter(p: &mut SeqProgram, c: &Ctx, root: Rank, b: Blocks<'_>) {
    if c.r == root {
        let reqs: Vec<Request> = (0..c.n)
            .filter(|&j| j != root)
            .map(|j| p.nonblocking(send_op(j, c.tag, b.get(j))))
            .collect();
        if !reqs.is_empty() {
            p.wait(&reqs);
        }
    } else {
        recv(p, c, root, b.get(c.r));
    }
}

/// The fold used by recursive doubling for n not a power of two (MPICH): with pof2 the largest
/// power of two ≤ n and rem = n − pof2, among ranks < 2·rem the even ones hand their data to the
/// odd one above and sit out; the others take part under a new rank.
struct Fold {
    pof2: u32,
    rem: u32,
}

impl Fold {
    fn new(n: u32) -> Fold {
        let pof2 = if n.is_power_of_two() {
            n
        } else {
            (n.next_power_of_two()) >> 1
        };
        Fold {
            pof2,
            rem: n - pof2,
        }
    }

    /// New rank of r, or None when r sits out.
    fn newrank(&self, r: u32) -> Option<u32> {
        if r < 2 * self.rem {
            (r % 2 == 1).then_some(r / 2)
        } else {
            Some(r - self.rem)
        }
    }

    fn oldrank(&self, nr: u32) -> u32 {
        if nr < self.rem {
            nr * 2 + 1
        } else {
            nr + self.rem
        }
    }

    /// Original ranks owned by new ranks lo..hi: a contiguous range.
    fn owned(&self, lo: u32, hi: u32) -> (u32, u32) {
        let a = if lo < self.rem { 2 * lo } else { lo + self.rem };
        let b = if hi <= self.rem {
            2 * hi
        } else {
            hi + self.rem
        };
        (a, b)
    }
}

fn rd_allreduce(p: &mut SeqProgram, c: &Ctx, bytes: u64) {
    let f = Fold::new(c.n);
    if c.r < 2 * f.rem {
        if c.r % 2 == 0 {
            send(p, c, c.r + 1, bytes);
            recv(p, c, c.r + 1, bytes);
            return;
        }
        recv(p, c, c.r - 1, bytes);
        combine(p, c);
    }
    let Some(nr) = f.newrank(c.r) else { return };
    let mut mask = 1;
    while mask < f.pof2 {
        let partner = f.oldrank(nr ^ mask);
        sendrecv(p, c, partner, bytes, partner, bytes);
        combine(p, c);
        mask <<= 1;
    }
    if c.r < 2 * f.rem {
        send(p, c, c.r - 1, bytes);
    }
}

fn rd_allgather(p: &mut SeqProgram, c: &Ctx, b: Blocks<'_>) {
    let f = Fold::new(c.n);
    if c.r < 2 * f.rem {
        if c.r % 2 == 0 {
            send(p, c, c.r + 1, b.get(c.r));
            recv(p, c, c.r + 1, b.sum(0, c.n));
            return;
        }
        recv(p, c, c.r - 1, b.get(c.r - 1));
    }
    let Some(nr) = f.newrank(c.r) else { return };
    let mut mask = 1;
    while mask < f.pof2 {
        // Each side holds the blocks of its aligned group of `mask` new ranks.
        let mine = nr & !(mask - 1);
        let theirs = (nr ^ mask) & !(mask - 1);
        let (a, z) = f.owned(mine, mine + mask);
        let (ta, tz) = f.owned(theirs, theirs + mask);
        let partner = f.oldrank(nr ^ mask);
        sendrecv(p, c, partner, b.sum(a, z), partner, b.sum(ta, tz));
        mask <<= 1;
    }
    if c.r < 2 * f.rem {
        send(p, c, c.r - 1, b.sum(0, c.n));
    }
}

/// The i-th of n nearly equal chunks of `bytes`.
fn chunk(bytes: u64, n: u32, i: u32) -> u64 {
    let n = n as u64;
    bytes / n + u64::from((i as u64) < bytes % n)
}

fn ring_allreduce(p: &mut SeqProgram, c: &Ctx, bytes: u64) {
    let n = c.n;
    if n < 2 {
        return;
    }
    let next = (c.r + 1) % n;
    let prev = (c.r + n - 1) % n;
    // Reduce-scatter: at step s send chunk r − s, receive chunk r − s − 1.
    for s in 0..n - 1 {
        let sc = (c.r + n - s % n) % n;
        let rc = (c.r + 2 * n - s - 1) % n;
        sendrecv(p, c, next, chunk(bytes, n, sc), prev, chunk(bytes, n, rc));
        combine(p, c);
    }
    // Allgather: at step s send chunk r + 1 − s, receive chunk r − s.
    for s in 0..n - 1 {
        let sc = (c.r + 1 + n - s) % n;
        let rc = (c.r + n - s) % n;
        sendrecv(p, c, next, chunk(bytes, n, sc), prev, chunk(bytes, n, rc));
    }
}

fn ring_allgather(p: &mut SeqProgram, c: &Ctx, b: Blocks<'_>) {
    let n = c.n;
    let next = (c.r + 1) % n;
    let prev = (c.r + n - 1) % n;
    for s in 0..n.saturating_sub(1) {
        let sb = (c.r + n - s) % n;
        let rb = (c.r + 2 * n - s - 1) % n;
        sendrecv(p, c, next, b.get(sb), prev, b.get(rb));
    }
}

fn ring_reduce_scatter(p: &mut SeqProgram, c: &Ctx, b: Blocks<'_>) {
    let n = c.n;
    let next = (c.r + 1) % n;
    let prev = (c.r + n - 1) % n;
    // Step s: send block r − s − 1, receive block r − s − 2; the last received is block r.
    for s in 0..n.saturating_sub(1) {
        let sb = (c.r + 2 * n - s - 1) % n;
        let rb = (c.r + 2 * n - s - 2) % n;
        sendrecv(p, c, next, b.get(sb), prev, b.get(rb));
        combine(p, c);
    }
}

fn pairwise_reduce_scatter(p: &mut SeqProgram, c: &Ctx, b: Blocks<'_>) {
    let n = c.n;
    let mine = b.get(c.r);
    for i in 1..n {
        let to = (c.r + i) % n;
        let from = (c.r + n - i) % n;
        sendrecv(p, c, to, b.get(to), from, mine);
        combine(p, c);
    }
}

fn pairwise_alltoall(
    p: &mut SeqProgram,
    c: &Ctx,
    send: &dyn Fn(u32) -> u64,
    recv: &dyn Fn(u32) -> u64,
) {
    let n = c.n;
    for i in 1..n {
        let to = (c.r + i) % n;
        let from = (c.r + n - i) % n;
        sendrecv(p, c, to, send(to), from, recv(from));
    }
}

fn linear_alltoall(
    p: &mut SeqProgram,
    c: &Ctx,
    send: &dyn Fn(u32) -> u64,
    recv: &dyn Fn(u32) -> u64,
) {
    let n = c.n;
    let mut reqs = Vec::with_capacity(2 * n as usize);
    for i in 1..n {
        let from = (c.r + n - i) % n;
        reqs.push(p.nonblocking(recv_op(from, c.tag, recv(from))));
    }
    for i in 1..n {
        let to = (c.r + i) % n;
        reqs.push(p.nonblocking(send_op(to, c.tag, send(to))));
    }
    if !reqs.is_empty() {
        p.wait(&reqs);
    }
}

/// MPI_Scan and MPI_Exscan as a linear chain (MPICH's algorithm for small communicators is
/// recursive doubling; the chain is the simplest that moves the right data and is what a
/// pipeline of ranks does): rank r receives the prefix of ranks 0..r from r − 1, combines its
/// own contribution into it, and sends ranks 0..=r's prefix on to r + 1. n − 1 messages of the
/// whole buffer, n − 1 steps. Exscan moves the same messages (rank r + 1 needs ranks 0..=r); its
/// last rank only receives, so it has nothing to combine.
fn chain_scan(p: &mut SeqProgram, c: &Ctx, bytes: u64, exclusive: bool) {
    let last = c.r + 1 == c.n;
    if c.r > 0 {
        recv(p, c, c.r - 1, bytes);
        if !(exclusive && last) {
            combine(p, c);
        }
    }
    if !last {
        send(p, c, c.r + 1, bytes);
    }
}

fn dissemination_barrier(p: &mut SeqProgram, c: &Ctx) {
    let n = c.n as u64;
    let mut k: u64 = 1;
    while k < n {
        let to = ((c.r as u64 + k) % n) as u32;
        let from = ((c.r as u64 + n - k) % n) as u32;
        sendrecv(p, c, to, 0, from, 0);
        k <<= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_cover_every_family_with_the_default_first() {
        let c = Algorithms::choices();
        assert_eq!(c.map(|(f, _)| f).to_vec(), FAMILIES.to_vec());
        let d = Algorithms::default();
        let defaults = [
            d.bcast.name(),
            d.reduce.name(),
            d.allreduce.name(),
            d.allgather.name(),
            d.alltoall.name(),
            d.gather.name(),
            d.scatter.name(),
            d.reducescatter.name(),
            d.barrier.name(),
        ];
        for ((family, names), def) in c.iter().zip(defaults) {
            assert_eq!(names[0], def, "{family}");
            for n in *names {
                assert!(Algorithms::parse_list(&format!("{family}={n}")).is_ok());
            }
        }
    }

    #[test]
    fn parse_list_sets_named_families_and_names_choices_in_errors() {
        let a = Algorithms::parse_list("bcast=linear, allreduce=ring,alltoall=pairwise").unwrap();
        assert_eq!(a.bcast, BcastAlgo::Linear);
        assert_eq!(a.allreduce, AllreduceAlgo::Ring);
        assert_eq!(a.reduce, ReduceAlgo::Binomial);
        let e = Algorithms::parse_list("allreduce=fast").unwrap_err();
        assert_eq!(
            e,
            "unknown allreduce algorithm `fast` (expected one of: recursive-doubling, ring, \
             reduce-bcast)"
        );
        let e = Algorithms::parse_list("scan=linear").unwrap_err();
        assert!(e.starts_with("unknown collective family `scan`"), "{e}");
        assert!(Algorithms::parse_list("bcast").is_err());
        assert_eq!(Algorithms::parse_list("").unwrap(), Algorithms::default());
    }

    #[test]
    fn coll_tags_stay_in_the_reserved_space_and_avoid_any() {
        assert_eq!(coll_tag(0), 0x8000_0000);
        assert_eq!(coll_tag(7), 0x8000_0007);
        assert_eq!(coll_tag((1 << 30) - 1), 0xbfff_ffff);
        assert_eq!(coll_tag(1 << 30), 0x8000_0000);
        assert_ne!(coll_tag(u64::MAX), crate::workload::ANY);
        assert!(coll_tag(u64::MAX) < GROUP_TAG_BASE);
    }

    #[test]
    fn group_tags_are_unique_per_group_and_call_and_avoid_world_and_any() {
        assert_eq!(group_coll_tag(0, 0), 0xc000_0000);
        assert_eq!(group_coll_tag(1, 0), 0xc001_0000);
        assert_eq!(group_coll_tag(1, 5), 0xc001_0005);
        assert_eq!(group_coll_tag(MAX_GROUPS - 1, 0xfffe), 0xffff_fffe);
        assert_eq!(group_coll_tag(MAX_GROUPS - 1, 0xffff), 0xffff_0000);
        assert_ne!(
            group_coll_tag(MAX_GROUPS - 1, u64::MAX),
            crate::workload::ANY
        );
        let mut seen = std::collections::HashSet::new();
        for g in [0, 1, 2, MAX_GROUPS - 1] {
            for k in 0..300 {
                let t = group_coll_tag(g, k);
                assert!(t >= GROUP_TAG_BASE);
                assert!(seen.insert(t), "group {g} call {k} reuses {t:#x}");
            }
        }
    }

    #[test]
    fn scan_and_exscan_are_a_chain_of_whole_buffers() {
        let a = Algorithms {
            reduce_step_ns: 5,
            ..Algorithms::default()
        };
        for (coll, combines) in [
            (Collective::Scan { bytes: 64 }, [0, 1, 1, 1]),
            (Collective::Exscan { bytes: 64 }, [0, 1, 1, 0]),
        ] {
            for r in 0..4u32 {
                let mut p = SeqProgram::new();
                a.expand(&mut p, r, 4, 9, &coll);
                let mut want = Vec::new();
                if r > 0 {
                    want.push(recv_op(r - 1, 9, 64));
                }
                if combines[r as usize] == 1 {
                    want.push(OpKind::Calc { ns: 5 });
                }
                if r < 3 {
                    want.push(send_op(r + 1, 9, 64));
                }
                assert_eq!(p.ops(), &want[..], "{} rank {r}", coll.name());
            }
        }
    }

    #[test]
    fn fold_owned_ranges_cover_all_ranks() {
        for n in 1..20 {
            let f = Fold::new(n);
            assert_eq!(f.owned(0, f.pof2), (0, n));
        }
    }
}
