//! Replaying recorded traces: each trace request becomes an [`Access`] with key and value sizes.
//!
//! Traces that record object sizes keep them (the value is the object size less the key). Key-only traces
//! (the cache2k and Corda traces) carry no sizes, so a value-size model is chosen and must be stated next
//! to every result; ETC's value distribution is the default.

use mrcache_workload::synth::{Access, ValueSizeModel};
use mrcache_workload::trace::KEY_ONLY_SIZE_BYTES;
use mrcache_workload::Request;

/// How trace requests get sizes.
#[derive(Debug, Clone, Copy)]
pub struct TraceSizing {
    /// Bytes of every key (traces give numeric ids).
    pub key_size: u8,
    /// Values for key-only traces, or for every trace when `override_sizes` is set.
    pub value_size: ValueSizeModel,
    /// Draw every value size from `value_size`, ignoring the trace's sizes.
    pub override_sizes: bool,
    /// Seed of the value sizes drawn.
    pub seed: u64,
}

impl Default for TraceSizing {
    /// What `mrcache sim --trace` gives a trace by default: 16-byte keys, and for key-only traces
    /// ETC values (`ValueSizeModel::ETC`) drawn with seed 1.
    fn default() -> TraceSizing {
        TraceSizing {
            key_size: 16,
            value_size: ValueSizeModel::ETC,
            override_sizes: false,
            seed: 1,
        }
    }
}

impl TraceSizing {
    /// The access of trace request `r`, sized as this says.
    pub fn access(&self, r: &Request) -> Access {
        let value_size = if r.size == KEY_ONLY_SIZE_BYTES || self.override_sizes {
            self.value_size.size(self.seed, r.key)
        } else {
            r.size.saturating_sub(self.key_size as u32)
        };
        Access {
            key: r.key,
            key_size: self.key_size,
            value_size,
            op: r.op,
            tenant: 0,
        }
    }
}
