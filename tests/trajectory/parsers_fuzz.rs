//! Fuzzing that stays: mutated trajectories through every reader, and random or mutated input
//! through every config parser. Nothing may panic; a reader must finish (a bad line is a
//! problem, not a stop) and the report of a bad line names its file and line.
//!
//! `PROPTEST_CASES` sets the number of cases per property (default below).

use std::path::Path;

use cosmos_engine::metrics::run::RunAccumulator;
use cosmos_trajectory::listing::RunSummary;
use cosmos_trajectory::reader::{EventStream, parse_event, parse_header};
use cosmos_trajectory::run::Run;
use cosmos_trajectory::synthetic::{self, Spec};
use proptest::prelude::*;

const CASES: u32 = 300;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(CASES),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// A small real run file, as bytes.
fn good_run() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.jsonl");
    let spec = Spec {
        nodes: 12,
        seed: 5,
        ..Spec::default()
    };
    synthetic::write(&path, &spec, RunAccumulator::tally).unwrap();
    std::fs::read(path).unwrap()
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Cut(usize),
    Insert(usize, Vec<u8>),
    DropLine(usize),
    DuplicateLine(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let junk = prop_oneof![
        prop::collection::vec(any::<u8>(), 1..40),
        Just(b"\n".to_vec()),
        Just(b"\xEF\xBB\xBF".to_vec()),
        Just(
            b"{\"seq\":1,\"t_ms\":0,\"kind\":\"node_added\",\"node\":99999999999999999999}\n"
                .to_vec()
        ),
        Just(b"\xff\xfe\x00".to_vec()),
        Just("\u{202e}\u{1b}[2J".as_bytes().to_vec()),
    ];
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        any::<usize>().prop_map(Mutation::Cut),
        (any::<usize>(), junk).prop_map(|(i, j)| Mutation::Insert(i, j)),
        any::<usize>().prop_map(Mutation::DropLine),
        any::<usize>().prop_map(Mutation::DuplicateLine),
    ]
}

fn apply(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        let len = bytes.len().max(1);
        match m {
            Mutation::Flip(i, b) if !bytes.is_empty() => bytes[i % len] = *b,
            Mutation::Cut(i) => bytes.truncate(i % len),
            Mutation::Insert(i, junk) => {
                let at = i % (bytes.len() + 1);
                bytes.splice(at..at, junk.iter().copied());
            }
            Mutation::DropLine(i) | Mutation::DuplicateLine(i) => {
                let mut lines: Vec<Vec<u8>> =
                    bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
                let at = i % lines.len();
                if matches!(m, Mutation::DropLine(_)) {
                    lines.remove(at);
                } else {
                    let line = lines[at].clone();
                    lines.insert(at, line);
                }
                bytes = lines.join(&b'\n');
            }
            _ => {}
        }
    }
    bytes
}

/// Every reader over one file: the streaming reader, a full open, the listing, the metrics.
fn read_everything(path: &Path) {
    if let Ok(mut stream) = EventStream::open(path) {
        let mut acc = RunAccumulator::new(stream.header());
        while let Ok(Some(event)) = stream.next_event() {
            acc.push(&event);
        }
        for p in stream.problems() {
            let shown = p.to_string();
            assert!(
                shown.contains("r.jsonl:"),
                "a problem names its file: {shown}"
            );
        }
        let _ = acc.metrics();
    }
    if let Ok(run) = Run::open(path) {
        let _ = cosmos_engine::metrics::run::of_run(&run);
    }
    let _ = RunSummary::read(path);
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn mutated_trajectories_never_panic_a_reader(mutations in prop::collection::vec(mutation(), 1..6)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        std::fs::write(&path, apply(good_run(), &mutations)).unwrap();
        read_everything(&path);
    }

    #[test]
    fn random_lines_never_panic_the_line_parsers(line in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = parse_header(&line);
        let _ = parse_event(&line);
    }

    #[test]
    fn config_parsers_take_anything_without_panicking(
        text in prop_oneof![
            ".{0,200}",
            // Near misses of the real shapes, with numbers and strings that are out of range.
            (prop::sample::select(vec!["timeout_s", "temperature", "max_tokens", "max_retries", "alpha", "c", "k", "concurrency", "iterations", "output", "trials", "seed", "kind"]),
             prop::sample::select(vec!["inf", "-inf", "nan", "1e300", "-1", "0", "18446744073709551616", "\"x\"", "[]", "true"]),
             prop::sample::select(vec!["[default]", "[roles.planner]", "[roles.judge]", "[agent]", "[judge]", "[world_models.x]", "[keys]"]))
                .prop_map(|(k, v, t)| format!("{t}\n{k} = {v}\n")),
            (".{0,20}", ".{0,20}").prop_map(|(a, b)| format!("{{\"mcpServers\": {{\"{a}\": {{\"command\": \"{b}\", \"env\": {{\"K\": \"${{{a}}}\"}}}}}}}}")),
            (".{0,20}", ".{0,40}").prop_map(|(a, b)| format!("{{\"tasks\": [{{\"id\": \"{a}\", \"request\": \"{b}\"}}]}}")),
            ".{0,20}".prop_map(|a| format!("{{\"server_tasks\": [{{\"servers\": [\"{a}\"], \"tasks\": [{{\"task_id\": 1}}]}}]}}")),
            prop::sample::select(vec!["ctrl-", "F99", "alt-shift-", "Ctrl-Ü", "", " ", "ctrl-ctrl-q"])
                .prop_map(|k| format!("[keys]\nquit = [\"{k}\"]\n")),
        ]
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("input");
        std::fs::write(&path, &text).unwrap();
        if let Ok(config) = cosmos_engine::config::Config::load(Some(&path)) {
            let _ = cosmos_engine::agent::Settings::from_config(&config);
        }
        let _ = cosmos_engine::mcp::McpConfig::parse(&text);
        let _ = cosmos_engine::task::load(&path);
        let _ = cosmos_app::tui::Keymap::load(&path);
    }
}

#[test]
fn the_unmutated_run_reads_clean() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.jsonl");
    std::fs::write(&path, good_run()).unwrap();
    let stream = {
        let mut s = EventStream::open(&path).unwrap();
        while s.next_event().unwrap().is_some() {}
        s
    };
    assert!(stream.problems().is_empty(), "{:?}", stream.problems());
}
