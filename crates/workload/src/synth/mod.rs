//! Synthetic workloads of the papers, seeded and reproducible: Facebook ETC, LAMA's three-phase workload,
//! Zipf, mPart's six applications, and mPart's time-varying (diurnal) and noisy-neighbour workloads.
//!
//! A generator is an iterator of [`Access`]: a key id with the key's and the value's size in bytes, the
//! operation, and a tenant index. Sizes are a fixed function of (seed, key id), so an object keeps its
//! sizes for the whole run, as in a real cache; popularity and the request stream come from one seeded
//! RNG. The same spec and seed give the same stream, bit for bit, on every run.

mod generators;
mod spec;
mod timevarying;

pub use crate::dist::{KeySizeModel, Popularity, ValueSizeModel};
pub use generators::{Etc, MpartSix, ThreePhase, Zipfian, MPART_APPS};
pub use spec::{WorkloadSpec, WORKLOAD_HELP};
pub use timevarying::{
    DayCurve, Diurnal, NoisyNeighbour, Timeline, DIURNAL_PEAK_HOUR, DIURNAL_PEAK_RATIO,
    DIURNAL_STAGGER_HOURS, NOISY_ALPHA, NOISY_OBJECTS, NOISY_TENANT,
};

/// One synthetic request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// Object id; unique within a tenant.
    pub key: u64,
    /// Key length in bytes, fixed per object.
    pub key_size: u8,
    /// Value length in bytes, fixed per object.
    pub value_size: u32,
    /// Get or set.
    pub op: crate::Op,
    /// Which application issued it (0 for single-tenant workloads).
    pub tenant: u16,
}
