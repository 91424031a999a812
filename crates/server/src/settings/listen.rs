//! `-l` and `-B`: where the server listens and which protocols it speaks.
//!
//! [`ListenSpec`] reads memcached's `-l` forms and prints them back the same way (IPv6 hosts in
//! brackets), so `--print-config` and `stats settings` show what was given.

use std::fmt;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

use super::SettingsError;

/// `-B`: which protocols a connection may speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// `-B ascii`: text and meta only.
    Ascii,
    /// `-B auto` (memcached's default): a connection whose first byte is 0x80 speaks the binary
    /// protocol, any other the text and meta protocols.
    Auto,
    /// `-B binary`: the binary protocol only (a first byte other than 0x80 closes the connection).
    Binary,
}

impl Protocol {
    /// memcached's `binding_protocol` name in `stats settings`.
    pub fn stats_name(self) -> &'static str {
        match self {
            Protocol::Ascii => "ascii",
            Protocol::Auto => "auto-negotiate",
            Protocol::Binary => "binary",
        }
    }

    /// `-B`'s value: `ascii`, `binary` or `auto`; anything else is refused with the reason.
    pub(crate) fn parse(text: &str) -> Result<Protocol, SettingsError> {
        let refuse = |why: String| Err(SettingsError::flag("-B/--protocol", why));
        match text {
            "ascii" => Ok(Protocol::Ascii),
            "auto" => Ok(Protocol::Auto),
            "binary" => Ok(Protocol::Binary),
            other => refuse(format!("unknown protocol '{other}' (ascii, binary, auto)")),
        }
    }
}

/// One `-l` entry: an interface, and a port when given as `host:port`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListenSpec {
    /// A host name or an IP address (IPv6 without brackets).
    pub host: String,
    /// `None`: use `-p`.
    pub port: Option<u16>,
}

impl ListenSpec {
    /// Parses memcached's `-l` forms: `host`, `host:port`, `[v6]`, `[v6]:port`, or a bare IPv6 address.
    pub fn parse(s: &str) -> Result<ListenSpec, SettingsError> {
        let bad =
            || SettingsError::flag("-l/--listen", format!("cannot parse '{s}' as an address"));
        if s.is_empty() {
            return Err(bad());
        }
        if let Some(rest) = s.strip_prefix('[') {
            let (host, after) = rest.split_once(']').ok_or_else(bad)?;
            let port = match after {
                "" => None,
                p => Some(
                    p.strip_prefix(':')
                        .ok_or_else(bad)?
                        .parse()
                        .map_err(|_| bad())?,
                ),
            };
            return Ok(ListenSpec {
                host: host.to_string(),
                port,
            });
        }
        match s.matches(':').count() {
            0 => Ok(ListenSpec {
                host: s.to_string(),
                port: None,
            }),
            1 => {
                let (host, port) = s.split_once(':').ok_or_else(bad)?;
                Ok(ListenSpec {
                    host: host.to_string(),
                    port: Some(port.parse().map_err(|_| bad())?),
                })
            }
            _ => Ok(ListenSpec {
                host: s.to_string(),
                port: None,
            }),
        }
    }

    /// Resolves to socket addresses with `default_port` where no port was given.
    pub fn resolve(&self, default_port: u16) -> std::io::Result<Vec<SocketAddr>> {
        let port = self.port.unwrap_or(default_port);
        if let Ok(ip) = self.host.parse::<IpAddr>() {
            return Ok(vec![SocketAddr::new(ip, port)]);
        }
        Ok((self.host.as_str(), port).to_socket_addrs()?.collect())
    }
}

impl fmt::Display for ListenSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        match self.port {
            Some(p) => write!(f, "{host}:{p}"),
            None => f.write_str(&host),
        }
    }
}
