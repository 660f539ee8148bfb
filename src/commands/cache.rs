//! `cargo optimize cache stats|gc|clear`: what later runs reuse, and trimming it. Trimming
//! takes the same lock as `clean`, so it is refused while a run is using the folder.
//! `stats --format term|json`, to stdout or `-o FILE`.

use crate::cache;
use crate::cli::{CacheAction, CacheArgs, GlobalArgs, TermJson};
use crate::context::DirLock;
use crate::util::{human_bytes, parse_size};

pub(crate) fn run(g: &GlobalArgs, args: &CacheArgs) -> anyhow::Result<i32> {
    let dir = crate::pipeline::plan::optimize_dir(g)?;
    match &args.action {
        CacheAction::Stats(a) => {
            let text = stats(&dir, a.format);
            crate::util::atomic::emit(a.output.as_deref(), &text, g.quiet)?;
        }
        CacheAction::Gc { max_size } => {
            let max = parse_size(max_size).map_err(|e| {
                anyhow::anyhow!("--max-size: {e}\n  fix: a size such as 500M or 5G")
            })?;
            let _lock = DirLock::exclusive(&dir, "cache gc")?;
            let (removed, freed) = cache::gc(&dir, max)?;
            eprintln!(
                "removed {removed} least recently used entries ({}); the cache now fits in {}",
                human_bytes(freed),
                human_bytes(max)
            );
        }
        CacheAction::Clear => {
            let _lock = DirLock::exclusive(&dir, "cache clear")?;
            let (removed, freed) = cache::gc(&dir, 0)?;
            eprintln!("removed {removed} entries ({})", human_bytes(freed));
        }
    }
    Ok(0)
}

/// `cache stats`: a line per kind and the total, or the same as JSON.
fn stats(dir: &std::path::Path, format: TermJson) -> String {
    use std::fmt::Write as _;
    let usage = cache::usage(dir);
    let total: u64 = usage.iter().map(|u| u.bytes).sum();
    if format == TermJson::Json {
        let v = serde_json::json!({ "dir": dir, "kinds": usage, "total_bytes": total });
        return format!("{v:#}\n");
    }
    let mut s = String::new();
    for u in &usage {
        let _ = writeln!(
            s,
            "{:<10} {:>6} entries {:>10}",
            u.kind,
            u.entries,
            human_bytes(u.bytes)
        );
    }
    let _ = writeln!(
        s,
        "{:<10} {:>6}         {:>10}   ({})",
        "total",
        "",
        human_bytes(total),
        dir.display()
    );
    s
}
