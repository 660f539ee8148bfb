//! `cargo optimize report`: the renderings of a frozen report.json
//! (`tests/fixtures/reports/demo/`, a demo run trimmed to 4 pairs per comparison, with a
//! kept, a dropped, a rejected and a failed row, and a cpu variant) against the expected
//! text beside it; byte-identical re-rendering; and the HTML page in a real browser.
//!
//! After an intended change of a rendering, regenerate the expected files and review the diff:
//! `cargo run -q -- optimize report tests/fixtures/reports/demo --format md > tests/fixtures/reports/demo/report.md`
//! (and `--format term > …/ladder.txt`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cargo_optimize::testing::report::{self, Format};

use crate::common::*;

fn demo_dir() -> PathBuf {
    fixture("reports/demo")
}

fn expected(name: &str) -> String {
    std::fs::read_to_string(demo_dir().join(name)).unwrap()
}

/// `cargo-optimize report ARGS` from a folder without a project.
fn report_cli(args: &[&str]) -> Run {
    let mut all = vec!["optimize", "report"];
    all.extend_from_slice(args);
    run(Path::new(env!("CARGO_TARGET_TMPDIR")), &all, &[])
}

fn demo_json() -> String {
    demo_dir().join("report.json").display().to_string()
}

#[test]
fn markdown_and_terminal_renderings_match_the_snapshots() {
    let _g = shared();
    // Through the library, and through the CLI (the folder and the file both name the run).
    let r = report::load(&demo_dir().join("report.json")).unwrap();
    assert_eq!(
        Format::Markdown.renderer().render(&r),
        expected("report.md")
    );
    assert_eq!(Format::Term.renderer().render(&r), expected("ladder.txt"));
    let md = report_cli(&[&demo_json(), "--format", "md"]);
    assert_eq!(md.code, Some(0), "{}", md.all());
    assert_eq!(md.stdout, expected("report.md"));
    let term = report_cli(&[demo_dir().to_str().unwrap()]);
    assert_eq!(term.code, Some(0), "{}", term.all());
    assert_eq!(term.stdout, expected("ladder.txt"));
    // Every row that was not kept is there with its reason.
    for line in [
        "- profile — dropped: profile vs baseline: time ratio 1.001",
        "- cpu (native) — rejected: cpu (native) differs from the baseline on workload `tokenize`",
        "- bolt — failed: llvm-bolt exited with signal 11 (SIGSEGV)",
        "| cpu (x86-64-v4) | **kept** | baseline |",
        "| pgo | **kept** | cpu (x86-64-v4) |",
        "<details><summary>Per-workload results (2 workloads)</summary>",
        "- binary: `target/optimize/runs/20261101-120000-4242/bin/pgo`",
        "Run started 2026-11-01T12:00:00Z on commit 3f2a9c1e8b7d (with uncommitted changes).",
        "| tokenize | 188 ms | 171 ms | 0.921 [0.867, 0.978] faster |",
    ] {
        assert!(md.stdout.contains(line), "no `{line}` in\n{}", md.stdout);
    }
    // Workspace-relative paths; one footnote explains the per-workload levels.
    assert!(!md.stdout.contains("/home/dev/demo/"), "{}", md.stdout);
    assert_eq!(md.stdout.matches("[^levels]:").count(), 1, "{}", md.stdout);
    assert!(md.stdout.contains("(level)[^levels]"), "{}", md.stdout);
    // The terminal ladder: no absolute paths, no line over 80 columns, no row repeated.
    assert!(!term.stdout.contains("/home/dev/demo/"), "{}", term.stdout);
    assert!(
        term.stdout.lines().all(|l| l.chars().count() <= 80),
        "{}",
        term.stdout
    );
}

#[test]
fn report_rerenders_byte_identically_and_json_round_trips() {
    let _g = shared();
    let dir = tempfile::tempdir().unwrap();
    // A run folder under a target dir, named by its id.
    let run_dir = dir.path().join("optimize/runs/20261101-120000-4242");
    std::fs::create_dir_all(&run_dir).unwrap();
    std::fs::copy(demo_dir().join("report.json"), run_dir.join("report.json")).unwrap();
    let td = dir.path().to_str().unwrap();

    let json = report_cli(&[&demo_json(), "--format", "json"]);
    assert_eq!(json.code, Some(0), "{}", json.all());
    assert!(
        json.stdout == expected("report.json"),
        "json does not round-trip"
    );
    parse_report(&demo_dir().join("report.json"), &json.stdout);

    for format in ["term", "md", "html"] {
        let first = report_cli(&[&demo_json(), "--format", format]);
        let by_id = report_cli(&[
            "--target-dir",
            td,
            "20261101-120000-4242",
            "--format",
            format,
        ]);
        assert_eq!(first.code, Some(0), "{}", first.all());
        assert_eq!(by_id.code, Some(0), "{}", by_id.all());
        assert!(
            first.stdout == by_id.stdout,
            "{format} differs between two renderings"
        );
        let out = dir.path().join(format!("out.{format}"));
        let to_file = report_cli(&[
            &demo_json(),
            "--format",
            format,
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(to_file.code, Some(0), "{}", to_file.all());
        assert!(to_file.stdout.is_empty(), "{}", to_file.stdout);
        assert!(std::fs::read_to_string(&out).unwrap() == first.stdout);
    }
    // No temporary files left beside -o's files.
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");

    // --open without xdg-open: says so, writes the run's report.html, succeeds.
    let mut cmd = Command::new(tool());
    cmd.args([
        "optimize",
        "report",
        "--target-dir",
        td,
        "20261101-120000-4242",
        "--open",
    ])
    .env("PATH", dir.path());
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("no xdg-open here"), "{stderr}");
    assert!(run_dir.join("report.html").is_file());

    // An unknown run is exit 2 with the runs folder named.
    let missing = report_cli(&["--target-dir", td, "no-such-run"]);
    assert_eq!(missing.code, Some(2), "{}", missing.all());
    assert!(
        missing.stderr.contains("no run `no-such-run`"),
        "{}",
        missing.stderr
    );
}

#[test]
fn html_escapes_every_string_and_loads_nothing() {
    let _g = shared();
    let r = report::load(&demo_dir().join("report.json")).unwrap();
    let html = Format::Html.renderer().render(&r);
    assert!(html.contains("`tokens=41 &lt;eof&gt;`, got `tokens=40 &lt;eof&gt;` &amp; exit 0"));
    assert!(!html.contains("<eof>"));
    assert!(html.contains("AMD EPYC 9R45 &amp; &lt;friends&gt;, 2 logical CPUs"));
    for banned in ["<script", "http://", "https://", "<link", "src=\""] {
        let allowed = banned == "http://"
            && html.matches(banned).count()
                == html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count();
        assert!(
            !html.contains(banned) || allowed,
            "the page contains `{banned}`"
        );
    }
}

#[test]
fn a_report_of_an_older_version_without_machine_facts_renders() {
    let _g = shared();
    let dir = tempfile::tempdir().unwrap();
    // The file as that version wrote it: the same, without the (last) `machine` key.
    let text = expected("report.json");
    let at = text
        .find(",\n  \"machine\": {")
        .expect("the fixture has machine facts");
    let end = at + text[at..].find("\n  }").unwrap() + "\n  }".len();
    let old = dir.path().join("report.json");
    std::fs::write(&old, format!("{}{}", &text[..at], &text[end..])).unwrap();
    let md = report_cli(&[old.to_str().unwrap(), "--format", "md"]);
    assert_eq!(md.code, Some(0), "{}", md.all());
    let without: String = expected("report.md")
        .split_inclusive('\n')
        .filter(|l| !l.starts_with("Machine: "))
        .collect::<String>()
        .replacen("\n\n\n", "\n\n", 1);
    assert_eq!(md.stdout, without);
    let json_again = report_cli(&[old.to_str().unwrap(), "--format", "json"]);
    assert!(json_again.stdout == std::fs::read_to_string(&old).unwrap());
}

/// A child killed with its process group after `limit`.
fn run_with_timeout(
    mut cmd: Command,
    limit: Duration,
    stdout: &Path,
    stderr: &Path,
) -> Option<i32> {
    use std::os::unix::process::CommandExt;
    cmd.stdin(Stdio::null())
        .stdout(std::fs::File::create(stdout).unwrap())
        .stderr(std::fs::File::create(stderr).unwrap())
        .process_group(0);
    let mut child = cmd.spawn().expect("start chromium");
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if started.elapsed() > limit {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.wait();
            panic!("chromium did not finish within {limit:?}: killed");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|d| ["chromium", "chromium-browser"].map(|n| d.join(n)))
        .find(|p| p.is_file())
}

/// Chromium's stderr with `--enable-logging=stderr --v=0` has one `…:CONSOLE…]` line per
/// console message of the page (errors, uncaught exceptions, Content-Security-Policy
/// violations such as a blocked network load).
fn console_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

/// Load `page` in headless Chromium: (the DOM after load, chromium's stderr).
fn load_in_chromium(chromium: &Path, page: &Path, work: &Path, name: &str) -> (String, String) {
    let mut cmd = Command::new(chromium);
    cmd.args([
        "--headless",
        "--disable-gpu",
        "--no-sandbox",
        "--no-first-run",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!(
        "--user-data-dir={}",
        work.join(format!("profile-{name}")).display()
    ))
    .arg("--dump-dom")
    .arg(format!("file://{}", page.display()));
    let (out, err) = (
        work.join(format!("{name}.dom")),
        work.join(format!("{name}.stderr")),
    );
    let code = run_with_timeout(cmd, Duration::from_secs(60), &out, &err);
    let dom = std::fs::read_to_string(&out).unwrap();
    let stderr = std::fs::read_to_string(&err).unwrap();
    assert_eq!(code, Some(0), "chromium failed:\n{stderr}");
    (dom, stderr)
}

#[test]
fn the_html_page_renders_in_a_real_browser() {
    let _g = shared();
    let Some(chromium) = chromium() else {
        return missing_tool(
            "chromium",
            "scripts/test installs it: apt-get install chromium",
        );
    };
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path();

    // The method first: a page with a console error, an uncaught exception and a blocked
    // load must show up, so a Chromium that stopped logging cannot make the test pass.
    let bad = work.join("bad.html");
    std::fs::write(
        &bad,
        "<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'\"></head><body><img src=\"http://example.invalid/x.png\"><script>console.error('probe-error'); throw new Error('probe-uncaught')</script></body></html>",
    )
    .unwrap();
    let (_, stderr) = load_in_chromium(&chromium, &bad, work, "bad");
    let lines = console_lines(&stderr).join("\n");
    for probe in [
        "probe-error",
        "Uncaught Error: probe-uncaught",
        "example.invalid",
    ] {
        assert!(
            lines.contains(probe),
            "the console-error check misses `{probe}`:\n{stderr}"
        );
    }

    let r = report::load(&demo_dir().join("report.json")).unwrap();
    let page = work.join("report.html");
    std::fs::write(&page, Format::Html.renderer().render(&r)).unwrap();
    let (dom, stderr) = load_in_chromium(&chromium, &page, work, "report");
    assert!(
        console_lines(&stderr).is_empty(),
        "console messages:\n{stderr}"
    );

    let marks = |chart: &str| {
        dom.matches(&format!("data-chart=\"{chart}\" data-key="))
            .count()
    };
    let svg = |chart: &str| dom.contains(&format!("<svg class=\"chart\" data-chart=\"{chart}\""));
    // The ladder: one mark per row, the table too.
    assert!(svg("ladder"));
    assert_eq!(marks("ladder"), r.stages.len());
    assert_eq!(dom.matches("<tr data-status=").count(), r.stages.len());
    for status in ["kept", "dropped", "rejected", "failed"] {
        assert!(
            dom.contains(&format!("<g class=\"mark {status}\" data-chart=\"ladder\"")),
            "no {status} mark"
        );
    }
    // Per workload, for each kept stage with comparisons (cpu-x86-64-v4, pgo, pgo-portable),
    // and every pair, for each compared candidate (profile too): one mark per eval workload.
    let eval = r
        .workloads
        .iter()
        .filter(|w| !w.per_stage.is_empty())
        .count();
    assert_eq!(eval, 2);
    for tag in ["cpu-x86-64-v4", "pgo", "pgo-portable"] {
        assert!(svg(&format!("workloads:{tag}")), "no forest plot for {tag}");
        assert_eq!(marks(&format!("workloads:{tag}")), eval, "{tag}");
    }
    assert!(
        !svg("workloads:profile"),
        "a dropped stage has no forest plot"
    );
    for tag in ["profile", "cpu-x86-64-v4", "pgo", "pgo-portable"] {
        assert_eq!(marks(&format!("pairs:{tag}")), eval, "{tag}");
    }
    // One dot per pair (of each row's comparison against its rival; the final measurement
    // against the baseline is in the shipped table).
    let pairs: usize = r
        .workloads
        .iter()
        .flat_map(|w| w.per_stage.iter())
        .filter(|(tag, _)| !tag.ends_with(" vs baseline"))
        .map(|(_, c)| report::pair_ratios(c).len())
        .sum();
    assert_eq!(dom.matches("class=\"dot\"").count(), pairs);
    // The timeline: one bar per step (but the total); sizes: one per row with a size.
    assert_eq!(
        marks("timeline"),
        r.pipeline.iter().filter(|p| p.step != "total").count()
    );
    assert_eq!(
        marks("sizes"),
        r.stages.iter().filter(|s| s.size_bytes.is_some()).count()
    );
    assert!(svg("memory"));
    for section in [
        "ship",
        "ladder",
        "shipped",
        "workloads",
        "distributions",
        "sizes",
        "facts",
    ] {
        assert!(
            dom.contains(&format!("<h2 id=\"{section}\"")),
            "no {section} section"
        );
    }
    // The maintainers' charts are folded away (issue 26, item 5).
    for section in ["timeline", "memory"] {
        assert!(
            dom.contains(&format!(
                "<details class=\"maintainer\" id=\"{section}\"><summary><h2>"
            )),
            "{section} is not in a closed <details>"
        );
    }
    assert!(dom.contains("cargo optimize apply"));
    // Each measured row's reference on the ladder chart: the baseline for profile, cpu
    // (x86-64-v4) and pgo (portable), cpu (x86-64-v4) for pgo; none for the rows not measured.
    let ladder_svg = dom
        .split("<svg class=\"chart\" data-chart=\"ladder\"")
        .nth(1)
        .and_then(|s| s.split("</svg>").next())
        .unwrap();
    assert_eq!(
        ladder_svg.matches("class=\"rival\"").count(),
        4,
        "{ladder_svg}"
    );
    assert!(ladder_svg.contains("(measured against cpu (x86-64-v4), the ◇)"));
    assert_eq!(dom.matches("class=\"rival\"").count(), 4);
    // The run's date, commit and dirty flag; paths relative to the workspace.
    assert!(
        dom.contains(
            "Run started 2026-11-01T12:00:00Z on commit 3f2a9c1e8b7d (with uncommitted changes)."
        ),
        "no source line"
    );
    assert!(!dom.contains("/home/dev/demo/"), "an absolute path");
    assert!(dom.contains("<code>target/optimize/runs/20261101-120000-4242/bin/pgo</code>"));
    // Charts take the page's width: no fixed size, the stylesheet stretches them.
    assert!(
        !dom.contains("<svg class=\"chart\" data-chart=\"ladder\" viewBox=\"0 0 760 208\" width=")
    );
    assert!(dom.contains("svg.chart { display: block; width: 100%; height: auto;"));

    // A screenshot, for a person to look at.
    let shot = work.join("report.png");
    let mut cmd = Command::new(&chromium);
    cmd.args([
        "--headless",
        "--disable-gpu",
        "--no-sandbox",
        "--no-first-run",
        "--hide-scrollbars",
        "--window-size=1000,4200",
    ])
    .arg(format!(
        "--user-data-dir={}",
        work.join("profile-shot").display()
    ))
    .arg(format!("--screenshot={}", shot.display()))
    .arg(format!("file://{}", page.display()));
    let code = run_with_timeout(
        cmd,
        Duration::from_secs(60),
        &work.join("shot.out"),
        &work.join("shot.err"),
    );
    assert_eq!(code, Some(0));
    assert!(
        std::fs::metadata(&shot).unwrap().len() > 10_000,
        "an empty screenshot"
    );
}

/// `-o` names a file the user owns: a symlink is written through (the link stays), a device
/// or named pipe is written to as a stream (never replaced by a regular file), a directory is
/// refused with the fix and left as it was (issue 23, defect 1).
#[test]
fn report_o_writes_through_links_streams_to_pipes_and_devices_and_refuses_a_folder() {
    use std::os::unix::fs::FileTypeExt as _;
    let _g = shared();
    let d = tempfile::tempdir().unwrap();
    let md = expected("report.md");
    let out = |p: &Path| report_cli(&[&demo_json(), "--format", "md", "-o", p.to_str().unwrap()]);

    std::fs::create_dir(d.path().join("www")).unwrap();
    let link = d.path().join("link.md");
    std::os::unix::fs::symlink(d.path().join("www/r.md"), &link).unwrap();
    let r = out(&link);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        std::fs::read_to_string(d.path().join("www/r.md")).unwrap(),
        md
    );

    // A named pipe with a reader gets the bytes and stays a pipe.
    let fifo = d.path().join("pipe");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let cat = Command::new("cat")
        .arg(&fifo)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(200)); // cat opens the pipe
    let r = out(&fifo);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let got = cat.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&got.stdout), md);
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    // Without a reader: refused at once, no wait, still a pipe.
    let r = out(&fifo);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(r.stderr.contains("no process is reading"), "{}", r.stderr);
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());

    // A character device (mknod needs root: as another user only /dev/null is checked).
    let dev = d.path().join("null");
    let dev = if Command::new("mknod")
        .arg(&dev)
        .args(["c", "1", "3"])
        .status()
        .is_ok_and(|s| s.success())
    {
        dev
    } else {
        eprintln!("mknod is not allowed here: checking /dev/null only");
        PathBuf::from("/dev/null")
    };
    let r = out(&dev);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(std::fs::metadata(&dev)
        .unwrap()
        .file_type()
        .is_char_device());

    let r = out(d.path());
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr.contains("it is a directory") && r.stderr.contains("fix:"),
        "{}",
        r.stderr
    );
}
