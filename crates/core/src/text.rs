//! Reading a file that must be text (a trace, a topology, a profile, a result file): one error
//! that names the file and, for a binary file, where its first byte that is not UTF-8 sits.

use std::path::Path;

/// Why a text file could not be read. The I/O error is part of the message, not a separate
/// source: a caller printing the whole chain must not print it twice.
#[derive(Debug, thiserror::Error)]
pub enum TextError {
    #[error("{path}: {error}")]
    Io { path: String, error: std::io::Error },
    #[error(
        "{path}:{line}:{column}: not a text file: byte {byte:#04x} (offset {offset}) is not \
         valid UTF-8"
    )]
    NotUtf8 {
        path: String,
        /// 1-based line and column (in characters) of the first invalid byte.
        line: usize,
        column: usize,
        /// Its offset in bytes from the start of the file.
        offset: usize,
        byte: u8,
    },
}

/// Reads `path` as UTF-8 text.
pub fn read_text(path: &Path) -> Result<String, TextError> {
    let name = || path.display().to_string();
    let bytes = std::fs::read(path).map_err(|error| TextError::Io {
        path: name(),
        error,
    })?;
    text_from_bytes(bytes, &name())
}

/// `bytes` as text; `name` is used in the error.
pub fn text_from_bytes(bytes: Vec<u8>, name: &str) -> Result<String, TextError> {
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let b = e.as_bytes();
        let before = &b[..offset];
        let line_start = before
            .iter()
            .rposition(|&c| c == b'\n')
            .map_or(0, |i| i + 1);
        // Everything before `offset` is valid UTF-8: characters are the bytes that do not
        // continue a sequence.
        let column = 1 + before[line_start..]
            .iter()
            .filter(|&&c| c & 0xC0 != 0x80)
            .count();
        TextError::NotUtf8 {
            path: name.to_string(),
            line: 1 + before.iter().filter(|&&c| c == b'\n').count(),
            column,
            offset,
            byte: b[offset],
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_invalid_byte_is_located() {
        let e = text_from_bytes(b"ok\nab\xc3\xa9c\xff\xfe".to_vec(), "t.goal").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.goal:2:5: not a text file: byte 0xff (offset 8) is not valid UTF-8"
        );
        let e = text_from_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00\xba".to_vec(), "ls").unwrap_err();
        assert_eq!(
            e.to_string(),
            "ls:1:11: not a text file: byte 0xba (offset 10) is not valid UTF-8"
        );
        assert_eq!(text_from_bytes(b"fine".to_vec(), "x").unwrap(), "fine");
        let e = read_text(Path::new("/nonexistent/x")).unwrap_err();
        assert!(e.to_string().starts_with("/nonexistent/x: "), "{e}");
        assert!(std::error::Error::source(&e).is_none(), "told once");
    }
}
