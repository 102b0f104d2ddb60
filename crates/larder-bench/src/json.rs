//! A minimal JSON writer for the machine-readable results.
//!
//! The tool only ever writes JSON (results are passed between the runner and the report in
//! memory), so a 60-line writer replaces a serde + serde_json dependency.

use std::fmt::Write;

/// Builds one JSON object; nested objects and arrays are passed in as already-built strings.
#[derive(Default)]
pub struct Obj {
    buf: String,
}

impl Obj {
    pub fn new() -> Obj {
        Obj { buf: String::from("{") }
    }

    fn key(&mut self, k: &str) {
        if self.buf.len() > 1 {
            self.buf.push(',');
        }
        self.buf.push_str(&string(k));
        self.buf.push(':');
    }

    pub fn str(mut self, k: &str, v: &str) -> Obj {
        self.key(k);
        self.buf.push_str(&string(v));
        self
    }

    pub fn num(mut self, k: &str, v: f64) -> Obj {
        self.key(k);
        self.buf.push_str(&number(v));
        self
    }

    pub fn int(mut self, k: &str, v: u64) -> Obj {
        self.key(k);
        let _ = write!(self.buf, "{v}");
        self
    }

    pub fn raw(mut self, k: &str, json: &str) -> Obj {
        self.key(k);
        self.buf.push_str(json);
        self
    }

    pub fn build(mut self) -> String {
        self.buf.push('}');
        self.buf
    }
}

/// A JSON array of already-encoded values.
pub fn array(items: &[String]) -> String {
    format!("[{}]", items.join(","))
}

pub fn number(v: f64) -> String {
    if v.is_finite() {
        let s = format!("{v}");
        s
    } else {
        "null".into()
    }
}

pub fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_objects() {
        let inner = Obj::new().int("a", 1).build();
        let o = Obj::new().str("s", "x\"y\n").num("f", 1.5).num("nan", f64::NAN).raw("o", &inner).raw("l", &array(&["1".into(), "2".into()])).build();
        assert_eq!(o, r#"{"s":"x\"y\n","f":1.5,"nan":null,"o":{"a":1},"l":[1,2]}"#);
    }
}
