//! Text that goes into JUnit XML and into table cells (plain or Markdown), escaped so
//! that any test name or message fits: shared by `fprev campaign merge` and
//! `cargo fprev test`.

/// `c` as a text escape (`\x00`, `\u{fffe}`), for characters a format cannot carry.
fn char_escape(c: char) -> String {
    if (c as u32) < 0x100 {
        format!("\\x{:02x}", c as u32)
    } else {
        format!("\\u{{{:x}}}", c as u32)
    }
}

/// `s` escaped for XML 1.0 text (`attr` false) or a double-quoted attribute value (true).
/// XML 1.0 cannot carry control characters other than tab, line feed and carriage return,
/// nor U+FFFE and U+FFFF, even as character references: those are written as text
/// escapes. Line ends in attributes, and carriage returns anywhere, are character
/// references, which parsers do not normalize away.
pub(crate) fn xml(s: &str, attr: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\r' => out.push_str("&#13;"),
            '\n' if attr => out.push_str("&#10;"),
            '\t' if attr => out.push_str("&#9;"),
            '\n' | '\t' => out.push(c),
            c if c < ' ' || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push_str(&char_escape(c)),
            c => out.push(c),
        }
    }
    out
}

/// `s` as one cell of the table: in Markdown `|` is escaped and line ends become `<br>`
/// (either would end the cell or the row); control characters are text escapes.
pub(crate) fn cell(s: &str, markdown: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '|' if markdown => out.push_str("\\|"),
            '\r' | '\n' if markdown => {
                if c == '\r' && chars.peek() == Some(&'\n') {
                    chars.next();
                }
                out.push_str("<br>");
            }
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&char_escape(c)),
            c => out.push(c),
        }
    }
    out
}
