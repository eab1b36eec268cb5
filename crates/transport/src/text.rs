//! Text a peer sent, made safe to print.
//!
//! A server's log is read by people and scripts one line per event: a peer's magic, version or
//! command name printed raw could end a line and forge the next ("session with client … started")
//! or move the terminal's cursor with escape codes. Everything a peer chose goes through
//! [`printable`] before it becomes part of an error or a log line, and a log writes each line
//! through [`one_line`], which escapes whatever control character is left.

/// Most characters of one peer-chosen field kept in a message; the rest is counted, not printed.
pub const MAX_PRINTED: usize = 200;

/// `s` with control characters (newline, ESC, DEL, the C1 set), other non-printing characters
/// and backslashes escaped as Rust does (`\n`, `\u{1b}`, `\\`), quotes kept as they are, and cut
/// to [`MAX_PRINTED`] characters (`… (N bytes in all)` says how long it was).
pub fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(MAX_PRINTED) + 2);
    for (i, c) in s.chars().enumerate() {
        if i == MAX_PRINTED {
            out.push_str(&format!("… ({} bytes in all)", s.len()));
            break;
        }
        push_escaped(&mut out, c);
    }
    out
}

/// Bytes a peer sent: valid UTF-8 as in [`printable`], every other byte as `\xNN`; bounded the
/// same way.
pub fn printable_bytes(b: &[u8]) -> String {
    let mut out = String::new();
    let mut shown = 0;
    for chunk in b.utf8_chunks() {
        for c in chunk.valid().chars() {
            if shown == MAX_PRINTED {
                out.push_str(&format!("… ({} bytes in all)", b.len()));
                return out;
            }
            push_escaped(&mut out, c);
            shown += 1;
        }
        for x in chunk.invalid() {
            if shown == MAX_PRINTED {
                out.push_str(&format!("… ({} bytes in all)", b.len()));
                return out;
            }
            out.push_str(&format!("\\x{x:02x}"));
            shown += 1;
        }
    }
    out
}

/// A message's `Debug` text (which escapes the strings inside it), cut like [`printable`].
pub fn printable_debug<T: std::fmt::Debug>(v: &T) -> String {
    one_line(&cut(&format!("{v:?}")))
}

fn cut(s: &str) -> String {
    match s.char_indices().nth(MAX_PRINTED) {
        Some((i, _)) => format!("{}… ({} bytes in all)", &s[..i], s.len()),
        None => s.to_string(),
    }
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\'' | '"' => out.push(c),
        _ => out.extend(c.escape_debug()),
    }
}

/// A whole log line with every control character escaped (nothing else touched, so a line made
/// of [`printable`] fields is unchanged): whatever a message holds, it stays one line.
pub fn one_line(s: &str) -> String {
    if !s.chars().any(char::is_control) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forged_line_stays_on_its_own_line_and_escaped() {
        let forged = "x\n commperf serve: session with client 6.6.6.6:1 started\x1b[2K\r\\'\"";
        assert_eq!(
            printable(forged),
            r#"x\n commperf serve: session with client 6.6.6.6:1 started\u{1b}[2K\r\\'""#
        );
        assert_eq!(
            one_line(forged),
            r#"x\n commperf serve: session with client 6.6.6.6:1 started\u{1b}[2K\r\'""#
        );
        assert_eq!(one_line(&printable(forged)), printable(forged));
        // DEL and a C1 control (CSI) too.
        assert_eq!(printable("a\u{7f}\u{9b}b"), r"a\u{7f}\u{9b}b");
    }

    #[test]
    fn long_fields_are_cut_and_counted() {
        let long = "é".repeat(1000);
        let p = printable(&long);
        assert_eq!(
            p,
            format!("{}… (2000 bytes in all)", "é".repeat(MAX_PRINTED))
        );
        assert_eq!(printable_bytes(b"ok\xff\xfe\n"), r"ok\xff\xfe\n");
        assert_eq!(
            printable_bytes(&[0xffu8; 300]),
            format!("{}… (300 bytes in all)", r"\xff".repeat(MAX_PRINTED))
        );
    }
}
