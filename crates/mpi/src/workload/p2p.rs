//! The `p2p` workload: point-to-point microbenchmark, as an MPI-style program: one message,
//! `repeat` messages one after the other, or a ping-pong, of `bytes` between two ranks.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

use crate::{Buffer, Message, Program, ProgramBuilder, RankId};
use hetsim_core::error::InputError;
use hetsim_platform::cluster::Cluster;

use super::ProgramGenerator;

/// A size in bytes as written in a scenario: a number of bytes or a string with a unit
/// ("1 MiB").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ByteCount(pub f64);

impl<'de> Deserialize<'de> for ByteCount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ByteCount;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number of bytes or a size such as \"1 MiB\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ByteCount, E> {
                self.visit_f64(v as f64)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ByteCount, E> {
                self.visit_f64(v as f64)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<ByteCount, E> {
                hetsim_core::units::check_number(hetsim_core::units::Kind::Bytes, v)
                    .map(ByteCount)
                    .map_err(|e| E::custom(e.message))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ByteCount, E> {
                hetsim_core::units::parse_bytes(v)
                    .map(ByteCount)
                    .map_err(|e| E::custom(e.message))
            }
        }
        d.deserialize_any(V)
    }
}

/// Where a message's bytes are, as written: `device` or `host`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BufferSpec {
    /// GPU memory (the default: a rank's data lives on its GPU).
    #[default]
    Device,
    /// Host memory.
    Host,
}

impl From<BufferSpec> for Buffer {
    fn from(b: BufferSpec) -> Buffer {
        match b {
            BufferSpec::Device => Buffer::Device,
            BufferSpec::Host => Buffer::Host,
        }
    }
}

/// `[workload]` with `kind = "p2p"`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct P2pSpec {
    /// Message size.
    pub bytes: ByteCount,
    /// Sender (default rank 0).
    #[serde(default)]
    pub src: u32,
    /// Receiver (default: the first rank of the next node, or rank 1 on one node).
    #[serde(default)]
    pub dst: Option<u32>,
    /// Where the bytes are on the sender (default device).
    #[serde(default)]
    pub from: BufferSpec,
    /// Where they go on the receiver (default device).
    #[serde(default)]
    pub to: BufferSpec,
    /// Messages, each sent when the previous one is received (default 1).
    #[serde(default = "one")]
    pub repeat: u32,
    /// Alternate directions (src → dst, dst → src, ...): a ping-pong of `repeat` messages.
    #[serde(default)]
    pub pingpong: bool,
}

/// Most messages a point-to-point workload may send: the same bound on operations as the
/// other program workloads ([`super::offload::MAX_OFFLOAD_OPS`]), at a few operations each.
pub const MAX_P2P_MESSAGES: u32 = 1_000_000;

fn one() -> u32 {
    1
}

impl P2pSpec {
    /// The receiver for `cluster`.
    pub fn receiver(&self, cluster: &Cluster) -> u32 {
        self.dst.unwrap_or(if cluster.nodes() > 1 {
            (self.src / cluster.gpus_per_node() + 1) % cluster.nodes() * cluster.gpus_per_node()
        } else {
            (self.src + 1) % cluster.ranks().max(1)
        })
    }
}

impl ProgramGenerator for P2pSpec {
    fn generate(&self, cluster: &Cluster) -> Result<Program, InputError> {
        let ranks = cluster.ranks();
        let dst = self.receiver(cluster);
        for (v, f) in [(self.src, "workload.src"), (dst, "workload.dst")] {
            if v >= ranks {
                return Err(InputError::new(format!(
                    "rank {v} does not exist: the cluster has {ranks} ranks (0 to {})",
                    ranks.saturating_sub(1)
                ))
                .at_field(f));
            }
        }
        if dst == self.src {
            return Err(InputError::new(format!(
                "sender and receiver are both rank {dst}: a message needs two ranks"
            ))
            .at_field("workload.dst"));
        }
        if self.repeat == 0 {
            return Err(InputError::new("repeat = 0: expected at least 1 message")
                .at_field("workload.repeat"));
        }
        if self.repeat > MAX_P2P_MESSAGES {
            return Err(InputError::new(format!(
                "repeat = {}: at most {MAX_P2P_MESSAGES} messages (each is a few operations \
                 held in memory; a steady-state figure needs far fewer)",
                self.repeat
            ))
            .at_field("workload.repeat"));
        }
        let mut b = ProgramBuilder::new(ranks);
        let (a, z) = (RankId(self.src), RankId(dst));
        let mut prev = None;
        for i in 0..self.repeat {
            let back = self.pingpong && i % 2 == 1;
            let (s, d, from, to) = if back {
                (z, a, self.to, self.from)
            } else {
                (a, z, self.from, self.to)
            };
            let m = Message {
                src: s,
                dst: d,
                bytes: self.bytes.0,
                from: from.into(),
                to: to.into(),
            };
            let deps: Vec<_> = prev.into_iter().collect();
            prev = Some(b.message(m, &deps));
        }
        Ok(b.build())
    }

    fn counted_flops(&self) -> f64 {
        0.0
    }
}
