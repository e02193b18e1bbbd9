//! Simulation fidelity: how close a world model's predicted result is to the real one.
//!
//! Three views of one step, each in [0, 1]: do both agree on error; when both are JSON,
//! do their leaf paths match (`structure`, Jaccard of paths) and do the leaves hold the
//! same values (`values`, equal leaves over the union of paths); and the token F1 of the
//! texts. `score` is the mean of the views that apply.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::trajectory::event::Observation;

/// Fidelity of one simulated step against its real result.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Fidelity {
    /// 1 when both are errors or both are not, else 0.
    pub error_agreement: f64,
    /// Jaccard of JSON leaf paths, when both are JSON.
    pub structure: Option<f64>,
    /// Leaves equal at the same path over all paths, when both are JSON.
    pub values: Option<f64>,
    /// Token F1 of the texts.
    pub token_f1: f64,
    /// Mean of the views above that apply.
    pub score: f64,
}

/// Compares a simulated observation with the real one.
pub fn compare(simulated: &Observation, real: &Observation) -> Fidelity {
    let error_agreement = if simulated.is_error == real.is_error {
        1.0
    } else {
        0.0
    };
    let (structure, values) = match (as_json(simulated), as_json(real)) {
        (Some(s), Some(r)) => {
            let (st, va) = json_agreement(&s, &r);
            (Some(st), Some(va))
        }
        _ => (None, None),
    };
    let token_f1 = token_f1(&simulated.text, &real.text);
    let parts = [Some(error_agreement), structure, values, Some(token_f1)];
    let present: Vec<f64> = parts.into_iter().flatten().collect();
    let score = present.iter().sum::<f64>() / present.len() as f64;
    Fidelity {
        error_agreement,
        structure,
        values,
        token_f1,
        score,
    }
}

/// The observation as JSON: its structured content, or its text when that parses as an
/// object or array.
pub fn as_json(obs: &Observation) -> Option<Value> {
    if let Some(v) = &obs.structured {
        return Some(v.clone());
    }
    let trimmed = obs.text.trim();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        serde_json::from_str(trimmed).ok()
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

/// Leaf equality that treats 1 and 1.0 as equal.
fn leaf_eq(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0),
        _ => a == b,
    }
}

/// Lower-case word tokens; a number with a decimal point stays one token.
pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let keeps_number = c == '.'
            && current.chars().last().is_some_and(|p| p.is_ascii_digit())
            && chars.get(i + 1).is_some_and(char::is_ascii_digit);
        if c.is_alphanumeric() || keeps_number {
            current.extend(c.to_lowercase());
        } else if !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Token F1 (multiset overlap); 1 when both texts have no tokens, 0 when one has none.
pub fn token_f1(a: &str, b: &str) -> f64 {
    let ta = tokens(a);
    let tb = tokens(b);
    if ta.is_empty() && tb.is_empty() {
        return 1.0;
    }
    if ta.is_empty() || tb.is_empty() {
        return 0.0;
    }
    let mut counts: HashMap<&str, i64> = HashMap::new();
    for t in &ta {
        *counts.entry(t).or_default() += 1;
    }
    let mut overlap = 0i64;
    for t in &tb {
        if let Some(c) = counts.get_mut(t.as_str()).filter(|c| **c > 0) {
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
    use serde_json::json;

    fn obs(text: &str, is_error: bool) -> Observation {
        Observation {
            text: text.into(),
            is_error,
            ..Default::default()
        }
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
        let g = compare(&obs("a b", false), &obs("a c", false));
        // error 1, f1 0.5 → 0.75
        assert_eq!(g.score, 0.75);
    }

    #[test]
    fn structured_content_wins_over_text() {
        let sim = Observation {
            text: "nope".into(),
            structured: Some(json!({"x": 1})),
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
}
