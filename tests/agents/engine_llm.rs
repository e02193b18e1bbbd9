//! The LLM client against a scripted OpenAI-compatible server over real HTTP.

use crate::support;

use std::time::{Duration, Instant};

use cosmos_engine::llm::LlmClient;
use cosmos_engine::llm::{Endpoint, OutputMode};
use cosmos_engine::llm::{Message, ToolSpec};
use serde_json::json;
use support::*;

fn client(llm: &ScriptedLlm, timeout_ms: u64, retries: u32) -> LlmClient {
    LlmClient::new(Endpoint {
        base_url: llm.base_url(),
        model: "scripted-model".into(),
        api_key: Some("sk-test-abcdefgh12345678".into()),
        temperature: 0.0,
        max_tokens: 64,
        timeout: Duration::from_millis(timeout_ms),
        max_retries: retries,
        output: OutputMode::Json,
        record_messages: false,
        logprobs: false,
    })
}

fn schema() -> serde_json::Value {
    json!({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]})
}

#[tokio::test]
async fn retries_429_honouring_retry_after_then_succeeds() {
    let llm = ScriptedLlm::start(json!([
        {"times": 1, "status": 429, "headers": {"Retry-After": "1"}, "raw": "slow down"},
        {"content": {"x": 7}}
    ]));
    let c = client(&llm, 5_000, 3);
    let start = Instant::now();
    let (v, completion) = c
        .complete_json(&[Message::user("q")], "s", &schema())
        .await
        .unwrap();
    assert_eq!(v, json!({"x": 7}));
    assert!(
        start.elapsed() >= Duration::from_millis(950),
        "waited for Retry-After"
    );
    assert!(!completion.estimated);
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(
        reqs[0]["headers"]["authorization"],
        "Bearer sk-test-abcdefgh12345678"
    );
    assert_eq!(reqs[0]["body"]["response_format"]["type"], "json_schema");
}

/// Peak resident memory of this test's process (nextest runs each test in its own), MB.
fn peak_rss_mb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0, |kb| kb / 1024)
}

#[tokio::test]
async fn a_500_with_a_300_mb_body_is_a_clear_error_read_no_further() {
    let llm = ScriptedLlm::start(json!([{"status": 500, "raw_bytes": 300_000_000u64}]));
    let started = Instant::now();
    let err = client(&llm, 60_000, 0)
        .complete_text(&[Message::user("q")])
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("HTTP 500") && msg.contains("xxxx"), "{msg}");
    assert!(
        msg.len() < 4_000,
        "the message quotes a snippet: {} bytes",
        msg.len()
    );
    // Reading 300 MB would take seconds and hundreds of MB; the cap reads 64 KiB.
    assert!(peak_rss_mb() < 200, "peak RSS {} MB", peak_rss_mb());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_key_in_the_base_url_reaches_the_endpoint_and_never_a_message() {
    let llm = ScriptedLlm::start(json!([{"status": 500, "raw": "internal oops"}]));
    let base = llm
        .base_url()
        .replace("http://", "http://user:sk-userinfo-secret-123456@")
        + "?key=sk-query-secret-123456";
    let client = LlmClient::new(Endpoint {
        base_url: base,
        model: "scripted-model".into(),
        api_key: None,
        temperature: 0.0,
        max_tokens: 64,
        timeout: Duration::from_millis(5_000),
        max_retries: 0,
        output: OutputMode::Json,
        record_messages: false,
        logprobs: false,
    });
    let msg = client
        .complete_text(&[Message::user("q")])
        .await
        .unwrap_err()
        .to_string();
    assert!(msg.contains("HTTP 500"), "{msg}");
    assert!(!msg.contains("secret"), "{msg}");
    // The path went onto the base URL's path, the query stayed a query.
    let path = llm.requests()[0]["path"].as_str().unwrap().to_string();
    assert_eq!(path, "/v1/chat/completions?key=sk-query-secret-123456");
    // A connection that never answers (a bound socket nobody accepts on) names the endpoint
    // without its credentials too.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let down = LlmClient::new(Endpoint {
        base_url: format!(
            "http://user:sk-userinfo-secret-123456@127.0.0.1:{port}/v1?key=sk-q-secret-1"
        ),
        model: "m".into(),
        api_key: None,
        temperature: 0.0,
        max_tokens: 8,
        timeout: Duration::from_millis(2_000),
        max_retries: 0,
        output: OutputMode::Json,
        record_messages: false,
        logprobs: false,
    });
    let msg = down
        .complete_text(&[Message::user("q")])
        .await
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains(&format!("127.0.0.1:{port}/v1/chat/completions")),
        "{msg}"
    );
    assert!(!msg.contains("secret"), "{msg}");
}

#[tokio::test]
async fn always_500_is_a_clear_error_after_bounded_retries() {
    let llm = ScriptedLlm::start(json!([{"status": 500, "raw": "internal oops"}]));
    let err = client(&llm, 5_000, 2)
        .complete_text(&[Message::user("q")])
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("HTTP 500")
            && msg.contains("after 3 attempts")
            && msg.contains("internal oops"),
        "{msg}"
    );
    assert_eq!(llm.requests().len(), 3);
}

#[tokio::test]
async fn slow_replies_time_out() {
    let llm = ScriptedLlm::start(json!([{"delay_s": 3, "content": "late"}]));
    let err = client(&llm, 300, 1)
        .complete_text(&[Message::user("q")])
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("timed out after 2 attempts"),
        "{err}"
    );
}

#[tokio::test]
async fn garbage_and_missing_usage() {
    let llm = ScriptedLlm::start(json!([
        {"when": "garbage", "raw": "<html>not json</html>"},
        {"when": "nousage", "content": "hello there", "no_usage": true}
    ]));
    let c = client(&llm, 5_000, 0);
    let err = c
        .complete_text(&[Message::user("garbage")])
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("not a chat completion") && err.to_string().contains("<html>"),
        "{err}"
    );
    let ok = c.complete_text(&[Message::user("nousage")]).await.unwrap();
    assert!(ok.estimated);
    assert_eq!(ok.completion_tokens, 3);
    assert!(ok.prompt_tokens > 0);
}

#[tokio::test]
async fn json_ladder_falls_back_when_the_format_is_rejected() {
    let llm = ScriptedLlm::start(json!([
        {"when": "json_schema", "status": 400, "raw": "response_format json_schema not supported"},
        {"when": "json_object", "status": 400, "raw": "response_format not supported"},
        {"content": "Sure! Here it is:\n```json\n{\"x\": 3}\n```"}
    ]));
    let c = client(&llm, 5_000, 0);
    let (v, _) = c
        .complete_json(&[Message::user("q")], "s", &schema())
        .await
        .unwrap();
    assert_eq!(v, json!({"x": 3}));
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 3);
    assert!(reqs[2]["body"].get("response_format").is_none());
    assert!(
        reqs[2]["body"]["messages"]
            .to_string()
            .contains("JSON Schema")
    );
    // The client remembers the rung that worked.
    c.complete_json(&[Message::user("q")], "s", &schema())
        .await
        .unwrap();
    assert_eq!(llm.requests().len(), 4);
}

#[tokio::test]
async fn native_tool_calls() {
    let llm = ScriptedLlm::start(
        json!([{"tool_calls": [{"name": "Time_MCP_get_current_time", "arguments": {"timezone": "UTC"}}]}]),
    );
    let c = client(&llm, 5_000, 0);
    let out = c
        .complete_with_tools(
            vec![Message::user("q")],
            vec![ToolSpec::function(
                "Time_MCP_get_current_time",
                "now",
                json!({"type": "object"}),
            )],
        )
        .await
        .unwrap();
    assert_eq!(out.tool_calls.len(), 1);
    assert_eq!(out.tool_calls[0].function.name, "Time_MCP_get_current_time");
    assert_eq!(out.tool_calls[0].arguments(), json!({"timezone": "UTC"}));
    // The request carried the function as the wire format has it.
    let sent = &llm.requests()[0]["body"];
    assert_eq!(
        sent["tools"][0]["function"]["name"],
        "Time_MCP_get_current_time"
    );
}

#[tokio::test]
async fn a_retry_after_no_duration_can_hold_gives_up_instead_of_panicking() {
    for value in ["inf", "1e20", "-5e400", "NaN"] {
        let llm = ScriptedLlm::start(json!([
            {"status": 429, "headers": {"Retry-After": value}, "raw": "slow down"}
        ]));
        let c = client(&llm, 5_000, 3);
        let start = std::time::Instant::now();
        let err = c.complete_text(&[Message::user("q")]).await.unwrap_err();
        let why = err.to_string();
        if value == "NaN" || value == "-5e400" {
            // Not a wait at all: retried at once (backoff), then given up as a 429.
            assert!(why.contains("HTTP 429"), "{value}: {why}");
        } else {
            assert!(why.contains("asked to retry after"), "{value}: {why}");
            assert_eq!(
                llm.requests().len(),
                1,
                "{value}: no retry for an absurd wait"
            );
        }
        assert!(start.elapsed() < Duration::from_secs(30), "{value}");
    }
}

#[tokio::test]
async fn a_huge_reply_is_cut_and_a_monstrous_one_refused() {
    use cosmos_engine::llm::{MAX_REPLY_BYTES, MAX_REPLY_TEXT};
    let big = "y".repeat(3 << 20);
    let monstrous = format!(
        "{{\"choices\": [{{\"message\": {{\"content\": \"{}\"}}}}]}}",
        "z".repeat(MAX_REPLY_BYTES + 1)
    );
    let llm = ScriptedLlm::start(json!([
        {"when": "big", "content": big},
        {"when": "monstrous", "raw": monstrous}
    ]));
    let c = client(&llm, 30_000, 0);
    let cut = c.complete_text(&[Message::user("big")]).await.unwrap();
    assert!(cut.text.len() < MAX_REPLY_TEXT + 200, "{}", cut.text.len());
    assert!(
        cut.text.ends_with(&format!(
            "[cut by mcp-cosmos: {} more bytes of the model's reply]",
            (3 << 20) - MAX_REPLY_TEXT
        )),
        "{}",
        &cut.text[cut.text.len() - 100..]
    );
    let err = c
        .complete_text(&[Message::user("monstrous")])
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("reply over 16 MiB; refused"),
        "{err}"
    );
}

#[tokio::test]
async fn an_endpoint_nobody_answers_on_says_the_connection_was_refused_and_which_setting_names_it()
{
    let dead = dead_port();
    let c = LlmClient::new(Endpoint {
        base_url: format!("http://127.0.0.1:{}/v1", dead.port),
        model: "m".into(),
        api_key: None,
        temperature: 0.0,
        max_tokens: 16,
        timeout: Duration::from_secs(5),
        max_retries: 0,
        output: OutputMode::Json,
        record_messages: false,
        logprobs: false,
    });
    let err = c
        .complete_json(&[Message::user("q")], "s", &schema())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("cannot connect to http://127.0.0.1:"), "{err}");
    assert!(err.contains("connection refused"), "{err}");
    assert!(
        err.contains("base_url") && err.contains("OPENAI_BASE_URL"),
        "{err}"
    );
    assert!(!err.contains("error sending request"), "{err}");
}
