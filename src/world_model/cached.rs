//! The `cached` world model: wraps any world model so that the same call in the same
//! context is simulated once (search revisits the same states often).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::Mutex;

use super::{SimFailure, SimRequest, Simulation, WorldModel, canonical};
use crate::trajectory::event::WorldModelInfo;

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
                return Ok(Simulation {
                    observation: hit.observation.clone(),
                    latency: Duration::ZERO,
                    llm: None,
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
    use crate::trajectory::event::{Observation, ToolInfo};
    use crate::world_model::memory::{MemoryWorldModel, TransitionBuffer};
    use serde_json::json;

    #[tokio::test]
    async fn same_call_is_simulated_once() {
        let mut b = TransitionBuffer::default();
        b.add(
            "t:x",
            json!({"a": 1}),
            Observation {
                text: "one".into(),
                ..Default::default()
            },
        );
        let cached = CachedWorldModel::new(Arc::new(MemoryWorldModel::new(Arc::new(b))));
        let tool = ToolInfo {
            name: "t:x".into(),
            description: String::new(),
            input_schema: json!({}),
        };
        let args = json!({"a": 1});
        let req = SimRequest {
            tool: &tool,
            arguments: &args,
            user_request: "q",
            history: &[],
        };
        let first = cached.simulate(req).await.unwrap();
        let second = cached.simulate(req).await.unwrap();
        assert_eq!(first.observation, second.observation);
        assert_eq!(cached.cache.lock().await.len(), 1);
        assert_eq!(cached.name(), "cached(memory)");
    }
}
