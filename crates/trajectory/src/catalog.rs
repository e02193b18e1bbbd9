//! The tool catalogue recorded in a header. A tool's input schema is compiled the first time a
//! call of it is checked, and once per distinct schema in the whole process: reading hundreds
//! of runs of the same servers compiles each schema once, not once per tool per file.
//!
//! The header's tool catalogue; a schema is compiled when a call of its tool is first
//! checked, once per distinct schema in the process (a shared cache keyed by the schema's text),
//! not per file.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

use super::event::ToolInfo;
use super::tool_schema::ToolSchema;

/// A compiled schema.
#[derive(Clone)]
enum Compiled {
    /// No schema object to check against: any arguments do.
    Absent,
    /// A schema that does not compile: the agent's validator lets any arguments through (a
    /// broken schema is the server's problem), but MCP-Bench's compliance check fails them.
    Broken,
    /// A schema to check against.
    Checked(Arc<jsonschema::Validator>),
}

/// One tool: its schema (shared with the header), compiled when first needed.
struct Entry {
    schema: ToolSchema,
    compiled: OnceLock<Compiled>,
}

impl Entry {
    fn compiled(&self) -> &Compiled {
        self.compiled.get_or_init(|| compile(&self.schema))
    }
}

/// Compiled schemas by their JSON text, shared by every catalogue of the process (at most
/// [`MAX_CACHED_SCHEMAS`]). A schema read from a file is looked up by its text as written, so
/// one seen before is not decoded.
fn compile(schema: &ToolSchema) -> Compiled {
    let key = schema.text();
    let cache = SCHEMA_CACHE.get_or_init(Default::default);
    if let Some(hit) = cache.lock().ok().and_then(|c| c.get(key.as_ref()).cloned()) {
        return hit;
    }
    // Compiled outside the lock: another thread may compile the same schema meanwhile, and
    // both results are the same.
    let value = schema.value();
    let compiled = if value.is_object() {
        match jsonschema::validator_for(value) {
            Ok(v) => Compiled::Checked(Arc::new(v)),
            Err(_) => Compiled::Broken,
        }
    } else {
        Compiled::Absent
    };
    if let Ok(mut c) = cache.lock() {
        // Bounded: a process that reads many folders of runs with ever new schemas starts
        // over rather than grow (a catalogue keeps its own compiled schemas meanwhile).
        if c.len() >= MAX_CACHED_SCHEMAS {
            c.clear();
        }
        c.insert(key.into_owned(), compiled.clone());
    }
    compiled
}

/// Most compiled schemas the process keeps for all catalogues.
const MAX_CACHED_SCHEMAS: usize = 4096;

/// The compiled schemas, by their text.
static SCHEMA_CACHE: OnceLock<Mutex<HashMap<String, Compiled>>> = OnceLock::new();

/// Tools by namespaced name, with their JSON Schemas for argument checks.
#[derive(Default)]
pub struct ToolCatalog {
    tools: HashMap<String, Entry>,
}

impl std::fmt::Debug for ToolCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCatalog")
            .field("tools", &self.tools.len())
            .finish()
    }
}

/// Catalogues are equal when they name the same tools with equal schemas.
impl PartialEq for ToolCatalog {
    fn eq(&self, other: &Self) -> bool {
        self.tools.len() == other.tools.len()
            && self.tools.iter().all(|(name, entry)| {
                other
                    .tools
                    .get(name)
                    .is_some_and(|o| o.schema == entry.schema)
            })
    }
}

/// What a check of one call found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallCheck {
    /// The tool exists in the catalogue.
    pub valid_name: bool,
    /// The arguments validate against the tool's schema (false for an unknown tool; true
    /// when the schema does not compile).
    pub schema_ok: bool,
    /// The tool's schema does not compile (MCP-Bench counts its calls as not compliant).
    pub schema_broken: bool,
}

impl ToolCatalog {
    /// The catalogue of `tools`. A schema that does not compile accepts anything: a broken
    /// schema is the server's problem, not the agent's.
    pub fn new(tools: &[ToolInfo]) -> Self {
        Self::of(
            tools
                .iter()
                .map(|t| (t.name.clone(), t.input_schema.clone())),
        )
    }

    /// The catalogue of tools given by name and input schema.
    pub fn of(tools: impl IntoIterator<Item = (String, ToolSchema)>) -> Self {
        let tools = tools
            .into_iter()
            .map(|(name, schema)| {
                (
                    name,
                    Entry {
                        schema,
                        compiled: OnceLock::new(),
                    },
                )
            })
            .collect();
        Self { tools }
    }

    /// Checks a call's name and arguments.
    pub fn check(&self, tool: &str, arguments: &Value) -> CallCheck {
        let unchecked = |schema_broken| CallCheck {
            valid_name: true,
            schema_ok: true,
            schema_broken,
        };
        match self.tools.get(tool).map(Entry::compiled) {
            None => CallCheck {
                valid_name: false,
                schema_ok: false,
                schema_broken: false,
            },
            Some(Compiled::Absent) => unchecked(false),
            Some(Compiled::Broken) => unchecked(true),
            Some(Compiled::Checked(validator)) => {
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
                    schema_broken: false,
                }
            }
        }
    }

    /// The first schema error for a call, for messages to the planner.
    pub fn explain(&self, tool: &str, arguments: &Value) -> Option<String> {
        match self.tools.get(tool).map(Entry::compiled) {
            None => Some(format!("unknown tool \"{tool}\"")),
            Some(Compiled::Absent | Compiled::Broken) => None,
            Some(Compiled::Checked(validator)) => validator
                .iter_errors(arguments)
                .next()
                .map(|e| format!("{e} at {}", e.instance_path())),
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_shared_schema_cache_stays_bounded() {
        for i in 0..MAX_CACHED_SCHEMAS + 10 {
            let schema = ToolSchema::new(json!({"type": "object", "title": format!("s{i}")}));
            compile(&schema);
        }
        let held = SCHEMA_CACHE.get().unwrap().lock().unwrap().len();
        assert!(held <= MAX_CACHED_SCHEMAS, "{held}");
    }

    use super::*;
    use serde_json::json;

    fn catalog() -> ToolCatalog {
        ToolCatalog::new(&[ToolInfo {
            name: "time:get_current_time".into(),
            description: String::new(),
            input_schema: ToolSchema::new(
                json!({"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}),
            ),
            ..Default::default()
        }])
    }

    #[test]
    fn checks_names_and_schemas() {
        let c = catalog();
        assert_eq!(
            c.check("time:get_current_time", &json!({"timezone": "UTC"})),
            CallCheck {
                valid_name: true,
                schema_ok: true,
                schema_broken: false,
            }
        );
        assert_eq!(
            c.check("time:get_current_time", &json!({"tz": 1})),
            CallCheck {
                valid_name: true,
                schema_ok: false,
                schema_broken: false,
            }
        );
        assert_eq!(
            c.check("get_current_time", &json!({})),
            CallCheck {
                valid_name: false,
                schema_ok: false,
                schema_broken: false,
            }
        );
        assert!(
            c.explain("time:get_current_time", &json!({}))
                .unwrap()
                .contains("timezone")
        );
    }
}
