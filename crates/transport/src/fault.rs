//! A scenario adapter that corrupts one byte of one outgoing message, so that a test can prove
//! the integrity check on the other end (`bench --validate`) really fires.
//!
//! Shaped as smoltcp's `FaultInjector<D>` over its device trait and as the monitor's and the
//! emulator's decorators over [`Endpoint`]: `FaultInjector::new(inner, config)`, `get_ref`,
//! `into_inner`, the configuration apart from the state. It is switched on explicitly by whoever
//! builds it (`commperf serve --inject-corruption`, a hidden option), never by the environment:
//! an endpoint that is not wrapped cannot corrupt anything.
//!
//! Every outgoing message counts, whichever call sent it, so message `n` is the `n`-th sent
//! through the decorator since it was built (from 0): for a benchmark loop wrapped afresh for
//! each run, that is the loop's message sequence number (warm-up included). The message to
//! corrupt leaves with the byte at `offset` XORed with 0xFF; a message shorter than that goes
//! out untouched, and no other message is ever changed.

use crate::endpoint::{gather, Endpoint, EndpointInfo, Fragment, RecvInfo, Tag, VectoredSend};
use crate::error::TransportError;
use std::fmt;
use std::str::FromStr;

/// Which byte of which outgoing message to corrupt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultConfig {
    /// The message, counted from 0 over every message sent through the decorator.
    pub message: u64,
    /// The byte of that message.
    pub offset: usize,
}

/// A `MESSAGE:OFFSET` that is not two whole numbers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not MESSAGE:OFFSET (two whole numbers, e.g. 5:3)")]
pub struct FaultParseError(pub String);

impl FromStr for FaultConfig {
    type Err = FaultParseError;

    /// `MESSAGE:OFFSET`, e.g. `5:3`: byte 3 of message 5.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || FaultParseError(s.to_string());
        let (m, o) = s.split_once(':').ok_or_else(bad)?;
        Ok(FaultConfig {
            message: m.parse().map_err(|_| bad())?,
            offset: o.parse().map_err(|_| bad())?,
        })
    }
}

impl fmt::Display for FaultConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.message, self.offset)
    }
}

/// An endpoint that sends one configured message with one byte flipped (see the module doc).
#[derive(Debug)]
pub struct FaultInjector<E> {
    inner: E,
    cfg: FaultConfig,
    /// Messages sent through this decorator so far.
    sent: u64,
    /// Whether the corrupted message has been handed over.
    injected: bool,
}

impl<E> FaultInjector<E> {
    pub fn new(inner: E, cfg: FaultConfig) -> Self {
        FaultInjector {
            inner,
            cfg,
            sent: 0,
            injected: false,
        }
    }

    pub fn config(&self) -> FaultConfig {
        self.cfg
    }

    pub fn get_ref(&self) -> &E {
        &self.inner
    }

    pub fn get_mut(&mut self) -> &mut E {
        &mut self.inner
    }

    pub fn into_inner(self) -> E {
        self.inner
    }

    /// Messages sent through the decorator so far.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// Whether the corrupted message went out (false while it is still to come, or when it
    /// was shorter than the offset).
    pub fn injected(&self) -> bool {
        self.injected
    }

    /// Counts one outgoing message of `len` bytes; the offset to flip if it is the one.
    #[inline]
    fn next(&mut self, len: usize) -> Option<usize> {
        let n = self.sent;
        self.sent += 1;
        let hit = n == self.cfg.message && self.cfg.offset < len;
        self.injected |= hit;
        hit.then_some(self.cfg.offset)
    }
}

/// Flips byte `at` of the message if it lies in `piece`, which starts at message offset `off`.
#[inline]
fn flip(piece: &mut [u8], off: usize, at: usize) {
    if (off..off + piece.len()).contains(&at) {
        piece[at - off] ^= 0xFF;
    }
}

impl<E: Endpoint> Endpoint for FaultInjector<E> {
    fn send_with<F: FnMut(usize, &mut [u8])>(
        &mut self,
        tag: Tag,
        len: usize,
        mut fill: F,
    ) -> Result<(), TransportError> {
        match self.next(len) {
            None => self.inner.send_with(tag, len, fill),
            Some(at) => self.inner.send_with(tag, len, |off, piece| {
                fill(off, piece);
                flip(piece, off, at);
            }),
        }
    }

    fn recv_with<F: FnMut(Fragment<'_>)>(&mut self, sink: F) -> Result<RecvInfo, TransportError> {
        self.inner.recv_with(sink)
    }

    fn sendrecv(
        &mut self,
        tag: Tag,
        data: &[u8],
        buf: &mut [u8],
    ) -> Result<RecvInfo, TransportError> {
        match self.next(data.len()) {
            None => self.inner.sendrecv(tag, data, buf),
            Some(at) => {
                // Once per decorator, and no larger than the caller's own message.
                let mut copy = data.to_vec();
                copy[at] ^= 0xFF;
                self.inner.sendrecv(tag, &copy, buf)
            }
        }
    }

    fn info(&self) -> &EndpointInfo {
        self.inner.info()
    }

    fn send(&mut self, tag: Tag, data: &[u8]) -> Result<(), TransportError> {
        // Untouched messages keep the realization's own copying send.
        match self.next(data.len()) {
            None => self.inner.send(tag, data),
            Some(at) => self.inner.send_with(tag, data.len(), |off, piece| {
                piece.copy_from_slice(&data[off..off + piece.len()]);
                flip(piece, off, at);
            }),
        }
    }

    fn recv(&mut self, buf: &mut [u8]) -> Result<RecvInfo, TransportError> {
        self.inner.recv(buf)
    }
}

impl<E: Endpoint + VectoredSend> VectoredSend for FaultInjector<E> {
    fn send_vectored(&mut self, tag: Tag, parts: &[&[u8]]) -> Result<(), TransportError> {
        let len = parts.iter().map(|p| p.len()).sum();
        match self.next(len) {
            None => self.inner.send_vectored(tag, parts),
            // The one corrupted message is gathered by us rather than by the transport: the
            // receiver sees the same bytes either way.
            Some(at) => self.inner.send_with(tag, len, |off, piece| {
                gather(parts, off, piece);
                flip(piece, off, at);
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::uds;
    use crate::EndpointConfig;

    const N: u64 = 10;
    const LEN: usize = 100;

    /// Message `i`'s bytes: distinct per message and per offset.
    fn msg(i: u64) -> Vec<u8> {
        (0..LEN).map(|j| (i as usize * 7 + j) as u8).collect()
    }

    /// Sends `N` messages through a decorator corrupting `cfg`, each with `how`, and returns
    /// what arrived and the decorator's counts (sent, injected).
    fn through(cfg: FaultConfig, how: &str) -> (Vec<Vec<u8>>, u64, bool) {
        let (a, mut b) = uds::pair(EndpointConfig::default()).unwrap();
        let mut f = FaultInjector::new(a, cfg);
        let mut got = Vec::new();
        let mut buf = vec![0u8; LEN];
        for i in 0..N {
            let m = msg(i);
            match how {
                "send" => f.send(1, &m).unwrap(),
                "send_with" => f
                    .send_with(1, LEN, |off, p| p.copy_from_slice(&m[off..off + p.len()]))
                    .unwrap(),
                "send_vectored" => f.send_vectored(1, &[&m[..30], &[], &m[30..]]).unwrap(),
                "sendrecv" => {
                    // The other end's message is already there, so one thread suffices.
                    b.send(2, b"ack").unwrap();
                    let mut ack = [0u8; 3];
                    let r = f.sendrecv(1, &m, &mut ack).unwrap();
                    assert_eq!((r.len, &ack), (3, b"ack"), "the answer is untouched");
                }
                _ => unreachable!(),
            }
            let r = b.recv(&mut buf).unwrap();
            assert_eq!(r.len, LEN);
            got.push(buf.clone());
        }
        (got, f.sent(), f.injected())
    }

    #[test]
    fn exactly_one_byte_of_exactly_one_message_is_flipped_by_every_send() {
        let cfg = FaultConfig {
            message: 7,
            offset: 42,
        };
        for how in ["send", "send_with", "send_vectored", "sendrecv"] {
            let (got, sent, injected) = through(cfg, how);
            assert_eq!((sent, injected), (N, true), "{how}");
            for (i, m) in got.iter().enumerate() {
                let mut want = msg(i as u64);
                if i == 7 {
                    want[42] ^= 0xFF;
                }
                assert_eq!(m, &want, "{how}: message {i}");
            }
            // Exactly one byte differs from what was sent, over the whole run.
            let differing: usize = (0..N)
                .map(|i| {
                    let sent = msg(i);
                    let m = &got[i as usize];
                    (0..LEN).filter(|&j| m[j] != sent[j]).count()
                })
                .sum();
            assert_eq!(differing, 1, "{how}");
        }
    }

    #[test]
    fn the_first_and_the_last_byte_can_be_hit() {
        for (message, offset) in [(0, 0), (N - 1, LEN - 1)] {
            let (got, _, injected) = through(FaultConfig { message, offset }, "send");
            assert!(injected);
            assert_eq!(got[message as usize][offset], msg(message)[offset] ^ 0xFF);
        }
    }

    #[test]
    fn an_offset_past_the_message_or_a_message_never_sent_changes_nothing() {
        for cfg in [
            FaultConfig {
                message: 3,
                offset: LEN,
            },
            FaultConfig {
                message: N,
                offset: 0,
            },
        ] {
            let (got, sent, injected) = through(cfg, "send_with");
            assert_eq!((sent, injected), (N, false), "{cfg}");
            assert!(
                (0..N).all(|i| got[i as usize] == msg(i)),
                "{cfg}: all untouched"
            );
        }
    }

    #[test]
    fn the_config_reads_message_colon_offset() {
        assert_eq!(
            "5:37".parse(),
            Ok(FaultConfig {
                message: 5,
                offset: 37
            })
        );
        assert_eq!(FaultConfig::from_str("5:37").unwrap().to_string(), "5:37");
        for bad in ["", "5", "5:", ":3", "5:3:1", "-1:3", "x:3"] {
            assert_eq!(
                bad.parse::<FaultConfig>(),
                Err(FaultParseError(bad.into())),
                "{bad:?}"
            );
        }
    }
}
