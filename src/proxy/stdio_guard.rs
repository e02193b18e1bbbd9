//! The stdio proxy's framing guard: every line the client sends passes here before rmcp reads
//! it, and every line rmcp writes passes here to stdout. A line that is no JSON gets JSON-RPC's
//! parse error (-32700), one over [`MAX_REQUEST_BYTES`] an invalid request (-32600) read past
//! in bounded memory, and a `tools/call` whose `arguments` is not an object invalid params
//! (-32602), as the JSON-RPC spec gives them; rmcp would drop the first two without a reply
//! and answer the third as an unknown method. Replies are written between rmcp's lines,
//! never inside one.

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;

/// The longest request line taken (as the HTTP proxy's body limit).
pub const MAX_REQUEST_BYTES: usize = 16 << 20;

/// Size of the pipes between the guard and rmcp.
const PIPE_BYTES: usize = 1 << 16;

/// Puts the guard between `input`/`output` (the client's stdio) and rmcp: returns the pair
/// rmcp serves on. The guard's tasks end when the client closes its side and rmcp its own.
pub fn guard(
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
) -> (DuplexStream, DuplexStream) {
    let (to_rmcp, rmcp_reads) = tokio::io::duplex(PIPE_BYTES);
    let (rmcp_writes, from_rmcp) = tokio::io::duplex(PIPE_BYTES);
    let (replies_tx, replies_rx) = mpsc::unbounded_channel();
    tokio::spawn(pass_requests(input, to_rmcp, replies_tx));
    tokio::spawn(pass_replies(from_rmcp, replies_rx, output));
    (rmcp_reads, rmcp_writes)
}

/// What a line from the client is.
#[derive(Debug, PartialEq)]
enum Checked {
    /// For rmcp.
    Pass,
    /// Answered here with this error reply.
    Refused(Value),
}

/// JSON-RPC's error reply to request `id`.
fn error_reply(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Checks one whole line (without its newline).
fn check(line: &[u8]) -> Checked {
    let value: Value = match serde_json::from_slice(line) {
        Ok(value) => value,
        Err(e) => {
            return Checked::Refused(error_reply(
                Value::Null,
                -32700,
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
        return Checked::Refused(error_reply(
            id,
            -32602,
            "Invalid params: tools/call arguments must be an object",
        ));
    }
    Checked::Pass
}

/// Reads the client's lines, each within [`MAX_REQUEST_BYTES`], passing the good ones to rmcp
/// and the refusals' replies to the writer.
async fn pass_requests(
    input: impl AsyncRead + Unpin,
    mut to_rmcp: DuplexStream,
    replies: mpsc::UnboundedSender<Value>,
) {
    let mut input = BufReader::with_capacity(PIPE_BYTES, input);
    let mut line = Vec::new();
    let mut oversized = false;
    loop {
        let (consumed, complete) = match input.fill_buf().await {
            Ok([]) | Err(_) => break,
            Ok(bytes) => match memchr::memchr(b'\n', bytes) {
                Some(i) => {
                    if !oversized {
                        line.extend_from_slice(&bytes[..i]);
                    }
                    (i + 1, true)
                }
                None => {
                    if !oversized {
                        line.extend_from_slice(bytes);
                    }
                    (bytes.len(), false)
                }
            },
        };
        input.consume(consumed);
        if !oversized && line.len() > MAX_REQUEST_BYTES {
            // Read past, not kept: the rest of the line is only counted.
            oversized = true;
            line = Vec::new();
        }
        if !complete {
            continue;
        }
        let refused = if oversized {
            Some(error_reply(
                Value::Null,
                -32600,
                &format!("Invalid Request: a line over {MAX_REQUEST_BYTES} bytes was not read"),
            ))
        } else if line.iter().all(u8::is_ascii_whitespace) {
            None
        } else {
            match check(&line) {
                Checked::Pass => {
                    line.push(b'\n');
                    if to_rmcp.write_all(&line).await.is_err() {
                        break;
                    }
                    None
                }
                Checked::Refused(reply) => Some(reply),
            }
        };
        if let Some(reply) = refused {
            tracing::warn!("refused a client line: {}", reply["error"]["message"]);
            let _ = replies.send(reply);
        }
        line.clear();
        oversized = false;
    }
    // The client closed its side: rmcp sees the end of its input.
    let _ = to_rmcp.shutdown().await;
}

/// Writes rmcp's lines and the guard's replies to the client, whole lines only.
async fn pass_replies(
    from_rmcp: DuplexStream,
    mut replies: mpsc::UnboundedReceiver<Value>,
    mut output: impl AsyncWrite + Unpin,
) {
    let mut from_rmcp = BufReader::new(from_rmcp).split(b'\n');
    let mut replies_open = true;
    loop {
        let line = tokio::select! {
            line = from_rmcp.next_segment() => match line {
                Ok(Some(line)) => line,
                _ => break,
            },
            reply = replies.recv(), if replies_open => match reply {
                Some(reply) => serde_json::to_vec(&reply).unwrap_or_default(),
                None => {
                    replies_open = false;
                    continue;
                }
            },
        };
        if output.write_all(&line).await.is_err()
            || output.write_all(b"\n").await.is_err()
            || output.flush().await.is_err()
        {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bad_line_gets_the_code_the_spec_gives_it() {
        let Checked::Refused(parse) = check(b"{not json") else {
            panic!("passed");
        };
        assert_eq!(parse["error"]["code"], -32700);
        assert_eq!(parse["id"], Value::Null);
        let call = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ok","arguments":"text"}}"#;
        let Checked::Refused(params) = check(call) else {
            panic!("passed");
        };
        assert_eq!(params["error"]["code"], -32602);
        assert_eq!(params["id"], 7);
        let good = br#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"ok","arguments":{"text":"hi"}}}"#;
        assert_eq!(check(good), Checked::Pass);
        let none = br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"ok"}}"#;
        assert_eq!(check(none), Checked::Pass);
    }
}
