//! `docs/cli.md` is generated from the clap definitions, and held equal to them: a flag added
//! or changed without the document fails here. `COSMOS_WRITE_CLI_DOC=1 cargo nextest run
//! --test architecture cli_doc` writes it again. It is a compact index (each flag's first
//! paragraph of help, its values and default); `cosmos COMMAND --help` says the rest.

use std::fmt::Write as _;
use std::path::Path;

use clap::CommandFactory;

/// The document as the program's own definitions make it.
fn generated() -> String {
    let mut out = String::from(
        "<!-- Generated from the clap definitions (crates/app/src/cli); do not edit: \
         COSMOS_WRITE_CLI_DOC=1 cargo nextest run --test architecture cli_doc -->\n\n\
         # cosmos: every command and flag\n\n\
         Each flag's first sentence of help; `cosmos COMMAND --help` says the rest.\n",
    );
    let mut cli = cosmos_app::cli::Cli::command();
    cli.build();
    command(&mut out, &cli, "cosmos");
    out
}

/// One command's section, then its subcommands'.
fn command(out: &mut String, cmd: &clap::Command, path: &str) {
    let about = cmd.get_about().map(|a| a.to_string()).unwrap_or_default();
    let _ = write!(out, "\n## `{path}`\n\n{about}\n");
    let args: Vec<&clap::Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !["help", "version"].contains(&a.get_id().as_str()))
        .collect();
    if !args.is_empty() {
        out.push_str("\n| argument | what |\n|---|---|\n");
    }
    for arg in args {
        let _ = writeln!(out, "| {} | {} |", name(arg), what(arg));
    }
    for sub in cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        command(out, sub, &format!("{path} {}", sub.get_name()));
    }
}

/// `--flag <VALUE>`, `-s, --flag`, or `<POSITIONAL>`.
fn name(arg: &clap::Arg) -> String {
    let value = arg
        .get_value_names()
        .map(|v| v.iter().map(|n| format!(" <{n}>")).collect::<String>())
        .unwrap_or_default();
    let takes = arg.get_action().takes_values();
    match (arg.get_long(), arg.get_short()) {
        (Some(long), short) => format!(
            "`{}--{long}{}`",
            short.map_or(String::new(), |s| format!("-{s}, ")),
            if takes { value } else { String::new() }
        ),
        (None, Some(short)) => format!("`-{short}`"),
        (None, None) => format!("`<{}>`", arg.get_id().as_str().to_uppercase()),
    }
}

/// The first paragraph of its help, its values and its default, on one table row.
fn what(arg: &clap::Arg) -> String {
    let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
    let paragraph = help
        .split("\n\n")
        .next()
        .unwrap_or_default()
        .replace('\n', " ");
    // Its first sentence.
    let first = paragraph
        .find(". ")
        .map_or(paragraph.as_str(), |end| &paragraph[..=end]);
    let mut what = first.replace('|', "\\|");
    let values: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| v.get_name().to_string())
        .collect();
    if !values.is_empty() && arg.get_action().takes_values() {
        let _ = write!(what, " (`{}`)", values.join("` \\| `"));
    }
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|d| d.to_string_lossy().into_owned())
        .collect();
    if !defaults.is_empty() {
        let _ = write!(what, " [default: {}]", defaults.join(", "));
    }
    what
}

#[test]
fn the_cli_reference_is_the_programs_own() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/cli.md");
    let want = generated();
    if std::env::var_os("COSMOS_WRITE_CLI_DOC").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/cli.md is not what the program's flags make (COSMOS_WRITE_CLI_DOC=1 cargo nextest run --test architecture cli_doc writes it)"
    );
    // Every command and flag is in it.
    for needle in ["## `cosmos run`", "`--routing <", "## `cosmos export atif`"] {
        assert!(want.contains(needle), "{needle}");
    }
}
