//! The lean decoder (`trajectory::lean`, what `report` and an opened run read) never takes a line the full
//! decoder refuses, and what it takes it reads as the full decoder does; and the full
//! decoder's one pass (`trajectory::mirror` for these kinds) agrees with its general path.
//! Every line of the lean kinds from a generated run and the sample runs is mutated field by
//! field (dropped, nulled, duplicated, given each wrong type, a number out of range, a lone
//! surrogate, a control character, an unknown neighbour), one level deep into nested objects
//! and into the first object of a list too. The header read for a totals pass is held to the
//! full header's verdicts the same way.

use std::path::Path;

use cosmos_engine::metrics::run::RunAccumulator;
use cosmos_trajectory::event::Event;
use cosmos_trajectory::lean::{self, Brief, KINDS as LEAN_KINDS};
use cosmos_trajectory::reader::{MIRRORED, parse_event_general, parse_event_str};
use cosmos_trajectory::synthetic::{self, Spec};
use serde_json::{Map, Value};

/// Values put in place of a field, as JSON text (some are not what a `Value` could hold).
const REPLACEMENTS: &[&str] = &[
    "null",
    "5",
    "-1",
    "1.5",
    "1e999",
    "18446744073709551616",
    "true",
    "\"x\"",
    "\"validator\"",
    "\"\\ud800\"",
    "\"\\u0041\"",
    "\"a\u{1}b\"",
    "\"a\\\"b\"",
    "[]",
    "[1,2]",
    "[1,\"x\"]",
    "{}",
    "{\"type\":\"finish\"}",
    "{\"type\":\"tool_call\",\"tool\":\"t:x\"}",
    "{\"text\":\"t\",\"is_error\":true}",
];

const MARK: &str = "@@mark@@";

/// `object` with `set` applied, written with the marker replaced by `raw`.
fn variant(
    object: &Map<String, Value>,
    set: impl FnOnce(&mut Map<String, Value>),
    raw: &str,
) -> String {
    let mut copy = object.clone();
    set(&mut copy);
    serde_json::to_string(&copy)
        .unwrap()
        .replace(&format!("\"{MARK}\""), raw)
}

/// Every mutation of one event line's object.
fn mutations(object: &Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    for key in object.keys() {
        out.push(variant(object, |o| drop(o.shift_remove(key)), ""));
        for raw in REPLACEMENTS {
            out.push(variant(
                object,
                |o| drop(o.insert(key.clone(), MARK.into())),
                raw,
            ));
        }
        // A duplicate of the key, after the rest.
        let dup = format!("\"{key}\":{}", object[key]);
        out.push(
            variant(
                object,
                |o| drop(o.insert("@@dup@@".into(), MARK.into())),
                "0",
            )
            .replace("\"@@dup@@\":0", &dup),
        );
        if let Value::Object(inner) = &object[key] {
            for nested in mutations(inner) {
                let mut copy = object.clone();
                copy.insert(key.clone(), MARK.into());
                out.push(
                    serde_json::to_string(&copy)
                        .unwrap()
                        .replace(&format!("\"{MARK}\""), &nested),
                );
            }
        }
        // The first object of a list of them (a header's tools and servers).
        if let Value::Array(items) = &object[key]
            && let Some(Value::Object(first)) = items.first()
        {
            for nested in mutations(first) {
                let mut items = items.clone();
                items[0] = MARK.into();
                let mut copy = object.clone();
                copy.insert(key.clone(), Value::Array(items));
                out.push(
                    serde_json::to_string(&copy)
                        .unwrap()
                        .replace(&format!("\"{MARK}\""), &nested),
                );
            }
        }
    }
    out.push(variant(
        object,
        |o| drop(o.insert("unknown_field".into(), 1.into())),
        "",
    ));
    out
}

/// The lean reading of a line (what `report` and an opened run keep); `None` when the lean
/// decoder steps aside.
fn lean_of(line: &str) -> Option<Brief> {
    lean::parse(line)
}

/// The lean reading and the full event agree on everything the lean one keeps.
fn agree(brief: &Brief, full: &Event, line: &str) {
    assert_eq!(brief, &Brief::of(full.clone()), "{line}");
}

/// Runs imported from the other formats' fixtures (format version 2: a call without a result,
/// a header without a start, a planner or times), in a folder kept while they are read.
fn imported_runs() -> (tempfile::TempDir, Vec<std::path::PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/interchange");
    let mut written = Vec::new();
    for (name, format) in [
        ("atif_cut_off.json", cosmos_engine::import::Format::Atif),
        (
            "atif_claude_code_time.json",
            cosmos_engine::import::Format::Atif,
        ),
        (
            "inspect_time_mcp.eval",
            cosmos_engine::import::Format::Inspect,
        ),
    ] {
        cosmos_engine::import::read(&fixtures.join(name), format, &mut |run| {
            match cosmos_engine::import::write(&run, dir.path(), &Default::default())? {
                cosmos_engine::import::Written::New(path) => written.push(path),
                there => panic!("imported before: {there:?}"),
            }
            Ok(())
        })
        .unwrap();
    }
    (dir, written)
}

fn event_lines() -> Vec<String> {
    let spec = Spec {
        nodes: 60,
        padding: 20,
        seed: 5,
        ..Spec::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let generated = dir.path().join("g.jsonl");
    synthetic::write(&generated, &spec, RunAccumulator::tally).unwrap();
    let mut files = vec![generated];
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs");
    for entry in std::fs::read_dir(samples).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "jsonl") {
            files.push(p);
        }
    }
    let imported = imported_runs();
    files.extend(imported.1);
    let mut lines = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        lines.extend(text.lines().skip(1).map(str::to_string));
    }
    // A fork's `call_simulated` also names the tool and its arguments; no sample run has one.
    let simulated = lines
        .iter()
        .find(|l| l.contains(r#""kind":"call_simulated""#))
        .expect("a sample run with a world model's predictions");
    let mut fork: Map<String, Value> = serde_json::from_str(simulated).unwrap();
    fork.insert("tool".into(), "time__get_current_time".into());
    fork.insert("arguments".into(), serde_json::json!({"timezone": "UTC"}));
    lines.insert(0, serde_json::to_string(&fork).unwrap());
    lines
}

#[test]
fn the_lean_decoder_takes_only_what_the_full_decoder_takes_and_reads_it_the_same() {
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    let (mut taken, mut refused_both, mut stepped_aside, mut mirrored_only) = (0, 0, 0, 0);
    for line in event_lines() {
        let object: Map<String, Value> = serde_json::from_str(&line).unwrap();
        let kind = object["kind"].as_str().unwrap().to_string();
        let lean_kind = LEAN_KINDS.contains(&kind.as_str());
        if !lean_kind {
            assert!(lean_of(&line).is_none(), "not a lean kind: {line}");
        }
        if !MIRRORED.contains(&kind.as_str()) {
            continue;
        }
        // Only a few lines per kind: the mutations multiply.
        let count = seen.entry(kind).or_default();
        *count += 1;
        if *count > 6 {
            continue;
        }
        if !lean_kind {
            // Mirrored for the full decoder only: its one pass and its general path agree.
            for mutated in mutations(&object) {
                assert_eq!(
                    parse_event_str(&mutated),
                    parse_event_general(&mutated),
                    "{mutated}"
                );
                assert!(lean_of(&mutated).is_none(), "not a lean kind: {mutated}");
                mirrored_only += 1;
            }
            continue;
        }
        let written = lean_of(&line).unwrap_or_else(|| panic!("our own line goes lean: {line}"));
        agree(&written, &parse_event_str(&line).unwrap(), &line);
        for mutated in mutations(&object) {
            // The reader's one-pass decoding (mirrors for these kinds) and its general path
            // give the same event or the same problem.
            assert_eq!(
                parse_event_str(&mutated),
                parse_event_general(&mutated),
                "{mutated}"
            );
            match (lean_of(&mutated), parse_event_str(&mutated).ok()) {
                (Some(lean), Some(full)) => {
                    agree(&lean, &full, &mutated);
                    taken += 1;
                }
                (Some(lean), None) => {
                    panic!("lean took a line the full decoder refuses: {mutated}\n{lean:?}")
                }
                (None, Some(_)) => stepped_aside += 1,
                (None, None) => refused_both += 1,
            }
        }
    }
    assert_eq!(
        seen.len(),
        MIRRORED.len(),
        "every mirrored kind was tried: {seen:?}"
    );
    assert!(
        LEAN_KINDS.iter().all(|k| MIRRORED.contains(k)),
        "every lean kind is mirrored"
    );
    assert!(
        mirrored_only > 100,
        "{mirrored_only} mirrored-only mutations"
    );
    // The test means something only if each outcome happened often.
    assert!(
        taken > 100 && refused_both > 100 && stepped_aside > 10,
        "{taken} taken, {refused_both} refused, {stepped_aside} stepped aside"
    );
}

/// The header read for a totals pass (`trajectory::report_header`) takes a header line only
/// when the full decoder takes it, and then has the same facts; otherwise the full decoder's
/// header or refusal is used. Every field of real headers (and one level into each object) is
/// mutated as the events' are.
#[test]
fn the_report_header_takes_only_what_the_full_decoder_takes_and_reads_it_the_same() {
    use cosmos_trajectory::reader::parse_header;
    use cosmos_trajectory::report_header::ReportHeader;
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs");
    let mut headers = Vec::new();
    for entry in std::fs::read_dir(samples).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "jsonl") {
            let text = std::fs::read_to_string(&p).unwrap();
            headers.push(text.lines().next().unwrap().to_string());
        }
    }
    let spec = Spec {
        nodes: 10,
        seed: 5,
        ..Spec::default()
    };
    headers.push(serde_json::to_string(&synthetic::header(&spec)).unwrap());
    for run in imported_runs().1 {
        let text = std::fs::read_to_string(run).unwrap();
        headers.push(text.lines().next().unwrap().to_string());
    }
    let (mut taken, mut refused_both, mut stepped_aside) = (0, 0, 0);
    for (i, line) in headers.iter().enumerate() {
        let full = parse_header(line.as_bytes()).unwrap();
        assert_eq!(
            ReportHeader::read_lean(line),
            Some(ReportHeader::of(&full)),
            "our own header goes lean"
        );
        // A few headers in full depth; the rest only at their top level (they share shapes).
        let object: Map<String, Value> = serde_json::from_str(line).unwrap();
        let mutated = if i < 4 {
            mutations(&object)
        } else {
            mutations(&object).into_iter().step_by(7).collect()
        };
        for mutated in mutated {
            let full = parse_header(mutated.as_bytes());
            assert_eq!(
                ReportHeader::read(&mutated),
                full.as_ref().map(ReportHeader::of).map_err(Clone::clone),
                "{mutated}"
            );
            match (ReportHeader::read_lean(&mutated), full) {
                (Some(lean), Ok(full)) => {
                    assert_eq!(lean, ReportHeader::of(&full), "{mutated}");
                    taken += 1;
                }
                (Some(_), Err(why)) => {
                    panic!("lean took a header the full decoder refuses ({why}): {mutated}")
                }
                (None, Ok(_)) => stepped_aside += 1,
                (None, Err(_)) => refused_both += 1,
            }
        }
    }
    assert!(
        taken > 100 && refused_both > 100 && stepped_aside > 10,
        "{taken} taken, {refused_both} refused, {stepped_aside} stepped aside"
    );
}

/// Headers with the same `tools` list share one catalogue, found by the list's text; a list
/// nested near JSON's depth limit gets the full decoder's verdict (the list is decoded apart
/// from its header, at the depth it has there).
#[test]
fn equal_tool_lists_share_a_catalogue_and_keep_the_full_decoders_verdict() {
    use cosmos_trajectory::reader::parse_header;
    use cosmos_trajectory::report_header::ReportHeader;
    let spec = Spec {
        nodes: 10,
        seed: 5,
        ..Spec::default()
    };
    let mut header = serde_json::to_value(synthetic::header(&spec)).unwrap();
    let first = serde_json::to_string(&header).unwrap();
    header["run_id"] = "another run".into();
    let second = serde_json::to_string(&header).unwrap();
    let (a, b) = (
        ReportHeader::read_lean(&first).unwrap(),
        ReportHeader::read_lean(&second).unwrap(),
    );
    assert!(std::sync::Arc::ptr_eq(&a.tools, &b.tools), "one catalogue");
    assert_eq!(
        b,
        ReportHeader::of(&parse_header(second.as_bytes()).unwrap())
    );
    assert_eq!(a.run_id, "synthetic-5");

    let mut verdicts = std::collections::BTreeSet::new();
    for depth in 120..130 {
        let mut nested = Value::Null;
        for _ in 0..depth {
            nested = Value::Array(vec![nested]);
        }
        header["tools"][0]["output_schema"] = nested;
        let line = serde_json::to_string(&header).unwrap();
        let full = parse_header(line.as_bytes());
        assert_eq!(
            ReportHeader::read(&line),
            full.as_ref().map(ReportHeader::of).map_err(Clone::clone),
            "depth {depth}"
        );
        assert_eq!(
            ReportHeader::read_lean(&line).is_some(),
            full.is_ok(),
            "depth {depth}"
        );
        verdicts.insert(full.is_ok());
    }
    assert_eq!(verdicts.len(), 2, "the limit falls within the depths tried");
}
