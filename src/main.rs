//! Thin binary: parse the command line, call the library, map errors to exit codes.

fn main() {
    let cli = cargo_optimize::cli::parse_from_env();
    match cargo_optimize::run_cli(cli) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::exit(2);
        }
    }
}
