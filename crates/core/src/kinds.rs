//! Names shared by the command line, the result files and the runner.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A name that is not one of the allowed values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} '{given}' (allowed: {allowed})")]
pub struct UnknownName {
    pub what: &'static str,
    pub given: String,
    pub allowed: &'static str,
}

macro_rules! named_enum {
    ($(#[$m:meta])* $name:ident, $what:literal, { $($(#[$vm:meta])* $var:ident => $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
        #[serde(rename_all = "lowercase")]
        pub enum $name { $($(#[$vm])* $var),+ }

        impl $name {
            /// Every value, in the order the suite runs them.
            pub const ALL: &'static [$name] = &[$($name::$var),+];
            /// The name used on the command line and in result files.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$var => $s),+ }
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.as_str()) }
        }
        impl FromStr for $name {
            type Err = UnknownName;
            fn from_str(s: &str) -> Result<Self, UnknownName> {
                match s {
                    $($s => Ok($name::$var),)+
                    _ => Err(UnknownName {
                        what: $what,
                        given: s.to_string(),
                        allowed: concat!($($s, " "),+).trim_ascii_end(),
                    }),
                }
            }
        }
    };
}

named_enum!(
    /// The micro-benchmarks of the foundation suite.
    Benchmark, "benchmark", {
        /// Ping-pong; one-way latency = round trip / 2.
        Latency => "latency",
        /// Window of non-blocking sends, then a 1-byte ack.
        Bw => "bw",
        /// Both sides send windows at once.
        Bibw => "bibw",
        /// Message rate: small messages in windows.
        Mr => "mr",
        /// LogGP parameters by parametrized round trips (Netgauge's PRTT method).
        Loggp => "loggp",
        /// Latency with a fresh buffer per message from a pool larger than the LLC.
        Bufmgmt => "bufmgmt",
        /// Latency with blocking completion, and spin-then-block, against polling.
        Blocking => "blocking",
        /// Latency of one size split into k scattered segments: vectored against packed.
        Noncontig => "noncontig",
        /// 16-byte latency while the client keeps N open endpoints and sweeps them all.
        Conns => "conns",
        /// The same with a completion queue over the N endpoints, against sweeping them.
        Cq => "cq",
        /// Large messages in each fixed fragment size of a ladder and in the adaptive one,
        /// beside the pipeline model's T(L, P) (Fröhlich et al. 2000, §3.2).
        Pipeline => "pipeline",
    }
);

named_enum!(
    /// A realization of the endpoint trait.
    TransportKind, "transport", {
        /// Shared-memory rings between two processes.
        Shm => "shm",
        /// TCP with TCP_NODELAY.
        Tcp => "tcp",
        /// Unix domain stream sockets.
        Uds => "uds",
        /// io_uring over TCP: fixed file, registered buffers, optional SQPOLL.
        #[serde(rename = "uring-tcp")]
        UringTcp => "uring-tcp",
        /// io_uring over Unix domain stream sockets.
        #[serde(rename = "uring-uds")]
        UringUds => "uring-uds",
        /// A deterministic model charging exact LogGP costs in virtual time (tests, in-process).
        Model => "model",
        /// The MPI layer (MPI_Send/MPI_Recv, MPI_Isend/MPI_Irecv windows) between ranks that
        /// mpirun placed; needs a build with the `mpi` feature.
        Mpi => "mpi",
    }
);

named_enum!(
    /// bufmgmt: what the messages of a variant are sent from and received into.
    BufferUse, "buffer use", {
        /// A fresh buffer per message, on another page, from pools larger than the LLC.
        Fresh => "fresh",
        /// The transport's registered memory (the shm segment, io_uring's fixed buffers), used
        /// in place: the message is formed and consumed there, nothing is copied.
        Registered => "registered",
    }
);

named_enum!(
    /// How completion is detected.
    Mode, "mode", {
        /// Busy-poll (with a bounded spin, then yield).
        Poll => "poll",
        /// Sleep in the kernel until the peer makes progress (futex, blocking read).
        Block => "block",
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_errors_list_allowed_values() {
        for t in TransportKind::ALL {
            assert_eq!(t.as_str().parse::<TransportKind>().unwrap(), *t);
        }
        let e = "rdma".parse::<TransportKind>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown transport 'rdma' (allowed: shm tcp uds uring-tcp uring-uds model mpi)"
        );
        assert_eq!(serde_json::to_string(&Benchmark::Bibw).unwrap(), "\"bibw\"");
        for t in TransportKind::ALL {
            let json = serde_json::to_string(t).unwrap();
            assert_eq!(json, format!("\"{t}\""), "serde and the command line agree");
        }
    }
}
