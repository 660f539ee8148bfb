//! The measurement engine (ARCHITECTURE §6): interleaved runs, statistics, counters.

/// `cargo optimize bench`.
pub fn bench_command(
    _g: &crate::cli::GlobalArgs,
    _args: &crate::cli::BenchArgs,
) -> anyhow::Result<i32> {
    anyhow::bail!("not yet")
}
