//! What a person adds to a finished run from its view: probes of a node (simulated by a world
//! model they pick, or the call made for real after a question) and notes, each started as
//! background work and appended to the run's file when it answers.

use super::*;
use crate::tui::jobs::probe::ProbeJob;

/// What the view has asked to append to its run's file, until the answer comes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Adding {
    Probe,
    Note,
}

/// A note being typed, and the node or event (`seq`) it is about.
#[derive(Debug, Clone)]
pub(super) struct NoteDraft {
    pub(super) prompt: crate::tui::widgets::prompt::Prompt,
    pub(super) node: Option<cosmos_trajectory::event::NodeId>,
    pub(super) event: Option<u64>,
}

impl RunView {
    /// Asks how to probe the selected node (its call simulated by a world model the person
    /// picks, or made for real after a question), once the run has ended. The answer comes
    /// back as [`Action::Probe`].
    pub(super) fn probe(&mut self, real: bool, cx: Context, out: &mut Vec<Request>) {
        if self.live.is_some() && !self.finished() {
            out.push(Request::Say("probe once the run has finished".into()));
            return;
        }
        let Some(Item::Node(slot)) = self.tree.selected_item() else {
            out.push(Request::Say("select a node of the tree to probe".into()));
            return;
        };
        let info = &self.run.nodes()[slot as usize];
        let EventBody::NodeAdded {
            action: Some(cosmos_trajectory::event::Action::ToolCall { tool, arguments }),
            ..
        } = &self.run.event(info.added_at as usize).body
        else {
            out.push(Request::Say(format!(
                "node #{} is not a tool call",
                info.id
            )));
            return;
        };
        if !real {
            match cx.probe.world_models() {
                Ok(names) => {
                    let picker = WorldModelPicker::new(info.id, names);
                    out.push(Request::Push(Box::new(picker)));
                }
                Err(e) => out.push(Request::Say(format!("cannot probe: {e:#}"))),
            }
        } else if let Some(why) = cx.probe.cannot_call_for_real() {
            // Said before the question, not after a `y`.
            out.push(Request::Say(why.to_string()));
        } else {
            let id = info.id;
            let risk = match self.run.header.tools.iter().find(|t| &t.name == tool) {
                Some(t) => t.risk(),
                None => Some("the run's catalogue does not list it"),
            };
            let Some(why) = risk else {
                // Read-only by its server's word: nothing to ask.
                let said =
                    format!("calling #{id} ({tool}) for real: its server annotates it read-only");
                self.start_probe(id, None, cx, out);
                out.push(Request::Say(said));
                return;
            };
            let call = format!(
                "{tool} with {}",
                serde_json::to_string(arguments).unwrap_or_default()
            );
            out.push(Request::Push(Box::new(ConfirmCall::new(call, why, id))));
        }
    }

    /// The person chose how to probe `node`: start it.
    pub(super) fn start_probe(
        &mut self,
        node: cosmos_trajectory::event::NodeId,
        world_model: Option<&String>,
        cx: Context,
        out: &mut Vec<Request>,
    ) {
        let path = self.run.path.clone();
        let setup = cx.probe.clone();
        let (work, said) = match world_model {
            Some(name) => (
                ProbeJob::Simulate {
                    path,
                    node,
                    world_model: name.clone(),
                    setup,
                },
                format!("probing #{node} with {}…", one_line(name, 40)),
            ),
            None => (
                ProbeJob::Real { path, node, setup },
                format!("calling #{node} for real…"),
            ),
        };
        self.adding = Some(Adding::Probe);
        out.push(Request::Start(Work::Job(Box::new(work))));
        out.push(Request::Say(said));
    }

    /// A probe or note was appended to the run's file (or was not).
    pub(super) fn added(&mut self, result: &anyhow::Result<Event>, out: &mut Vec<Request>) {
        let what = self.adding.take().unwrap_or(Adding::Probe);
        match (result, what) {
            (Ok(event), _) => {
                let said = cosmos_trajectory::describe::summary(
                    event,
                    cosmos_trajectory::describe::Latencies::of(&self.run.header),
                );
                self.add_probe(event.clone());
                out.push(Request::Say(format!(
                    "added to the run: {} (i shows the node)",
                    one_line(&said, 120)
                )));
            }
            (Err(e), Adding::Probe) => out.push(Request::Say(format!(
                "probe failed: {}",
                one_line(&format!("{e:#}"), 200)
            ))),
            (Err(e), Adding::Note) => out.push(Request::Say(format!(
                "the note was not added: {}",
                one_line(&format!("{e:#}"), 200)
            ))),
        }
    }

    /// `A`: asks for a note on the selected node (tree) or the event at the cursor.
    pub(super) fn start_note(&mut self, out: &mut Vec<Request>) {
        if self.live.is_some() && !self.finished() {
            out.push(Request::Say(
                "notes are added once the run has finished".into(),
            ));
            return;
        }
        let target = match (self.focus, self.tree.selected_item()) {
            (Pane::Tree, Some(Item::Node(slot))) => {
                Some((Some(self.run.nodes()[slot as usize].id), None))
            }
            _ => self
                .position()
                .checked_sub(1)
                .map(|i| (None, Some(self.run.event(i).seq))),
        };
        match target {
            Some((node, event)) => {
                self.draft = Some(NoteDraft {
                    prompt: crate::tui::widgets::prompt::Prompt::new(""),
                    node,
                    event,
                })
            }
            None => out.push(Request::Say(
                "select a node or step to an event to write a note on".into(),
            )),
        }
    }

    pub(super) fn type_note(
        &mut self,
        key: &crossterm::event::KeyEvent,
        cx: Context,
        out: &mut Vec<Request>,
    ) {
        let Some(draft) = &mut self.draft else {
            return;
        };
        match draft.prompt.key(key) {
            Typed::Edited => {}
            Typed::Cancelled => self.draft = None,
            Typed::Submitted(text) => {
                let draft = self.draft.take().expect("checked");
                if text.trim().is_empty() {
                    out.push(Request::Say("an empty note is not added".into()));
                    return;
                }
                self.adding = Some(Adding::Note);
                let note = ProbeJob::Annotate {
                    path: self.run.path.clone(),
                    node: draft.node,
                    event: draft.event,
                    text: text.trim().to_string(),
                    t_ms: self.run.briefs().last().map_or(0, |e| e.t_ms),
                    setup: cx.probe.clone(),
                };
                out.push(Request::Start(Work::Job(Box::new(note))));
                out.push(Request::Say("adding the note…".into()));
            }
        }
    }
}
