//! What one sample of a foreign log may take in memory while it is read (docs/import.md,
//! "Limits"). Bytes are bounded elsewhere (a `.eval` entry's inflated size); what they become is
//! bounded here, as it is made:
//!
//! - [`Counted`] parses a JSON value against a [`Budget`] charged for every value built (its
//!   slot, and a string's or key's bytes): 146 KB of deflated `[0,0,0,…]` is 50 million
//!   numbers, over a gigabyte once parsed, and is refused when the budget runs out, naming
//!   the sample.
//! - [`Attachments`] resolves Inspect's `attachment://KEY` references against a budget of its
//!   own: one attachment may be named any number of times, and each reference is a copy. Once
//!   a sample's copies pass the budget, a reference is kept as a note of what was not copied,
//!   and the run says how many were cut.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// Memory the values of one sample may take once parsed.
pub const SAMPLE_VALUES_BUDGET: u64 = 256 << 20;

/// Bytes of attachment text one sample's references may copy.
pub const ATTACHMENTS_BUDGET: u64 = 128 << 20;

/// What a value costs besides its text: its 32-byte slot, the slack a growing list keeps
/// (up to as much again) and the copy a list makes as it grows.
const VALUE_COST: u64 = 96;

/// What a sample's parsed values may still take.
#[derive(Debug)]
pub struct Budget {
    left: Cell<u64>,
    limit: u64,
    /// What the budget is for, as an error names it ("samples/3_epoch_1.json").
    what: String,
}

impl Budget {
    /// A budget of `limit` bytes for `what`.
    pub fn new(limit: u64, what: impl Into<String>) -> Self {
        Self {
            left: Cell::new(limit),
            limit,
            what: what.into(),
        }
    }

    /// Takes `bytes` from the budget; an error once it is spent.
    fn charge<E: serde::de::Error>(&self, bytes: u64) -> Result<(), E> {
        match self.left.get().checked_sub(bytes) {
            Some(left) => {
                self.left.set(left);
                Ok(())
            }
            None => Err(E::custom(format!(
                "{} takes more than {} MiB of memory once parsed: refused (docs/import.md, \"Limits\")",
                self.what,
                self.limit >> 20
            ))),
        }
    }
}

/// A JSON value parsed against a [`Budget`].
#[derive(Clone, Copy)]
pub struct Counted<'b>(pub &'b Budget);

impl<'de> DeserializeSeed<'de> for Counted<'_> {
    type Value = Value;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Counted<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Value, E> {
        self.0.charge(VALUE_COST)?;
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Value, E> {
        self.0.charge(VALUE_COST)?;
        Ok(Value::from(v))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Value, E> {
        self.0.charge(VALUE_COST)?;
        Ok(Value::from(v))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        self.0.charge(VALUE_COST)?;
        Ok(Value::from(v))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Value, E> {
        self.0.charge(VALUE_COST + v.len() as u64)?;
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Value, E> {
        self.0.charge(VALUE_COST + v.len() as u64)?;
        Ok(Value::String(v))
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Value, E> {
        self.0.charge(VALUE_COST)?;
        Ok(Value::Null)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
        self.visit_none()
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.0.charge(VALUE_COST)?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.0.charge(VALUE_COST)?;
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            self.0.charge::<A::Error>(VALUE_COST + key.len() as u64)?;
            let value = map.next_value_seed(self)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

/// A budgeted value as the list it must be (`null` is an empty one).
pub fn list<E: serde::de::Error>(value: Value, field: &str) -> Result<Vec<Value>, E> {
    match value {
        Value::Array(items) => Ok(items),
        Value::Null => Ok(Vec::new()),
        _ => Err(E::custom(format!("`{field}` is not a list"))),
    }
}

/// A sample's attachments, resolved against a budget of copies.
#[derive(Debug, Default)]
pub struct Attachments {
    texts: HashMap<String, String>,
    copied: Cell<u64>,
    budget: u64,
    cut: Cell<u64>,
}

impl Attachments {
    /// The attachments of one sample (a map of texts), with `budget` bytes to copy.
    pub fn new(texts: HashMap<String, String>, budget: u64) -> Self {
        Self {
            texts,
            copied: Cell::new(0),
            budget,
            cut: Cell::new(0),
        }
    }

    /// `text`, or the attachment it names (`attachment://KEY`) while the budget lasts; past
    /// it, a note of what was not copied.
    pub fn resolved<'a>(&'a self, text: &'a str) -> Cow<'a, str> {
        let Some(found) = text
            .strip_prefix("attachment://")
            .and_then(|key| self.texts.get(key))
        else {
            return Cow::Borrowed(text);
        };
        let copied = self.copied.get() + found.len() as u64;
        if copied <= self.budget {
            self.copied.set(copied);
            return Cow::Borrowed(found);
        }
        self.cut.set(self.cut.get() + 1);
        Cow::Owned(format!(
            "[{text}: {} bytes not copied: this sample's attachments passed {} MiB]",
            found.len(),
            self.budget >> 20
        ))
    }

    /// A value with every attachment reference in it put back (while the budget lasts).
    pub fn resolve(&self, value: &Value) -> Value {
        match value {
            Value::String(text) => Value::String(self.resolved(text).into_owned()),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.resolve(v)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), self.resolve(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// How many references were left uncopied, the budget spent.
    pub fn cut(&self) -> u64 {
        self.cut.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_over_its_budget_is_refused_naming_what_it_was() {
        let budget = Budget::new(10_000, "samples/1.json");
        let many = format!("[{}0]", "0,".repeat(1_000));
        let mut de = serde_json::Deserializer::from_str(&many);
        let err = Counted(&budget).deserialize(&mut de).unwrap_err();
        assert!(err.to_string().contains("samples/1.json"), "{err}");
        let fits = Budget::new(1 << 20, "x");
        let mut de = serde_json::Deserializer::from_str(r#"{"a": [1, "two", null, {"b": true}]}"#);
        let value = Counted(&fits).deserialize(&mut de).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"a": [1, "two", null, {"b": true}]})
        );
    }

    #[test]
    fn attachments_are_copied_while_the_budget_lasts_then_noted() {
        let texts = [("k".to_string(), "x".repeat(100))].into();
        let attachments = Attachments::new(texts, 250);
        assert_eq!(attachments.resolved("attachment://k").len(), 100);
        assert_eq!(attachments.resolved("attachment://k").len(), 100);
        let third = attachments.resolved("attachment://k");
        assert!(third.contains("not copied"), "{third}");
        assert_eq!(attachments.resolved("plain"), "plain");
        assert_eq!(
            attachments.resolved("attachment://missing"),
            "attachment://missing"
        );
        assert_eq!(attachments.cut(), 1);
    }
}
