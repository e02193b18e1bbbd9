//! The planner's decision schema, checked against real tool schemas (fixtures/tool-schemas.json):
//! a JSON-Schema validator accepts it, and every decision it admits (random instances drawn
//! from the schema itself) parses to a finish or to a call of a real tool whose arguments that
//! tool's own schema accepts. This is what a constrained decoder that enforces the schema can
//! then only produce.

use cosmos_engine::agent::{decision_schema, parse_decision};
use cosmos_trajectory::catalog::ToolCatalog;
use cosmos_trajectory::event::{Action, ToolInfo};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Map, Value, json};

fn tools() -> Vec<ToolInfo> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tool-schemas.json"
    );
    let file: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    serde_json::from_value(file["tools"].clone()).unwrap()
}

/// Values an absent type admits.
fn any_simple() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-100i64..100).prop_map(|n| json!(n)),
        "[a-z]{0,6}".prop_map(Value::String),
    ]
    .boxed()
}

/// Random instances of `schema`, for the keywords the decision schema keeps.
fn instances(schema: &Value) -> BoxedStrategy<Value> {
    let Value::Object(s) = schema else {
        return any_simple();
    };
    if let Some(Value::Array(branches)) = s.get("anyOf") {
        let options: Vec<BoxedStrategy<Value>> = branches.iter().map(instances).collect();
        return proptest::strategy::Union::new(options).boxed();
    }
    if let Some(c) = s.get("const") {
        return Just(c.clone()).boxed();
    }
    if let Some(Value::Array(values)) = s.get("enum") {
        return proptest::sample::select(values.clone())
            .prop_map(|v| v)
            .boxed();
    }
    match s.get("type") {
        Some(Value::Array(types)) => {
            let options: Vec<BoxedStrategy<Value>> = types
                .iter()
                .map(|t| {
                    let mut one = s.clone();
                    one.insert("type".into(), t.clone());
                    instances(&Value::Object(one))
                })
                .collect();
            proptest::strategy::Union::new(options).boxed()
        }
        Some(Value::String(t)) => typed(t, s),
        _ if s.contains_key("properties") => typed("object", s),
        _ => any_simple(),
    }
}

fn typed(t: &str, s: &Map<String, Value>) -> BoxedStrategy<Value> {
    let num = |key: &str| s.get(key).and_then(Value::as_f64);
    let count = |key: &str| s.get(key).and_then(Value::as_u64).map(|n| n as usize);
    match t {
        "null" => Just(Value::Null).boxed(),
        "boolean" => any::<bool>().prop_map(Value::Bool).boxed(),
        "integer" => {
            let lo = num("minimum").unwrap_or(-1000.0) as i64;
            let hi = num("maximum").unwrap_or(1000.0) as i64;
            (lo..=hi).prop_map(|n| json!(n)).boxed()
        }
        "number" => {
            let lo = num("minimum").unwrap_or(-1000.0);
            let hi = num("maximum").unwrap_or(1000.0);
            (lo..=hi).prop_map(|x| json!(x)).boxed()
        }
        "string" => {
            if let Some(pattern) = s.get("pattern").and_then(Value::as_str) {
                let bare = pattern.trim_start_matches('^').trim_end_matches('$');
                return proptest::string::string_regex(bare)
                    .expect("a pattern proptest can generate")
                    .prop_map(Value::String)
                    .boxed();
            }
            let lo = count("minLength").unwrap_or(0);
            let hi = count("maxLength").unwrap_or(lo + 12).max(lo);
            proptest::string::string_regex(&format!("[a-zA-Z0-9 ]{{{lo},{hi}}}"))
                .unwrap()
                .prop_map(Value::String)
                .boxed()
        }
        "array" => {
            let lo = count("minItems").unwrap_or(0);
            let hi = count("maxItems").unwrap_or(lo + 3).max(lo);
            let item = s.get("items").map_or_else(any_simple, instances);
            proptest::collection::vec(item, lo..=hi)
                .prop_map(Value::Array)
                .boxed()
        }
        "object" => {
            let required: Vec<&str> = s
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let fields: Vec<BoxedStrategy<Option<(String, Value)>>> = s
                .get("properties")
                .and_then(Value::as_object)
                .map(|props| {
                    props
                        .iter()
                        .map(|(name, p)| {
                            let name = name.clone();
                            let value = instances(p);
                            if required.contains(&name.as_str()) {
                                value.prop_map(move |v| Some((name.clone(), v))).boxed()
                            } else {
                                proptest::option::of(value.prop_map(move |v| (name.clone(), v)))
                                    .boxed()
                            }
                        })
                        .collect()
                })
                .unwrap_or_default();
            fields
                .prop_map(|fields| Value::Object(fields.into_iter().flatten().collect()))
                .boxed()
        }
        _ => any_simple(),
    }
}

#[test]
fn the_decision_schema_compiles_and_every_decision_it_admits_is_a_valid_call() {
    let tools = tools();
    let schema = decision_schema(&tools);
    let validator = jsonschema::validator_for(&schema).expect("a JSON-Schema validator accepts it");
    let catalog = ToolCatalog::new(&tools);
    let mut runner = TestRunner::new(Config {
        cases: 2_000,
        ..Config::default()
    });
    let tools_called = std::cell::RefCell::new(std::collections::BTreeSet::new());
    runner
        .run(&instances(&schema), |decision| {
            // The generator draws from the schema: the validator must agree.
            prop_assert!(validator.is_valid(&decision), "{decision}");
            match parse_decision(&decision) {
                Ok(Action::ToolCall { tool, arguments }) => {
                    let check = catalog.check(&tool, &arguments);
                    prop_assert!(check.valid_name, "{tool}");
                    prop_assert!(
                        check.schema_ok,
                        "{tool} {arguments}: {:?}",
                        catalog.explain(&tool, &arguments)
                    );
                    tools_called.borrow_mut().insert(tool);
                }
                Ok(Action::Finish { answer }) => prop_assert!(answer.is_some()),
                Err(rejection) => prop_assert!(false, "{decision} rejected: {rejection:?}"),
            }
            Ok(())
        })
        .unwrap();
    // Every tool's branch was drawn, so every tool's schema was exercised.
    let tools_called = tools_called.into_inner();
    assert!(tools_called.len() >= tools.len() / 2, "{tools_called:?}");
}

#[test]
fn decisions_the_schema_refuses_include_the_ones_that_broke_the_search() {
    let tools = tools();
    let validator = jsonschema::validator_for(&decision_schema(&tools)).unwrap();
    for refused in [
        json!({"action": "call"}),
        json!({"action": "call", "tool": "Time MCP:convert_time"}),
        json!({"action": "call", "tool": "Time MCP:convert_time", "arguments": {"time": "09:00"}}),
        json!({"action": "call", "tool": "nope:tool", "arguments": {}}),
        json!({"action": "finish"}),
        json!({"thought": "hm"}),
        json!({"action": "call", "tool": "synthetic:refs", "arguments": {"from": {"x": 9, "y": 0}, "to": {"x": 0, "y": 0}}}),
    ] {
        assert!(!validator.is_valid(&refused), "admitted {refused}");
    }
}

#[test]
fn in_tools_mode_each_function_carries_its_tools_own_schema_and_maps_back_to_it() {
    // With native tool calls the endpoint's decoder enforces the functions' parameters: they
    // must be the tools' own schemas (unchanged: a `$ref` resolves against them as root), and
    // every function name must lead back to exactly its tool.
    use cosmos_engine::agent::FunctionNames;
    let tools = tools();
    let names = FunctionNames::new(&tools).unwrap();
    let specs = names.specs(&tools);
    assert_eq!(specs.len(), tools.len());
    for (tool, spec) in tools.iter().zip(&specs) {
        assert_eq!(names.tool(&spec.function.name), Some(tool.name.as_str()));
        let own = tool.input_schema.value();
        if own.is_object() {
            assert_eq!(&spec.function.parameters, own, "{}", tool.name);
        }
        jsonschema::validator_for(&spec.function.parameters)
            .unwrap_or_else(|e| panic!("{}: {e}", tool.name));
    }
}
