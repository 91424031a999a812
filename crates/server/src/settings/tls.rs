//! `-Z` and the `-o ssl_*` options: what TLS runs with, as memcached 1.6.18 names and shows them.
//!
//! Plain data, checked when given; the certificates are read at start-up (and by `refresh_certs`) in
//! `crate::net::tls`, whose errors name the file. memcached's OpenSSL-specific knobs that rustls has no
//! counterpart for are accepted and shown (`ssl_ciphers`, `ssl_wbuf_size`, `ssl_kernel_tls`), and
//! start-up says they have no effect ([`TlsSettings::without_effect`]).

use std::fmt;
use std::path::PathBuf;

/// The oldest protocol version a client may use (`-o ssl_min_version`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TlsMinVersion {
    /// `tlsv1.0`: rustls speaks TLS 1.2 and 1.3 only, so this allows what `tlsv1.2` allows.
    V1_0,
    /// `tlsv1.1`: as `tlsv1.0`.
    V1_1,
    /// `tlsv1.2`, memcached's default.
    #[default]
    V1_2,
    /// `tlsv1.3`.
    V1_3,
}

impl TlsMinVersion {
    /// memcached's names.
    pub fn parse(s: &str) -> Option<TlsMinVersion> {
        Some(match s {
            "tlsv1.0" => TlsMinVersion::V1_0,
            "tlsv1.1" => TlsMinVersion::V1_1,
            "tlsv1.2" => TlsMinVersion::V1_2,
            "tlsv1.3" => TlsMinVersion::V1_3,
            _ => return None,
        })
    }

    /// The name `stats settings` shows.
    pub fn name(self) -> &'static str {
        match self {
            TlsMinVersion::V1_0 => "tlsv1.0",
            TlsMinVersion::V1_1 => "tlsv1.1",
            TlsMinVersion::V1_2 => "tlsv1.2",
            TlsMinVersion::V1_3 => "tlsv1.3",
        }
    }
}

impl fmt::Display for TlsMinVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a client's certificate is checked (`-o ssl_verify_mode`), memcached's numbers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TlsVerifyMode {
    /// 0: no client certificate is asked for.
    #[default]
    None,
    /// 1: asked for; a client without one is served, one with a certificate `ssl_ca_cert` does not
    /// sign is refused.
    Request,
    /// 2: required, signed by `ssl_ca_cert`.
    Require,
    /// 3: memcached's "once" (checked at the first handshake only); rustls never renegotiates, so
    /// this is `Require`.
    Once,
}

impl TlsVerifyMode {
    /// memcached's numbers 0 to 3.
    pub fn from_number(n: i64) -> Option<TlsVerifyMode> {
        Some(match n {
            0 => TlsVerifyMode::None,
            1 => TlsVerifyMode::Request,
            2 => TlsVerifyMode::Require,
            3 => TlsVerifyMode::Once,
            _ => return None,
        })
    }

    /// The number `stats settings` shows.
    pub fn number(self) -> u8 {
        match self {
            TlsVerifyMode::None => 0,
            TlsVerifyMode::Request => 1,
            TlsVerifyMode::Require => 2,
            TlsVerifyMode::Once => 3,
        }
    }
}

/// memcached's `ssl_wbuf_size` default: 16 KiB.
pub const DEFAULT_SSL_WBUF_BYTES: u32 = 16 * 1024;
/// `ssl_keyformat` 1: PEM (OpenSSL's `SSL_FILETYPE_PEM`), the only one read here.
pub const SSL_KEYFORMAT_PEM: i32 = 1;

/// What `-Z` and `-o ssl_*` asked for.
#[derive(Clone, Debug, PartialEq)]
pub struct TlsSettings {
    /// `-Z`: client TCP connections speak TLS.
    pub enabled: bool,
    /// `ssl_chain_cert`: the server's certificate chain, PEM.
    pub chain_cert: Option<PathBuf>,
    /// `ssl_key`: its private key, PEM.
    pub key: Option<PathBuf>,
    /// `ssl_keyformat` (shown; only PEM is read).
    pub keyformat: i32,
    /// `ssl_verify_mode`.
    pub verify_mode: TlsVerifyMode,
    /// `ssl_ciphers` (shown; rustls chooses among its own suites).
    pub ciphers: Option<String>,
    /// `ssl_ca_cert`: the CAs that sign client certificates, PEM.
    pub ca_cert: Option<PathBuf>,
    /// `ssl_wbuf_size`, in bytes (given in kilobytes).
    pub wbuf_bytes: u32,
    /// `ssl_session_cache`: keep sessions so that clients can resume them.
    pub session_cache: bool,
    /// `ssl_kernel_tls` (shown; no kernel offload here).
    pub kernel_tls: bool,
    /// `ssl_min_version`.
    pub min_version: TlsMinVersion,
}

impl Default for TlsSettings {
    fn default() -> Self {
        TlsSettings {
            enabled: false,
            chain_cert: None,
            key: None,
            keyformat: SSL_KEYFORMAT_PEM,
            verify_mode: TlsVerifyMode::None,
            ciphers: None,
            ca_cert: None,
            wbuf_bytes: DEFAULT_SSL_WBUF_BYTES,
            session_cache: false,
            kernel_tls: false,
            min_version: TlsMinVersion::V1_2,
        }
    }
}

impl TlsSettings {
    /// What is missing or inconsistent for `-Z`, as memcached refuses it (a chain and a key), plus
    /// what rustls cannot do: a key format other than PEM, client verification without CAs.
    pub fn check(&self) -> Result<(), String> {
        if !self.enabled {
            return Ok(());
        }
        if self.chain_cert.is_none() {
            return Err("-Z needs -o ssl_chain_cert=FILE (the server's certificate chain)".into());
        }
        if self.key.is_none() {
            return Err("-Z needs -o ssl_key=FILE (the certificate's private key)".into());
        }
        if self.keyformat != SSL_KEYFORMAT_PEM {
            return Err(format!(
                "-o ssl_keyformat={}: only PEM keys ({SSL_KEYFORMAT_PEM}) are read",
                self.keyformat
            ));
        }
        if self.verify_mode != TlsVerifyMode::None && self.ca_cert.is_none() {
            return Err(format!(
                "-o ssl_verify_mode={} needs -o ssl_ca_cert=FILE (the CAs that sign client \
                 certificates)",
                self.verify_mode.number()
            ));
        }
        Ok(())
    }

    /// The options given that change nothing here, for start-up's notice: any of them without `-Z`
    /// (memcached accepts them so), and under `-Z` the OpenSSL knobs rustls has no counterpart for.
    pub fn without_effect(&self) -> Vec<&'static str> {
        let mut unused = Vec::new();
        if !self.enabled {
            if *self != TlsSettings::default() {
                unused.push("ssl_* (TLS is off without -Z)");
            }
            return unused;
        }
        if self.wbuf_bytes != DEFAULT_SSL_WBUF_BYTES {
            unused.push("ssl_wbuf_size (rustls bounds its own buffers)");
        }
        if self.ciphers.is_some() {
            unused.push("ssl_ciphers (rustls negotiates among its own suites)");
        }
        if self.kernel_tls {
            unused.push("ssl_kernel_tls (no kernel TLS offload)");
        }
        if matches!(self.min_version, TlsMinVersion::V1_0 | TlsMinVersion::V1_1) {
            unused.push("ssl_min_version below tlsv1.2 (TLS 1.2 and 1.3 only)");
        }
        unused
    }
}
