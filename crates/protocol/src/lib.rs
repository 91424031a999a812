//! memcached's text and meta protocol, sans I/O: [`parse`] turns the front of a byte buffer into one
//! [`Request`] (borrowing keys and values from the buffer) or says what to do instead, and the
//! [`response`] helpers write replies into a `Vec<u8>`.
//!
//! The behaviour is memcached 1.6.18's (`proto_text.c`), byte for byte where clients can see it: the
//! space-only tokenizer with at most 24 tokens, the token-count rules that answer `ERROR` versus
//! `CLIENT_ERROR …`, `noreply` as the last token, `safe_strto*` number parsing (so `set k 4294967296 0 1`
//! stores flags 0), a line cut at its first NUL byte, and the meta flags 1.6.18 accepts.
//!
//! Layout: `tokens` (line framing, tokenizer, number parsing) → one module per command family
//! (`storage`, `retrieval`, `arith`, `delete_touch`, `meta`, `admin`) → `request` (the types `parse`
//! returns). `base64` serves meta's `b` flag. `auth` parses what a connection may send before it has
//! authenticated (`-Y`): [`auth::parse_auth`]. `binary` is the binary protocol (parser, reply encoder,
//! SASL PLAIN), a separate entry point a session picks on a connection's first byte.
//!
//! Invariants: `parse` never panics, never allocates, and reports a request only once every byte it
//! needs (line and data block) is in the buffer — except an item that is too large, which is reported
//! from its line alone so that its data can be swallowed without buffering it.
//!
//! Deviation from memcached (documented): a `get`/`gets` line may grow past 2048 bytes without a newline,
//! as in memcached, but only up to [`Limits::max_get_line_bytes`]; memcached buffers it without bound.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod admin;
mod arith;
pub mod auth;
pub mod base64;
pub mod binary;
mod contract;
mod delete_touch;
mod meta;
mod parse;
mod request;
pub mod response;
mod retrieval;
mod storage;
mod tokens;

pub use contract::{check_parse_contract, check_parse_contract_with, contract_limits};
pub use meta::{MetaFlag, MetaFlags, MetaKey, MetaMode};
pub use parse::{parse, Limits};
pub use request::{
    ArithRequest, Data, DeleteRequest, ErrorReply, GetKind, GetRequest, Keys, LruCrawlerRequest,
    LruRequest, MetaArith, MetaDebug, MetaDelete, MetaGet, MetaSet, Parsed, Request, ShutdownMode,
    SlabsRequest, StatsRequest, StoreCommand, StoreRequest, TouchRequest,
};
pub use tokens::{KEY_MAX_LENGTH, MAX_TOKENS};
