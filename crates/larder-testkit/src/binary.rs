//! Binary-protocol request frames, built by hand as a client sends them
//! (memcached's `protocol_binary.h` layout), for tests that talk binary.

/// One request: the 24-byte header (magic 0x80, `opcode`, key length,
/// extras length, data type 0, vbucket 0, body length, `opaque`, `cas`),
/// then `extras`, `key` and `value`.
pub fn request(opcode: u8, extras: &[u8], key: &[u8], value: &[u8], opaque: u32, cas: u64) -> Vec<u8> {
    let body = extras.len() + key.len() + value.len();
    let mut r = Vec::with_capacity(24 + body);
    r.extend_from_slice(&[0x80, opcode]);
    r.extend_from_slice(&(key.len() as u16).to_be_bytes());
    r.push(extras.len() as u8);
    r.extend_from_slice(&[0, 0, 0]);
    r.extend_from_slice(&(body as u32).to_be_bytes());
    r.extend_from_slice(&opaque.to_be_bytes());
    r.extend_from_slice(&cas.to_be_bytes());
    r.extend_from_slice(extras);
    r.extend_from_slice(key);
    r.extend_from_slice(value);
    r
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_get_frame_is_laid_out_as_memcached_reads_it() {
        let r = super::request(0x00, &[], b"key", &[], 7, 0x0102);
        assert_eq!(r.len(), 27);
        assert_eq!(&r[..12], &[0x80, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 3]);
        assert_eq!(&r[12..16], &7u32.to_be_bytes());
        assert_eq!(&r[16..24], &0x0102u64.to_be_bytes());
        assert_eq!(&r[24..], b"key");
    }
}
