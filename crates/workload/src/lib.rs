//! Workloads for mrcache: readers of published cache traces, yielding one [`Request`] per access, and
//! seeded synthetic generators of the papers' workloads (`synth`).
//!
//! The crate owns trace formats and their decoding (compressed files are read directly, by file
//! extension); it knows nothing of caches or profilers. Every reader is an iterator of
//! `Result<Request, TraceError>`; an error names the file, the byte offset in the decompressed
//! stream and, for text formats, the line, and ends the iteration. The distributions behind the
//! generators (`dist`) are public: the load generator draws from the same ones. Building a synthetic
//! workload fails with a [`WorkloadError`].

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod dist;
mod error;
pub mod synth;
pub mod trace;

pub use error::WorkloadError;
pub use trace::{open_trace, TraceError, TraceFormat, TraceReader};

/// The operation a request performs, as far as a trace records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// A read of the key (get, gets, get-lease, block read).
    Get,
    /// A write that stores a whole value (set, add, replace, cas, block write).
    Set,
    /// A partial write of an existing value (append, prepend, incr, decr).
    Update,
    /// Removal of the key.
    Delete,
    /// Any operation the trace names that none of the above covers.
    Other,
}

/// One access of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// The key's id: the trace's numeric id, or a 64-bit hash of a textual key.
    pub key: u64,
    /// Object size in bytes (key plus value where the trace gives both);
    /// [`trace::KEY_ONLY_SIZE_BYTES`] for traces without sizes.
    pub size: u32,
    /// What the request does.
    pub op: Op,
}
