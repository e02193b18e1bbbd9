//! What a newcomer meets first stays small and the boundaries stay the compiler's: a README of
//! at most 20,000 bytes, the hand-written Markdown of the root and `docs/` at most 160,000 (the
//! generated `docs/cli.md` is left out: `cli_doc.rs` holds it equal to `--help`, and a new flag
//! must not fail a budget for prose), no second architecture document, lints every
//! crate keeps, and the integration tests in at most eight binaries.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// The Markdown files directly in `dir`.
fn markdown_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    files
}

#[test]
fn the_docs_stay_within_what_an_afternoon_reads() {
    let readme = std::fs::metadata(root().join("README.md")).unwrap().len();
    assert!(
        readme <= 20_000,
        "README.md is {readme} bytes (at most 20,000)"
    );
    let generated = root().join("docs/cli.md");
    assert!(
        generated.exists(),
        "the generated reference moved: count it out where it is"
    );
    let files: Vec<PathBuf> = markdown_in(&root())
        .into_iter()
        .chain(markdown_in(&root().join("docs")))
        .filter(|p| *p != generated)
        .collect();
    let total: u64 = files
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    assert!(
        total <= 160_000,
        "the hand-written Markdown of the root and docs/ is {total} bytes (at most 160,000): {files:?}"
    );
    assert!(
        !root().join("docs/internals.md").exists(),
        "a module's inner workings belong in its //! doc, beside its code"
    );
}

#[test]
fn every_relative_link_in_the_docs_leads_somewhere() {
    let mut broken = Vec::new();
    for file in markdown_in(&root())
        .into_iter()
        .chain(markdown_in(&root().join("docs")))
    {
        let text = std::fs::read_to_string(&file).unwrap();
        for (at, _) in text.match_indices("](") {
            let rest = &text[at + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = rest[..end].split('#').next().unwrap_or_default();
            if target.is_empty() || target.contains("://") || target.contains(' ') {
                continue;
            }
            if !file.parent().unwrap().join(target).exists() {
                broken.push(format!("{}: {target}", file.display()));
            }
        }
    }
    assert!(broken.is_empty(), "links to nothing: {broken:?}");
}

#[test]
fn the_lints_are_the_workspaces_and_every_crate_keeps_them() {
    let manifest: toml::Table = std::fs::read_to_string(root().join("Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let lints = &manifest["workspace"]["lints"];
    assert!(lints["rust"].get("missing_docs").is_some(), "{lints:?}");
    assert!(lints["clippy"].get("unwrap_used").is_some(), "{lints:?}");
    let mut manifests = vec![root().join("Cargo.toml")];
    for c in std::fs::read_dir(root().join("crates")).unwrap() {
        manifests.push(c.unwrap().path().join("Cargo.toml"));
    }
    for path in manifests {
        let crate_manifest: toml::Table = std::fs::read_to_string(&path).unwrap().parse().unwrap();
        assert_eq!(
            crate_manifest
                .get("lints")
                .and_then(|l| l.get("workspace"))
                .and_then(toml::Value::as_bool),
            Some(true),
            "{} does not keep the workspace's lints",
            path.display()
        );
    }
}

#[test]
fn the_integration_tests_are_at_most_eight_binaries() {
    let binaries: Vec<String> = std::fs::read_dir(root().join("tests"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs") || p.join("main.rs").exists())
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        binaries.len() <= 8,
        "{} test binaries (at most 8: add a module to an area's main.rs): {binaries:?}",
        binaries.len()
    );
}
