//! The auth exchange of memcached's `-Y` (and of tenants with passwords): until a connection has
//! authenticated, its input goes to `mrcache_protocol::auth` instead of the command parser, one refusal
//! or credentials check per request.

use mrcache_engine::TenantId;
use mrcache_protocol::auth::{parse_auth, AuthParsed, AUTH_FAILURE};
use mrcache_protocol::response;

use super::{Progress, Session};
use crate::context::ThreadStats;
use crate::tenants::Tenancy;

/// Whether the connection must still authenticate.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Auth {
    Done,
    /// Credentials are required; `only` is the tenant of the port it arrived on, if any.
    Required {
        only: Option<TenantId>,
    },
}

impl Session {
    /// One step of the exchange over `rest`. Records what was consumed in `progress`; returns whether
    /// to stop (incomplete input or close).
    pub(super) fn authenticate(
        &mut self,
        rest: &[u8],
        out: &mut Vec<u8>,
        progress: &mut Progress,
    ) -> bool {
        let Auth::Required { only } = self.auth else {
            return false;
        };
        match parse_auth(rest) {
            AuthParsed::Incomplete { needed } => {
                progress.want_bytes = needed;
                true
            }
            AuthParsed::Close => {
                progress.close = true;
                true
            }
            AuthParsed::Refused {
                line,
                consumed,
                swallow,
            } => {
                progress.consumed += consumed;
                self.swallow = swallow;
                if line == AUTH_FAILURE {
                    ThreadStats::add(&self.stats.auth_cmds, 1);
                    ThreadStats::add(&self.stats.auth_errors, 1);
                }
                response::line(out, line);
                false
            }
            AuthParsed::Credentials {
                user,
                password,
                consumed,
            } => {
                progress.consumed += consumed;
                ThreadStats::add(&self.stats.auth_cmds, 1);
                match self.ctx.tenants.authenticate(user, password, only) {
                    Some(id) => {
                        self.tenancy = Tenancy::Fixed(id);
                        self.auth = Auth::Done;
                        self.publish_tenant();
                        response::line(out, "STORED");
                    }
                    None => {
                        ThreadStats::add(&self.stats.auth_errors, 1);
                        response::line(out, AUTH_FAILURE);
                    }
                }
                false
            }
        }
    }
}
