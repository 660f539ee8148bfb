//! One file per subcommand, dispatched one-to-one from lib.rs.

pub mod bench;
