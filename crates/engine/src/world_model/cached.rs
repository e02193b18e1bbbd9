//! The `cached` world model: wraps any world model so that the same call in the same
//! context is simulated once (search revisits the same states often).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::Mutex;

use super::{SimFailure, SimRequest, Simulation, WorldModel, canonical};
use cosmos_trajectory::event::WorldModelInfo;

/// A caching wrapper.
pub struct CachedWorldModel {
    inner: Arc<dyn WorldModel>,
    cache: Mutex<HashMap<String, Simulation>>,
}

impl CachedWorldModel {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn WorldModel>) -> Self {
        Self {
            inner,
            cache: Mutex::new(HashMap::new()),
        }
    }

    fn key(req: &SimRequest<'_>) -> String {
        let history: Vec<String> = req
            .history
            .iter()
            .map(|h| {
                format!(
                    "{}{}{}",
                    h.tool,
                    canonical(&h.arguments),
                    h.observation.text
                )
            })
            .collect();
        format!(
            "{}\u{0}{}\u{0}{}\u{0}{}",
            req.tool.name,
            canonical(req.arguments),
            req.user_request,
            history.join("\u{1}")
        )
    }
}

impl WorldModel for CachedWorldModel {
    fn name(&self) -> String {
        format!("cached({})", self.inner.name())
    }

    fn describe(&self) -> WorldModelInfo {
        let inner = serde_json::to_value(self.inner.describe()).unwrap_or_default();
        super::describe(self.name(), [("inner", inner)])
    }

    fn simulate<'a>(
        &'a self,
        req: SimRequest<'a>,
    ) -> BoxFuture<'a, Result<Simulation, SimFailure>> {
        Box::pin(async move {
            let key = Self::key(&req);
            if let Some(hit) = self.cache.lock().await.get(&key) {
                // A hit costs nothing: no time, no LLM call to record.
                // The wrapped model's confidence: the cache only remembers its answer.
                return Ok(Simulation {
                    observation: hit.observation.clone(),
                    latency: Duration::ZERO,
                    llm: Vec::new(),
                    confidence: hit.confidence.clone(),
                    members: hit.members.clone(),
                    predicted_state: hit.predicted_state.clone(),
                    field_confidence: hit.field_confidence.clone(),
                });
            }
            let sim = self.inner.simulate(req).await?;
            self.cache.lock().await.insert(key, sim.clone());
            Ok(sim)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosmos_trajectory::event::{Observation, ToolInfo, WorldModelInfo};
    use serde_json::json;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A world model that answers each call with a new text: a cache hit is the only way to
    /// get the same answer twice.
    #[derive(Default)]
    struct Counting(AtomicUsize);

    impl WorldModel for Counting {
        fn name(&self) -> String {
            "counting".into()
        }
        fn describe(&self) -> WorldModelInfo {
            crate::world_model::describe(self.name(), [])
        }
        fn simulate<'a>(
            &'a self,
            _req: SimRequest<'a>,
        ) -> BoxFuture<'a, Result<Simulation, SimFailure>> {
            let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
            Box::pin(async move {
                Ok(Simulation::new(
                    Observation {
                        text: format!("answer {n}"),
                        ..Default::default()
                    },
                    Duration::from_millis(5),
                    None,
                    None,
                ))
            })
        }
    }

    #[tokio::test]
    async fn same_call_is_simulated_once() {
        let inner = Arc::new(Counting::default());
        let cached = CachedWorldModel::new(inner.clone());
        let tool = ToolInfo {
            name: "t:x".into(),
            description: String::new(),
            input_schema: cosmos_trajectory::event::ToolSchema::new(json!({})),
            ..Default::default()
        };
        let (a1, a2) = (json!({"a": 1}), json!({"a": 2}));
        let req = |arguments| SimRequest {
            tool: &tool,
            arguments,
            user_request: "q",
            history: &[],
            state: None,
        };
        let first = cached.simulate(req(&a1)).await.unwrap();
        let again = cached.simulate(req(&a1)).await.unwrap();
        assert_eq!(first.observation.text, "answer 1");
        assert_eq!(
            again.observation.text, "answer 1",
            "the second is the cached first"
        );
        assert_eq!(again.latency, Duration::ZERO, "a hit costs nothing");
        assert_eq!(inner.0.load(Ordering::SeqCst), 1, "simulated once");
        let other = cached.simulate(req(&a2)).await.unwrap();
        assert_eq!(
            other.observation.text, "answer 2",
            "another call is simulated"
        );
        assert_eq!(cached.name(), "cached(counting)");
    }
}
