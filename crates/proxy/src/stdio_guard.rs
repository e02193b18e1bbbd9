//! The stdio proxy's framing guard: every line the client sends passes here before rmcp reads
//! it, and every line rmcp writes passes here to stdout. A line over [`MAX_REQUEST_BYTES`] gets
//! an invalid request (-32600), read past in bounded memory; every other line is screened
//! (`proxy::screen`: -32700, -32602) as the HTTP proxy screens a body. rmcp would drop the
//! first two without a reply and answer the third as an unknown method. Replies are written
//! between rmcp's lines, never inside one.

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;

use super::screen::{Screened, error_reply, screen};

/// The longest request line taken (as the HTTP proxy's body limit).
pub const MAX_REQUEST_BYTES: usize = 16 << 20;

/// Size of the pipes between the guard and rmcp.
const PIPE_BYTES: usize = 1 << 16;

/// Puts the guard between `input`/`output` (the client's stdio) and rmcp: returns the pair
/// rmcp serves on, and what turns true when the client has closed its side (its input ended:
/// the client is gone, whatever rmcp still waits for). The guard's tasks end when the client
/// closes its side and rmcp its own.
pub fn guard(
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
) -> (
    DuplexStream,
    DuplexStream,
    tokio::sync::watch::Receiver<bool>,
) {
    let (to_rmcp, rmcp_reads) = tokio::io::duplex(PIPE_BYTES);
    let (rmcp_writes, from_rmcp) = tokio::io::duplex(PIPE_BYTES);
    let (replies_tx, replies_rx) = mpsc::unbounded_channel();
    let (left_tx, left) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        pass_requests(input, to_rmcp, replies_tx).await;
        let _ = left_tx.send(true);
    });
    tokio::spawn(pass_replies(from_rmcp, replies_rx, output));
    (rmcp_reads, rmcp_writes, left)
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
            match screen(&line) {
                Screened::Pass => {
                    line.push(b'\n');
                    if to_rmcp.write_all(&line).await.is_err() {
                        break;
                    }
                    None
                }
                Screened::Refused(reply) => Some(reply),
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
