//! Where spans go: the OTLP/HTTP endpoint with its headers (credentials kept out of every
//! message), and what became of what was sent (`Delivery`).

use anyhow::{Context as _, Result, bail};

/// Where and how spans are sent.
#[derive(Clone)]
pub struct Target {
    /// The OTLP/HTTP traces URL (ends in `/v1/traces`).
    pub url: String,
    /// Extra HTTP headers (an API key for the receiver): `--header`, then the standard
    /// `OTEL_EXPORTER_OTLP_TRACES_HEADERS` or `OTEL_EXPORTER_OTLP_HEADERS` (which win, as the
    /// exporter applies them last), so every request, the first check's too, carries them.
    pub headers: Vec<(String, String)>,
    /// Send prompts, arguments and results (redacted).
    pub content: bool,
}

impl Target {
    /// A target from `--endpoint`: a base URL gets `/v1/traces` added (Phoenix
    /// `http://localhost:6006`, Langfuse `https://…/api/public/otel`); a URL that already
    /// ends in it is used as given. `headers` are `K=V`.
    pub fn new(endpoint: &str, headers: &[String], content: bool) -> Result<Self> {
        let parsed = reqwest::Url::parse(endpoint)
            .with_context(|| format!("--endpoint {endpoint:?} is not a URL"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            bail!("--endpoint {endpoint:?}: OTLP/HTTP needs an http or https URL");
        }
        let url = if parsed.path().trim_end_matches('/').ends_with("/v1/traces") {
            endpoint.to_string()
        } else {
            format!("{}/v1/traces", endpoint.trim_end_matches('/'))
        };
        let headers = headers
            .iter()
            .map(|h| match h.split_once('=') {
                Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
                // Named by what comes before a separator: the rest may be a credential.
                _ => bail!(
                    "--header {:?}…: expected NAME=VALUE",
                    h.split([':', '=', ' ']).next().unwrap_or_default()
                ),
            })
            .collect::<Result<_>>()?;
        let from_env = std::env::var("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
            .or_else(|_| std::env::var("OTEL_EXPORTER_OTLP_HEADERS"))
            .ok();
        Ok(Self {
            url,
            headers: with_env_headers(headers, from_env.as_deref()),
            content,
        })
    }

    /// The URL with any credentials in it hidden, for messages.
    pub fn shown(&self) -> String {
        // The one way a URL is shown: userinfo and query values hidden.
        cosmos_trajectory::redact::url_shown(&self.url).0
    }
}

/// Without credentials or header values: a `{:?}` may reach a log.
impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("url", &self.shown())
            .field(
                "headers",
                &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .field("content", &self.content)
            .finish()
    }
}

/// `headers` with those of an `OTEL_EXPORTER_OTLP_*HEADERS` value (`k1=v1,k2=v2`, values
/// percent-encoded) put over them; a pair without `=` is skipped, as the exporter skips it.
pub(super) fn with_env_headers(
    mut headers: Vec<(String, String)>,
    env: Option<&str>,
) -> Vec<(String, String)> {
    for pair in env.unwrap_or_default().split(',') {
        let Some((name, value)) = pair.split_once('=') else {
            continue;
        };
        let name = name.trim();
        if name.is_empty() {
            continue;
        }
        let value = percent_encoding::percent_decode_str(value.trim())
            .decode_utf8_lossy()
            .into_owned();
        headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        headers.push((name.to_string(), value));
    }
    headers
}

/// What an export sent and what the receiver refused.
#[derive(Debug, Default)]
pub struct Delivery {
    /// Spans handed to the exporter.
    pub spans: u64,
    /// Spans in requests the receiver refused or that failed.
    pub failed: u64,
    /// The first failure, in words.
    pub first_error: Option<String>,
}

impl Delivery {
    /// What did not arrive at `shown` (the receiver, as messages name it), if anything.
    pub fn problem(&self, shown: &str) -> Option<String> {
        (self.failed > 0).then(|| {
            format!(
                "{} of {} span(s) did not reach {shown}: {}",
                self.failed,
                self.spans,
                self.first_error.as_deref().unwrap_or("unknown error")
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hardening VI: a `--header` written `Name: value` is refused by its name alone: the
    /// value after the separator may be a credential.
    #[test]
    fn a_malformed_header_is_refused_without_its_value() {
        let err = Target::new(
            "http://127.0.0.1:1",
            &["Authorization: Bearer sk-abcdefgh12345678".to_string()],
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("\"Authorization\""), "{err}");
        assert!(!err.contains("abcdefgh"), "{err}");
    }

    #[test]
    fn an_endpoint_gets_the_traces_path_once_and_credentials_stay_out_of_messages() {
        let url = |e: &str| Target::new(e, &[], false).unwrap().url;
        assert_eq!(
            url("http://localhost:6006"),
            "http://localhost:6006/v1/traces"
        );
        assert_eq!(
            url("http://localhost:6006/"),
            "http://localhost:6006/v1/traces"
        );
        assert_eq!(
            url("https://cloud.langfuse.com/api/public/otel"),
            "https://cloud.langfuse.com/api/public/otel/v1/traces"
        );
        assert_eq!(url("http://h:4318/v1/traces"), "http://h:4318/v1/traces");
        let t = Target::new(
            "http://me:pw@h:4318",
            &["Authorization=Basic x=y".into()],
            true,
        )
        .unwrap();
        assert_eq!(
            t.headers,
            [("Authorization".to_string(), "Basic x=y".to_string())]
        );
        assert!(!t.shown().contains("pw"), "{}", t.shown());
        // A key in the query is hidden too, as every target shows a URL.
        let q = Target::new(
            "http://h:4318/v1/traces?api_key=zz-query-key-1234",
            &[],
            false,
        )
        .unwrap();
        assert!(!q.shown().contains("zz-query-key"), "{}", q.shown());
        assert!(Target::new("http://h", &["=v".into()], false).is_err());
    }

    #[test]
    fn headers_from_the_environment_are_decoded_and_win() {
        let given = vec![
            ("Authorization".to_string(), "from-the-command".to_string()),
            ("x-team".to_string(), "a".to_string()),
        ];
        let merged = with_env_headers(
            given.clone(),
            Some("authorization=Bearer%20sk-env-1, x-other = b ,broken,=empty"),
        );
        assert_eq!(
            merged,
            vec![
                ("x-team".to_string(), "a".to_string()),
                ("authorization".to_string(), "Bearer sk-env-1".to_string()),
                ("x-other".to_string(), "b".to_string()),
            ]
        );
        assert_eq!(with_env_headers(given.clone(), None), given);
        let target = Target::new(
            "https://me:pw-123@h/v1/traces",
            &["authorization=Bearer sk-cmd-1".into()],
            false,
        )
        .unwrap();
        let shown = format!("{target:?}");
        assert!(
            !shown.contains("sk-cmd-1")
                && !shown.contains("pw-123")
                && shown.contains("authorization"),
            "{shown}"
        );
    }

    #[test]

    pub(super) fn a_delivery_says_what_did_not_arrive_and_nothing_when_all_did() {
        let mut d = Delivery {
            spans: 10,
            ..Delivery::default()
        };
        assert_eq!(d.problem("R"), None);
        d.failed = 4;
        d.first_error = Some("refused".into());
        assert_eq!(
            d.problem("R").unwrap(),
            "4 of 10 span(s) did not reach R: refused"
        );
    }
}
