//! `--tls-ca`: the load generator speaks TLS to a small memcached-like server run in-process (rustls,
//! with a CA and a certificate for 127.0.0.1 made at test time), and refuses what it cannot do.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::{ServerConfig, ServerConnection, StreamOwned};

mod common;

/// A CA (written to a PEM file, for `--tls-ca`) and a server configuration it signed for 127.0.0.1.
fn pki(test: &str) -> (PathBuf, Arc<ServerConfig>) {
    let ca_key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, "loadgen test CA");
    let ca = params.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&key, &ca, &ca_key)
        .unwrap();
    let path = std::env::temp_dir().join(format!(
        "mrcache-loadgen-ca-{test}-{}.pem",
        std::process::id()
    ));
    std::fs::write(&path, ca.pem()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(cert.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .unwrap();
    (path, Arc::new(config))
}

/// Answers `get` with a miss and `set` with STORED, over TLS, one thread per connection.
fn serve(config: Arc<ServerConfig>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for tcp in listener.incoming().flatten() {
            let config = config.clone();
            std::thread::spawn(move || {
                let session = ServerConnection::new(config).unwrap();
                let _ = answer(StreamOwned::new(session, tcp));
            });
        }
    });
    addr
}

fn answer(stream: StreamOwned<ServerConnection, TcpStream>) -> std::io::Result<()> {
    let mut input = BufReader::new(stream);
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let reply: &[u8] = match words.first() {
            Some(&"set") => {
                let len: usize = words[4].parse().unwrap();
                let mut value = vec![0; len + 2];
                input.read_exact(&mut value)?;
                b"STORED\r\n"
            }
            _ => b"END\r\n",
        };
        input.get_mut().write_all(reply)?;
        input.get_mut().flush()?;
    }
}

#[test]
fn requests_cross_tls() {
    let (ca, config) = pki("cross");
    let addr = serve(config);
    let ca_arg = ca.display().to_string();
    let (report, _) = common::bench(&addr, "500ms", "0s", &["--tls-ca", &ca_arg]);
    let report = report.expect("bench runs");
    assert!(report.ops.get + report.ops.set > 100, "{:?}", report.ops);
    assert_eq!(report.errors.total(), 0, "{:?}", report.last_error);
    let _ = std::fs::remove_file(ca);
}

#[test]
fn what_tls_cannot_do_is_refused() {
    let (ca, config) = pki("refused");
    let addr = serve(config);
    let ca_arg = ca.display().to_string();
    for (options, words) in [
        (
            vec!["--tls-ca", &ca_arg, "--io", "uring"],
            "--io epoll only",
        ),
        (
            vec!["--tls-ca", "/nonexistent/ca.pem"],
            "/nonexistent/ca.pem",
        ),
    ] {
        let (report, _) = common::bench(&addr, "100ms", "0s", &options);
        let error = report.expect_err("refused").to_string();
        assert!(error.contains(words), "{options:?}: {error}");
    }
    let _ = std::fs::remove_file(ca);
}
