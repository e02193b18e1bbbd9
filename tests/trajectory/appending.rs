//! Appends to a finished run from several writers at once (probes in the explorer's
//! background threads, `cosmos judge` in another process) each take the file's OS lock and
//! number their event after the file's last line: no `seq` is written twice, and the file
//! stays valid. Each writer here has its own file handle, as a separate process would.

use crate::common;

use std::sync::{Arc, Barrier};

use cosmos_trajectory::event::EventBody;
use cosmos_trajectory::reader::EventStream;
use cosmos_trajectory::redact::Redactor;
use cosmos_trajectory::run::Run;
use cosmos_trajectory::writer::Writer;

#[test]
fn concurrent_appends_never_repeat_a_seq() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    common::write_run(&common::plan_fails_run(), &path);
    let before = Run::open(&path).unwrap().len() as u64;
    let (writers, each) = (6, 15);
    let start = Arc::new(Barrier::new(writers));
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let (path, start) = (path.clone(), start.clone());
            std::thread::spawn(move || {
                // Every writer opens the file before any of them writes (as two probes
                // started one after the other do), so each saw the same last `seq`.
                let mut writer = Writer::append(&path, Redactor::new()).unwrap();
                start.wait();
                for i in 0..each {
                    writer
                        .write(
                            0,
                            EventBody::Error {
                                source: cosmos_trajectory::event::ErrorSource::Agent,
                                name: None,
                                message: format!("writer {w} line {i}"),
                                stderr_tail: None,
                                step: None,
                            },
                        )
                        .unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let mut stream = EventStream::open(&path).unwrap();
    let mut seqs = Vec::new();
    while let Some(event) = stream.next_event().unwrap() {
        seqs.push(event.seq);
    }
    assert!(stream.problems().is_empty(), "{:?}", stream.problems());
    let total = before + (writers * each) as u64;
    assert_eq!(
        seqs,
        (1..=total).collect::<Vec<_>>(),
        "one seq per line, in order"
    );
}

#[test]
fn a_torn_file_is_refused_before_anything_is_appended() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    common::write_run(&common::plan_fails_run(), &path);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    std::io::Write::write_all(&mut f, b"{\"seq\": 99, \"t_ms\"").unwrap();
    let err = Writer::append(&path, Redactor::new()).unwrap_err();
    assert!(format!("{err:#}").contains("torn"), "{err:#}");
}
