//! State match: how a run's end state agrees with the state its task expects
//! (docs/world-models.md, "Worlds with state"), field by field.
//!
//! A task names, for each sandboxed server, the fields it checks and their expected values
//! (`expected_state`). A field matches when the end state has it and its value matches the
//! expected one: an expected object matches an object holding each of its keys with a
//! matching value (other keys are ignored, so a row need not spell out its id); anything else
//! must be equal. An expected `null` matches a field that is gone. The run's state match is the
//! matched fields over the checked ones, over all its servers.
//!
//! A run's end state against its task's `expected_state`, field by field
//! (`score`, `matches`, `rate`); `agent::session` scores each sandbox at the end and records it
//! in `run_finished`, and `run.rs` reads the rate from there (the one record of it).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use cosmos_trajectory::event::{StateFields, StateMatch};

/// Most missed fields a record names.
const MISSED_NAMED: usize = 20;

/// Scores `end` against `expected`.
pub fn score(expected: &Map<String, Value>, end: &StateFields) -> StateMatch {
    let mut scored = StateMatch {
        checked: expected.len() as u32,
        ..Default::default()
    };
    for (name, want) in expected {
        if matches(want, end.get(name)) {
            scored.matched += 1;
        } else if scored.missed.len() < MISSED_NAMED {
            scored.missed.push(name.clone());
        }
    }
    scored
}

/// The record of a server whose end state could not be read: every field missed.
pub fn unread(expected: &Map<String, Value>, why: String) -> StateMatch {
    StateMatch {
        checked: expected.len() as u32,
        matched: 0,
        missed: expected.keys().take(MISSED_NAMED).cloned().collect(),
        error: Some(why),
    }
}

/// True when `found` is what `want` asks for (see the module's documentation).
pub fn matches(want: &Value, found: Option<&Value>) -> bool {
    match (want, found) {
        (Value::Null, None) => true,
        (_, None) => false,
        (Value::Object(want), Some(Value::Object(found))) => want
            .iter()
            .all(|(k, w)| matches(w, found.get(k)) && (!w.is_null() || found.contains_key(k))),
        (want, Some(found)) => want == found,
    }
}

/// A run's state match: matched fields over checked ones, over its servers; `None` when its
/// task checks no state.
pub fn rate(by_server: &BTreeMap<String, StateMatch>) -> Option<f64> {
    let checked: u32 = by_server.values().map(|m| m.checked).sum();
    let matched: u32 = by_server.values().map(|m| m.matched).sum();
    (checked > 0).then(|| f64::from(matched) / f64::from(checked))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(v: Value) -> StateFields {
        v.as_object().unwrap().clone().into_iter().collect()
    }

    #[test]
    fn each_checked_field_matches_or_is_named() {
        let end = fields(json!({
            "item/a1": {"sku": "a1", "qty": 5, "id": 9},
            "item/b2": {"sku": "b2", "qty": 1},
            "note.txt": "hi",
        }));
        let expected = json!({
            "item/a1": {"sku": "a1", "qty": 5},
            "item/b2": {"qty": 2},
            "item/c3": null,
            "note.txt": "hi",
            "gone.txt": "x",
        });
        let scored = score(expected.as_object().unwrap(), &end);
        assert_eq!((scored.checked, scored.matched), (5, 3));
        assert_eq!(scored.missed, ["item/b2", "gone.txt"]);
        let by_server = BTreeMap::from([("db".to_string(), scored)]);
        assert_eq!(rate(&by_server), Some(0.6));
        assert_eq!(rate(&BTreeMap::new()), None);
    }

    #[test]
    fn a_null_inside_an_object_asks_for_a_null_value_not_a_missing_key() {
        let row = json!({"sku": "a1", "note": null});
        assert!(matches(&json!({"note": null}), Some(&row)));
        assert!(!matches(&json!({"other": null}), Some(&row)));
        assert!(!matches(&json!(null), Some(&row)));
    }

    #[test]
    fn an_unread_state_misses_every_field() {
        let expected = json!({"a": 1, "b": 2});
        let m = unread(expected.as_object().unwrap(), "gone".into());
        assert_eq!((m.checked, m.matched, m.missed.len()), (2, 0, 2));
    }
}
