//! A binary-protocol connection's step: parse one packet (`mrcache_protocol::binary`), answer
//! protocol errors as memcached does, run SASL here under `-S` (it changes who the connection is), and
//! hand every other request to `dispatch_binary`.
//!
//! A packet that is not a request (bad magic) closes the connection and, as in memcached, drops the
//! replies not yet due to be written (those after the last noop of this batch of input).
//!
//! SASL (memcached's `process_bin_sasl_auth`): `list mechs` answers `PLAIN`; `auth` with PLAIN checks
//! the user and password against the tenant directory exactly as the text protocol's auth does
//! (`Tenants::authenticate`, restricted to the port's tenant on a tenant port) and makes the connection
//! that tenant (`Authenticated`), or answers `Auth failure.` and leaves it as it was. PLAIN has no
//! second step, so `step` always fails. Until it has authenticated, any other opcode but `version` is
//! answered `Auth failure.` and the connection closes (the parser's `unauthenticated` check).

use mrcache_protocol::binary::{self, response, sasl, Command, Parsed, Status};
use mrcache_protocol::Data;

use super::{verbose, Auth, Progress, Session};
use crate::context::ThreadStats;
use crate::dispatch::{dispatch_binary, Flow};
use crate::tenants::Tenancy;

impl Session {
    /// One binary packet from the front of `rest`. Records what was consumed in `progress`; returns
    /// whether to stop (incomplete input or close).
    pub(super) fn binary_step(
        &mut self,
        rest: &[u8],
        out: &mut Vec<u8>,
        progress: &mut Progress,
    ) -> bool {
        self.tenancy.refresh(&self.ctx.tenants);
        let unauthenticated = self.auth != Auth::Done;
        let parsed = binary::parse(rest, &self.limits, unauthenticated);
        let log = match parsed {
            Parsed::Request { .. } | Parsed::Error { .. } => {
                verbose::RequestLog::binary(&self.ctx, self.conn.fd, rest, out)
            }
            Parsed::Incomplete { .. } | Parsed::Close => None,
        };
        let stop = self.binary_run(parsed, out, progress);
        if let Some(log) = log {
            log.reply(&self.ctx, out);
        }
        stop
    }

    /// Runs what `binary::parse` found.
    fn binary_run(
        &mut self,
        parsed: Parsed<'_>,
        out: &mut Vec<u8>,
        progress: &mut Progress,
    ) -> bool {
        match parsed {
            Parsed::Incomplete { needed } => {
                progress.want_bytes = needed;
                true
            }
            // memcached closes at once, dropping the replies it has not written yet: those since the
            // input was last drained or a noop forced a write.
            Parsed::Close => {
                out.truncate(self.flushed);
                progress.close = true;
                true
            }
            Parsed::Error {
                header,
                status,
                consumed,
                swallow,
                close,
            } => {
                progress.consumed += consumed;
                response::error(out, &header, status);
                if close {
                    progress.close = true;
                    return true;
                }
                self.swallow = swallow;
                false
            }
            Parsed::Request { packet, consumed } => {
                progress.consumed += consumed;
                let flow = match packet.command {
                    Command::SaslListMechs if self.ctx.settings.sasl => {
                        let mechs = sasl::MECHANISMS.as_bytes();
                        response::packet(out, &packet.header, Status::Success, &[], &[], mechs, 0);
                        Flow::Continue
                    }
                    Command::SaslAuth {
                        step,
                        mechanism,
                        data,
                    } if self.ctx.settings.sasl => {
                        ThreadStats::add(&self.stats.auth_cmds, 1);
                        let (payload, flow) = match data {
                            Data::Value(v) => (Some(v), Flow::Continue),
                            Data::TooLarge { swallow } => (None, Flow::Swallow(swallow)),
                        };
                        let tenant = payload
                            .filter(|_| !step && mechanism == b"PLAIN")
                            .and_then(sasl::parse_plain)
                            .and_then(|(user, password)| {
                                self.ctx
                                    .tenants
                                    .authenticate(user, password, self.port_tenant)
                            });
                        match tenant {
                            Some(id) => {
                                self.tenancy = Tenancy::Fixed(id);
                                self.auth = Auth::Done;
                                let ok = b"Authenticated";
                                response::packet(
                                    out,
                                    &packet.header,
                                    Status::Success,
                                    &[],
                                    &[],
                                    ok,
                                    0,
                                );
                            }
                            None => {
                                ThreadStats::add(&self.stats.auth_errors, 1);
                                response::error(out, &packet.header, Status::AuthError);
                            }
                        }
                        flow
                    }
                    _ => {
                        let flow = dispatch_binary(
                            &self.ctx,
                            &self.stats,
                            &self.tenancy,
                            self.conn.fd,
                            &packet,
                            out,
                        );
                        // A noop makes memcached write what it has so far (see `Parsed::Close`).
                        if packet.command == Command::Noop {
                            self.flushed = out.len();
                        }
                        flow
                    }
                };
                match flow {
                    Flow::Continue => false,
                    Flow::Swallow(n) => {
                        self.swallow = n;
                        false
                    }
                    Flow::Close => {
                        progress.close = true;
                        true
                    }
                    // Only multi-key text retrievals suspend; a binary get is one key per packet and
                    // the session's output bound is checked before every packet.
                    Flow::Suspended { .. } => false,
                    // `watch` and the dumps are text commands; no binary opcode asks for them.
                    Flow::Watch(_) | Flow::Stream(_) => false,
                }
            }
        }
    }
}
