//! The `command` world model: an external process speaking JSON lines on stdin/stdout, so a
//! world model can be written in any language. The protocol is in `docs/world-models.md`.
//!
//! One process serves the whole run; requests go one at a time. A process that dies is
//! restarted once per request; one that hangs is killed after the timeout. The command runs
//! under `sh -c` in its own process group, and the group is what gets killed: killing `sh`
//! alone would orphan the real world model (a shell does not always `exec` its last command).

use std::process::Stdio;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Mutex;

use super::{LlmUsage, SimFailure, SimRequest, Simulation, WorldModel};
use crate::mcp::process_group::ProcessGroup;
use crate::mcp::server::MAX_RESULT_BYTES;

/// Longest reply line read from the process; a longer one is refused and the process killed
/// (one that writes without a newline would otherwise grow cosmos without bound).
pub const MAX_REPLY_LINE_BYTES: u64 = 4 << 20;
use crate::mcp::mcp_json::INHERITED_ENV;
use cosmos_trajectory::event::{Observation, WorldModelInfo};

/// A running world-model process. Dropping it kills its whole group (the one owner of process
/// groups, [`ProcessGroup`], which also kills it if cosmos itself is killed).
struct Process {
    // Declared before the group: the child handle goes first, the group's kill after.
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    _group: Option<ProcessGroup>,
    /// False from the moment a request is written until its whole reply is read: a process
    /// left so (an ask dropped mid-way) may still send that reply, and is not asked again.
    clean: bool,
}

/// The command world model.
pub struct CommandWorldModel {
    command: String,
    timeout: Duration,
    /// Variables of cosmos's environment it is given beyond `INHERITED_ENV`.
    env: Vec<String>,
    process: Mutex<Option<Process>>,
}

impl CommandWorldModel {
    /// A world model run by `sh -c command`, each answer within `timeout`.
    pub fn new(command: String, timeout: Duration) -> Self {
        Self {
            command,
            timeout,
            env: Vec::new(),
            process: Mutex::new(None),
        }
    }

    /// Also gives the process these variables of cosmos's environment (by name).
    pub fn with_env(mut self, names: &[String]) -> Self {
        self.env = names.to_vec();
        self
    }

    fn spawn(&self) -> Result<Process, String> {
        let mut command = Command::new("sh");
        // Only the short list every child gets, and what its table names: a world model
        // never sees the keys cosmos holds unless it is given them.
        command.env_clear();
        for key in INHERITED_ENV
            .iter()
            .copied()
            .chain(self.env.iter().map(String::as_str))
        {
            if let Some(value) = std::env::var_os(key) {
                command.env(key, value);
            }
        }
        let mut child = command
            .arg("-c")
            .arg(&self.command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            // Its stderr must not reach the terminal the UI draws on.
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("starting world model `{}`: {e}", self.command))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let group = child.id().and_then(ProcessGroup::led_by);
        Ok(Process {
            _child: child,
            stdin,
            stdout,
            _group: group,
            clean: true,
        })
    }

    async fn ask(&self, line: &str) -> Result<Value, String> {
        let mut guard = self.process.lock().await;
        // An exchange that was dropped half-way (its caller stopped or timed out) may still
        // have a reply on its way: that process answers no further request.
        if guard.as_ref().is_some_and(|p| !p.clean) {
            *guard = None;
        }
        for attempt in 0..2 {
            if guard.is_none() {
                *guard = Some(self.spawn()?);
            }
            let p = guard.as_mut().expect("just set");
            p.clean = false;
            let exchange = async {
                p.stdin.write_all(line.as_bytes()).await?;
                p.stdin.write_all(b"\n").await?;
                p.stdin.flush().await?;
                let mut reply = String::new();
                let n = (&mut p.stdout)
                    .take(MAX_REPLY_LINE_BYTES)
                    .read_line(&mut reply)
                    .await?;
                Ok::<_, std::io::Error>((n, reply))
            };
            match tokio::time::timeout(self.timeout, exchange).await {
                Ok(Ok((n, _))) if n as u64 >= MAX_REPLY_LINE_BYTES => {
                    // The rest of that line is still coming: the process cannot be reused.
                    *guard = None;
                    return Err(format!(
                        "world model replied with a line over {} MiB; process killed",
                        MAX_REPLY_LINE_BYTES >> 20
                    ));
                }
                Ok(Ok((n, reply))) if n > 0 => {
                    p.clean = true;
                    return serde_json::from_str(reply.trim()).map_err(|e| {
                        format!(
                            "world model replied with a line that is not JSON ({e}): {}",
                            reply.chars().take(200).collect::<String>()
                        )
                    });
                }
                Ok(_) if attempt == 0 => {
                    // The process exited (EOF or broken pipe): start a fresh one and retry once.
                    tracing::warn!(command = %self.command, "world model process ended; restarting");
                    *guard = None;
                }
                Ok(Ok(_)) => return Err("world model process exited without answering".into()),
                Ok(Err(e)) => return Err(format!("talking to the world model process: {e}")),
                Err(_) => {
                    // Dropping the process kills its group.
                    *guard = None;
                    return Err(format!(
                        "world model did not answer within {:.0}s; process killed",
                        self.timeout.as_secs_f64()
                    ));
                }
            }
        }
        Err("world model process keeps exiting".into())
    }
}

impl WorldModel for CommandWorldModel {
    fn name(&self) -> String {
        "command".into()
    }

    fn describe(&self) -> WorldModelInfo {
        super::describe(
            self.name(),
            [
                ("command", json!(self.command)),
                ("timeout_s", json!(self.timeout.as_secs_f64())),
            ],
        )
    }

    fn simulate<'a>(
        &'a self,
        req: SimRequest<'a>,
    ) -> BoxFuture<'a, Result<Simulation, SimFailure>> {
        Box::pin(async move {
            let start = Instant::now();
            let mut request = json!({
                "tool": req.tool.name,
                "description": req.tool.description,
                "input_schema": req.tool.input_schema,
                "arguments": req.arguments,
                "user_request": req.user_request,
                "history": req.history.iter().map(|h| json!({"tool": h.tool, "arguments": h.arguments, "content": h.observation.text, "is_error": h.observation.is_error})).collect::<Vec<_>>(),
            });
            if let Some(state) = req.state {
                request["state"] = state.clone();
            }
            let fail = SimFailure::new;
            let reply = self.ask(&request.to_string()).await.map_err(fail)?;
            if let Some(err) = reply.get("error").and_then(Value::as_str) {
                return Err(fail(format!("world model error: {err}")));
            }
            let text = match &reply["content"] {
                Value::String(s) => s.clone(),
                Value::Null => {
                    return Err(fail(format!(
                        "world model reply has no \"content\": {reply}"
                    )));
                }
                other => other.to_string(),
            };
            let llm = reply.get("usage").map(|u| LlmUsage {
                model: u["model"].as_str().unwrap_or("command").to_string(),
                prompt_tokens: u["prompt_tokens"].as_u64().unwrap_or(0),
                completion_tokens: u["completion_tokens"].as_u64().unwrap_or(0),
                estimated: false,
                latency: start.elapsed(),
                error: None,
                messages: None,
            });
            let mut observation = Observation {
                text,
                is_error: reply["is_error"].as_bool().unwrap_or(false),
                ..Default::default()
            };
            // Capped like a tool result.
            observation.cap_text(MAX_RESULT_BYTES);
            // Whatever the command says of itself: a number in [0, 1], with the word for how
            // it knows (`command` when it gives none); anything else is no confidence.
            let confidence = reply
                .get("confidence")
                .and_then(Value::as_f64)
                .and_then(|c| {
                    let source = reply
                        .get("confidence_source")
                        .and_then(Value::as_str)
                        .map_or("command".to_string(), |s| s.chars().take(24).collect());
                    let given = super::Confidence::new(c, &source);
                    if given.is_none() {
                        tracing::warn!(
                            "world model command: confidence {c} is not in [0, 1]; ignored"
                        );
                    }
                    given
                });
            let mut simulation = Simulation::new(observation, start.elapsed(), llm, confidence);
            // Only an object is a state, and only when one was given to move on.
            simulation.predicted_state = req
                .state
                .and(reply.get("predicted_state"))
                .filter(|s| s.is_object())
                .cloned();
            Ok(simulation)
        })
    }
}
