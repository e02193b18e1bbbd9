//! JSON out of model text: the whole text, a fenced block, or the first balanced value.

use serde_json::Value;

/// The first JSON object or array in `text`, if any parses.
pub fn extract_json(text: &str) -> Option<Value> {
    let trimmed = text.trim();
    if let Ok(v) = serde_json::from_str::<Value>(trimmed)
        && (v.is_object() || v.is_array())
    {
        return Some(v);
    }
    // Try every opening brace or bracket in turn; the first balanced value that parses wins.
    let bytes = trimmed.as_bytes();
    for (start, &b) in bytes.iter().enumerate() {
        if b != b'{' && b != b'[' {
            continue;
        }
        if let Some(end) = balanced_end(&bytes[start..])
            && let Ok(v) = serde_json::from_str::<Value>(&trimmed[start..start + end])
        {
            return Some(v);
        }
    }
    None
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
}
