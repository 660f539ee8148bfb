//! `matrix` and placeholders: checking a workload's `matrix` table, enumerating its
//! combinations, and expanding `{root}` and `{key}` in string values (`{{key}}` is a
//! literal `{key}`).

use toml::Spanned;

use super::raw::RawMatrix;
use super::validate::{did_you_mean, Validator};
use super::SpecError;

/// A matrix expanding into more workloads than this is almost certainly a mistake.
const MAX_MATRIX: usize = 1000;

impl Validator<'_> {
    pub(super) fn matrix(
        &self,
        m: &Spanned<RawMatrix>,
        root: &str,
    ) -> Result<Vec<MatrixKey>, SpecError> {
        if m.get_ref().is_empty() {
            return Err(self.at(m, "`matrix` is empty", Some("write e.g. matrix = { size = [\"1\", \"10\"] } and use \"{size}\" in args, or remove `matrix`".into())));
        }
        let mut keys: Vec<MatrixKey> = Vec::new();
        let mut total: usize = 1;
        for (key, values) in m.get_ref() {
            let k = key.get_ref();
            if !is_ident(k) {
                return Err(self.at(
                    key,
                    format!("matrix key `{k}` is not a valid placeholder name"),
                    Some("use letters, digits, '_' and '-', starting with a letter or '_'".into()),
                ));
            }
            if k == "root" {
                return Err(self.at(
                    key,
                    "`root` cannot be a matrix key: {root} is the spec's folder",
                    Some("rename the key".into()),
                ));
            }
            if values.get_ref().is_empty() {
                return Err(self.at(
                    values,
                    format!("matrix key `{k}` has no values"),
                    Some(format!(
                        "list at least one value, e.g. {k} = [\"1\", \"10\"]"
                    )),
                ));
            }
            let ex = Expander {
                cx: self,
                root,
                vars: &[],
            };
            let mut vals: Vec<(String, String)> = Vec::new();
            for v in values.get_ref() {
                let raw = &v.get_ref().0;
                if vals.iter().any(|(r, _)| r == raw) {
                    return Err(self.at(
                        v,
                        format!("matrix value \"{raw}\" is listed twice for `{k}`"),
                        Some("remove the second one".into()),
                    ));
                }
                let expanded = ex.expand(&Spanned::new(v.span(), raw.clone()), &mut [])?;
                vals.push((raw.clone(), expanded));
            }
            total = total.saturating_mul(vals.len());
            keys.push(MatrixKey {
                key: key.clone(),
                values: vals,
            });
        }
        if total > MAX_MATRIX {
            return Err(self.at(
                m,
                format!("matrix expands into {total} workloads (at most {MAX_MATRIX})"),
                Some("use fewer values per key".into()),
            ));
        }
        // The table's order, not the map's (sorted) order.
        keys.sort_by_key(|k| k.key.span().start);
        Ok(keys)
    }
}

/// One matrix key with its values: (as written, with `{root}` expanded).
pub(super) struct MatrixKey {
    pub(super) key: Spanned<String>,
    pub(super) values: Vec<(String, String)>,
}

/// Every combination of value indices, first key outermost.
pub(super) fn combinations(matrix: &[MatrixKey]) -> Vec<Vec<usize>> {
    let mut combos: Vec<Vec<usize>> = vec![Vec::new()];
    for k in matrix {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                (0..k.values.len()).map(move |j| {
                    let mut c = c.clone();
                    c.push(j);
                    c
                })
            })
            .collect();
    }
    combos
}

/// Replaces `{root}` and matrix placeholders in one string value.
pub(super) struct Expander<'a> {
    pub(super) cx: &'a Validator<'a>,
    pub(super) root: &'a str,
    pub(super) vars: &'a [(&'a str, &'a str)],
}

impl Expander<'_> {
    /// `{name}` (a letter or `_`, then letters, digits, `_`, `-`) is a placeholder; `{{name}}`
    /// is a literal `{name}`; any other brace is literal text. `used[i]` is set when
    /// `vars[i]` is used.
    pub(super) fn expand(
        &self,
        v: &Spanned<String>,
        used: &mut [bool],
    ) -> Result<String, SpecError> {
        let s = v.get_ref();
        let mut out = String::with_capacity(s.len());
        let mut rest = s.as_str();
        while let Some(i) = rest.find('{') {
            out.push_str(&rest[..i]);
            let after = &rest[i + 1..];
            if let Some(inner) = after.strip_prefix('{') {
                let n = ident_len(inner);
                if n > 0 && inner[n..].starts_with("}}") {
                    out.push('{');
                    out.push_str(&inner[..n]);
                    out.push('}');
                    rest = &inner[n + 2..];
                    continue;
                }
            }
            let n = ident_len(after);
            if n > 0 && !after[n..].starts_with('}') && self.looks_like_placeholder(&after[..n]) {
                return Err(self.unclosed(v, &after[..n]));
            }
            if n == 0 || !after[n..].starts_with('}') {
                out.push('{');
                rest = after;
                continue;
            }
            let name = &after[..n];
            if name == "root" {
                out.push_str(self.root);
            } else if let Some(j) = self.vars.iter().position(|(k, _)| *k == name) {
                out.push_str(self.vars[j].1);
                if let Some(u) = used.get_mut(j) {
                    *u = true;
                }
            } else {
                return Err(self.unknown(v, name));
            }
            rest = &after[n + 1..];
        }
        out.push_str(rest);
        if out.contains('\0') {
            self.cx.no_nul(&Spanned::new(v.span(), out.clone()))?;
        }
        Ok(out)
    }

    /// Whether an unclosed `{name` was meant as a placeholder: `name` is, starts with, or
    /// is a likely typo of a known one (other text, such as `{"k": 1}`, stays literal).
    fn looks_like_placeholder(&self, name: &str) -> bool {
        let mut known: Vec<&str> = vec!["root"];
        known.extend(self.vars.iter().map(|(k, _)| *k));
        known.iter().any(|k| name.starts_with(k)) || did_you_mean(name, &known).is_some()
    }

    fn unclosed(&self, v: &Spanned<String>, name: &str) -> SpecError {
        let opened = format!("{{{name}");
        let span = v.span();
        let offset = self
            .cx
            .text
            .get(span.clone())
            .and_then(|t| t.find(&opened))
            .map_or(span.start, |i| span.start + i);
        let known = ["root"]
            .into_iter()
            .chain(self.vars.iter().map(|(k, _)| *k))
            .find(|k| name.starts_with(k))
            .or_else(|| {
                let mut known: Vec<&str> = vec!["root"];
                known.extend(self.vars.iter().map(|(k, _)| *k));
                did_you_mean(name, &known)
            })
            .unwrap_or(name);
        self.cx.invalid(
            offset,
            format!("unclosed placeholder {opened}: the closing `}}` is missing"),
            Some(format!(
                "write {{{known}}}, e.g. \"{{{known}}}/data/input.txt\" (write {{{{{known}}}}} for a literal {{{known}}})"
            )),
        )
    }

    fn unknown(&self, v: &Spanned<String>, name: &str) -> SpecError {
        let placeholder = format!("{{{name}}}");
        // Point at the placeholder itself when the value is written literally.
        let span = v.span();
        let offset = self
            .cx
            .text
            .get(span.clone())
            .and_then(|t| t.find(&placeholder))
            .map_or(span.start, |i| span.start + i);
        let mut known: Vec<&str> = vec!["root"];
        known.extend(self.vars.iter().map(|(k, _)| *k));
        let listed = known
            .iter()
            .map(|k| format!("{{{k}}}"))
            .collect::<Vec<_>>()
            .join(", ");
        let mut fix = match did_you_mean(name, &known) {
            Some(k) => format!("did you mean {{{k}}}? known placeholders here: {listed}"),
            None => format!("known placeholders here: {listed}"),
        };
        if self.vars.is_empty() {
            fix.push_str(&format!("; to run once per value add matrix = {{ {name} = [\"a\", \"b\"] }} to the workload"));
        }
        fix.push_str(&format!(
            "; write {{{{{name}}}}} for a literal {placeholder}"
        ));
        self.cx.invalid(
            offset,
            format!("unknown placeholder {placeholder}"),
            Some(fix),
        )
    }
}

fn ident_len(s: &str) -> usize {
    let mut chars = s.char_indices();
    match chars.next() {
        Some((_, c)) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return 0,
    }
    chars
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
        .map_or(s.len(), |(i, _)| i)
}

fn is_ident(s: &str) -> bool {
    !s.is_empty() && ident_len(s) == s.len()
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{Fixture, ONE};
    use std::path::PathBuf;

    #[test]
    fn matrix_expansion() {
        let f = Fixture::new();
        let spec = f.ok(
            "[[workload]]\nname = \"parse\"\nargs = [\"--size\", \"{size}\", \"--mode={mode}\"]\n\
             env = { MODE = \"{mode}\" }\nmatrix = { size = [\"1\", \"10\"], mode = [\"fast\", \"slow\"] }\n",
        );
        let names: Vec<&str> = spec.workloads.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "parse[size=1,mode=fast]",
                "parse[size=1,mode=slow]",
                "parse[size=10,mode=fast]",
                "parse[size=10,mode=slow]",
            ]
        );
        let args: Vec<Vec<String>> = spec.workloads.iter().map(|w| w.args.clone()).collect();
        assert_eq!(
            args,
            [
                ["--size", "1", "--mode=fast"],
                ["--size", "1", "--mode=slow"],
                ["--size", "10", "--mode=fast"],
                ["--size", "10", "--mode=slow"],
            ]
        );
        assert_eq!(spec.workloads[3].env["MODE"], "slow");
        assert!(spec.workloads.iter().all(|w| w.line == 1));
        // Keys follow the table's order, not alphabetical order; numbers are accepted as text.
        let spec = f.ok(
            "[[workload]]\nname = \"w\"\nargs = [\"{z}{a}\"]\n[workload.matrix]\nz = [1, 2]\na = [\"x\"]\n",
        );
        let names: Vec<&str> = spec.workloads.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["w[z=1,a=x]", "w[z=2,a=x]"]);
        assert_eq!(spec.workloads[1].args, ["2x"]);
        // A name that mentions a key takes its value; the other keys are appended.
        let spec = f.ok(
            "[[workload]]\nname = \"eval-{script}\"\nargs = [\"{script}.rhai\", \"{n}\"]\nmatrix = { script = [\"primes\", \"fib\"], n = [\"3\"] }\n",
        );
        let names: Vec<&str> = spec.workloads.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["eval-primes[n=3]", "eval-fib[n=3]"]);
        // A matrix name can clash with a plain workload.
        let (line, col, msg, _) = f.err(&format!(
            "{ONE}[[workload]]\nname = \"w\"\nargs = [\"{{n}}\"]\nmatrix = {{ n = [\"1\"] }}\n[[workload]]\nname = \"w[n=1]\"\n"
        ));
        assert_eq!((line, col), (8, 8));
        assert_eq!(
            msg,
            "duplicate workload name \"w[n=1]\" (first defined on line 3)"
        );
    }

    #[test]
    fn matrix_errors() {
        let f = Fixture::new();
        let (line, col, msg, _) = f.err(&format!(
            "{ONE}args = [\"{{a}}\"]\nmatrix = {{ a = [\"1\"], b = [\"2\"] }}\n"
        ));
        assert_eq!((line, col), (4, 23));
        assert!(msg.starts_with("matrix key `b` is not used"), "{msg}");
        let (line, col, msg, _) =
            f.err(&format!("{ONE}args = [\"{{a}}\"]\nmatrix = {{ a = [] }}\n"));
        assert_eq!((line, col), (4, 16));
        assert_eq!(msg, "matrix key `a` has no values");
        let (line, col, msg, _) = f.err(&format!(
            "{ONE}args = [\"{{a}}\"]\nmatrix = {{ a = [\"1\", \"1\"] }}\n"
        ));
        assert_eq!((line, col), (4, 22));
        assert_eq!(msg, "matrix value \"1\" is listed twice for `a`");
        let (line, col, _, _) = f.err(&format!("{ONE}matrix = {{ root = [\"1\"] }}\n"));
        assert_eq!((line, col), (3, 12));
    }

    #[test]
    fn root_expansion() {
        let f = Fixture::new();
        f.file("data/in.txt");
        let root = f.root();
        let r = root.display().to_string();
        let spec = f.ok(
            "[[workload]]\nname = \"w\"\nargs = [\"{root}/data/in.txt\", \"x{root}y\"]\n\
             stdin = \"{root}/data/in.txt\"\nenv = { DATA = \"{root}/data\" }\ncwd = \"{root}/data\"\n\
             files = [\"out.txt\"]\n",
        );
        let w = &spec.workloads[0];
        assert_eq!(w.args, [format!("{r}/data/in.txt"), format!("x{r}y")]);
        assert_eq!(w.stdin, Some(root.join("data/in.txt")));
        assert_eq!(w.env["DATA"], format!("{r}/data"));
        assert_eq!(w.cwd, root.join("data"));
        assert_eq!(w.files, [PathBuf::from("out.txt")]);
        // `files` are relative to the cwd: `{root}/…` makes an absolute path, refused with
        // the relative form as the fix.
        let (line, col, msg, fix) = f.err(&format!("{ONE}files = [\"{{root}}/out.txt\"]\n"));
        assert_eq!((line, col), (3, 10));
        assert_eq!(
            msg,
            format!(
                "output file {r}/out.txt is an absolute path; `files` must be relative to the workload's cwd"
            )
        );
        assert!(fix.starts_with("write files = ['out.txt']"), "{fix}");
        // In matrix values too, and relative paths resolve against the spec's folder.
        let spec = f.ok(
            "[[workload]]\nname = \"w\"\nstdin = \"{f}\"\ncwd = \"./data\"\nmatrix = { f = [\"{root}/data/in.txt\", \"data/in.txt\"] }\n",
        );
        assert_eq!(spec.workloads[0].stdin, Some(root.join("data/in.txt")));
        assert_eq!(spec.workloads[1].stdin, Some(root.join("data/in.txt")));
        assert_eq!(spec.workloads[0].cwd, root.join("data"));
        assert_eq!(spec.workloads[0].name, "w[f={root}/data/in.txt]");
    }

    #[test]
    fn literal_braces() {
        let f = Fixture::new();
        let spec = f.ok(&format!(
            "{ONE}args = ['a{{3}}', '{{\"k\": 1}}', '{{}}', '{{{{size}}}}', 'x{{']\n"
        ));
        assert_eq!(
            spec.workloads[0].args,
            ["a{3}", "{\"k\": 1}", "{}", "{size}", "x{"]
        );
    }

    #[test]
    fn unclosed_placeholder() {
        let f = Fixture::new();
        let (line, col, msg, fix) =
            f.err(&format!("{ONE}args = [\"--in\", \"{{root/data.txt\"]\n"));
        assert_eq!((line, col), (3, 18));
        assert_eq!(
            msg,
            "unclosed placeholder {root: the closing `}` is missing"
        );
        assert!(fix.starts_with("write {root}, e.g."), "{fix}");
        let (_, _, msg, fix) = f.err(&format!(
            "{ONE}args = [\"{{size\"]\nmatrix = {{ size = [\"1\"] }}\n"
        ));
        assert!(msg.starts_with("unclosed placeholder {size"), "{msg}");
        assert!(fix.starts_with("write {size}"), "{fix}");
        // A typo of a known name is caught too; other braces stay literal text.
        let (_, _, msg, _) = f.err(&format!("{ONE}args = [\"{{rot\"]\n"));
        assert!(msg.starts_with("unclosed placeholder {rot"), "{msg}");
        let spec = f.ok(&format!("{ONE}args = ['{{a: 1', '{{x']\n"));
        assert_eq!(spec.workloads[0].args, ["{a: 1", "{x"]);
    }

    #[test]
    fn unknown_placeholder() {
        let f = Fixture::new();
        let (line, col, msg, fix) = f.err(&format!("{ONE}args = [\"--in\", \"{{roots}}/x\"]\n"));
        assert_eq!((line, col), (3, 18));
        assert_eq!(msg, "unknown placeholder {roots}");
        assert!(
            fix.starts_with("did you mean {root}? known placeholders here: {root};"),
            "{fix}"
        );
        let (line, col, msg, fix) = f.err(&format!(
            "{ONE}env = {{ A = \"1\", B = \"-{{sise}}\" }}\nargs = [\"{{size}}\"]\nmatrix = {{ size = [\"1\"] }}\n"
        ));
        assert_eq!((line, col), (3, 24));
        assert_eq!(msg, "unknown placeholder {sise}");
        assert!(
            fix.starts_with("did you mean {size}? known placeholders here: {root}, {size};"),
            "{fix}"
        );
    }
}
