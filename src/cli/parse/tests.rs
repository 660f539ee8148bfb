use super::*;

fn ok(args: &[&str]) -> Parsed {
    let mut all = vec!["cargo-optimize"];
    all.extend_from_slice(args);
    parse(all).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn err(args: &[&str]) -> String {
    let mut all = vec!["cargo-optimize"];
    all.extend_from_slice(args);
    match parse(all) {
        Ok(p) => panic!("{args:?} parsed: {p:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn global_options_go_before_or_after_the_subcommand() {
    for args in [
        &["-q", "--color", "never", "doctor"][..],
        &["doctor", "-q", "--color", "never"],
        &["-q", "doctor", "--color=never"],
    ] {
        let p = ok(args);
        assert!(matches!(p.command, Action::Doctor(_)), "{args:?}");
        assert!(p.global.quiet);
        assert_eq!(p.global.color, Color::Never);
    }
    for args in [
        &["--manifest-path", "x/Cargo.toml", "--locked", "report"][..],
        &["report", "--manifest-path", "x/Cargo.toml", "--locked"],
    ] {
        let p = ok(args);
        assert!(matches!(p.command, Action::Report(_)));
        assert_eq!(
            p.global.selection.manifest_path,
            Some("x/Cargo.toml".into())
        );
        assert!(p.global.selection.locked);
    }
    let p = ok(&[
        "-vv",
        "--offline",
        "--config",
        "a=1",
        "clean",
        "--frozen",
        "--config",
        "b=2",
    ]);
    assert_eq!(p.global.verbose, 2);
    assert!(p.global.selection.offline && p.global.selection.frozen);
    // Given on both sides, the subcommand's values win (clap's rule for global options).
    assert_eq!(p.global.selection.config, ["b=2"]);
}

#[test]
fn package_options_before_a_subcommand_that_takes_them_are_its_own() {
    for args in [
        &[
            "-p",
            "srv",
            "-F",
            "simd",
            "-j",
            "3",
            "check",
            "--against",
            "HEAD",
        ][..],
        &[
            "check",
            "-p",
            "srv",
            "-F",
            "simd",
            "-j",
            "3",
            "--against",
            "HEAD",
        ],
    ] {
        let p = ok(args);
        let Action::Check(c) = &p.command else {
            panic!("{args:?}")
        };
        assert_eq!(c.against.as_deref(), Some("HEAD"));
        let s = &p.global.selection;
        assert_eq!(s.package.as_deref(), Some("srv"));
        assert_eq!(s.features, ["simd"]);
        assert_eq!(s.jobs, Some(3));
        assert_eq!(s.profile, "release");
    }
    for args in [
        &["--target-dir", "/t", "cache", "stats"][..],
        &["cache", "--target-dir", "/t", "stats"],
        &["cache", "stats", "--target-dir", "/t"],
        &["cache", "gc", "--max-size", "1G", "--target-dir", "/t"],
    ] {
        let p = ok(args);
        assert_eq!(p.global.selection.target_dir, Some("/t".into()), "{args:?}");
    }
    let p = ok(&["-j", "2", "release", "--dry-run"]);
    let Action::Release(r) = &p.command else {
        panic!()
    };
    assert_eq!(r.jobs, Some(2), "release's -j is the global -j");
    let p = ok(&["--profile", "bench", "-p", "x", "profile", "collect"]);
    assert_eq!(p.global.selection.profile, "bench");
}

#[test]
fn an_option_the_subcommand_does_not_take_is_refused_by_name() {
    let e = err(&["-p", "srv", "doctor"]);
    assert!(
        e.contains("`--package` is not an option of `cargo optimize doctor`"),
        "{e}"
    );
    assert!(e.contains("fix:"), "{e}");
    let e = err(&["--features", "x", "clean"]);
    assert!(
        e.contains("`--features` is not an option of `cargo optimize clean`"),
        "{e}"
    );
    let e = err(&["--stages", "pgo", "report"]);
    assert!(
        e.contains("`--stages`") && e.contains("option of the run"),
        "{e}"
    );
    // After the subcommand clap itself refuses it.
    let e = err(&["clean", "-p", "x"]);
    assert!(e.contains("unexpected argument"), "{e}");
}

#[test]
fn the_run_is_the_default_and_takes_its_options_anywhere() {
    let p = ok(&[
        "--stages",
        "pgo,bolt",
        "-p",
        "x",
        "--message-format",
        "json",
    ]);
    let Action::Run(r) = &p.command else { panic!() };
    assert_eq!(
        r.stages.as_deref(),
        Some(&["pgo".to_string(), "bolt".into()][..])
    );
    assert_eq!(r.message_format, MessageFormat::Json);
    assert_eq!(p.global.selection.package.as_deref(), Some("x"));
    let p = ok(&["-p", "x", "run", "--budget", "5m"]);
    let Action::Run(r) = &p.command else { panic!() };
    assert_eq!(r.budget.as_deref(), Some("5m"));
    assert_eq!(p.global.selection.package.as_deref(), Some("x"));
    let p = ok(&["--", "--input", "a b"]);
    let Action::Run(r) = &p.command else { panic!() };
    assert_eq!(r.args, ["--input", "a b"]);
}

#[test]
fn a_mistyped_subcommand_gets_a_suggestion() {
    let e = err(&["bnech"]);
    assert!(e.contains("bnech") && e.contains("bench"), "{e}");
    let e = err(&["-q", "hotspts"]);
    assert!(e.contains("hotspots"), "{e}");
}

#[test]
fn each_subcommand_lists_only_the_options_it_uses() {
    let mut cmd = command();
    cmd.build();
    for name in ["clean", "doctor", "completions"] {
        let help = cmd
            .find_subcommand_mut(name)
            .unwrap()
            .render_long_help()
            .to_string();
        for flag in ["--features", "--profile", "--package", "--stages"] {
            assert!(!help.contains(flag), "{name} lists {flag}:\n{help}");
        }
        assert!(
            help.contains("--color") && help.contains("--locked"),
            "{name}"
        );
    }
    let stats = cmd
        .find_subcommand_mut("cache")
        .unwrap()
        .find_subcommand_mut("stats")
        .unwrap()
        .render_long_help()
        .to_string();
    assert!(
        !stats.contains("--features") && !stats.contains("--package"),
        "{stats}"
    );
    let check = cmd
        .find_subcommand_mut("check")
        .unwrap()
        .render_long_help()
        .to_string();
    for heading in [
        "Package Selection:",
        "Feature Selection:",
        "Compilation Options:",
        "Manifest Options:",
        "Examples:",
        "Exit codes:",
    ] {
        assert!(check.contains(heading), "check --help lacks {heading}");
    }
}

#[test]
fn short_help_is_short_and_long_help_has_examples_and_exit_codes() {
    let mut cmd = command();
    let short = cmd.render_help().to_string();
    let long = cmd.render_long_help().to_string();
    assert!(!short.contains("Examples:"));
    assert!(short.lines().count() < long.lines().count());
    assert!(long.contains("Examples:") && long.contains("Exit codes:"));
    let mut built = command();
    built.build();
    for sub in built
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        let mut sub = sub.clone();
        let long = sub.render_long_help().to_string();
        assert!(long.contains("Examples:"), "{}", sub.get_name());
        assert!(long.contains("Exit codes:"), "{}", sub.get_name());
    }
}

#[test]
fn deprecated_spellings_still_parse_with_a_warning() {
    let p = ok(&["bench", "a", "b", "--runs", "12"]);
    let Action::Bench(b) = &p.command else {
        panic!()
    };
    assert_eq!(b.min_runs, Some(12));
    assert!(p.warnings[0].contains("--min-runs"), "{:?}", p.warnings);
    let p = ok(&["bench", "a", "b", "--min-runs", "12"]);
    assert!(p.warnings.is_empty());
    let p = ok(&["ci", "--github"]);
    assert!(
        p.warnings[0].contains("--emit-ci github"),
        "{:?}",
        p.warnings
    );
    let p = ok(&["ci"]);
    let Action::Ci(c) = &p.command else { panic!() };
    assert_eq!(c.emit_ci, CiKind::Github);
    assert!(p.warnings.is_empty());
    let p = ok(&["doctor", "--json"]);
    let Action::Doctor(d) = &p.command else {
        panic!()
    };
    assert_eq!(d.format, TermJson::Json);
    assert!(err(&["doctor", "--json", "--format", "term"]).contains("cannot be used"));
}

#[test]
fn dash_o_is_the_result_file_everywhere() {
    for args in [
        &["report", "-o", "f"][..],
        &["hotspots", "-o", "f"],
        &["check", "-o", "f"],
        &["doctor", "-o", "f"],
    ] {
        let mut cmd = command();
        cmd.build();
        let name = args[0];
        let help = cmd
            .find_subcommand_mut(name)
            .unwrap()
            .render_long_help()
            .to_string();
        assert!(
            help.contains("Write the result to FILE (atomically) instead of stdout"),
            "{name}"
        );
        ok(args);
    }
}

#[test]
fn min_runs_below_two_is_refused_by_name_with_the_fix() {
    for flag in ["--min-runs", "--runs"] {
        for n in ["0", "1"] {
            let e = err(&["bench", "a", "b", flag, n]);
            assert!(e.contains(flag), "{e}");
            assert!(e.contains("must be at least 2"), "{e}");
            assert!(e.contains("fix: write --min-runs 6"), "{e}");
        }
    }
    let p = ok(&["bench", "a", "b", "--min-runs", "2"]);
    let Action::Bench(b) = &p.command else {
        panic!()
    };
    assert_eq!(b.min_runs, Some(2));
}
