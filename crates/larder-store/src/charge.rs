//! [`Charge`]: the bytes one write or delete charged and released, and
//! [`item_bytes`], what the store charges for an item: what the server's
//! per-prefix byte accounting follows, exactly as `Stats::bytes` counts.

/// What one successful write or delete charged and released, in the bytes
/// `Stats::bytes` counts (header + key + value): the new item's size, and the
/// size of the item it replaced or removed (0: none). Returned by the calls
/// that write or remove on a client's behalf (`Store::write`,
/// `Store::delete_charged`, `Store::invalidate_charged`,
/// `Store::arith_charged`), so per-prefix accounting can follow the store
/// exactly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Charge {
    pub written: u64,
    pub released: u64,
}

/// Bytes the store charges for an item with this key length, value length
/// and client flags (what `Stats::bytes` counts per item).
#[inline]
pub fn item_bytes(klen: usize, vlen: usize, flags: u32) -> u64 {
    crate::item::item_len(klen, vlen, flags) as u64
}
