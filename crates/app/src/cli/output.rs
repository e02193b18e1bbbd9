//! What commands print, on standard output and error. A reader that stops early (`cosmos
//! report | head -1`) closes the pipe: printing then ends quietly, as ripgrep's does, and the
//! command goes on to its own ending (a live run finishes and writes its file) instead of
//! panicking. Every command prints through [`outln!`], [`out!`] and [`errln!`], never
//! `println!`, which panics on a closed pipe.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
static STDERR_CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes to standard output unless it was found closed; true while it is open.
pub fn write_out(args: std::fmt::Arguments) -> bool {
    write_to(&mut std::io::stdout().lock(), &STDOUT_CLOSED, args)
}

/// Writes to standard error unless it was found closed.
pub fn write_err(args: std::fmt::Arguments) -> bool {
    write_to(&mut std::io::stderr().lock(), &STDERR_CLOSED, args)
}

/// The one writer behind both: a failed write (a closed pipe, a full disk) marks the stream
/// closed, and nothing is written to it again.
fn write_to(w: &mut dyn Write, closed: &AtomicBool, args: std::fmt::Arguments) -> bool {
    if closed.load(Ordering::Relaxed) {
        return false;
    }
    if w.write_fmt(args).and_then(|()| w.flush()).is_err() {
        closed.store(true, Ordering::Relaxed);
        return false;
    }
    true
}

/// `println!` that a closed standard output does not panic.
macro_rules! outln {
    () => {{ let _ = $crate::cli::output::write_out(format_args!("\n")); }};
    ($($arg:tt)*) => {{
        let _ = $crate::cli::output::write_out(format_args!("{}\n", format_args!($($arg)*)));
    }};
}

/// `print!` that a closed standard output does not panic.
macro_rules! out {
    ($($arg:tt)*) => {{ let _ = $crate::cli::output::write_out(format_args!($($arg)*)); }};
}

/// `eprintln!` that a closed standard error does not panic.
macro_rules! errln {
    ($($arg:tt)*) => {{
        let _ = $crate::cli::output::write_err(format_args!("{}\n", format_args!($($arg)*)));
    }};
}

pub(crate) use {errln, out, outln};

#[cfg(test)]
mod tests {
    use super::*;

    struct Closed;
    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_stream_is_marked_once_and_never_written_again() {
        let closed = AtomicBool::new(false);
        assert!(!write_to(&mut Closed, &closed, format_args!("x")));
        assert!(closed.load(Ordering::Relaxed));
        let mut sink = Vec::new();
        assert!(!write_to(&mut sink, &closed, format_args!("y")));
        assert!(sink.is_empty());
    }
}
