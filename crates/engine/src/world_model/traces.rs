//! The `traces` world model: a result predicted field by field from the trace store
//! (`memory::TransitionBuffer`), with no LLM. What the recordings determine is given by rules
//! they support; what they do not comes from the nearest recorded call, and the confidence
//! says which (docs/world-models.md, "The traces world model").
//!
//! For a call of a tool, in order:
//!
//! 1. **The same call recorded**: the result recorded most often for these arguments (of the
//!    recordings made in the state the call is asked in, when that is known and they kept
//!    theirs); its recorded change is replayed on the state.
//! 2. **Errors**: when every recorded call of the same *context* (the call's arguments that are
//!    no numbers: units, names, flags) failed, that error; when the nearest recorded call
//!    failed, its error, as a guess.
//! 3. **A result, field by field** (a JSON result's leaves), each by the first rule every
//!    recorded success of the context reproduces (of the tool, when the context was never
//!    recorded): a copy of an argument; for a number, a multiple or an affine function of a
//!    numeric argument (least squares, within the context only, kept only when it gives every
//!    recorded value within fidelity's 1%); a constant; else the nearest call's value. A text result is
//!    the nearest call's text with its argument values put in this call's, when that template
//!    gives every other recorded text of the context exactly.
//!
//! **Confidence**: the weakest field's. A rule checked by `k` recorded calls beyond the fewest
//! that determine it (one for a copy, a constant or a multiple, two for an affine map) is
//! `(k+1)/(k+2)` (Laplace's rule of succession); a field taken from the nearest call is
//! `0.1 + 0.6 × similarity`, memory's mapping for another call. The rules fitted for a context
//! are kept (per context and run left out), so a call after the first costs a lookup.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::memory::{RecordedTransition, TransitionBuffer, similarity};
use super::{Confidence, SimFailure, SimRequest, Simulation, WorldModel, canonical};
use crate::metrics::fidelity::{as_json, leaf_eq, leaves};
use cosmos_trajectory::event::{Observation, WorldModelInfo};

/// The confidence a rule checked by `checks` recorded calls beyond the fewest that determine
/// it earns (Laplace's rule of succession).
fn rule_confidence(checks: usize) -> f64 {
    (checks as f64 + 1.0) / (checks as f64 + 2.0)
}

/// The confidence of a field taken from a recorded call this similar (memory's mapping for
/// another call of the tool).
fn neighbour_confidence(similarity: f64) -> f64 {
    0.1 + 0.6 * similarity
}

/// A call's context: its arguments that are no numbers, canonically (calls of one context are
/// where a numeric field can be a function of a numeric argument).
fn context_of(arguments: &Value) -> String {
    match arguments {
        Value::Object(map) => canonical(&Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_number())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        )),
        other => canonical(other),
    }
}

/// How one field of a result is made.
#[derive(Debug, Clone, PartialEq)]
enum Rule {
    /// A copy of the argument of this name.
    Copy(String),
    /// Always this value.
    Constant(Value),
    /// `slope × argument + intercept` (an intercept of 0 for a multiple).
    Affine {
        argument: String,
        slope: f64,
        intercept: f64,
    },
}

impl Rule {
    /// The field's value for a call with `arguments`; `None` when the rule needs an argument
    /// the call lacks.
    fn apply(&self, arguments: &Value) -> Option<Value> {
        match self {
            Rule::Copy(name) => arguments.get(name).cloned(),
            Rule::Constant(v) => Some(v.clone()),
            Rule::Affine {
                argument,
                slope,
                intercept,
            } => {
                let x = arguments.get(argument)?.as_f64()?;
                number(slope * x + intercept)
            }
        }
    }
}

/// A JSON number for `x`, rounded to 12 significant digits (a fit's last bits are noise:
/// 212.00000000000003 is 212).
fn number(x: f64) -> Option<Value> {
    let rounded: f64 = format!("{x:.11e}").parse().ok()?;
    serde_json::Number::from_f64(rounded).map(Value::Number)
}

/// `value` as the recorded leaf's kind of number: an integer where that was one.
fn like(value: Value, recorded: &Value) -> Value {
    match value.as_f64() {
        Some(x) if recorded.is_i64() && x.fract() == 0.0 && x.abs() < 9.0e15 => json!(x as i64),
        Some(x) if recorded.is_u64() && x.fract() == 0.0 && (0.0..1.8e19).contains(&x) => {
            json!(x as u64)
        }
        _ => value,
    }
}

/// What the recordings of one context (or of the tool, for a context never recorded) say.
#[derive(Debug)]
struct Fitted {
    /// The recorded calls it was fitted on.
    calls: Vec<RecordedTransition>,
    /// Whether those are the context's own calls (else the tool's).
    own_context: bool,
    /// Every one of them failed.
    all_failed: bool,
    /// Per leaf path of the first success's JSON: its rule and the confidence the rule earns.
    rules: HashMap<String, (Rule, f64)>,
    /// For a text result: the confidence of the argument-slot template, when every recorded
    /// text of the context is its template filled in.
    template: Option<f64>,
    /// Some call of them failed.
    any_failed: bool,
    /// The first success and its JSON: the shape of a result every rule fills in.
    shape: Option<(Observation, Value)>,
}

/// The candidate rules for a leaf, best first.
fn candidate_rules(
    path: &str,
    calls: &[(&Value, HashMap<String, &Value>)],
    numeric: bool,
) -> Vec<(Rule, usize)> {
    let Some((first_args, first_leaves)) = calls.first() else {
        return Vec::new();
    };
    let Some(first) = first_leaves.get(path) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    // A copy of an argument whose value the leaf is.
    if let Some(args) = first_args.as_object() {
        for (name, value) in args {
            if value == *first || (value.is_number() && leaf_eq(value, first)) {
                found.push((Rule::Copy(name.clone()), 1));
            }
        }
    }
    // Numeric: a multiple or an affine function of a numeric argument (before a constant:
    // of one recorded call, a number is more often a multiple of the argument than fixed).
    if numeric
        && first.is_number()
        && let Some(args) = first_args.as_object()
    {
        for name in args.iter().filter(|(_, v)| v.is_number()).map(|(k, _)| k) {
            let points: Option<Vec<(f64, f64)>> = calls
                .iter()
                .map(|(a, l)| Some((a.get(name)?.as_f64()?, l.get(path)?.as_f64()?)))
                .collect();
            let Some(points) = points else { continue };
            let sxx: f64 = points.iter().map(|(x, _)| x * x).sum();
            if sxx > 0.0 {
                let slope = points.iter().map(|(x, y)| x * y).sum::<f64>() / sxx;
                found.push((
                    Rule::Affine {
                        argument: name.clone(),
                        slope,
                        intercept: 0.0,
                    },
                    1,
                ));
            }
            let n = points.len() as f64;
            let mean_x = points.iter().map(|(x, _)| x).sum::<f64>() / n;
            let mean_y = points.iter().map(|(_, y)| y).sum::<f64>() / n;
            let var: f64 = points.iter().map(|(x, _)| (x - mean_x).powi(2)).sum();
            if var > 0.0 {
                let slope = points
                    .iter()
                    .map(|(x, y)| (x - mean_x) * (y - mean_y))
                    .sum::<f64>()
                    / var;
                found.push((
                    Rule::Affine {
                        argument: name.clone(),
                        slope,
                        intercept: mean_y - slope * mean_x,
                    },
                    2,
                ));
            }
        }
    }
    found.push((Rule::Constant((*first).clone()), 1));
    found
}

/// The first rule for `path` that gives every recorded value (within fidelity's rule for a
/// leaf), with the confidence it earns; numeric maps only within a context (`numeric`).
fn fit_leaf(
    path: &str,
    calls: &[(&Value, HashMap<String, &Value>)],
    numeric: bool,
) -> Option<(Rule, f64)> {
    candidate_rules(path, calls, numeric)
        .into_iter()
        .find(|(rule, _)| {
            calls
                .iter()
                .all(|(args, l)| match (rule.apply(args), l.get(path)) {
                    (Some(predicted), Some(recorded)) => leaf_eq(&predicted, recorded),
                    _ => false,
                })
        })
        .map(|(rule, needs)| (rule, rule_confidence(calls.len().saturating_sub(needs))))
}

/// Replaces each of `from`'s top-level argument values found in `text` by `to`'s value of the
/// same argument: a text result's template filled in for another call.
fn fill_template(text: &str, from: &Value, to: &Value) -> String {
    let (Some(from), Some(to)) = (from.as_object(), to.as_object()) else {
        return text.to_string();
    };
    let shown = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    let mut out = text.to_string();
    // Longer values first, so a value inside another is not replaced within it.
    let mut pairs: Vec<(String, String)> = from
        .iter()
        .filter_map(|(k, v)| Some((shown(v)?, shown(to.get(k)?)?)))
        .filter(|(old, new)| old.chars().count() >= 2 && old != new)
        .collect();
    pairs.sort_by_key(|(old, _)| std::cmp::Reverse(old.len()));
    // Marked first, then filled: a new value is never replaced again.
    for (i, (old, _)) in pairs.iter().enumerate() {
        out = out.replace(old.as_str(), &format!("\u{0}{i}\u{0}"));
    }
    for (i, (_, new)) in pairs.iter().enumerate() {
        out = out.replace(&format!("\u{0}{i}\u{0}"), new);
    }
    out
}

impl Fitted {
    fn fit(calls: Vec<RecordedTransition>, own_context: bool) -> Self {
        let successes: Vec<&RecordedTransition> =
            calls.iter().filter(|c| !c.observation.is_error).collect();
        let json: Vec<Value> = successes
            .iter()
            .map_while(|c| as_json(&c.observation).map(|v| v.into_owned()))
            .collect();
        let mut rules = HashMap::new();
        let mut template = None;
        if !successes.is_empty() && json.len() == successes.len() {
            let table: Vec<(&Value, HashMap<String, &Value>)> = successes
                .iter()
                .zip(&json)
                .map(|(c, v)| (&c.arguments, leaves(v).into_iter().collect()))
                .collect();
            for path in table[0].1.keys() {
                if let Some(rule) = fit_leaf(path, &table, own_context) {
                    rules.insert(path.clone(), rule);
                }
            }
        } else if let Some((first, rest)) = successes.split_first()
            && !rest.is_empty()
            && json.is_empty()
            && rest.iter().all(|c| {
                fill_template(&first.observation.text, &first.arguments, &c.arguments)
                    == c.observation.text
            })
        {
            template = Some(rule_confidence(rest.len().saturating_sub(1)));
        }
        let shape = successes
            .first()
            .zip(json.first())
            .map(|(c, v)| (c.observation.clone(), v.clone()));
        Self {
            all_failed: successes.is_empty(),
            any_failed: successes.len() < calls.len(),
            shape,
            calls,
            own_context,
            rules,
            template,
        }
    }

    /// The recorded call nearest to `arguments` among those that failed (`errors`) or not.
    fn nearest(
        &self,
        arguments: &Value,
        errors: Option<bool>,
    ) -> Option<(&RecordedTransition, f64)> {
        self.calls
            .iter()
            .filter(|c| errors.is_none_or(|e| c.observation.is_error == e))
            .map(|c| (c, similarity(&c.arguments, arguments)))
            // The first of equals: the order read decides a tie, not the map.
            .fold(
                None,
                |best: Option<(&RecordedTransition, f64)>, (c, s)| match best {
                    Some((_, b)) if b >= s => best,
                    _ => Some((c, s)),
                },
            )
    }
}

/// A prediction and how it was made.
struct Predicted {
    observation: Observation,
    confidence: f64,
    /// `rules` when every field came from a rule, `neighbour` when one came from a call.
    how: &'static str,
    /// Each JSON leaf's path, value, confidence, and whether a rule gave it.
    fields: Vec<Field>,
    /// The same call's recorded change to its server's state (an exact recall's).
    change: Option<Arc<cosmos_trajectory::event::StateChange>>,
}

/// One leaf of a predicted JSON result.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// Its path, as `fidelity::leaves` writes it.
    pub path: String,
    /// Its value.
    pub value: Value,
    /// How sure the rule (or the neighbour) that gave it is.
    pub confidence: f64,
    /// A rule the recordings support gave it (not the nearest call).
    pub determined: bool,
}

impl Predicted {
    /// A prediction whose every leaf is as sure as the whole (the same call recorded; a
    /// context's error), or none that are determined (`how` = `neighbour`).
    fn whole(observation: Observation, confidence: f64, how: &'static str) -> Self {
        let fields = match as_json(&observation) {
            Some(v) if !observation.is_error => leaves(&v)
                .into_iter()
                .map(|(path, value)| Field {
                    path,
                    value: value.clone(),
                    confidence,
                    determined: how == "rules",
                })
                .collect(),
            _ => Vec::new(),
        };
        Self {
            observation,
            confidence,
            how,
            fields,
            change: None,
        }
    }
}

/// The traces world model.
#[derive(Debug, Clone)]
pub struct TracesWorldModel {
    store: Arc<TransitionBuffer>,
    /// The run whose calls it must not use (leave one run out), if any.
    excluded: Option<u32>,
    /// Rules fitted, by (tool, context); a clone shares them only while it leaves out the
    /// same run.
    fitted: Arc<Mutex<FittedByContext>>,
}

/// The most contexts whose rules are kept at once.
const FITTED_KEPT: usize = 4096;

/// Rules fitted, by (tool, context).
type FittedByContext = HashMap<(String, String), Arc<Fitted>>;

impl TracesWorldModel {
    /// A world model over a store.
    pub fn new(store: Arc<TransitionBuffer>) -> Self {
        Self {
            store,
            excluded: None,
            fitted: Arc::default(),
        }
    }

    /// The same store without the calls recorded in `run` (for evaluating calls of `run`).
    pub fn without(&self, run: &std::path::Path) -> Self {
        self.leaving_out(self.store.source_of(run))
    }

    /// The same store without the calls of the `run`th source read, when given.
    pub(super) fn leaving_out(&self, run: Option<u32>) -> Self {
        Self {
            store: self.store.clone(),
            excluded: run,
            fitted: Arc::default(),
        }
    }

    /// What the recordings say of `tool` in `arguments`' context (fitted once per context).
    fn fitted(&self, tool: &str, arguments: &Value) -> Option<Arc<Fitted>> {
        let context = context_of(arguments);
        let key = (tool.to_string(), context.clone());
        if let Some(f) = self.fitted.lock().ok()?.get(&key) {
            return Some(f.clone());
        }
        let calls: Vec<&RecordedTransition> = self
            .store
            .calls_of(tool)
            .iter()
            .filter(|c| Some(c.run) != self.excluded)
            .collect();
        if calls.is_empty() {
            return None;
        }
        let own: Vec<RecordedTransition> = calls
            .iter()
            .filter(|c| context_of(&c.arguments) == context)
            .map(|c| (*c).clone())
            .collect();
        let fitted = Arc::new(if own.is_empty() {
            Fitted::fit(calls.into_iter().cloned().collect(), false)
        } else {
            Fitted::fit(own, true)
        });
        if let Ok(mut cache) = self.fitted.lock() {
            // Bounded: a client naming ever new contexts refits rather than grows it.
            if cache.len() >= FITTED_KEPT {
                cache.clear();
            }
            cache.insert(key, fitted.clone());
        }
        Some(fitted)
    }

    /// Its prediction for `tool` called with `arguments`, as a draft, with the result fields
    /// its rules determine (path, value): what an `llm` grounded in the same store is shown.
    pub fn draft(
        &self,
        tool: &str,
        arguments: &Value,
        state: Option<&Value>,
    ) -> Option<(Observation, Vec<(String, Value)>)> {
        let predicted = self.predict(tool, arguments, state)?;
        let facts = predicted
            .fields
            .into_iter()
            .filter(|f| f.determined)
            .map(|f| (f.path, f.value))
            .collect();
        Some((predicted.observation, facts))
    }

    /// Predicts `tool` called with `arguments`, its server in `state` when known; `None` when
    /// the tool was never recorded.
    fn predict(&self, tool: &str, arguments: &Value, state: Option<&Value>) -> Option<Predicted> {
        // The same call recorded: the result recorded most often for it; in the same state,
        // when the state is known and the recordings kept theirs (in another state the same
        // call may answer otherwise).
        let mut same: Vec<&RecordedTransition> = self
            .store
            .same_calls(tool, arguments, self.excluded)
            .collect();
        if let Some(state) = state
            && same.iter().any(|c| c.state_before.is_some())
        {
            let digest = super::memory::state_digest(state);
            same.retain(|c| c.state_before == Some(digest));
        }
        if !same.is_empty() {
            let agreeing = |o: &Observation| same.iter().filter(|c| c.observation == *o).count();
            let (best, n) = same.iter().map(|c| (*c, agreeing(&c.observation))).fold(
                None,
                |best: Option<(&RecordedTransition, usize)>, (c, n)| match best {
                    Some((_, m)) if m >= n => best,
                    _ => Some((c, n)),
                },
            )?;
            // Recorded alike n times of `same.len()`: a rule checked n − 1 times, weighed
            // by the share that agree.
            let share = n as f64 / same.len() as f64;
            let mut predicted = Predicted::whole(
                best.observation.clone(),
                share * rule_confidence(n - 1),
                "rules",
            );
            predicted.change = best.change.clone();
            return Some(predicted);
        }
        let fitted = self.fitted(tool, arguments)?;
        if fitted.own_context && fitted.all_failed {
            let (call, _) = fitted.nearest(arguments, None)?;
            return Some(Predicted::whole(
                call.observation.clone(),
                rule_confidence(fitted.calls.len() - 1),
                "rules",
            ));
        }
        // Every field determined, and no failure recorded to be near: no neighbour is needed,
        // so a call costs a lookup, not a pass over the context's calls.
        if !fitted.any_failed
            && let Some(predicted) = Self::shaped_by_rules(&fitted, arguments)
        {
            return Some(predicted);
        }
        let (near, closeness) = fitted.nearest(arguments, None)?;
        if near.observation.is_error || fitted.all_failed {
            return Some(Predicted::whole(
                near.observation.clone(),
                neighbour_confidence(closeness),
                "neighbour",
            ));
        }
        Self::fill(&fitted, arguments)
    }

    /// A success predicted field by field on the nearest recorded success's shape.
    fn fill(fitted: &Fitted, arguments: &Value) -> Option<Predicted> {
        let (near, closeness) = fitted.nearest(arguments, Some(false))?;
        let from_neighbour = neighbour_confidence(closeness);
        let Some(shape) = as_json(&near.observation).map(|v| v.into_owned()) else {
            // A text result: its template, filled in.
            let text = fill_template(&near.observation.text, &near.arguments, arguments);
            let (confidence, how) = match fitted.template {
                Some(c) => (c, "rules"),
                None => (from_neighbour, "neighbour"),
            };
            return Some(Predicted::whole(
                Observation::of_text(text, false),
                confidence,
                how,
            ));
        };
        Some(Self::shaped(
            fitted,
            arguments,
            &near.observation,
            &shape,
            Some(from_neighbour),
        ))
    }

    /// A JSON success on `shape` (the result `template`'s, whose text style it keeps), each
    /// leaf by its rule, else the template's own value with `from_neighbour`'s confidence;
    /// with none, every leaf must have a rule that applies (else `None`).
    fn shaped_by_rules(fitted: &Fitted, arguments: &Value) -> Option<Predicted> {
        let (template, shape) = fitted.shape.as_ref()?;
        let predicted = Self::shaped(fitted, arguments, template, shape, None);
        predicted
            .fields
            .iter()
            .all(|f| f.determined)
            .then_some(predicted)
    }

    fn shaped(
        fitted: &Fitted,
        arguments: &Value,
        template: &Observation,
        shape: &Value,
        from_neighbour: Option<f64>,
    ) -> Predicted {
        let mut fields = Vec::new();
        let mut path = String::new();
        let predicted = rebuild(shape, &mut path, &mut |path, recorded| {
            let (value, confidence, determined) = match fitted
                .rules
                .get(path)
                .and_then(|(rule, c)| Some((rule.apply(arguments)?, *c)))
            {
                Some((value, c)) => (like(value, recorded), c, true),
                None => (recorded.clone(), from_neighbour.unwrap_or(0.0), false),
            };
            fields.push(Field {
                path: path.to_string(),
                value: value.clone(),
                confidence,
                determined,
            });
            value
        });
        let weakest = fields.iter().map(|f| f.confidence).fold(1.0, f64::min);
        let how = if fields.iter().all(|f| f.determined) {
            "rules"
        } else {
            "neighbour"
        };
        let text = if template.text.contains('\n') {
            serde_json::to_string_pretty(&predicted)
        } else {
            serde_json::to_string(&predicted)
        }
        .unwrap_or_default();
        let structured = template.structured.is_some().then(|| Box::new(predicted));
        Predicted {
            observation: Observation {
                text,
                structured,
                ..Default::default()
            },
            confidence: weakest,
            how,
            fields,
            change: None,
        }
    }
}

/// `value` with each leaf replaced by `leaf(path, recorded leaf)`; paths as
/// `fidelity::leaves` writes them.
pub(super) fn rebuild(
    value: &Value,
    path: &mut String,
    leaf: &mut dyn FnMut(&str, &Value) -> Value,
) -> Value {
    let len = path.len();
    match value {
        Value::Object(map) if !map.is_empty() => Value::Object(
            map.iter()
                .map(|(k, child)| {
                    path.push('/');
                    path.push_str(k);
                    let v = rebuild(child, path, leaf);
                    path.truncate(len);
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) if !items.is_empty() => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, child)| {
                    path.push('/');
                    path.push_str(&i.to_string());
                    let v = rebuild(child, path, leaf);
                    path.truncate(len);
                    v
                })
                .collect(),
        ),
        other => leaf(if path.is_empty() { "/" } else { path }, other),
    }
}

impl WorldModel for TracesWorldModel {
    fn name(&self) -> String {
        "traces".into()
    }

    fn describe(&self) -> WorldModelInfo {
        super::describe(self.name(), self.store.details())
    }

    fn simulate<'a>(
        &'a self,
        req: SimRequest<'a>,
    ) -> BoxFuture<'a, Result<Simulation, SimFailure>> {
        Box::pin(async move {
            let start = Instant::now();
            let Some(predicted) = self.predict(&req.tool.name, req.arguments, req.state) else {
                // Nothing to go on is no prediction, as for memory.
                return Err(SimFailure::new(format!(
                    "traces world model: no recorded call of {} to predict from",
                    req.tool.name
                )));
            };
            let mut observation = predicted.observation;
            observation.cap_text(crate::mcp::server::MAX_RESULT_BYTES);
            let mut simulation = Simulation::new(
                observation,
                start.elapsed(),
                None,
                Confidence::new(predicted.confidence, predicted.how),
            );
            simulation.field_confidence = predicted
                .fields
                .into_iter()
                .map(|f| (f.path, f.confidence))
                .collect();
            // The same call's recorded change, replayed on the state it is given.
            simulation.predicted_state =
                super::memory::replayed(req.state, predicted.change.as_deref());
            Ok(simulation)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(v: Value) -> Observation {
        Observation {
            text: v.to_string(),
            structured: Some(Box::new(v)),
            ..Default::default()
        }
    }

    fn conversion(value: f64, from: &str, to: &str, converted: f64) -> (Value, Observation) {
        (
            json!({"value": value, "from_unit": from, "to_unit": to}),
            result(json!({
                "original_value": value, "original_unit": from,
                "converted_value": converted, "converted_unit": to,
                "conversion_type": "temperature"
            })),
        )
    }

    fn store(calls: &[(Value, Observation, u32)]) -> Arc<TransitionBuffer> {
        let mut b = TransitionBuffer::default();
        for (a, o, run) in calls {
            b.add_recorded("units:convert_temperature", a.clone(), o.clone(), *run);
        }
        Arc::new(b)
    }

    fn c_to_f(c: f64) -> f64 {
        c * 9.0 / 5.0 + 32.0
    }

    #[test]
    fn an_affine_field_copies_and_constants_are_predicted_for_values_never_recorded() {
        let calls: Vec<(Value, Observation, u32)> = [3.0, 17.5, -4.0, 40.0]
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let (a, o) = conversion(*c, "celsius", "fahrenheit", c_to_f(*c));
                (a, o, i as u32)
            })
            .collect();
        let wm = TracesWorldModel::new(store(&calls));
        let args = json!({"value": 100.0, "from_unit": "celsius", "to_unit": "fahrenheit"});
        let p = wm
            .predict("units:convert_temperature", &args, None)
            .unwrap();
        let got = p.observation.structured.unwrap();
        assert_eq!(got["converted_value"], json!(212.0));
        assert_eq!(got["original_value"], json!(100.0));
        assert_eq!(got["converted_unit"], "fahrenheit");
        assert_eq!(got["conversion_type"], "temperature");
        assert_eq!(p.how, "rules");
        // Four calls fit the affine map, two determine it: checked twice, (2+1)/(2+2).
        assert!((p.confidence - 0.75).abs() < 1e-12, "{}", p.confidence);
    }

    #[test]
    fn a_context_never_recorded_takes_the_nearest_call_and_says_so() {
        let (a, o) = conversion(10.0, "celsius", "fahrenheit", 50.0);
        let (b, q) = conversion(20.0, "celsius", "fahrenheit", 68.0);
        let wm = TracesWorldModel::new(store(&[(a, o, 0), (b, q, 1)]));
        let args = json!({"value": 10.0, "from_unit": "kelvin", "to_unit": "celsius"});
        let p = wm
            .predict("units:convert_temperature", &args, None)
            .unwrap();
        assert_eq!(p.how, "neighbour");
        let got = p.observation.structured.unwrap();
        // Copies hold across the tool's calls; the converted value is the neighbour's.
        assert_eq!(got["original_unit"], "kelvin");
        assert_eq!(got["converted_value"], json!(50.0));
        assert!(p.confidence < 0.7);
    }

    #[test]
    fn the_run_left_out_is_never_a_source() {
        let (a, o) = conversion(10.0, "celsius", "fahrenheit", 50.0);
        let wm = TracesWorldModel::new(store(&[(a.clone(), o, 0)]));
        let mut dir = std::env::temp_dir();
        dir.push("never-read");
        let excluded = TracesWorldModel {
            excluded: Some(0),
            ..wm.without(&dir)
        };
        assert!(
            excluded
                .predict("units:convert_temperature", &a, None)
                .is_none()
        );
        assert!(wm.predict("units:convert_temperature", &a, None).is_some());
    }

    #[test]
    fn a_context_whose_every_call_failed_predicts_its_error() {
        let bad = |v: f64, run| {
            (
                json!({"value": v, "from_unit": "celsius", "to_unit": "parsec"}),
                Observation::of_text("Unsupported unit: parsec", true),
                run,
            )
        };
        let wm = TracesWorldModel::new(store(&[bad(1.0, 0), bad(2.0, 1), bad(3.0, 2)]));
        let p = wm
            .predict(
                "units:convert_temperature",
                &json!({"value": 9.0, "from_unit": "celsius", "to_unit": "parsec"}),
                None,
            )
            .unwrap();
        assert!(p.observation.is_error);
        assert_eq!(p.how, "rules");
        assert!((p.confidence - 0.75).abs() < 1e-12);
    }

    #[test]
    fn a_text_template_with_argument_slots_is_filled_in() {
        let mut b = TransitionBuffer::default();
        for (run, city) in ["Paris", "Lyon", "Nice"].iter().enumerate() {
            b.add_recorded(
                "w:weather",
                json!({"city": city}),
                Observation::of_text(format!("Weather in {city}: sunny"), false),
                run as u32,
            );
        }
        let wm = TracesWorldModel::new(Arc::new(b));
        let p = wm
            .predict("w:weather", &json!({"city": "Brest"}), None)
            .unwrap();
        assert_eq!(p.observation.text, "Weather in Brest: sunny");
        assert_eq!(p.how, "rules");
    }

    #[test]
    fn similarity_weighs_numbers_by_how_far_apart_they_are() {
        let a = json!({"value": 10.0, "unit": "m"});
        assert_eq!(similarity(&a, &a), 1.0);
        assert!((similarity(&a, &json!({"value": 30.0, "unit": "m"})) - 0.75).abs() < 1e-12);
        assert!((similarity(&a, &json!({"value": 10.0, "unit": "ft"})) - 0.5).abs() < 1e-12);
    }

    /// The same call recorded in two states answers as it did in the state it is asked in.
    #[test]
    fn the_same_call_is_recalled_in_its_own_state() {
        let mut b = TransitionBuffer::default();
        let (empty, full) = (json!({"item/a": null}), json!({"item/a": {"qty": 2}}));
        let call = json!({"name": "a"});
        b.add_in_state(
            "kv:get",
            call.clone(),
            Observation::of_text("none", false),
            0,
            &empty,
        );
        b.add_in_state(
            "kv:get",
            call.clone(),
            Observation::of_text("qty 2", false),
            1,
            &full,
        );
        let wm = TracesWorldModel::new(Arc::new(b));
        let text = |state: Option<&Value>| {
            wm.predict("kv:get", &call, state)
                .map(|p| p.observation.text)
                .unwrap_or_default()
        };
        assert_eq!(text(Some(&empty)), "none");
        assert_eq!(text(Some(&full)), "qty 2");
    }
}
