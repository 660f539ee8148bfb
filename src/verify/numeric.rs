//! Numeric comparison of one line: tokenize both sides into numbers, words and spaces,
//! then require the words to be equal and the numbers to agree within a tolerance.
//!
//! Works on bytes (outputs need not be UTF-8). Owns the number grammar and the meaning of
//! "agree": for verification NaN equals NaN, infinities equal when their signs do, and
//! `-0.0` equals `0.0` (their difference is zero).

/// How far apart two numbers may be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Tolerance {
    /// `|a − b| ≤ tol · max(|a|, |b|)`.
    Relative(f64),
    /// `|a − b| ≤ tol`.
    Absolute(f64),
}

impl Tolerance {
    pub(crate) fn value(&self) -> f64 {
        match *self {
            Tolerance::Relative(t) | Tolerance::Absolute(t) => t,
        }
    }
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Tolerance::Relative(_) => "relative",
            Tolerance::Absolute(_) => "absolute",
        }
    }
}

/// One token of a line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Token<'a> {
    /// A number: its text and value.
    Num(&'a [u8], f64),
    /// A run of bytes that are neither space nor part of a number.
    Word(&'a [u8]),
    /// A run of spaces/tabs/`\r`: all runs are alike (padded columns shift when a
    /// number's width changes, e.g. `9.99999` → `10.0000`).
    Space,
}

/// A token with its 0-based byte offset in the line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Located<'a> {
    pub token: Token<'a>,
    pub offset: usize,
}

/// Split a line into tokens. Leading and trailing spaces are dropped.
///
/// Numbers: `[+-]? (digits [. digits*] | . digits) ([eE] [+-]? digits)?` and the words
/// `inf`, `infinity`, `nan` (any case, optional sign). A number starts only where the
/// previous byte is not a letter, digit or `_`, so identifiers such as `x86_64` or `v2`
/// stay words; the named forms must also end there (`info` is a word).
pub(crate) fn tokenize(line: &[u8]) -> Vec<Located<'_>> {
    let mut out: Vec<Located> = Vec::new();
    let mut i = 0;
    let mut word_start: Option<usize> = None;
    fn flush<'a>(
        line: &'a [u8],
        out: &mut Vec<Located<'a>>,
        start: &mut Option<usize>,
        end: usize,
    ) {
        if let Some(s) = start.take() {
            out.push(Located {
                token: Token::Word(&line[s..end]),
                offset: s,
            });
        }
    }
    while i < line.len() {
        let b = line[i];
        if is_space(b) {
            flush(line, &mut out, &mut word_start, i);
            let start = i;
            while i < line.len() && is_space(line[i]) {
                i += 1;
            }
            out.push(Located {
                token: Token::Space,
                offset: start,
            });
            continue;
        }
        let boundary = i == 0 || !is_word_byte(line[i - 1]);
        if boundary {
            if let Some(end) = number_end(line, i) {
                let text = &line[i..end];
                if let Some(v) = parse(text) {
                    flush(line, &mut out, &mut word_start, i);
                    out.push(Located {
                        token: Token::Num(text, v),
                        offset: i,
                    });
                    i = end;
                    continue;
                }
            }
        }
        if word_start.is_none() {
            word_start = Some(i);
        }
        i += 1;
    }
    flush(line, &mut out, &mut word_start, line.len());
    while out.last().is_some_and(|t| t.token == Token::Space) {
        out.pop();
    }
    if out.first().is_some_and(|t| t.token == Token::Space) {
        out.remove(0);
    }
    out
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | 0x0b | 0x0c)
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The end of the number starting at `start`, if one does.
fn number_end(s: &[u8], start: usize) -> Option<usize> {
    let mut i = start;
    if matches!(s.get(i), Some(b'+' | b'-')) {
        i += 1;
    }
    // Named forms.
    for name in [&b"infinity"[..], b"inf", b"nan"] {
        if s.len() >= i + name.len() && s[i..i + name.len()].eq_ignore_ascii_case(name) {
            let end = i + name.len();
            if !matches!(s.get(end), Some(&b) if is_word_byte(b)) {
                return Some(end);
            }
        }
    }
    let digits = |i: &mut usize| {
        let s0 = *i;
        while s.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - s0
    };
    let int = digits(&mut i);
    let mut frac = 0;
    if s.get(i) == Some(&b'.') {
        let mut j = i + 1;
        frac = digits(&mut j);
        if int > 0 || frac > 0 {
            i = j;
        }
    }
    if int == 0 && frac == 0 {
        return None;
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(s.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if digits(&mut j) > 0 {
            i = j;
        }
    }
    Some(i)
}

fn parse(text: &[u8]) -> Option<f64> {
    std::str::from_utf8(text).ok()?.parse::<f64>().ok()
}

/// How two numbers that do not agree differ.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NumericDiff {
    pub expected: String,
    pub actual: String,
    /// Relative or absolute error, as the tolerance is (infinite for NaN vs a number, or
    /// infinities of different signs).
    pub error: f64,
    pub tolerance: f64,
    /// "relative" or "absolute".
    pub kind: String,
}

impl std::fmt::Display for NumericDiff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} vs {}: {} error {} > tolerance {:e}",
            self.expected,
            self.actual,
            self.kind,
            fmt_error(self.error),
            self.tolerance
        )
    }
}

fn fmt_error(e: f64) -> String {
    if e.is_finite() {
        format!("{e:.2e}")
    } else {
        "∞".into()
    }
}

/// The error between two numbers in the tolerance's terms (0 when they agree exactly).
pub(crate) fn error(a: f64, b: f64, tol: Tolerance) -> f64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if a.is_infinite() || b.is_infinite() {
        return if a == b { 0.0 } else { f64::INFINITY };
    }
    if a == b {
        return 0.0; // covers -0.0 == 0.0
    }
    let diff = (a - b).abs();
    match tol {
        Tolerance::Absolute(_) => diff,
        Tolerance::Relative(_) => diff / a.abs().max(b.abs()),
    }
}

/// Where two lines first disagree.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LineDiff {
    /// 0-based byte offsets of the first differing token in each line.
    pub offset_a: usize,
    pub offset_b: usize,
    /// Set when the first difference is two numbers out of tolerance.
    pub numeric: Option<NumericDiff>,
}

/// Compare two lines token by token; `None` when they agree.
pub(crate) fn compare_line(a: &[u8], b: &[u8], tol: Tolerance) -> Option<LineDiff> {
    if a == b {
        return None;
    }
    let (ta, tb) = (tokenize(a), tokenize(b));
    let n = ta.len().max(tb.len());
    for k in 0..n {
        let (x, y) = (ta.get(k), tb.get(k));
        let at = |t: Option<&Located>, line: &[u8]| t.map(|t| t.offset).unwrap_or(line.len());
        let diff = |numeric| {
            Some(LineDiff {
                offset_a: at(x, a),
                offset_b: at(y, b),
                numeric,
            })
        };
        match (x.map(|t| t.token), y.map(|t| t.token)) {
            (Some(Token::Num(sa, va)), Some(Token::Num(sb, vb))) => {
                if sa == sb {
                    continue;
                }
                let e = error(va, vb, tol);
                if e > tol.value() || e.is_nan() {
                    return diff(Some(NumericDiff {
                        expected: String::from_utf8_lossy(sa).into_owned(),
                        actual: String::from_utf8_lossy(sb).into_owned(),
                        error: e,
                        tolerance: tol.value(),
                        kind: tol.kind().to_string(),
                    }));
                }
            }
            (Some(p), Some(q)) if p == q => continue,
            _ => return diff(None),
        }
    }
    None
}

/// The largest error over all number pairs of two equally shaped texts, or `None` when
/// their non-numeric tokens differ or two different integers are paired: used to suggest a
/// tolerance, and integers that differ (ids, counts, clocks) are not rounding noise.
pub(crate) fn max_error(a: &[&[u8]], b: &[&[u8]], tol: Tolerance) -> Option<f64> {
    if a.len() != b.len() {
        return None;
    }
    let mut worst: f64 = 0.0;
    for (la, lb) in a.iter().zip(b) {
        let (ta, tb) = (tokenize(la), tokenize(lb));
        if ta.len() != tb.len() {
            return None;
        }
        for (x, y) in ta.iter().zip(&tb) {
            match (x.token, y.token) {
                (Token::Num(sa, va), Token::Num(sb, vb)) => {
                    if sa != sb && is_integer(sa) && is_integer(sb) {
                        return None;
                    }
                    worst = worst.max(error(va, vb, tol));
                }
                (p, q) if p == q => {}
                _ => return None,
            }
        }
    }
    Some(worst)
}

/// How far the numbers of two texts moved: the largest absolute and relative difference
/// and how many numbers differ, over the line pairs whose non-numeric tokens agree (other
/// lines are not numbers that moved, and are left out).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Deviation {
    pub max_abs: f64,
    pub max_rel: f64,
    pub changed: usize,
}

impl Deviation {
    /// Both deviations together (the larger of each, the counts added).
    pub(crate) fn merge(self, o: Deviation) -> Deviation {
        Deviation {
            max_abs: self.max_abs.max(o.max_abs),
            max_rel: self.max_rel.max(o.max_rel),
            changed: self.changed + o.changed,
        }
    }
}

/// The [`Deviation`] from `a` to `b`, line by line.
pub(crate) fn deviation(a: &[&[u8]], b: &[&[u8]]) -> Deviation {
    let mut d = Deviation::default();
    for (la, lb) in a.iter().zip(b) {
        if la == lb {
            continue;
        }
        let (ta, tb) = (tokenize(la), tokenize(lb));
        let same_shape = ta.len() == tb.len()
            && ta.iter().zip(&tb).all(|(x, y)| match (x.token, y.token) {
                (Token::Num(..), Token::Num(..)) => true,
                (p, q) => p == q,
            });
        if !same_shape {
            continue;
        }
        for (x, y) in ta.iter().zip(&tb) {
            if let (Token::Num(sa, va), Token::Num(sb, vb)) = (x.token, y.token) {
                if sa == sb {
                    continue;
                }
                let abs = error(va, vb, Tolerance::Absolute(0.0));
                let rel = error(va, vb, Tolerance::Relative(0.0));
                if abs > 0.0 || rel > 0.0 {
                    d.changed += 1;
                }
                d.max_abs = d.max_abs.max(abs);
                d.max_rel = d.max_rel.max(rel);
            }
        }
    }
    d
}

fn is_integer(text: &[u8]) -> bool {
    text.iter()
        .all(|b| b.is_ascii_digit() || *b == b'-' || *b == b'+')
}

#[cfg(test)]
mod tests {
    use super::*;

    const REL6: Tolerance = Tolerance::Relative(1e-6);

    #[test]
    fn deviation_is_the_largest_absolute_and_relative_move() {
        let a: Vec<&[u8]> = vec![b"dot = 4.19774922976059059e1", b"n: 10", b"x 1.0 2.0"];
        let b: Vec<&[u8]> = vec![b"dot = 4.19774922976058349e1", b"n: 10", b"x 1.0 2.5"];
        let d = deviation(&a, &b);
        assert_eq!(d.changed, 2);
        assert!((d.max_abs - 0.5).abs() < 1e-12, "{d:?}");
        assert!((d.max_rel - 0.2).abs() < 1e-12, "{d:?}");
        // The dot product's own move: 7.1e-14 absolute, 1.7e-14 relative.
        let d = deviation(&a[..1], &b[..1]);
        assert!(d.max_abs > 7.0e-14 && d.max_abs < 7.2e-14, "{d:?}");
        assert!(d.max_rel > 1.6e-15 && d.max_rel < 1.8e-15, "{d:?}");
        // Lines of another shape are not numbers that moved; NaN for a number is infinite.
        assert_eq!(deviation(&[b"a 1"], &[b"b 2"]), Deviation::default());
        let d = deviation(&[b"1.5"], &[b"nan"]);
        assert!(d.max_abs.is_infinite() && d.max_rel.is_infinite(), "{d:?}");
        assert_eq!(
            d.merge(Deviation {
                max_abs: 1.0,
                max_rel: 0.0,
                changed: 2
            })
            .changed,
            3
        );
    }

    fn nums(line: &str) -> Vec<f64> {
        tokenize(line.as_bytes())
            .iter()
            .filter_map(|t| match t.token {
                Token::Num(_, v) => Some(v),
                _ => None,
            })
            .collect()
    }

    fn words(line: &str) -> Vec<String> {
        tokenize(line.as_bytes())
            .iter()
            .filter_map(|t| match t.token {
                Token::Word(w) => Some(String::from_utf8_lossy(w).into_owned()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn number_grammar() {
        assert_eq!(
            nums("1 -2 +3.5 .25 6. 1e3 -1.5E-2 2e+2 0007"),
            [1.0, -2.0, 3.5, 0.25, 6.0, 1000.0, -0.015, 200.0, 7.0]
        );
        // Identifiers with digits stay words; numbers glued after a word are not split off.
        assert_eq!(nums("x86_64 v2 abc123 id_7"), Vec::<f64>::new());
        assert_eq!(words("x86_64 v2"), ["x86_64", "v2"]);
        // Units after a number are words of their own.
        assert_eq!(nums("10ms 3px"), [10.0, 3.0]);
        assert_eq!(words("10ms"), ["ms"]);
        // An `e` without exponent digits is not part of the number.
        assert_eq!(nums("2e"), [2.0]);
        assert_eq!(words("2e"), ["e"]);
        // Punctuation around numbers.
        assert_eq!(nums("x=-0.5, y=(1e-3);"), [-0.5, 0.001]);
        assert_eq!(nums("a-1"), [1.0]); // a `-` after a letter is a hyphen, not a sign
        assert_eq!(nums("1-2"), [1.0, 2.0]);
    }

    #[test]
    fn named_numbers() {
        let v = nums("inf -inf +Infinity NaN -nan INF");
        assert_eq!(v.len(), 6);
        assert_eq!(v[0], f64::INFINITY);
        assert_eq!(v[1], f64::NEG_INFINITY);
        assert_eq!(v[2], f64::INFINITY);
        assert!(v[3].is_nan() && v[4].is_nan());
        assert_eq!(v[5], f64::INFINITY);
        // Words that merely start like them.
        assert!(nums("info nano infinite").is_empty());
        assert_eq!(words("info nano"), ["info", "nano"]);
    }

    #[test]
    fn zero_signs_and_subnormals() {
        assert!(compare_line(b"-0.0", b"0.0", Tolerance::Relative(0.0)).is_none());
        assert!(compare_line(b"-0", b"0", Tolerance::Absolute(0.0)).is_none());
        // 1e-310 is subnormal: it parses and compares by value.
        assert_eq!(nums("1e-310"), [1e-310]);
        assert!(compare_line(b"1e-310", b"1.0000001e-310", REL6).is_none());
        let d = compare_line(b"1e-310", b"0", REL6).unwrap();
        assert_eq!(d.numeric.unwrap().error, 1.0);
        // An absolute tolerance lets a subnormal equal zero.
        assert!(compare_line(b"1e-310", b"0", Tolerance::Absolute(1e-300)).is_none());
    }

    #[test]
    fn nan_and_infinities() {
        assert!(compare_line(b"nan", b"NaN", Tolerance::Relative(0.0)).is_none());
        assert!(compare_line(b"-nan", b"nan", Tolerance::Relative(0.0)).is_none());
        assert!(compare_line(b"inf", b"Infinity", Tolerance::Relative(0.0)).is_none());
        let d = compare_line(b"inf", b"-inf", REL6)
            .unwrap()
            .numeric
            .unwrap();
        assert!(d.error.is_infinite());
        assert!(d.to_string().contains("error ∞"), "{d}");
        assert!(compare_line(b"nan", b"1", REL6).is_some());
        assert!(compare_line(b"inf", b"1e308", REL6).is_some());
        assert!(compare_line(b"1.7e308", b"-1.7e308", REL6).is_some());
    }

    #[test]
    fn relative_and_absolute_tolerances() {
        assert!(compare_line(b"v = 1.000000000001", b"v = 1.000000000002", REL6).is_none());
        let d = compare_line(b"v = 1.00", b"v = 1.01", REL6).unwrap();
        let n = d.numeric.unwrap();
        assert_eq!((n.expected.as_str(), n.actual.as_str()), ("1.00", "1.01"));
        assert!((n.error - 0.01 / 1.01).abs() < 1e-12, "{}", n.error);
        assert_eq!(n.kind, "relative");
        assert_eq!(d.offset_a, 4);
        assert_eq!(
            n.to_string(),
            "1.00 vs 1.01: relative error 9.90e-3 > tolerance 1e-6"
        );
        // Absolute: large values with a small absolute difference fail, tiny ones pass.
        let abs = Tolerance::Absolute(1e-9);
        assert!(compare_line(b"1e-12", b"2e-12", abs).is_none());
        let n = compare_line(b"1000000", b"1000000.001", abs)
            .unwrap()
            .numeric
            .unwrap();
        assert_eq!(n.kind, "absolute");
        assert!((n.error - 0.001).abs() < 1e-9);
        // Integers are numbers too.
        assert!(compare_line(b"100", b"101", Tolerance::Relative(0.01)).is_none());
        assert!(compare_line(b"100", b"102", Tolerance::Relative(0.01)).is_some());
    }

    #[test]
    fn words_and_shape_must_match() {
        let d = compare_line(b"a 1 b", b"a 1 c", REL6).unwrap();
        assert_eq!((d.offset_a, d.numeric), (4, None));
        assert!(compare_line(b"a 1", b"a 1 2", REL6).is_some());
        assert!(compare_line(b"1 x", b"1x", REL6).is_some());
        // Space runs are alike; leading/trailing space is ignored.
        assert!(
            compare_line(b"  9.99999 |", b" 10.0000  |  ", Tolerance::Relative(1e-5)).is_none()
        );
        assert!(compare_line(b"a\tb\r", b"a b", REL6).is_none());
    }

    #[test]
    fn thousands_of_numbers_per_line() {
        let a: String = (0..5000)
            .map(|i| format!("{:.12} ", i as f64 / 7.0))
            .collect();
        let mut b: String = (0..5000)
            .map(|i| format!("{:.12} ", i as f64 / 7.0 * (1.0 + 1e-10)))
            .collect();
        assert_eq!(nums(&a).len(), 5000);
        assert!(compare_line(a.as_bytes(), b.as_bytes(), REL6).is_none());
        // Change number #4321: the difference points at it.
        let target = format!("{:.12}", 4321.0 / 7.0 * (1.0 + 1e-10));
        let at = b.find(&target).unwrap();
        b.replace_range(at..at + target.len(), "617.5");
        let d = compare_line(a.as_bytes(), b.as_bytes(), REL6).unwrap();
        assert_eq!(d.offset_b, at);
        assert_eq!(d.numeric.unwrap().actual, "617.5");
    }

    #[test]
    fn non_utf8_bytes_are_words() {
        let a = b"\xff\xfe 1.5 \xc3(";
        let t = tokenize(a);
        assert_eq!(t[0].token, Token::Word(b"\xff\xfe"));
        assert_eq!(t[2].token, Token::Num(b"1.5", 1.5));
        assert!(compare_line(a, b"\xff\xfe 1.5000001 \xc3(", REL6).is_none());
        assert!(compare_line(a, b"\xff\xfd 1.5 \xc3(", REL6).is_some());
    }

    #[test]
    fn max_error_over_texts() {
        let a: Vec<&[u8]> = vec![b"t 1.0", b"u 2.0"];
        let b: Vec<&[u8]> = vec![b"t 1.001", b"u 2.0"];
        let e = max_error(&a, &b, Tolerance::Relative(0.0)).unwrap();
        assert!((e - 0.001 / 1.001).abs() < 1e-12);
        let c: Vec<&[u8]> = vec![b"t 1.0", b"v 2.0"];
        assert_eq!(max_error(&a, &c, Tolerance::Relative(0.0)), None);
        // Different integers (a pid) are not noise, equal ones are fine.
        let p: Vec<&[u8]> = vec![b"pid 24000 x 1.0"];
        let q: Vec<&[u8]> = vec![b"pid 24001 x 1.0"];
        assert_eq!(max_error(&p, &q, Tolerance::Relative(0.0)), None);
        let q: Vec<&[u8]> = vec![b"pid 24000 x 1.0000001"];
        assert!(max_error(&p, &q, Tolerance::Relative(0.0)).is_some());
    }
}
