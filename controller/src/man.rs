//! `chio man [COMMAND]...`: the manual pages, generated from the command
//! tree. Without words it prints `chio(1)`; with words it prints the page
//! of that command (`chio man arena` is `chio-arena(1)`, `chio man arena
//! run` is `chio-arena-run(1)`), the pages the parent page's SEE ALSO
//! lists. A word that names no command is refused as
//! `CHIO-CLI-MAN-UNKNOWN`, naming the commands there are.

use std::io::Write;

use clap::CommandFactory;

use crate::cli::{Cli, ManArgs};
use crate::error::{codes, CliError};

/// The command a path of words names, with its page name
/// (`chio-arena-run`), or the error naming the commands there are.
pub fn command_for(words: &[String]) -> Result<clap::Command, CliError> {
    let mut command = Cli::command();
    command.build();
    let mut name = "chio".to_string();
    for (at, word) in words.iter().enumerate() {
        let found = command.find_subcommand(word).cloned();
        let Some(found) = found else {
            let known: Vec<&str> = command
                .get_subcommands()
                .map(|c| c.get_name())
                .filter(|n| *n != "help")
                .collect();
            let message = if known.is_empty() {
                format!("`{name}` has no commands; `{word}` is not one")
            } else {
                format!("`{name}` has no command `{word}`")
            };
            return Err(CliError::new(
                codes::MAN_UNKNOWN,
                "man",
                message,
                if known.is_empty() {
                    format!("run `chio man {}`", words[..at].join(" "))
                } else {
                    format!("name one of: {}", known.join(", "))
                },
            ));
        };
        name = format!("{name} {}", found.get_name());
        command = found;
    }
    // Built, each command already carries its page name (`chio-arena`)
    // and the words that run it (`chio arena`).
    Ok(command.version(env!("CARGO_PKG_VERSION")))
}

/// Prints the page `args` names to `out`.
pub fn run(args: &ManArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let command = command_for(&args.command)?;
    clap_mangen::Man::new(command)
        .render(out)
        .and_then(|()| out.flush())
        .map_err(|e| CliError::output("man", &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Every page the main page lists under SEE ALSO is one `chio man` prints, under its own name.
    #[test]
    fn every_advertised_page_is_printed() {
        let mut main = Vec::new();
        run(&ManArgs { command: vec![] }, &mut main).unwrap();
        let main = String::from_utf8(main).unwrap();
        let mut pages = 0;
        for sub in Cli::command().get_subcommands() {
            let page = format!("chio\\-{}(1)", sub.get_name());
            if !main.contains(&page) {
                continue;
            }
            pages += 1;
            let mut text = Vec::new();
            run(
                &ManArgs {
                    command: vec![sub.get_name().to_string()],
                },
                &mut text,
            )
            .unwrap();
            let text = String::from_utf8(text).unwrap();
            assert!(
                text.contains(&format!(".TH chio-{} 1", sub.get_name())),
                "{text}"
            );
        }
        assert!(pages >= 3, "{main}");
        let mut run_page = Vec::new();
        run(
            &ManArgs {
                command: vec!["arena".into(), "run".into()],
            },
            &mut run_page,
        )
        .unwrap();
        assert!(String::from_utf8(run_page)
            .unwrap()
            .contains(".TH chio-arena-run 1"));
    }

    // An unknown word is refused with the code and the commands there are.
    #[test]
    fn unknown_command_is_refused() {
        let err = command_for(&["arena".into(), "nope".into()]).unwrap_err();
        assert_eq!(err.code, "CHIO-CLI-MAN-UNKNOWN");
        assert!(
            err.render().contains("name one of: init, validate"),
            "{}",
            err.render()
        );
    }
}
