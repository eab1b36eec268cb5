//! One table, three renderers: aligned text, Markdown pipe table, CSV.
//!
//! Exporters decide *what* goes in the cells (already formatted strings); this module only decides
//! how a grid of strings is laid out, so every format agrees on columns and order.

use std::fmt::Write as _;

/// How a column's cells are aligned in the text and Markdown renderers (CSV is unaligned).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Labels and key columns.
    Left,
    /// Numbers, so that digits of the same weight line up.
    Right,
}

/// A grid of already-formatted cells under named, aligned columns.
///
/// Rows shorter than the header are padded with empty cells; cells beyond the last header are
/// rendered under an empty, left-aligned header rather than dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    headers: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// An empty table without columns.
    pub fn new() -> Table {
        Table::default()
    }

    /// Adds a column (builder style).
    pub fn column(mut self, header: impl Into<String>, align: Align) -> Table {
        self.headers.push(header.into());
        self.align.push(align);
        self
    }

    /// Appends one row of cells, in column order.
    pub fn push_row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn headers(&self) -> &[String] {
        &self.headers
    }

    pub fn rows(&self) -> &[Vec<String>] {
        &self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    fn ncols(&self) -> usize {
        self.rows
            .iter()
            .map(Vec::len)
            .fold(self.headers.len(), usize::max)
    }

    fn header(&self, c: usize) -> &str {
        self.headers.get(c).map_or("", String::as_str)
    }

    fn align(&self, c: usize) -> Align {
        self.align.get(c).copied().unwrap_or(Align::Left)
    }

    /// Width of each column in characters, counting `header_prefix` as part of the first header.
    fn widths(&self, header_prefix: &str, escape: fn(&str) -> String) -> Vec<usize> {
        (0..self.ncols())
            .map(|c| {
                let mut w = escape(self.header(c)).chars().count();
                if c == 0 {
                    w += header_prefix.chars().count();
                }
                for row in &self.rows {
                    w = w.max(row.get(c).map_or(0, |s| escape(s).chars().count()));
                }
                w
            })
            .collect()
    }

    /// Aligned plain text: columns separated by two spaces, no trailing spaces, one line per row,
    /// each ending in `\n`. `header_prefix` (e.g. `"# "`, which makes the header a comment for
    /// gnuplot and friends, OSU style) is written before the first header and counts toward the
    /// first column's width.
    pub fn render_text(&self, header_prefix: &str) -> String {
        let widths = self.widths(header_prefix, |s| s.to_string());
        let mut out = String::new();
        let header: Vec<String> = (0..widths.len())
            .map(|c| {
                if c == 0 {
                    format!("{header_prefix}{}", self.header(0))
                } else {
                    self.header(c).to_string()
                }
            })
            .collect();
        self.text_line(&mut out, &header, &widths);
        for row in &self.rows {
            self.text_line(&mut out, row, &widths);
        }
        out
    }

    fn text_line(&self, out: &mut String, cells: &[String], widths: &[usize]) {
        let mut line = String::new();
        for (c, &w) in widths.iter().enumerate() {
            if c > 0 {
                line.push_str("  ");
            }
            pad(
                &mut line,
                cells.get(c).map_or("", String::as_str),
                w,
                self.align(c),
            );
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }

    /// A Markdown (GitHub-flavoured) pipe table with alignment markers, padded so the source is
    /// readable too. `|` in cells is escaped and line breaks become spaces.
    pub fn render_markdown(&self) -> String {
        // At least 3 wide so the delimiter row (`:--`, `--:`) is valid.
        let widths: Vec<usize> = self
            .widths("", md_escape)
            .into_iter()
            .map(|w| w.max(3))
            .collect();
        let mut out = String::new();
        let header: Vec<String> = (0..widths.len())
            .map(|c| self.header(c).to_string())
            .collect();
        self.md_line(&mut out, &header, &widths);
        out.push('|');
        for (c, &w) in widths.iter().enumerate() {
            let dashes = "-".repeat(w - 1);
            match self.align(c) {
                Align::Left => write!(out, " :{dashes} |"),
                Align::Right => write!(out, " {dashes}: |"),
            }
            .expect("writing to a String cannot fail");
        }
        out.push('\n');
        for row in &self.rows {
            self.md_line(&mut out, row, &widths);
        }
        out
    }

    fn md_line(&self, out: &mut String, cells: &[String], widths: &[usize]) {
        out.push('|');
        for (c, &w) in widths.iter().enumerate() {
            out.push(' ');
            let cell = md_escape(cells.get(c).map_or("", String::as_str));
            pad(out, &cell, w, self.align(c));
            out.push_str(" |");
        }
        out.push('\n');
    }

    /// CSV: a header record then one record per row, fields separated by `,`, records ended by
    /// `\n`. Fields containing `,`, `"`, CR or LF are quoted as RFC 4180 says (enclosed in `"`,
    /// inner `"` doubled); others are written as they are.
    pub fn render_csv(&self) -> String {
        let n = self.ncols();
        let mut out = String::new();
        let header: Vec<String> = (0..n).map(|c| self.header(c).to_string()).collect();
        csv_record(&mut out, &header, n);
        for row in &self.rows {
            csv_record(&mut out, row, n);
        }
        out
    }
}

fn pad(out: &mut String, s: &str, width: usize, align: Align) {
    let fill = width.saturating_sub(s.chars().count());
    let spaces = " ".repeat(fill);
    if align == Align::Right {
        out.push_str(&spaces);
    }
    out.push_str(s);
    if align == Align::Left {
        out.push_str(&spaces);
    }
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|").replace(['\r', '\n'], " ")
}

fn csv_record(out: &mut String, cells: &[String], n: usize) {
    for c in 0..n {
        if c > 0 {
            out.push(',');
        }
        let s = cells.get(c).map_or("", String::as_str);
        if s.contains([',', '"', '\r', '\n']) {
            out.push('"');
            out.push_str(&s.replace('"', "\"\""));
            out.push('"');
        } else {
            out.push_str(s);
        }
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Table {
        let mut t = Table::new()
            .column("Name", Align::Left)
            .column("Value", Align::Right);
        t.push_row(vec!["a".into(), "1.5".into()]);
        t.push_row(vec!["longer".into(), "12345.25".into()]);
        t
    }

    #[test]
    fn text_aligns_numbers_right_and_trims_trailing_space() {
        assert_eq!(
            sample().render_text(""),
            "Name       Value\n\
             a            1.5\n\
             longer  12345.25\n"
        );
        // The prefix belongs to the first column, and widens it when it must.
        assert_eq!(
            sample().render_text("# "),
            "# Name     Value\n\
             a            1.5\n\
             longer  12345.25\n"
        );
        assert_eq!(
            sample().render_text("### "),
            "### Name     Value\n\
             a              1.5\n\
             longer    12345.25\n"
        );
    }

    #[test]
    fn markdown_has_alignment_row_and_escapes_pipes() {
        let mut t = sample();
        t.push_row(vec!["x|y".into(), "2".into()]);
        assert_eq!(
            t.render_markdown(),
            "| Name   |    Value |\n\
             | :----- | -------: |\n\
             | a      |      1.5 |\n\
             | longer | 12345.25 |\n\
             | x\\|y   |        2 |\n"
        );
    }

    #[test]
    fn csv_quotes_only_what_rfc_4180_requires() {
        let mut t = Table::new()
            .column("k", Align::Left)
            .column("v", Align::Right);
        t.push_row(vec!["plain".into(), "1".into()]);
        t.push_row(vec!["a,b".into(), "say \"hi\"".into()]);
        t.push_row(vec!["two\nlines".into()]);
        assert_eq!(
            t.render_csv(),
            "k,v\nplain,1\n\"a,b\",\"say \"\"hi\"\"\"\n\"two\nlines\",\n"
        );
    }

    #[test]
    fn ragged_rows_are_padded_not_dropped() {
        let mut t = Table::new().column("a", Align::Left);
        t.push_row(vec!["1".into(), "extra".into()]);
        t.push_row(vec![]);
        assert_eq!(t.render_text(""), "a\n1  extra\n\n");
        assert_eq!(t.render_csv(), "a,\n1,extra\n,\n");
    }
}
