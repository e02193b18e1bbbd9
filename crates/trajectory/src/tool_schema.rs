//! A tool's JSON Schema as a header records it: kept as written when read from a file and
//! decoded the first time something looks inside. A folder of small runs is mostly headers
//! full of schemas, and a totals pass only needs a schema's text (the key of the compiled
//! schema cache in `catalog.rs`), so most schemas read are never decoded. Cheap to clone: the
//! header, the catalogue and every prompt share one.
//!
//! `ToolSchema`, a tool's input schema as a header holds it: kept as written
//! when read from a file and decoded when first looked into (a folder of small runs is mostly
//! headers, and the compile cache needs only the text); cheap to clone, so a run's catalogue and
//! every prompt share the header's.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// A tool's input schema.
#[derive(Clone)]
pub struct ToolSchema(Arc<Inner>);

struct Inner {
    /// The text as read, when read from a file.
    written: Option<Box<RawValue>>,
    value: OnceLock<Value>,
}

impl ToolSchema {
    /// A schema from its value.
    pub fn new(value: Value) -> Self {
        Self(Arc::new(Inner {
            written: None,
            value: OnceLock::from(value),
        }))
    }

    /// A schema as it was written, decoded only when looked into.
    pub fn written(raw: Box<RawValue>) -> Self {
        Self(Arc::new(Inner {
            written: Some(raw),
            value: OnceLock::new(),
        }))
    }

    /// The schema. One read from a file is decoded now; text that was JSON but does not
    /// decode to a value (a number out of range, a lone surrogate) reads as `null`, which
    /// checks nothing, as a schema that does not compile.
    pub fn value(&self) -> &Value {
        self.0.value.get_or_init(|| {
            let written = self.0.written.as_deref().map_or("null", RawValue::get);
            serde_json::from_str(written).unwrap_or_else(|e| {
                tracing::warn!("a tool schema does not decode ({e}); it checks nothing");
                Value::Null
            })
        })
    }

    /// The schema as compact JSON text, without decoding one read from a file.
    pub fn text(&self) -> Cow<'_, str> {
        match &self.0.written {
            Some(raw) => Cow::Borrowed(raw.get()),
            None => Cow::Owned(self.value().to_string()),
        }
    }
}

impl From<Value> for ToolSchema {
    fn from(value: Value) -> Self {
        Self::new(value)
    }
}

impl Default for ToolSchema {
    fn default() -> Self {
        Self::new(Value::Null)
    }
}

impl std::ops::Deref for ToolSchema {
    type Target = Value;

    fn deref(&self) -> &Value {
        self.value()
    }
}

impl PartialEq for ToolSchema {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.value() == other.value()
    }
}

impl fmt::Debug for ToolSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value().fmt(f)
    }
}

impl fmt::Display for ToolSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value().fmt(f)
    }
}

impl Serialize for ToolSchema {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Through the value, so a pretty printer lays it out as any other JSON.
        self.value().serialize(s)
    }
}

impl<'de> Deserialize<'de> for ToolSchema {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(d).map(Self::written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_schema_read_is_kept_as_written_until_looked_into() {
        let read: ToolSchema =
            serde_json::from_str(r#"{"type":"object","required":["a"]}"#).unwrap();
        assert_eq!(read.text(), r#"{"type":"object","required":["a"]}"#);
        assert!(read.0.value.get().is_none(), "not decoded for its text");
        assert_eq!(read.value(), &json!({"type": "object", "required": ["a"]}));
        assert_eq!(
            read,
            ToolSchema::new(json!({"type": "object", "required": ["a"]}))
        );
        assert_eq!(
            serde_json::to_string(&read).unwrap(),
            r#"{"type":"object","required":["a"]}"#
        );
    }

    #[test]
    fn a_schema_comes_through_a_value_too() {
        // The header's upgrade path decodes a `Value` first.
        let read: ToolSchema = serde_json::from_value(json!({"type": "object"})).unwrap();
        assert_eq!(read.value(), &json!({"type": "object"}));
    }

    #[test]
    fn text_that_does_not_decode_reads_as_null() {
        let read: ToolSchema = serde_json::from_str(r#"{"maximum":1e999}"#).unwrap();
        assert_eq!(read.value(), &Value::Null);
    }
}
