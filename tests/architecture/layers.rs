//! The boundaries of ARCHITECTURE.md that the compiler does not keep, kept here.
//!
//! The crates keep the big layers (trajectory, metrics, engine, then export and proxy, then app). Inside each crate:
//! - its top-level modules are layered, and a module may use only modules of lower layers;
//! - no file imports itself round a cycle, in any folder: a file that names an item of another
//!   file (through `crate::`, `super::`, `self::` or a child module's name) depends on it, and
//!   the dependencies between files form no circle. A type two files share lives in a leaf;
//! - no two files of one crate share a name (`mod.rs` and the crate roots aside).
//! - an engine or app module is public only when another crate, a test or a bench names it;
//! - an agent reaches a server only through `agent/real_call.rs`.
//!
//! Test code (each item under `#[cfg(test)]`, by its span) may reach anywhere and is not read;
//! the rest of the file is, whatever follows a test module.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// A file's module path inside its crate (`mcp/pool.rs` is `["mcp", "pool"]`, `lib.rs` is `[]`).
type ModPath = Vec<String>;
type Graph = BTreeMap<ModPath, BTreeSet<ModPath>>;

/// Per crate, its top-level modules, lowest first; a module may use modules of lower layers
/// only. `*` stands for every module not named, and those may use each other.
const LAYERS: &[(&str, &[&[&str]])] = &[
    (
        "trajectory",
        &[&["sanitize", "parallel", "small_file"], &["*"]],
    ),
    ("metrics", &[&["*"]]),
    (
        "engine",
        &[
            &["task"],
            &["llm", "mcp"],
            &["config"],
            &["world_model"],
            &["agent", "judge"],
            &["wm_eval", "probe", "recheck", "fork_source"],
            &["import"],
        ],
    ),
    ("export", &[&["staged"], &["*"]]),
    ("proxy", &[&["*"]]),
    ("app", &[&["tui"], &["cli"]]),
];

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates")
}

/// The source without comments, the contents of string and character literals, and test
/// code (each item under `#[cfg(test)]`, skipped by its own span: a test module in the middle
/// of a file leaves what follows it read); lines kept.
fn production_code(source: &str) -> String {
    let code = blank_comments_and_literals(source);
    let mut out = String::with_capacity(code.len());
    let mut rest = code.as_str();
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at..];
        let end = item_end(item.as_bytes(), "#[cfg(test)]".len());
        // The skipped item's lines stay, empty, so line numbers hold.
        out.extend(item[..end].chars().filter(|&c| c == '\n'));
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// Where the item starting at `s[from..]` (after its attribute) ends: past its matching
/// closing brace, or past its `;` when one comes before any brace (`mod x;`, `use …;`). Further
/// attributes before the item are part of it.
fn item_end(s: &[u8], from: usize) -> usize {
    let mut i = from;
    let mut depth = 0usize;
    while i < s.len() {
        match s[i] {
            b'[' | b'(' if depth == 0 && i > 0 && s[i - 1] == b'#' => {
                // Another attribute: skip its brackets.
                let (open, close) = (s[i], if s[i] == b'[' { b']' } else { b')' });
                let mut d = 0;
                while i < s.len() {
                    d += usize::from(s[i] == open);
                    d -= usize::from(s[i] == close);
                    i += 1;
                    if d == 0 {
                        break;
                    }
                }
                continue;
            }
            b';' if depth == 0 => return i + 1,
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    s.len()
}

/// `source` with comments (`//`, `/* */`, nested) and the insides of string, raw string and
/// character literals replaced by spaces (newlines kept), so braces and paths in them are not
/// read as code.
fn blank_comments_and_literals(source: &str) -> String {
    let s = source.as_bytes();
    let mut out = Vec::with_capacity(s.len());
    let blank = |out: &mut Vec<u8>, bytes: &[u8]| {
        out.extend(bytes.iter().map(|&b| if b == b'\n' { b'\n' } else { b' ' }));
    };
    let mut i = 0;
    while i < s.len() {
        let rest = &s[i..];
        if rest.starts_with(b"//") {
            let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest.starts_with(b"/*") {
            let (mut depth, mut j) = (0usize, 0);
            while j < rest.len() {
                if rest[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, &rest[..j]);
            i += j;
        } else if rest.starts_with(b"r\"") || rest.starts_with(b"r#") && !is_ident(s, i) {
            // A raw string: r"…" or r#…#"…"#…#.
            let hashes = rest[1..].iter().take_while(|&&b| b == b'#').count();
            if rest.get(1 + hashes) != Some(&b'"') {
                out.push(s[i]);
                i += 1;
                continue;
            }
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let body = 2 + hashes;
            let end = rest[body..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(rest.len(), |p| body + p + close.len());
            out.extend_from_slice(b"r\"");
            blank(&mut out, &rest[2..end.saturating_sub(1)]);
            out.push(b'"');
            i += end;
        } else if s[i] == b'"' {
            let mut j = 1;
            while j < rest.len() && rest[j] != b'"' {
                j += if rest[j] == b'\\' { 2 } else { 1 };
            }
            out.push(b'"');
            blank(&mut out, &rest[1..j.min(rest.len())]);
            out.push(b'"');
            i += (j + 1).min(rest.len());
        } else if s[i] == b'\'' {
            // A character literal ('x', '\n', '\u{…}'), or a lifetime ('a), left as it is.
            let end = if rest.get(1) == Some(&b'\\') {
                rest[2..].iter().position(|&b| b == b'\'').map(|p| p + 3)
            } else if rest.get(2) == Some(&b'\'') {
                Some(3)
            } else {
                // A multi-byte character: its closing quote within four bytes.
                rest[1..rest.len().min(6)]
                    .iter()
                    .position(|&b| b == b'\'')
                    .filter(|&p| p > 1 && !rest[1].is_ascii())
                    .map(|p| p + 2)
            };
            match end {
                Some(end) => {
                    out.push(b'\'');
                    blank(&mut out, &rest[1..end - 1]);
                    out.push(b'\'');
                    i += end;
                }
                None => {
                    out.push(s[i]);
                    i += 1;
                }
            }
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The byte before `i` continues an identifier (so an `r` there is part of a name).
fn is_ident(s: &[u8], i: usize) -> bool {
    i > 0 && (s[i - 1].is_ascii_alphanumeric() || s[i - 1] == b'_')
}

fn skip_space(s: &[u8], i: &mut usize) {
    while s.get(*i).is_some_and(|c| c.is_ascii_whitespace()) {
        *i += 1;
    }
}

/// The paths of the use tree (or plain path) starting at `s[*i]`, segments split, groups
/// expanded (`a::{b::c, d}` gives `a::b::c` and `a::d`); `*i` is left after it.
fn use_tree(s: &[u8], i: &mut usize) -> Vec<ModPath> {
    let mut prefix = ModPath::new();
    loop {
        skip_space(s, i);
        if s.get(*i) == Some(&b'{') {
            *i += 1;
            let mut out = Vec::new();
            loop {
                skip_space(s, i);
                match s.get(*i) {
                    None => return out,
                    Some(b'}') => {
                        *i += 1;
                        return out;
                    }
                    Some(b',') => *i += 1,
                    Some(_) => {
                        let before = *i;
                        for path in use_tree(s, i) {
                            out.push(prefix.iter().cloned().chain(path).collect());
                        }
                        if *i == before {
                            *i += 1; // `*` or anything else that names no module
                        }
                    }
                }
            }
        }
        let start = *i;
        while s
            .get(*i)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
        {
            *i += 1;
        }
        if *i == start {
            return vec![prefix];
        }
        prefix.push(String::from_utf8_lossy(&s[start..*i]).into_owned());
        let mut j = *i;
        skip_space(s, &mut j);
        if s[j..].starts_with(b"::") {
            *i = j + 2;
        } else {
            return vec![prefix];
        }
    }
}

/// The files of the crate that `code`, the production code of the file `me`, names.
/// `children` are the modules declared below `me`, which it may name bare.
fn uses(code: &str, me: &ModPath, modules: &BTreeSet<ModPath>) -> BTreeSet<ModPath> {
    let s = code.as_bytes();
    let mut out = BTreeSet::new();
    let mut i = 0;
    while i < s.len() {
        let boundary =
            i == 0 || !(s[i - 1].is_ascii_alphanumeric() || matches!(s[i - 1], b'_' | b':'));
        if !(boundary && (s[i].is_ascii_alphabetic() || s[i] == b'_')) {
            i += 1;
            continue;
        }
        let start = i;
        for path in use_tree(s, &mut i) {
            if path.len() < 2 {
                continue;
            }
            let (mut base, rest): (ModPath, &[String]) = match path[0].as_str() {
                "crate" => (Vec::new(), &path[1..]),
                "self" => (me.clone(), &path[1..]),
                "super" => {
                    let ups = path.iter().take_while(|s| *s == "super").count();
                    (me[..me.len().saturating_sub(ups)].to_vec(), &path[ups..])
                }
                first => {
                    let child: ModPath = me.iter().cloned().chain([first.to_string()]).collect();
                    if !modules.contains(&child) {
                        continue;
                    }
                    (me.clone(), &path[..])
                }
            };
            let mut target = base.clone();
            for segment in rest {
                base.push(segment.clone());
                if modules.contains(&base) {
                    target = base.clone();
                }
            }
            if target != *me && modules.contains(&target) {
                out.insert(target);
            }
        }
        i = i.max(start + 1);
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

fn module_of(rel: &Path) -> ModPath {
    let mut parts: ModPath = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The file graph of a crate whose `src` holds `files` (relative path, source).
fn file_graph(files: &[(PathBuf, String)]) -> Graph {
    let modules: BTreeSet<ModPath> = files.iter().map(|(rel, _)| module_of(rel)).collect();
    files
        .iter()
        .map(|(rel, source)| {
            let me = module_of(rel);
            let code = without_child_re_exports(&production_code(source), &me, &modules);
            let used = uses(&code, &me, &modules);
            (me, used)
        })
        .collect()
}

/// `code` with its `pub use` of its own child modules' items blanked (newlines kept): a module
/// that re-exports what its children define declares its API, it does not depend on them, so
/// the children may use what the module itself defines without making a cycle.
fn without_child_re_exports(code: &str, me: &ModPath, modules: &BTreeSet<ModPath>) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("pub use ") {
        let (before, statement) = rest.split_at(at);
        out.push_str(before);
        let end = statement.find(';').map_or(statement.len(), |i| i + 1);
        let path = statement["pub use ".len()..].trim_start();
        let path = path.strip_prefix("self::").unwrap_or(path);
        let first: String = path
            .chars()
            .take_while(|&c| c.is_alphanumeric() || c == '_')
            .collect();
        let child: ModPath = me.iter().cloned().chain([first]).collect();
        let at_line_start = before.is_empty() || before.ends_with('\n');
        if at_line_start && modules.contains(&child) {
            out.extend(statement[..end].chars().filter(|&c| c == '\n'));
        } else {
            out.push_str(&statement[..end]);
        }
        rest = &statement[end..];
    }
    out.push_str(rest);
    out
}

/// Tarjan's walk: visit order, the stack, and per file (index, low link, on the stack).
#[derive(Default)]
struct Walk {
    next: usize,
    stack: Vec<ModPath>,
    seen: HashMap<ModPath, (usize, usize, bool)>,
    groups: Vec<Vec<String>>,
}

impl Walk {
    fn visit(&mut self, v: &ModPath, edges: &Graph) {
        let index = self.next;
        self.next += 1;
        self.seen.insert(v.clone(), (index, index, true));
        self.stack.push(v.clone());
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
                let done = w == *v;
                group.push(if w.is_empty() {
                    "lib".into()
                } else {
                    w.join("::")
                });
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

/// Groups of files that import each other round a cycle (Tarjan's strongly connected
/// components of more than one file).
fn cycles(edges: &Graph) -> Vec<Vec<String>> {
    let mut walk = Walk::default();
    for v in edges.keys() {
        if !walk.seen.contains_key(v) {
            walk.visit(v, edges);
        }
    }
    walk.groups
}

/// The layer of a top-level module in `layers`, `*` taking every module not named.
fn layer_of(layers: &[&[&str]], module: &str) -> Option<usize> {
    layers
        .iter()
        .position(|l| l.contains(&module))
        .or_else(|| layers.iter().position(|l| l.contains(&"*")))
}

/// Upward imports between top-level modules in `edges`.
fn layer_violations(layers: &[&[&str]], edges: &Graph) -> Vec<String> {
    let mut problems = Vec::new();
    for (from, targets) in edges {
        let Some(module) = from.first() else { continue };
        let Some(own) = layer_of(layers, module) else {
            problems.push(format!(
                "module `{module}` is in no layer of tests/architecture/layers.rs"
            ));
            continue;
        };
        for target in targets {
            let Some(used) = target.first().filter(|u| *u != module) else {
                continue;
            };
            // Modules the `*` layer gathers may use each other; the cycle check orders them.
            let shared = layers[own].contains(&"*");
            if layer_of(layers, used).is_none_or(|l| l > own || (l == own && !shared)) {
                problems.push(format!(
                    "`{}` uses `{}`, which is not below `{module}`",
                    from.join("::"),
                    target.join("::")
                ));
            }
        }
    }
    problems
}

fn read_crate(name: &str) -> Vec<(PathBuf, String)> {
    let src = crates_dir().join(name).join("src");
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    paths
        .into_iter()
        .map(|p| {
            let source = std::fs::read_to_string(&p).unwrap();
            (p.strip_prefix(&src).unwrap().to_path_buf(), source)
        })
        .collect()
}

#[test]
fn every_crate_is_layered_and_free_of_import_cycles() {
    let on_disk: BTreeSet<String> = std::fs::read_dir(crates_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let named: BTreeSet<String> = LAYERS.iter().map(|(c, _)| c.to_string()).collect();
    assert_eq!(
        on_disk, named,
        "every crate has its layers in tests/architecture/layers.rs"
    );
    let mut problems = Vec::new();
    let mut files = 0;
    for (name, layers) in LAYERS {
        let sources = read_crate(name);
        files += sources.len();
        let edges = file_graph(&sources);
        for problem in layer_violations(layers, &edges) {
            problems.push(format!("{name}: {problem}"));
        }
        for (file, places) in shared_names(&sources) {
            problems.push(format!(
                "{name}: {} files are named {file} ({}): name each for its job",
                places.len(),
                places.join(", ")
            ));
        }
        for cycle in cycles(&edges) {
            problems.push(format!(
                "{name}: files import each other round a cycle (move what they share to a leaf): {}",
                cycle.join(", ")
            ));
        }
    }
    assert!(files > 150, "read the source trees ({files} files)");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// File names two or more files of one crate share (`mod.rs` and the crate roots aside), with
/// where each lies.
fn shared_names(sources: &[(PathBuf, String)]) -> BTreeMap<String, Vec<String>> {
    let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (path, _) in sources {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !["mod.rs", "lib.rs", "main.rs"].contains(&name.as_str()) {
            by_name
                .entry(name)
                .or_default()
                .push(path.display().to_string());
        }
    }
    by_name.retain(|_, places| places.len() > 1);
    by_name
}

#[test]
fn two_files_of_one_name_are_found() {
    let files: Vec<(PathBuf, String)> =
        ["lib.rs", "a/mod.rs", "a/wire.rs", "b/wire.rs", "b/mod.rs"]
            .iter()
            .map(|p| (PathBuf::from(p), String::new()))
            .collect();
    let shared = shared_names(&files);
    assert_eq!(shared.keys().collect::<Vec<_>>(), ["wire.rs"]);
    assert_eq!(shared["wire.rs"], ["a/wire.rs", "b/wire.rs"]);
}

/// A crate of `(path, source)` files, as if read from disk.
fn planted(files: &[(&str, &str)]) -> Graph {
    let files: Vec<(PathBuf, String)> = files
        .iter()
        .map(|(p, s)| (PathBuf::from(p), s.to_string()))
        .collect();
    file_graph(&files)
}

fn path(s: &str) -> ModPath {
    s.split("::").map(String::from).collect()
}

#[test]
fn every_way_of_naming_a_file_is_an_edge() {
    let graph = planted(&[
        ("lib.rs", "pub mod a;\npub mod b;\n"),
        (
            "a/mod.rs",
            "mod x;\nmod y;\npub use x::Thing;\npub use self::y::{\n    Y,\n};\nuse y::Z;\n",
        ),
        (
            "a/x.rs",
            "use super::y::{Y, self};\nuse crate::{b::{c::C, B}, a};\n// crate::b in a comment\n",
        ),
        (
            "a/y.rs",
            "fn f() { crate::b::c::g(); }\n#[cfg(test)]\nuse super::x;\n#[cfg(test)]\n#[allow(x)]\nmod tests {\n    fn t() { let s = \"}\"; let c = '{'; super::super::x::f(); }\n}\nfn after() { crate::b::g(); let s = \"crate::a\"; }\n",
        ),
        ("b/mod.rs", "pub mod c;\n"),
        ("b/c.rs", "use std::fmt::Write;\nuse other_crate::a::x;\n"),
    ]);
    let edges = |m: &str| -> Vec<String> { graph[&path(m)].iter().map(|p| p.join("::")).collect() };
    assert_eq!(
        edges("a"),
        ["a::y"],
        "a module's re-exports of its children are its API, not a use of them"
    );
    assert_eq!(edges("a::x"), ["a", "a::y", "b", "b::c"]);
    assert_eq!(
        edges("a::y"),
        ["b", "b::c"],
        "test code is not read, what follows it is, a string is no code"
    );
    assert!(
        edges("b::c").is_empty(),
        "std and other crates are not files"
    );
}

#[test]
fn a_planted_cycle_in_any_folder_is_found() {
    let deep = planted(&[
        ("lib.rs", "mod tui;\n"),
        ("tui/mod.rs", "mod views;\n"),
        ("tui/views/mod.rs", "mod one;\nmod two;\n"),
        ("tui/views/one.rs", "use super::two::Two;\n"),
        ("tui/views/two.rs", "use crate::tui::views::one::One;\n"),
    ]);
    assert_eq!(cycles(&deep), [vec!["tui::views::one", "tui::views::two"]]);
    let through_parent = planted(&[
        ("lib.rs", "mod m;\n"),
        ("m.rs", "mod k;\nfn f() -> k::K { todo!() }\n"),
        ("m/k.rs", "use super::Shared;\n"),
    ]);
    assert_eq!(cycles(&through_parent), [vec!["m", "m::k"]]);
    let tree = planted(&[
        ("lib.rs", "mod m;\nmod n;\n"),
        ("m.rs", "use crate::n::N;\n"),
        ("n.rs", "pub struct N;\n"),
    ]);
    assert!(cycles(&tree).is_empty());
}

#[test]
fn an_upward_import_breaks_the_layers() {
    let layers: &[&[&str]] = &[&["low"], &["high"]];
    let graph = planted(&[
        ("lib.rs", "mod low;\nmod high;\n"),
        ("low.rs", "use crate::high::H;\n"),
        ("high.rs", "use crate::low::L;\n"),
    ]);
    assert_eq!(
        layer_violations(layers, &graph),
        ["`low` uses `high`, which is not below `low`"]
    );
    let unplaced = planted(&[("lib.rs", "mod stray;\n"), ("stray.rs", "")]);
    assert_eq!(
        layer_violations(layers, &unplaced),
        ["module `stray` is in no layer of tests/architecture/layers.rs"]
    );
}

/// The agent files that call a tool host themselves: an agent's real calls go through the one
/// path that bounds them (`agent/real_call.rs`), grounded calls included.
fn real_call_sites(sources: &[(PathBuf, String)]) -> Vec<String> {
    sources
        .iter()
        .filter(|(path, _)| path.starts_with("agent") && !path.ends_with("real_call.rs"))
        .filter(|(_, source)| {
            let code: String = production_code(source)
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect();
            code.contains("host.call(")
        })
        .map(|(path, _)| path.display().to_string())
        .collect()
}

#[test]
fn an_agent_reaches_a_server_only_through_real_call() {
    let sites = real_call_sites(&read_crate("engine"));
    assert!(
        sites.is_empty(),
        "these agent files call the tool host themselves; use agent::real_call::make: {sites:?}"
    );
    let planted: Vec<(PathBuf, String)> = [
        (
            "agent/real_call.rs",
            "fn make() { env.host.call(t, a, None); }",
        ),
        (
            "agent/rehearse.rs",
            "fn ground() { self.env\n    .host\n    .call(t, a, None); }",
        ),
        (
            "agent/react.rs",
            "// host.call( in a comment\nfn f() { let s = \"host.call(\"; }",
        ),
    ]
    .iter()
    .map(|(p, s)| (PathBuf::from(p), s.to_string()))
    .collect();
    assert_eq!(real_call_sites(&planted), ["agent/rehearse.rs"]);
}

/// Whether `outside` names the module `name` of `parent` (`cosmos_engine::mcp`): by its path, or
/// in a braced import of its parent (`use cosmos_engine::mcp::{pool, server::Server}`).
fn names_module(outside: &str, parent: &str, name: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let path = format!("{parent}::{name}");
    let by_path = outside.match_indices(&path).any(|(at, _)| {
        !outside[at + path.len()..]
            .chars()
            .next()
            .is_some_and(is_ident)
    });
    let braced = format!("{parent}::{{");
    by_path
        || outside.match_indices(&braced).any(|(at, _)| {
            // The braced list, to its matching brace; each top-level entry's first name.
            let list = &outside[at + braced.len()..];
            let (mut depth, mut entry_start, mut names) = (0, 0, Vec::new());
            for (i, c) in list.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        names.push(&list[entry_start..i]);
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        names.push(&list[entry_start..i]);
                        entry_start = i + 1;
                    }
                    _ => {}
                }
            }
            names.iter().any(|entry| {
                let first: String = entry.trim().chars().take_while(|&c| is_ident(c)).collect();
                first == name
            })
        })
}

/// The public modules of crate `krate` (its files) that `outside` never names: each should be
/// `pub(crate)`, so that what a crate makes public is what its users use.
fn unused_public_modules(krate: &str, files: &[(PathBuf, String)], outside: &str) -> Vec<String> {
    let mut unused = Vec::new();
    for (path, source) in files {
        let parent = std::iter::once(krate.to_string())
            .chain(module_of(path))
            .collect::<Vec<_>>()
            .join("::");
        for line in production_code(source).lines() {
            let Some(name) = line
                .strip_prefix("pub mod ")
                .and_then(|rest| rest.strip_suffix(';'))
            else {
                continue;
            };
            if !names_module(outside, &parent, name) {
                unused.push(format!("{parent}::{name}"));
            }
        }
    }
    unused
}

/// The public modules below crate `files`' top level (`pub mod` outside `lib.rs`): a crate
/// whose API is its areas re-exports what users need there, so there should be none.
fn public_submodules(krate: &str, files: &[(PathBuf, String)]) -> Vec<String> {
    let mut public = Vec::new();
    for (path, source) in files.iter().filter(|(p, _)| p != Path::new("lib.rs")) {
        let parent = std::iter::once(krate.to_string())
            .chain(module_of(path))
            .collect::<Vec<_>>()
            .join("::");
        for line in production_code(source).lines() {
            if let Some(name) = line
                .trim_start()
                .strip_prefix("pub mod ")
                .and_then(|rest| rest.strip_suffix(';'))
            {
                public.push(format!("{parent}::{name}"));
            }
        }
    }
    public
}

#[test]
fn the_engine_the_export_and_the_app_are_used_through_their_areas_and_re_exports() {
    let mut public = Vec::new();
    for (krate, dir) in [
        ("cosmos_engine", "engine"),
        ("cosmos_export", "export"),
        ("cosmos_app", "app"),
    ] {
        public.extend(public_submodules(krate, &read_crate(dir)));
    }
    assert!(
        public.is_empty(),
        "modules public below an area (make them pub(crate) and re-export what users need \
         from the area's module): {public:?}"
    );
    let planted: Vec<(PathBuf, String)> = [
        ("lib.rs", "pub mod mcp;\npub mod agent;\n"),
        (
            "mcp/mod.rs",
            "pub(crate) mod pool;\npub mod server;\npub use pool::McpPool;\n",
        ),
        (
            "agent/mod.rs",
            "mod real_call;\n#[cfg(test)]\nmod tests {\n    pub mod inner;\n}\n",
        ),
    ]
    .iter()
    .map(|(p, s)| (PathBuf::from(p), s.to_string()))
    .collect();
    assert_eq!(
        public_submodules("cosmos_engine", &planted),
        ["cosmos_engine::mcp::server"]
    );
}

/// The Rust sources under `dirs` (relative to the workspace root), one string.
fn sources_under(dirs: &[&str]) -> String {
    let root = crates_dir().parent().unwrap().to_path_buf();
    let mut files = Vec::new();
    for dir in dirs {
        rust_files(&root.join(dir), &mut files);
    }
    files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_engine_and_the_app_make_public_only_the_modules_their_users_name() {
    let users_of_engine = sources_under(&[
        "crates/app/src",
        "crates/export/src",
        "crates/proxy/src",
        "tests",
        "benches",
        "src",
    ]);
    let users_of_app = sources_under(&["tests", "benches", "src"]);
    let mut unused =
        unused_public_modules("cosmos_engine", &read_crate("engine"), &users_of_engine);
    unused.extend(unused_public_modules(
        "cosmos_app",
        &read_crate("app"),
        &users_of_app,
    ));
    assert!(
        unused.is_empty(),
        "public modules no other crate, test or bench names (make them pub(crate)): {unused:?}"
    );
    let engine: Vec<(PathBuf, String)> = [
        ("lib.rs", "pub mod mcp;\npub mod quiet;\n"),
        (
            "mcp/mod.rs",
            "pub mod pool;\npub mod server;\npub(crate) mod seed;\npub mod unused;\n",
        ),
    ]
    .iter()
    .map(|(p, s)| (PathBuf::from(p), s.to_string()))
    .collect();
    let outside = "use cosmos_engine::mcp::{pool, server::{Server, Timeouts}};\n\
                   let q = cosmos_engine::quiet::x(); // cosmos_engine::mcp::unusedness";
    assert_eq!(
        unused_public_modules("cosmos_engine", &engine, outside),
        ["cosmos_engine::mcp::unused"]
    );
}
