//! TLS for client TCP connections (`-Z`, memcached's `--enable-ssl`), on rustls with the ring provider.
//!
//! [`Tls`] holds the server's configuration, built from the `-o ssl_*` files at start-up (an error
//! names the option and the file) and rebuilt by `refresh_certs`: connections accepted afterwards
//! use the new certificates, those already open keep theirs, as in memcached. It also counts failed
//! handshakes (`stats` `ssl_handshake_errors`).
//!
//! [`TlsStream`] is a TCP connection with its rustls session, for the epoll path: `Conn` reads and
//! writes plaintext through it as through a socket. The contract it keeps with `Conn` (`conn.rs`):
//! - `read` returns plaintext; it reads TLS records from the socket only once the plaintext already
//!   decrypted is taken, and returns `WouldBlock` only when the socket did, so an edge-triggered poll
//!   never misses an arrival. A short read does not mean the socket is drained
//!   ([`Transport::short_read_drains`] is false), so `Conn` reads on to `WouldBlock`.
//! - `write` first sends the records rustls holds; while the socket refuses them it returns
//!   `WouldBlock` and takes no plaintext, so rustls holds at most one write's records. What it could
//!   not send after taking plaintext stays in rustls: [`Transport::has_unsent`] says so, and `Conn`
//!   flushes it when the socket is writable again.
//! - Handshake messages are sent from `read` as they are produced (and, when the socket is full,
//!   through the same flush).
//!
//! TLS runs on the epoll path only: settings refuse `-o io=uring` with `-Z`, and `-o io=auto` picks
//! epoll.

use std::io::{self, ErrorKind, Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use mio::net::TcpStream;
use parking_lot::RwLock;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{NoServerSessionStorage, ServerSessionMemoryCache, WebPkiClientVerifier};
use rustls::{RootCertStore, ServerConfig, ServerConnection};

use crate::settings::tls::{TlsMinVersion, TlsSettings, TlsVerifyMode};

/// Sessions `ssl_session_cache` keeps for resumption.
const SESSION_CACHE_ENTRIES: usize = 4096;

/// The server's TLS configuration and counters (one per server, in `ServerContext`).
pub struct Tls {
    config: RwLock<Arc<ServerConfig>>,
    /// Engine clock second of the last successful load (`time_since_server_cert_refresh`).
    loaded_at: AtomicU32,
    handshake_errors: AtomicU64,
}

impl Tls {
    /// Reads the certificates `settings` name; the error names the option and the file.
    pub fn load(settings: &TlsSettings, now_secs: u32) -> Result<Tls, String> {
        Ok(Tls {
            config: RwLock::new(Arc::new(server_config(settings)?)),
            loaded_at: AtomicU32::new(now_secs),
            handshake_errors: AtomicU64::new(0),
        })
    }

    /// `refresh_certs`: reads the files `settings` name (the server's, fixed at start) again; on an
    /// error the configuration in use stays.
    pub fn refresh(&self, settings: &TlsSettings, now_secs: u32) -> Result<(), String> {
        let config = server_config(settings)?;
        *self.config.write() = Arc::new(config);
        self.loaded_at.store(now_secs, Relaxed);
        Ok(())
    }

    /// Starts the TLS session of an accepted connection.
    pub fn accept(self: &Arc<Self>, tcp: TcpStream) -> Result<TlsStream, rustls::Error> {
        let config = self.config.read().clone();
        Ok(TlsStream {
            tcp,
            session: ServerConnection::new(config)?,
            tls: self.clone(),
        })
    }

    /// Handshakes that failed (`stats` `ssl_handshake_errors`).
    pub fn handshake_errors(&self) -> u64 {
        self.handshake_errors.load(Relaxed)
    }

    /// Seconds since the certificates were last loaded (`stats` `time_since_server_cert_refresh`).
    pub fn secs_since_refresh(&self, now_secs: u32) -> u32 {
        now_secs.saturating_sub(self.loaded_at.load(Relaxed))
    }
}

/// The rustls configuration `settings` describe (checked by `TlsSettings::check` before: a chain and a
/// key are named, and CAs when clients are verified).
fn server_config(settings: &TlsSettings) -> Result<ServerConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let named = |option: &str, path: &Option<std::path::PathBuf>| {
        path.clone()
            .ok_or_else(|| format!("-o {option}: no file given"))
    };
    let chain_path = named("ssl_chain_cert", &settings.chain_cert)?;
    let key_path = named("ssl_key", &settings.key)?;
    let chain = certificates("ssl_chain_cert", &chain_path)?;
    let key = PrivateKeyDer::from_pem_file(&key_path)
        .map_err(|e| format!("-o ssl_key={}: {e}", key_path.display()))?;
    let versions: &[&rustls::SupportedProtocolVersion] = match settings.min_version {
        TlsMinVersion::V1_3 => &[&rustls::version::TLS13],
        _ => &[&rustls::version::TLS12, &rustls::version::TLS13],
    };
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions)
        .map_err(|e| format!("-o ssl_min_version={}: {e}", settings.min_version))?;
    let builder = match settings.verify_mode {
        TlsVerifyMode::None => builder.with_no_client_auth(),
        mode => {
            let ca_path = named("ssl_ca_cert", &settings.ca_cert)?;
            let mut roots = RootCertStore::empty();
            for cert in certificates("ssl_ca_cert", &ca_path)? {
                roots
                    .add(cert)
                    .map_err(|e| format!("-o ssl_ca_cert={}: {e}", ca_path.display()))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = if mode == TlsVerifyMode::Request {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            builder.with_client_cert_verifier(
                verifier
                    .build()
                    .map_err(|e| format!("-o ssl_ca_cert={}: {e}", ca_path.display()))?,
            )
        }
    };
    let mut config = builder.with_single_cert(chain, key).map_err(|e| {
        format!(
            "-o ssl_key={} does not go with -o ssl_chain_cert={}: {e}",
            key_path.display(),
            chain_path.display()
        )
    })?;
    if settings.session_cache {
        config.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE_ENTRIES);
    } else {
        config.session_storage = Arc::new(NoServerSessionStorage {});
        config.send_tls13_tickets = 0;
    }
    Ok(config)
}

/// The certificates of a PEM file; an error (or none at all) names the option and the file.
fn certificates(option: &str, path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let bad = |e: &dyn std::fmt::Display| format!("-o {option}={}: {e}", path.display());
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(&e))?
        .collect::<Result<_, _>>()
        .map_err(|e| bad(&e))?;
    if certs.is_empty() {
        return Err(bad(&"no certificate in it"));
    }
    Ok(certs)
}

/// What `Conn` asks of a stream beyond reading and writing (see the module notes).
pub trait Transport: Read + Write {
    /// Whether the stream holds output it has not yet handed to the socket (TLS records).
    fn has_unsent(&self) -> bool {
        false
    }

    /// Whether a read that returns less than it had room for means the socket is drained.
    fn short_read_drains(&self) -> bool {
        true
    }
}

/// A TCP connection and its TLS session (see the module notes).
pub struct TlsStream {
    tcp: TcpStream,
    session: ServerConnection,
    tls: Arc<Tls>,
}

impl std::fmt::Debug for TlsStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsStream")
            .field("tcp", &self.tcp)
            .finish_non_exhaustive()
    }
}

impl TlsStream {
    /// The socket, for polling.
    pub fn tcp_mut(&mut self) -> &mut TcpStream {
        &mut self.tcp
    }

    /// The socket.
    pub fn tcp(&self) -> &TcpStream {
        &self.tcp
    }

    /// Sends the records rustls holds until it holds none (`Ok`) or the socket is full
    /// (`WouldBlock`).
    fn send_records(&mut self) -> io::Result<()> {
        while self.session.wants_write() {
            if self.session.write_tls(&mut self.tcp)? == 0 {
                return Err(ErrorKind::WriteZero.into());
            }
        }
        Ok(())
    }
}

impl Read for TlsStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.session.reader().read(buf) {
                Ok(n) => return Ok(n),
                // A TCP end without close_notify: an end all the same (clients often skip it).
                Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Ok(0),
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            if self.session.read_tls(&mut self.tcp)? == 0 {
                return Ok(0);
            }
            let handshaking = self.session.is_handshaking();
            if let Err(e) = self.session.process_new_packets() {
                if handshaking {
                    self.tls.handshake_errors.fetch_add(1, Relaxed);
                }
                // The alert rustls queued, best effort: the connection closes either way.
                let _ = self.send_records();
                return Err(io::Error::new(ErrorKind::InvalidData, e));
            }
            match self.send_records() {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
    }
}

impl Write for TlsStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.send_records()?;
        let n = self.session.writer().write(buf)?;
        match self.send_records() {
            Ok(()) => Ok(n),
            // Taken: the rest of its records go out with the next flush.
            Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(n),
            Err(e) => Err(e),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.send_records()
    }
}

impl Transport for TlsStream {
    fn has_unsent(&self) -> bool {
        self.session.wants_write()
    }

    fn short_read_drains(&self) -> bool {
        false
    }
}
