//! An ensemble: several named world models asked the same call at once. Each member's
//! prediction (or error) is kept beside the one the ensemble answers with, picked by a rule;
//! its confidence is how far the members agree (docs/world-models.md, "Ensembles").
//!
//! Agreement is the mean, over pairs of members that answered, of their fidelity to each other
//! by the one fidelity function (`metrics::fidelity::compare`, taken both ways and averaged,
//! since it judges its first argument as the prediction). One member answering alone gives no
//! agreement, so no confidence: nothing invents a number.
//!
//! # Ensembles
//!
//! An `ensemble` asks each of its members the same call at once (it takes as long as its slowest
//! member, and spends what they all spend: every member's LLM calls are the run's, counted against
//! its token budget). It answers with one member's prediction, chosen by `pick`:
//!
//! - `closest` (the default): the prediction with the highest mean fidelity to the other members'
//!   (by the one fidelity function, taken both ways and averaged, since it judges its first argument
//!   as the prediction); ties go to the member listed first;
//! - `most_confident`: the prediction its member is surest of (one without a confidence counts as
//!   least sure);
//! - `first`: the first member, in `members` order, that answered;
//! - `per_field`: the answer of the member surest of it, with each field (JSON leaf) taken from
//!   the member surest of that field: its confidence in the field when it gives one (`traces`
//!   does, rule by rule), else in its whole answer. So `traces` and `llm` together keep what the
//!   recordings determine and take the rest from the model.
//!
//! Its confidence is the members' **agreement**: the mean, over pairs of members that answered, of
//! that same two-way fidelity (`confidence_source` `agreement`). One member answering alone gives no
//! agreement, so no confidence. A member that fails is that member's error, recorded beside the
//! others; the ensemble answers from the rest, and fails (an `error`, as any world model's failure)
//! only when every member does. Every member's prediction or error is recorded in `members` of
//! `node_simulated` and `call_simulated` (docs/trajectory-format.md), and the node inspector shows
//! them side by side, each with its own confidence and its fidelity to the real result. In
//! `wm-eval`, an ensemble with a `memory` member leaves each run out of that member as memory alone
//! is.

use std::sync::Arc;
use std::time::Instant;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{Confidence, MemberPrediction, SimFailure, SimRequest, Simulation, WorldModel};
use crate::metrics::fidelity;
use cosmos_trajectory::event::{Observation, WorldModelInfo};

/// How an ensemble picks its answer among its members' predictions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pick {
    /// The prediction closest to the others (highest mean fidelity to them): the medoid.
    #[default]
    Closest,
    /// The prediction its member is surest of (one with no confidence counts as least sure).
    MostConfident,
    /// The first member, in `members` order, that answered.
    First,
    /// Field by field: the surest member's answer, each JSON leaf taken from the member surest
    /// of that leaf (its confidence in the leaf when it gives one, as `traces` does, else in
    /// the whole answer).
    PerField,
}

impl Pick {
    /// Every rule, by its name in a `pick = "…"` key.
    pub const ALL: [(&'static str, Pick); 4] = [
        ("closest", Pick::Closest),
        ("most_confident", Pick::MostConfident),
        ("first", Pick::First),
        ("per_field", Pick::PerField),
    ];

    /// The rule named `name`.
    pub fn named(name: &str) -> Option<Pick> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, p)| *p)
    }

    /// Its name.
    pub fn as_str(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, p)| *p == self)
            .map_or("closest", |(n, _)| n)
    }
}

/// Several world models as one.
pub struct EnsembleWorldModel {
    name: String,
    members: Vec<Arc<dyn WorldModel>>,
    pick: Pick,
}

impl EnsembleWorldModel {
    /// An ensemble of `members` (at least two) answering by `pick`.
    pub fn new(name: String, members: Vec<Arc<dyn WorldModel>>, pick: Pick) -> Self {
        Self {
            name,
            members,
            pick,
        }
    }
}

/// How closely two predictions agree: their fidelity to each other, both ways, averaged.
fn agreement_of(a: &Observation, b: &Observation) -> f64 {
    (fidelity::compare(a, b).score + fidelity::compare(b, a).score) / 2.0
}

/// The members' agreement (mean pairwise agreement of `answers`) and, for each answer, its
/// mean agreement with the others; `None` with fewer than two answers.
fn agreement(answers: &[&Observation]) -> Option<(f64, Vec<f64>)> {
    if answers.len() < 2 {
        return None;
    }
    let n = answers.len();
    let mut with_others = vec![0.0; n];
    let mut total = 0.0;
    for i in 0..n {
        for j in i + 1..n {
            let a = agreement_of(answers[i], answers[j]);
            with_others[i] += a;
            with_others[j] += a;
            total += a;
        }
    }
    let pairs = (n * (n - 1) / 2) as f64;
    let others = (n - 1) as f64;
    Some((
        total / pairs,
        with_others.into_iter().map(|s| s / others).collect(),
    ))
}

/// The index (into `answers`) `pick` chooses; ties go to the earlier member.
fn chosen(pick: Pick, answers: &[&MemberPrediction], closeness: Option<&[f64]>) -> usize {
    let best_by = |score: &dyn Fn(usize) -> f64| {
        (0..answers.len()).fold(0, |best, i| if score(i) > score(best) { i } else { best })
    };
    match (pick, closeness) {
        (Pick::First, _) | (Pick::Closest, None) => 0,
        (Pick::Closest, Some(closeness)) => best_by(&|i| closeness[i]),
        (Pick::MostConfident | Pick::PerField, _) => {
            best_by(&|i| answers[i].confidence.unwrap_or(-1.0))
        }
    }
}

/// `answers[base]` with each leaf of its JSON taken from the answer surest of that leaf
/// (`sureness(i, path)`), among the answers that are no error and hold the leaf; ties go to
/// the earlier member. An error or a text answer is kept as it is.
fn per_field(
    answers: &[&Observation],
    base: usize,
    sureness: &dyn Fn(usize, &str) -> f64,
) -> Observation {
    let chosen = answers[base];
    let Some(shape) = (!chosen.is_error)
        .then(|| fidelity::as_json(chosen))
        .flatten()
    else {
        return chosen.clone();
    };
    let values: Vec<Option<Value>> = answers
        .iter()
        .map(|a| {
            (!a.is_error)
                .then(|| fidelity::as_json(a).map(|v| v.into_owned()))
                .flatten()
        })
        .collect();
    let leaves: Vec<Option<std::collections::BTreeMap<String, &Value>>> = values
        .iter()
        .map(|v| v.as_ref().map(fidelity::leaves))
        .collect();
    let mut path = String::new();
    let merged = super::traces::rebuild(&shape, &mut path, &mut |path, own| {
        let held = |i: usize| leaves[i].as_ref().and_then(|l| l.get(path).copied());
        let best = (0..answers.len())
            .filter(|i| held(*i).is_some())
            .fold(base, |best, i| {
                if sureness(i, path) > sureness(best, path) {
                    i
                } else {
                    best
                }
            });
        held(best).unwrap_or(own).clone()
    });
    Observation {
        text: serde_json::to_string(&merged).unwrap_or_default(),
        structured: chosen.structured.is_some().then(|| Box::new(merged)),
        ..Default::default()
    }
}

impl WorldModel for EnsembleWorldModel {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn describe(&self) -> WorldModelInfo {
        let members: Vec<_> = self
            .members
            .iter()
            .map(|m| serde_json::to_value(m.describe()).unwrap_or_default())
            .collect();
        super::describe(
            self.name(),
            [
                ("kind", json!("ensemble")),
                ("pick", json!(self.pick.as_str())),
                ("members", json!(members)),
            ],
        )
    }

    fn simulate<'a>(
        &'a self,
        request: SimRequest<'a>,
    ) -> BoxFuture<'a, Result<Simulation, SimFailure>> {
        Box::pin(async move {
            let start = Instant::now();
            // All at once: the ensemble takes as long as its slowest member, not their sum.
            let results =
                futures::future::join_all(self.members.iter().map(|m| m.simulate(request))).await;
            let mut llm = Vec::new();
            let mut members = Vec::with_capacity(results.len());
            // Each member's predicted state and field confidences, beside `members`.
            let mut states = Vec::with_capacity(results.len());
            let mut field_sureness = Vec::with_capacity(results.len());
            for (model, result) in self.members.iter().zip(results) {
                states.push(result.as_ref().ok().and_then(|s| s.predicted_state.clone()));
                field_sureness.push(
                    result
                        .as_ref()
                        .map(|s| s.field_confidence.clone())
                        .unwrap_or_default(),
                );
                let member = match result {
                    Ok(sim) => {
                        llm.extend(sim.llm);
                        MemberPrediction {
                            world_model: model.name(),
                            observation: Some(sim.observation),
                            error: None,
                            latency_ms: sim.latency.as_millis() as u64,
                            confidence: sim.confidence.as_ref().map(|c| c.value),
                            confidence_source: sim.confidence.map(|c| c.source),
                        }
                    }
                    Err(failure) => {
                        llm.extend(failure.llm);
                        MemberPrediction {
                            world_model: model.name(),
                            observation: None,
                            error: Some(failure.message),
                            latency_ms: 0,
                            confidence: None,
                            confidence_source: None,
                        }
                    }
                };
                members.push(member);
            }
            let answered: Vec<&MemberPrediction> =
                members.iter().filter(|m| m.observation.is_some()).collect();
            if answered.is_empty() {
                let why: Vec<String> = members
                    .iter()
                    .map(|m| format!("{}: {}", m.world_model, m.error.as_deref().unwrap_or("")))
                    .collect();
                return Err(SimFailure {
                    message: format!("every member of {} failed ({})", self.name, why.join("; ")),
                    llm,
                });
            }
            let answers: Vec<&Observation> = answered
                .iter()
                .filter_map(|m| m.observation.as_ref())
                .collect();
            let answered_states: Vec<Option<Value>> = members
                .iter()
                .zip(states)
                .filter(|(m, _)| m.observation.is_some())
                .map(|(_, s)| s)
                .collect();
            let agreed = agreement(&answers);
            let picked = chosen(
                self.pick,
                &answered,
                agreed.as_ref().map(|(_, c)| c.as_slice()),
            );
            let observation = if self.pick == Pick::PerField {
                let fields: Vec<&Vec<(String, f64)>> = members
                    .iter()
                    .zip(&field_sureness)
                    .filter(|(m, _)| m.observation.is_some())
                    .map(|(_, f)| f)
                    .collect();
                let sureness = |i: usize, path: &str| {
                    fields[i]
                        .iter()
                        .find(|(p, _)| p == path)
                        .map(|(_, c)| *c)
                        .or(answered[i].confidence)
                        .unwrap_or(-1.0)
                };
                per_field(&answers, picked, &sureness)
            } else {
                answers[picked].clone()
            };
            Ok(Simulation {
                observation,
                latency: start.elapsed(),
                llm,
                confidence: agreed.and_then(|(mean, _)| Confidence::new(mean, "agreement")),
                members,
                predicted_state: answered_states[picked].clone(),
                field_confidence: Vec::new(),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str) -> Observation {
        Observation {
            text: t.into(),
            ..Default::default()
        }
    }

    fn member(
        name: &str,
        text_or_error: Result<&str, &str>,
        confidence: Option<f64>,
    ) -> MemberPrediction {
        MemberPrediction {
            world_model: name.into(),
            observation: text_or_error.ok().map(text),
            error: text_or_error.err().map(str::to_string),
            latency_ms: 0,
            confidence,
            confidence_source: None,
        }
    }

    #[test]
    fn agreement_is_the_mean_pairwise_fidelity() {
        let (a, b, c) = (text("sunny 20 C"), text("sunny 20 C"), text("rain"));
        // Two identical answers agree fully.
        assert_eq!(agreement(&[&a, &b]).unwrap().0, 1.0);
        // a–b 1, a–c 0, b–c 0: mean 1/3; c is the furthest from the others.
        let (mean, closeness) = agreement(&[&a, &b, &c]).unwrap();
        assert!((mean - 1.0 / 3.0).abs() < 1e-12, "{mean}");
        assert_eq!(closeness, vec![0.5, 0.5, 0.0]);
        // One answer alone has no agreement.
        assert!(agreement(&[&a]).is_none());
    }

    #[test]
    fn each_pick_rule_chooses_as_documented() {
        let members = [
            member("lone", Ok("rain"), Some(0.9)),
            member("x", Ok("sunny 20 C"), None),
            member("y", Ok("sunny 20 C"), Some(0.4)),
        ];
        let answered: Vec<&MemberPrediction> = members.iter().collect();
        let answers: Vec<&Observation> = members
            .iter()
            .map(|m| m.observation.as_ref().unwrap())
            .collect();
        let (_, closeness) = agreement(&answers).unwrap();
        assert_eq!(chosen(Pick::Closest, &answered, Some(&closeness)), 1);
        assert_eq!(chosen(Pick::MostConfident, &answered, Some(&closeness)), 0);
        assert_eq!(chosen(Pick::First, &answered, Some(&closeness)), 0);
        for (name, pick) in Pick::ALL {
            assert_eq!(Pick::named(name), Some(pick));
            assert_eq!(pick.as_str(), name);
        }
        assert_eq!(Pick::named("vote"), None);
    }

    /// A member that always answers the same, as sure as it says (a test's own world model).
    struct Says(Observation, f64);

    impl WorldModel for Says {
        fn name(&self) -> String {
            "says".into()
        }
        fn describe(&self) -> WorldModelInfo {
            super::super::describe(self.name(), [])
        }
        fn simulate<'a>(
            &'a self,
            _: SimRequest<'a>,
        ) -> BoxFuture<'a, Result<Simulation, SimFailure>> {
            let sim = Simulation::new(
                self.0.clone(),
                std::time::Duration::ZERO,
                None,
                Confidence::new(self.1, "self"),
            );
            Box::pin(async move { Ok(sim) })
        }
    }

    /// Per field, `traces`' rule-given fields beat a surer-overall member, and that member's
    /// answer fills the fields the recordings do not determine.
    #[tokio::test]
    async fn per_field_takes_each_field_from_the_member_surest_of_it() {
        use super::super::memory::TransitionBuffer;
        use super::super::traces::TracesWorldModel;
        let mut store = TransitionBuffer::default();
        for (run, v) in [1.0, 2.0, 3.0, 4.0, 5.0].iter().enumerate() {
            let result = json!({"unit": "m", "doubled": v * 2.0, "note": format!("n{run}")});
            store.add_recorded(
                "s:f",
                json!({"value": v, "unit": "m"}),
                Observation {
                    text: result.to_string(),
                    structured: Some(Box::new(result)),
                    ..Default::default()
                },
                run as u32,
            );
        }
        let traces: Arc<dyn WorldModel> = Arc::new(TracesWorldModel::new(Arc::new(store)));
        // The model's answer, as sure of the whole as it says.
        let model = |sure: f64| -> Arc<dyn WorldModel> {
            let answer = json!({"unit": "m", "doubled": 99.0, "note": "from the model"});
            Arc::new(Says(
                Observation {
                    text: answer.to_string(),
                    structured: Some(Box::new(answer)),
                    ..Default::default()
                },
                sure,
            ))
        };
        let tool = cosmos_trajectory::event::ToolInfo {
            name: "s:f".into(),
            ..Default::default()
        };
        let arguments = json!({"value": 10.0, "unit": "m"});
        let answer = |members: Vec<Arc<dyn WorldModel>>| {
            let ensemble = EnsembleWorldModel::new("both".into(), members, Pick::PerField);
            let request = SimRequest {
                tool: &tool,
                arguments: &arguments,
                user_request: "",
                history: &[],
                state: None,
            };
            async move { ensemble.simulate(request).await.unwrap() }
        };
        let got = answer(vec![traces.clone(), model(0.95)])
            .await
            .observation
            .structured
            .unwrap();
        // The doubling is a rule checked four times (5/6 sure) against the model's 0.95 for
        // its whole answer: the model is surer, so its 99 stands; the note, which no rule
        // gives (the neighbour's, 0.1 + 0.6 × similarity), is the model's too.
        assert_eq!(got["note"], "from the model");
        assert_eq!(got["doubled"], json!(99.0));
        // Less sure of its whole answer (0.7) than the rule is of the doubling, the model
        // loses that field, and keeps the note (the neighbour's is 0.6 sure).
        let got = answer(vec![traces, model(0.7)])
            .await
            .observation
            .structured
            .unwrap();
        assert_eq!(got["doubled"], json!(20.0), "{got}");
        assert_eq!(got["note"], "from the model", "{got}");
        assert_eq!(got["unit"], "m");
    }
}
