//! Hand-written SVG charts for the HTML pages (the run's report, `bench --export-html`): a forest plot (ratios with intervals, the
//! margin band), a strip plot (one dot per pair), and horizontal bars (sizes, memory, the
//! pipeline's timeline). Inline SVG with CSS classes: no JavaScript, no fonts or files to
//! load, and the same input gives the same bytes. Written by hand rather than with a
//! plotting crate because the page must be one small file that opens from `file://` and
//! prints; three chart shapes are a few hundred lines.
//!
//! Every row of a chart is one `<g class="mark" data-chart=… data-key=…>`, so a test (or
//! a reader's stylesheet) can count one mark per stage, workload or step.

use std::fmt::Write as _;

use super::html as esc;

const WIDTH: f64 = 760.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 12.0;
const AXIS_H: f64 = 38.0;

/// One row of a forest plot.
pub(crate) struct Interval {
    pub label: String,
    /// `data-key`: the stage label, workload name, …
    pub key: String,
    /// CSS class of the mark: a status (`kept`) or a verdict (`faster`).
    pub class: String,
    /// (ratio, low, high); `None` draws a "not measured" row.
    pub est: Option<(f64, f64, f64)>,
    /// Tooltip and the text of a row without an estimate.
    pub note: String,
    /// Where the row's reference (what it was compared with) sits on the same scale, drawn
    /// as a hollow diamond.
    pub reference: Option<f64>,
}

/// One row of a strip plot: one dot per value.
pub(crate) struct Strip {
    pub label: String,
    pub key: String,
    pub values: Vec<f64>,
    /// The estimate, drawn as a tick.
    pub center: Option<f64>,
}

/// One horizontal bar from `start` to `start + len`.
pub(crate) struct Bar {
    pub label: String,
    pub key: String,
    pub class: String,
    pub start: f64,
    pub len: f64,
    /// Printed after the bar.
    pub text: String,
}

struct Scale {
    lo: f64,
    hi: f64,
    /// Where the plot starts (the labels are left of it).
    x0: f64,
}

impl Scale {
    fn x(&self, v: f64) -> f64 {
        let span = (self.hi - self.lo).max(1e-12);
        self.x0 + (v.clamp(self.lo, self.hi) - self.lo) / span * (WIDTH - self.x0 - RIGHT)
    }
}

/// The label column's width: room for the longest label, within bounds.
fn label_width<'a>(labels: impl Iterator<Item = &'a str>) -> f64 {
    let longest = labels.map(|l| l.chars().count()).max().unwrap_or(0) as f64;
    (longest * 6.6 + 16.0).clamp(90.0, 320.0)
}

/// A ratio scale around 1 that holds every finite value and the margin band.
fn ratio_scale(values: impl Iterator<Item = f64>, margin: f64, x0: f64) -> Scale {
    let (mut lo, mut hi) = (1.0 - margin.max(0.0), 1.0 + margin.max(0.0));
    for v in values.filter(|v| v.is_finite() && *v > 0.0) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    let pad = ((hi - lo) * 0.08).max(0.01);
    Scale {
        lo: (lo - pad).max(0.0),
        hi: hi + pad,
        x0,
    }
}

/// A "nice" tick step for a span: 1, 2 or 5 × 10^k, about `n` ticks.
fn step(span: f64, n: f64) -> f64 {
    let raw = (span / n).max(1e-9);
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f < 1.5 {
        1.0
    } else if f < 3.5 {
        2.0
    } else if f < 7.5 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

fn decimals(step: f64) -> usize {
    if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    }
}

fn open(s: &mut String, chart: &str, rows: usize, row_h: f64, title: &str) -> f64 {
    let h = TOP + rows.max(1) as f64 * row_h + AXIS_H;
    let _ = writeln!(
        s,
        r#"<svg class="chart" data-chart="{}" viewBox="0 0 {WIDTH} {h:.0}" role="img" aria-label="{}" xmlns="http://www.w3.org/2000/svg">"#,
        esc(chart),
        esc(title)
    );
    h
}

fn axis(s: &mut String, sc: &Scale, h: f64, label: &str) {
    let base = h - AXIS_H;
    let st = step(sc.hi - sc.lo, 6.0);
    let d = decimals(st);
    let mut t = (sc.lo / st).ceil() * st;
    let _ = writeln!(
        s,
        r#"<line class="axis" x1="{:.1}" y1="{base:.1}" x2="{:.1}" y2="{base:.1}"/>"#,
        sc.x0,
        WIDTH - RIGHT
    );
    while t <= sc.hi + 1e-12 {
        let x = sc.x(t);
        let _ = writeln!(
            s,
            r#"<line class="grid" x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{base:.1}"/><text class="tick" x="{x:.1}" y="{:.1}" text-anchor="middle">{t:.d$}</text>"#,
            base + 14.0
        );
        t += st;
    }
    let _ = writeln!(
        s,
        r#"<text class="axis-label" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        (sc.x0 + WIDTH - RIGHT) / 2.0,
        base + 32.0,
        esc(label)
    );
}

fn row_label(s: &mut String, sc: &Scale, y: f64, label: &str) {
    let _ = write!(
        s,
        r#"<text class="label" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
        sc.x0 - 8.0,
        y + 4.0,
        esc(label)
    );
}

fn ratio_guides(s: &mut String, sc: &Scale, h: f64, margin: f64) {
    let base = h - AXIS_H;
    if margin > 0.0 {
        let (a, b) = (sc.x(1.0 - margin), sc.x(1.0 + margin));
        let _ = writeln!(
            s,
            r#"<rect class="band" x="{a:.1}" y="{TOP}" width="{:.1}" height="{:.1}"><title>margin ±{:.1} %: "equivalent"</title></rect>"#,
            (b - a).max(1.0),
            base - TOP,
            margin * 100.0
        );
    }
    let one = sc.x(1.0);
    let _ = writeln!(
        s,
        r#"<line class="ref" x1="{one:.1}" y1="{TOP}" x2="{one:.1}" y2="{base:.1}"/>"#
    );
}

/// Ratios with their intervals, one row each, the margin band and the line at 1.
pub(crate) fn forest(chart: &str, rows: &[Interval], margin: f64, axis_label: &str) -> String {
    const ROW: f64 = 26.0;
    let mut s = String::new();
    let h = open(&mut s, chart, rows.len(), ROW, axis_label);
    let sc = ratio_scale(
        rows.iter()
            .filter_map(|r| r.est)
            .flat_map(|(m, l, h)| [m, l, h]),
        margin,
        label_width(rows.iter().map(|r| r.label.as_str())),
    );
    ratio_guides(&mut s, &sc, h, margin);
    axis(&mut s, &sc, h, axis_label);
    for (i, r) in rows.iter().enumerate() {
        let y = TOP + ROW * (i as f64 + 0.5);
        let _ = write!(
            s,
            r#"<g class="mark {}" data-chart="{}" data-key="{}"><title>{}</title>"#,
            esc(&r.class),
            esc(chart),
            esc(&r.key),
            esc(&r.note)
        );
        row_label(&mut s, &sc, y, &r.label);
        match r.est {
            Some((m, lo, hi)) if m.is_finite() => {
                if lo.is_finite() && hi.is_finite() {
                    let _ = write!(
                        s,
                        r#"<line class="ci" x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}"/>"#,
                        sc.x(lo),
                        sc.x(hi)
                    );
                }
                if let Some(x) = r.reference.filter(|x| x.is_finite()).map(|x| sc.x(x)) {
                    let _ = write!(
                        s,
                        r#"<path class="rival" d="M{x:.1} {:.1}l6 7l-6 7l-6 -7z"/>"#,
                        y - 7.0
                    );
                }
                let _ = write!(
                    s,
                    r#"<circle class="point" cx="{:.1}" cy="{y:.1}" r="5"/>"#,
                    sc.x(m)
                );
            }
            _ => {
                let x = sc.x0 + 8.0;
                let text: String = if r.note.chars().count() > 80 {
                    r.note.chars().take(79).chain(['…']).collect()
                } else {
                    r.note.clone()
                };
                let _ = write!(
                    s,
                    r#"<path class="cross" d="M{:.1} {:.1}l8 8m0 -8l-8 8"/><text class="missing" x="{:.1}" y="{:.1}">{}</text>"#,
                    x - 4.0,
                    y - 4.0,
                    x + 10.0,
                    y + 4.0,
                    esc(&text)
                );
            }
        }
        let _ = writeln!(s, "</g>");
    }
    s.push_str("</svg>\n");
    s
}

/// One dot per value, a row per comparison, with the estimate as a tick.
pub(crate) fn strip(chart: &str, rows: &[Strip], margin: f64, axis_label: &str) -> String {
    const ROW: f64 = 30.0;
    let mut s = String::new();
    let h = open(&mut s, chart, rows.len(), ROW, axis_label);
    let sc = ratio_scale(
        rows.iter()
            .flat_map(|r| r.values.iter().copied().chain(r.center)),
        margin,
        label_width(rows.iter().map(|r| r.label.as_str())),
    );
    ratio_guides(&mut s, &sc, h, margin);
    axis(&mut s, &sc, h, axis_label);
    for (i, r) in rows.iter().enumerate() {
        let y = TOP + ROW * (i as f64 + 0.5);
        let _ = write!(
            s,
            r#"<g class="mark" data-chart="{}" data-key="{}" data-n="{}"><title>{}: {} pairs</title>"#,
            esc(chart),
            esc(&r.key),
            r.values.len(),
            esc(&r.label),
            r.values.len()
        );
        row_label(&mut s, &sc, y, &r.label);
        for (j, v) in r.values.iter().enumerate() {
            // A fixed jitter by position, so dots on the same value stay visible.
            let dy = ((j % 5) as f64 - 2.0) * 3.0;
            let _ = write!(
                s,
                r#"<circle class="dot" cx="{:.1}" cy="{:.1}" r="3"/>"#,
                sc.x(*v),
                y + dy
            );
        }
        if let Some(c) = r.center.filter(|c| c.is_finite()) {
            let x = sc.x(c);
            let _ = write!(
                s,
                r#"<line class="center" x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}"/>"#,
                y - 11.0,
                y + 11.0
            );
        }
        let _ = writeln!(s, "</g>");
    }
    s.push_str("</svg>\n");
    s
}

/// Horizontal bars on a linear scale from 0 (a Gantt chart when the starts differ).
pub(crate) fn bars(chart: &str, rows: &[Bar], axis_label: &str) -> String {
    const ROW: f64 = 20.0;
    let mut s = String::new();
    let h = open(&mut s, chart, rows.len(), ROW, axis_label);
    let max = rows
        .iter()
        .map(|b| b.start + b.len)
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let st = step(max.max(1e-9), 6.0);
    let sc = Scale {
        lo: 0.0,
        hi: ((max / st).ceil() * st).max(st),
        x0: label_width(rows.iter().map(|b| b.label.as_str())),
    };
    axis(&mut s, &sc, h, axis_label);
    for (i, b) in rows.iter().enumerate() {
        let y = TOP + ROW * (i as f64 + 0.5);
        let (x0, x1) = (sc.x(b.start), sc.x(b.start + b.len));
        let _ = write!(
            s,
            r#"<g class="mark {}" data-chart="{}" data-key="{}"><title>{}: {}</title>"#,
            esc(&b.class),
            esc(chart),
            esc(&b.key),
            esc(&b.label),
            esc(&b.text)
        );
        row_label(&mut s, &sc, y, &b.label);
        let _ = write!(
            s,
            r#"<rect class="bar" x="{x0:.1}" y="{:.1}" width="{:.1}" height="{:.1}"/>"#,
            y - ROW * 0.35,
            (x1 - x0).max(1.0),
            ROW * 0.7
        );
        // After the bar; inside its end when it is long enough and there is no room after
        // it; else before its start.
        let text_w = b.text.chars().count() as f64 * 6.4 + 8.0;
        let (tx, anchor, class) = if x1 + text_w <= WIDTH - 2.0 {
            (x1 + 4.0, "start", "value")
        } else if x1 - x0 >= text_w {
            (x1 - 4.0, "end", "value inside")
        } else {
            (x0 - 4.0, "end", "value")
        };
        let _ = writeln!(
            s,
            r#"<text class="{class}" x="{:.1}" y="{:.1}" text-anchor="{anchor}">{}</text></g>"#,
            tx,
            y + 4.0,
            esc(&b.text)
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps() {
        assert_eq!(step(0.3, 6.0), 0.05);
        assert_eq!(step(230.0, 6.0), 50.0);
        assert_eq!(decimals(0.05), 2);
    }

    #[test]
    fn one_mark_per_row_even_without_numbers() {
        let rows = vec![
            Interval {
                label: "a<b".into(),
                key: "a".into(),
                class: "kept".into(),
                est: Some((0.9, f64::NAN, 0.95)),
                note: "n".into(),
                reference: Some(1.0),
            },
            Interval {
                label: "c".into(),
                key: "c".into(),
                class: "failed".into(),
                est: None,
                note: "not measured".into(),
                reference: None,
            },
        ];
        let svg = forest("t", &rows, 0.01, "ratio");
        assert_eq!(svg.matches(r#"<g class="mark"#).count(), 2);
        assert!(svg.contains("a&lt;b") && !svg.contains("NaN"), "{svg}");
        assert_eq!(svg.matches(r#"class="rival""#).count(), 1, "{svg}");
    }
}
