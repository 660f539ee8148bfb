//! The one output layer every rendering stands on: the [`Render`] trait (a value to text),
//! the formats of each family of output (`run`'s report, `check`, `hotspots`, `bench`'s
//! exports: one `Format` enum each, the command line's too), the one Markdown cell escaper
//! ([`markdown_cell`]) and code-span text ([`markdown_code`]), the one HTML escaper
//! ([`html`], maud's: pages are written with maud templates, which escape every value
//! through the same function), the HTML page shell with its stylesheet
//! (`assets/report.css`, [`page`]), and the hand-written SVG charts ([`svg`]).
//!
//! Must not: know what a report, a check or a comparison is (the renderers of each family
//! live with the family: `report`, `check::render`, `bench::export`, `hotspots::render`);
//! depend on the clock or on hash order (the same value renders to the same bytes).

pub(crate) mod page;
pub(crate) mod svg;

use clap::ValueEnum;

/// One rendering of a `T`, as text: every renderer of every family implements it.
pub trait Render<T: ?Sized> {
    fn render(&self, value: &T) -> String;
}

/// A value as pretty JSON with a final newline: the JSON rendering of every family.
pub(crate) struct Json;

impl<T: serde::Serialize + ?Sized> Render<T> for Json {
    fn render(&self, value: &T) -> String {
        // Plain data with string keys always serialises (NaN is written as null).
        serde_json::to_string_pretty(value).unwrap_or_default() + "\n"
    }
}

/// The formats a run's report renders to (`cargo optimize report --format`).
#[derive(Debug, Clone, Copy, ValueEnum, Default, PartialEq, Eq)]
pub enum ReportFormat {
    /// The ladder as the run printed it (without colour).
    #[default]
    Term,
    /// report.json itself.
    Json,
    /// GitHub-flavoured Markdown.
    #[value(name = "md")]
    Markdown,
    /// One self-contained HTML page with charts.
    Html,
}

/// `cargo optimize check --format`.
#[derive(Debug, Clone, Copy, ValueEnum, Default, PartialEq, Eq)]
pub enum CheckFormat {
    /// A table for the terminal.
    #[default]
    Term,
    /// check.json.
    Json,
    /// GitHub-flavoured Markdown (a PR comment, $GITHUB_STEP_SUMMARY).
    #[value(name = "md")]
    Markdown,
    /// GitHub Actions annotations (::error, ::warning, ::notice).
    Github,
}

/// `cargo optimize hotspots --format`.
#[derive(Debug, Clone, Copy, ValueEnum, Default, PartialEq, Eq)]
pub enum HotspotsFormat {
    /// Tables for the terminal.
    #[default]
    Term,
    /// The ranking as JSON.
    Json,
    /// GitHub-flavoured Markdown tables.
    #[value(name = "md")]
    Markdown,
}

/// The files `cargo optimize bench` exports (`--export-json`, `--export-markdown`,
/// `--export-csv`, `--export-html`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Json,
    Markdown,
    Csv,
    Html,
}

/// Text for a Markdown table cell or list item: one line (each line trimmed, empty ones
/// dropped, joined by a space), `|` escaped, and outside code spans `<`, `>` and `&` as
/// entities (GitHub renders raw HTML in Markdown; inside a code span an entity would show as
/// written), `\\`, `![` and every backtick that opens no span backslash-escaped.
///
/// A code span is found as CommonMark finds one: a run of backticks closed by the next run
/// of the same length; a run without one is text, escaped, so it cannot pair with a backtick
/// after the cell (another cell's code span) and turn that span's text into raw HTML.
pub(crate) fn markdown_cell(s: &str) -> String {
    let flat = s
        .split(['\n', '\r'])
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = String::with_capacity(flat.len() + 16);
    let mut rest = flat.as_str();
    while let Some(c) = rest.chars().next() {
        if c == '`' {
            let run = rest.len() - rest.trim_start_matches('`').len();
            match closing_run(&rest[run..], run) {
                Some(end) => {
                    let span = &rest[..run + end + run];
                    out.push_str(&span.replace('|', "\\|"));
                    rest = &rest[span.len()..];
                }
                None => {
                    out.push_str(&"\\`".repeat(run));
                    rest = &rest[run..];
                }
            }
            continue;
        }
        match c {
            '|' => out.push_str("\\|"),
            '\\' => out.push_str("\\\\"),
            '!' if rest[1..].starts_with('[') => out.push_str("\\!"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// Where in `s` the first run of exactly `len` backticks starts (a code span's end).
fn closing_run(s: &str, len: usize) -> Option<usize> {
    let mut at = 0;
    while let Some(i) = s[at..].find('`') {
        let start = at + i;
        let run = s[start..].len() - s[start..].trim_start_matches('`').len();
        if run == len {
            return Some(start);
        }
        at = start + run;
    }
    None
}

/// Text inside a Markdown code span (`` `…` ``): a backtick would end the span, `|` would
/// split a table; empty text is a space (two backticks alone would be a run of two, able to
/// open a span with a later cell's).
pub(crate) fn markdown_code(s: &str) -> String {
    if s.is_empty() {
        return " ".into();
    }
    s.replace('`', "'").replace('|', "\\|")
}

/// HTML-escape text for an element or a double-quoted attribute (`&`, `<`, `>`, `"`): the
/// escaper maud's templates apply to every value they splice, so hand-drawn SVG and the
/// templates escape alike.
pub(crate) fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    // Writing into a String cannot fail.
    let _ = std::fmt::Write::write_str(&mut maud::Escaper::new(&mut out), s);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_markdown_cell_is_one_line_without_a_bare_pipe_or_html() {
        assert_eq!(markdown_cell("a|b"), "a\\|b");
        assert_eq!(
            markdown_cell("stdout differs at line 1:\n    baseline:  42\r\n\n  candidate: 43 "),
            "stdout differs at line 1: baseline:  42 candidate: 43"
        );
        assert_eq!(markdown_cell("<b> & `<b>`"), "&lt;b&gt; &amp; `<b>`");
        assert_eq!(markdown_code("a`b|c"), "a'b\\|c");
    }

    #[test]
    fn an_unbalanced_backtick_cannot_open_a_code_span_that_lets_html_through() {
        // Parity paired the lone backtick with the opening one of the next code span on the
        // line, so that span's text (`<img …>`) became raw HTML in a step summary.
        let lone = markdown_cell("x`");
        assert_eq!(lone, "x\\`");
        let line = format!("| {lone} | `{}` |", markdown_code("<img src=x>"));
        assert_eq!(line, "| x\\` | `<img src=x>` |");
        // A backtick run opens a span only with a closing run of the same length (CommonMark).
        assert_eq!(
            markdown_cell("``a`<img src=x>"),
            "\\`\\`a\\`&lt;img src=x&gt;"
        );
        assert_eq!(markdown_cell("``a`b`` <i>"), "``a`b`` &lt;i&gt;");
        assert_eq!(markdown_cell("`a` `<b>"), "`a` \\`&lt;b&gt;");
        // A backslash is text: it cannot escape the backtick of a span that follows.
        assert_eq!(markdown_cell("a\\"), "a\\\\");
        // Nor can a Markdown image be written outside a code span.
        assert_eq!(
            markdown_cell("![t](http://x/p.png)"),
            "\\![t](http://x/p.png)"
        );
        assert_eq!(markdown_cell("`![t](u)` | <"), "`![t](u)` \\| &lt;");
        // An empty code span's two backticks would be a run of two.
        assert_eq!(markdown_code(""), " ");
    }

    #[test]
    fn html_escapes_what_breaks_text_or_a_quoted_attribute() {
        assert_eq!(
            html(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;'"
        );
        assert_eq!(
            html("x<y"),
            maud::html! { (String::from("x<y")) }.into_string()
        );
    }

    #[test]
    fn json_is_pretty_with_a_final_newline() {
        let v = serde_json::json!({"a": [1, 2]});
        assert_eq!(Json.render(&v), "{\n  \"a\": [\n    1,\n    2\n  ]\n}\n");
    }
}
