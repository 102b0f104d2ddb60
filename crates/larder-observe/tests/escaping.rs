//! Issue 12, item 6: every renderer that prints a key or prefix escapes it
//! (`larder_observe::escape`), so keys holding any byte (binary protocol,
//! meta `b`) cannot forge lines; `larder top` and `/metrics` read and show
//! them safely.

use larder_observe::bigkeys::BigKeys;
use larder_observe::escape::{escape_key, unescape};
use larder_observe::hotkeys::HotKeys;
use larder_observe::prefix::{PrefixConfig, PrefixStats};
use larder_observe::prometheus::Exposition;
use larder_observe::top::{display_key, parse_stats, render, Sample};

const FORGE: &[u8] = b"\r\nSTAT forged 1\r\nEND\r\n";

/// Hostile keys: the payload in the prefix, a space, `%`, a NUL, a
/// terminal escape, bytes >= 0x80, and one of every byte.
fn hostile_keys() -> Vec<Vec<u8>> {
    let mut every: Vec<u8> = (0..=255u8).filter(|&b| b != b':').collect();
    every.truncate(200);
    every.extend_from_slice(b":all");
    vec![
        [&b"p"[..], FORGE, b":k 1%"].concat(),
        b"esc\x1b[2J\x00:x\xff\xc2\x9b".to_vec(),
        b"100%:x".to_vec(),
        "caf\u{e9}:1".as_bytes().to_vec(),
        every,
    ]
}

fn prefix_of(k: &[u8]) -> &[u8] {
    &k[..k.iter().position(|&b| b == b':').unwrap()]
}

/// Lines of a reply: CRLF only, printable ASCII, exactly one `END` (last),
/// no forged line. Returns the lines before `END`.
fn checked_lines(reply: &[u8]) -> Vec<String> {
    let text = std::str::from_utf8(reply).expect("ASCII reply");
    assert!(text.ends_with("END\r\n"), "{text:?}");
    let lines: Vec<&str> = text[..text.len() - 2].split("\r\n").collect();
    for l in &lines {
        assert!(l.bytes().all(|b| (0x20..0x7f).contains(&b)), "control byte in {l:?}");
        assert!(!l.contains("STAT forged"), "forged line {l:?}");
    }
    assert_eq!(lines.iter().filter(|l| **l == "END").count(), 1, "{text:?}");
    lines[..lines.len() - 1].iter().map(|s| s.to_string()).collect()
}

/// `STAT <name> <value>` lines with exactly three words.
fn stat_pairs(reply: &[u8]) -> Vec<(String, String)> {
    checked_lines(reply)
        .iter()
        .map(|l| {
            let w: Vec<&str> = l.split(' ').collect();
            assert!(w.len() == 3 && w[0] == "STAT" && !w[1].is_empty() && !w[2].is_empty(), "malformed {l:?}");
            (w[1].to_string(), w[2].to_string())
        })
        .collect()
}

fn dec(s: &str) -> Vec<u8> {
    unescape(s.as_bytes()).unwrap_or_else(|| panic!("bad escape {s:?}"))
}

#[test]
fn detail_dump_and_prefixes_escape_prefixes() {
    let st = PrefixStats::new(PrefixConfig::default());
    st.set_detail(true);
    let mut w = st.worker();
    let keys = hostile_keys();
    for k in &keys {
        w.on_set(k, 100, None);
        w.on_get(k, true, 10);
    }
    w.on_set(b"user:1", 10, None);

    let mut out = Vec::new();
    st.render_detail_dump(&mut out);
    let rows = checked_lines(&out);
    let mut names = Vec::new();
    for l in &rows {
        let w: Vec<&str> = l.split(' ').collect();
        assert!(w.len() == 10 && w[0] == "PREFIX" && w[2] == "get" && w[4] == "hit" && w[6] == "set" && w[8] == "del", "{l:?}");
        names.push(dec(w[1]));
    }
    for k in &keys {
        assert!(names.iter().any(|n| n == prefix_of(k)), "{:?} missing: {rows:?}", prefix_of(k));
    }
    assert!(rows.contains(&"PREFIX user get 0 hit 0 set 1 del 0".to_string()), "ordinary prefix as memcached prints it: {rows:?}");
    assert!(rows.contains(&"PREFIX 100%25 get 1 hit 1 set 1 del 0".to_string()), "{rows:?}");

    let mut out = Vec::new();
    st.render_prefixes(&mut out);
    let pairs = stat_pairs(&out);
    let listed: Vec<Vec<u8>> =
        pairs.iter().filter_map(|(n, _)| n.strip_prefix("prefix:")?.strip_suffix(":items")).map(dec).collect();
    for k in &keys {
        assert!(listed.iter().any(|n| n == prefix_of(k)), "{:?} missing: {pairs:?}", prefix_of(k));
    }
    assert!(pairs.iter().any(|(n, v)| n == "prefix:user:items" && v == "1"), "{pairs:?}");
}

#[test]
fn hotkeys_escape_keys() {
    let hk = HotKeys::new(64, 60);
    let mut w = hk.worker();
    let keys = hostile_keys();
    for k in &keys {
        w.on_request(k, 100, 1000);
    }
    w.on_request(b"user:1", 5, 1000);
    let mut out = Vec::new();
    hk.render(&mut out, 1001, 20);
    let pairs = stat_pairs(&out);
    let listed: Vec<Vec<u8>> = pairs.iter().filter(|(n, _)| n.starts_with("hotkey:requests:") && n.ends_with(":key")).map(|(_, v)| dec(v)).collect();
    for k in &keys {
        assert!(listed.contains(k), "{k:?} missing: {pairs:?}");
    }
    assert!(pairs.iter().any(|(n, v)| n.ends_with(":key") && v == "user:1"), "{pairs:?}");
}

#[test]
fn bigkeys_escape_keys_and_prefixes() {
    let bk = BigKeys::new(20, 1);
    let keys = hostile_keys();
    for (i, k) in keys.iter().enumerate() {
        bk.on_store(k, 1000 + i as u64, 100, 0);
    }
    bk.on_store(b"user:1", 10, 100, 0);
    let mut out = Vec::new();
    bk.render(&mut out, 110, b':', |_, _| true);
    let pairs = stat_pairs(&out);
    let listed: Vec<Vec<u8>> = pairs.iter().filter(|(n, _)| n.ends_with(":key")).map(|(_, v)| dec(v)).collect();
    let prefixes: Vec<Vec<u8>> = pairs.iter().filter(|(n, _)| n.ends_with(":prefix")).map(|(_, v)| dec(v)).collect();
    for k in &keys {
        assert!(listed.contains(k), "{k:?} missing: {pairs:?}");
        assert!(prefixes.iter().any(|p| p == prefix_of(k)), "{:?} missing: {pairs:?}", prefix_of(k));
    }
    assert!(pairs.iter().any(|(n, v)| n.ends_with(":key") && v == "user:1"), "{pairs:?}");
    assert!(pairs.iter().any(|(n, v)| n.ends_with(":prefix") && v == "user"), "{pairs:?}");
}

/// `larder top` reads the escaped listings and shows every key either
/// decoded (when printable) or as sent: no control byte reaches the screen.
#[test]
fn top_shows_escaped_keys_safely() {
    let keys = hostile_keys();
    let st = PrefixStats::new(PrefixConfig::default());
    let mut w = st.worker();
    let hk = HotKeys::new(64, 60);
    let mut hw = hk.worker();
    let bk = BigKeys::new(20, 1);
    for (i, k) in keys.iter().enumerate() {
        w.on_set(k, 1000 + i as u64, None);
        hw.on_request(k, 100, 1000);
        bk.on_store(k, 1000 + i as u64, 990, 0);
    }
    // a real prefix named like top's label for the `other` fold stays a row
    // of its own
    w.on_set(b"(other):1", 5, None);
    let (mut p, mut h, mut b) = (Vec::new(), Vec::new(), Vec::new());
    st.render_prefixes(&mut p);
    hk.render(&mut h, 1001, 20);
    bk.render(&mut b, 1000, b':', |_, _| true);
    let mut s = Sample { at: 1.0, ..Default::default() };
    s.set_prefixes(&parse_stats(std::str::from_utf8(&p).unwrap()));
    s.set_hotkeys(&parse_stats(std::str::from_utf8(&h).unwrap()));
    s.set_bigkeys(&parse_stats(std::str::from_utf8(&b).unwrap()));

    let rows = s.prefixes.as_ref().unwrap();
    assert_eq!(rows.len(), keys.len() + 1, "{rows:?}");
    assert!(rows.iter().any(|r| r.name == "caf\u{e9}"), "printable UTF-8 shown decoded: {rows:?}");
    assert!(rows.iter().any(|r| r.name == "100%"), "{rows:?}");
    assert!(rows.iter().any(|r| r.name == "p%0D%0ASTAT%20forged%201%0D%0AEND%0D%0A"), "{rows:?}");
    assert!(rows.iter().any(|r| r.name == "(other)" && r.id == "prefix:(other)"), "{rows:?}");
    assert_eq!(s.hot_requests.as_ref().unwrap().len(), keys.len());
    assert_eq!(s.big.as_ref().unwrap().len(), keys.len());
    assert!(s.big.as_ref().unwrap().iter().any(|k| k.key == "caf\u{e9}:1"));

    let screen = render(&s, None, "h:1", 50);
    assert!(!screen.chars().any(|c| c.is_control() && c != '\n'), "{screen:?}");
    assert!(!screen.lines().any(|l| l.starts_with("STAT") || l.starts_with("END")), "{screen}");

    assert_eq!(display_key("user:1"), "user:1");
    assert_eq!(display_key("a%20b"), "a%20b");
    assert_eq!(display_key("x%1B%5B2J"), "x%1B%5B2J");
    assert_eq!(display_key("x%C2%9B"), "x%C2%9B", "C1 control stays escaped");
    assert_eq!(display_key("%FF"), "%FF", "not UTF-8 stays escaped");
    assert_eq!(display_key("%zz"), "%zz");
}

/// `/metrics`: a prefix label is the escaped prefix (distinct prefixes,
/// distinct labels; nothing can pose as `#other`), and the exposition's
/// own label escaping still applies.
#[test]
fn prometheus_prefix_labels() {
    let st = PrefixStats::new(PrefixConfig::default());
    let mut w = st.worker();
    w.on_set(b"a\xff:1", 10, None);
    w.on_set(b"a\xfe:1", 10, None);
    w.on_set(b"#other:1", 10, None);
    w.on_set(b"q\"\\\n:1", 10, None);
    w.on_set(b"user:1", 10, None);
    let mut e = Exposition::new();
    st.write_prometheus(&mut e, 100);
    let text = e.finish();
    let items: Vec<&str> = text.lines().filter(|l| l.starts_with("larder_prefix_items{")).collect();
    for want in [
        r##"larder_prefix_items{prefix="a%FF"} 1"##,
        r##"larder_prefix_items{prefix="a%FE"} 1"##,
        r##"larder_prefix_items{prefix="%23other"} 1"##,
        r##"larder_prefix_items{prefix="q\"\\%0A"} 1"##,
        r##"larder_prefix_items{prefix="user"} 1"##,
        r##"larder_prefix_items{prefix="#other"} 0"##,
        r##"larder_prefix_items{prefix="#unprefixed"} 0"##,
    ] {
        assert!(items.contains(&want), "{want} not in {items:#?}");
    }
    assert_eq!(items.len(), 7, "{items:#?}");
    let mut e = Vec::new();
    escape_key(&mut e, b"q\"\\\n");
    assert_eq!(e, b"q\"\\%0A");
}
