//! Escaping text for SVG and HTML, which every figure ([`crate::plot`]) and the `app` page use.

/// Escapes text for SVG or HTML content and for double-quoted attribute values: `&`, `<`, `>`
/// and `"` become entities, so text from a command line or a program's output cannot open a
/// tag, an entity or close an attribute.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_is_escaped() {
        assert_eq!(
            esc(r#"<script>alert("x")</script> & co"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co"
        );
    }
}
