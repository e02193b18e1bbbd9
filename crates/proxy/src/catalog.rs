//! The tools a proxy offers its client: the upstream catalogue (`server:tool`, as every
//! trajectory records it) under the names the client sees. One server's tools keep their own
//! names; several servers' are named as the tools mode names functions
//! (`agent::FunctionNames`: `server_tool`, only `[A-Za-z0-9_-]`, at most 64
//! characters), so no two can collide. Everything else of a tool passes through as the server
//! listed it: title, description, input and output schemas, annotations, icons and `_meta`.
//! (Not `execution`: rmcp's tool type has no such field, so it is lost on reading the list;
//! it only matters with tasks, which the proxy does not offer.)
//!
//! The offered tools: one server's under their own names, several servers' as the
//! tools mode names functions (`agent::FunctionNames`); schemas and annotations unchanged.

use std::collections::HashMap;

use anyhow::{Context, Result};
use rmcp::model::Tool;
use serde_json::{Value, json};

use cosmos_engine::agent::FunctionNames;
use cosmos_trajectory::event::{ToolInfo, own_tool_name};

/// The offered tools and the recorded tool each stands for.
#[derive(Debug, Clone)]
pub struct Catalog {
    tools: Vec<ToolInfo>,
    offered: Vec<Tool>,
    by_offered: HashMap<String, usize>,
}

impl Catalog {
    /// The catalogue of `tools` (namespaced) served by `servers` (their names, which may hold
    /// a `:` themselves). Two tools that would be offered under one name are refused.
    pub fn new(tools: Vec<ToolInfo>, servers: &[String]) -> Result<Self> {
        let own_names = servers.len() == 1;
        let functions = if own_names {
            FunctionNames::default()
        } else {
            FunctionNames::new(&tools)?
        };
        let mut offered = Vec::with_capacity(tools.len());
        let mut by_offered = HashMap::new();
        for (i, tool) in tools.iter().enumerate() {
            let name = if own_names {
                own_name(&tool.name, servers).to_string()
            } else {
                functions.function(&tool.name).to_string()
            };
            if by_offered.insert(name.clone(), i).is_some() {
                anyhow::bail!("two tools would both be offered as \"{name}\"");
            }
            offered.push(offered_tool(&name, tool)?);
        }
        Ok(Self {
            tools,
            offered,
            by_offered,
        })
    }

    /// The tools as the client lists them.
    pub fn offered(&self) -> &[Tool] {
        &self.offered
    }

    /// The recorded catalogue (`server:tool`), as a trajectory's header holds it.
    pub fn tools(&self) -> &[ToolInfo] {
        &self.tools
    }

    /// What a client is told of a call to a name nobody offers: the names it can call, as it
    /// sees them (a few; the list has them all).
    pub fn unknown(&self, name: &str) -> String {
        const NAMED: usize = 8;
        let mut names: Vec<&str> = self.offered.iter().map(|t| t.name.as_ref()).collect();
        names.sort_unstable();
        let more = names.len().saturating_sub(NAMED);
        names.truncate(NAMED);
        let mut said = format!(
            "unknown tool \"{name}\": this proxy offers {} tool(s) ({}",
            self.offered.len(),
            names.join(", ")
        );
        if more > 0 {
            said.push_str(&format!(", and {more} more in tools/list"));
        }
        said.push(')');
        said
    }

    /// The recorded tool an offered name stands for.
    pub fn resolve(&self, offered: &str) -> Option<&ToolInfo> {
        self.by_offered.get(offered).map(|&i| &self.tools[i])
    }
}

/// A tool's name without its server's prefix.
fn own_name<'a>(tool: &'a str, servers: &[String]) -> &'a str {
    servers
        .iter()
        .find_map(|s| own_tool_name(tool, s))
        .unwrap_or(tool)
}

/// The MCP tool offered as `name`: the recorded tool as its server listed it.
fn offered_tool(name: &str, tool: &ToolInfo) -> Result<Tool> {
    let input = match tool.input_schema.value() {
        Value::Object(_) => tool.input_schema.value().clone(),
        // MCP requires an object schema; a tool without one takes any object.
        _ => json!({"type": "object"}),
    };
    let mut wire = json!({
        "name": name,
        "description": tool.description,
        "inputSchema": input,
    });
    if let Some(output) = &tool.output_schema {
        wire["outputSchema"] = output.as_ref().clone();
    }
    if let Some(annotations) = &tool.annotations {
        wire["annotations"] = annotations.as_ref().clone();
    }
    if let Some(title) = &tool.title {
        wire["title"] = json!(title);
    }
    for (key, part) in [("icons", &tool.icons), ("_meta", &tool.meta)] {
        if let Some(part) = part {
            wire[key] = part.as_ref().clone();
        }
    }
    serde_json::from_value(wire)
        .with_context(|| format!("tool {} as MCP describes tools", tool.name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosmos_trajectory::event::ToolSchema;

    fn tool(name: &str) -> ToolInfo {
        ToolInfo {
            name: name.into(),
            description: format!("does {name}"),
            input_schema: ToolSchema::new(json!({"type": "object", "properties": {"x": {}}})),
            output_schema: Some(Box::new(json!({"type": "object"}))),
            annotations: Some(Box::new(json!({"readOnlyHint": true}))),
            ..Default::default()
        }
    }

    #[test]
    fn one_server_keeps_its_names_and_everything_else() {
        let c = Catalog::new(
            vec![tool("time:now"), tool("time:convert")],
            &["time".into()],
        )
        .unwrap();
        let wire = serde_json::to_value(&c.offered()[0]).unwrap();
        assert_eq!(
            wire,
            json!({"name": "now", "description": "does time:now",
                   "inputSchema": {"type": "object", "properties": {"x": {}}},
                   "outputSchema": {"type": "object"},
                   "annotations": {"readOnlyHint": true}})
        );
        assert_eq!(c.resolve("convert").unwrap().name, "time:convert");
        assert!(c.resolve("time:now").is_none());
    }

    #[test]
    fn several_servers_are_named_apart_and_collisions_refused() {
        let c = Catalog::new(
            vec![tool("Time MCP:now"), tool("units:now")],
            &["Time MCP".into(), "units".into()],
        )
        .unwrap();
        let names: Vec<&str> = c.offered().iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, ["Time_MCP_now", "units_now"]);
        assert_eq!(c.resolve("units_now").unwrap().name, "units:now");
        let clash = Catalog::new(
            vec![tool("a b:now"), tool("a_b:now")],
            &["a b".into(), "a_b".into()],
        )
        .unwrap_err();
        assert!(clash.to_string().contains("a_b_now"), "{clash}");
    }
}
