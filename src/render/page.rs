//! The shell of every HTML page (the run's report, `bench --export-html`): one
//! self-contained document — the stylesheet inline from `assets/report.css`, a
//! Content-Security-Policy that allows nothing to load, no scripts — and the pieces pages
//! share (legends). Pages are maud templates: every value spliced with `(…)` is escaped
//! ([`super::html`]); only markup we draw (the SVG charts) goes in as `PreEscaped`.

use maud::{html, Markup, PreEscaped, DOCTYPE};

/// The stylesheet of every page, kept as an asset file.
pub(crate) const CSS: &str = include_str!("assets/report.css");

/// The page: `title` (escaped) and `body`, as one document ending in a newline.
pub(crate) fn document(title: &str, body: Markup) -> String {
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta http-equiv="Content-Security-Policy"
                    content="default-src 'none'; style-src 'unsafe-inline'; img-src data:";
                title { (title) }
                style { (PreEscaped(CSS)) }
            }
            body { (body) }
        }
    };
    page.into_string() + "\n"
}

/// The margin band's swatch, last in every legend.
const BAND: (&str, &str) = (
    "#ddf4ff;border:1px solid #9ccfe8",
    "margin band (equivalent)",
);

/// A legend: one coloured dot (a CSS colour) per label, then the margin band.
pub(crate) fn legend(items: &[(&str, &str)]) -> Markup {
    html! {
        p class="legend caption" {
            @for (colour, label) in items.iter().chain([&BAND]) {
                span { i style={ "background:" (colour) } {} (label) }
            }
        }
    }
}

/// The legend of a chart coloured by stage status and verdict (the run's report).
pub(crate) fn status_legend() -> Markup {
    legend(&[
        ("var(--kept)", "kept / faster"),
        ("var(--dropped)", "dropped / inconclusive / equivalent"),
        ("var(--rejected)", "rejected"),
        ("var(--failed)", "failed / slower"),
    ])
}

/// The legend of a chart coloured by verdict only (`bench`).
pub(crate) fn verdict_legend() -> Markup {
    legend(&[
        ("var(--kept)", "faster"),
        ("var(--dropped)", "inconclusive / equivalent"),
        ("var(--failed)", "slower"),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_document_with_the_stylesheet_and_an_escaped_title() {
        let page = document("a <b>", html! { p { "x & y" } });
        assert!(
            page.starts_with("<!DOCTYPE html><html lang=\"en\"><head>"),
            "{page}"
        );
        assert!(page.contains("<title>a &lt;b&gt;</title>"), "{page}");
        assert!(page.contains(&format!("<style>{CSS}</style>")), "{page}");
        assert!(page.contains("<body><p>x &amp; y</p></body>"), "{page}");
        assert!(page.ends_with("</html>\n"), "{page}");
        assert!(!page.contains("<script"));
        assert!(
            CSS.contains("svg .mark.kept"),
            "the asset is the stylesheet"
        );
    }

    #[test]
    fn legends_end_with_the_margin_band() {
        let l = verdict_legend().into_string();
        assert_eq!(l.matches("<span>").count(), 4, "{l}");
        assert!(l.starts_with("<p class=\"legend caption\"><span><i style=\"background:var(--kept)\"></i>faster</span>"), "{l}");
        assert!(l.ends_with("margin band (equivalent)</span></p>"), "{l}");
    }
}
