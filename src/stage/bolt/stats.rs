//! Reading what llvm-bolt printed: its dyno-stats tables (profile-weighted counts of
//! branches, calls and instructions before and after its passes) and how many functions
//! had a profile. Pure text parsing; must not run anything.

use std::collections::BTreeMap;

pub(crate) use crate::context::facts::DynoStat;

/// Parse BOLT's `-dyno-stats` tables. BOLT prints a header line
/// (`BOLT-INFO: program-wide dynostats …:`), the table before its optimizations, and — when
/// anything changed — the table after them (values with `(+x.y%)`/`(=)`). With several
/// headers (`-dyno-stats-all`) the first table is the input and the last the output.
pub(crate) fn parse_dyno_stats(stdout: &str) -> BTreeMap<String, DynoStat> {
    let re = regex::Regex::new(r"^\s*(\d+)\s+:\s+(.+?)(?:\s+\((?:[+-]?[0-9.]+%|=)\))?\s*$")
        .expect("valid regex");
    let mut tables: Vec<Vec<(String, u64)>> = Vec::new();
    let mut in_stats = false;
    let mut current: Vec<(String, u64)> = Vec::new();
    for line in stdout.lines() {
        if line.contains("dynostats") {
            in_stats = true;
            if !current.is_empty() {
                tables.push(std::mem::take(&mut current));
            }
            continue;
        }
        if !in_stats {
            continue;
        }
        match re.captures(line) {
            Some(c) => {
                if let Ok(v) = c[1].parse() {
                    current.push((c[2].to_string(), v));
                }
            }
            None => {
                if !current.is_empty() {
                    tables.push(std::mem::take(&mut current));
                }
                if !line.trim().is_empty() {
                    in_stats = false;
                }
            }
        }
    }
    if !current.is_empty() {
        tables.push(current);
    }
    let (Some(first), Some(last)) = (tables.first(), tables.last()) else {
        return BTreeMap::new();
    };
    let after: BTreeMap<&str, u64> = last.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    first
        .iter()
        .map(|(k, before)| {
            let after = after.get(k.as_str()).copied().unwrap_or(*before);
            (
                k.clone(),
                DynoStat {
                    before: *before,
                    after,
                },
            )
        })
        .collect()
}

/// `BOLT-INFO: 37 out of 546 functions in the binary (6.8%) have non-empty execution profile`
pub(crate) fn parse_profiled_functions(stdout: &str) -> Option<(u64, u64)> {
    let re = regex::Regex::new(
        r"(\d+) out of (\d+) functions in the binary .*have non-empty execution profile",
    )
    .expect("valid regex");
    stdout.lines().find_map(|l| {
        let c = re.captures(l)?;
        Some((c[1].parse().ok()?, c[2].parse().ok()?))
    })
}

/// `+1.2 %` from `before` to `after`, `n/a` without a base.
pub(crate) fn percent(before: u64, after: u64) -> String {
    if before == 0 {
        return "n/a".into();
    }
    format!(
        "{:+.1} %",
        (after as f64 - before as f64) / before as f64 * 100.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const DYNO: &str =
        "BOLT-INFO: 37 out of 546 functions in the binary (6.8%) have non-empty execution profile
BOLT-INFO: program-wide dynostats after all optimizations before SCTC and FOP:

              500437 : executed forward branches
                 136 : taken forward branches
           594086254 : executed instructions
                   2 : taken jump table branches
            58608420 : taken branches

              500465 : executed forward branches (+0.0%)
                  26 : taken forward branches (-80.9%)
           593586150 : executed instructions (-0.1%)
                   2 : taken jump table branches (=)
            58608258 : taken branches (-0.0%)

BOLT-INFO: padding code to 0x600000 to accommodate hot text
";

    #[test]
    fn dyno_stats_before_and_after() {
        let s = parse_dyno_stats(DYNO);
        assert_eq!(s.len(), 5);
        assert_eq!(
            s["taken forward branches"],
            DynoStat {
                before: 136,
                after: 26
            }
        );
        assert_eq!(
            s["taken jump table branches"],
            DynoStat {
                before: 2,
                after: 2
            }
        );
        assert_eq!(s["executed instructions"].after, 593586150);
        assert_eq!(parse_profiled_functions(DYNO), Some((37, 546)));
    }

    #[test]
    fn dyno_stats_without_change_have_equal_before_and_after() {
        let text = "BOLT-INFO: program-wide dynostats after all optimizations before SCTC and FOP (no change):\n\n   10 : taken branches\n    4 : all function calls\n\nBOLT-INFO: done\n";
        let s = parse_dyno_stats(text);
        assert_eq!(
            s["taken branches"],
            DynoStat {
                before: 10,
                after: 10
            }
        );
        assert!(parse_dyno_stats("BOLT-INFO: nothing\n").is_empty());
    }
}
