//! `docs/cli.md` is generated from the clap definitions, and held equal to them: a flag added
//! or changed without the document fails here. `COSMOS_WRITE_CLI_DOC=1 cargo nextest run
//! --test architecture cli_doc` writes it again.

use std::path::Path;

/// The document as the program's own definitions make it.
fn generated() -> String {
    let options = clap_markdown::MarkdownOptions::new()
        .title("cosmos: every command and flag".to_string())
        .show_footer(false)
        .show_table_of_contents(true);
    let body = clap_markdown::help_markdown_custom::<cosmos_app::cli::Cli>(&options);
    format!(
        "<!-- Generated from the clap definitions (crates/app/src/cli); do not edit: \
         COSMOS_WRITE_CLI_DOC=1 cargo nextest run --test architecture cli_doc -->\n\n{body}"
    )
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
}
