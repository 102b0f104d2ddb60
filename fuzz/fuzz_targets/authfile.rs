//! Fuzz the `-Y` authfile reader (`AuthFile::parse`): any bytes parse or
//! are refused, never panic, the same way every time. With the first byte
//! odd, the rest describes well-formed entries instead: the file made of
//! them (`user:password` lines) must parse, and every entry must
//! authenticate, and a wrong password must not.
#![no_main]

use larder_server::auth::authfile::AuthFile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let parsed = AuthFile::parse(rest);
    assert_eq!(parsed, AuthFile::parse(rest), "deterministic");
    if pick & 1 == 0 {
        if let Some(file) = parsed {
            // Checking any credentials against any file is harmless.
            let (user, pass) = rest.split_at(rest.len() / 2);
            let _ = file.check(user, pass);
        }
        return;
    }
    // Entries: up to 8, separated by '\n' in the input; the user is what
    // comes before the first ':', the password the rest of that piece.
    // Users lose ':' and NUL, passwords '\r' and NUL; lines stay short.
    let mut entries: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for piece in rest.split(|&b| b == b'\n').take(8) {
        let (user, pass) = match piece.iter().position(|&b| b == b':') {
            Some(i) => (&piece[..i], &piece[i + 1..]),
            None => (piece, &[][..]),
        };
        let user: Vec<u8> = user.iter().copied().filter(|&b| b != b':' && b != 0).take(100).collect();
        let pass: Vec<u8> = pass.iter().copied().filter(|&b| b != b'\r' && b != 0).take(100).collect();
        entries.push((user, pass));
    }
    let mut file = Vec::new();
    for (user, pass) in &entries {
        file.extend_from_slice(user);
        file.push(b':');
        file.extend_from_slice(pass);
        file.push(b'\n');
    }
    let Some(auth) = AuthFile::parse(&file) else {
        panic!("well-formed file refused: {:?}", String::from_utf8_lossy(&file))
    };
    for (user, pass) in &entries {
        assert!(auth.check(user, pass), "entry {:?}:{:?} does not authenticate", String::from_utf8_lossy(user), String::from_utf8_lossy(pass));
        let mut wrong = pass.clone();
        wrong.push(b'!');
        if !entries.iter().any(|(u, p)| u == user && *p == wrong) {
            assert!(!auth.check(user, &wrong), "a wrong password authenticates");
        }
    }
});
