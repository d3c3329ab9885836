//! A small JSON writer for campaign reports: the library has no serde by default, and a
//! report needs only objects, arrays, strings, numbers, booleans and null.

use std::fmt::Write;

/// Builds one compact JSON document. Callers add keys and values in order; commas are
/// placed by the writer.
#[derive(Default)]
pub(crate) struct Json {
    out: String,
    /// Per open container: whether it has an element yet.
    first: Vec<bool>,
}

impl Json {
    pub(crate) fn new() -> Json {
        Json::default()
    }

    fn sep(&mut self) {
        if let Some(first) = self.first.last_mut() {
            if !*first {
                self.out.push(',');
            }
            *first = false;
        }
    }

    /// Starts an object as the next value.
    pub(crate) fn begin_object(&mut self) -> &mut Self {
        self.sep();
        self.out.push('{');
        self.first.push(true);
        self
    }

    pub(crate) fn end_object(&mut self) -> &mut Self {
        self.first.pop();
        self.out.push('}');
        self
    }

    /// Starts an array as the next value.
    pub(crate) fn begin_array(&mut self) -> &mut Self {
        self.sep();
        self.out.push('[');
        self.first.push(true);
        self
    }

    pub(crate) fn end_array(&mut self) -> &mut Self {
        self.first.pop();
        self.out.push(']');
        self
    }

    /// Writes `"key":`; the next call writes its value.
    pub(crate) fn key(&mut self, key: &str) -> &mut Self {
        self.sep();
        escape(&mut self.out, key);
        self.out.push(':');
        // The value that follows must not get a comma of its own.
        if let Some(first) = self.first.last_mut() {
            *first = true;
        }
        self
    }

    pub(crate) fn str(&mut self, s: &str) -> &mut Self {
        self.sep();
        escape(&mut self.out, s);
        self
    }

    pub(crate) fn u64(&mut self, n: u64) -> &mut Self {
        self.sep();
        let _ = write!(self.out, "{n}");
        self
    }

    /// A finite float in Rust's shortest round-trip form; NaN and infinities (not JSON)
    /// are written as the strings `"NaN"`, `"inf"`, `"-inf"`.
    pub(crate) fn f64(&mut self, x: f64) -> &mut Self {
        self.sep();
        if x.is_finite() {
            let _ = write!(self.out, "{x:?}");
        } else {
            escape(&mut self.out, &format!("{x}"));
        }
        self
    }

    pub(crate) fn bool(&mut self, b: bool) -> &mut Self {
        self.sep();
        self.out.push_str(if b { "true" } else { "false" });
        self
    }

    pub(crate) fn null(&mut self) -> &mut Self {
        self.sep();
        self.out.push_str("null");
        self
    }

    pub(crate) fn finish(self) -> String {
        self.out
    }
}

/// Appends `s` as a JSON string literal.
pub(crate) fn escape(out: &mut String, s: &str) {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_compact_json() {
        let mut j = Json::new();
        j.begin_object();
        j.key("a").u64(1);
        j.key("b").begin_array();
        j.str("x\"\n\u{1}").f64(0.5).f64(f64::NAN).bool(true).null();
        j.end_array();
        j.key("c").begin_object().end_object();
        j.end_object();
        assert_eq!(
            j.finish(),
            r#"{"a":1,"b":["x\"\n\u0001",0.5,"NaN",true,null],"c":{}}"#
        );
    }
}
