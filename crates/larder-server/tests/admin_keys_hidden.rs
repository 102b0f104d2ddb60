//! `-X` (memcached's "no key dumps": `stats cachedump` and metadump are
//! refused) hides key names everywhere larder lists keys: `stats bigkeys`,
//! `stats hotkeys`, the admin listener's `/api/v1/keys` and so the
//! dashboard. Sizes, prefixes, counts and TTLs remain. Without `-X` the
//! same listings name the keys (the control).

mod admin_http;

use admin_http::get;
use larder_testkit::Larder;

const SECRET: &str = "session:alice@example.com";
const PLAIN: &str = "nodelimiterkey";

/// A server with a big key and a hot key under `SECRET`, and an
/// unprefixed big one; its `stats bigkeys`, `stats hotkeys` and
/// `/api/v1/keys`.
fn listings(extra: &[&str]) -> (String, String, String) {
    let mut args = vec!["-o", "bigkeys_min_size=100"];
    args.extend_from_slice(extra);
    let (l, mport) = Larder::start_with_admin(&args);
    let mut c = l.connect();
    let value = "v".repeat(5000);
    for key in [SECRET, PLAIN] {
        c.expect(format!("set {key} 0 600 {}\r\n{value}\r\n", value.len()).as_bytes(), b"STORED\r\n");
    }
    for _ in 0..50 {
        c.send(format!("get {SECRET}\r\n").as_bytes());
        c.read_until(b"END\r\n");
    }
    c.send(format!("get {PLAIN}\r\n").as_bytes());
    c.read_until(b"END\r\n");
    let stats = |c: &mut larder_testkit::Client, what: &str| {
        c.send(format!("stats {what}\r\n").as_bytes());
        String::from_utf8(c.read_until(b"END\r\n")).unwrap()
    };
    let big = stats(&mut c, "bigkeys");
    let hot = stats(&mut c, "hotkeys");
    let keys = get(mport, "/api/v1/keys");
    assert_eq!(keys.status, 200);
    (big, hot, keys.text())
}

#[test]
fn without_x_the_listings_name_the_keys() {
    let (big, hot, keys) = listings(&[]);
    assert!(big.contains(&format!("STAT bigkey:1:key {SECRET}\r\n")) || big.contains(&format!("STAT bigkey:2:key {SECRET}\r\n")), "{big}");
    assert!(hot.contains(&format!("STAT hotkey:requests:1:key {SECRET}\r\n")), "{hot}");
    assert!(keys.contains(&format!("\"key\":\"{SECRET}\"")) && keys.contains("\"key_names\":\"shown\""), "{keys}");
}

#[test]
fn x_hides_key_names_but_keeps_sizes_prefixes_and_counts() {
    let (big, hot, keys) = listings(&["-X"]);
    for (what, text) in [("stats bigkeys", &big), ("stats hotkeys", &hot), ("/api/v1/keys", &keys)] {
        assert!(!text.contains("alice") && !text.contains(PLAIN), "{what} names a key: {text}");
    }
    // stats bigkeys: no key lines; sizes, the prefix, TTLs and the count remain.
    assert!(!big.contains(":key "), "{big}");
    assert!(big.contains("STAT bigkey:1:size ") && big.contains("STAT bigkey:2:size "), "{big}");
    assert!(big.contains(":prefix session\r\n") && big.contains(":ttl ") && big.contains("STAT bigkeys_tracked 2\r\n"), "{big}");
    // stats hotkeys: the prefix in place of the key, counts kept.
    assert!(!hot.contains(":key "), "{hot}");
    assert!(hot.contains("STAT hotkey:requests:1:prefix session\r\nSTAT hotkey:requests:1:count 50\r\n"), "{hot}");
    assert!(hot.contains("STAT hotkey:bytes:1:prefix session\r\n") && hot.contains("STAT hotkeys_requests 51\r\n"), "{hot}");
    // /api/v1/keys: key null, the rest as before.
    assert!(keys.contains("\"key_names\":\"hidden\""), "{keys}");
    assert!(!keys.contains("\"key\":\""), "{keys}");
    assert_eq!(keys.matches("\"key\":null").count(), keys.matches("\"size\":").count(), "{keys}");
    assert!(keys.contains("\"prefix\":\"session\"") && keys.contains("\"count\":50"), "{keys}");
    // The page says "(hidden)" for a null key.
    let (_server, mport) = Larder::start_with_admin(&["-X"]);
    let js = get(mport, "/dashboard.js").text();
    assert!(js.contains("r.key === null ? \"(hidden)\""), "dashboard.js does not show hidden keys as (hidden)");
}
