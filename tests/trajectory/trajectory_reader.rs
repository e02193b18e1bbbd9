//! The reader over broken input: every case loads what it can and reports the rest as
//! FILE:LINE: reason.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use cosmos_trajectory::event::{EventBody, Observation};
use cosmos_trajectory::listing::RunSummary;
use cosmos_trajectory::reader::{EventStream, Severity, collect_files};
use cosmos_trajectory::run::Run;
use cosmos_trajectory::synthetic::{self, Spec};

fn small_run(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    synthetic::write(
        &path,
        &Spec {
            nodes: 20,
            ..Spec::default()
        },
        cosmos_engine::metrics::run::RunAccumulator::tally,
    )
    .unwrap();
    path
}

fn lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn torn_last_line_is_skipped_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let path = small_run(dir.path(), "a.jsonl");
    let n = lines(&path).len();
    let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(br#"{"seq":9999,"t_ms":5,"kind":"answer","te"#)
        .unwrap();
    drop(f);
    let run = Run::open(&path).unwrap();
    assert_eq!(run.len(), n - 1, "every complete event loads");
    let torn: Vec<_> = run
        .problems
        .iter()
        .filter(|p| p.reason.contains("torn"))
        .collect();
    assert_eq!(torn.len(), 1);
    assert_eq!(torn[0].line, n as u64 + 1);
    assert_eq!(torn[0].severity, Severity::Warning);
    assert!(torn[0].to_string().starts_with(&format!(
        "{}:{}: warning: torn",
        path.display(),
        n + 1
    )));
}

#[test]
fn garbage_in_the_middle_is_an_error_and_the_rest_loads() {
    let dir = tempfile::tempdir().unwrap();
    let path = small_run(dir.path(), "a.jsonl");
    let mut l = lines(&path);
    let total_events = l.len() - 1;
    l.insert(5, "this is not json".into());
    l.insert(8, r#"{"seq": 3, "t_ms": 1, "kind": "node_added"}"#.into());
    fs::write(&path, l.join("\n") + "\n").unwrap();
    let run = Run::open(&path).unwrap();
    assert_eq!(run.len(), total_events);
    let errors: Vec<_> = run
        .problems
        .iter()
        .filter(|p| p.severity == Severity::Error)
        .collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert_eq!(errors[0].line, 6);
    assert!(errors[0].reason.contains("not valid JSON"));
    assert_eq!(errors[1].line, 9);
    assert!(
        errors[1].reason.contains("bad node_added event"),
        "{}",
        errors[1].reason
    );
}

#[test]
fn empty_file_has_no_header() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.jsonl");
    fs::write(&path, "").unwrap();
    let err = EventStream::open(&path).err().unwrap();
    assert!(format!("{err:#}").contains(":1: empty file"), "{err:#}");
    assert_eq!(RunSummary::read(&path).status_label(), "unreadable");
}

#[test]
fn header_only_is_an_unfinished_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = small_run(dir.path(), "a.jsonl");
    let first = lines(&path).remove(0);
    fs::write(&path, first + "\n").unwrap();
    let run = Run::open(&path).unwrap();
    assert!(run.is_empty());
    assert_eq!(run.problems.len(), 1);
    assert!(run.problems[0].reason.contains("did not finish"));
    assert_eq!(RunSummary::read(&path).status_label(), "incomplete");
}

#[test]
fn unknown_event_kind_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = small_run(dir.path(), "a.jsonl");
    let mut l = lines(&path);
    l.insert(
        2,
        r#"{"seq":2,"t_ms":3,"kind":"hologram","beams":7}"#.into(),
    );
    fs::write(&path, l.join("\n") + "\n").unwrap();
    let run = Run::open(&path).unwrap();
    let unknown = run
        .all_events()
        .into_iter()
        .find(|e| e.body.kind() == "hologram")
        .expect("kept");
    match &unknown.body {
        EventBody::Unknown { raw, .. } => assert_eq!(raw["beams"], 7),
        other => panic!("{other:?}"),
    }
    assert!(
        run.problems.iter().any(|p| p.line == 3
            && p.severity == Severity::Warning
            && p.reason.contains("hologram"))
    );
}

#[test]
fn newer_version_gets_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let path = small_run(dir.path(), "a.jsonl");
    let text = fs::read_to_string(&path)
        .unwrap()
        .replacen("\"version\":2", "\"version\":7", 1);
    fs::write(&path, text).unwrap();
    let err = format!("{:#}", EventStream::open(&path).err().unwrap());
    assert!(
        err.contains("newer mcp-cosmos (format version 7)") && err.contains("upgrade"),
        "{err}"
    );
}

#[test]
fn not_a_trajectory_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.jsonl");
    fs::write(&path, "{\"hello\": 1}\n").unwrap();
    let err = format!("{:#}", EventStream::open(&path).err().unwrap());
    assert!(err.contains("not an mcp-cosmos trajectory"), "{err}");
}

#[test]
fn a_ten_megabyte_observation_loads() {
    let dir = tempfile::tempdir().unwrap();
    let path = small_run(dir.path(), "a.jsonl");
    let big = "y".repeat(10 << 20);
    let mut l = lines(&path);
    let event = serde_json::json!({"seq": 2, "t_ms": 1, "kind": "answer", "text": big});
    l.insert(2, event.to_string());
    fs::write(&path, l.join("\n") + "\n").unwrap();
    let run = Run::open(&path).unwrap();
    assert!(
        run.all_events()
            .iter()
            .any(|e| matches!(&e.body, EventBody::Answer { text } if text.len() == 10 << 20))
    );
    assert!(run.problems.iter().all(|p| p.severity == Severity::Warning));
}

#[test]
fn invalid_utf8_is_replaced_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = small_run(dir.path(), "a.jsonl");
    let mut bytes = Vec::new();
    for (i, line) in lines(&path).iter().enumerate() {
        if i == 2 {
            bytes.extend_from_slice(
                b"{\"seq\":2,\"t_ms\":1,\"kind\":\"answer\",\"text\":\"caf\xe9\"}\n",
            );
        }
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
    }
    fs::write(&path, bytes).unwrap();
    let run = Run::open(&path).unwrap();
    assert!(
        run.all_events()
            .iter()
            .any(|e| matches!(&e.body, EventBody::Answer { text } if text == "caf\u{fffd}"))
    );
    assert!(
        run.problems
            .iter()
            .any(|p| p.line == 3 && p.reason.contains("UTF-8"))
    );
}

#[test]
fn invalid_utf8_in_the_header_is_replaced_as_in_an_event() {
    let dir = tempfile::tempdir().unwrap();
    let path = small_run(dir.path(), "a.jsonl");
    let text = fs::read_to_string(&path).unwrap();
    let (header, rest) = text.split_once('\n').unwrap();
    // One bad byte inside the task's request (a string of the header).
    let at = header.find("\"request\":\"").unwrap() + "\"request\":\"".len();
    let mut bytes = header.as_bytes()[..at].to_vec();
    bytes.push(0xE9);
    bytes.extend_from_slice(&header.as_bytes()[at..]);
    bytes.push(b'\n');
    bytes.extend_from_slice(rest.as_bytes());
    fs::write(&path, bytes).unwrap();
    let run = Run::open(&path).unwrap();
    assert!(
        run.header.task.request.starts_with('\u{fffd}'),
        "{}",
        run.header.task.request
    );
    assert!(
        run.problems
            .iter()
            .any(|p| p.line == 1 && p.severity == Severity::Warning && p.reason.contains("UTF-8")),
        "{:?}",
        run.problems
    );
    // The listing reads it too.
    assert!(RunSummary::read(&path).header.is_ok());
}

#[test]
fn listing_reads_totals_from_the_last_line_and_agrees_with_a_full_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = small_run(dir.path(), "a.jsonl");
    let summary = RunSummary::read(&path);
    let finished = summary
        .finished
        .clone()
        .expect("run_finished read from the tail");
    let run = Run::open(&path).unwrap();
    let tree = cosmos_trajectory::fold::TreeState::fold(&run, run.len());
    let metrics = cosmos_engine::metrics::run::RunFacts::of(&run).at(&run, run.len(), &tree);
    assert_eq!(finished.totals.events, run.len() as u64);
    assert_eq!(finished.totals.tool_calls, metrics.tool_calls);
    assert_eq!(finished.totals.nodes, 20);
    assert_eq!(finished.totals.tokens, metrics.tokens());
    assert_eq!(summary.status_label(), "completed");
}

#[test]
fn listing_a_crashed_run_says_incomplete() {
    let dir = tempfile::tempdir().unwrap();
    let path = small_run(dir.path(), "a.jsonl");
    let mut l = lines(&path);
    l.pop();
    fs::write(&path, l.join("\n") + "\n{\"seq\": 5, \"t_").unwrap();
    let s = RunSummary::read(&path);
    assert!(s.header.is_ok());
    assert_eq!(s.status_label(), "incomplete");
}

#[test]
fn writer_flushes_every_event_before_returning() {
    use cosmos_trajectory::redact::Redactor;
    use cosmos_trajectory::writer::Writer;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.jsonl");
    let header = synthetic::header(&Spec::default());
    let mut w = Writer::create(&path, &header, Redactor::new(), None).unwrap();
    for i in 0..3u64 {
        w.write(
            i,
            EventBody::Answer {
                text: format!("a{i}"),
            },
        )
        .unwrap();
        // Read through a separate handle: the line must already be in the file.
        assert_eq!(lines(&path).len() as u64, i + 2);
    }
    assert!(
        Writer::create(&path, &header, Redactor::new(), None).is_err(),
        "never overwrites a run"
    );
}

#[test]
fn writer_redacts_secrets_everywhere() {
    use cosmos_trajectory::redact::Redactor;
    use cosmos_trajectory::writer::Writer;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("secret.jsonl");
    let secret = "sekrit-key-0123456789";
    let mut redactor = Redactor::new();
    redactor.add_secret(secret);
    let mut header = synthetic::header(&Spec::default());
    header.task.request = format!("my key is {secret}");
    let mut w = Writer::create(&path, &header, redactor, None).unwrap();
    let event = w
        .write(
            1,
            EventBody::ToolCalled {
                step: 1,
                tool: "a:b".into(),
                server: None,
                arguments: Box::new(
                    serde_json::json!({"api_key": "anything", "q": format!("Bearer {secret}")}),
                ),
                result: Observation {
                    text: format!("echo {secret}"),
                    ..Default::default()
                },
                latency_ms: 1,
                node: None,
                error: None,
                origin: None,
                state_change: None,
            },
        )
        .unwrap();
    let text = fs::read_to_string(&path).unwrap();
    assert!(!text.contains(secret), "{text}");
    assert!(!text.contains("anything"));
    assert!(text.contains("[REDACTED]"));
    // What the caller gets back is what was written.
    assert!(!format!("{event:?}").contains(secret));
}

/// Hardening VI: the six shapes of a secret inside a string reach no run file, in a call's
/// arguments or its result, and the plain text around them does (`mysql -u ada`, the API's URL).
#[test]
fn secrets_inside_strings_reach_no_run_file() {
    use cosmos_trajectory::redact::Redactor;
    use cosmos_trajectory::writer::Writer;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shapes.jsonl");
    let shapes = [
        (
            r#"{"user": "ada", "password": "pw-Q1a2b3c4"}"#,
            "pw-Q1a2b3c4",
        ),
        (
            "GET /\nAuthorization: Basic YWRhOlExYTJiM2M0\n",
            "YWRhOlExYTJiM2M0",
        ),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE\n-----END OPENSSH PRIVATE KEY-----",
            "b3BlbnNzaC1rZXktdjE",
        ),
        ("mysql -u ada -pQ9secretpw shop", "Q9secretpw"),
        (
            "curl -H 'X-Api-Key: k-Q5d6e7f8' https://api.example.com/v1/rates",
            "k-Q5d6e7f8",
        ),
        (
            "https://hooks.slack.com/services/T01/B02/Qxyzsecret99",
            "Qxyzsecret99",
        ),
    ];
    let header = synthetic::header(&Spec::default());
    let mut w = Writer::create(&path, &header, Redactor::new(), None).unwrap();
    for (step, (text, _)) in shapes.iter().enumerate() {
        w.write(
            step as u64,
            EventBody::ToolCalled {
                step: step as u64 + 1,
                tool: "a:b".into(),
                server: None,
                arguments: Box::new(serde_json::json!({"command": text})),
                result: Observation {
                    text: format!("ran: {text}"),
                    ..Default::default()
                },
                latency_ms: 1,
                node: None,
                error: None,
                origin: None,
                state_change: None,
            },
        )
        .unwrap();
    }
    drop(w);
    let written = fs::read_to_string(&path).unwrap();
    for (_, secret) in shapes {
        assert!(!written.contains(secret), "{secret} in {written}");
    }
    for plain in [
        "mysql -u ada",
        "https://api.example.com/v1/rates",
        "\"user\\\": \\\"ada",
    ] {
        assert!(written.contains(plain), "{plain} lost from {written}");
    }
}

#[test]
fn a_key_value_servers_key_argument_is_data_and_a_key_shaped_value_is_not() {
    use cosmos_trajectory::redact::Redactor;
    use cosmos_trajectory::writer::Writer;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kv.jsonl");
    let header = synthetic::header(&Spec::default());
    let mut w = Writer::create(&path, &header, Redactor::new(), None).unwrap();
    let shaped = "sk-live-0123456789abcdefghij";
    w.write(
        1,
        EventBody::ToolCalled {
            step: 1,
            tool: "kv:set".into(),
            server: None,
            arguments: Box::new(serde_json::json!({"key": "alpha", "value": shaped})),
            result: Observation::default(),
            latency_ms: 1,
            node: None,
            error: None,
            origin: None,
            state_change: None,
        },
    )
    .unwrap();
    let text = fs::read_to_string(&path).unwrap();
    // Every call of a key-value server would otherwise read the same to memory world models
    // and wm-eval, and `recheck --all` would send the literal placeholder to the server.
    assert!(text.contains(r#""key":"alpha""#), "{text}");
    assert!(!text.contains(shaped), "{text}");
}

#[test]
fn appending_after_a_torn_last_line_is_refused() {
    use cosmos_trajectory::redact::Redactor;
    use cosmos_trajectory::writer::Writer;
    let dir = tempfile::tempdir().unwrap();
    let path = small_run(dir.path(), "a.jsonl");
    // A clean file takes an appended judgement.
    assert!(Writer::append(&path, Redactor::new()).is_ok());
    let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(br#"{"seq":99,"t_ms":1,"kind":"ans"#).unwrap();
    drop(f);
    let err = format!("{:#}", Writer::append(&path, Redactor::new()).unwrap_err());
    assert!(
        err.contains("ends in a torn line; refusing to append"),
        "{err}"
    );
}

/// The fast reading path (one pass per line with the envelope first) and the lean one (the
/// search kinds without their texts, as `report` reads) against the general one (position and
/// body apart, events pushed by reference), over every sample run and a generated one: the
/// same events, the same metrics.
#[test]
fn the_fast_path_reads_what_the_general_path_reads() {
    use cosmos_engine::metrics::run::RunAccumulator;
    use cosmos_trajectory::lean::LeanBody;
    use cosmos_trajectory::reader::parse_event_general;
    let dir = tempfile::tempdir().unwrap();
    let generated = dir.path().join("generated.jsonl");
    synthetic::write(
        &generated,
        &Spec {
            nodes: 400,
            padding: 300,
            seed: 8,
            ..Spec::default()
        },
        RunAccumulator::tally,
    )
    .unwrap();
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs");
    let mut files = vec![generated];
    // As every reader of run folders lists them (kept end states, `*.state/`, are no runs).
    files.extend(collect_files(&[samples]).unwrap().files);
    assert!(files.len() > 10, "{files:?}");
    let (mut lean_lines, mut full_lines) = (0, 0);
    for file in files {
        let mut stream = EventStream::open(&file).unwrap();
        // As `report` reads: simulations read back from the file when a call pairs with one.
        let mut lean = RunAccumulator::new(stream.header()).reading_back(file.clone());
        while let Some((event, span)) = stream.next_brief().unwrap() {
            match event.body {
                LeanBody::Full(_) => full_lines += 1,
                _ => lean_lines += 1,
            }
            lean.take_at(event, span);
        }
        let mut stream = EventStream::open(&file).unwrap();
        let mut general = RunAccumulator::new(stream.header());
        let text = fs::read_to_string(&file).unwrap();
        let mut lines = text.lines().skip(1).filter(|l| !l.trim().is_empty());
        while let Some(event) = stream.next_event().unwrap() {
            let line = lines.next().expect("as many lines as events");
            let slow = parse_event_general(line).unwrap();
            assert_eq!(event, slow, "{}: {line}", file.display());
            general.push(&slow);
        }
        assert!(lines.next().is_none(), "{}", file.display());
        assert_eq!(lean.metrics(), general.metrics(), "{}", file.display());
    }
    // The generated run alone is thousands of search events: most lines must go the lean way.
    assert!(
        lean_lines > 4 * full_lines,
        "{lean_lines} lean, {full_lines} full"
    );
}

/// Opening a whole file parses its lines in batches on every core; what it gives must be what
/// reading line by line gives: the same events in order and the same problems on the same
/// lines, bad lines spread over many batches and a torn last line included, on one core or
/// on several.
#[test]
fn opening_in_parallel_gives_what_reading_line_by_line_gives() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.jsonl");
    synthetic::write(
        &path,
        &Spec {
            nodes: 3000,
            padding: 600,
            seed: 4,
            ..Spec::default()
        },
        cosmos_engine::metrics::run::RunAccumulator::tally,
    )
    .unwrap();
    let mut l = lines(&path);
    assert!(
        fs::metadata(&path).unwrap().len() > 4 << 20,
        "several batches"
    );
    let n = l.len();
    for (at, bad) in [
        (n / 7, "this is not json".to_string()),
        (n / 3, "   ".to_string()),
        (
            n / 2,
            r#"{"seq": 3, "t_ms": 1, "kind": "node_added"}"#.to_string(),
        ),
        (
            2 * n / 3,
            r#"{"seq":1,"t_ms":1,"kind":"from_the_future"}"#.to_string(),
        ),
        (n - 3, "\u{1}garbage".to_string()),
    ] {
        l.insert(at, bad);
    }
    fs::write(
        &path,
        l.join("\n") + "\n{\"seq\":99999999,\"t_ms\":1,\"kind\":\"ans",
    )
    .unwrap();

    let run = Run::open(&path).unwrap();
    let mut stream = EventStream::open(&path).unwrap();
    let mut events = Vec::new();
    while let Some(event) = stream.next_event().unwrap() {
        events.push(event);
    }
    // Read back in order (lines in blocks) and one at a time (each line alone), the events
    // are the ones a line-by-line read gives.
    assert_eq!(run.all_events(), events);
    for i in (0..events.len()).step_by(97).chain([events.len() - 1]) {
        assert_eq!(*run.event(i), events[i], "event {i}");
    }
    assert_eq!(run.problems, stream.take_problems());
    assert!(run.problems.len() >= 6, "{:?}", run.problems);
    assert!(
        run.problems
            .iter()
            .any(|p| p.reason.starts_with("torn last line"))
    );
    // On one core the lines are read, decoded and checked on the caller's thread, without
    // batches: the same events, read back from the same places, and the same problems.
    let one_core = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(|| Run::open(&path).unwrap());
    assert_eq!(one_core.all_events(), events);
    for i in (0..events.len()).step_by(89).chain([events.len() - 1]) {
        assert_eq!(*one_core.event(i), events[i], "event {i} on one core");
    }
    assert_eq!(one_core.problems, run.problems);
}

/// An opened run reads its events back from the file it opened: a file renamed or deleted
/// meanwhile still reads (the handle is kept), and one rewritten in place gives an error
/// event that says so, never another event taken for the one asked for.
#[test]
fn events_are_read_back_from_the_opened_file_and_a_rewritten_file_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    let spec = Spec {
        nodes: 40,
        seed: 9,
        ..Spec::default()
    };
    let write = |path: &Path| {
        synthetic::write(
            path,
            &spec,
            cosmos_engine::metrics::run::RunAccumulator::tally,
        )
        .unwrap()
    };
    write(&path);
    let run = Run::open(&path).unwrap();
    let events = run.all_events();
    let simulated = (0..run.len())
        .find(|&i| run.brief(i).kind() == "node_simulated")
        .unwrap();
    assert!(
        run.brief(simulated).whole().is_none(),
        "a simulation is not kept whole in memory"
    );

    let moved = dir.path().join("moved.jsonl");
    fs::rename(&path, &moved).unwrap();
    assert_eq!(*run.event(simulated), events[simulated]);
    fs::remove_file(&moved).unwrap();
    assert_eq!(run.all_events(), events);

    let path = dir.path().join("rewritten.jsonl");
    write(&path);
    let run = Run::open(&path).unwrap();
    let text = fs::read_to_string(&path).unwrap();
    // The same length, other content: every line shifted by one byte.
    fs::write(&path, format!(" {}", &text[..text.len() - 1])).unwrap();
    match &run.event(simulated).body {
        EventBody::Error {
            source, message, ..
        } => {
            assert_eq!(source.as_str(), "trajectory");
            assert!(message.contains("could not be read back"), "{message}");
            assert!(message.contains("rewritten"), "{message}");
        }
        other => panic!("a rewritten line was taken for the event: {other:?}"),
    }
    // What the run keeps in memory is untouched.
    assert_eq!(run.brief(simulated).kind(), "node_simulated");
}

/// A read that fails halfway is an error from every way of reading, never a short run taken
/// for a whole one: line by line, lean, and in parallel batches.
#[test]
fn a_read_error_midway_is_an_error_from_every_reader() {
    struct FailsHalfway(std::io::Cursor<Vec<u8>>, u64);
    impl std::io::Read for FailsHalfway {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            if self.0.position() >= self.1 {
                return Err(std::io::Error::other("the disk went away"));
            }
            let room = (self.1 - self.0.position()) as usize;
            let n = out.len().min(room);
            self.0.read(&mut out[..n])
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.jsonl");
    synthetic::write(
        &path,
        &Spec {
            nodes: 2000,
            padding: 600,
            seed: 6,
            ..Spec::default()
        },
        cosmos_engine::metrics::run::RunAccumulator::tally,
    )
    .unwrap();
    let bytes = fs::read(&path).unwrap();
    let half = bytes.len() as u64 / 2;
    let stream = || {
        EventStream::from_reader(
            &path,
            Box::new(FailsHalfway(std::io::Cursor::new(bytes.clone()), half)),
        )
        .unwrap()
    };
    let mut taken = 0;
    let err = stream()
        .read_all(|_: cosmos_trajectory::lean::Brief, _| taken += 1)
        .unwrap_err();
    assert!(format!("{err:#}").contains("the disk went away"), "{err:#}");
    let mut s = stream();
    let err = loop {
        match s.next_event() {
            Ok(Some(_)) => {}
            Ok(None) => panic!("a failed read ended as a whole run"),
            Err(e) => break e,
        }
    };
    assert!(format!("{err:#}").contains("the disk went away"), "{err:#}");
    let mut s = stream();
    let err = loop {
        match s.next_brief() {
            Ok(Some(_)) => {}
            Ok(None) => panic!("a failed read ended as a whole run"),
            Err(e) => break e,
        }
    };
    assert!(format!("{err:#}").contains("the disk went away"), "{err:#}");
}

#[test]
fn a_line_written_twice_is_counted_once_and_said() {
    let dir = tempfile::tempdir().unwrap();
    let path = small_run(dir.path(), "twice.jsonl");
    let all = lines(&path);
    // The first real call, written again right after itself (a copy spliced into the file).
    let at = all
        .iter()
        .position(|l| l.contains("\"kind\":\"tool_called\""))
        .expect("the synthetic run calls a tool");
    let mut doubled = all.clone();
    doubled.insert(at + 1, all[at].clone());
    fs::write(&path, doubled.join("\n") + "\n").unwrap();
    let run = Run::open(&path).unwrap();
    assert_eq!(run.len(), all.len() - 1, "the copy is not an event");
    let calls = run
        .all_events()
        .iter()
        .filter(|e| matches!(e.body, EventBody::ToolCalled { .. }))
        .count();
    let written = all
        .iter()
        .filter(|l| l.contains("\"kind\":\"tool_called\""))
        .count();
    assert_eq!(calls, written, "every call counted once");
    assert!(
        run.problems
            .iter()
            .any(|p| p.line == at as u64 + 2 && p.reason.contains("not counted twice")),
        "{:?}",
        run.problems
    );
    // The report reads the same file the same way.
    let mut stream = EventStream::open(&path).unwrap();
    let mut read = 0;
    while stream.next_event().unwrap().is_some() {
        read += 1;
    }
    assert_eq!(read, all.len() - 1);
}

#[test]
fn an_event_redaction_made_undecodable_goes_on_as_written_never_as_it_was() {
    use cosmos_trajectory::event::DecisionProblem;
    use cosmos_trajectory::redact::Redactor;
    use cosmos_trajectory::writer::Writer;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("odd.jsonl");
    // A configured secret that is also the spelling of a typed value: redaction turns the
    // value into a placeholder the type does not take.
    let mut redactor = Redactor::new();
    redactor.add_secret("no_tool");
    let header = synthetic::header(&Spec::default());
    let mut w = Writer::create(&path, &header, redactor, None).unwrap();
    let event = w
        .write(
            1,
            EventBody::DecisionRejected {
                problem: DecisionProblem::NoTool,
                detail: "no tool named".into(),
                reply: serde_json::json!({"action": "call"}),
            },
        )
        .unwrap();
    let text = fs::read_to_string(&path).unwrap();
    assert!(!text.contains("no_tool"), "{text}");
    match &event.body {
        EventBody::Unknown { kind, raw } => {
            assert_eq!(kind, "decision_rejected");
            assert!(!raw.to_string().contains("no_tool"), "{raw}");
        }
        other => panic!("handed on as it was before redaction: {other:?}"),
    }
}

#[test]
fn a_run_reached_twice_through_a_link_is_counted_once_and_said() {
    use cosmos_trajectory::reader::collect_files;
    let dir = tempfile::tempdir().unwrap();
    let run = small_run(dir.path(), "a.jsonl");
    std::os::unix::fs::symlink(&run, dir.path().join("b.jsonl")).unwrap();
    // Through the link in the folder, and through a folder given with a file in it.
    for given in [
        vec![dir.path().to_path_buf()],
        vec![dir.path().to_path_buf(), run.clone()],
    ] {
        let found = collect_files(&given).unwrap();
        assert_eq!(found.files, std::slice::from_ref(&run), "{given:?}");
        assert!(
            found
                .skipped
                .iter()
                .any(|s| s.contains("the same file as") && s.contains("counted once")),
            "{:?}",
            found.skipped
        );
    }
    // report counts the run once.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(["report", dir.path().to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["runs"], 1, "{doc}");
}
