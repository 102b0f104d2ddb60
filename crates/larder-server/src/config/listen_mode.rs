//! What a TCP listener speaks: memcached's `-l` prefixes under `-Z`.
//!
//! * no prefix: TLS when `-Z` is given (client certificates as
//!   `ssl_verify_mode` says), plain otherwise;
//! * `notls:` plain, on a server started with `-Z`;
//! * `btls:` (memcached 1.6.30) TLS without asking for a client
//!   certificate, whatever `ssl_verify_mode` says;
//! * `mtls:` (memcached 1.6.30) TLS with a client certificate required and
//!   verified against `ssl_ca_cert`, as `ssl_verify_mode=2` on this
//!   listener only.
//!
//! The prefixes are valid only with `-Z`; without it memcached refuses to
//! start with one message per prefix (its `mtls:` message says `'otls'`,
//! kept as memcached prints it: scripts match on it).

/// The client-certificate rule of a TLS listener, which picks the rustls
/// configuration its connections start from (`config::tls::TlsContext`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PeerRule {
    /// `ssl_verify_mode` decides (a listener without a prefix).
    Global,
    /// `btls:` no client certificate is asked for.
    NoPeer,
    /// `mtls:` a client certificate is required and verified.
    Required,
}

impl PeerRule {
    /// Every rule, in the order `TlsContext` keeps their configurations.
    pub const ALL: [PeerRule; 3] = [PeerRule::Global, PeerRule::NoPeer, PeerRule::Required];

    /// The `ssl_verify_mode` this rule applies, given the global one.
    pub fn verify_mode(self, global: u8) -> u8 {
        match self {
            PeerRule::Global => global,
            PeerRule::NoPeer => 0,
            PeerRule::Required => 2,
        }
    }
}

/// A `-l` entry's prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListenMode {
    /// No prefix.
    Default,
    /// `notls:`
    Plain,
    /// `btls:`
    NoPeer,
    /// `mtls:`
    Peer,
}

const PREFIXES: [(&str, ListenMode); 3] = [("notls:", ListenMode::Plain), ("btls:", ListenMode::NoPeer), ("mtls:", ListenMode::Peer)];

impl ListenMode {
    /// Split a `-l` entry into its prefix and the address after it.
    pub fn split(entry: &str) -> (ListenMode, &str) {
        for (prefix, mode) in PREFIXES {
            if let Some(rest) = entry.strip_prefix(prefix) {
                return (mode, rest);
            }
        }
        (ListenMode::Default, entry)
    }

    /// The TLS rule of this listener's connections; `None`: plain.
    pub fn tls(self, tls_enabled: bool) -> Option<PeerRule> {
        match (self, tls_enabled) {
            (_, false) | (ListenMode::Plain, true) => None,
            (ListenMode::Default, true) => Some(PeerRule::Global),
            (ListenMode::NoPeer, true) => Some(PeerRule::NoPeer),
            (ListenMode::Peer, true) => Some(PeerRule::Required),
        }
    }

    /// memcached's start-up error for this prefix without `-Z`.
    pub fn needs_tls_error(self) -> Option<&'static str> {
        match self {
            ListenMode::Default => None,
            ListenMode::Plain => Some("'notls' option is valid only when SSL is enabled"),
            ListenMode::NoPeer => Some("'btls' option is valid only when SSL is enabled"),
            // sic: memcached names the mtls: prefix 'otls' in this message.
            ListenMode::Peer => Some("'otls' option is valid only when SSL is enabled"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_split_and_map_to_rules() {
        assert_eq!(ListenMode::split("127.0.0.1:11211"), (ListenMode::Default, "127.0.0.1:11211"));
        assert_eq!(ListenMode::split("notls:127.0.0.1"), (ListenMode::Plain, "127.0.0.1"));
        assert_eq!(ListenMode::split("btls:[::1]:5"), (ListenMode::NoPeer, "[::1]:5"));
        assert_eq!(ListenMode::split("mtls:127.0.0.1:7"), (ListenMode::Peer, "127.0.0.1:7"));
        // Only a whole prefix with its colon counts.
        assert_eq!(ListenMode::split("mtlsx"), (ListenMode::Default, "mtlsx"));
        assert_eq!(ListenMode::Peer.tls(true), Some(PeerRule::Required));
        assert_eq!(ListenMode::NoPeer.tls(true), Some(PeerRule::NoPeer));
        assert_eq!(ListenMode::Default.tls(true), Some(PeerRule::Global));
        assert_eq!(ListenMode::Plain.tls(true), None);
        assert_eq!(ListenMode::Default.tls(false), None);
        assert_eq!(PeerRule::Required.verify_mode(0), 2);
        assert_eq!(PeerRule::NoPeer.verify_mode(3), 0);
        assert_eq!(PeerRule::Global.verify_mode(1), 1);
        assert!(ListenMode::Peer.needs_tls_error().unwrap().starts_with("'otls'"));
        assert_eq!(ListenMode::Default.needs_tls_error(), None);
    }
}
