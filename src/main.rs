//! Thin binary: parse the command line, call the library, map errors to exit codes. A
//! closed stdout (`cargo optimize report --format json | head -1`) ends the command
//! quietly with exit 0, whether it shows as an error or as a panic of `print!`.

fn main() {
    quiet_on_closed_stdout();
    match cargo_optimize::run_from_env() {
        Ok(code) => std::process::exit(code),
        Err(e) if broken_pipe(&e) => std::process::exit(0),
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::exit(2);
        }
    }
}

/// Whether `e` is, at its root, a write to a pipe whose reader has gone.
fn broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// `print!` panics when stdout's reader has gone: exit 0 then, silently; any other panic
/// is reported as before.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
    }));
}
