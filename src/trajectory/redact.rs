//! Secret redaction: nothing that looks like a credential reaches a trajectory file.
//!
//! Three rules, applied to every string in an event before it is written:
//! values of object keys that name credentials are replaced whole; every configured
//! secret value is cut out wherever it appears; and token shapes that are keys by
//! construction (`Bearer …`, `sk-…`) are cut out even when nobody configured them.

use std::sync::RwLock;

use serde_json::Value;

/// What replaces a secret.
pub const REDACTED: &str = "[REDACTED]";

/// Object keys whose values are always secrets (compared lower-case, `-` as `_`).
const SECRET_KEYS: &[&str] = &[
    "authorization",
    "api_key",
    "apikey",
    "x_api_key",
    "openai_api_key",
    "access_token",
    "refresh_token",
    "password",
    "secret",
    "client_secret",
    "proxy_authorization",
];

/// Shortest configured secret that is cut out of text; shorter ones would shred ordinary words.
const MIN_SECRET_LEN: usize = 6;

/// Removes secrets from JSON values.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

impl Redactor {
    /// A redactor with only the built-in rules.
    pub fn new() -> Self {
        Self::default()
    }

    /// A redactor with the built-in rules and these secret values.
    pub fn with_secrets<S: Into<String>>(secrets: impl IntoIterator<Item = S>) -> Self {
        let mut r = Self::new();
        for secret in secrets {
            r.add_secret(secret);
        }
        r
    }

    /// Adds a secret value (an API key read from the environment, a header value).
    pub fn add_secret(&mut self, secret: impl Into<String>) {
        let secret = secret.into();
        if secret.len() >= MIN_SECRET_LEN && !self.secrets.contains(&secret) {
            // Longest first, so a secret that contains another is cut whole.
            self.secrets.push(secret);
            self.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
    }

    /// Redacts `value` in place.
    pub fn redact(&self, value: &mut Value) {
        match value {
            Value::String(s) => {
                if let Some(clean) = self.redact_str(s) {
                    *s = clean;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact(v)),
            Value::Object(map) => {
                for (key, v) in map.iter_mut() {
                    if is_secret_key(key) && !v.is_null() {
                        *v = Value::String(REDACTED.to_string());
                    } else {
                        self.redact(v);
                    }
                }
            }
            _ => {}
        }
    }

    /// The redacted text, or `None` when `text` holds nothing to redact.
    pub fn redact_str(&self, text: &str) -> Option<String> {
        let mut out: Option<String> = None;
        for secret in &self.secrets {
            let current = out.as_deref().unwrap_or(text);
            if current.contains(secret.as_str()) {
                out = Some(current.replace(secret.as_str(), REDACTED));
            }
        }
        let current = out.as_deref().unwrap_or(text);
        if let Some(clean) = redact_token_shapes(current) {
            out = Some(clean);
        }
        out
    }
}

/// The secrets this process knows, for its log: a trajectory has its writer's redactor, but
/// the log is written from everywhere (rmcp's traces of arguments and results included).
static PROCESS_SECRETS: RwLock<Redactor> = RwLock::new(Redactor {
    secrets: Vec::new(),
});

/// Adds secrets that every log line is cleaned of from now on.
pub fn remember_for_logs<'a>(secrets: impl IntoIterator<Item = &'a str>) {
    let mut r = PROCESS_SECRETS.write().unwrap_or_else(|p| p.into_inner());
    for s in secrets {
        r.add_secret(s);
    }
}

/// A log line without the secrets remembered so far, nor key shapes (`Bearer …`, `sk-…`).
pub fn redact_log_line(line: &str) -> Option<String> {
    PROCESS_SECRETS
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .redact_str(line)
}

fn is_secret_key(key: &str) -> bool {
    let norm = key.to_ascii_lowercase().replace('-', "_");
    SECRET_KEYS.contains(&norm.as_str()) || norm.ends_with("_api_key") || norm.ends_with("_token")
}

/// Cuts `Bearer <token>` and `sk-<token>` shapes; `None` when there are none.
fn redact_token_shapes(text: &str) -> Option<String> {
    if !text.contains("Bearer ") && !text.contains("bearer ") && !text.contains("sk-") {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut changed = false;
    while !rest.is_empty() {
        let bearer = find_ci(rest, "bearer ");
        let sk = rest.find("sk-");
        let next = match (bearer, sk) {
            (Some(b), Some(s)) => Some(if b <= s { (b, 7) } else { (s, 3) }),
            (Some(b), None) => Some((b, 7)),
            (None, Some(s)) => Some((s, 3)),
            (None, None) => None,
        };
        let Some((at, prefix_len)) = next else {
            out.push_str(rest);
            break;
        };
        let token_start = at + prefix_len;
        let token_len = rest[token_start..]
            .find(|c: char| {
                !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~' | '+' | '/' | '='))
            })
            .unwrap_or(rest.len() - token_start);
        // `sk-` inside a word ("task-") is not a key; a key has length.
        let word_start = at == 0 || !rest[..at].ends_with(|c: char| c.is_ascii_alphanumeric());
        if token_len >= 8 && (prefix_len == 7 || word_start) {
            out.push_str(&rest[..token_start]);
            out.push_str(REDACTED);
            changed = true;
        } else {
            out.push_str(&rest[..token_start]);
        }
        rest = &rest[token_start + if token_len >= 8 { token_len } else { 0 }..];
    }
    changed.then_some(out)
}

fn find_ci(haystack: &str, needle: &str) -> Option<usize> {
    haystack
        .as_bytes()
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_keys_are_replaced_whole() {
        let mut v =
            json!({"headers": {"Authorization": "Bearer abc", "X-Api-Key": "k"}, "ok": "fine"});
        Redactor::new().redact(&mut v);
        assert_eq!(
            v,
            json!({"headers": {"Authorization": REDACTED, "X-Api-Key": REDACTED}, "ok": "fine"})
        );
    }

    #[test]
    fn configured_secrets_are_cut_from_any_text() {
        let mut r = Redactor::new();
        r.add_secret("hunter2-very-secret");
        let mut v =
            json!(["the key is hunter2-very-secret, ok", {"note": "xhunter2-very-secretx"}]);
        r.redact(&mut v);
        assert_eq!(
            v,
            json!([format!("the key is {REDACTED}, ok"), {"note": format!("x{REDACTED}x")}])
        );
    }

    #[test]
    fn short_configured_secrets_are_ignored() {
        let mut r = Redactor::new();
        r.add_secret("a");
        assert_eq!(r.redact_str("banana"), None);
    }

    #[test]
    fn token_shapes_are_cut() {
        let r = Redactor::new();
        assert_eq!(
            r.redact_str("use sk-abcdefgh12345678 and bearer tok_1234567890")
                .as_deref(),
            Some(format!("use sk-{REDACTED} and bearer {REDACTED}").as_str())
        );
        // Ordinary words are left alone.
        assert_eq!(r.redact_str("a task-list and a disk-io"), None);
        assert_eq!(r.redact_str("sk-short"), None);
    }
}
