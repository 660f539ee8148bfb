//! `cargo optimize report [RUN]`: render a past run from its report.json (through the one
//! reader, `report::locate` + `report::load`) as the terminal ladder, JSON, Markdown or
//! HTML; to stdout, or atomically to `-o FILE`; `--open` shows the HTML page.

use std::path::{Path, PathBuf};

use crate::cli::{GlobalArgs, ReportArgs};
use crate::render::Render as _;
use crate::report::{self, Format};
use crate::ui::Ui;

pub(crate) fn run(g: &GlobalArgs, args: &ReportArgs) -> anyhow::Result<i32> {
    let path = crate::apply::find_report(g, args.run.as_deref())?;
    let report = report::load(&path)?;
    let format = if args.open { Format::Html } else { args.format };
    let text = match format {
        // The ladder on a stdout that takes colour is coloured (`--color`, NO_COLOR, …).
        Format::Term if args.output.is_none() => {
            let mut ui = Ui::plain();
            ui.color = crate::ui::stdout_color(g.color.forced());
            report::terminal::ladder(&report, &ui, report::terminal::terminal_width())
        }
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
    super::emit(out.as_deref(), &text, g.quiet)?;
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
