//! The layers of ARCHITECTURE.md, enforced: every `crate::…` path in a module's source must
//! name a module of a lower layer (or its own). A new upward import fails here, naming the
//! file, the line and the two modules.

use std::path::{Path, PathBuf};

/// Top-level modules, lowest first; a module may use only modules of lower layers.
const LAYERS: &[&[&str]] = &[
    &["sanitize"],
    &["trajectory"],
    &["metrics", "task"],
    &["llm", "mcp"],
    &["world_model"],
    &["agent", "judge"],
    &["wm_eval", "probe"],
    &["export"],
    &["tui"],
    &["cli"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// Every `crate::name` in `source`, with its line number.
fn crate_paths(source: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in source.lines().enumerate() {
        let code = line.split("//").next().unwrap_or_default();
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            // `use crate::{a, b}` lists several at once.
            if name.is_empty() && after.starts_with('{') {
                let inner = after[1..].split('}').next().unwrap_or_default();
                for part in inner.split(',') {
                    let n: String = part
                        .trim()
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    out.push((i + 1, n));
                }
            } else {
                out.push((i + 1, name));
            }
            rest = after;
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The violations in `source`, a file of `module`.
fn violations(module: &str, file: &str, source: &str) -> Vec<String> {
    let Some(own) = layer_of(module) else {
        return vec![format!(
            "{file}: module `{module}` is in no layer of tests/layers.rs"
        )];
    };
    crate_paths(source)
        .into_iter()
        .filter(|(_, used)| used != module)
        .filter_map(|(line, used)| match layer_of(&used) {
            Some(l) if l < own => None,
            Some(_) => Some(format!(
                "{file}:{line}: `{module}` uses `{used}`, which is not below it"
            )),
            None => Some(format!(
                "{file}:{line}: `{module}` uses `{used}`, which is in no layer"
            )),
        })
        .collect()
}

#[test]
fn every_module_uses_only_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut problems = Vec::new();
    for path in &files {
        let rel = path.strip_prefix(&src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs");
        if module == "lib" || module == "main" {
            continue;
        }
        let source = std::fs::read_to_string(path).unwrap();
        problems.extend(violations(module, &rel.display().to_string(), &source));
    }
    assert!(
        problems.is_empty(),
        "layer order broken:\n{}",
        problems.join("\n")
    );
    assert!(
        files.len() > 40,
        "read the source tree ({} files)",
        files.len()
    );
}

#[test]
fn the_checker_finds_an_upward_import() {
    let source = "use crate::trajectory::event::Event;\nuse crate::{metrics::run, sanitize};\n// crate::tui in a comment\nfn f() { crate::agent::x(); }\n";
    let found = violations("trajectory", "x.rs", source);
    assert_eq!(
        found,
        [
            "x.rs:2: `trajectory` uses `metrics`, which is not below it",
            "x.rs:4: `trajectory` uses `agent`, which is not below it"
        ]
    );
    assert!(violations("cli", "y.rs", source).is_empty());
}
