//! Secret redaction: nothing that looks like a credential reaches a trajectory file.
//!
//! Four rules, applied to every string in an event before it is written:
//! values of object keys that name credentials are replaced whole (and the item after a
//! `--token`-like flag in an array); every configured secret value is cut out wherever it
//! appears; token shapes that are keys by construction (`Bearer …`, `sk-…`) are cut out even
//! when nobody configured them; and so are secrets written inside a string by their name or
//! place: `token=T`, `--token T`, a URL's password, a JSON, YAML or INI pair whose key names a
//! credential (`"password": "P"`, `password: P`, `password = P`), an HTTP `Authorization` or
//! `*-Key`/`*-Token` header, a PEM private key's body, a mysql-style client's `-pPASSWORD`, and
//! the secret part of a chat service's webhook URL. The rest of the string is kept: a lookup
//! `key: alpha` is data.
//!
//! The one credential recogniser: `names_a_credential` (the keys of data, by
//! their words: `api_key` is a credential, a key-value server's `key` is data),
//! `names_a_secret_setting` (environment variables, flags, `env` entries, query parameters:
//! those too, and any name ending in `key`), `url_shown` (an address as recorded and named:
//! userinfo and query values hidden; endpoints and servers alike), `looks_like_a_key` (values) and the key
//! shapes cut out of any text (`Bearer …`, `sk-…`, `ghp_…`, a JWT…); the `Redactor` every writer,
//! export and log line uses, with the secrets configured (`${VAR}` values and the like).

use std::sync::RwLock;

use serde_json::Value;

/// What replaces a secret.
pub const REDACTED: &str = "[REDACTED]";
/// What stands for a credential in a target shown to people (a URL, a command line).
pub const HIDDEN: &str = "***";

/// The words that make a name a credential's: an object key, an environment variable, a flag,
/// a query parameter (split into words at `_`, `-` and case changes, compared lower-case).
const CREDENTIAL_WORDS: &[&str] = &[
    "apikey",
    "accesskey",
    "secretkey",
    "privatekey",
    "token",
    "secret",
    "password",
    "passwd",
    "credential",
    "credentials",
    "cookie",
    "session",
    "auth",
    "authorization",
    "authentication",
];

/// Prefixes of keys by construction (OpenAI, Stripe, GitHub, GitLab, Slack, AWS, Google,
/// Hugging Face, a JWT's header).
const KEY_PREFIXES: &[&str] = &[
    "sk-",
    "sk_",
    "pk_",
    "rk_",
    "ghp_",
    "gho_",
    "ghs_",
    "ghu_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "akia",
    "aiza",
    "hf_",
    "eyj",
];

/// Words that make a following `key` a credential's (`api_key`, `AWS_SECRET_ACCESS_KEY`,
/// `private-key`); `key` alone, or a `sort_key` or `cache_key`, is data: a key-value server's
/// `key: "alpha"` is recorded as it is.
const KEY_QUALIFIERS: &[&str] = &[
    "api",
    "access",
    "secret",
    "private",
    "signing",
    "encryption",
    "master",
    "client",
    "license",
    "subscription",
    "auth",
];

/// The one rule for a name that holds a credential: `api_key`, `X-Api-Key`, `accessToken`,
/// `GITHUB_TOKEN`, `--auth-token`, `DB_PASSWORD`, `session`… (a word of it is a credential
/// word, or `key` after a word that makes it one; `keyword`, `author` or `key` alone are not).
pub fn names_a_credential(name: &str) -> bool {
    let words = words_of(name);
    words.iter().any(|w| CREDENTIAL_WORDS.contains(&w.as_str()))
        || words
            .windows(2)
            .any(|w| w[1] == "key" && KEY_QUALIFIERS.contains(&w[0].as_str()))
}

/// A name's words, lower-case: split at `_`, `-`, `.`, spaces and case changes.
fn words_of(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if c == '_' || c == '-' || c == '.' || c == ' ' {
            words.push(std::mem::take(&mut word));
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower {
            words.push(std::mem::take(&mut word));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        word.push(c.to_ascii_lowercase());
    }
    words.push(word);
    words
}

/// The rule for the name of a setting rather than of data (an environment variable, a
/// command-line flag, a server's `env` entry): a credential's name, or one whose last word is
/// `key` (`MY_WORLD_MODEL_KEY`, `--key`). A setting named for a key holds one; a tool's
/// argument named `key` is data ([`names_a_credential`]).
pub fn names_a_secret_setting(name: &str) -> bool {
    names_a_credential(name)
        || name
            .rsplit(['_', '-', '.'])
            .next()
            .is_some_and(|last| last.eq_ignore_ascii_case("key"))
}

/// The one rule for a value shaped like a key: a known key prefix and length, or a long run of
/// letters and digits (both) with nothing else but `_` and `-`.
pub fn looks_like_a_key(value: &str) -> bool {
    let s = value.trim();
    let lower = s.to_ascii_lowercase();
    if s.len() >= 12 && KEY_PREFIXES.iter().any(|p| lower.starts_with(p)) {
        return true;
    }
    s.len() >= 24
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && s.chars().any(|c| c.is_ascii_digit())
        && s.chars().any(|c| c.is_ascii_alphabetic())
}

/// Shortest configured secret that is cut out of text; shorter ones would shred ordinary words.
const MIN_SECRET_LEN: usize = 6;

/// Removes secrets from JSON values.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

impl Redactor {
    /// The values of this process's environment variables whose names are a credential's
    /// (`OPENAI_API_KEY`, a role's `api_key_env`, `GITHUB_TOKEN`…): secrets wherever they
    /// appear, whoever pasted them.
    pub fn environment_secrets() -> Vec<String> {
        std::env::vars()
            .filter(|(name, _)| names_a_secret_setting(name))
            .map(|(_, value)| value)
            .collect()
    }

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

    /// Redacts `value` in place; true when anything was taken out.
    pub fn redact(&self, value: &mut Value) -> bool {
        match value {
            Value::String(s) => match self.redact_str(s) {
                Some(clean) => {
                    *s = clean;
                    true
                }
                None => false,
            },
            // Every item is looked at, whatever the ones before held; an item after a flag
            // that names a secret setting (`["--token", "T"]`, a command's arguments) is one.
            Value::Array(items) => {
                let mut changed = false;
                let mut after_flag = false;
                for v in items.iter_mut() {
                    if after_flag && let Value::String(s) = v {
                        if s != REDACTED {
                            *s = REDACTED.to_string();
                            changed = true;
                        }
                    } else {
                        changed |= self.redact(v);
                    }
                    after_flag = v.as_str().is_some_and(|s| {
                        s.starts_with("--")
                            && !s.contains('=')
                            && names_a_secret_setting(s.trim_start_matches('-'))
                    });
                }
                changed
            }
            Value::Object(map) => {
                let mut changed = false;
                for (key, v) in map.iter_mut() {
                    if names_a_credential(key) && !v.is_null() {
                        *v = Value::String(REDACTED.to_string());
                        changed = true;
                    } else {
                        changed |= self.redact(v);
                    }
                }
                changed
            }
            _ => false,
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

/// Cuts secrets by their shape or their name out of text, keeping what names them; `None`
/// when there are none. One pass over the text:
///
/// - `Bearer <token>` and keys by construction ([`KEY_PREFIXES`]: `sk-…`, `ghp_…`, a JWT…), in
///   any case (a prefix inside a word, `task-`, is none, and a token has length);
/// - a URL's password (`scheme://user:PASSWORD@host`);
/// - the value of a credential's name (`token=T`, `?access_token=T`, `password=P`,
///   `--api-key=K`; [`names_a_credential`], so `key=alpha` is data);
/// - the word after a flag that names a secret setting (`--token T`, `--key K`;
///   [`names_a_secret_setting`]).
fn redact_token_shapes(text: &str) -> Option<String> {
    // On the text's own bytes (every string of every event passes here on its way to a file:
    // no copy unless something is cut). Every marker is ASCII, so every cut is at a
    // character's boundary.
    let b = text.as_bytes();
    let starts =
        |i: usize, p: &[u8]| b.len() >= i + p.len() && b[i..i + p.len()].eq_ignore_ascii_case(p);
    let is_token = |c: &u8| c.is_ascii_alphanumeric() || b"-_.~+/=".contains(c);
    let mut out: Option<String> = None;
    let (mut copied, mut i) = (0, 0);
    while i < b.len() {
        if let Some((start, end)) = secret_at(b, i, &starts, &is_token) {
            // Already cut (a text redacted before): nothing more to take out.
            if &b[start..end] == REDACTED.as_bytes() {
                i = end;
                continue;
            }
            let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
            o.push_str(&text[copied..start]);
            o.push_str(REDACTED);
            copied = end;
            i = end;
            continue;
        }
        i += 1;
    }
    let mut out = out?;
    out.push_str(&text[copied..]);
    Some(out)
}

/// Longest name looked back at before `=` or a flag's space: a credential's name is short,
/// and the look back stays bounded on any text.
const NAME_LOOKBACK: usize = 64;

/// Chat services whose webhook URL is its own credential: a host (or the end of one) and the
/// start of the path after which the URL is the secret.
const WEBHOOKS: &[(&str, &str)] = &[
    ("hooks.slack.com", "/services/"),
    ("hooks.slack.com", "/workflows/"),
    ("hooks.slack.com", "/triggers/"),
    ("discord.com", "/api/webhooks/"),
    ("discordapp.com", "/api/webhooks/"),
    ("webhook.office.com", "/webhookb2/"),
    ("logic.azure.com", "/workflows/"),
    ("chat.googleapis.com", "/v1/spaces/"),
    ("api.telegram.org", "/bot"),
];

/// The clients of MySQL's family, whose `-pPASSWORD` (no space) is the password.
const PASSWORD_FLAG_CLIENTS: &[&str] = &["mysql", "mariadb"];

/// Longest stretch of a line looked back at for a mysql-style client's name.
const CLIENT_LOOKBACK: usize = 512;

/// The secret that a marker at `i` introduces, as the byte range to cut (starting at or after
/// `i`), if any.
fn secret_at(
    b: &[u8],
    i: usize,
    starts: &dyn Fn(usize, &[u8]) -> bool,
    is_token: &dyn Fn(&u8) -> bool,
) -> Option<(usize, usize)> {
    let at_word = i == 0 || !b[i - 1].is_ascii_alphanumeric();
    let prefix = if starts(i, b"bearer ") {
        Some(7)
    } else if at_word {
        KEY_PREFIXES
            .iter()
            .find(|p| starts(i, p.as_bytes()))
            .map(|p| p.len())
    } else {
        None
    };
    if let Some(len) = prefix {
        let start = i + len;
        let token = b[start..].iter().take_while(|c| is_token(c)).count();
        if token >= 8 {
            return Some((start, start + token));
        }
    }
    match b[i] {
        b':' if starts(i, b"://") => webhook_secret(b, i + 3).or_else(|| url_password(b, i + 3)),
        b':' => {
            let name = name_before(b, before_pair(b, i))?;
            ((names_a_credential(name) && !names_what_a_secret_is(name))
                || names_a_header_secret(name))
            .then(|| pair_value(b, i + 1, true))
            .flatten()
        }
        b'=' => {
            let name = name_before(b, before_pair(b, i))?;
            let named = if name.starts_with('-') {
                names_a_secret_setting(name.trim_start_matches('-'))
            } else {
                names_a_credential(name) && !names_what_a_secret_is(name)
            };
            named.then(|| pair_value(b, i + 1, false)).flatten()
        }
        b'-' if starts(i, b"-----begin ") => pem_body(b, i),
        // `-p` as a word of its own (never the `p` of `--password`), lower-case (`-P` is
        // a port).
        b'-' if (i == 0 || b[i - 1].is_ascii_whitespace()) && b.get(i + 1) == Some(&b'p') => {
            client_password(b, i)
        }
        b' ' => {
            let name = name_before(b, i)?;
            let flag = name.starts_with("--") && name.len() > 2;
            let preceded = i == name.len() || b[i - name.len() - 1].is_ascii_whitespace();
            (flag && preceded && names_a_secret_setting(name.trim_start_matches('-')))
                .then(|| value_after(b, i + 1))
                .flatten()
        }
        _ => None,
    }
}

/// The name (letters, digits, `_`, `-`, `.`) that ends just before `end`, if short enough.
fn name_before(b: &[u8], end: usize) -> Option<&str> {
    let is_name = |c: &u8| c.is_ascii_alphanumeric() || b"_-.".contains(c);
    let len = b[..end]
        .iter()
        .rev()
        .take(NAME_LOOKBACK + 1)
        .take_while(|c| is_name(c))
        .count();
    if len == 0 || len > NAME_LOOKBACK {
        return None;
    }
    std::str::from_utf8(&b[end - len..end]).ok()
}

/// Where a pair's name ends before the `=` or `:` at `i`: blanks and a closing quote (a JSON
/// key's, or an escaped one's inside a JSON string) are passed over.
fn before_pair(b: &[u8], i: usize) -> usize {
    let mut end = i;
    while end > 0 && b" \t".contains(&b[end - 1]) && i - end < 8 {
        end -= 1;
    }
    if end > 0 && b"\"'".contains(&b[end - 1]) {
        end -= 1;
        if end > 0 && b[end - 1] == b'\\' {
            end -= 1;
        }
    }
    end
}

/// Last words that make a credential's name that of a fact about it, not of the secret: a
/// `session_id`, a `token_count`, an `auth_type` are written as they are.
const ABOUT_A_SECRET: &[&str] = &["id", "ids", "count", "type", "name", "length", "limit"];

/// True for a name such as `session_id` or `token_count` (see [`ABOUT_A_SECRET`]).
fn names_what_a_secret_is(name: &str) -> bool {
    words_of(name)
        .last()
        .is_some_and(|last| ABOUT_A_SECRET.contains(&last.as_str()))
}

/// True for a header-style name whose last word is `Key` or `Token` (`X-Custom-Key`): with a
/// dash in it, it names a credential where a plain `key:` is data.
fn names_a_header_secret(name: &str) -> bool {
    name.contains('-')
        && name.rsplit('-').next().is_some_and(|last| {
            last.eq_ignore_ascii_case("key") || last.eq_ignore_ascii_case("token")
        })
}

/// The value of a pair that starts after blanks at `start`: a quoted one to its closing quote
/// (`\"` closes what `\"` opened); an unquoted one to the end of the line (`line`: a YAML or
/// header value may hold spaces) or of the word. None when empty, nested (`{`, `[`) or already
/// a redaction.
fn pair_value(b: &[u8], start: usize, line: bool) -> Option<(usize, usize)> {
    let mut at = start;
    while at < b.len() && b" \t".contains(&b[at]) {
        at += 1;
    }
    let rest = &b[at..];
    let quote: Option<&[u8]> = if rest.starts_with(b"\\\"") {
        Some(b"\\\"")
    } else if rest.first().is_some_and(|c| b"\"'".contains(c)) {
        Some(&rest[..1])
    } else {
        None
    };
    if let Some(quote) = quote {
        // To the closing quote: for `"` the first one no backslash escapes; never past the
        // line.
        let from = at + quote.len();
        let body = &b[from..];
        let mut len = 0;
        while len < body.len() && body[len] != b'\n' {
            if body[len..].starts_with(quote)
                && (quote.len() > 1 || len == 0 || body[len - 1] != b'\\')
            {
                break;
            }
            len += 1;
        }
        return (len > 0).then_some((from, from + len));
    }
    if !line {
        return value_after(b, at);
    }
    if rest.first().is_some_and(|c| b"{[".contains(c)) {
        return None;
    }
    let len = rest
        .iter()
        .take_while(|c| !b"\r\n\"',}]\\".contains(c))
        .count();
    let len = rest[..len]
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(0, |p| p + 1);
    (len > 0).then_some((at, at + len))
}

/// The body of a PEM private key whose `-----BEGIN` is at `i` (to its `-----END`, or to the
/// end of the text if it has none): the BEGIN and END lines are kept.
fn pem_body(b: &[u8], i: usize) -> Option<(usize, usize)> {
    let label_start = i + "-----BEGIN ".len();
    let label_len = b[label_start..].iter().take(64).position(|c| *c == b'-')?;
    let label = &b[label_start..label_start + label_len];
    if !label
        .windows(11)
        .any(|w| w.eq_ignore_ascii_case(b"PRIVATE KEY"))
    {
        return None;
    }
    let mut start = label_start + label_len;
    start += b[start..].iter().take_while(|c| **c == b'-').count();
    let end = memchr::memmem::find(&b[start..], b"-----END").map_or(b.len(), |e| start + e);
    let body = &b[start..end];
    let first = body.iter().position(|c| !c.is_ascii_whitespace())?;
    let last = body.iter().rposition(|c| !c.is_ascii_whitespace())?;
    Some((start + first, start + last + 1))
}

/// The password of a mysql-style client's `-pPASSWORD` at `i`, when the line names such a
/// client before it (`-p` alone prompts; `ssh -p2222` is a port).
fn client_password(b: &[u8], i: usize) -> Option<(usize, usize)> {
    let line_start = b[..i]
        .iter()
        .rev()
        .take(CLIENT_LOOKBACK)
        .position(|c| *c == b'\n')
        .map_or(i.saturating_sub(CLIENT_LOOKBACK), |p| i - p);
    let line = b[line_start..i].to_ascii_lowercase();
    let named = PASSWORD_FLAG_CLIENTS
        .iter()
        .any(|client| memchr::memmem::find(&line, client.as_bytes()).is_some());
    if !named {
        return None;
    }
    let start = i + 2;
    let len = b[start..]
        .iter()
        .take_while(|c| !c.is_ascii_whitespace() && !b"\"'`;&|".contains(c))
        .count();
    (len > 0).then_some((start, start + len))
}

/// The secret part of a chat service's webhook URL whose authority starts at `start`.
fn webhook_secret(b: &[u8], start: usize) -> Option<(usize, usize)> {
    let url_len = b[start..]
        .iter()
        .take_while(|c| !c.is_ascii_whitespace() && !b"\"'<>`\\".contains(c))
        .count();
    let url = &b[start..start + url_len];
    let host_len = url.iter().position(|c| b"/?#".contains(c))?;
    let host = url[..host_len].to_ascii_lowercase();
    let host = match host.iter().rposition(|c| *c == b':') {
        Some(port) => &host[..port],
        None => &host[..],
    };
    let path = &url[host_len..];
    WEBHOOKS.iter().find_map(|(service, prefix)| {
        let ours = host == service.as_bytes()
            || (host.len() > service.len()
                && host.ends_with(service.as_bytes())
                && host[host.len() - service.len() - 1] == b'.');
        let secret = start + host_len + prefix.len();
        (ours
            && path.len() > prefix.len()
            && path[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes()))
        .then_some((secret, start + url_len))
    })
}

/// The value that starts at `start` and runs to a space, a quote or a separator (`&`, `,`, `;`),
/// unless it is empty or already a redaction.
fn value_after(b: &[u8], start: usize) -> Option<(usize, usize)> {
    let len = b[start..]
        .iter()
        .take_while(|c| !c.is_ascii_whitespace() && !b"&\"',;<>()[]{}#".contains(c))
        .count();
    (len > 0 && !b[start..].starts_with(HIDDEN.as_bytes())).then_some((start, start + len))
}

/// The password of a URL whose authority starts at `start` (just after `://`), if it has one.
fn url_password(b: &[u8], start: usize) -> Option<(usize, usize)> {
    let authority = b[start..]
        .iter()
        .take_while(|c| !c.is_ascii_whitespace() && !b"/?#\"'<>".contains(c))
        .count();
    let authority = &b[start..start + authority];
    let at = authority.iter().rposition(|c| *c == b'@')?;
    let colon = authority[..at].iter().position(|c| *c == b':')?;
    (at > colon + 1 && &authority[colon + 1..at] != HIDDEN.as_bytes())
        .then_some((start + colon + 1, start + at))
}

/// A URL as recorded, and the credentials it holds: userinfo and every query value are shown
/// as `***`; the userinfo and the values of credential-named (or key-shaped) query parameters
/// are secrets.
pub fn url_shown(text: &str) -> (String, Vec<String>) {
    let Ok(mut url) = url::Url::parse(text) else {
        // Not a URL we can take apart: show none of it beyond its scheme and host-ish start.
        return (
            text.split(['?', '@']).next().unwrap_or("").to_string() + "…",
            vec![],
        );
    };
    let mut secrets = Vec::new();
    if !url.username().is_empty() || url.password().is_some() {
        secrets.extend(url.password().map(decoded));
        secrets.push(decoded(url.username()));
        let _ = url.set_username(HIDDEN);
        let _ = url.set_password(None);
    }
    if url.query().is_some() {
        let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
        for (k, v) in &pairs {
            if names_a_secret_setting(k) || looks_like_a_key(v) {
                secrets.push(v.clone());
            }
        }
        let shown: Vec<String> = pairs.iter().map(|(k, _)| format!("{k}={HIDDEN}")).collect();
        url.set_query(Some(&shown.join("&")));
    }
    (url.to_string(), secrets)
}

fn decoded(s: &str) -> String {
    url::form_urlencoded::parse(format!("x={s}").as_bytes())
        .next()
        .map_or_else(|| s.to_string(), |(_, v)| v.into_owned())
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
    fn every_key_shape_is_cut_in_any_case_and_ordinary_words_are_not() {
        let r = Redactor::new();
        for key in [
            "sk-abcdefgh12345678",
            "sk_live_abcdefgh1234",
            "pk_test_abcdefgh1234",
            "ghp_abcdefghijklmnop1234",
            "github_pat_11ABCDEFG0123456789",
            "glpat-abcdefgh12345678",
            "xoxb-1234567890-abcdefgh",
            "AKIAABCDEFGHIJKLMNOP",
            "AIzaSyA-abcdefgh12345678",
            "hf_abcdefghijklmnop1234",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig12345",
            "SK-ABCDEFGH12345678",
        ] {
            let text = format!("key: {key}, done");
            let clean = r
                .redact_str(&text)
                .unwrap_or_else(|| panic!("{key} not cut"));
            assert!(!clean.contains(&key[key.len() - 6..]), "{clean}");
            assert!(clean.ends_with(", done"), "{clean}");
        }
        for ordinary in [
            "a task-list",
            "shelf_life",
            "monkey business",
            "disk-io, ask-me",
        ] {
            assert_eq!(r.redact_str(ordinary), None, "{ordinary}");
        }
    }

    #[test]
    fn names_of_credentials_by_one_rule() {
        for name in [
            "api_key",
            "X-Api-Key",
            "apiKey",
            "accessToken",
            "GITHUB_TOKEN",
            "--auth-token",
            "DB_PASSWORD",
            "session",
            "Authorization",
            "client_secret",
            "AWS_SECRET_ACCESS_KEY",
            "private-key",
            "x-api-key",
            "ApiKey",
        ] {
            assert!(names_a_credential(name), "{name}");
        }
        // A setting named for a key holds one, wherever the word stands last.
        for name in [
            "MY_WORLD_MODEL_KEY",
            "--key",
            "key",
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
        ] {
            assert!(names_a_secret_setting(name), "{name}");
        }
        for name in ["KEYBOARD", "--keyword", "MONKEY", "PATH"] {
            assert!(!names_a_secret_setting(name), "{name}");
        }
        for name in [
            // A key-value or dictionary server's own data.
            "key",
            "Key",
            "sort_key",
            "cache_key",
            "keys",
            "keyword",
            "author",
            "tokens",
            "prompt_tokens",
            "timezone",
            "monkey",
        ] {
            assert!(!names_a_credential(name), "{name}");
        }
    }

    #[test]
    fn secrets_inside_argument_strings_are_cut_and_ordinary_data_is_not() {
        let r = Redactor::new();
        for (text, secrets) in [
            ("http://bob:PW@host/?token=T", &["PW", "=T"][..]),
            (
                "clone https://u:hunter2@git.example/x.git now",
                &["hunter2"],
            ),
            ("serve --token T1 --port 8", &["T1"]),
            ("serve --api-key=K2, then", &["K2"]),
            ("password=P", &["=P"]),
            ("db?user=ann&access_token=abc123&page=2", &["abc123"]),
            ("DB_PASSWORD=s3cret ./start", &["s3cret"]),
        ] {
            let clean = r
                .redact_str(text)
                .unwrap_or_else(|| panic!("nothing cut from {text}"));
            for secret in secrets {
                assert!(!clean.contains(secret), "{text} -> {clean}");
            }
            assert!(clean.contains(REDACTED), "{clean}");
        }
        let clean = r.redact_str("http://bob:PW@host/?token=T&page=2").unwrap();
        assert_eq!(
            clean,
            format!("http://bob:{REDACTED}@host/?token={REDACTED}&page=2")
        );
        for ordinary in [
            "key=alpha",
            "x = 1",
            "a == b",
            "http://host/path?page=2&sort=name",
            "user@host.example",
            "--port 8080",
            "the token count",
            "mailto:bob@example.com",
            "http://bob:***@host/",
        ] {
            assert_eq!(r.redact_str(ordinary), None, "{ordinary}");
        }
        let mut args = json!({"key": "alpha", "argv": ["run", "--token", "T9", "--port", "8"]});
        assert!(r.redact(&mut args));
        assert_eq!(
            args,
            json!({"key": "alpha", "argv": ["run", "--token", REDACTED, "--port", "8"]})
        );
    }

    /// Hardening VI: the six shapes of a secret inside a string (a JSON, YAML or INI pair, an
    /// HTTP header, a PEM key, mysql's `-p`, a chat webhook) are cut, and what is around them,
    /// the client's user and the API's URL among it, is kept.
    #[test]
    fn secrets_inside_strings_are_cut_and_what_surrounds_them_kept() {
        let r = Redactor::new();
        for (text, secret, kept) in [
            (
                r#"{"user": "ada", "password": "hunter2x"}"#,
                "hunter2x",
                r#""user": "ada""#,
            ),
            (
                r#"{\"password\": \"hunter2x\", \"db\": \"main\"}"#,
                "hunter2x",
                r#"\"db\": \"main\""#,
            ),
            (
                "db:\n  user: ada\n  password: hunter2x\n  port: 5432",
                "hunter2x",
                "port: 5432",
            ),
            (
                "[client]\nuser = ada\npassword = hunter2x\n",
                "hunter2x",
                "user = ada",
            ),
            (
                "GET / HTTP/1.1\nAuthorization: Basic YWRhOmh1bnRlcjI=\nAccept: */*",
                "YWRhOmh1bnRlcjI=",
                "Accept: */*",
            ),
            (
                "curl -H 'X-Api-Key: k3y-v4lue-99' https://api.example.com/v1/items",
                "k3y-v4lue-99",
                "https://api.example.com/v1/items",
            ),
            (
                "X-Custom-Token: t0ken-v4lue",
                "t0ken-v4lue",
                "X-Custom-Token: ",
            ),
            (
                "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\nq83Xb2\n-----END RSA PRIVATE KEY-----\ndone",
                "MIIEpAIBAAKCAQEA",
                "-----END RSA PRIVATE KEY-----\ndone",
            ),
            (
                "mysql -u ada -pS3cretPw shop < dump.sql",
                "S3cretPw",
                "mysql -u ada -p",
            ),
            (
                "post to https://hooks.slack.com/services/T0001/B0001/XXXXsecretXXXX now",
                "XXXXsecretXXXX",
                "https://hooks.slack.com/services/",
            ),
            (
                "https://discord.com/api/webhooks/1234/abcDEFsecret",
                "abcDEFsecret",
                "https://discord.com/api/webhooks/",
            ),
        ] {
            let clean = r
                .redact_str(text)
                .unwrap_or_else(|| panic!("nothing cut from {text}"));
            assert!(!clean.contains(secret), "{text} -> {clean}");
            assert!(clean.contains(kept), "{text} -> {clean}");
            assert_eq!(r.redact_str(&clean), None, "cut once: {clean}");
        }
        for ordinary in [
            "key: alpha",
            r#"{"key": "alpha", "value": 3}"#,
            "mysql -u ada shop",
            "ssh -p2222 host",
            "mkdir -p /tmp/x",
            "curl https://api.example.com/v1/items",
            "https://example.com/hooks/services/x",
            "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
            "auth:\n  type: basic",
            "time 12:30, port: 8080",
            r#"{"session_id": "s-1", "sessionId": "s-2", "token_count": 12, "auth_type": "basic"}"#,
            "session_id=s-1&page=2",
        ] {
            assert_eq!(r.redact_str(ordinary), None, "{ordinary}");
        }
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        /// A secret: distinct from every plain word (a capital `Q` and digits).
        fn secret() -> impl Strategy<Value = String> {
            "Q[a-z0-9]{6,14}9"
        }

        /// A line that holds no secret: ordinary words (too short to be a token), and lines
        /// that look near a secret's shape.
        fn plain() -> impl Strategy<Value = String> {
            prop_oneof![
                proptest::collection::vec("[a-z]{1,7}", 1..6).prop_map(|w| w.join(" ")),
                Just("mysql -u ada".to_string()),
                Just("https://api.example.com/v1/items?page=2".to_string()),
                Just("key: alpha".to_string()),
                Just("key=alpha".to_string()),
                Just("port: 8080".to_string()),
                Just("the token count".to_string()),
                Just("ssh -p2222 host".to_string()),
            ]
        }

        /// A secret written in one of the shapes the rules know, as one or more lines.
        fn hidden(secret: &str, shape: usize) -> String {
            match shape {
                0 => format!(r#"{{"password": "{secret}"}}"#),
                1 => format!("password: {secret}"),
                2 => format!("password = {secret}"),
                3 => format!("Authorization: Basic {secret}"),
                4 => format!("curl -H 'X-Api-Key: {secret}' https://api.example.com/v1"),
                5 => format!("-----BEGIN PRIVATE KEY-----\n{secret}\n-----END PRIVATE KEY-----"),
                6 => format!("mysql -u ada -p{secret} shop"),
                7 => format!("https://hooks.slack.com/services/T0/B0/{secret}"),
                _ => format!("https://discord.com/api/webhooks/1/{secret}"),
            }
        }

        proptest! {
            /// Redaction takes out every secret, keeps every plain line as it was and in its
            /// place, and leaves nothing for a second pass (it never grows a secret back).
            #[test]
            fn redaction_cuts_secrets_and_keeps_plain_lines(
                lines in proptest::collection::vec(
                    prop_oneof![
                        plain().prop_map(|p| (p, None)),
                        (secret(), 0..9usize).prop_map(|(s, shape)| (hidden(&s, shape), Some(s))),
                    ],
                    1..12,
                )
            ) {
                let text: Vec<&str> = lines.iter().map(|(l, _)| l.as_str()).collect();
                let text = text.join("\n");
                let r = Redactor::new();
                let clean = r.redact_str(&text).unwrap_or_else(|| text.clone());
                for (_, secret) in &lines {
                    if let Some(secret) = secret {
                        prop_assert!(!clean.contains(secret.as_str()), "{clean}");
                    }
                }
                prop_assert_eq!(clean.lines().count(), text.lines().count());
                let plain: Vec<&str> = lines
                    .iter()
                    .filter(|(_, s)| s.is_none())
                    .map(|(l, _)| l.as_str())
                    .collect();
                let mut kept = clean.lines();
                for line in plain {
                    prop_assert!(kept.any(|l| l == line), "{line:?} lost from {clean}");
                }
                prop_assert_eq!(r.redact_str(&clean), None);
            }
        }
    }

    #[test]
    fn a_megabyte_of_near_shapes_is_one_pass() {
        let text = "sk-x task-y ".repeat(90_000);
        let started = std::time::Instant::now();
        assert_eq!(Redactor::new().redact_str(&text), None);
        assert!(started.elapsed() < std::time::Duration::from_millis(500));
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
