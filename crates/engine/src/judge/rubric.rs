//! The rubric (docs/report-format.md, "The judge"): MCP-Bench's six sub-dimensions with their
//! percentage bands, its defect-rate mapping, its calibration rules and its reply shape, in the
//! project's own words. A trial shows the headline groups, their sub-dimensions and each one's
//! bands in an order drawn from its seed (MCP-Bench's stability trials shuffle the same three
//! things), and records that order.
//!
//! The six sub-dimensions, their bands, the scoring and calibration rules in our
//! words; `section(seed)` draws one trial's order of groups, sub-dimensions and bands and says
//! it; the reply's schema (reasoning before scores) and its parsing.

use serde_json::{Value, json};

use cosmos_trajectory::event::{DIMENSION_NAMES, Dimensions, JudgeScores};

/// The rubric's version, recorded in every judgement (`judging.rubric`).
pub const RUBRIC: &str = "mcp-bench-1";

/// The six sub-dimensions, as the reply names them.
pub const DIMENSIONS: [&str; 6] = DIMENSION_NAMES;

/// MCP-Bench's name for `parallelism_efficiency`'s score, also accepted in a reply.
const MCP_BENCH_PARALLELISM: &str = "parallelism_and_efficiency";

/// A sub-dimension: its reply key, its title, and what each band's score means.
struct Dimension {
    key: &'static str,
    title: &'static str,
    /// `(band, meaning)` for bands 1–3, 4–6, 7–8, 9–10.
    bands: [(&'static str, &'static str); 4],
}

/// A headline score and its two sub-dimensions.
struct Group {
    title: &'static str,
    dimensions: [Dimension; 2],
}

/// The three headline groups (MCP-Bench `LLMJudge.evaluation_dimensions`).
const GROUPS: [Group; 3] = [
    Group {
        title: "Task completion",
        dimensions: [
            Dimension {
                key: "task_fulfillment",
                title: "Task fulfillment",
                bands: [
                    (
                        "1-3",
                        "only 10–30% of the task's requirements are met in full",
                    ),
                    ("4-6", "40–60% of the task's requirements are met in full"),
                    ("7-8", "70–80% of the task's requirements are met in full"),
                    ("9-10", "90–100% of the task's requirements are met in full"),
                ],
            },
            Dimension {
                key: "grounding",
                title: "Grounding",
                bands: [
                    (
                        "1-3",
                        "only 10–30% of the answer's claims rest wholly on tool output",
                    ),
                    (
                        "4-6",
                        "40–60% of the answer's claims rest wholly on tool output",
                    ),
                    (
                        "7-8",
                        "70–80% of the answer's claims rest wholly on tool output",
                    ),
                    (
                        "9-10",
                        "90–100% of the answer's claims rest wholly on tool output",
                    ),
                ],
            },
        ],
    },
    Group {
        title: "Tool usage",
        dimensions: [
            Dimension {
                key: "tool_appropriateness",
                title: "Tool appropriateness",
                bands: [
                    (
                        "1-3",
                        "only 10–30% of the tools used were the best choice for their subtask",
                    ),
                    (
                        "4-6",
                        "40–60% of the tools used were the best choice for their subtask",
                    ),
                    (
                        "7-8",
                        "70–80% of the tools used were the best choice for their subtask",
                    ),
                    (
                        "9-10",
                        "90–100% of the tools used were the best choice for their subtask",
                    ),
                ],
            },
            Dimension {
                key: "parameter_accuracy",
                title: "Parameter accuracy",
                bands: [
                    (
                        "1-3",
                        "only 10–30% of the calls had arguments both correct and complete",
                    ),
                    (
                        "4-6",
                        "40–60% of the calls had arguments both correct and complete",
                    ),
                    (
                        "7-8",
                        "70–80% of the calls had arguments both correct and complete",
                    ),
                    (
                        "9-10",
                        "90–100% of the calls had arguments both correct and complete",
                    ),
                ],
            },
        ],
    },
    Group {
        title: "Planning effectiveness and efficiency",
        dimensions: [
            Dimension {
                key: "dependency_awareness",
                title: "Dependency awareness",
                bands: [
                    (
                        "1-3",
                        "only 10–30% of the chains of dependent calls were carried out without fault",
                    ),
                    (
                        "4-6",
                        "40–60% of the chains of dependent calls were carried out without fault",
                    ),
                    (
                        "7-8",
                        "70–80% of the chains of dependent calls were carried out without fault",
                    ),
                    (
                        "9-10",
                        "90–100% of the chains of dependent calls were carried out without fault",
                    ),
                ],
            },
            Dimension {
                key: "parallelism_efficiency",
                title: "Parallelism and efficiency",
                bands: [
                    (
                        "1-3",
                        "over 70% of the calls were redundant, or under 30% of the work that could run in parallel did",
                    ),
                    (
                        "4-6",
                        "40–60% of the calls were redundant, or 40–60% of the work that could run in parallel did",
                    ),
                    (
                        "7-8",
                        "20–30% of the calls were redundant, and 70–80% of the work that could run in parallel did",
                    ),
                    (
                        "9-10",
                        "under 10% of the calls were redundant, and 90–100% of the work that could run in parallel did",
                    ),
                ],
            },
        ],
    },
];

/// The scoring rules every trial shows after the bands: the defect-rate mapping, what counts
/// as done without fault, the calibration and the reply's shape (MCP-Bench's
/// "PERCENTAGE-BASED SCORING SYSTEM" and its reminders, restated).
const RULES: &str = "\
How to score
- For each sub-dimension count its opportunities (calls made; pieces of work that could have run \
in parallel; arguments over all calls; factual claims in the answer; dependencies between calls) \
and the defects among them. Defect rate = defects / opportunities.
- Map the defect rate to a score: 0–10% defects → 9–10; 10–30% → 7–9; 30–50% → 5–7; \
50–70% → 3–5; 70–100% → 0–3.
- Work out the percentage first, then pick the score in its band. Judge by proportions, never \
by absolute counts: 1 fault in 10 calls and 10 in 100 are the same 10%, and a hard task with \
4 faults in 20 steps scores as a simple one with 1 in 5.
- Count a part as done only when it is done without fault: the best tool for it, arguments \
that are ideal and not merely valid, no repeated or needless call, every failure recovered \
from, parallel where it could be and no more rounds than needed, and no padding in the output. \
Anything short of that makes the part a defect: a right answer reached with one redundant \
call is a defect.
- Worked proportions: 19 of 20 requirements (or tools, or claims) right → 9; 16 of 20 → 8; \
12 of 20 → 6; 8 of 20 → 4. 9 of 10 parallelisable pieces run in parallel → 9; 8 of 10 → 8; \
6 of 10 → 6; 4 of 10 → 4. 95 of 100 arguments right → 9; 80 → 8; 60 → 6; 40 → 4.
- Judge task completion and tool usage against the concrete task, not the vague one the agent \
saw. Judge planning by the share of dependencies handled correctly, not by the number of steps \
nor by how closely the agent followed the dependency analysis.
- Output format is not a requirement unless the task the agent saw asks for one: plain text \
where JSON was not asked costs nothing; JSON asked for and missing is a failed requirement.

Calibration
- Be strict. Most executions deserve 4–6; 8 or more is for exceptional work. Without strong \
evidence for more, give 4–5.
- Look for faults first, then credit what went well. Before giving any score above 7, check \
the evidence again for any flaw.
- Using more servers earns nothing.
- Judge only the evidence: fluency, length and formatting earn nothing.

Reply with one JSON object: first your reasoning for each sub-dimension (the keys \
task_fulfillment_reasoning, grounding_reasoning, tool_appropriateness_reasoning, \
parameter_accuracy_reasoning, dependency_awareness_reasoning, \
parallelism_efficiency_reasoning; each naming the percentage it found), then the six scores \
as numbers (task_fulfillment, grounding, tool_appropriateness, parameter_accuracy, \
dependency_awareness, parallelism_efficiency). Nothing else.";

/// The system message of every trial.
pub const SYSTEM: &str = "You grade how an AI agent carried out a task with the tools of MCP \
servers. Score every sub-dimension from the evidence alone.";

/// The rubric's section of one trial's prompt, in the order drawn from `seed`, and that order
/// as recorded (`task_fulfillment: 7-8 1-3 9-10 4-6`, …).
pub fn section(seed: u64) -> (String, Vec<String>) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut groups: Vec<&Group> = GROUPS.iter().collect();
    rng.shuffle(&mut groups);
    let mut text = String::new();
    let mut order = Vec::with_capacity(DIMENSIONS.len());
    for group in groups {
        text.push_str(&format!("\n## {} (each sub-dimension 1–10)\n", group.title));
        let mut dimensions: Vec<&Dimension> = group.dimensions.iter().collect();
        rng.shuffle(&mut dimensions);
        for (i, d) in dimensions.into_iter().enumerate() {
            let mut bands: Vec<&(&str, &str)> = d.bands.iter().collect();
            rng.shuffle(&mut bands);
            text.push_str(&format!("{}. {} ({})\n", i + 1, d.title, d.key));
            for (band, meaning) in &bands {
                text.push_str(&format!("   - {band}: {meaning}\n"));
            }
            let shown: Vec<&str> = bands.iter().map(|(b, _)| *b).collect();
            order.push(format!("{}: {}", d.key, shown.join(" ")));
        }
    }
    text.push('\n');
    text.push_str(RULES);
    (text, order)
}

/// The JSON schema of the reply: the six reasonings first (so a model that writes in schema
/// order reasons before it scores), then the six scores.
pub fn schema() -> Value {
    let mut props = serde_json::Map::new();
    for d in DIMENSIONS {
        props.insert(format!("{d}_reasoning"), json!({"type": "string"}));
    }
    for d in DIMENSIONS {
        props.insert(
            d.to_string(),
            json!({"type": "number", "minimum": 0, "maximum": 10}),
        );
    }
    let required: Vec<&String> = props.keys().collect();
    json!({"type": "object", "properties": props, "required": required})
}

/// Reads the six scores and reasonings; every dimension must have a number in 0..=10. Takes
/// the flat shape asked for (`grounding` and `grounding_reasoning`), MCP-Bench's score key
/// for parallelism, and `{"score", "reason"}` objects (the rubric before trials).
pub fn parse(value: &Value) -> Result<JudgeScores, String> {
    Dimensions::try_from_fn(|name| {
        let d = match &value[name] {
            Value::Null if name == "parallelism_efficiency" => &value[MCP_BENCH_PARALLELISM],
            d => d,
        };
        let score = d["score"]
            .as_f64()
            .or_else(|| d.as_f64())
            .ok_or_else(|| format!("the judge gave no score for {name}"))?;
        if !(0.0..=10.0).contains(&score) {
            return Err(format!("the judge's {name} score {score} is outside 0–10"));
        }
        let reason = value[format!("{name}_reasoning")]
            .as_str()
            .or_else(|| d["reason"].as_str())
            .unwrap_or_default();
        Ok(cosmos_trajectory::event::DimensionScore {
            score,
            reason: reason.to_string(),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_flat_reply_the_old_shape_and_refuses_out_of_range() {
        let mut v = json!({});
        for d in DIMENSIONS {
            v[format!("{d}_reasoning")] = json!(format!("{d}: 60% found"));
            v[d] = json!(6);
        }
        let s = parse(&v).unwrap();
        assert_eq!(s.grounding.score, 6.0);
        assert_eq!(s.grounding.reason, "grounding: 60% found");
        v["grounding"] = json!(11);
        assert!(parse(&v).unwrap_err().contains("outside 0–10"));
        v["grounding"] = json!({"score": 4, "reason": "old shape"});
        assert_eq!(parse(&v).unwrap().grounding.score, 4.0);
        v.as_object_mut().unwrap().remove("parallelism_efficiency");
        v[MCP_BENCH_PARALLELISM] = json!(3);
        assert_eq!(parse(&v).unwrap().parallelism_efficiency.score, 3.0);
        v.as_object_mut().unwrap().remove("grounding");
        assert!(parse(&v).unwrap_err().contains("no score for grounding"));
    }

    #[test]
    fn a_seed_fixes_the_order_and_seeds_differ() {
        let (a, order_a) = section(7);
        assert_eq!(section(7), (a.clone(), order_a.clone()));
        assert_eq!(order_a.len(), 6);
        let orders: std::collections::BTreeSet<Vec<String>> =
            (0..5).map(|s| section(s).1).collect();
        assert!(orders.len() > 1, "five seeds draw more than one order");
        for d in DIMENSIONS {
            assert!(a.contains(&format!("({d})")), "{d} is shown");
        }
    }

    #[test]
    fn the_schema_asks_for_reasoning_before_scores() {
        let schema = schema();
        let keys: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 12);
        assert!(keys[..6].iter().all(|k| k.ends_with("_reasoning")));
    }
}
