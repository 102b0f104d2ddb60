//! Item header encoding: the few bytes written in front of every key and
//! value inside a segment, and the helpers that read and patch them in place.
//!
//! Layout (all integers little-endian), see also the crate documentation:
//!
//! ```text
//! byte 0      control: bits 0-1 = (value-length width - 1), bit 2 = client
//!             flags present, bit 3 = fetched, bit 4 = stale (meta
//!             invalidation), bit 5 = win token sent (meta recache/vivify),
//!             bit 6 = key arrived base64-encoded (meta `b`), bit 7 = an
//!             explicit CAS follows (meta `E`)
//! byte 1      key length (1..=250)
//! 1-4 bytes   value length, width from the control byte
//! 4 bytes     exptime (0 = never); patched in place by touch/gat
//! 2 bytes     last access, server seconds mod 65536 (meta `l`, `me la=`);
//!             patched in place on every fetch
//! [4 bytes]   client flags, only when non-zero
//! [8 bytes]   explicit CAS, only for items written with meta `E`; every
//!             other item's CAS is derived from where it is stored
//! key bytes, value bytes
//! ```
//!
//! The header is therefore 9 bytes for a value shorter than 256 bytes without
//! flags, 10 for values up to 64 KiB, at most 12 (+4 with flags).
//!
//! The access clock wraps every 18 hours: `l` is exact for items touched in
//! the last 18 h (memcached itself refreshes its access time only once a
//! minute), and older ones read as younger than they are.

/// Longest key accepted (memcached's `KEY_MAX_LENGTH`).
pub const MAX_KEY_LEN: usize = 250;

/// Longest item header (before the key): control, key length, a 4-byte
/// value length, exptime, access time, client flags, an explicit CAS.
pub const MAX_HEADER_LEN: usize = 2 + 4 + 4 + 2 + 4 + 8;

const WIDTH_MASK: u8 = 0b11;
const HAS_FLAGS: u8 = 1 << 2;
const FETCHED: u8 = 1 << 3;
const STALE: u8 = 1 << 4;
const TOKEN_SENT: u8 = 1 << 5;
const KEY_BINARY: u8 = 1 << 6;
const EXPLICIT_CAS: u8 = 1 << 7;

/// A one-byte filler: a control byte with the reserved bits 6-7 set, so
/// never the start of an item. Segment walkers step over it. It reserves a
/// (generation, offset) pair, i.e. a CAS value, for a large object.
pub const PAD: u8 = 0xC0;

/// Bytes needed to store `vlen`.
fn width(vlen: usize) -> usize {
    if vlen < 1 << 8 {
        1
    } else if vlen < 1 << 16 {
        2
    } else if vlen < 1 << 24 {
        3
    } else {
        4
    }
}

/// Total bytes an item occupies in a segment.
pub fn item_len(klen: usize, vlen: usize, flags: u32) -> usize {
    header_len(vlen, flags) + klen + vlen
}

/// [`item_len`] of an item that may carry an explicit CAS (meta `E`).
pub fn item_len_cas(klen: usize, vlen: usize, flags: u32, cas: Option<u64>) -> usize {
    item_len(klen, vlen, flags) + if cas.is_some() { 8 + cas_width(vlen) - width(vlen) } else { 0 }
}

/// Value-length width of an item carrying an explicit CAS: at least 2, so
/// that its control byte (bit 7 set) can never equal [`PAD`] (0xC0 is a
/// width-1 item with bits 6-7 set: base64 key, explicit CAS, nothing else).
fn cas_width(vlen: usize) -> usize {
    width(vlen).max(2)
}

fn header_len(vlen: usize, flags: u32) -> usize {
    2 + width(vlen) + 4 + 2 + if flags != 0 { 4 } else { 0 }
}

/// The size memcached 1.6 (64-bit, CAS on) charges an item against `-I`:
/// `sizeof(item)` (48) + key + 1 + value + "\r\n" + 4 if flags + 8 (CAS).
/// Used only to decide "object too large" exactly where memcached does.
pub fn memcached_item_size(klen: usize, vlen: usize, flags: u32) -> usize {
    48 + klen + 1 + vlen + 2 + if flags != 0 { 4 } else { 0 } + 8
}

/// Writes header and key at the start of `dst` (sized with
/// [`item_len_cas`]); returns the offset of the value (relative to `dst`),
/// which the caller fills with `vlen` bytes. `cas`: an explicit CAS stored in
/// the item (meta `E`); `None` for the usual derived CAS.
pub fn encode_cas(dst: &mut [u8], key: &[u8], vlen: usize, flags: u32, exptime: u32, now: u32, cas: Option<u64>) -> usize {
    debug_assert!(!key.is_empty() && key.len() <= MAX_KEY_LEN);
    debug_assert!(vlen <= u32::MAX as usize);
    let w = if cas.is_some() { cas_width(vlen) } else { width(vlen) };
    let mut ctl = (w - 1) as u8;
    if flags != 0 {
        ctl |= HAS_FLAGS;
    }
    dst[0] = ctl;
    dst[1] = key.len() as u8;
    dst[2..2 + w].copy_from_slice(&(vlen as u32).to_le_bytes()[..w]);
    let mut p = 2 + w;
    dst[p..p + 4].copy_from_slice(&exptime.to_le_bytes());
    p += 4;
    dst[p..p + 2].copy_from_slice(&(now as u16).to_le_bytes());
    p += 2;
    if flags != 0 {
        dst[p..p + 4].copy_from_slice(&flags.to_le_bytes());
        p += 4;
    }
    if let Some(cas) = cas {
        dst[0] |= EXPLICIT_CAS;
        dst[p..p + 8].copy_from_slice(&cas.to_le_bytes());
        p += 8;
    }
    dst[p..p + key.len()].copy_from_slice(key);
    p + key.len()
}

/// A decoded header; offsets are relative to the item start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub klen: usize,
    pub vlen: usize,
    pub flags: u32,
    pub exptime: u32,
    pub fetched: bool,
    /// The CAS given by a meta `E`, if the item was written with one.
    pub cas: Option<u64>,
    /// Last access, server seconds mod 65536.
    pub atime: u16,
    /// Marked stale by a meta invalidation (`md … I`, `ms … I`).
    pub stale: bool,
    /// A client has been told it won the right to refill this item (`W`).
    pub token_sent: bool,
    /// The key arrived base64-encoded (meta `b`); meta replies re-encode it.
    pub key_binary: bool,
    /// Offset of the exptime field.
    pub exp_off: usize,
    /// Offset of the key.
    pub key_off: usize,
}

impl Header {
    pub fn val_off(&self) -> usize {
        self.key_off + self.klen
    }
    pub fn total(&self) -> usize {
        self.key_off + self.klen + self.vlen
    }
    pub fn expired(&self, now: u32) -> bool {
        self.exptime != 0 && now >= self.exptime
    }
}

/// Reads the header of the item starting at `src[0]`.
pub fn decode(src: &[u8]) -> Header {
    let ctl = src[0];
    let klen = src[1] as usize;
    let w = (ctl & WIDTH_MASK) as usize + 1;
    let mut v = [0u8; 4];
    v[..w].copy_from_slice(&src[2..2 + w]);
    let vlen = u32::from_le_bytes(v) as usize;
    let exp_off = 2 + w;
    let exptime = u32::from_le_bytes(src[exp_off..exp_off + 4].try_into().unwrap());
    let atime = u16::from_le_bytes([src[exp_off + 4], src[exp_off + 5]]);
    let mut key_off = exp_off + 6;
    let mut flags = 0;
    if ctl & HAS_FLAGS != 0 {
        flags = u32::from_le_bytes(src[key_off..key_off + 4].try_into().unwrap());
        key_off += 4;
    }
    let mut cas = None;
    if ctl & EXPLICIT_CAS != 0 {
        cas = Some(u64::from_le_bytes(src[key_off..key_off + 8].try_into().unwrap()));
        key_off += 8;
    }
    Header {
        cas,
        klen,
        vlen,
        flags,
        exptime,
        fetched: ctl & FETCHED != 0,
        atime,
        stale: ctl & STALE != 0,
        token_sent: ctl & TOKEN_SENT != 0,
        key_binary: ctl & KEY_BINARY != 0,
        exp_off,
        key_off,
    }
}

/// The header of a moved copy of the item whose bytes start at `src[0]`,
/// carrying `cas` (eviction that keeps hot items moves them, and their CAS
/// is otherwise derived from where they are): the same fields with an
/// explicit CAS. Returns the header bytes and their length; key and value
/// follow unchanged.
pub fn moved_header(src: &[u8], cas: u64) -> ([u8; 32], usize) {
    let h = decode(src);
    let mut out = [0u8; 32];
    let w = cas_width(h.vlen).max(h.exp_off - 2);
    out[0] = (src[0] & !WIDTH_MASK) | (w - 1) as u8 | EXPLICIT_CAS;
    out[1] = src[1];
    out[2..2 + w].copy_from_slice(&(h.vlen as u32).to_le_bytes()[..w]);
    let mut p = 2 + w;
    // exptime and last access, verbatim
    out[p..p + 6].copy_from_slice(&src[h.exp_off..h.exp_off + 6]);
    p += 6;
    if h.flags != 0 {
        out[p..p + 4].copy_from_slice(&h.flags.to_le_bytes());
        p += 4;
    }
    out[p..p + 8].copy_from_slice(&cas.to_le_bytes());
    (out, p + 8)
}

/// Patches the exptime of the item starting at `item[0]`.
pub fn set_exptime(item: &mut [u8], exptime: u32) {
    let w = (item[0] & WIDTH_MASK) as usize + 1;
    item[2 + w..6 + w].copy_from_slice(&exptime.to_le_bytes());
}

/// Records an access at server time `now`.
pub fn set_atime(item: &mut [u8], now: u32) {
    let w = (item[0] & WIDTH_MASK) as usize + 1;
    item[6 + w..8 + w].copy_from_slice(&(now as u16).to_le_bytes());
}

impl Header {
    /// Seconds since the last access, as seen at `now`.
    pub fn idle(&self, now: u32) -> u32 {
        (now as u16).wrapping_sub(self.atime) as u32
    }
}

/// Marks the item starting at `item[0]` as fetched at least once.
pub fn set_fetched(item: &mut [u8]) {
    item[0] |= FETCHED;
}

/// Marks the key of the item starting at `item[0]` as binary (meta `b`).
pub fn set_key_binary(item: &mut [u8], binary: bool) {
    item[0] = (item[0] & !KEY_BINARY) | if binary { KEY_BINARY } else { 0 };
}

/// Sets the meta-protocol state bits of the item starting at `item[0]`.
pub fn set_meta_state(item: &mut [u8], stale: bool, token_sent: bool) {
    item[0] = (item[0] & !(STALE | TOKEN_SENT)) | if stale { STALE } else { 0 } | if token_sent { TOKEN_SENT } else { 0 };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(klen: usize, vlen: usize, flags: u32, exp: u32) {
        let key = vec![b'k'; klen];
        let mut buf = vec![0u8; item_len(klen, vlen, flags)];
        let voff = encode_cas(&mut buf, &key, vlen, flags, exp, 1000, None);
        assert_eq!(voff + vlen, buf.len());
        let h = decode(&buf);
        assert_eq!((h.klen, h.vlen, h.flags, h.exptime, h.fetched), (klen, vlen, flags, exp, false));
        assert_eq!(h.val_off(), voff);
        assert_eq!(h.total(), buf.len());
        assert_eq!(&buf[h.key_off..h.key_off + klen], &key[..]);
        set_fetched(&mut buf);
        set_exptime(&mut buf, exp ^ 0xdead_beef);
        assert_eq!(decode(&buf).idle(1010), 10);
        set_atime(&mut buf, 1005);
        assert_eq!(decode(&buf).idle(1010), 5);
        let h2 = decode(&buf);
        assert!(h2.fetched);
        assert_eq!(h2.exptime, exp ^ 0xdead_beef);
        assert_eq!((h2.klen, h2.vlen, h2.flags), (klen, vlen, flags));
    }

    #[test]
    fn header_roundtrips_at_width_boundaries() {
        for &vlen in &[0, 1, 255, 256, 65535, 65536, (1 << 24) - 1, 1 << 24] {
            for &flags in &[0u32, 1, u32::MAX] {
                roundtrip(1, vlen, flags, 0);
                roundtrip(250, vlen, flags, u32::MAX);
            }
        }
    }

    #[test]
    fn explicit_cas_roundtrips() {
        let key = b"key";
        let mut buf = vec![0u8; item_len_cas(3, 5, 7, Some(42))];
        let voff = encode_cas(&mut buf, key, 5, 7, 100, 1, Some(42));
        assert_eq!(voff + 5, buf.len());
        let h = decode(&buf);
        assert_eq!((h.cas, h.flags, h.exptime, h.klen, h.vlen), (Some(42), 7, 100, 3, 5));
        assert_eq!(&buf[h.key_off..h.key_off + 3], key);
        assert_eq!(h.total(), buf.len());
        let mut plain = vec![0u8; item_len(3, 5, 7)];
        encode_cas(&mut plain, key, 5, 7, 100, 1, None);
        assert_eq!(decode(&plain).cas, None);
    }

    #[test]
    fn an_explicit_cas_item_is_never_a_pad() {
        // base64 key + explicit CAS + short value + no flags: bits 6-7 set.
        let mut buf = vec![0u8; item_len_cas(3, 5, 0, Some(9))];
        let voff = encode_cas(&mut buf, b"key", 5, 0, 0, 1, Some(9));
        set_key_binary(&mut buf, true);
        assert_ne!(buf[0], PAD);
        assert_eq!(voff + 5, buf.len());
        let h = decode(&buf);
        assert_eq!((h.cas, h.vlen, h.klen, h.total()), (Some(9), 5, 3, buf.len()));
    }

    #[test]
    fn moved_items_keep_everything_and_their_cas() {
        for &(vlen, flags) in &[(0usize, 0u32), (5, 0), (5, 7), (300, 0), (70_000, 9)] {
            let key = b"some-key";
            let mut buf = vec![0u8; item_len(key.len(), vlen, flags)];
            let voff = encode_cas(&mut buf, key, vlen, flags, 1234, 1000, None);
            buf[voff..].iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
            set_fetched(&mut buf);
            set_meta_state(&mut buf, true, false);
            set_key_binary(&mut buf, true);
            let h = decode(&buf);
            let (hdr, n) = moved_header(&buf, 0xfeed);
            let mut moved = hdr[..n].to_vec();
            moved.extend_from_slice(&buf[h.key_off..]);
            assert_ne!(moved[0], PAD);
            let m = decode(&moved);
            assert_eq!(m.cas, Some(0xfeed));
            assert_eq!((m.klen, m.vlen, m.flags, m.exptime, m.atime), (h.klen, h.vlen, h.flags, h.exptime, h.atime));
            assert_eq!((m.fetched, m.stale, m.token_sent, m.key_binary), (true, true, false, true));
            assert_eq!(&moved[m.key_off..m.key_off + m.klen], key);
            assert_eq!(&moved[m.val_off()..], &buf[h.val_off()..]);
            assert_eq!(m.total(), moved.len());
            assert_eq!(m.total(), item_len_cas(key.len(), vlen, flags, Some(1)));
            // Moving again keeps the same header.
            let (again, n2) = moved_header(&moved, 0xfeed);
            assert_eq!(&again[..n2], &moved[..n2]);
            set_exptime(&mut moved, 99);
            set_atime(&mut moved, 1001);
            let m = decode(&moved);
            assert_eq!((m.exptime, m.atime, m.cas), (99, 1001, Some(0xfeed)));
        }
    }

    #[test]
    fn header_sizes() {
        assert_eq!(header_len(10, 0), 9);
        assert_eq!(header_len(300, 0), 10);
        assert_eq!(header_len(300, 5), 14);
        assert_eq!(header_len(1 << 20, 0), 11);
        assert_eq!(header_len(1 << 30, 0), 12);
        assert_eq!(item_len(5, 10, 0), 24);
    }

    #[test]
    fn no_header_is_longer_than_max_header_len() {
        for vlen in [0, 255, 256, 1 << 16, 1 << 24, u32::MAX as usize] {
            for cas in [None, Some(7)] {
                assert!(item_len_cas(MAX_KEY_LEN, vlen, u32::MAX, cas) - vlen - MAX_KEY_LEN <= MAX_HEADER_LEN);
            }
        }
        assert_eq!(item_len_cas(1, 1 << 24, 1, Some(7)) - (1 << 24) - 1, MAX_HEADER_LEN);
    }

    #[test]
    fn memcached_size_formula() {
        // 1 MiB item limit: a 1-byte key allows a value of 1048576-48-2-3-8.
        let max = 1 << 20;
        let v = max - 48 - 1 - 1 - 2 - 8;
        assert_eq!(memcached_item_size(1, v, 0), max);
        assert_eq!(memcached_item_size(1, v, 1), max + 4);
    }
}
