//! What a person adds to a finished run from the explorer: a node's call simulated again by a
//! world model or made for real, or a note. Each is appended to the run's file.

use std::path::PathBuf;

use anyhow::Result;

use crate::tui::action::{Action, RequestId};
use crate::tui::view::Job;
use cosmos_engine::probe::{self, ProbeSetup};
use cosmos_trajectory::event::{EventBody, NodeId};

/// One addition to the run at `path` (→ [`Action::Probed`]). Writes, so never merged with
/// another.
#[derive(Debug)]
pub enum ProbeJob {
    /// Simulate a node's call with a named world model.
    Simulate {
        /// The run's file.
        path: PathBuf,
        /// The node.
        node: NodeId,
        /// The world model's name.
        world_model: String,
        /// Where world models and servers are found.
        setup: ProbeSetup,
    },
    /// Make a node's call for real.
    Real {
        /// The run's file.
        path: PathBuf,
        /// The node.
        node: NodeId,
        /// Where world models and servers are found.
        setup: ProbeSetup,
    },
    /// A person's note on a node or an event.
    Annotate {
        /// The run's file.
        path: PathBuf,
        /// The node it is about.
        node: Option<NodeId>,
        /// The event it is about, by `seq`.
        event: Option<u64>,
        /// The note.
        text: String,
        /// The run's clock at its end, for the note's `t_ms`.
        t_ms: u64,
        /// Where the endpoints' keys are found, to redact them from the note.
        setup: ProbeSetup,
    },
}

impl Job for ProbeJob {
    fn kind(&self) -> &'static str {
        "probe"
    }

    fn read_key(&self) -> Option<String> {
        None
    }

    fn run(self: Box<Self>, id: RequestId) -> Vec<Action> {
        let added = match *self {
            ProbeJob::Simulate {
                path,
                node,
                world_model,
                setup,
            } => block_on(probe::simulate(&path, node, &world_model, &setup)),
            ProbeJob::Real { path, node, setup } => {
                block_on(probe::call_for_real(&path, node, &setup))
            }
            ProbeJob::Annotate {
                path,
                node,
                event,
                text,
                t_ms,
                setup,
            } => {
                let note = EventBody::Annotation {
                    node,
                    event,
                    text,
                    who: probe::who(),
                };
                probe::annotate(&path, note, t_ms, &setup)
            }
        };
        vec![Action::Probed(id, Box::new(added))]
    }
}

/// Runs async work (a probe) to completion on this background thread.
fn block_on<T>(work: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(work)
}
