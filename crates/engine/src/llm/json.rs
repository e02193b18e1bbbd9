//! JSON out of model text: the whole text, a fenced block, or the first balanced value.
//!
//! JSON out of model text, in one pass (a stack finds every balanced value; at most
//! 256 are parsed), so a reply of brackets cannot take quadratic time.

use serde_json::Value;

/// The most candidate values tried: past these the reply holds no JSON worth finding.
const MAX_TRIES: usize = 256;

/// The first JSON object or array in `text`, if any parses: the whole text, else the balanced
/// `{…}`/`[…]` values it holds, tried in the order they start. Linear in the text: one pass
/// finds every balanced value, and at most [`MAX_TRIES`] are parsed (a parse of deep nesting
/// stops at serde_json's recursion limit).
pub fn extract_json(text: &str) -> Option<Value> {
    let trimmed = text.trim();
    if let Ok(v) = serde_json::from_str::<Value>(trimmed)
        && (v.is_object() || v.is_array())
    {
        return Some(v);
    }
    let mut spans = balanced_spans(trimmed.as_bytes());
    spans.sort_unstable_by_key(|&(start, _)| start);
    spans
        .into_iter()
        .take(MAX_TRIES)
        .find_map(|(start, end)| serde_json::from_str::<Value>(&trimmed[start..end]).ok())
}

/// Every balanced `{…}`/`[…]` in `bytes` as `(start, end)`, found in one pass: a stack of the
/// openers not closed yet, strings minded inside them (a quote in prose outside any opener
/// starts nothing).
fn balanced_spans(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut open: Vec<usize> = Vec::new();
    let mut spans = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' if !open.is_empty() => in_string = true,
            b'{' | b'[' => open.push(i),
            b'}' | b']' => {
                if let Some(start) = open.pop() {
                    spans.push((start, i + 1));
                }
            }
            _ => {}
        }
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_json_in_text() {
        assert_eq!(extract_json(r#"{"a": 1}"#), Some(json!({"a": 1})));
        assert_eq!(
            extract_json("Sure!\n```json\n{\"a\": \"}\"}\n```"),
            Some(json!({"a": "}"}))
        );
        assert_eq!(
            extract_json("first {broken then [1, 2]"),
            Some(json!([1, 2]))
        );
        assert_eq!(extract_json("no json here"), None);
        assert_eq!(extract_json("42"), None);
    }

    #[test]
    fn a_megabyte_of_brackets_takes_milliseconds() {
        for text in [
            "[".repeat(1 << 20),
            "[]".repeat(1 << 19),
            "{[".repeat(1 << 19),
        ] {
            let started = std::time::Instant::now();
            let _ = extract_json(&text);
            // Generous: the old search from every bracket took minutes to hours here.
            assert!(
                started.elapsed() < std::time::Duration::from_millis(500),
                "{:?}",
                started.elapsed()
            );
        }
    }

    /// The search from every opener, as it was before it was made linear: the reference
    /// the one-pass search must agree with on ordinary text.
    fn quadratic(text: &str) -> Option<Value> {
        let trimmed = text.trim();
        if let Ok(v) = serde_json::from_str::<Value>(trimmed)
            && (v.is_object() || v.is_array())
        {
            return Some(v);
        }
        let bytes = trimmed.as_bytes();
        (0..bytes.len())
            .filter(|&s| bytes[s] == b'{' || bytes[s] == b'[')
            .find_map(|s| {
                let end = balanced_end(&bytes[s..])?;
                serde_json::from_str::<Value>(&trimmed[s..s + end]).ok()
            })
    }

    /// Length of the balanced `{…}`/`[…]` at the start of `bytes`, minding strings.
    fn balanced_end(bytes: &[u8]) -> Option<usize> {
        let mut depth = 0i32;
        let mut in_string = false;
        let mut escaped = false;
        for (i, &b) in bytes.iter().enumerate() {
            if in_string {
                match (escaped, b) {
                    (true, _) => escaped = false,
                    (false, b'\\') => escaped = true,
                    (false, b'"') => in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => in_string = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(i + 1);
                    }
                }
                _ => {}
            }
        }
        None
    }

    use proptest::strategy::Strategy;

    proptest::proptest! {
        #[test]
        fn the_one_pass_finds_what_the_search_from_every_opener_finds(
            pieces in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::string::string_regex("[a-z ,.:!]{0,12}").unwrap(),
                    proptest::sample::select(vec!["{", "[", "]", "}", "```json\n", "\n```"])
                        .prop_map(str::to_string),
                    proptest::collection::vec(0u8..5, 0..4).prop_map(|v| {
                        serde_json::json!({"a": v, "s": "x]}{[\"y", "n": [{"b": null}]}).to_string()
                    }),
                ],
                0..10,
            )
        ) {
            let text = pieces.concat();
            proptest::prop_assert_eq!(extract_json(&text), quadratic(&text), "{}", text);
        }
    }
}
