//! `cargo optimize doctor`: the toolchain, LLVM tools, CPU and perf facts, with fixes.

use crate::cli::DoctorArgs;

pub fn run(args: &DoctorArgs) -> anyhow::Result<i32> {
    crate::toolchain::doctor_command(args.fix, args.json)
}
