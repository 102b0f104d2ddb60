//! The TLS record layer of an established connection, done by larder with
//! ring's AEADs once rustls has finished the handshake (as kernel TLS takes
//! over from a TLS library): seals and opens records in place, in buffers
//! the connection owns, so a warm TLS connection allocates nothing per
//! request.
//!
//! Why not rustls's own record layer: rustls 0.23 allocates a buffer for
//! every record it decrypts and every record it encrypts, in both of its
//! APIs (tests/tls_record_alloc.rs). Its kernel-connection API hands over
//! the traffic keys, IVs and sequence numbers instead, and keeps the key
//! schedule (TLS 1.3 key updates); this module is the part it leaves out.
//!
//! What is sealed and opened (RFC 8446 5.2-5.3, RFC 5288, RFC 7905):
//!
//! * TLS 1.3, every suite: nonce = IV xor the 64-bit sequence number
//!   (big-endian, right-aligned in 12 bytes); additional data = the record
//!   header; the plaintext is content, then its real content type, then
//!   optional zero padding; the outer type is always application_data.
//! * TLS 1.2 AES-GCM: the nonce is a 4-byte salt and an 8-byte explicit
//!   part carried in front of the ciphertext. rustls hands over
//!   salt || (key block's explicit part) as the "IV" and itself sends
//!   IV xor seq as the nonce, the last 8 bytes of it as the explicit part;
//!   we send the same. A received record's explicit part is the sender's
//!   choice, so opening uses salt || those 8 bytes.
//! * TLS 1.2 ChaCha20-Poly1305: nonce = IV xor seq, nothing explicit.
//! * TLS 1.2 additional data: seq || type || version || plaintext length.
//!
//! A record that fails authentication yields no plaintext: ring leaves the
//! buffer unspecified and the caller gets only the error.

use ring::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey};
use rustls::{ConnectionTrafficSecrets, ProtocolVersion, SupportedCipherSuite};

/// Bytes of a record header: type, version, length.
pub const HEADER: usize = 5;
/// The most plaintext a record may carry (2^14).
pub const MAX_PLAINTEXT: usize = 1 << 14;
/// The most ciphertext a TLS 1.2 record may carry (RFC 5246 6.2.3).
const MAX_CIPHERTEXT_TLS12: usize = MAX_PLAINTEXT + 2048;
/// The most ciphertext a TLS 1.3 record may carry (RFC 8446 5.2).
const MAX_CIPHERTEXT_TLS13: usize = MAX_PLAINTEXT + 256;
/// The largest record either version accepts, header included: the
/// receive buffer holds one of these.
pub const MAX_RECORD: usize = HEADER + MAX_CIPHERTEXT_TLS12;
const TAG: usize = 16;
const GCM_EXPLICIT: usize = 8;
/// Past this many records under one key, rustls too stops (it closes, or
/// updates the key in TLS 1.3); the sequence number never gets near
/// wrapping.
const SEQ_SOFT_LIMIT: u64 = 0xffff_ffff_ffff_0000;

/// TLS record content types.
pub mod content {
    pub const CHANGE_CIPHER_SPEC: u8 = 20;
    pub const ALERT: u8 = 21;
    pub const HANDSHAKE: u8 = 22;
    pub const APPLICATION_DATA: u8 = 23;
}

/// Why a record was refused: the alert (RFC 8446 6.2) to send before
/// closing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fatal {
    /// The record failed authentication (or is too short to carry a tag).
    BadRecordMac = 20,
    /// A record or its plaintext is over the limits.
    RecordOverflow = 22,
    /// A record, message or content type not allowed here.
    UnexpectedMessage = 10,
    /// A malformed message.
    DecodeError = 50,
    /// A field with a value not allowed (a key update's request).
    IllegalParameter = 47,
    /// The sequence number or the suite's confidentiality limit is used up
    /// and cannot be renewed (TLS 1.2): the connection must end.
    Exhausted = 80, // internal_error
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Tls13,
    Tls12Gcm,
    Tls12ChaCha,
}

/// One direction's key, IV and sequence number.
pub struct Keys {
    key: LessSafeKey,
    iv: [u8; 12],
    seq: u64,
}

impl Keys {
    /// From the secrets rustls extracted (or computed on a key update).
    pub fn new(seq: u64, secrets: &ConnectionTrafficSecrets) -> Result<Keys, Fatal> {
        let (alg, key, iv) = match secrets {
            ConnectionTrafficSecrets::Aes128Gcm { key, iv } => (&aead::AES_128_GCM, key, iv),
            ConnectionTrafficSecrets::Aes256Gcm { key, iv } => (&aead::AES_256_GCM, key, iv),
            ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv } => (&aead::CHACHA20_POLY1305, key, iv),
            _ => return Err(Fatal::Exhausted),
        };
        let key = UnboundKey::new(alg, key.as_ref()).map_err(|_| Fatal::Exhausted)?;
        let iv: [u8; 12] = iv.as_ref().try_into().map_err(|_| Fatal::Exhausted)?;
        Ok(Keys { key: LessSafeKey::new(key), iv, seq })
    }

    /// IV xor sequence number.
    fn nonce_bytes(&self) -> [u8; 12] {
        let mut n = self.iv;
        for (b, s) in n[4..].iter_mut().zip(self.seq.to_be_bytes()) {
            *b ^= s;
        }
        n
    }

    pub fn seq(&self) -> u64 {
        self.seq
    }
}

/// TLS 1.2's additional data.
fn aad12(seq: u64, typ: u8, len: usize) -> [u8; 13] {
    let mut a = [0u8; 13];
    a[..8].copy_from_slice(&seq.to_be_bytes());
    a[8] = typ;
    a[9..11].copy_from_slice(&[3, 3]);
    a[11..].copy_from_slice(&(len as u16).to_be_bytes());
    a
}

/// The record layer of one connection: how records are built for the
/// negotiated version and suite, and the limit on records per key.
pub struct RecordLayer {
    kind: Kind,
    /// Records that may be sealed under one key (the suite's
    /// confidentiality limit, at most [`SEQ_SOFT_LIMIT`]).
    tx_limit: u64,
}

/// An opened record: its content type and where its plaintext is (within
/// the buffer given to [`RecordLayer::open`]).
#[derive(Debug, PartialEq, Eq)]
pub struct Opened {
    pub typ: u8,
    pub start: usize,
    pub end: usize,
}

impl RecordLayer {
    /// For the negotiated version and suite; `secrets`: either
    /// direction's (they name the AEAD).
    pub fn new(version: ProtocolVersion, suite: SupportedCipherSuite, secrets: &ConnectionTrafficSecrets) -> Result<RecordLayer, Fatal> {
        let chacha = matches!(secrets, ConnectionTrafficSecrets::Chacha20Poly1305 { .. });
        let (kind, limit) = match (version, suite) {
            (ProtocolVersion::TLSv1_3, SupportedCipherSuite::Tls13(s)) => (Kind::Tls13, s.common.confidentiality_limit),
            (ProtocolVersion::TLSv1_2, SupportedCipherSuite::Tls12(s)) => {
                (if chacha { Kind::Tls12ChaCha } else { Kind::Tls12Gcm }, s.common.confidentiality_limit)
            }
            _ => return Err(Fatal::Exhausted),
        };
        Ok(RecordLayer { kind, tx_limit: limit.min(SEQ_SOFT_LIMIT) })
    }

    pub fn is_tls13(&self) -> bool {
        self.kind == Kind::Tls13
    }

    /// Bytes a sealed record carries in front of its plaintext.
    pub fn prefix(&self) -> usize {
        match self.kind {
            Kind::Tls12Gcm => HEADER + GCM_EXPLICIT,
            _ => HEADER,
        }
    }

    /// Bytes a sealed record adds to its plaintext in all.
    pub fn overhead(&self) -> usize {
        match self.kind {
            Kind::Tls13 => HEADER + 1 + TAG,
            Kind::Tls12Gcm => HEADER + GCM_EXPLICIT + TAG,
            Kind::Tls12ChaCha => HEADER + TAG,
        }
    }

    /// The most ciphertext a received record may announce.
    pub fn max_ciphertext(&self) -> usize {
        match self.kind {
            Kind::Tls13 => MAX_CIPHERTEXT_TLS13,
            _ => MAX_CIPHERTEXT_TLS12,
        }
    }

    /// Lower the records sealed per key (tests reach the limit without
    /// sealing 2^24 records); never raises it.
    pub fn limit_records_per_key(&mut self, n: u64) {
        self.tx_limit = self.tx_limit.min(n);
    }

    /// `tx` has sealed as many records as its key may: TLS 1.3 must update
    /// the key before the next, TLS 1.2 must close.
    pub fn tx_exhausted(&self, tx: &Keys) -> bool {
        tx.seq >= self.tx_limit
    }

    /// Seal one record in place: `buf[prefix()..prefix() + len]` holds the
    /// plaintext, `buf` has room for [`overhead`](Self::overhead) more;
    /// writes the whole record from `buf[0]` and returns its length.
    /// Refuses once the sequence number is used up (the caller checks
    /// [`tx_exhausted`](Self::tx_exhausted) first and never gets there).
    pub fn seal(&self, tx: &mut Keys, typ: u8, buf: &mut [u8], len: usize) -> Result<usize, Fatal> {
        debug_assert!(len <= MAX_PLAINTEXT);
        if tx.seq >= SEQ_SOFT_LIMIT {
            return Err(Fatal::Exhausted);
        }
        let nonce_bytes = tx.nonce_bytes();
        let nonce = Nonce::assume_unique_for_key(nonce_bytes);
        let (outer, body, total) = match self.kind {
            Kind::Tls13 => {
                buf[HEADER + len] = typ;
                (content::APPLICATION_DATA, HEADER..HEADER + len + 1, HEADER + len + 1 + TAG)
            }
            Kind::Tls12Gcm => {
                buf[HEADER..HEADER + GCM_EXPLICIT].copy_from_slice(&nonce_bytes[4..]);
                (typ, HEADER + GCM_EXPLICIT..HEADER + GCM_EXPLICIT + len, HEADER + GCM_EXPLICIT + len + TAG)
            }
            Kind::Tls12ChaCha => (typ, HEADER..HEADER + len, HEADER + len + TAG),
        };
        let record_len = (total - HEADER) as u16;
        buf[..HEADER].copy_from_slice(&[outer, 3, 3, (record_len >> 8) as u8, record_len as u8]);
        let header: [u8; HEADER] = buf[..HEADER].try_into().expect("five bytes");
        let tag_at = body.end;
        let tag = match self.kind {
            Kind::Tls13 => tx.key.seal_in_place_separate_tag(nonce, Aad::from(header), &mut buf[body]),
            _ => tx.key.seal_in_place_separate_tag(nonce, Aad::from(aad12(tx.seq, typ, len)), &mut buf[body]),
        }
        .map_err(|_| Fatal::Exhausted)?;
        buf[tag_at..tag_at + TAG].copy_from_slice(tag.as_ref());
        tx.seq += 1;
        Ok(total)
    }

    /// The length of the whole record at the front of `buf` (header
    /// included), once the header is there; refuses a header no record of
    /// this connection may have.
    pub fn record_len(&self, buf: &[u8]) -> Result<Option<usize>, Fatal> {
        if buf.len() < HEADER {
            return Ok(None);
        }
        if buf[1] != 3 || buf[2] != 3 {
            return Err(Fatal::DecodeError);
        }
        let len = u16::from_be_bytes([buf[3], buf[4]]) as usize;
        if len > self.max_ciphertext() {
            return Err(Fatal::RecordOverflow);
        }
        Ok(Some(HEADER + len))
    }

    /// Open the record that is exactly `rec` (header included, as
    /// [`record_len`](Self::record_len) measured it) in place. TLS 1.3
    /// padding is stripped and the real content type returned. Bytes too
    /// few to hold a header are `DecodeError`: the stream always measures
    /// first, but the layer does not rely on its caller for memory safety.
    pub fn open(&self, rx: &mut Keys, rec: &mut [u8]) -> Result<Opened, Fatal> {
        if rx.seq >= SEQ_SOFT_LIMIT {
            return Err(Fatal::Exhausted);
        }
        if rec.len() < HEADER {
            return Err(Fatal::DecodeError);
        }
        let mut header = [0u8; HEADER];
        header.copy_from_slice(&rec[..HEADER]);
        let typ = header[0];
        let body_len = rec.len() - HEADER;
        let opened = match self.kind {
            Kind::Tls13 => {
                if typ != content::APPLICATION_DATA {
                    return Err(Fatal::UnexpectedMessage);
                }
                if body_len < TAG + 1 {
                    return Err(Fatal::BadRecordMac);
                }
                let nonce = Nonce::assume_unique_for_key(rx.nonce_bytes());
                let inner = rx.key.open_in_place(nonce, Aad::from(header), &mut rec[HEADER..]).map_err(|_| Fatal::BadRecordMac)?;
                // Padding: zeros after the content type.
                let Some(at) = inner.iter().rposition(|&b| b != 0) else { return Err(Fatal::UnexpectedMessage) };
                if at > MAX_PLAINTEXT {
                    return Err(Fatal::RecordOverflow);
                }
                Opened { typ: inner[at], start: HEADER, end: HEADER + at }
            }
            Kind::Tls12Gcm => {
                if body_len < GCM_EXPLICIT + TAG {
                    return Err(Fatal::BadRecordMac);
                }
                let mut nonce = rx.iv;
                nonce[4..].copy_from_slice(&rec[HEADER..HEADER + GCM_EXPLICIT]);
                let aad = aad12(rx.seq, typ, body_len - GCM_EXPLICIT - TAG);
                let nonce = Nonce::assume_unique_for_key(nonce);
                let plain = rx.key.open_within(nonce, Aad::from(aad), &mut rec[HEADER..], GCM_EXPLICIT..).map_err(|_| Fatal::BadRecordMac)?;
                Opened { typ, start: HEADER, end: HEADER + plain.len() }
            }
            Kind::Tls12ChaCha => {
                if body_len < TAG {
                    return Err(Fatal::BadRecordMac);
                }
                let aad = aad12(rx.seq, typ, body_len - TAG);
                let nonce = Nonce::assume_unique_for_key(rx.nonce_bytes());
                let plain = rx.key.open_in_place(nonce, Aad::from(aad), &mut rec[HEADER..]).map_err(|_| Fatal::BadRecordMac)?;
                Opened { typ, start: HEADER, end: HEADER + plain.len() }
            }
        };
        rx.seq += 1;
        if opened.end - opened.start > MAX_PLAINTEXT {
            return Err(Fatal::RecordOverflow);
        }
        Ok(opened)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::crypto::cipher::{AeadKey, Iv};

    fn secrets(kind: Kind) -> ConnectionTrafficSecrets {
        let key = AeadKey::from([7u8; 32]);
        let iv = Iv::new([9u8; 12]);
        match kind {
            Kind::Tls12ChaCha | Kind::Tls13 => ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv },
            Kind::Tls12Gcm => ConnectionTrafficSecrets::Aes256Gcm { key, iv },
        }
    }

    fn layer(kind: Kind) -> RecordLayer {
        RecordLayer { kind, tx_limit: 3 }
    }

    /// Each kind opens what it sealed, over several sequence numbers, and
    /// a flipped bit anywhere in a record (header included) is refused.
    #[test]
    fn sealed_records_open_and_tampered_ones_do_not() {
        for kind in [Kind::Tls13, Kind::Tls12Gcm, Kind::Tls12ChaCha] {
            let l = layer(kind);
            let mut tx = Keys::new(5, &secrets(kind)).unwrap();
            let mut rx = Keys::new(5, &secrets(kind)).unwrap();
            for round in 0..3u8 {
                let msg = [b'a' + round; 40];
                let mut buf = vec![0u8; 40 + l.overhead()];
                buf[l.prefix()..l.prefix() + 40].copy_from_slice(&msg);
                let n = l.seal(&mut tx, content::APPLICATION_DATA, &mut buf, 40).unwrap();
                assert_eq!(n, buf.len());
                assert_eq!(l.record_len(&buf).unwrap(), Some(n));
                for bit in [0usize, 4 * 8, 7 * 8 + 1, (n - 1) * 8] {
                    let mut bad = buf.clone();
                    bad[bit / 8] ^= 1 << (bit % 8);
                    let mut probe = Keys::new(rx.seq, &secrets(kind)).unwrap();
                    // As the stream does: the header says how long the
                    // record is (a longer one is not whole yet).
                    let opened = match l.record_len(&bad) {
                        Ok(Some(len)) if len <= bad.len() => l.open(&mut probe, &mut bad[..len]).is_ok(),
                        _ => false,
                    };
                    assert!(!opened, "{kind:?}: bit {bit} flipped and still opened");
                }
                let o = l.open(&mut rx, &mut buf).unwrap();
                assert_eq!(o.typ, content::APPLICATION_DATA);
                assert_eq!(&buf[o.start..o.end], &msg);
            }
            assert!(l.tx_exhausted(&tx), "{kind:?}: the limit (3 records past 5) is reached");
        }
    }

    /// A record replayed (opened with the wrong sequence number) fails.
    #[test]
    fn sequence_numbers_are_authenticated() {
        for kind in [Kind::Tls13, Kind::Tls12Gcm, Kind::Tls12ChaCha] {
            let l = layer(kind);
            let mut tx = Keys::new(0, &secrets(kind)).unwrap();
            let mut buf = vec![0u8; 3 + l.overhead()];
            let n = l.seal(&mut tx, content::APPLICATION_DATA, &mut buf, 3).unwrap();
            let mut rx = Keys::new(1, &secrets(kind)).unwrap();
            assert_eq!(l.open(&mut rx, &mut buf[..n]), Err(Fatal::BadRecordMac), "{kind:?}");
        }
    }

    /// TLS 1.3: padding is stripped; all-zero inner plaintext is refused.
    #[test]
    fn tls13_padding_and_content_type() {
        let l = layer(Kind::Tls13);
        let mut tx = Keys::new(0, &secrets(Kind::Tls13)).unwrap();
        let mut rx = Keys::new(0, &secrets(Kind::Tls13)).unwrap();
        // "hi", type alert, then three zeros of padding, sealed as content
        // of 5 + 1 bytes whose last byte is 0 (padding).
        let mut buf = vec![0u8; 64];
        buf[HEADER..HEADER + 6].copy_from_slice(&[b'h', b'i', content::ALERT, 0, 0, 0]);
        let n = l.seal(&mut tx, 0, &mut buf, 6).unwrap();
        let o = l.open(&mut rx, &mut buf[..n]).unwrap();
        assert_eq!((o.typ, &buf[o.start..o.end]), (content::ALERT, &b"hi"[..]));
        let mut buf = vec![0u8; 64];
        let n = l.seal(&mut tx, 0, &mut buf, 0).unwrap();
        assert_eq!(l.open(&mut rx, &mut buf[..n]), Err(Fatal::UnexpectedMessage));
    }

    /// Fewer bytes than a header are refused, never a panic, whatever the
    /// suite; the receiving keys do not move.
    #[test]
    fn open_refuses_less_than_a_header() {
        for kind in [Kind::Tls13, Kind::Tls12Gcm, Kind::Tls12ChaCha] {
            let l = layer(kind);
            let mut rx = Keys::new(0, &secrets(kind)).unwrap();
            for n in 0..HEADER {
                let mut rec = [23u8, 3, 3, 0, 0][..n].to_vec();
                assert_eq!(l.open(&mut rx, &mut rec), Err(Fatal::DecodeError), "{n} bytes");
            }
            assert_eq!(rx.seq(), 0);
        }
    }

    #[test]
    fn headers_over_the_limits_are_refused() {
        let l = layer(Kind::Tls13);
        assert_eq!(l.record_len(&[23, 3, 3, 0x41, 0x01]), Err(Fatal::RecordOverflow));
        assert_eq!(l.record_len(&[23, 3, 3, 0x41, 0x00]), Ok(Some(HEADER + 0x4100)));
        assert_eq!(l.record_len(&[23, 3, 1, 0, 1]), Err(Fatal::DecodeError));
        assert_eq!(l.record_len(&[23, 3, 3, 0]), Ok(None));
        let l = layer(Kind::Tls12Gcm);
        assert_eq!(l.record_len(&[23, 3, 3, 0x48, 0x01]), Err(Fatal::RecordOverflow));
    }
}
