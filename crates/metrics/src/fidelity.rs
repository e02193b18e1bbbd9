//! Simulation fidelity: how close a world model's predicted result is to the real one, in a
//! way a prediction of the right shape with the wrong values cannot win.
//!
//! Per call (documented in docs/world-models.md, "Fidelity"):
//!
//! - **No prediction**: an empty simulation, a placeholder (`<the tool's text result>`,
//!   `result`, `TODO`…) or one that echoes the world model's prompt scores 0 on everything.
//! - **Error agreement**: 1 when both are errors or both are not, else 0 — and then the score
//!   is 0: predicting success for a call that fails (or the reverse) is the worst miss.
//! - **Both errors**: `0.5 + 0.5 × text`, where `text` is the token F1 of the messages.
//! - **Both results, both JSON**: `structure` is the Jaccard of leaf paths; `values` compares
//!   leaf by leaf over the union of paths with type-aware rules (numbers within 1% relative,
//!   timestamps as instants, dates and times parsed, other strings by normalised equality:
//!   case, spacing and punctuation at the ends ignored); the score is
//!   `0.25 × structure + 0.5 × values + 0.25 × exact`, where `exact` is 1 only when every leaf
//!   matches: a result that is right in part never ties with one that is right.
//! - **Both results, not both JSON**: the score is the token F1 of the texts, halved when only
//!   one side is JSON (the shape is wrong).
//!
//! `token_f1` is always reported, as a separate text score; it enters the score only where
//! there is no structure to compare.
//!
//! Simulated vs real observation, the one score every view and table uses: no
//! prediction (empty, placeholder, prompt echoed) is 0, a wrong error prediction is 0, JSON is
//! compared leaf by leaf by type (numbers, instants, dates, normalised strings), text by token
//! F1 (the formula is in docs/world-models.md). `PROMPT_MARKERS` are the `llm` world model's
//! prompt phrases an echo would hold; that module's test keeps them true.

use std::borrow::Cow;
use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use cosmos_trajectory::event::Observation;

/// The fidelity at or above which a prediction counts as good (`wm-eval --good-fidelity`'s
/// default; routing's "trusted but poor").
pub const GOOD_FIDELITY: f64 = 0.9;

/// Fidelity of one simulated step against its real result.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Fidelity {
    /// 1 when both are errors or both are not, else 0.
    pub error_agreement: f64,
    /// Jaccard of JSON leaf paths, when both are JSON.
    pub structure: Option<f64>,
    /// Leaves equal (type-aware) at the same path over all paths, when both are JSON.
    pub values: Option<f64>,
    /// Token F1 of the texts: a separate text score.
    pub token_f1: f64,
    /// The one overall score (see the module's formula).
    pub score: f64,
    /// The simulation was empty, a placeholder or the prompt echoed: scored as nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_prediction: bool,
}

/// Distinctive phrases of the `llm` world model's prompt: a simulation that holds one echoes
/// the prompt instead of predicting (`world_model::llm` tests that its prompt has them).
pub const PROMPT_MARKERS: &[&str] = &[
    "you simulate an mcp server",
    "reply with what the real server would return",
    "input schema:",
    "the user's request:",
];

/// What small models copy instead of answering.
const PLACEHOLDERS: &[&str] = &[
    "",
    "the tool's text result",
    "the tools text result",
    "tool's text result",
    "text result",
    "tool result",
    "result",
    "content",
    "string",
    "output",
    "n/a",
    "na",
    "none",
    "null",
    "todo",
    "placeholder",
    "...",
    "…",
];

/// True when a simulated text predicts nothing: empty, a placeholder, or the prompt echoed.
pub fn is_no_prediction(simulated: &Observation) -> bool {
    if simulated.structured.is_some() {
        return false;
    }
    let lower = simulated.text.trim().to_lowercase();
    let bare = lower.trim_matches(|c: char| {
        c.is_whitespace() || matches!(c, '<' | '>' | '"' | '\'' | '.' | '[' | ']' | '{' | '}')
    });
    PLACEHOLDERS.contains(&bare)
        || PLACEHOLDERS.contains(&lower.as_str())
        || PROMPT_MARKERS.iter().any(|m| lower.contains(m))
}

/// Compares a simulated observation with the real one.
pub fn compare(simulated: &Observation, real: &Observation) -> Fidelity {
    let token_f1 = token_f1(&simulated.text, &real.text);
    if is_no_prediction(simulated) {
        return Fidelity {
            error_agreement: 0.0,
            structure: None,
            values: None,
            token_f1,
            score: 0.0,
            no_prediction: true,
        };
    }
    let error_agreement = if simulated.is_error == real.is_error {
        1.0
    } else {
        0.0
    };
    let (sim_json, real_json) = (as_json(simulated), as_json(real));
    let (structure, values) = match (&sim_json, &real_json) {
        (Some(s), Some(r)) => {
            let (st, va) = json_agreement(s, r);
            (Some(st), Some(va))
        }
        _ => (None, None),
    };
    let score = match (simulated.is_error, real.is_error) {
        (a, b) if a != b => 0.0,
        (true, true) => 0.5 + 0.5 * token_f1,
        _ => match (structure, values) {
            (Some(st), Some(va)) => {
                let exact = if st == 1.0 && va == 1.0 { 1.0 } else { 0.0 };
                0.25 * st + 0.5 * va + 0.25 * exact
            }
            _ if sim_json.is_some() != real_json.is_some() => 0.5 * token_f1,
            _ => token_f1,
        },
    };
    Fidelity {
        error_agreement,
        structure,
        values,
        token_f1,
        score,
        no_prediction: false,
    }
}

/// The observation as JSON: its structured content, or its text when that parses as an
/// object or array.
pub fn as_json(obs: &Observation) -> Option<Cow<'_, Value>> {
    if let Some(v) = &obs.structured {
        return Some(Cow::Borrowed(v));
    }
    let trimmed = obs.text.trim();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        serde_json::from_str(trimmed).ok().map(Cow::Owned)
    } else {
        None
    }
}

/// Leaf values by JSON-pointer-like path (`/a/0/b`). An empty object or array is a leaf.
pub fn leaves(value: &Value) -> BTreeMap<String, &Value> {
    fn walk<'a>(v: &'a Value, path: &mut String, out: &mut BTreeMap<String, &'a Value>) {
        let len = path.len();
        match v {
            Value::Object(map) if !map.is_empty() => {
                for (k, child) in map {
                    path.push('/');
                    path.push_str(k);
                    walk(child, path, out);
                    path.truncate(len);
                }
            }
            Value::Array(items) if !items.is_empty() => {
                for (i, child) in items.iter().enumerate() {
                    path.push('/');
                    path.push_str(&i.to_string());
                    walk(child, path, out);
                    path.truncate(len);
                }
            }
            leaf => {
                out.insert(
                    if path.is_empty() {
                        "/".to_string()
                    } else {
                        path.clone()
                    },
                    leaf,
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(value, &mut String::new(), &mut out);
    out
}

/// One JSON leaf where a simulation and the real result differ.
#[derive(Debug, Clone, PartialEq)]
pub struct LeafDifference {
    /// Its path (`/target/timezone`).
    pub path: String,
    /// The simulated value (compact JSON), `None` when the simulation lacks the path.
    pub simulated: Option<String>,
    /// The real value, `None` when the real result lacks the path.
    pub real: Option<String>,
}

/// The leaves that differ (by the same type-aware rule as `values`), in path order; empty when
/// either side is not JSON.
pub fn differences(simulated: &Observation, real: &Observation) -> Vec<LeafDifference> {
    let (Some(s), Some(r)) = (as_json(simulated), as_json(real)) else {
        return Vec::new();
    };
    let (ls, lr) = (leaves(&s), leaves(&r));
    let paths: std::collections::BTreeSet<&String> = ls.keys().chain(lr.keys()).collect();
    paths
        .into_iter()
        .filter_map(|path| {
            let (a, b) = (ls.get(path), lr.get(path));
            match (a, b) {
                (Some(a), Some(b)) if leaf_eq(a, b) => None,
                _ => Some(LeafDifference {
                    path: path.clone(),
                    simulated: a.map(|v| v.to_string()),
                    real: b.map(|v| v.to_string()),
                }),
            }
        })
        .collect()
}

/// (Jaccard of leaf paths, equal leaves over the union of paths).
fn json_agreement(a: &Value, b: &Value) -> (f64, f64) {
    let la = leaves(a);
    let lb = leaves(b);
    let mut shared = 0usize;
    let mut equal = 0usize;
    for (path, va) in &la {
        if let Some(vb) = lb.get(path) {
            shared += 1;
            if leaf_eq(va, vb) {
                equal += 1;
            }
        }
    }
    let union = la.len() + lb.len() - shared;
    if union == 0 {
        return (1.0, 1.0);
    }
    (shared as f64 / union as f64, equal as f64 / union as f64)
}

/// Leaf equality, type-aware: numbers (or numeric strings) within 1% relative; timestamps as
/// the same instant; dates and clock times parsed; other strings equal once case, spacing and
/// punctuation at the ends are ignored; anything else exactly.
pub fn leaf_eq(a: &Value, b: &Value) -> bool {
    // Every rule below holds a value equal to itself; most leaves a good prediction has are.
    if a == b {
        return true;
    }
    if let (Some(x), Some(y)) = (number(a), number(b)) {
        return (x - y).abs() <= 1e-9 + 0.01 * x.abs().max(y.abs());
    }
    match (a, b) {
        (Value::String(x), Value::String(y)) => {
            if let (Some(p), Some(q)) = (instant(x), instant(y)) {
                return p == q;
            }
            if let (Ok(p), Ok(q)) = (
                chrono::NaiveDate::parse_from_str(x.trim(), "%Y-%m-%d"),
                chrono::NaiveDate::parse_from_str(y.trim(), "%Y-%m-%d"),
            ) {
                return p == q;
            }
            if let (Some(p), Some(q)) = (clock(x), clock(y)) {
                return p == q;
            }
            normalised(x) == normalised(y)
        }
        _ => a == b,
    }
}

/// A number, or a string that is one (`"12.5"`).
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|f| f.is_finite()),
        _ => None,
    }
}

/// An RFC 3339 timestamp (or one with a space for the `T`), as UTC.
fn instant(s: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    let s = s.trim();
    chrono::DateTime::parse_from_rfc3339(s)
        .or_else(|_| chrono::DateTime::parse_from_rfc3339(&s.replacen(' ', "T", 1)))
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc))
}

/// A clock time `HH:MM` or `HH:MM:SS`.
fn clock(s: &str) -> Option<chrono::NaiveTime> {
    let s = s.trim();
    chrono::NaiveTime::parse_from_str(s, "%H:%M:%S")
        .or_else(|_| chrono::NaiveTime::parse_from_str(s, "%H:%M"))
        .ok()
}

/// Lower case, inner spacing collapsed, punctuation at the ends dropped.
fn normalised(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
        .trim_matches(|c: char| c.is_ascii_punctuation())
        .to_string()
}

/// Lower-case word tokens; a number with a decimal point stays one token.
pub fn tokens(text: &str) -> Vec<String> {
    Tokens::of(text).iter().map(String::from).collect()
}

/// A text's tokens end to end in one string (token `i` ends at `ends[i]`): two allocations
/// per text, however many tokens (fidelity is computed for every pair a report reads).
struct Tokens {
    text: String,
    ends: Vec<usize>,
}

impl Tokens {
    fn of(text: &str) -> Self {
        let mut out = Self {
            text: String::with_capacity(text.len()),
            ends: Vec::new(),
        };
        // Where the token being read starts in `out.text`.
        let mut start = 0;
        let bytes = text.as_bytes();
        let mut i = 0;
        // Byte by byte while ASCII (most tool results), a character at a time otherwise.
        while i < bytes.len() {
            let (keep, width) = if bytes[i].is_ascii() {
                let b = bytes[i];
                let keeps_number = b == b'.'
                    && out.text.len() > start
                    && out.text.as_bytes()[out.text.len() - 1].is_ascii_digit()
                    && bytes.get(i + 1).is_some_and(u8::is_ascii_digit);
                let keep = b.is_ascii_alphanumeric() || keeps_number;
                if keep {
                    out.text.push(char::from(b.to_ascii_lowercase()));
                }
                (keep, 1)
            } else {
                let c = text[i..].chars().next().unwrap_or_default();
                let keep = c.is_alphanumeric();
                if keep {
                    out.text.extend(c.to_lowercase());
                }
                (keep, c.len_utf8())
            };
            if !keep && out.text.len() > start {
                out.ends.push(out.text.len());
                start = out.text.len();
            }
            i += width;
        }
        if out.text.len() > start {
            out.ends.push(out.text.len());
        }
        out
    }

    fn iter(&self) -> impl Iterator<Item = &str> {
        let mut from = 0;
        self.ends.iter().map(move |&end| {
            let token = &self.text[from..end];
            from = end;
            token
        })
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

/// Token F1 (multiset overlap); 1 when both texts have no tokens, 0 when one has none.
pub fn token_f1(a: &str, b: &str) -> f64 {
    let ta = Tokens::of(a);
    let tb = Tokens::of(b);
    if ta.is_empty() && tb.is_empty() {
        return 1.0;
    }
    if ta.is_empty() || tb.is_empty() {
        return 0.0;
    }
    // Fx: the tokens are short and many, and nobody chooses them to collide.
    let mut counts: FxHashMap<&str, i64> =
        FxHashMap::with_capacity_and_hasher(ta.len(), Default::default());
    for t in ta.iter() {
        *counts.entry(t).or_default() += 1;
    }
    let mut overlap = 0i64;
    for t in tb.iter() {
        if let Some(c) = counts.get_mut(t).filter(|c| **c > 0) {
            *c -= 1;
            overlap += 1;
        }
    }
    if overlap == 0 {
        return 0.0;
    }
    let precision = overlap as f64 / tb.len() as f64;
    let recall = overlap as f64 / ta.len() as f64;
    2.0 * precision * recall / (precision + recall)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_lower_case_words_and_decimal_numbers() {
        assert_eq!(
            tokens("Ünïcode ÀB, 3.14 x.5 1. İ"),
            ["ünïcode", "àb", "3.14", "x", "5", "1", "i\u{307}"]
        );
        assert!(tokens(" ,.; ").is_empty());
    }

    proptest::proptest! {
        /// The byte-wise reading is the rule said by characters: runs of alphanumerics,
        /// lower-cased, a `.` between two digits kept inside a number.
        #[test]
        fn tokens_follow_the_rule_by_characters(text in "[a-zA-Z0-9 .,:ÄéİΣ€\\-]{0,40}") {
            let chars: Vec<char> = text.chars().collect();
            let mut expected = vec![String::new()];
            for (i, &c) in chars.iter().enumerate() {
                let current = expected.last_mut().unwrap();
                let in_number = c == '.'
                    && current.ends_with(|p: char| p.is_ascii_digit())
                    && chars.get(i + 1).is_some_and(char::is_ascii_digit);
                if c.is_alphanumeric() || in_number {
                    current.extend(c.to_lowercase());
                } else if !current.is_empty() {
                    expected.push(String::new());
                }
            }
            expected.retain(|t| !t.is_empty());
            proptest::prop_assert_eq!(tokens(&text), expected);
        }
    }
    use serde_json::json;

    fn obs(text: &str, is_error: bool) -> Observation {
        Observation::of_text(text, is_error)
    }

    #[test]
    fn identical_json_scores_one() {
        let o = obs(
            r#"{"timezone":"UTC","datetime":"2026-01-01T00:00:00"}"#,
            false,
        );
        let f = compare(&o, &o);
        assert_eq!(
            (
                f.error_agreement,
                f.structure,
                f.values,
                f.token_f1,
                f.score
            ),
            (1.0, Some(1.0), Some(1.0), 1.0, 1.0)
        );
    }

    #[test]
    fn json_structure_and_values_by_path() {
        // sim: /a=1, /b=2, /c=3 ; real: /a=1, /b=5, /d=4
        // shared paths {a,b} = 2, union {a,b,c,d} = 4 → structure 0.5; equal {a} → values 0.25.
        let sim = obs(r#"{"a":1,"b":2,"c":3}"#, false);
        let real = obs(r#"{"a":1.0,"b":5,"d":4}"#, false);
        let f = compare(&sim, &real);
        assert_eq!(f.structure, Some(0.5));
        assert_eq!(f.values, Some(0.25));
    }

    #[test]
    fn token_f1_hand_worked() {
        // a: [the, time, is, 10.5] b: [time, is, 11] overlap 2; P = 2/3, R = 2/4, F1 = 4/7.
        assert!((token_f1("The time is 10.5", "time is 11") - 4.0 / 7.0).abs() < 1e-12);
        assert_eq!(token_f1("", ""), 1.0);
        assert_eq!(token_f1("x", ""), 0.0);
    }

    #[test]
    fn text_only_mixes_error_and_tokens() {
        let f = compare(&obs("boom", true), &obs("fine", false));
        assert_eq!(f.structure, None);
        assert_eq!(f.error_agreement, 0.0);
        assert_eq!(f.score, 0.0);
        // Both plain text: the score is the token F1.
        let g = compare(&obs("a b", false), &obs("a c", false));
        assert_eq!(g.score, 0.5);
        // Both errors: most of the credit for predicting the failure, the rest for its words.
        let h = compare(&obs("boom: bad zone", true), &obs("bad zone given", true));
        assert!(
            (h.score - (0.5 + 0.5 * token_f1("boom: bad zone", "bad zone given"))).abs() < 1e-12
        );
    }

    #[test]
    fn structured_content_wins_over_text() {
        let sim = Observation {
            text: "nope".into(),
            structured: Some(Box::new(json!({"x": 1}))),
            ..Default::default()
        };
        let real = obs(r#"{"x": 1}"#, false);
        assert_eq!(compare(&sim, &real).structure, Some(1.0));
    }

    #[test]
    fn empty_containers_are_leaves() {
        assert_eq!(leaves(&json!({"a": [], "b": {}})).len(), 2);
        assert_eq!(leaves(&json!(3)).keys().collect::<Vec<_>>(), vec!["/"]);
    }

    /// A real `convert_time` result from `sample_runs/` (UTC 09:00 to Europe/London).
    const LONDON: &str = r#"{
  "source": {"timezone": "UTC", "datetime": "2026-11-30T09:00:00+00:00", "day_of_week": "Monday", "is_dst": false},
  "target": {"timezone": "Europe/London", "datetime": "2026-11-30T09:00:00+00:00", "day_of_week": "Monday", "is_dst": false},
  "time_difference": "+0.0h"
}"#;

    #[test]
    fn the_right_shape_with_the_wrong_values_scores_below_the_right_values() {
        let real = obs(LONDON, false);
        // Tokyo's answer to London's question: the same shape, other values.
        let tokyo = obs(
            r#"{"source": {"timezone": "UTC", "datetime": "2026-11-30T09:00:00+00:00", "day_of_week": "Monday", "is_dst": false},
                "target": {"timezone": "Asia/Tokyo", "datetime": "2026-11-30T18:00:00+09:00", "day_of_week": "Monday", "is_dst": false},
                "time_difference": "+9.0h"}"#,
            false,
        );
        // The right values, written differently: another offset for the same instant, other
        // case and spacing, a number as a string.
        let same = obs(
            r#"{"source": {"timezone": "utc", "datetime": "2026-11-30 09:00:00Z", "day_of_week": "monday ", "is_dst": false},
                "target": {"timezone": "Europe/London", "datetime": "2026-11-30T10:00:00+01:00", "day_of_week": "Monday", "is_dst": false},
                "time_difference": "+0.0h"}"#,
            false,
        );
        let wrong = compare(&tokyo, &real);
        let right = compare(&same, &real);
        assert_eq!(right.score, 1.0, "{right:?}");
        assert_eq!(wrong.structure, Some(1.0));
        // 9 leaves; the target's zone and the difference differ (18:00+09:00 is 09:00 UTC, the
        // same instant): values 7/9, and no exact match.
        assert!(
            (wrong.values.unwrap() - 7.0 / 9.0).abs() < 1e-12,
            "{wrong:?}"
        );
        assert!((wrong.score - (0.25 + 0.5 * 7.0 / 9.0)).abs() < 1e-12);
        assert!(wrong.score < right.score);
        // Token F1 would have rated them nearly alike; it stays a separate text score.
        assert!(wrong.token_f1 > 0.7, "{wrong:?}");
    }

    #[test]
    fn placeholders_empty_and_echoed_prompts_are_no_prediction() {
        let real = obs(LONDON, false);
        for text in [
            "",
            "   ",
            "<the tool's text result>",
            "The tool's text result",
            "result",
            "TODO",
            "You simulate an MCP server. Given a tool's description…",
        ] {
            let f = compare(&obs(text, false), &real);
            assert!(f.no_prediction, "{text:?}");
            assert_eq!(f.score, 0.0, "{text:?}");
            assert_eq!(f.error_agreement, 0.0, "no credit for agreeing on nothing");
        }
        // A short real answer is not a placeholder.
        assert!(!compare(&obs("42", false), &obs("42", false)).no_prediction);
    }

    #[test]
    fn leaves_compare_by_type() {
        use serde_json::json;
        assert!(leaf_eq(&json!(100.0), &json!(100.5)), "within 1%");
        assert!(!leaf_eq(&json!(100.0), &json!(102)), "not within 1%");
        assert!(leaf_eq(&json!("12.0"), &json!(12)), "a numeric string");
        assert!(leaf_eq(
            &json!("2026-11-30T18:00:00+09:00"),
            &json!("2026-11-30T09:00:00Z")
        ));
        assert!(!leaf_eq(
            &json!("2026-11-30T18:00:00+09:00"),
            &json!("2026-11-30T18:00:00Z")
        ));
        assert!(leaf_eq(&json!("2026-11-30"), &json!(" 2026-11-30")));
        assert!(leaf_eq(&json!("09:00"), &json!("09:00:00")));
        assert!(leaf_eq(&json!("Asia/Tokyo"), &json!("asia/tokyo")));
        assert!(!leaf_eq(&json!("Asia/Tokyo"), &json!("Europe/London")));
        assert!(!leaf_eq(&json!(true), &json!("true ")));
    }

    #[test]
    fn a_mismatched_error_scores_nothing() {
        let f = compare(
            &obs(LONDON, false),
            &obs("Invalid timezone: 'US/NewYork'", true),
        );
        assert_eq!((f.error_agreement, f.score), (0.0, 0.0));
    }
}
