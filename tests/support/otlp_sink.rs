//! An OTLP/HTTP receiver on a free port that reads each request whole and answers 200, keeping
//! every request's bytes when asked (to look for what must never be sent). Shared by the tests
//! and `benches/export.rs`.

use std::io::{BufRead, BufReader, Read, Write};
use std::sync::{Arc, Mutex};

/// Starts the receiver: its port, and the bytes of every request when `keep` (else left empty).
pub fn start(keep: bool) -> (u16, Arc<Mutex<Vec<u8>>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let kept = kept.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut writer = stream;
                let record = |bytes: &[u8]| {
                    if keep {
                        kept.lock().unwrap().extend_from_slice(bytes);
                    }
                };
                loop {
                    let mut length = 0usize;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        record(line.as_bytes());
                        let lower = line.to_ascii_lowercase();
                        if let Some(v) = lower.strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    record(&body);
                    let reply = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if writer.write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (port, seen)
}
