//! A Rust source file parsed (`syn`) for the alloc stage: the `#[global_allocator]` items
//! it declares and whether each is compiled for the target being built, and the name the
//! stage's own item can take without colliding with any item of the file.
//!
//! An allocator is a `static` item carrying `#[global_allocator]` directly or through
//! `#[cfg_attr(PRED, …, global_allocator, …)]` (`cfg_attr` nested in one too), at any depth
//! of the file: inline `mod m { … }` blocks, function bodies. Whether it is compiled is its
//! conditions — every `#[cfg(…)]` of it and of the items around it, every `cfg_attr`
//! predicate on the way to its attribute — evaluated (`all`, `any`, `not`, `key = "value"`,
//! bare names) against the target's `rustc --print cfg` lines (`debug_assertions` left out:
//! the stage builds optimized profiles). A condition this module cannot read counts as
//! true: such an allocator refuses the stage rather than risk two. Comments, strings and
//! raw strings are tokens syn never takes for attributes.
//!
//! Not seen: an allocator a macro's expansion declares (`macro_rules!` or a proc macro's
//! output; the invocation is tokens until rustc expands it), one in a file reached through
//! `mod m;` that is not in the package's `src/` (`#[path]` elsewhere), and cargo features:
//! `feature = "…"` is not among rustc's cfg lines, so a predicate on a feature is false.

use syn::visit::Visit;

/// A `#[global_allocator]` the file declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Declared {
    /// 1-based line of the attribute that makes it the allocator.
    pub line: usize,
    /// The condition under which rustc compiles it, as cfg predicate text (`None`: always).
    pub when: Option<String>,
    /// Whether that condition holds for the target's cfg.
    pub active: bool,
}

/// A file syn could not parse: the 1-based line and column of its error, and its words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unparsed {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl std::fmt::Display for Unparsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

/// What the stage reads of a file: its allocators ([`allocators`]), the name its item can
/// take ([`free_name`]) and the line of its `#![no_std]` ([`no_std`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Scan {
    pub allocators: Vec<Declared>,
    pub free_name: String,
    pub no_std: Option<usize>,
}

/// The file `text` parsed and read for a target whose `rustc --print cfg` lines are `cfg`,
/// or where syn stopped. The thread's record of parsed text behind line numbers (which
/// proc-macro2 otherwise keeps for good) is freed once the file is read.
pub(crate) fn scan(text: &str, cfg: &[String]) -> Result<Scan, Unparsed> {
    let out = parse(text).map(|file| Scan {
        allocators: allocators(&file, cfg),
        free_name: free_name(&file),
        no_std: no_std(&file),
    });
    proc_macro2::extra::invalidate_current_thread_spans();
    out
}

/// The file `text` parsed, or where syn stopped.
fn parse(text: &str) -> Result<syn::File, Unparsed> {
    syn::parse_file(text).map_err(|e| {
        let at = e.span().start();
        Unparsed {
            line: at.line,
            column: at.column + 1,
            message: e.to_string(),
        }
    })
}

/// Every `#[global_allocator]` of `file`, in source order, its condition evaluated against
/// `cfg` (`rustc --print cfg` lines).
fn allocators(file: &syn::File, cfg: &[String]) -> Vec<Declared> {
    let mut v = Finder {
        cfg: parse_cfg(cfg),
        around: Vec::new(),
        found: Vec::new(),
    };
    v.visit_file(file);
    v.found
}

/// The line of the file's `#![no_std]` (directly or through `cfg_attr`), if it has one.
fn no_std(file: &syn::File) -> Option<usize> {
    use syn::spanned::Spanned as _;
    file.attrs.iter().find_map(|attr| {
        let mut metas = Vec::new();
        unfold(&attr.meta, &[], &[], &mut metas);
        (metas.iter().any(|(_, m)| m.path().is_ident("no_std"))).then(|| attr.span().start().line)
    })
}

/// The name for the stage's static: `GLOBAL_ALLOCATOR`, else `GLOBAL_ALLOCATOR_2`, … — the
/// first no item at the file's top level is named (`use … as X` and `extern crate … as X`
/// renames included).
fn free_name(file: &syn::File) -> String {
    let taken: std::collections::BTreeSet<String> = file.items.iter().flat_map(names).collect();
    (1..)
        .map(|n| match n {
            1 => "GLOBAL_ALLOCATOR".to_string(),
            n => format!("GLOBAL_ALLOCATOR_{n}"),
        })
        .find(|n| !taken.contains(n))
        .expect("an unbounded range")
}

/// The names an item brings into its module's namespaces.
fn names(item: &syn::Item) -> Vec<String> {
    use syn::Item;
    let one = |i: &syn::Ident| vec![i.to_string()];
    match item {
        Item::Const(i) => one(&i.ident),
        Item::Enum(i) => one(&i.ident),
        Item::ExternCrate(i) => match &i.rename {
            Some((_, r)) => one(r),
            None => one(&i.ident),
        },
        Item::Fn(i) => one(&i.sig.ident),
        Item::ForeignMod(m) => m
            .items
            .iter()
            .filter_map(|f| match f {
                syn::ForeignItem::Fn(f) => Some(f.sig.ident.to_string()),
                syn::ForeignItem::Static(s) => Some(s.ident.to_string()),
                syn::ForeignItem::Type(t) => Some(t.ident.to_string()),
                _ => None,
            })
            .collect(),
        Item::Macro(i) => i.ident.iter().map(|i| i.to_string()).collect(),
        Item::Mod(i) => one(&i.ident),
        Item::Static(i) => one(&i.ident),
        Item::Struct(i) => one(&i.ident),
        Item::Trait(i) => one(&i.ident),
        Item::TraitAlias(i) => one(&i.ident),
        Item::Type(i) => one(&i.ident),
        Item::Union(i) => one(&i.ident),
        Item::Use(u) => {
            let mut out = Vec::new();
            use_names(&u.tree, &mut out);
            out
        }
        _ => Vec::new(),
    }
}

/// The names a `use` tree binds (a glob binds none a local item could collide with).
fn use_names(tree: &syn::UseTree, out: &mut Vec<String>) {
    match tree {
        syn::UseTree::Path(p) => use_names(&p.tree, out),
        syn::UseTree::Name(n) => out.push(n.ident.to_string()),
        syn::UseTree::Rename(r) => out.push(r.rename.to_string()),
        syn::UseTree::Group(g) => g.items.iter().for_each(|t| use_names(t, out)),
        syn::UseTree::Glob(_) => {}
    }
}

/// A cfg value: `unix` is `("unix", None)`, `target_os="linux"` `("target_os", Some("linux"))`.
type CfgValue = (String, Option<String>);

/// `rustc --print cfg` lines as values, `debug_assertions` left out.
fn parse_cfg(lines: &[String]) -> Vec<CfgValue> {
    lines
        .iter()
        .filter_map(|l| {
            let l = l.trim();
            let v = match l.split_once('=') {
                Some((k, v)) => (
                    k.trim().to_string(),
                    Some(v.trim().trim_matches('"').into()),
                ),
                None => (l.to_string(), None),
            };
            (!l.is_empty() && v.0 != "debug_assertions").then_some(v)
        })
        .collect()
}

/// Whether the predicate `m` holds for `cfg`; `None` when it is not one this reads.
fn holds(m: &syn::Meta, cfg: &[CfgValue]) -> Option<bool> {
    let key = |p: &syn::Path| p.get_ident().map(|i| i.to_string());
    match m {
        syn::Meta::Path(p) => {
            let k = key(p)?;
            Some(cfg.iter().any(|(ck, cv)| *ck == k && cv.is_none()))
        }
        syn::Meta::NameValue(nv) => {
            let k = key(&nv.path)?;
            let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) = &nv.value
            else {
                return None;
            };
            let v = s.value();
            Some(
                cfg.iter()
                    .any(|(ck, cv)| *ck == k && cv.as_deref() == Some(&v)),
            )
        }
        syn::Meta::List(l) => {
            let inner = l.parse_args_with(Punctuated::parse_terminated).ok()?;
            let vals: Option<Vec<bool>> = inner.iter().map(|m| holds(m, cfg)).collect();
            let vals = vals?;
            match key(&l.path)?.as_str() {
                "all" => Some(vals.iter().all(|b| *b)),
                "any" => Some(vals.iter().any(|b| *b)),
                "not" if vals.len() == 1 => Some(!vals[0]),
                _ => None,
            }
        }
    }
}

type Punctuated = syn::punctuated::Punctuated<syn::Meta, syn::Token![,]>;

/// A condition: a predicate's text and its value (`None`: not readable).
type Cond = (String, Option<bool>);

/// The predicate `m` as a condition: its text as the file spells it (tokens re-printed when
/// the span has no text).
fn cond(m: &syn::Meta, cfg: &[CfgValue]) -> Cond {
    use quote::ToTokens as _;
    use syn::spanned::Spanned as _;
    let text = (m.span().source_text()).unwrap_or_else(|| m.to_token_stream().to_string());
    (text, holds(m, cfg))
}

/// An attribute's effective meta items once every `cfg_attr` is unfolded, each with the
/// `cfg_attr` predicates it sits under. An unreadable `cfg_attr` is kept as it is.
fn unfold(
    meta: &syn::Meta,
    under: &[Cond],
    cfg: &[CfgValue],
    out: &mut Vec<(Vec<Cond>, syn::Meta)>,
) {
    if let syn::Meta::List(l) = meta {
        if l.path.is_ident("cfg_attr") {
            if let Ok(parts) = l.parse_args_with(Punctuated::parse_terminated) {
                let mut parts = parts.into_iter();
                if let Some(pred) = parts.next() {
                    let mut inner = under.to_vec();
                    inner.push(cond(&pred, cfg));
                    parts.for_each(|m| unfold(&m, &inner, cfg, out));
                    return;
                }
            }
        }
    }
    out.push((under.to_vec(), meta.clone()));
}

/// `all(..)` of conditions as one (`None` for none), and whether it holds.
fn all(conds: &[Cond]) -> (Option<String>, bool) {
    let holds = conds.iter().all(|(_, v)| v.unwrap_or(true));
    let text = match conds {
        [] => None,
        [(one, _)] => Some(one.clone()),
        many => Some(format!(
            "all({})",
            many.iter()
                .map(|(t, _)| t.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    };
    (text, holds)
}

/// An item's conditions from its attributes (`cfg`, and `cfg` under `cfg_attr`: it holds
/// when the `cfg_attr` predicate does not, or the `cfg` does), and the `global_allocator`
/// attributes among them with their line and own `cfg_attr` predicates.
fn conditions(attrs: &[syn::Attribute], cfg: &[CfgValue]) -> (Vec<Cond>, Vec<(usize, Vec<Cond>)>) {
    use syn::spanned::Spanned as _;
    let (mut conds, mut allocs) = (Vec::new(), Vec::new());
    for attr in attrs {
        let mut metas = Vec::new();
        unfold(&attr.meta, &[], cfg, &mut metas);
        for (under, meta) in metas {
            if meta.path().is_ident("global_allocator") {
                allocs.push((attr.span().start().line, under));
            } else if let (true, syn::Meta::List(l)) = (meta.path().is_ident("cfg"), &meta) {
                let pred = l.parse_args::<syn::Meta>();
                let c = match &pred {
                    Ok(p) => cond(p, cfg),
                    Err(_) => (l.tokens.to_string(), None),
                };
                conds.push(match all(&under) {
                    (None, _) => c,
                    (Some(t), h) => (
                        format!("any(not({t}), {})", c.0),
                        Some(!h || c.1.unwrap_or(true)),
                    ),
                });
            }
        }
    }
    (conds, allocs)
}

/// The walk: the conditions of the items around, and the allocators found.
struct Finder {
    cfg: Vec<CfgValue>,
    around: Vec<Vec<Cond>>,
    found: Vec<Declared>,
}

impl Finder {
    fn enter(&mut self, attrs: &[syn::Attribute]) -> Vec<(usize, Vec<Cond>)> {
        let (conds, allocs) = conditions(attrs, &self.cfg);
        self.around.push(conds);
        allocs
    }
}

impl<'ast> Visit<'ast> for Finder {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs: &[syn::Attribute] = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Static(s) => &s.attrs,
            syn::Item::Const(c) => &c.attrs,
            syn::Item::Trait(t) => &t.attrs,
            _ => &[],
        };
        let allocs = self.enter(attrs);
        if let syn::Item::Static(_) = item {
            for (line, own) in allocs {
                let conds: Vec<Cond> = self.around.iter().flatten().chain(&own).cloned().collect();
                let (when, active) = all(&conds);
                self.found.push(Declared { line, when, active });
            }
        }
        syn::visit::visit_item(self, item);
        self.around.pop();
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.enter(&f.attrs);
        syn::visit::visit_impl_item_fn(self, f);
        self.around.pop();
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        self.enter(&f.attrs);
        syn::visit::visit_trait_item_fn(self, f);
        self.around.pop();
    }
}
