//! `cargo optimize report [RUN]`: render a past run from its report.json (through the one
//! reader, `report::locate` + `report::load`) as the terminal ladder, JSON, Markdown or
//! HTML; to stdout, or atomically to `-o FILE`; `--open` shows the HTML page.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::cli::{GlobalArgs, ReportArgs};
use crate::render::Render as _;
use crate::report::{self, Format};

pub fn run(g: &GlobalArgs, args: &ReportArgs) -> anyhow::Result<i32> {
    let path = crate::apply::find_report(g, args.run.as_deref())?;
    let report = report::load(&path)?;
    let format = if args.open { Format::Html } else { args.format };
    let text = match format {
        Format::Markdown if args.hotspots => {
            report::markdown::MarkdownRenderer { hotspots: true }.render(&report)
        }
        _ => format.renderer().render(&report),
    };
    let out: Option<PathBuf> = match (&args.output, args.open) {
        (Some(o), _) => Some(o.clone()),
        // --open needs a file: the run's own report.html.
        (None, true) => Some(
            path.parent()
                .unwrap_or(Path::new("."))
                .join(Format::Html.file_name()),
        ),
        (None, false) => None,
    };
    match &out {
        Some(o) => {
            crate::util::atomic::write(o, text.as_bytes())?;
            if !g.quiet {
                eprintln!("wrote {}", o.display());
            }
        }
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
                .context("cannot write to stdout")?;
        }
    }
    if args.open {
        if let Some(o) = &out {
            open(o);
        }
    }
    Ok(0)
}

/// Open `page` with xdg-open; say so when there is none or it fails (never an error).
fn open(page: &Path) {
    let Some(opener) = crate::toolchain::find_on_path("xdg-open") else {
        eprintln!(
            "no xdg-open here: open {} in a browser yourself",
            page.display()
        );
        return;
    };
    let launched = crate::process::launch(
        &opener,
        &[page.as_os_str()],
        std::time::Duration::from_secs(10),
    );
    match launched {
        Ok(Some(s)) if !s.success() => eprintln!(
            "xdg-open {} exited with {s}: open it in a browser yourself",
            page.display()
        ),
        Ok(_) => eprintln!("opened {}", page.display()),
        Err(e) => eprintln!("{e}: open {} in a browser yourself", page.display()),
    }
}
