//! An established TLS connection's protocol state (for `net::tls`): its
//! keys and record layer, and what arrives besides data, handled as rustls
//! would: alerts (close_notify ends the stream, fatal ones the
//! connection), TLS 1.3 KeyUpdate (new keys from rustls's key schedule, and
//! our own KeyUpdate when asked), TLS 1.2 renegotiation (refused).
//!
//! Limits against a peer that only costs us work (rustls's): 32 key
//! updates without data between them, 32 empty records in a row, 4
//! warning alerts, one renegotiation request (answered with a
//! no_renegotiation warning; the second is fatal).

use crate::net::tls_record::{content, Fatal, Keys, RecordLayer};
use rustls::kernel::KernelConnection;
use rustls::server::ServerConnectionData;

/// Limits on messages that carry no data (see the module doc).
pub(super) const MAX_KEY_UPDATES: u8 = 32;
pub(super) const MAX_EMPTY_RECORDS: u8 = 32;
const MAX_WARNINGS: u8 = 4;
const MAX_RENEGOTIATIONS: u8 = 1;

pub(super) const ALERT_WARNING: u8 = 1;
pub(super) const ALERT_FATAL: u8 = 2;
pub(super) const CLOSE_NOTIFY: u8 = 0;
const USER_CANCELED: u8 = 90;
pub(super) const NO_RENEGOTIATION: u8 = 100;
const HS_CLIENT_HELLO: u8 = 1;
const HS_KEY_UPDATE: u8 = 24;

/// Why an established connection ends: with an alert of ours, or because
/// the peer sent a fatal one.
pub(super) enum Stop {
    Alert(Fatal),
    PeerAlert(u8),
}

impl From<Fatal> for Stop {
    fn from(f: Fatal) -> Stop {
        Stop::Alert(f)
    }
}

/// An established connection's keys and protocol state.
pub(super) struct Traffic {
    pub(super) layer: RecordLayer,
    pub(super) rx: Keys,
    pub(super) tx: Keys,
    /// rustls's key schedule: new secrets on a TLS 1.3 key update.
    pub(super) kernel: KernelConnection<ServerConnectionData>,
    /// Plaintext rustls decrypted during the handshake (data the client
    /// sent right after its Finished), delivered first.
    pub(super) early: Vec<u8>,
    /// Plaintext opened but not yet delivered: `rx[plain.0..plain.1]`.
    pub(super) plain: (usize, usize),
    /// The peer sent close_notify.
    pub(super) peer_closed: bool,
    /// We sent close_notify.
    pub(super) sent_close: bool,
    pub(super) key_updates_left: u8,
    pub(super) empty_left: u8,
    pub(super) warnings_left: u8,
    pub(super) renegotiations_left: u8,
    /// TLS 1.2: bytes of a refused ClientHello still to come in later
    /// records (skipped as they arrive, never buffered).
    pub(super) skip_handshake: usize,
    /// Our last KeyUpdate is still in the send buffer: a peer's request
    /// for another is answered by it (as rustls does).
    pub(super) key_update_unsent: bool,
}

impl Traffic {
    pub(super) fn new(layer: RecordLayer, rx: Keys, tx: Keys, kernel: KernelConnection<ServerConnectionData>, early: Vec<u8>) -> Traffic {
        Traffic {
            layer,
            rx,
            tx,
            kernel,
            early,
            plain: (0, 0),
            peer_closed: false,
            sent_close: false,
            key_updates_left: MAX_KEY_UPDATES,
            empty_left: MAX_EMPTY_RECORDS,
            warnings_left: MAX_WARNINGS,
            renegotiations_left: MAX_RENEGOTIATIONS,
            skip_handshake: 0,
            key_update_unsent: false,
        }
    }
}

/// What a post-handshake message asks us to send.
pub(super) enum Reply {
    None,
    KeyUpdate,
    NoRenegotiation,
}

/// Seal one record of `typ` carrying `payload` at the end of the send
/// buffer (making room by moving unsent bytes to its front); fails when
/// even the reserve is used up.
pub(super) fn queue_record(t: &mut Traffic, tx: &mut [u8], tstart: &mut usize, tend: &mut usize, typ: u8, payload: &[u8]) -> Result<(), Fatal> {
    let need = payload.len() + t.layer.overhead();
    if *tend + need > tx.len() && *tstart > 0 {
        tx.copy_within(*tstart..*tend, 0);
        *tend -= *tstart;
        *tstart = 0;
    }
    if *tend + need > tx.len() {
        return Err(Fatal::Exhausted);
    }
    let at = *tend;
    let prefix = t.layer.prefix();
    tx[at + prefix..at + prefix + payload.len()].copy_from_slice(payload);
    *tend += t.layer.seal(&mut t.tx, typ, &mut tx[at..], payload.len())?;
    Ok(())
}

/// Send our TLS 1.3 KeyUpdate (under the old key), then switch to the new
/// one.
pub(super) fn send_key_update(t: &mut Traffic, tx: &mut [u8], tstart: &mut usize, tend: &mut usize) -> Result<(), Fatal> {
    // update_not_requested: we answer, or renew our own key.
    queue_record(t, tx, tstart, tend, content::HANDSHAKE, &[HS_KEY_UPDATE, 0, 0, 1, 0])?;
    t.key_update_unsent = true;
    let (seq, secrets) = t.kernel.update_tx_secret().map_err(|_| Fatal::Exhausted)?;
    t.tx = Keys::new(seq, &secrets)?;
    Ok(())
}

/// An alert from the peer.
pub(super) fn alert(t: &mut Traffic, body: &[u8]) -> Result<(), Stop> {
    let &[level, description] = body else { return Err(Fatal::DecodeError.into()) };
    if level != ALERT_WARNING && level != ALERT_FATAL {
        return Err(Fatal::IllegalParameter.into());
    }
    if description == CLOSE_NOTIFY {
        t.peer_closed = true;
        return Ok(());
    }
    if level == ALERT_FATAL {
        return Err(Stop::PeerAlert(description));
    }
    t.warnings_left = t.warnings_left.checked_sub(1).ok_or(Fatal::UnexpectedMessage)?;
    // TLS 1.3 has no warnings but this one (RFC 8446 6).
    if t.layer.is_tls13() && description != USER_CANCELED {
        return Err(Fatal::DecodeError.into());
    }
    Ok(())
}

/// TLS 1.3 handshake messages after the handshake: only KeyUpdate is
/// accepted from a client, whole and last in its record (RFC 8446 5.1: a
/// key change is at a record boundary; larder does not join a KeyUpdate
/// split over records, which no TLS library sends).
pub(super) fn key_update(t: &mut Traffic, body: &[u8], reply: &mut Reply) -> Result<(), Stop> {
    let &[typ, 0, 0, 1, request] = body else {
        return Err(if body.first() == Some(&HS_KEY_UPDATE) { Fatal::DecodeError } else { Fatal::UnexpectedMessage }.into());
    };
    if typ != HS_KEY_UPDATE {
        return Err(Fatal::UnexpectedMessage.into());
    }
    if request > 1 {
        return Err(Fatal::IllegalParameter.into());
    }
    t.key_updates_left = t.key_updates_left.checked_sub(1).ok_or(Fatal::UnexpectedMessage)?;
    let (seq, secrets) = t.kernel.update_rx_secret().map_err(|_| Fatal::Exhausted)?;
    t.rx = Keys::new(seq, &secrets)?;
    if request == 1 && !t.key_update_unsent {
        *reply = Reply::KeyUpdate;
    }
    Ok(())
}

/// TLS 1.2 handshake messages after the handshake: a ClientHello asks to
/// renegotiate, refused with a warning the first time (as rustls does)
/// and skipped as it arrives; anything else, or a second one, is fatal.
pub(super) fn renegotiation(t: &mut Traffic, mut body: &[u8], reply: &mut Reply) -> Result<(), Stop> {
    while !body.is_empty() {
        if t.skip_handshake > 0 {
            let n = t.skip_handshake.min(body.len());
            t.skip_handshake -= n;
            body = &body[n..];
            continue;
        }
        let &[typ, a, b, c, ..] = body else { return Err(Fatal::DecodeError.into()) };
        if typ != HS_CLIENT_HELLO {
            return Err(Fatal::UnexpectedMessage.into());
        }
        t.renegotiations_left = t.renegotiations_left.checked_sub(1).ok_or(Fatal::UnexpectedMessage)?;
        *reply = Reply::NoRenegotiation;
        t.skip_handshake = u32::from_be_bytes([0, a, b, c]) as usize;
        body = &body[4..];
    }
    Ok(())
}
