//! Every ending `cosmos report` can print is one an agent really reaches: each is produced
//! here by an agent run over scripted ports, and the set of them is `Ending::ALL` but
//! `client_closed` and `idle_expired`, which only `cosmos proxy` writes (`tests/servers/engine_proxy.rs`
//! reaches them with a real client), and `source_ended`, which only `cosmos import` writes
//! (`tests/exchange/import.rs`).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::settings::Settings;
use super::testing::{self, ScriptedChat, ScriptedTools, ScriptedWorldModel};
use super::{Budget, End, Env, Meter, plan_exec, react, spiral};
use cosmos_trajectory::event::{Ending, EventBody, Observation};

/// An environment whose planner (every role) replies `replies` in turn, with tools `s:a` and
/// `s:b`, a world model that predicts each call (or none), and `budget`.
fn env(replies: Vec<Value>, world_model: Option<ScriptedWorldModel>, budget: Budget) -> Env {
    let tools = ScriptedTools::new(&["s:a", "s:b"], |_, _| Observation {
        text: "ok".into(),
        ..Default::default()
    });
    let world_model = world_model.map(|w| Arc::new(w) as Arc<dyn crate::world_model::WorldModel>);
    let mut env = testing::env(
        ScriptedChat::json_replies(replies),
        None,
        tools,
        world_model,
        budget.max_steps,
    );
    env.meter = Arc::new(Meter::new(budget));
    env
}

fn predicts() -> Option<ScriptedWorldModel> {
    Some(ScriptedWorldModel(Box::new(|tool| {
        Ok(format!("{tool} predicted"))
    })))
}

fn call(tool: &str) -> Value {
    json!({"action": "call", "tool": tool, "arguments": {}})
}

fn candidates(actions: &[Value]) -> Value {
    json!({ "candidates": actions })
}

fn search(iterations: usize) -> Settings {
    Settings {
        iterations,
        max_depth: 3,
        k: 2,
        alpha: 1.0,
        ..Settings::default()
    }
}

async fn react_end(env: &Env) -> End {
    react::run(env, &mut Vec::<EventBody>::new()).await.unwrap()
}

async fn spiral_end(env: &Env, settings: &Settings) -> End {
    spiral::run(env, &mut Vec::<EventBody>::new(), settings)
        .await
        .unwrap()
}

#[tokio::test]
async fn every_ending_a_report_can_print_is_reached_by_an_agent() {
    let budget = Budget::default();
    let mut reached = BTreeSet::new();
    let mut reach = |expected: Ending, end: End| {
        assert_eq!(end.ending, Some(expected), "{end:?}");
        reached.insert(expected);
    };

    let finishes = env(
        vec![json!({"action": "finish", "answer": "done"})],
        None,
        budget,
    );
    reach(Ending::PlannerFinished, react_end(&finishes).await);

    // Calls, never a finish: the search uses its iterations and the best path runs.
    let searches = env(
        vec![candidates(&[call("s:a"), call("s:b")])],
        predicts(),
        budget,
    );
    reach(
        Ending::SearchExhausted,
        spiral_end(&searches, &search(2)).await,
    );

    let one_step = Budget {
        max_steps: 1,
        ..budget
    };
    let calls = env(vec![call("s:a")], None, one_step);
    reach(Ending::StepLimit, react_end(&calls).await);

    // A planner turn costs more than the whole token budget.
    let few_tokens = Budget {
        max_tokens: 1,
        ..budget
    };
    let calls = env(vec![call("s:a")], None, few_tokens);
    reach(Ending::TokenLimit, react_end(&calls).await);

    let no_time = Budget {
        max_wall: Duration::ZERO,
        ..budget
    };
    let calls = env(vec![call("s:a")], None, no_time);
    reach(Ending::TimeLimit, react_end(&calls).await);

    let world_model_down = Some(ScriptedWorldModel(Box::new(|_| Err("down".into()))));
    let searches = env(
        vec![candidates(&[call("s:a"), call("s:b")])],
        world_model_down,
        budget,
    );
    reach(
        Ending::SearchEndedEarly,
        spiral_end(&searches, &search(3)).await,
    );

    // Only tools no server offers: every candidate is invalid, and no plan has a call.
    let invalid = env(
        vec![candidates(&[call("s:nope"), call("s:gone")])],
        predicts(),
        budget,
    );
    reach(
        Ending::NoCallPlanned,
        spiral_end(&invalid, &search(2)).await,
    );

    let chain = env(vec![call("s:a")], predicts(), budget);
    let (stop, stopped) = tokio::sync::watch::channel(true);
    let mut chain = chain;
    chain.stop = stopped;
    let end = plan_exec::run(&chain, &mut Vec::<EventBody>::new())
        .await
        .unwrap();
    drop(stop);
    reach(Ending::Interrupted, end);

    let agents_endings = Ending::ALL
        .into_iter()
        // A proxy's own endings (tests/servers/engine_proxy.rs reaches both).
        .filter(|e| {
            !matches!(
                e,
                Ending::ClientClosed | Ending::IdleExpired | Ending::SourceEnded
            )
        })
        .collect::<BTreeSet<_>>();
    assert_eq!(reached, agents_endings);
}
