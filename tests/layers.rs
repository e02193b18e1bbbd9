//! The layers of ARCHITECTURE.md, enforced: every `crate::…` path in a module's source must
//! name a module of a lower layer (or its own). A new upward import fails here, naming the
//! file, the line and the two modules.

use std::path::{Path, PathBuf};

/// Top-level modules, lowest first; a module may use only modules of lower layers.
const LAYERS: &[&[&str]] = &[
    &["sanitize", "parallel", "small_file"],
    &["trajectory"],
    &["metrics", "task"],
    &["llm", "mcp"],
    &["config"],
    &["world_model"],
    &["agent", "judge"],
    &["wm_eval", "probe", "proxy", "recheck", "fork"],
    &["export"],
    &["tui"],
    &["cli"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// The source without its `//` comments, lines kept (so offsets still give line numbers).
fn without_comments(source: &str) -> String {
    source
        .lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first name of each item of a `{…}` use group, `after` being the text right after its
/// `{`: read to the matching `}` across lines, nested groups skipped (`{a::{b, c}, d}` gives
/// `a` and `d`).
fn braced_names(after: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut depth = 0;
    let mut item = String::new();
    for c in after.chars() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                names.push(std::mem::take(&mut item));
                continue;
            }
            _ => {}
        }
        if depth == 0 {
            item.push(c);
        }
    }
    names.push(item);
    names
        .iter()
        .map(|item| {
            item.trim()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .filter(|n| !n.is_empty())
        .collect()
}

/// Every `crate::name` in `source`, with its line number; a `use crate::{…}` group read whole,
/// however many lines it takes.
fn crate_paths(source: &str) -> Vec<(usize, String)> {
    let code = without_comments(source);
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find("crate::") {
        let at = from + found;
        from = at + "crate::".len();
        let line = code[..at].matches('\n').count() + 1;
        let after = &code[from..];
        if let Some(group) = after.strip_prefix('{') {
            out.extend(braced_names(group).into_iter().map(|n| (line, n)));
        } else {
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            out.push((line, name));
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
    // A group wrapped over lines, nested groups and all, is read whole.
    let wrapped =
        "use crate::{\n    metrics::{run, table},\n    sanitize,\n    tui::view::View,\n};\n";
    assert_eq!(
        violations("trajectory", "z.rs", wrapped),
        [
            "z.rs:1: `trajectory` uses `metrics`, which is not below it",
            "z.rs:1: `trajectory` uses `tui`, which is not below it"
        ]
    );
}

/// The parts of `src/tui/` (its files, `run_view/` counted as one) that `source` names: through
/// `super::` (or `super::super::` from inside `run_view/`), `self::` (from `tui/mod.rs`) and
/// `crate::tui::`. A name that is no part is an item of `tui/mod.rs`, named `mod`.
fn tui_uses(source: &str, prefixes: &[&str], parts: &[String]) -> Vec<String> {
    // Production code only: a test module may open any view it checks.
    let code = without_comments(source.split("#[cfg(test)]").next().unwrap_or_default());
    let mut out = Vec::new();
    {
        let line = code.as_str();
        for prefix in prefixes {
            let mut from = 0;
            while let Some(found) = line[from..].find(prefix) {
                let at = from + found;
                from = at + prefix.len();
                let rest = &line[from..];
                // `super::super::x` is not a `super::` from a direct child.
                let before = &line[..at];
                if before.ends_with("super::")
                    || before.ends_with(|c: char| c.is_alphanumeric() || c == '_')
                {
                    continue;
                }
                let names: Vec<String> = match rest.strip_prefix('{') {
                    Some(group) => braced_names(group),
                    None => vec![rest.to_string()],
                };
                for name in names {
                    let name: String = name
                        .trim()
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if name.is_empty() || name == "super" {
                        continue;
                    }
                    out.push(if parts.contains(&name) {
                        name
                    } else {
                        "mod".to_string()
                    });
                }
            }
        }
    }
    out
}

type Graph = std::collections::BTreeMap<String, std::collections::BTreeSet<String>>;

/// Tarjan's walk: visit order, the stack, and per part (index, low link, on the stack).
#[derive(Default)]
struct Walk {
    next: usize,
    stack: Vec<String>,
    seen: std::collections::HashMap<String, (usize, usize, bool)>,
    groups: Vec<Vec<String>>,
}

impl Walk {
    fn visit(&mut self, v: &str, edges: &Graph) {
        let index = self.next;
        self.next += 1;
        self.seen.insert(v.to_string(), (index, index, true));
        self.stack.push(v.to_string());
        for w in edges.get(v).into_iter().flatten() {
            let low = match self.seen.get(w).copied() {
                None => {
                    self.visit(w, edges);
                    self.seen[w].1
                }
                Some((index_w, _, true)) => index_w,
                Some(_) => continue,
            };
            let e = self.seen.get_mut(v).unwrap();
            e.1 = e.1.min(low);
        }
        let (index, low, _) = self.seen[v];
        if index == low {
            let mut group = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.seen.get_mut(&w).unwrap().2 = false;
                let done = w == v;
                group.push(w);
                if done {
                    break;
                }
            }
            if group.len() > 1 {
                group.sort();
                self.groups.push(group);
            }
        }
    }
}

/// Groups of parts that import each other, round a cycle (Tarjan's strongly connected
/// components of more than one part).
fn cycles(edges: &Graph) -> Vec<Vec<String>> {
    let mut walk = Walk::default();
    for v in edges.keys() {
        if !walk.seen.contains_key(v) {
            walk.visit(v, edges);
        }
    }
    walk.groups
}

#[test]
fn no_file_of_the_explorer_imports_itself_round_a_cycle() {
    let tui = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tui");
    let mut parts: Vec<String> = std::fs::read_dir(&tui)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().is_some_and(|n| n != "mod.rs"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    parts.sort();
    let mut edges = Graph::new();
    let mut files = Vec::new();
    rust_files(&tui, &mut files);
    for path in &files {
        let rel = path.strip_prefix(&tui).unwrap();
        let in_run_view = rel.starts_with("run_view");
        let (part, prefixes): (String, &[&str]) = if rel == Path::new("mod.rs") {
            ("mod".into(), &["self::", "crate::tui::"])
        } else if rel == Path::new("run_view/mod.rs") || !in_run_view {
            let part = if in_run_view {
                "run_view".into()
            } else {
                rel.file_stem().unwrap().to_string_lossy().into_owned()
            };
            (part, &["super::", "crate::tui::"])
        } else {
            ("run_view".into(), &["super::super::", "crate::tui::"])
        };
        let source = std::fs::read_to_string(path).unwrap();
        let uses = tui_uses(&source, prefixes, &parts);
        let entry = edges.entry(part.clone()).or_default();
        entry.extend(uses.into_iter().filter(|u| *u != part));
    }
    let found = cycles(&edges);
    assert!(
        found.is_empty(),
        "files of src/tui import each other round a cycle (make the shared type a leaf): {found:?}"
    );
    assert!(
        edges.len() > 15,
        "read the explorer's files ({})",
        edges.len()
    );
}

#[test]
fn the_cycle_finder_finds_a_cycle() {
    let parts = vec!["app".to_string(), "view".to_string(), "action".to_string()];
    assert_eq!(
        tui_uses(
            "use super::app::Layer;\nuse super::{view::View, action};\nfn f() { super::super::x(); }\n#[cfg(test)]\nuse super::view;",
            &["super::"],
            &parts
        ),
        ["app", "view", "action"]
    );
    let mut edges = Graph::new();
    for (a, b) in [
        ("app", "view"),
        ("view", "action"),
        ("action", "app"),
        ("help", "view"),
    ] {
        edges.entry(a.into()).or_default().insert(b.into());
    }
    assert_eq!(cycles(&edges), [vec!["action", "app", "view"]]);
}
