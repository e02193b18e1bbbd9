//! The tool catalogue recorded in a header, with each input schema compiled once.

use std::collections::HashMap;

use serde_json::Value;

use super::event::ToolInfo;

/// Tools by namespaced name, with compiled JSON Schemas for argument checks.
#[derive(Default)]
pub struct ToolCatalog {
    tools: HashMap<String, Option<jsonschema::Validator>>,
}

impl std::fmt::Debug for ToolCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCatalog")
            .field("tools", &self.tools.len())
            .finish()
    }
}

/// What a check of one call found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallCheck {
    /// The tool exists in the catalogue.
    pub valid_name: bool,
    /// The arguments validate against the tool's schema (false for an unknown tool).
    pub schema_ok: bool,
}

impl ToolCatalog {
    /// Compiles every tool's schema. A schema that does not compile accepts anything:
    /// a broken schema is the server's problem, not the agent's.
    pub fn new(tools: &[ToolInfo]) -> Self {
        let tools = tools
            .iter()
            .map(|t| {
                let validator = if t.input_schema.is_object() {
                    jsonschema::validator_for(&t.input_schema).ok()
                } else {
                    None
                };
                (t.name.clone(), validator)
            })
            .collect();
        Self { tools }
    }

    /// Checks a call's name and arguments.
    pub fn check(&self, tool: &str, arguments: &Value) -> CallCheck {
        match self.tools.get(tool) {
            None => CallCheck {
                valid_name: false,
                schema_ok: false,
            },
            Some(None) => CallCheck {
                valid_name: true,
                schema_ok: true,
            },
            Some(Some(validator)) => {
                // MCP sends no arguments as an empty object.
                let empty = Value::Object(Default::default());
                let args = if arguments.is_null() {
                    &empty
                } else {
                    arguments
                };
                CallCheck {
                    valid_name: true,
                    schema_ok: validator.is_valid(args),
                }
            }
        }
    }

    /// The first schema error for a call, for messages to the planner.
    pub fn explain(&self, tool: &str, arguments: &Value) -> Option<String> {
        match self.tools.get(tool) {
            None => Some(format!("unknown tool \"{tool}\"")),
            Some(None) => None,
            Some(Some(validator)) => validator
                .iter_errors(arguments)
                .next()
                .map(|e| format!("{e} at {}", e.instance_path())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn catalog() -> ToolCatalog {
        ToolCatalog::new(&[ToolInfo {
            name: "time:get_current_time".into(),
            description: String::new(),
            input_schema: json!({"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}),
        }])
    }

    #[test]
    fn checks_names_and_schemas() {
        let c = catalog();
        assert_eq!(
            c.check("time:get_current_time", &json!({"timezone": "UTC"})),
            CallCheck {
                valid_name: true,
                schema_ok: true
            }
        );
        assert_eq!(
            c.check("time:get_current_time", &json!({"tz": 1})),
            CallCheck {
                valid_name: true,
                schema_ok: false
            }
        );
        assert_eq!(
            c.check("get_current_time", &json!({})),
            CallCheck {
                valid_name: false,
                schema_ok: false
            }
        );
        assert!(
            c.explain("time:get_current_time", &json!({}))
                .unwrap()
                .contains("timezone")
        );
    }
}
