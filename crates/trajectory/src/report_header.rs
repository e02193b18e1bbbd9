//! What a pass over a run's totals (`report`, `crate::metrics::records`) needs of its header,
//! read without building the rest.
//!
//! A folder of small runs is mostly headers (the tool catalogue's schemas and descriptions), and
//! `report` keeps of one only the names it groups by and the tools it checks calls against. So
//! the header line is decoded through a mirror of [`Header`]: the same fields, names, defaults and
//! types, but every value not kept is only checked (`super::checked`), the kept strings are the
//! only ones copied, and the `tools` list is decoded once per distinct text (see `catalogue`).
//! The rule is `super::lean`'s: a header is taken here only when the full decoder would take it,
//! and anything else (another format version, a bad header) goes to the full decoder, whose
//! header or refusal is used.
//! `tests/trajectory/lean_reading.rs` holds the two to the same verdict and the same facts on every field
//! of real headers dropped, nulled, duplicated and given each wrong type.
//!
//! `ReportHeader`, the facts of a header a totals pass keeps (agent, world
//! model, planner, task, label, the tool catalogue), read through a mirror of `Header` whose
//! other fields are only checked; it steps aside to the full decoder as `lean.rs` does, and
//! `tests/trajectory/lean_reading.rs` holds it to the full header's verdicts. The `tools` list is checked
//! as JSON in the header's pass and its catalogue found by the list's text (a bounded
//! per-thread memo): runs of the same servers share one catalogue and its compiled schemas.

use std::cell::RefCell;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use rustc_hash::FxHashMap;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::catalog::ToolCatalog;
use super::checked::{AnyJson, CheckedMap, CheckedSeq, CheckedStr};
use super::event::{AgentInfo, AgentKind, FORMAT_NAME, FORMAT_VERSION, Header};
use super::header::ReadHeader;
use super::tool_schema::ToolSchema;

/// The facts of a header that a totals pass keeps.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportHeader {
    /// The run's id (a plain copy of a run has its original's).
    pub run_id: String,
    /// The agent.
    pub agent: AgentKind,
    /// The world model's name (`none` without one), as [`Header::world_model_name`] says.
    pub world_model: String,
    /// The planner model.
    pub planner: String,
    /// The task's id.
    pub task: String,
    /// The task's reference number of calls, when known.
    pub reference_calls: Option<u32>,
    /// The configuration's name.
    pub label: Option<String>,
    /// The tool catalogue: names and input schemas. Runs of the same servers share one.
    pub tools: Arc<ToolCatalog>,
    /// Routing's threshold (`agent.settings.go_real_below`), when the run routed by one.
    pub go_real_below: Option<f64>,
    /// The run routed, by one threshold or by a routing file ([`AgentInfo::routes`]).
    pub routes: bool,
    /// What an imported run's source did not record.
    pub unrecorded: super::event::Unrecorded,
    /// How the run was made ([`super::event::made_by`]).
    pub made_by: String,
}

impl ReportHeader {
    /// The facts of a whole header.
    pub fn of(header: &Header) -> Self {
        Self {
            run_id: header.run_id.clone(),
            agent: header.agent.kind,
            world_model: header.world_model_name().to_string(),
            planner: header.planner.model.clone(),
            task: header.task.id.clone(),
            reference_calls: header.task.reference_call_count,
            label: header.label.clone(),
            tools: Arc::new(ToolCatalog::new(&header.tools)),
            go_real_below: header.agent.go_real_below(),
            routes: header.agent.routes(),
            unrecorded: header.unrecorded(),
            made_by: header.made_by(),
        }
    }

    /// The facts of a header line (UTF-8 already checked), or why the line is not a header: the
    /// mirror when it takes the line, the full decoder otherwise.
    pub fn read(text: &str) -> Result<Self, super::line_error::LineError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        match Self::read_lean(text) {
            Some(header) => Ok(header),
            None => <Header as ReadHeader>::read(text).map(|h| Self::of(&h)),
        }
    }

    /// The facts of a current header line by the mirror alone; `None` when it steps aside.
    pub fn read_lean(text: &str) -> Option<Self> {
        let line = serde_json::from_str::<HeaderLine>(text)
            .ok()
            .filter(|line| {
                line.format == FORMAT_NAME && (1..=FORMAT_VERSION).contains(&line.version)
            })?;
        let tools = catalogue(line.tools.0)?;
        Some(Self {
            run_id: line.run_id,
            agent: line.agent.kind,
            world_model: line
                .world_model
                .map_or_else(|| "none".to_string(), |w| w.name),
            planner: line.planner.model,
            task: line.task.id,
            reference_calls: line.task.reference_call_count,
            label: line.label,
            tools,
            go_real_below: line.agent.settings.go_real_below,
            routes: line.agent.settings.go_real_below.is_some() || line.agent.settings.routing_file,
            made_by: super::event::made_by(
                line.agent.kind,
                line.source
                    .as_ref()
                    .map(|s| (s.format.as_str(), s.file.as_str(), s.id.as_str())),
            ),
            unrecorded: line
                .source
                .map(|s| super::event::Unrecorded::of_list(&s.unrecorded))
                .unwrap_or_default(),
        })
    }
}

/// The catalogue of a header's `tools` list as written (`None`: absent), or `None` when the
/// list is not what the full decoder takes.
///
/// Runs of the same servers write the same list, and it is most of a small run's header. So
/// a list is decoded once per thread and then found by its text: the header's pass only
/// checks it as JSON (which finds where it ends), and an equal text is the same list with the
/// same verdict. The catalogue found also keeps the schemas it compiled.
fn catalogue(tools: Option<&RawValue>) -> Option<Arc<ToolCatalog>> {
    let Some(tools) = tools else {
        return Some(Arc::default());
    };
    let text = tools.get();
    if let Some(seen) = CATALOGUES.with_borrow(|c| c.by_text.get(text).cloned()) {
        return Some(seen);
    }
    // Decoded one level down, as in the header, so JSON's nesting limit falls where it does
    // there.
    let wrapped = format!("[{text}]");
    let (lines,): (Vec<ToolLine>,) = serde_json::from_str(&wrapped).ok()?;
    let catalog = Arc::new(ToolCatalog::of(lines.into_iter().map(ToolLine::kept)));
    CATALOGUES.with_borrow_mut(|c| {
        if c.bytes + text.len() > MAX_CATALOGUE_TEXT {
            *c = Catalogues::default();
        }
        c.bytes += text.len();
        c.by_text.insert(text.into(), catalog.clone());
    });
    Some(catalog)
}

/// Catalogues by the text of their `tools` list.
#[derive(Default)]
struct Catalogues {
    by_text: FxHashMap<Box<str>, Arc<ToolCatalog>>,
    /// The texts' total length.
    bytes: usize,
}

/// Most text of `tools` lists a thread keeps catalogues for; past it, it starts over.
const MAX_CATALOGUE_TEXT: usize = 16 << 20;

thread_local! {
    static CATALOGUES: RefCell<Catalogues> = RefCell::default();
}

/// [`Header`], field for field.
#[derive(Deserialize)]
struct HeaderLine<'a> {
    format: String,
    version: u32,
    #[allow(dead_code)]
    kind: CheckedStr,
    run_id: String,
    #[serde(default)]
    #[allow(dead_code)]
    started_at: Option<DateTime<Utc>>,
    #[allow(dead_code)]
    tool_version: CheckedStr,
    task: TaskLine,
    agent: AgentLine,
    #[serde(default)]
    planner: ModelLine<String>,
    #[serde(default)]
    #[allow(dead_code)]
    roles: CheckedMap<ModelLine<CheckedStr>>,
    #[serde(default)]
    world_model: Option<WorldModelLine>,
    #[serde(default)]
    #[allow(dead_code)]
    servers: CheckedSeq<ServerLine>,
    /// Checked as JSON here; decoded (or found) by `catalogue`.
    #[serde(default, borrow)]
    tools: Written<'a>,
    #[serde(default)]
    #[allow(dead_code)]
    synthetic: bool,
    #[serde(default)]
    label: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    fork_of: Option<ForkLine>,
    #[serde(default)]
    source: Option<SourceLine>,
}

/// `Source`.
#[derive(Deserialize)]
#[allow(dead_code)]
struct SourceLine {
    format: String,
    file: String,
    id: String,
    #[serde(default)]
    agent: Option<CheckedStr>,
    #[serde(default)]
    model: Option<CheckedStr>,
    #[serde(default)]
    unrecorded: Vec<String>,
    #[serde(default)]
    skipped: CheckedSeq<CheckedStr>,
}

/// `TaskInfo`.
#[derive(Deserialize)]
#[allow(dead_code)]
struct TaskLine {
    id: String,
    #[serde(default)]
    request: CheckedStr,
    #[serde(default)]
    reference: Option<CheckedStr>,
    #[serde(default)]
    dependency_analysis: Option<CheckedStr>,
    #[serde(default)]
    reference_call_count: Option<u32>,
    #[serde(default)]
    source: Option<CheckedStr>,
}

/// `AgentInfo`.
#[derive(Deserialize)]
#[allow(dead_code)]
struct AgentLine {
    kind: AgentKind,
    #[serde(default)]
    settings: SettingsLine,
}

/// `AgentInfo::settings`: every value checked, routing's threshold kept (a number, else none,
/// as [`ReportHeader::of`] reads it) and whether a routing file's record is there.
#[derive(Default)]
struct SettingsLine {
    go_real_below: Option<f64>,
    routing_file: bool,
}

impl<'de> Deserialize<'de> for SettingsLine {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = SettingsLine;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<SettingsLine, A::Error> {
                let mut line = SettingsLine::default();
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    if key == AgentInfo::GO_REAL_BELOW {
                        // The last of a repeated key, as the full decoder's map keeps it.
                        line.go_real_below = map.next_value::<serde_json::Value>()?.as_f64();
                    } else if key == AgentInfo::ROUTING {
                        line.routing_file = map.next_value::<serde_json::Value>()?.is_object();
                    } else {
                        map.next_value::<AnyJson>()?;
                    }
                }
                Ok(line)
            }
        }
        d.deserialize_map(Visit)
    }
}

/// `ModelInfo`, its model kept (`String`) or only checked.
#[derive(Deserialize, Default)]
#[allow(dead_code)]
struct ModelLine<S> {
    #[serde(default)]
    model: S,
    #[serde(default)]
    base_url: Option<CheckedStr>,
}

/// `ServerInfo`.
#[derive(Deserialize)]
#[allow(dead_code)]
struct ServerLine {
    name: CheckedStr,
    transport: CheckedStr,
    #[serde(default)]
    target: Option<CheckedStr>,
    #[serde(default)]
    shared: bool,
    #[serde(default)]
    protocol: Option<CheckedStr>,
}

/// `ToolInfo`, its name and schema kept.
#[derive(Deserialize)]
#[allow(dead_code)]
struct ToolLine<'a> {
    name: String,
    #[serde(default)]
    description: CheckedStr,
    #[serde(default, borrow)]
    input_schema: Written<'a>,
    #[serde(default)]
    output_schema: Option<AnyJson>,
    #[serde(default)]
    annotations: Option<AnyJson>,
    #[serde(default)]
    title: Option<CheckedStr>,
    #[serde(default)]
    icons: Option<AnyJson>,
    #[serde(default, rename = "_meta")]
    meta: Option<AnyJson>,
}

impl ToolLine<'_> {
    /// The name and schema a catalogue keeps.
    fn kept(self) -> (String, ToolSchema) {
        let schema = self.input_schema.0.map_or_else(ToolSchema::default, |raw| {
            ToolSchema::written(raw.to_owned())
        });
        (self.name, schema)
    }
}

/// A value as written (`null` included); `None` when absent.
#[derive(Default)]
struct Written<'a>(Option<&'a RawValue>);

impl<'de: 'a, 'a> Deserialize<'de> for Written<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'a RawValue>::deserialize(d).map(|raw| Written(Some(raw)))
    }
}

/// `ForkOf`.
#[derive(Deserialize)]
#[allow(dead_code)]
struct ForkLine {
    run_id: CheckedStr,
    file: CheckedStr,
    step: u64,
}

/// `WorldModelInfo`: `name` once and a string, anything else any JSON (its reader's rules).
struct WorldModelLine {
    name: String,
}

impl<'de> Deserialize<'de> for WorldModelLine {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        /// A key, told apart as `name` or not, as the full reader's `String` key would be.
        enum Key {
            Name,
            Other,
        }
        impl<'de> Deserialize<'de> for Key {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct KeyText;
                impl serde::de::Visitor<'_> for KeyText {
                    type Value = Key;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str("a key")
                    }
                    fn visit_str<E>(self, key: &str) -> Result<Key, E> {
                        Ok(if key == "name" { Key::Name } else { Key::Other })
                    }
                }
                d.deserialize_str(KeyText)
            }
        }
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = WorldModelLine;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a world model's description")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<WorldModelLine, A::Error> {
                let mut name = None;
                while let Some(key) = map.next_key::<Key>()? {
                    match key {
                        Key::Name if name.is_some() => {
                            return Err(serde::de::Error::duplicate_field("name"));
                        }
                        Key::Name => name = Some(map.next_value::<String>()?),
                        Key::Other => drop(map.next_value::<AnyJson>()?),
                    }
                }
                let name = name.ok_or_else(|| serde::de::Error::missing_field("name"))?;
                Ok(WorldModelLine { name })
            }
        }
        d.deserialize_map(Fields)
    }
}

impl ReadHeader for ReportHeader {
    fn read(text: &str) -> std::result::Result<Self, super::line_error::LineError> {
        ReportHeader::read(text)
    }
}
