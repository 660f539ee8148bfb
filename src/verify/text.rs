//! Comparing two texts (a stream or a file) line by line under a workload's rules: masks
//! (`ignore`), `sort-lines`, and exact or numeric equality of each line.
//!
//! Works on bytes: outputs need not be UTF-8. Only the excerpts shown to the user are
//! decoded (lossily).

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use regex::bytes::Regex;

use super::numeric::{self, NumericDiff, Tolerance};

/// How two lines must agree.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum LineMode {
    Exact,
    Numeric(Tolerance),
}

/// Everything that decides whether two texts agree.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rules<'r> {
    pub mode: LineMode,
    /// Lines matching this are masked (equal to any other masked line).
    pub mask: Option<&'r Regex>,
    /// Compare the lines in sorted order.
    pub sort: bool,
}

/// The first disagreement between two texts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TextDiff {
    /// 1-based position of the first differing line (in sorted order when `sorted`).
    pub line: usize,
    /// 1-based column (byte) of the first difference in the baseline's line (0: none).
    pub column: usize,
    pub sorted: bool,
    /// The lines' numbers in the original outputs (differ from `line` when sorted).
    pub line_a: Option<usize>,
    pub line_b: Option<usize>,
    /// Excerpts of both lines, or `<end of output>`.
    pub expected: String,
    pub actual: String,
    pub numeric: Option<NumericDiff>,
}

pub(crate) const END: &str = "<end of output>";

struct Line<'a> {
    text: &'a [u8],
    /// 1-based line number in the original text.
    number: usize,
    masked: bool,
}

impl Line<'_> {
    fn key(&self) -> &[u8] {
        if self.masked {
            b"\0<masked>"
        } else {
            self.text
        }
    }
}

/// The lines of a text; a final newline does not start an empty last line.
pub(crate) fn split_lines(text: &[u8]) -> (Vec<&[u8]>, bool) {
    let final_newline = text.ends_with(b"\n");
    let body = if final_newline {
        &text[..text.len() - 1]
    } else {
        text
    };
    if text.is_empty() {
        return (Vec::new(), false);
    }
    (body.split(|&b| b == b'\n').collect(), final_newline)
}

fn prepare<'a>(text: &'a [u8], rules: &Rules) -> (Vec<Line<'a>>, bool) {
    let (lines, final_newline) = split_lines(text);
    let mut lines: Vec<Line> = lines
        .into_iter()
        .enumerate()
        .map(|(i, t)| Line {
            text: t,
            number: i + 1,
            masked: rules.mask.is_some_and(|re| re.is_match(t)),
        })
        .collect();
    if rules.sort {
        lines.sort_by(|x, y| x.key().cmp(y.key()));
    }
    (lines, final_newline)
}

/// One side of a comparison: bytes in memory, or a saved output read line by line.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Source<'a> {
    Bytes(&'a [u8]),
    File(&'a Path),
}

impl Source<'_> {
    fn reader(&self) -> std::io::Result<Box<dyn BufRead + '_>> {
        Ok(match self {
            Source::Bytes(b) => Box::new(*b),
            Source::File(p) => Box::new(BufReader::with_capacity(256 << 10, File::open(p)?)),
        })
    }

    /// The whole text (`sort-lines` sorts all of it).
    fn bytes(&self) -> std::io::Result<std::borrow::Cow<'_, [u8]>> {
        Ok(match self {
            Source::Bytes(b) => (*b).into(),
            Source::File(p) => std::fs::read(p)?.into(),
        })
    }
}

/// Compare two texts; `None` when they agree under `rules`.
pub(crate) fn compare(a: &[u8], b: &[u8], rules: &Rules) -> Option<TextDiff> {
    if a == b {
        return None;
    }
    if rules.sort {
        return compare_sorted(a, b, rules);
    }
    // Reading from memory cannot fail.
    compare_streams(&mut &a[..], &mut &b[..], rules).unwrap_or(None)
}

/// [`compare`] on texts in memory or in files: line by line, so two outputs of
/// gigabytes cost a line each in memory (with `sort-lines`, both texts are read whole).
pub(crate) fn compare_sources(
    a: Source,
    b: Source,
    rules: &Rules,
) -> std::io::Result<Option<TextDiff>> {
    if let (Source::Bytes(x), Source::Bytes(y)) = (a, b) {
        return Ok(compare(x, y, rules));
    }
    if rules.sort {
        return Ok(compare(&a.bytes()?, &b.bytes()?, rules));
    }
    compare_streams(&mut a.reader()?, &mut b.reader()?, rules)
}

/// The lines of a text, one at a time.
struct Lines<'r> {
    reader: &'r mut dyn BufRead,
    text: Vec<u8>,
    /// Lines read so far: the current one's 1-based number.
    number: usize,
    /// The last line read ended with a newline.
    final_newline: bool,
}

impl<'r> Lines<'r> {
    fn new(reader: &'r mut dyn BufRead) -> Self {
        Lines {
            reader,
            text: Vec::new(),
            number: 0,
            final_newline: false,
        }
    }

    /// The next line (without its newline), `None` at the end.
    fn next(&mut self, rules: &Rules) -> std::io::Result<Option<Line<'_>>> {
        self.text.clear();
        if self.reader.read_until(b'\n', &mut self.text)? == 0 {
            return Ok(None);
        }
        self.final_newline = self.text.last() == Some(&b'\n');
        if self.final_newline {
            self.text.pop();
        }
        self.number += 1;
        Ok(Some(Line {
            text: &self.text,
            number: self.number,
            masked: rules.mask.is_some_and(|re| re.is_match(&self.text)),
        }))
    }
}

fn compare_streams(
    a: &mut dyn BufRead,
    b: &mut dyn BufRead,
    rules: &Rules,
) -> std::io::Result<Option<TextDiff>> {
    let (mut la, mut lb) = (Lines::new(a), Lines::new(b));
    let mut k = 0;
    loop {
        let (x, y) = (la.next(rules)?, lb.next(rules)?);
        if x.is_none() && y.is_none() {
            break;
        }
        if let Some(d) = line_diff(k, x.as_ref(), y.as_ref(), rules) {
            return Ok(Some(d));
        }
        k += 1;
    }
    Ok(newline_diff(k, la.final_newline, lb.final_newline, rules))
}

fn compare_sorted(a: &[u8], b: &[u8], rules: &Rules) -> Option<TextDiff> {
    let (la, nla) = prepare(a, rules);
    let (lb, nlb) = prepare(b, rules);
    let n = la.len().max(lb.len());
    for k in 0..n {
        if let Some(d) = line_diff(k, la.get(k), lb.get(k), rules) {
            return Some(d);
        }
    }
    newline_diff(n, nla, nlb, rules)
}

/// How the `k`-th (0-based) lines of two texts differ, if they do.
fn line_diff(k: usize, x: Option<&Line>, y: Option<&Line>, rules: &Rules) -> Option<TextDiff> {
    let diff = |column, numeric, off_a: usize, off_b: usize| TextDiff {
        line: k + 1,
        column,
        sorted: rules.sort,
        line_a: x.map(|l| l.number),
        line_b: y.map(|l| l.number),
        expected: x
            .map(|l| excerpt(l.text, off_a))
            .unwrap_or_else(|| END.into()),
        actual: y
            .map(|l| excerpt(l.text, off_b))
            .unwrap_or_else(|| END.into()),
        numeric,
    };
    let (x, y) = match (x, y) {
        (Some(x), Some(y)) => (x, y),
        _ => return Some(diff(0, None, 0, 0)),
    };
    if x.key() == y.key() {
        return None;
    }
    if x.masked || y.masked {
        return Some(diff(0, None, 0, 0));
    }
    match rules.mode {
        LineMode::Exact => {
            let p = common_prefix(x.text, y.text);
            Some(diff(p + 1, None, p, p))
        }
        LineMode::Numeric(tol) => numeric::compare_line(x.text, y.text, tol)
            .map(|d| diff(d.offset_a + 1, d.numeric, d.offset_a, d.offset_b)),
    }
}

/// Texts of `n` agreeing lines that differ in their final newline.
fn newline_diff(n: usize, nla: bool, nlb: bool, rules: &Rules) -> Option<TextDiff> {
    // Whitespace is insignificant in numeric modes, so is the final newline there.
    if nla == nlb || rules.mode != LineMode::Exact {
        return None;
    }
    let says = |nl: bool| {
        if nl {
            "<newline at end of output>".to_string()
        } else {
            "<no newline at end of output>".to_string()
        }
    };
    Some(TextDiff {
        line: n,
        column: 0,
        sorted: rules.sort,
        line_a: None,
        line_b: None,
        expected: says(nla),
        actual: says(nlb),
        numeric: None,
    })
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Longest excerpt shown of one line.
const EXCERPT: usize = 160;

/// A line for display: decoded lossily, control characters escaped, and cut to a window
/// around byte `offset` when long (`…` marks the cuts).
pub(crate) fn excerpt(line: &[u8], offset: usize) -> String {
    let (start, end) = if line.len() <= EXCERPT {
        (0, line.len())
    } else {
        let start = offset.saturating_sub(EXCERPT / 3).min(line.len() - EXCERPT);
        (start, start + EXCERPT)
    };
    let mut s = String::new();
    if start > 0 {
        s.push('…');
    }
    for c in String::from_utf8_lossy(&line[start..end]).chars() {
        if c.is_control() && c != '\t' {
            s.extend(c.escape_default());
        } else {
            s.push(c);
        }
    }
    if end < line.len() {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXACT: Rules = Rules {
        mode: LineMode::Exact,
        mask: None,
        sort: false,
    };

    #[test]
    fn exact_points_at_line_and_column() {
        let d = compare(b"a\nhello world\nc\n", b"a\nhello there\nc\n", &EXACT).unwrap();
        assert_eq!((d.line, d.column), (2, 7));
        assert_eq!(
            (d.expected.as_str(), d.actual.as_str()),
            ("hello world", "hello there")
        );
        assert!(compare(b"x\n", b"x\n", &EXACT).is_none());
    }

    #[test]
    fn length_and_final_newline() {
        let d = compare(b"a\nb\n", b"a\n", &EXACT).unwrap();
        assert_eq!((d.line, d.actual.as_str()), (2, END));
        let d = compare(b"a\nb", b"a\nb\n", &EXACT).unwrap();
        assert_eq!(d.line, 2);
        assert_eq!(d.actual, "<newline at end of output>");
        assert!(compare(b"", b"", &EXACT).is_none());
        assert_eq!(compare(b"", b"\n", &EXACT).unwrap().line, 1);
        // Numeric modes do not care about the final newline.
        let num = Rules {
            mode: LineMode::Numeric(Tolerance::Relative(0.0)),
            ..EXACT
        };
        assert!(compare(b"1", b"1\n", &num).is_none());
    }

    #[test]
    fn masks_hide_matching_lines_only() {
        let re = Regex::new(r"^took \d+ms$").unwrap();
        let rules = Rules {
            mask: Some(&re),
            ..EXACT
        };
        assert!(compare(b"r=1\ntook 5ms\n", b"r=1\ntook 17ms\n", &rules).is_none());
        // A masked line against an unmasked one is a difference, shown unmasked.
        let d = compare(b"r=1\ntook 5ms\n", b"r=1\ntook 5 ms\n", &rules).unwrap();
        assert_eq!((d.line, d.expected.as_str()), (2, "took 5ms"));
        // Lines that do not match are still compared.
        assert_eq!(
            compare(b"took 1ms\nr=1\n", b"took 2ms\nr=2\n", &rules)
                .unwrap()
                .line,
            2
        );
        // Masks apply to non-UTF-8 text too.
        let bin = Regex::new(r"(?-u)^\xff").unwrap();
        let rules = Rules {
            mask: Some(&bin),
            ..EXACT
        };
        assert!(compare(b"\xff\x01\nok\n", b"\xff\x02\nok\n", &rules).is_none());
    }

    #[test]
    fn sorted_lines() {
        let rules = Rules {
            sort: true,
            ..EXACT
        };
        assert!(compare(b"b\na\nc\n", b"c\nb\na\n", &rules).is_none());
        let d = compare(b"b\na\nc\n", b"c\nb\nd\n", &rules).unwrap();
        // Sorted: a b c vs b c d → position 1 differs: baseline line 2 (a) vs candidate line 2 (b).
        assert!(d.sorted);
        assert_eq!((d.line, d.line_a, d.line_b), (1, Some(2), Some(2)));
        assert_eq!((d.expected.as_str(), d.actual.as_str()), ("a", "b"));
        // Masks and sorting together: masked lines sort as one key.
        let re = Regex::new("^pid").unwrap();
        let rules = Rules {
            mask: Some(&re),
            sort: true,
            ..EXACT
        };
        assert!(compare(b"pid 1\nz\na\n", b"a\nz\npid 99\n", &rules).is_none());
    }

    #[test]
    fn numeric_rules_with_masks_and_sorting() {
        let re = Regex::new("^elapsed").unwrap();
        let rules = Rules {
            mode: LineMode::Numeric(Tolerance::Absolute(1e-9)),
            mask: Some(&re),
            sort: true,
        };
        let a = b"y 2.0000000000\nelapsed 3s\nx 1.0\n";
        let b = b"x 1.00000000001\nelapsed 9s\ny 2\n";
        assert!(compare(a, b, &rules).is_none());
        let d = compare(a, b"x 1.1\nelapsed 9s\ny 2\n", &rules).unwrap();
        let n = d.numeric.unwrap();
        assert_eq!(
            (n.expected.as_str(), n.actual.as_str(), n.kind.as_str()),
            ("1.0", "1.1", "absolute")
        );
        assert_eq!(d.column, 3);
    }

    #[test]
    fn long_lines_are_cut_around_the_difference() {
        let a: Vec<u8> = (0..2000).map(|i| b'a' + (i % 26) as u8).collect();
        let mut b = a.clone();
        b[1500] = b'#';
        let d = compare(&a, &b, &EXACT).unwrap();
        assert_eq!(d.column, 1501);
        assert!(
            d.actual.starts_with('…') && d.actual.ends_with('…'),
            "{}",
            d.actual
        );
        assert!(d.actual.contains('#'));
        assert!(d.actual.chars().count() <= EXCERPT + 2);
        // Control characters are escaped, invalid UTF-8 replaced.
        assert_eq!(excerpt(b"a\x1b[0m\xff", 0), "a\\u{1b}[0m\u{fffd}");
    }

    #[test]
    fn files_compare_line_by_line_as_bytes_do() {
        let dir = tempfile::tempdir().unwrap();
        let cases: [(&[u8], &[u8]); 6] = [
            (b"a\nhello world\nc\n", b"a\nhello there\nc\n"),
            (b"a\nb\n", b"a\n"),
            (b"a\nb", b"a\nb\n"),
            (b"", b"\n"),
            (b"x\n\n", b"x\n\n"),
            (b"b\na\n", b"a\nb\n"),
        ];
        let re = Regex::new("^h").unwrap();
        let rules = [
            EXACT,
            Rules {
                mask: Some(&re),
                ..EXACT
            },
            Rules {
                sort: true,
                ..EXACT
            },
            Rules {
                mode: LineMode::Numeric(Tolerance::Relative(0.0)),
                ..EXACT
            },
        ];
        for (k, (a, b)) in cases.iter().enumerate() {
            let (pa, pb) = (
                dir.path().join(format!("{k}a")),
                dir.path().join(format!("{k}b")),
            );
            std::fs::write(&pa, a).unwrap();
            std::fs::write(&pb, b).unwrap();
            for r in &rules {
                let want = compare(a, b, r);
                let files = compare_sources(Source::File(&pa), Source::File(&pb), r).unwrap();
                let mixed = compare_sources(Source::Bytes(a), Source::File(&pb), r).unwrap();
                assert_eq!(files, want, "case {k}");
                assert_eq!(mixed, want, "case {k}");
            }
        }
        let gone = dir.path().join("gone");
        assert!(compare_sources(Source::File(&gone), Source::Bytes(b""), &EXACT).is_err());
    }
}
