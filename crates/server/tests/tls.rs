//! TLS (`-Z`) end to end: a CA, server and client certificates made at test time (rcgen), a rustls
//! client, and the real binary.
//!
//! - Requests and replies cross TLS unchanged, replies far larger than a socket buffer included (the
//!   records rustls holds are flushed when the socket drains); `stats settings` shows memcached's TLS
//!   rows, and `stats` counts a client that does not speak TLS as a failed handshake.
//! - `ssl_verify_mode` 2 refuses a client without a certificate and serves one the CA signed; 1 serves
//!   both.
//! - `refresh_certs` loads new files for new connections; a file that does not load leaves the
//!   certificates in use, with memcached's `Error` line; without `-Z` it says TLS is off.
//! - Start-up refuses what cannot run, naming the option: `-Z` without a chain or key, a missing file,
//!   client verification without CAs, `-o io=uring`.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{start_refused, stat_value, LineClient, Server, ServerKind};
use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

const TIMEOUT: Duration = Duration::from_secs(20);

/// A CA that signs server and client certificates, written to a directory of the test's own.
struct Pki {
    dir: PathBuf,
    ca: Certificate,
    ca_key: KeyPair,
}

impl Pki {
    fn new(test: &str, ca_name: &str) -> Pki {
        let dir = std::env::temp_dir().join(format!("mrcache-tls-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let ca_key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, ca_name);
        let ca = params.self_signed(&ca_key).unwrap();
        std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
        Pki { dir, ca, ca_key }
    }

    /// A certificate the CA signs, written as `{name}.pem` and `{name}-key.pem`.
    fn issue(&self, name: &str, purpose: ExtendedKeyUsagePurpose) -> (PathBuf, PathBuf) {
        let key = KeyPair::generate().unwrap();
        let mut params =
            CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.extended_key_usages = vec![purpose];
        let cert = params.signed_by(&key, &self.ca, &self.ca_key).unwrap();
        let (cert_path, key_path) = (
            self.dir.join(format!("{name}.pem")),
            self.dir.join(format!("{name}-key.pem")),
        );
        std::fs::write(&cert_path, cert.pem()).unwrap();
        std::fs::write(&key_path, key.serialize_pem()).unwrap();
        (cert_path, key_path)
    }

    fn ca_path(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A rustls client configuration trusting `ca`, with a client certificate when given.
fn client_config(ca: &Path, client: Option<(&Path, &Path)>) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    Arc::new(match client {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => builder
            .with_client_auth_cert(
                CertificateDer::pem_file_iter(cert)
                    .unwrap()
                    .map(Result::unwrap)
                    .collect(),
                PrivateKeyDer::from_pem_file(key).unwrap(),
            )
            .unwrap(),
    })
}

type TlsClient = StreamOwned<ClientConnection, TcpStream>;

fn connect(server: &Server, config: Arc<ClientConfig>) -> TlsClient {
    let tcp = server.connect(TIMEOUT).expect("connect");
    tcp.set_read_timeout(Some(TIMEOUT)).unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    StreamOwned::new(ClientConnection::new(config, name).unwrap(), tcp)
}

/// Sends `request` and reads until the reply ends with `end` (or the connection fails).
fn call(c: &mut TlsClient, request: &[u8], end: &[u8]) -> std::io::Result<Vec<u8>> {
    c.write_all(request)?;
    c.flush()?;
    let mut reply = Vec::new();
    let mut buf = vec![0; 1 << 16];
    let deadline = Instant::now() + TIMEOUT;
    while !reply.ends_with(end) {
        assert!(Instant::now() < deadline, "no reply ending in {end:?}");
        let n = c.read(&mut buf)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        reply.extend_from_slice(&buf[..n]);
    }
    Ok(reply)
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap()
}

fn tls_args<'a>(cert: &'a Path, key: &'a Path, extra: &'a str) -> Vec<String> {
    let mut options = format!(
        "ssl_chain_cert={},ssl_key={}",
        cert.display(),
        key.display()
    );
    if !extra.is_empty() {
        options.push(',');
        options.push_str(extra);
    }
    vec!["-Z".into(), "-o".into(), options]
}

fn start(args: &[String]) -> Server {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Server::start(&ServerKind::mrcached(), &args)
}

#[test]
fn requests_and_large_replies_cross_tls_and_stats_show_it() {
    let pki = Pki::new("basic", "mrcache test CA");
    let (cert, key) = pki.issue("server", ExtendedKeyUsagePurpose::ServerAuth);
    let server = start(&tls_args(&cert, &key, ""));
    let config = client_config(&pki.ca_path(), None);
    let mut c = connect(&server, config.clone());
    assert_eq!(
        text(call(&mut c, b"set k 0 0 5\r\nhello\r\nget k\r\n", b"END\r\n").unwrap()),
        "STORED\r\nVALUE k 0 5\r\nhello\r\nEND\r\n"
    );
    // Twenty 1 MB replies pipelined: far more than the socket takes at once.
    let value = vec![b'v'; 1_000_000];
    let mut set = b"set big 0 0 1000000\r\n".to_vec();
    set.extend_from_slice(&value);
    set.extend_from_slice(b"\r\n");
    assert_eq!(call(&mut c, &set, b"\r\n").unwrap(), b"STORED\r\n");
    let mut replies = call(&mut c, &b"get big\r\n".repeat(20), b"END\r\n").unwrap();
    let one = 21 + 1_000_000 + 2 + 5;
    while replies.len() < 20 * one {
        replies.extend(call(&mut c, b"", b"END\r\n").unwrap());
    }
    assert_eq!(replies.len(), 20 * one, "every reply, whole");
    assert!(replies.starts_with(b"VALUE big 0 1000000\r\nvvvv"));

    let settings = text(call(&mut c, b"stats settings\r\n", b"END\r\n").unwrap());
    for (name, value) in [
        ("ssl_enabled", "yes".to_string()),
        ("ssl_chain_cert", cert.display().to_string()),
        ("ssl_verify_mode", "0".into()),
        ("ssl_ca_cert", "NULL".into()),
        ("ssl_wbuf_size", "16384".into()),
        ("ssl_min_version", "tlsv1.2".into()),
        ("io", "epoll".into()),
    ] {
        assert_eq!(stat_value(&settings, name), Some(value), "STAT {name}");
    }
    // A client that does not speak TLS: an alert, a failed handshake counted, the server unharmed.
    let mut plain = server.connect(TIMEOUT).unwrap();
    plain.set_read_timeout(Some(TIMEOUT)).unwrap();
    plain.write_all(b"version\r\n").unwrap();
    let mut alert = Vec::new();
    let _ = plain.read_to_end(&mut alert);
    assert!(!alert.starts_with(b"VERSION"), "{alert:?}");
    let stats = text(call(&mut c, b"stats\r\n", b"END\r\n").unwrap());
    assert_eq!(
        stat_value(&stats, "ssl_handshake_errors").as_deref(),
        Some("1")
    );
    assert!(stat_value(&stats, "time_since_server_cert_refresh").is_some());
    // A fresh session still works.
    let mut again = connect(&server, config);
    assert_eq!(
        text(call(&mut again, b"get k\r\n", b"END\r\n").unwrap()),
        "VALUE k 0 5\r\nhello\r\nEND\r\n"
    );
}

#[test]
fn client_certificates_are_asked_for_or_required() {
    let pki = Pki::new("verify", "mrcache test CA");
    let (cert, key) = pki.issue("server", ExtendedKeyUsagePurpose::ServerAuth);
    let (client_cert, client_key) = pki.issue("client", ExtendedKeyUsagePurpose::ClientAuth);
    let with_cert = client_config(&pki.ca_path(), Some((&client_cert, &client_key)));
    let without = client_config(&pki.ca_path(), None);
    let ca = format!("ssl_ca_cert={}", pki.ca_path().display());

    let required = start(&tls_args(&cert, &key, &format!("ssl_verify_mode=2,{ca}")));
    let mut c = connect(&required, with_cert.clone());
    assert_eq!(
        call(&mut c, b"version\r\n", b"\r\n").unwrap()[..8],
        *b"VERSION "
    );
    let mut anonymous = connect(&required, without.clone());
    assert!(
        call(&mut anonymous, b"version\r\n", b"\r\n").is_err(),
        "a client without a certificate is refused"
    );
    let stats = text(call(&mut c, b"stats\r\n", b"END\r\n").unwrap());
    assert_eq!(
        stat_value(&stats, "ssl_handshake_errors").as_deref(),
        Some("1")
    );

    let requested = start(&tls_args(&cert, &key, &format!("ssl_verify_mode=1,{ca}")));
    for config in [with_cert, without] {
        let mut c = connect(&requested, config);
        assert_eq!(
            call(&mut c, b"version\r\n", b"\r\n").unwrap()[..8],
            *b"VERSION "
        );
    }
}

#[test]
fn refresh_certs_loads_new_files_for_new_connections() {
    let old = Pki::new("refresh-old", "old CA");
    let new = Pki::new("refresh-new", "new CA");
    let (cert, key) = old.issue("server", ExtendedKeyUsagePurpose::ServerAuth);
    let server = start(&tls_args(&cert, &key, ""));
    let trusts_old = client_config(&old.ca_path(), None);
    let trusts_new = client_config(&new.ca_path(), None);
    let mut admin = connect(&server, trusts_old.clone());
    assert!(call(&mut admin, b"version\r\n", b"\r\n").is_ok());

    // A file that does not load: memcached's Error line, the certificates in use stay.
    std::fs::write(&key, "not a key").unwrap();
    let refused = text(call(&mut admin, b"refresh_certs\r\n", b"\r\n").unwrap());
    assert!(
        refused.starts_with("Error loading the certificates: -o ssl_key="),
        "{refused}"
    );
    assert!(call(
        &mut connect(&server, trusts_old.clone()),
        b"version\r\n",
        b"\r\n"
    )
    .is_ok());

    // The new CA's certificate in the same files: new connections get it, the open one goes on.
    let (new_cert, new_key) = new.issue("server", ExtendedKeyUsagePurpose::ServerAuth);
    std::fs::copy(&new_cert, &cert).unwrap();
    std::fs::copy(&new_key, &key).unwrap();
    assert_eq!(
        text(call(&mut admin, b"refresh_certs\r\n", b"\r\n").unwrap()),
        "OK\r\n"
    );
    assert!(call(&mut connect(&server, trusts_new), b"version\r\n", b"\r\n").is_ok());
    assert!(
        call(&mut connect(&server, trusts_old), b"version\r\n", b"\r\n").is_err(),
        "the old CA no longer signs what the server shows"
    );
    assert!(call(&mut admin, b"version\r\n", b"\r\n").is_ok());

    // Without -Z there is nothing to refresh.
    let plain = Server::start(&ServerKind::mrcached(), &[]);
    assert_eq!(
        LineClient::connect(plain.port()).call("refresh_certs\r\n"),
        "Error TLS not enabled"
    );
}

#[test]
fn start_up_refuses_what_cannot_run_and_names_the_option() {
    let pki = Pki::new("refusals", "mrcache test CA");
    let (cert, key) = pki.issue("server", ExtendedKeyUsagePurpose::ServerAuth);
    let chain = format!("ssl_chain_cert={}", cert.display());
    let both = format!("{chain},ssl_key={}", key.display());
    let missing = format!("{chain},ssl_key={}", pki.dir.join("absent.pem").display());
    for (args, words) in [
        (vec!["-Z"], "-Z needs -o ssl_chain_cert"),
        (vec!["-Z", "-o", &chain], "-Z needs -o ssl_key"),
        (vec!["-Z", "-o", &missing], "-o ssl_key="),
        (
            vec!["-Z", "-o", &both, "-o", "ssl_verify_mode=2"],
            "needs -o ssl_ca_cert",
        ),
        (vec!["-Z", "-o", &both, "-o", "io=uring"], "-o io=uring"),
        (vec!["-o", "ssl_verify_mode=7"], "ssl_verify_mode"),
        (vec!["-o", "ssl_min_version=sslv3"], "ssl_min_version"),
    ] {
        let (status, output) = start_refused(&ServerKind::mrcached(), &args, TIMEOUT);
        assert!(status.is_some_and(|s| s != 0), "{args:?} started: {output}");
        assert!(output.contains(words), "{args:?}: {output}");
    }
}
