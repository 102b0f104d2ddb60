//! `SASL_LIST_MECHS`, `SASL_AUTH`, `SASL_STEP` (binary protocol, `-S`), and
//! a connection's authentication state, [`ConnAuth`], which `-Y`'s ASCII
//! handshake shares.
//!
//! memcached 1.6.18's semantics (`proto_bin.c`), which larder follows:
//!
//! * every SASL command first makes the connection unauthenticated again
//!   (memcached's `init_sasl_conn`), then creates its Cyrus context if it
//!   has none yet (once per connection);
//! * list: the mechanisms Cyrus offers, space-separated;
//! * auth: `sasl_server_start` with the mechanism and data; step:
//!   `sasl_server_step`, only after an auth that succeeded or asked to
//!   continue (otherwise it fails like a wrong password);
//! * success authenticates the connection and counts in `auth_cmds`; a
//!   failure counts in `auth_cmds` and `auth_errors`; "continue" counts in
//!   neither.
//!
//! Which commands an unauthenticated connection may send is decided by the
//! binary parser (`larder_proto::binary::parse_sasl`), which the session
//! hands [`ConnAuth::authenticated`]: one `bool` read per request.

use crate::auth::cyrus::{Conn, Cyrus, Exchange};
use crate::counters::{bump, WorkerStats};
use larder_proto::binary::{SaslCommand, SaslRequest};

/// Whether a connection has authenticated (`-S` or `-Y`), and its SASL
/// conversation. Owned by the session; the one place this state lives.
pub struct ConnAuth {
    authenticated: bool,
    /// Created by the first SASL command.
    sasl: Option<Conn>,
    /// An auth started (or finished) the conversation: steps are allowed.
    started: bool,
}

impl ConnAuth {
    /// A new connection: authenticated unless the server requires it.
    pub fn new(required: bool) -> ConnAuth {
        ConnAuth { authenticated: !required, sasl: None, started: false }
    }

    #[inline]
    pub fn authenticated(&self) -> bool {
        self.authenticated
    }

    /// `-Y`'s handshake decided (see `wire::gate`).
    pub fn set_authenticated(&mut self, yes: bool) {
        self.authenticated = yes;
    }
}

/// What to answer a SASL command.
#[derive(Debug, PartialEq, Eq)]
pub enum SaslReply<'a> {
    /// List: the mechanisms (success, as the value).
    Mechanisms(&'a [u8]),
    /// Success with the value "Authenticated".
    Authenticated,
    /// `AUTH_CONTINUE` with the server's challenge as the value.
    Continue(&'a [u8]),
    /// `AUTH_ERROR` ("Auth failure.").
    Failed,
}

/// Run one SASL command for the connection whose state is `auth`, with the
/// server's Cyrus library (`lib`: loaded under `-S`), counting in `ws`;
/// `verbose`: `-v` given (memcached's messages on stderr).
pub fn sasl<'a>(lib: Option<&'static Cyrus>, verbose: bool, ws: &WorkerStats, auth: &'a mut ConnAuth, req: &SaslRequest<'_>) -> SaslReply<'a> {
    let ConnAuth { authenticated, sasl, started } = auth;
    // memcached's init_sasl_conn: unauthenticated again, and a Cyrus
    // context if the connection has none. (The parser yields SASL requests
    // only under -S, which loads the library.)
    *authenticated = false;
    let Some(lib) = lib else { return SaslReply::Failed };
    let conn = sasl.get_or_insert_with(|| Conn::new(lib));
    if req.command == SaslCommand::ListMechs {
        return match conn.listmech() {
            Some(list) => SaslReply::Mechanisms(list),
            None => {
                if verbose {
                    eprintln!("Failed to list SASL mechanisms.");
                }
                SaslReply::Failed
            }
        };
    }
    if verbose {
        eprintln!("mech:  ``{}'' with {} bytes of data", String::from_utf8_lossy(req.mech), req.data.len());
    }
    let result = match req.command {
        SaslCommand::Auth => {
            let r = conn.start(req.mech, req.data);
            *started = !matches!(r, Exchange::Failed(_));
            r
        }
        // A step before any auth fails like a wrong password (memcached:
        // result -1).
        _ if !*started => Exchange::Failed(-1),
        _ => conn.step(req.data),
    };
    match result {
        Exchange::Done => {
            bump(&ws.auth_cmds, 1);
            *authenticated = true;
            SaslReply::Authenticated
        }
        Exchange::Continue(challenge) => SaslReply::Continue(challenge),
        Exchange::Failed(code) => {
            if verbose {
                eprintln!("Unknown sasl response:  {code}");
            }
            bump(&ws.auth_cmds, 1);
            bump(&ws.auth_errors, 1);
            SaslReply::Failed
        }
    }
}
