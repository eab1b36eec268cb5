//! The MPI stacks a study runs programs on: an MPI library with a transport, and, for the
//! network stacks (`ompi-tcp@100mbit`), the testbed's rate-limited namespaces under it.
//!
//! A network stack runs every rank in a namespace of its own (rank r in host r of a cluster built
//! for the stack, `commperf testbed`'s bridge and shapers), so its messages cross a veth, the
//! bridge and two shaped links as they would cross a NIC, a switch and two cables. The launch
//! is the library's TCP stack with `commperf __netns-rank PREFIX --` before the program: the
//! launcher starts that as each rank, and it moves into its namespace and execs the program
//! (`commperf_testbed::mpirank`). A stack stays `Copy`: the cluster's name prefix is this
//! process's `cpt<pid>-` and the stack's letter, so the launch can be written before the
//! cluster exists (the binary builds, and on drop removes, the clusters under those names).

use commperf_pmpi::Flavour;
use commperf_testbed::netns;

/// Why a list of stacks was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StackError {
    #[error(
        "unknown stack '{0}' (allowed: {allowed}, and ompi-tcp@RATE, mpich-tcp@RATE for the \
         rate-limited network namespaces, e.g. ompi-tcp@100mbit)",
        allowed = Stack::ALL.map(Stack::name).join(", ")
    )]
    Unknown(String),
    #[error(
        "stack '{0}': shared memory does not cross network namespaces; a rate goes with \
         ompi-tcp or mpich-tcp"
    )]
    RateOnSharedMemory(String),
    #[error("stack '{stack}': {reason}")]
    Rate { stack: String, reason: String },
    #[error("at most {MAX_NETS} network stacks in one study")]
    TooManyNets,
    #[error("stack '{0}' is named twice")]
    NamedTwice(String),
}

/// MPI library and transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    OmpiShm,
    OmpiTcp,
    MpichShm,
    MpichTcp,
}

/// The rate-limited network under a TCP stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Net {
    /// Per link and direction, bits per second.
    pub rate_bit_per_s: u64,
    /// The cluster's letter (`a`, `b`, … in the order the stacks were named).
    pub tag: char,
}

/// The MPI stacks a study can run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stack {
    pub kind: Kind,
    pub net: Option<Net>,
}

/// Most network stacks in one study (one letter each).
const MAX_NETS: usize = 26;

impl Stack {
    pub const OMPI_SHM: Stack = Stack::plain(Kind::OmpiShm);
    pub const OMPI_TCP: Stack = Stack::plain(Kind::OmpiTcp);
    pub const MPICH_SHM: Stack = Stack::plain(Kind::MpichShm);
    pub const MPICH_TCP: Stack = Stack::plain(Kind::MpichTcp);
    /// The default study's stacks (network stacks are named explicitly: they need root).
    pub const ALL: [Stack; 4] = [
        Stack::OMPI_SHM,
        Stack::OMPI_TCP,
        Stack::MPICH_SHM,
        Stack::MPICH_TCP,
    ];

    const fn plain(kind: Kind) -> Stack {
        Stack { kind, net: None }
    }

    fn kind_name(self) -> &'static str {
        match self.kind {
            Kind::OmpiShm => "ompi-shm",
            Kind::OmpiTcp => "ompi-tcp",
            Kind::MpichShm => "mpich-shm",
            Kind::MpichTcp => "mpich-tcp",
        }
    }

    pub fn name(self) -> String {
        match self.net {
            None => self.kind_name().to_string(),
            Some(n) => format!("{}@{}", self.kind_name(), rate_name(n.rate_bit_per_s)),
        }
    }

    pub fn flavour(self) -> Flavour {
        match self.kind {
            Kind::OmpiShm | Kind::OmpiTcp => Flavour::OpenMpi,
            Kind::MpichShm | Kind::MpichTcp => Flavour::Mpich,
        }
    }

    pub fn compiler(self) -> &'static str {
        match self.flavour() {
            Flavour::OpenMpi => "mpicc.openmpi",
            _ => "mpicc.mpich",
        }
    }

    /// The launch of `np` ranks on this stack, up to the program. Open MPI: ob1 over the named
    /// BTLs (so that the UCX PML cannot take over and ignore the BTL list). MPICH 4.0 (Debian's
    /// is ch4:ucx): `MPIR_CVAR_NOLOCAL=1` sends even same-node messages through the netmod, and
    /// `UCX_TLS=tcp,self` makes UCX use TCP sockets there; its shared-memory stack is the
    /// default. A network stack ends with the rank's move into its namespace.
    pub fn launch(self, np: u32) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        match self.flavour() {
            Flavour::OpenMpi => {
                v.extend(["mpirun.openmpi".into(), "-np".into(), np.to_string()]);
                if np as usize > commperf_transport::affinity::allowed_cpus().len() {
                    v.push("--oversubscribe".into());
                }
                let btl = if self.kind == Kind::OmpiShm {
                    "self,vader"
                } else {
                    "self,tcp"
                };
                v.extend(["--mca", "pml", "ob1", "--mca", "btl", btl].map(String::from));
            }
            _ => {
                v.extend(["mpiexec.mpich".into(), "-n".into(), np.to_string()]);
                if self.kind == Kind::MpichTcp {
                    v.extend(
                        [
                            "-genv",
                            "MPIR_CVAR_NOLOCAL",
                            "1",
                            "-genv",
                            "UCX_TLS",
                            "tcp,self",
                        ]
                        .map(String::from),
                    );
                }
            }
        }
        if let Some(n) = self.net {
            let exe = std::env::current_exe()
                .map_or_else(|_| "commperf".into(), |p| p.display().to_string());
            v.extend([exe, "__netns-rank".into(), netns::tagged_prefix(n.tag)]);
            v.push("--".into());
        }
        v
    }
}

/// A rate as tc writes it (`100mbit`, `1gbit`, `1500kbit`), in the one rate syntax.
fn rate_name(bits: u64) -> String {
    if bits % 1_000_000_000 == 0 {
        format!("{}gbit", bits / 1_000_000_000)
    } else if bits % 1_000_000 == 0 {
        format!("{}mbit", bits / 1_000_000)
    } else if bits % 1_000 == 0 {
        format!("{}kbit", bits / 1_000)
    } else {
        format!("{bits}bit")
    }
}

/// Parses a list of stacks (`ompi-shm,ompi-tcp@100mbit,mpich-tcp@1gbit`), giving each network
/// stack its letter.
pub fn parse_stacks(list: &[&str]) -> Result<Vec<Stack>, StackError> {
    let mut out: Vec<Stack> = Vec::new();
    for s in list {
        let (kind, rate) = match s.split_once('@') {
            Some((k, r)) => (k, Some(r)),
            None => (*s, None),
        };
        let Some(base) = Stack::ALL.into_iter().find(|k| k.kind_name() == kind) else {
            return Err(StackError::Unknown(s.to_string()));
        };
        let mut stack = base;
        if let Some(r) = rate {
            if !matches!(base.kind, Kind::OmpiTcp | Kind::MpichTcp) {
                return Err(StackError::RateOnSharedMemory(s.to_string()));
            }
            let bits = netns::parse_rate(r).map_err(|reason| StackError::Rate {
                stack: s.to_string(),
                reason,
            })?;
            let tag = out.iter().filter(|k| k.net.is_some()).count();
            if tag >= MAX_NETS {
                return Err(StackError::TooManyNets);
            }
            stack.net = Some(Net {
                rate_bit_per_s: bits,
                tag: (b'a' + tag as u8) as char,
            });
        }
        if out.iter().any(|k| k.name() == stack.name()) {
            return Err(StackError::NamedTwice(s.to_string()));
        }
        out.push(stack);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_stacks_get_letters_and_canonical_names() {
        let v = parse_stacks(&["ompi-shm", "ompi-tcp@100mbit", "mpich-tcp@1Gbit/s"]).unwrap();
        assert_eq!(v[0], Stack::OMPI_SHM);
        assert_eq!(v[1].name(), "ompi-tcp@100mbit");
        assert_eq!(v[1].net.unwrap().tag, 'a');
        assert_eq!(v[2].name(), "mpich-tcp@1gbit");
        assert_eq!(v[2].net.unwrap().tag, 'b');
        assert_eq!(v[2].flavour(), Flavour::Mpich);
        let l = v[1].launch(4);
        let i = l.iter().position(|x| x == "__netns-rank").unwrap();
        assert_eq!(l[i + 1], netns::tagged_prefix('a'));
        assert_eq!(l.last().unwrap(), "--");
        assert!(l.contains(&"self,tcp".to_string()));
        assert_eq!(rate_name(1_500_000), "1500kbit");
    }

    #[test]
    fn bad_stacks_are_refused_by_name() {
        for (s, want) in [
            ("ompi-shm@100mbit", "shared memory"),
            ("ompi-tcp@100", "no unit"),
            ("ompi-tcp@10mbps", "ambiguous"),
            ("infiniband", "unknown stack 'infiniband'"),
        ] {
            let e = parse_stacks(&[s]).unwrap_err().to_string();
            assert!(e.contains(want), "{s}: {e}");
        }
        let e = parse_stacks(&["ompi-tcp@100mbit", "ompi-tcp@100Mbit/s"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("named twice"), "{e}");
    }

    #[test]
    fn stacks_launch_their_transport() {
        let l = Stack::OMPI_TCP.launch(2).join(" ");
        assert!(l.contains("--mca pml ob1 --mca btl self,tcp"), "{l}");
        let l = Stack::MPICH_TCP.launch(2).join(" ");
        assert!(l.starts_with("mpiexec.mpich -n 2"), "{l}");
        assert!(
            l.contains("-genv MPIR_CVAR_NOLOCAL 1 -genv UCX_TLS tcp,self"),
            "{l}"
        );
        assert!(!Stack::MPICH_SHM.launch(2).join(" ").contains("genv"));
    }
}
