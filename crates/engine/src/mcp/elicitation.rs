//! A server asking the user for input in the middle of a call (MCP elicitation). An unattended
//! connection answers by its policy: decline (the default), or accept with the requested
//! schema's own defaults when every required field has one. Every request and its answer is
//! kept (`Elicited`) and recorded with the call it came during.
//!
//! A server's request for input (MCP elicitation), answered by the
//! connection's policy (`Elicitation`: decline, the form's defaults, or ask a person) in the
//! `Listener` of `server.rs`, which declares form elicitation; `ask` sends a `Question` (with a
//! oneshot for the `Answer`) to the one asker of the process, which `cli::run` registers while
//! the live explorer is open and `cosmos proxy` for its clients (`ask_through`), and declines
//! when there is none. Each exchange
//! (`Elicited`) comes back with the call it came during (`CallOutcome::elicited`) and
//! `agent::execute::record_call` writes it before the result.

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::{Map, Value};

/// How a connection answers a server's elicitation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Elicitation {
    /// Declines every request (the server goes on without the input).
    #[default]
    Decline,
    /// Accepts a form with its schema's defaults; declines one with a required field that
    /// has no default, and any request to open a web page.
    AcceptDefaults,
    /// A person answers, in the live explorer (the form's defaults filled in); declined when
    /// no explorer is there to ask.
    Ask,
}

impl Elicitation {
    /// The name on the command line and in the header.
    pub fn as_str(self) -> &'static str {
        match self {
            Elicitation::Decline => "decline",
            Elicitation::AcceptDefaults => "accept-defaults",
            Elicitation::Ask => "ask",
        }
    }
}

/// A request put to a person (or, through `cosmos proxy`, to the client whose call it came
/// during): the server's request, and where the answer goes (dropping it unanswered declines).
#[derive(Debug)]
pub struct Question {
    /// The server that asked (its name in `mcp.json`).
    pub server: String,
    /// The tool whose call it came during, when only one call was in flight on that server.
    pub tool: Option<String>,
    /// What it asked: a form, or a page to open.
    pub request: ElicitRequestParams,
    /// Where the answer goes.
    pub answer: tokio::sync::oneshot::Sender<Answer>,
}

impl Question {
    /// A form asking `message`, its fields as `schema` (a JSON Schema object the MCP form
    /// schema accepts) says.
    pub fn form(
        server: &str,
        message: &str,
        schema: Value,
        answer: tokio::sync::oneshot::Sender<Answer>,
    ) -> Result<Self, serde_json::Error> {
        Ok(Self {
            server: server.to_string(),
            tool: None,
            request: ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: message.to_string(),
                requested_schema: serde_json::from_value(schema)?,
            },
            answer,
        })
    }

    /// What the server said.
    pub fn message(&self) -> &str {
        match &self.request {
            ElicitRequestParams::FormElicitationParams { message, .. }
            | ElicitRequestParams::UrlElicitationParams { message, .. } => message,
            _ => "",
        }
    }

    /// The form's schema (`requestedSchema`), or `{"url": …}` for a page to open.
    pub fn requested(&self) -> Value {
        requested(&self.request)
    }

    /// Declines, saying why.
    pub fn decline(self, reason: impl Into<String>) {
        let _ = self.answer.send(Answer {
            action: ElicitationAction::Decline,
            content: None,
            reason: reason.into(),
        });
    }
}

/// The way back to a waiting question, for a view that answers it: answered once, and when
/// dropped unanswered (the view closed) it gives its `unanswered` answer, so the waiting side
/// is always told.
#[derive(Debug)]
pub struct Reply {
    to: Option<tokio::sync::oneshot::Sender<Answer>>,
    unanswered: (ElicitationAction, &'static str),
}

impl Reply {
    /// The reply to `to`, giving `action` for `reason` if the view closes unanswered.
    pub fn new(
        to: tokio::sync::oneshot::Sender<Answer>,
        action: ElicitationAction,
        reason: &'static str,
    ) -> Self {
        Self {
            to: Some(to),
            unanswered: (action, reason),
        }
    }

    /// Answers (the call may have ended meanwhile: then nobody hears it).
    pub fn send(&mut self, action: ElicitationAction, content: Option<Value>, reason: &str) {
        if let Some(to) = self.to.take() {
            let _ = to.send(Answer {
                action,
                content,
                reason: reason.to_string(),
            });
        }
    }

    /// True once answered, or once the waiting side stopped waiting.
    pub fn done(&self) -> bool {
        self.to.as_ref().is_none_or(|to| to.is_closed())
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        let (action, reason) = self.unanswered.clone();
        self.send(action, None, reason);
    }
}

/// The answer to a `Question`.
#[derive(Debug)]
pub struct Answer {
    /// `accept`, `decline` or `cancel`.
    pub action: ElicitationAction,
    /// What was filled in, when accepted.
    pub content: Option<Value>,
    /// Who answered, or why it was answered so (recorded).
    pub reason: String,
}

/// The schema a request asks to be filled, or `{"url": …}` for a page to open.
fn requested(request: &ElicitRequestParams) -> Value {
    match request {
        ElicitRequestParams::FormElicitationParams {
            requested_schema, ..
        } => serde_json::to_value(requested_schema).unwrap_or(Value::Null),
        ElicitRequestParams::UrlElicitationParams { url, .. } => serde_json::json!({ "url": url }),
        _ => Value::Null,
    }
}

/// Where questions go while someone can answer them: a live explorer (`cli::run`) or the
/// clients of `cosmos proxy`; one per process, as there is one screen or one proxy.
static ASKER: std::sync::Mutex<Option<std::sync::mpsc::Sender<Question>>> =
    std::sync::Mutex::new(None);

/// Sends questions to `asker` from now on (`None`: nobody to ask any more).
pub fn ask_through(asker: Option<std::sync::mpsc::Sender<Question>>) {
    *ASKER.lock().unwrap_or_else(|p| p.into_inner()) = asker;
}

/// True when someone answers questions for this process now.
pub fn someone_to_ask() -> bool {
    ASKER.lock().unwrap_or_else(|p| p.into_inner()).is_some()
}

/// Puts `question` to whoever answers for this process; false when nobody does (the
/// question is dropped, which declines it).
pub fn ask(question: Question) -> bool {
    let asker = ASKER.lock().unwrap_or_else(|p| p.into_inner()).clone();
    asker.is_some_and(|asker| asker.send(question).is_ok())
}

/// How long a person has to answer before the request is declined for them.
pub const ANSWER_WITHIN: std::time::Duration = std::time::Duration::from_secs(600);

/// Answers `request` of `server` as the policy says, putting it to `ask` when it says so (the
/// connection's relay, a proxy's client, or whoever answers for this process: [`ask`]): the
/// reply for the server and the record of it.
pub async fn respond(
    policy: Elicitation,
    ask: impl FnOnce(Question) -> bool,
    server: &str,
    tool: Option<String>,
    request: &ElicitRequestParams,
) -> (ElicitResult, Elicited) {
    if policy != Elicitation::Ask {
        return answer(policy, request);
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    let asked_at = std::time::Instant::now();
    let question = Question {
        server: server.to_string(),
        tool,
        request: request.clone(),
        answer: tx,
    };
    let sent = ask(question);
    let answered = if !sent {
        Answer {
            action: ElicitationAction::Decline,
            content: None,
            reason: "nobody to ask: no explorer is open".to_string(),
        }
    } else {
        match tokio::time::timeout(ANSWER_WITHIN, rx).await {
            Ok(Ok(answered)) => answered,
            Ok(Err(_)) => Answer {
                action: ElicitationAction::Decline,
                content: None,
                reason: "the question was closed unanswered".into(),
            },
            Err(_) => Answer {
                action: ElicitationAction::Decline,
                content: None,
                reason: format!("nobody answered within {}s", ANSWER_WITHIN.as_secs()),
            },
        }
    };
    let mut result = ElicitResult::new(answered.action.clone());
    result.content = answered.content.clone();
    let action = match answered.action {
        ElicitationAction::Accept => "accept",
        ElicitationAction::Cancel => "cancel",
        _ => "decline",
    };
    let message = match request {
        ElicitRequestParams::FormElicitationParams { message, .. }
        | ElicitRequestParams::UrlElicitationParams { message, .. } => message.clone(),
        _ => String::new(),
    };
    (
        result,
        Elicited {
            message,
            requested: requested(request),
            action,
            content: answered.content,
            reason: answered.reason,
            // Time a person (or the proxy's client) took is theirs, not the agent's.
            waited_ms: sent.then(|| asked_at.elapsed().as_millis() as u64),
        },
    )
}

/// One request and the answer given.
#[derive(Debug, Clone, PartialEq)]
pub struct Elicited {
    /// What the server asked, in its words.
    pub message: String,
    /// The form's schema (`requestedSchema`), or `{"url": …}` for a page to open.
    pub requested: Value,
    /// `accept`, `decline` or `cancel`.
    pub action: &'static str,
    /// What was sent back, when accepted.
    pub content: Option<Value>,
    /// Why it was answered so.
    pub reason: String,
    /// How long the answer took, when someone was asked (a policy answers at once).
    pub waited_ms: Option<u64>,
}

/// Answers `request` by `policy` without asking anyone: the reply for the server and the
/// record of it.
pub fn answer(policy: Elicitation, request: &ElicitRequestParams) -> (ElicitResult, Elicited) {
    let decline = |message: &str, requested: Value, reason: String| {
        (
            ElicitResult::new(ElicitationAction::Decline),
            Elicited {
                message: message.to_string(),
                requested,
                action: "decline",
                content: None,
                reason,
                waited_ms: None,
            },
        )
    };
    match request {
        ElicitRequestParams::UrlElicitationParams { message, .. } => decline(
            message,
            requested(request),
            "a page to open: nobody is at this run's screen".into(),
        ),
        ElicitRequestParams::FormElicitationParams { message, .. } => {
            let schema = requested(request);
            if policy != Elicitation::AcceptDefaults {
                return decline(
                    message,
                    schema,
                    format!("--elicitation {}", policy.as_str()),
                );
            }
            match defaults(&schema) {
                Ok(content) => {
                    let mut result = ElicitResult::new(ElicitationAction::Accept);
                    result.content = Some(content.clone());
                    (
                        result,
                        Elicited {
                            message: message.clone(),
                            requested: schema,
                            action: "accept",
                            content: Some(content),
                            reason: "--elicitation accept-defaults: the schema's defaults".into(),
                            waited_ms: None,
                        },
                    )
                }
                Err(missing) => decline(
                    message,
                    schema,
                    format!("--elicitation accept-defaults: no default for required {missing}"),
                ),
            }
        }
        // A kind of request newer than this client knows.
        _ => decline(
            "",
            Value::Null,
            "a kind of request this client does not know".into(),
        ),
    }
}

/// The schema's defaults as the answer's content; `Err` names the required fields without one.
fn defaults(schema: &Value) -> Result<Value, String> {
    let mut content = Map::new();
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            if let Some(default) = property.get("default") {
                content.insert(name.clone(), default.clone());
            }
        }
    }
    let missing: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|r| !content.contains_key(*r))
        .collect();
    if missing.is_empty() {
        Ok(Value::Object(content))
    } else {
        Err(missing.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_reply_answers_once_and_dropped_unanswered_gives_its_own_answer() {
        let (to, mut waiting) = tokio::sync::oneshot::channel();
        let mut reply = Reply::new(to, ElicitationAction::Decline, "closed unanswered");
        assert!(!reply.done());
        reply.send(ElicitationAction::Accept, Some(json!({"a": 1})), "answered");
        assert!(reply.done());
        drop(reply);
        let answer = waiting.try_recv().unwrap();
        assert_eq!(
            (answer.action, answer.reason.as_str()),
            (ElicitationAction::Accept, "answered")
        );

        let (to, mut waiting) = tokio::sync::oneshot::channel();
        drop(Reply::new(
            to,
            ElicitationAction::Decline,
            "closed unanswered",
        ));
        let answer = waiting.try_recv().unwrap();
        assert_eq!(answer.action, ElicitationAction::Decline);
        assert_eq!(answer.reason, "closed unanswered");
    }

    #[test]
    fn defaults_answer_a_form_only_when_every_required_field_has_one() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "Ada"},
            "age": {"type": "integer"},
            "ok": {"type": "boolean", "default": true}
        }, "required": ["name"]});
        assert_eq!(defaults(&schema), Ok(json!({"name": "Ada", "ok": true})));
        let strict = json!({"type": "object", "properties": {"age": {"type": "integer"}}, "required": ["age"]});
        assert_eq!(defaults(&strict), Err("age".into()));
    }
}
