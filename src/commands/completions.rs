//! `cargo optimize completions SHELL` (clap_complete) and the hidden `cargo optimize man`
//! (clap_mangen): both generated from the one clap command, so they list what it parses.

use crate::cli::CompletionsArgs;

pub(crate) fn run(args: &CompletionsArgs) -> anyhow::Result<i32> {
    let mut cmd = crate::cli::command();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "cargo-optimize", &mut out);
    super::emit(None, &String::from_utf8_lossy(&out), true)?;
    Ok(0)
}

/// The man page: the command's, then a section per subcommand.
pub(crate) fn man() -> anyhow::Result<i32> {
    super::emit(None, &man_page()?, true)?;
    Ok(0)
}

/// The roff text of `cargo-optimize(1)`.
pub(crate) fn man_page() -> anyhow::Result<String> {
    let mut cmd = crate::cli::command().name("cargo-optimize");
    cmd.build();
    let mut out = Vec::new();
    let man = clap_mangen::Man::new(cmd.clone());
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    for sub in (cmd.get_subcommands()).filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        let name = sub.get_name();
        out.extend_from_slice(format!(".SH \"COMMAND: {}\"\n", name.to_uppercase()).as_bytes());
        let full = format!("cargo optimize {name}");
        let page = clap_mangen::Man::new(sub.clone().bin_name(&full).display_name(full));
        page.render_synopsis_section(&mut out)?;
        page.render_description_section(&mut out)?;
        page.render_options_section(&mut out)?;
        page.render_subcommands_section(&mut out)?;
        page.render_extra_section(&mut out)?;
    }
    man.render_version_section(&mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_man_page_has_a_section_for_every_subcommand() {
        let page = super::man_page().unwrap();
        let cmd = crate::cli::command();
        let subs: Vec<_> = cmd.get_subcommands().filter(|s| !s.is_hide_set()).collect();
        assert!(subs.len() >= 14, "{}", subs.len());
        for sub in subs {
            let name = sub.get_name();
            assert!(
                page.contains(&format!("COMMAND: {}", name.to_uppercase())),
                "no section for {name}"
            );
            assert!(page.contains(&format!("cargo optimize {name}")), "{name}");
        }
        assert!(
            page.contains("Exit codes"),
            "the exit codes are in the page"
        );
        assert!(
            page.contains("\\-\\-message\\-format"),
            "run's options are listed"
        );
    }
}
