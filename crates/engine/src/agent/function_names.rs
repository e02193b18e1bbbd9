//! Tool names as the function names chat-completions endpoints accept, and back: what the
//! planner offers the model, and what native tool calls name.

use std::collections::HashMap;

use anyhow::{Result, bail};
use serde_json::{Value, json};

use crate::llm::chat_wire::ToolSpec;
use cosmos_trajectory::event::ToolInfo;

/// Longest function name chat-completions endpoints accept.
pub const MAX_FUNCTION_NAME: usize = 64;

/// Tool names as function names (`[A-Za-z0-9_-]`, at most 64 characters) and back. Built so
/// that no two tools share a function name: a call always reaches the tool it names.
#[derive(Debug, Clone, Default)]
pub struct FunctionNames {
    to_function: HashMap<String, String>,
    to_tool: HashMap<String, String>,
}

impl FunctionNames {
    /// The names of `tools`; an error names both tools when two would share one.
    pub fn new(tools: &[ToolInfo]) -> Result<Self> {
        let mut names = Self::default();
        for tool in tools {
            let function = function_name(&tool.name);
            if let Some(other) = names.to_tool.get(&function) {
                bail!(
                    "tools \"{other}\" and \"{}\" would both be called \"{function}\" by native \
                     tool calls; rename one of their servers in the MCP config",
                    tool.name
                );
            }
            names.to_tool.insert(function.clone(), tool.name.clone());
            names.to_function.insert(tool.name.clone(), function);
        }
        Ok(names)
    }

    /// The function name of a tool (the tool's own name if it is not in the catalogue).
    pub fn function<'a>(&'a self, tool: &'a str) -> &'a str {
        self.to_function.get(tool).map_or(tool, String::as_str)
    }

    /// The tool a function name stands for.
    pub fn tool(&self, function: &str) -> Option<&str> {
        self.to_tool.get(function).map(String::as_str)
    }

    /// The tools as functions offered to the model.
    pub fn specs(&self, tools: &[ToolInfo]) -> Vec<ToolSpec> {
        tools
            .iter()
            .map(|t| {
                let schema = match t.input_schema.value() {
                    Value::Object(_) => t.input_schema.value().clone(),
                    _ => json!({"type": "object"}),
                };
                ToolSpec::function(self.function(&t.name), t.description.clone(), schema)
            })
            .collect()
    }
}

/// `server:tool` with every other character than `[A-Za-z0-9_-]` made `_`; a name over 64
/// characters keeps its start and ends in a hash of the whole name.
pub fn function_name(tool: &str) -> String {
    let clean: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.len() <= MAX_FUNCTION_NAME {
        return clean;
    }
    let hash = cosmos_trajectory::fnv::fnv1a(tool.as_bytes());
    format!("{}_{:016x}", &clean[..MAX_FUNCTION_NAME - 17], hash)
}
