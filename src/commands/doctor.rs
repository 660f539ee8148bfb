//! `cargo optimize doctor`: the toolchain, LLVM tools, CPU and perf facts, with fixes;
//! `--format term|json` (`--json` the same as `--format json`), `-o FILE`.

use crate::cli::{DoctorArgs, GlobalArgs, TermJson};

pub(crate) fn run(g: &GlobalArgs, args: &DoctorArgs) -> anyhow::Result<i32> {
    let json = args.format == TermJson::Json;
    let color = args.output.is_none() && crate::ui::stdout_color(g.color.forced());
    let (text, code) = crate::toolchain::doctor_command(args.fix, json, color)?;
    super::emit(args.output.as_deref(), &text, g.quiet)?;
    Ok(code)
}
