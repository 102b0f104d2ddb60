//! A minimal JSON writer for the dashboard's endpoints (no dependency: the
//! documents are small, flat and written in one place).
//!
//! Strings are escaped for JSON and, beyond what JSON requires, `<`, `>`,
//! `&` and U+2028/U+2029 are written as `\uXXXX`: a key holding
//! `</script>` stays inert even if a document is ever embedded in HTML.
//! Non-finite floats are written as `null`.

use std::fmt::Write as _;

/// Builds one JSON document; the caller writes structure in order and
/// `sep` places commas.
#[derive(Default)]
pub struct Json {
    out: String,
    /// Per open container: whether it already holds a member.
    nonempty: Vec<bool>,
    /// A key was written by `key_only`: the next value is its value, no comma.
    after_key: bool,
}

impl Json {
    pub fn new() -> Self {
        Json { out: String::with_capacity(16 * 1024), nonempty: Vec::new(), after_key: false }
    }

    fn sep(&mut self) {
        if std::mem::take(&mut self.after_key) {
            return;
        }
        if let Some(n) = self.nonempty.last_mut() {
            if *n {
                self.out.push(',');
            }
            *n = true;
        }
    }

    fn key(&mut self, k: &str) {
        self.sep();
        string(&mut self.out, k);
        self.out.push(':');
    }

    /// `{` as a value (in an array, or at the top).
    pub fn begin_obj(&mut self) {
        self.sep();
        self.out.push('{');
        self.nonempty.push(false);
    }

    /// `"k":{`.
    pub fn obj(&mut self, k: &str) {
        self.key(k);
        self.out.push('{');
        self.nonempty.push(false);
    }

    pub fn end_obj(&mut self) {
        self.nonempty.pop();
        self.out.push('}');
    }

    /// `[` as a value.
    pub fn begin_arr(&mut self) {
        self.sep();
        self.out.push('[');
        self.nonempty.push(false);
    }

    /// `"k":[`.
    pub fn arr(&mut self, k: &str) {
        self.key(k);
        self.out.push('[');
        self.nonempty.push(false);
    }

    pub fn end_arr(&mut self) {
        self.nonempty.pop();
        self.out.push(']');
    }

    pub fn u64(&mut self, k: &str, v: u64) {
        self.key(k);
        let _ = write!(self.out, "{v}");
    }

    pub fn i64(&mut self, k: &str, v: i64) {
        self.key(k);
        let _ = write!(self.out, "{v}");
    }

    pub fn f64(&mut self, k: &str, v: f64) {
        self.key(k);
        number(&mut self.out, v);
    }

    pub fn bool(&mut self, k: &str, v: bool) {
        self.key(k);
        self.out.push_str(if v { "true" } else { "false" });
    }

    pub fn str(&mut self, k: &str, v: &str) {
        self.key(k);
        string(&mut self.out, v);
    }

    /// `"k":` followed by a value written next (`begin_arr`, `begin_obj`).
    pub fn key_only(&mut self, k: &str) {
        self.key(k);
        self.after_key = true;
    }

    pub fn null(&mut self, k: &str) {
        self.key(k);
        self.out.push_str("null");
    }

    /// A number as an array element.
    pub fn elem_f64(&mut self, v: f64) {
        self.sep();
        number(&mut self.out, v);
    }

    /// An `f32` as an array element, in its shortest round-trip decimal
    /// (`213.98897`, not the `f64` widening's `213.9889678955078`).
    pub fn elem_f32(&mut self, v: f32) {
        self.sep();
        if v.is_finite() {
            let _ = write!(self.out, "{v}");
        } else {
            self.out.push_str("null");
        }
    }

    /// A string as an array element.
    pub fn elem_str(&mut self, v: &str) {
        self.sep();
        string(&mut self.out, v);
    }

    pub fn finish(self) -> String {
        self.out
    }
}

fn number(out: &mut String, v: f64) {
    if v.is_finite() {
        if v == v.trunc() && v.abs() < 9e15 {
            let _ = write!(out, "{}", v as i64);
        } else {
            let _ = write!(out, "{v}");
        }
    } else {
        out.push_str("null");
    }
}

/// Appends `s` as a JSON string literal (see the module docs).
pub fn string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || matches!(c, '<' | '>' | '&' | '\u{2028}' | '\u{2029}') => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structure_and_escapes() {
        let mut j = Json::new();
        j.begin_obj();
        j.u64("a", 1);
        j.str("k", "</script>\"\\\n\u{1}&");
        j.arr("xs");
        j.elem_f64(1.5);
        j.elem_f64(f64::NAN);
        j.begin_obj();
        j.bool("b", true);
        j.end_obj();
        j.end_arr();
        j.obj("o");
        j.end_obj();
        j.key_only("v");
        j.begin_arr();
        j.elem_f32(213.98897);
        j.end_arr();
        j.u64("z", 0);
        j.end_obj();
        assert_eq!(
            j.finish(),
            r#"{"a":1,"k":"\u003c/script\u003e\"\\\n\u0001\u0026","xs":[1.5,null,{"b":true}],"o":{},"v":[213.98897],"z":0}"#
        );
    }
}
