//! What a client sends that the proxy answers itself, before rmcp reads it: JSON-RPC's error
//! codes as the spec gives them, for the stdio guard's lines and the HTTP proxy's bodies
//! alike. rmcp drops a message that is no JSON without a reply (stdio) or answers it with a
//! bare 415 (HTTP), and answers a `tools/call` whose `arguments` is not an object as an
//! unknown method (-32601).
//!
//! What a client sends that the proxy answers itself, on both transports: -32700
//! for no JSON, -32602 for `tools/call` arguments that are no object (rmcp would drop the one and
//! call the other an unknown method).

use serde_json::{Value, json};

/// What a client's message is.
#[derive(Debug, PartialEq)]
pub enum Screened {
    /// For rmcp.
    Pass,
    /// Answered here with this error reply.
    Refused(Value),
}

/// JSON-RPC's parse error.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's invalid-params error.
pub const INVALID_PARAMS: i64 = -32602;

/// JSON-RPC's error reply to request `id`.
pub fn error_reply(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Screens one whole message (a stdio line without its newline, or an HTTP body).
pub fn screen(message: &[u8]) -> Screened {
    let value: Value = match serde_json::from_slice(message) {
        Ok(value) => value,
        Err(e) => {
            return Screened::Refused(error_reply(
                Value::Null,
                PARSE_ERROR,
                &format!("Parse error: {e}"),
            ));
        }
    };
    if value.get("method").and_then(Value::as_str) == Some("tools/call")
        && let Some(arguments) = value.pointer("/params/arguments")
        && !arguments.is_object()
        && !arguments.is_null()
    {
        let id = value.get("id").cloned().unwrap_or(Value::Null);
        return Screened::Refused(error_reply(
            id,
            INVALID_PARAMS,
            "Invalid params: tools/call arguments must be an object",
        ));
    }
    Screened::Pass
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bad_message_gets_the_code_the_spec_gives_it() {
        let Screened::Refused(parse) = screen(b"{not json") else {
            panic!("passed");
        };
        assert_eq!(parse["error"]["code"], PARSE_ERROR);
        assert_eq!(parse["id"], Value::Null);
        let call = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ok","arguments":"text"}}"#;
        let Screened::Refused(params) = screen(call) else {
            panic!("passed");
        };
        assert_eq!(params["error"]["code"], INVALID_PARAMS);
        assert_eq!(params["id"], 7);
        let good = br#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"ok","arguments":{"text":"hi"}}}"#;
        assert_eq!(screen(good), Screened::Pass);
        let none = br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"ok"}}"#;
        assert_eq!(screen(none), Screened::Pass);
    }
}
