//! State-watching benchmark: prints figures, asserts nothing. `cargo bench --bench state_view`
//! (`-- --quick` for a tenth).
//!
//! What watching a sandboxed server costs each call: reading its state as fields before and
//! after (`mcp::read_state`) and the change between them (`mcp::state_change`), for the three kinds
//! the stateful tasks use at sizes well past theirs: a memory-server graph of 10^4 entities and
//! relations (JSON lines), a SQLite table of 10^5 rows, and a folder of 10^3 files. Also the
//! wm-eval side: replaying 10^3 recorded changes on a start state (`world_model::belief`).

#![allow(clippy::unwrap_used)] // a bench that cannot set up fails at once

mod common;

use std::time::Instant;

use common::scale;
use cosmos_engine::mcp::{read_state, state_change};
use cosmos_engine::world_model::{HistoryStep, belief};
use serde_json::json;

fn time<T>(label: &str, reps: usize, mut f: impl FnMut() -> T) -> T {
    let start = Instant::now();
    let mut last = None;
    for _ in 0..reps {
        last = Some(f());
    }
    let each = start.elapsed() / reps as u32;
    println!("{label:<58} {:>10.2} ms", each.as_secs_f64() * 1000.0);
    last.unwrap()
}

fn main() {
    let scale = scale();
    let dir = tempfile::tempdir().unwrap();

    // A memory-server graph: entities and relations, one JSON line each.
    let entities = 10_000 / scale;
    let graph = dir.path().join("memory.jsonl");
    let mut text = String::new();
    for i in 0..entities {
        text.push_str(&format!(
            "{}\n",
            json!({"type": "entity", "name": format!("e{i}"), "entityType": "thing", "observations": [format!("seen {i}")]})
        ));
        text.push_str(&format!(
            "{}\n",
            json!({"type": "relation", "from": format!("e{i}"), "to": format!("e{}", (i + 1) % entities), "relationType": "next"})
        ));
    }
    std::fs::write(&graph, &text).unwrap();
    let before = time(
        &format!(
            "read a graph of {} records ({} KiB)",
            2 * entities,
            text.len() >> 10
        ),
        5,
        || read_state(&graph).unwrap(),
    );
    text.push_str(&format!(
        "{}\n",
        json!({"type": "entity", "name": "new", "entityType": "thing", "observations": []})
    ));
    std::fs::write(&graph, &text).unwrap();
    let after = read_state(&graph).unwrap();
    let change = time("  the change after one entity is added", 5, || {
        state_change(&before, &after)
    });
    assert_eq!(change.fields_changed, 1);

    // A SQLite table.
    let rows = 100_000 / scale;
    let db = dir.path().join("shop.db");
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch("CREATE TABLE item (sku TEXT PRIMARY KEY, name TEXT, qty INTEGER); BEGIN;")
        .unwrap();
    for i in 0..rows {
        c.execute(
            "INSERT INTO item VALUES (?1, ?2, ?3)",
            (format!("s{i}"), format!("item {i}"), i as i64),
        )
        .unwrap();
    }
    c.execute_batch("COMMIT;").unwrap();
    drop(c);
    let before = time(&format!("read a SQLite table of {rows} rows"), 3, || {
        read_state(&db).unwrap()
    });
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute("UPDATE item SET qty = -1 WHERE sku = 's7'", ())
        .unwrap();
    drop(c);
    let after = read_state(&db).unwrap();
    let change = time("  the change after one row is updated", 3, || {
        state_change(&before, &after)
    });
    assert_eq!(change.fields_changed, 1);

    // A folder of files.
    let files = 1_000 / scale;
    let folder = dir.path().join("files");
    for i in 0..files {
        let sub = folder.join(format!("d{}", i % 10));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(
            sub.join(format!("f{i}.txt")),
            format!("note {i}\n").repeat(20),
        )
        .unwrap();
    }
    time(&format!("read a folder of {files} files"), 5, || {
        read_state(&folder).unwrap()
    });

    // wm-eval: the real state before the last of 10^3 calls, replayed from the start state.
    let steps = 1_000 / scale;
    let start = json!({"item/a": {"qty": 0}});
    let history: Vec<HistoryStep> = (0..steps)
        .map(|i| {
            let mut change = cosmos_trajectory::event::StateChange {
                fields_changed: 1,
                ..Default::default()
            };
            change.fields.insert(
                format!("item/{i}"),
                cosmos_trajectory::event::FieldChange {
                    before: None,
                    after: Some(json!({"qty": i})),
                },
            );
            HistoryStep {
                tool: "shop:write_query".into(),
                state_change: Some(std::sync::Arc::new(change)),
                ..Default::default()
            }
        })
        .collect();
    let state = time(&format!("belief after {steps} recorded changes"), 5, || {
        belief(Some(&start), &history, "shop").unwrap()
    });
    assert_eq!(state.as_object().unwrap().len(), steps + 1);
}
