//! `commperf completions SHELL` and `commperf man`: the shell completion scripts (clap_complete)
//! and the manual pages (clap_mangen), both made from the command line's own definition, so
//! they list exactly the subcommands and options the parser accepts. The internal subcommands
//! (the peers and ranks commperf starts itself, hidden from `--help`) appear in neither.

use anyhow::{Context, Result};
use clap::{Args, CommandFactory};
use clap_complete::Shell;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write one page per command into DIR (commperf.1, commperf-bench.1, commperf-monitor-run.1
    /// …) instead of printing the whole manual as one page
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// The command line as the manual pages see it: without clap's `help` subcommand, which is
/// no command of ours (clap_mangen leaves hidden subcommands out itself).
fn command() -> clap::Command {
    let mut c = crate::cli::Cli::command().disable_help_subcommand(true);
    c.build();
    c
}

/// The command line as the completion scripts see it: the visible subcommands only (the
/// script generators would offer the hidden ones too), no `help` subcommand.
fn completable() -> clap::Command {
    let full = crate::cli::Cli::command();
    let mut c = clap::Command::new("commperf")
        .version(env!("CARGO_PKG_VERSION"))
        .disable_help_subcommand(true);
    for s in full.get_subcommands().filter(|s| !s.is_hide_set()) {
        c = c.subcommand(s.clone());
    }
    c
}

/// The completion script of `shell`.
pub fn completions(shell: Shell) -> String {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut completable(), "commperf", &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

pub fn run_completions(a: &CompletionsArgs) -> Result<()> {
    crate::output::print(&completions(a.shell))
}

/// The subcommands a user runs (not the hidden internal ones), recursively, each with its
/// page's title: `commperf-monitor-run`.
fn visible(c: &clap::Command) -> Vec<clap::Command> {
    let mut out = Vec::new();
    for s in c.get_subcommands().filter(|s| !s.is_hide_set()) {
        out.push(s.clone());
        out.extend(visible(s));
    }
    out
}

/// The page of one command, titled in capitals as man pages are (`COMMPERF-BENCH`).
fn page(c: clap::Command) -> Result<Vec<u8>> {
    let name = c.get_display_name().unwrap_or(c.get_name()).to_string();
    let mut out = Vec::new();
    clap_mangen::Man::new(c)
        .title(name.to_uppercase())
        .render(&mut out)
        .context("rendering the manual page")?;
    Ok(out)
}

/// The whole manual as one page: commperf's own (its options and the list of subcommands),
/// then a section per visible subcommand with its synopsis, description and options (the
/// sections of its own page, one level down).
pub fn manual() -> Result<String> {
    let root = command();
    let mut text = String::from_utf8(page(root.clone())?).context("the manual page")?;
    for sub in visible(&root) {
        let title = sub
            .get_display_name()
            .unwrap_or(sub.get_name())
            .replace('-', " ")
            .to_uppercase();
        text.push_str(&format!(".SH \"{title}\"\n"));
        let own = String::from_utf8(page(sub)?).context("the manual page")?;
        // Its page without the title line and its NAME section, its sections as subsections.
        let mut in_name = false;
        for line in own.lines() {
            if line.starts_with(".TH ") {
                continue;
            }
            if let Some(h) = line.strip_prefix(".SH ") {
                in_name = h == "NAME";
                if !in_name {
                    text.push_str(&format!(".SS {h}\n"));
                }
                continue;
            }
            if !in_name {
                text.push_str(line);
                text.push('\n');
            }
        }
    }
    Ok(text)
}

pub fn run_man(a: &ManArgs) -> Result<()> {
    let Some(dir) = &a.dir else {
        return crate::output::print(&manual()?);
    };
    write_pages(dir)
}

/// One page per command into `dir` (made if missing), each written as result files are.
fn write_pages(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("--dir {}", dir.display()))?;
    let root = command();
    let mut n = 0;
    for c in std::iter::once(root.clone()).chain(visible(&root)) {
        let name = format!("{}.1", c.get_display_name().unwrap_or(c.get_name()));
        let path = dir.join(&name);
        crate::output::write_atomically(&path, &page(c)?)
            .with_context(|| format!("--dir {}", dir.display()))?;
        n += 1;
    }
    crate::say(&format!(
        "commperf: wrote {n} manual pages to {} (commperf.1 and one per subcommand)",
        dir.display()
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every subcommand `commperf --help` lists, and the hidden internal ones.
    fn subcommands() -> (Vec<String>, Vec<String>) {
        let c = crate::cli::Cli::command();
        let (mut shown, mut hidden) = (Vec::new(), Vec::new());
        for s in c.get_subcommands() {
            let v = if s.is_hide_set() {
                &mut hidden
            } else {
                &mut shown
            };
            v.push(s.get_name().to_string());
        }
        (shown, hidden)
    }

    #[test]
    fn internal_subcommands_are_hidden() {
        let (shown, hidden) = subcommands();
        // Every name starting with `__` is a process commperf starts itself.
        assert!(shown.iter().all(|s| !s.starts_with("__")), "{shown:?}");
        for h in &hidden {
            assert!(h.starts_with("__"), "{h} is hidden but not internal");
        }
        for s in ["bench", "monitor", "emulate", "app", "completions", "man"] {
            assert!(shown.contains(&s.to_string()), "{s} missing from {shown:?}");
        }
        assert_eq!(
            hidden,
            [
                commperf_emulate::calibrate::PEER_VERB,
                "__reap",
                commperf_monitor::workload::PEER_VERB,
                "__peer",
                "__testbed-rank",
                "__netns-rank",
                "__netns-relay"
            ]
        );
    }

    #[test]
    fn bash_completes_the_real_subcommands_and_options_and_no_internal_one() {
        let (shown, hidden) = subcommands();
        let bash = completions(Shell::Bash);
        // The top-level word list: every visible subcommand, no internal one.
        let top = bash
            .lines()
            .find(|l| l.trim_start().starts_with("opts=") && l.contains("bench"))
            .unwrap_or_else(|| panic!("no top-level word list in {bash}"));
        for s in &shown {
            assert!(
                top.split(|c: char| c.is_whitespace() || c == '"')
                    .any(|w| w == s),
                "{s} not completed: {top}"
            );
        }
        for h in &hidden {
            assert!(!bash.contains(h.as_str()), "{h} in the bash script");
        }
        // bench's options, with a value list where the parser has one.
        assert!(bash.contains("--transport"), "{bash}");
        assert!(
            bash.contains("--plot-loggp") && bash.contains("--plot "),
            "{bash}"
        );
        assert!(bash.contains("complete -F _commperf"), "{bash}");
    }

    #[test]
    fn zsh_fish_elvish_and_powershell_scripts_are_in_their_syntax() {
        let zsh = completions(Shell::Zsh);
        assert!(zsh.starts_with("#compdef commperf\n"), "{zsh}");
        assert!(zsh.contains("'--transport=["), "{zsh}");
        let fish = completions(Shell::Fish);
        assert!(
            fish.lines()
                .any(|l| l.starts_with("complete -c commperf") && l.contains("-a \"bench\"")),
            "{fish}"
        );
        assert!(!fish.contains("__peer"), "{fish}");
        assert!(completions(Shell::Elvish).contains("edit:completion:arg-completer[commperf]"));
        assert!(completions(Shell::PowerShell).contains("Register-ArgumentCompleter"));
    }

    #[test]
    fn the_manual_has_a_section_per_visible_subcommand() {
        let m = manual().unwrap();
        // One page: one title (after the string definitions clap_mangen starts with).
        let titles: Vec<&str> = m.lines().filter(|l| l.starts_with(".TH ")).collect();
        assert_eq!(titles.len(), 1, "{titles:?}");
        assert!(titles[0].starts_with(".TH COMMPERF 1 "), "{titles:?}");
        let sections: Vec<&str> = m.lines().filter_map(|l| l.strip_prefix(".SH ")).collect();
        let (shown, hidden) = subcommands();
        for s in &shown {
            let want = format!("\"COMMPERF {}\"", s.replace('-', " ").to_uppercase());
            assert!(
                sections.contains(&want.as_str()),
                "{want} not in {sections:?}"
            );
        }
        // Nested ones too: monitor run, emulate sweep.
        assert!(
            sections.contains(&"\"COMMPERF MONITOR RUN\""),
            "{sections:?}"
        );
        for h in &hidden {
            assert!(!m.contains(h.as_str()), "{h} in the manual");
        }
        // bench's section lists its options.
        let bench = m.split(".SH \"COMMPERF BENCH\"").nth(1).unwrap();
        let bench = bench.split("\n.SH ").next().unwrap();
        assert!(bench.contains(".SS OPTIONS"), "{bench}");
        assert!(bench.contains("\\-\\-transport"), "{bench}");
    }

    #[test]
    fn man_dir_writes_one_page_per_command() {
        let dir = std::env::temp_dir().join(format!("commperf-man-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        write_pages(&dir).unwrap();
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert!(names.contains(&"commperf.1".to_string()), "{names:?}");
        assert!(names.contains(&"commperf-bench.1".to_string()), "{names:?}");
        assert!(
            names.contains(&"commperf-monitor-run.1".to_string()),
            "{names:?}"
        );
        assert!(names.iter().all(|n| !n.contains("__")), "{names:?}");
        let bench = std::fs::read_to_string(dir.join("commperf-bench.1")).unwrap();
        assert!(bench.contains("\n.TH COMMPERF-BENCH 1 "), "{bench}");
        assert!(bench.contains("\\-\\-plot\\-loggp"), "{bench}");
        assert_eq!(names.len(), 1 + visible(&command()).len());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
