//! A stdio server's stdout, watched for lines longer than rmcp takes (`MAX_MESSAGE_BYTES`,
//! rmcp's `DEFAULT_MAX_LINE_LENGTH`). rmcp drops such a line and keeps waiting, so a call whose
//! reply was too large would look like a server that never answered ("timed out after 60 s").
//! [`Watched`] passes every byte through unchanged and, when a line passes the limit, tells
//! [`Oversized`] at once (at its newline with its size, or when it reaches four times the limit
//! without one), so the waiting call fails at once, saying why.
//!
//! A stdio server's stdout measured on its way to rmcp, which drops a line over
//! 16 MiB and waits on: the call waiting for that reply fails at once with its size instead of
//! timing out.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::Notify;

/// The longest message rmcp reads over stdio (its `DEFAULT_MAX_LINE_LENGTH`, 16 MiB).
pub const MAX_MESSAGE_BYTES: u64 = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH as u64;

/// Where a watched stream says it saw a line too long to be read.
#[derive(Debug, Default)]
pub struct Oversized {
    notify: Notify,
    /// The size of the last oversized line (at least, when it had not ended).
    size: AtomicU64,
    /// Whether that size is the whole line's.
    whole: std::sync::atomic::AtomicBool,
}

impl Oversized {
    /// Waits for the next oversized line; its size in bytes and whether that is all of it.
    pub async fn next(&self) -> (u64, bool) {
        self.notify.notified().await;
        (
            self.size.load(Ordering::Acquire),
            self.whole.load(Ordering::Acquire),
        )
    }

    fn tell(&self, size: u64, whole: bool) {
        self.size.store(size, Ordering::Release);
        self.whole.store(whole, Ordering::Release);
        self.notify.notify_waiters();
    }

    /// What a call whose reply was `size` bytes says.
    pub fn message(size: u64, whole: bool) -> String {
        format!(
            "the server's reply is {}{:.1} MiB, over the {} MiB an MCP message over stdio may \
             be; refused",
            if whole { "" } else { "more than " },
            size as f64 / (1u64 << 20) as f64,
            MAX_MESSAGE_BYTES >> 20
        )
    }
}

/// A stream whose lines are measured on their way through.
pub struct Watched<R> {
    inner: R,
    line: u64,
    told: bool,
    oversized: Arc<Oversized>,
}

impl<R> Watched<R> {
    /// Watches `inner`, telling `oversized`.
    pub fn new(inner: R, oversized: Arc<Oversized>) -> Self {
        Self {
            inner,
            line: 0,
            told: false,
            oversized,
        }
    }

    fn measure(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while let Some(at) = memchr::memchr(b'\n', rest) {
            self.line += at as u64;
            if self.line > MAX_MESSAGE_BYTES && !self.told {
                self.oversized.tell(self.line, true);
            }
            self.line = 0;
            self.told = false;
            rest = &rest[at + 1..];
        }
        self.line += rest.len() as u64;
        if self.line > 4 * MAX_MESSAGE_BYTES && !self.told {
            self.told = true;
            self.oversized.tell(self.line, false);
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Watched<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            self.measure(&buf.filled()[before..]);
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_oversized_line_is_told_with_its_size_ordinary_ones_are_not() {
        let oversized = Arc::new(Oversized::default());
        let mut w = Watched::new(tokio::io::empty(), oversized.clone());
        w.measure(b"{\"ok\": 1}\n{\"ok\": 2}\n");
        assert_eq!(oversized.size.load(Ordering::Acquire), 0);
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..17 {
            w.measure(&chunk);
        }
        assert_eq!(oversized.size.load(Ordering::Acquire), 0, "told at its end");
        w.measure(b"\n");
        assert_eq!(oversized.size.load(Ordering::Acquire), 17 << 20);
        assert!(oversized.whole.load(Ordering::Acquire));
        assert!(Oversized::message(17 << 20, true).starts_with("the server's reply is 17.0 MiB"));
        // A line that never ends is told once it reaches four times the limit, as at least.
        let endless = Arc::new(Oversized::default());
        let mut w = Watched::new(tokio::io::empty(), endless.clone());
        for _ in 0..64 {
            w.measure(&chunk);
        }
        assert_eq!(
            endless.size.load(Ordering::Acquire),
            0,
            "not yet past four times"
        );
        w.measure(&chunk);
        assert_eq!(endless.size.load(Ordering::Acquire), 65 << 20);
        assert!(!endless.whole.load(Ordering::Acquire));
        assert!(Oversized::message(65 << 20, false).contains("more than 65.0 MiB"));
    }
}
