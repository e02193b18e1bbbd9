//! JSON checked as a type would take it, without building it: what a lean read
//! (`super::lean`, `super::report_header`) puts in place of the fields it does not keep.
//!
//! Each type here takes exactly the input its owned counterpart takes, through the same
//! `serde_json` entry point (`deserialize_str` for a `String`, `deserialize_any` for a `Value`,
//! `deserialize_seq` for a `Vec`, `deserialize_map` for a `BTreeMap`), so numbers are range
//! checked, escapes decoded and nesting limited by the parser itself; nothing is allocated.
//!
//! JSON checked as a type would take it without building it (`CheckedStr` for a
//! `String`, `AnyJson` for a `Value`, `CheckedSeq`, `CheckedMap`), through the same parser entry
//! points, so the verdicts are the owned types'; what the lean readers put in place of fields
//! they do not keep.

use std::marker::PhantomData;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A string, checked as a `String` is.
#[derive(Debug, Default, Clone, Copy)]
pub struct CheckedStr;

impl<'de> Deserialize<'de> for CheckedStr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Str;
        impl Visitor<'_> for Str {
            type Value = CheckedStr;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E>(self, _: &str) -> Result<CheckedStr, E> {
                Ok(CheckedStr)
            }
        }
        d.deserialize_str(Str)
    }
}

/// Any JSON value, checked as a `serde_json::Value` is.
#[derive(Debug, Default, Clone, Copy)]
pub struct AnyJson;

impl<'de> Deserialize<'de> for AnyJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(AnyJson)
    }
}

impl<'de> Visitor<'de> for AnyJson {
    type Value = AnyJson;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }
    fn visit_i64<E>(self, _: i64) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }
    fn visit_u64<E>(self, _: u64) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }
    fn visit_f64<E>(self, _: f64) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }
    fn visit_str<E>(self, _: &str) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }
    fn visit_unit<E>(self) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<AnyJson, A::Error> {
        while seq.next_element::<AnyJson>()?.is_some() {}
        Ok(AnyJson)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AnyJson, A::Error> {
        while map.next_key::<AnyJson>()?.is_some() {
            map.next_value::<AnyJson>()?;
        }
        Ok(AnyJson)
    }
}

/// A list of `T`, checked as a `Vec<T>` is.
#[derive(Debug)]
pub struct CheckedSeq<T>(PhantomData<T>);

impl<T> Default for CheckedSeq<T> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for CheckedSeq<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Seq<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Seq<T> {
            type Value = CheckedSeq<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a sequence")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<CheckedSeq<T>, A::Error> {
                while seq.next_element::<T>()?.is_some() {}
                Ok(CheckedSeq::default())
            }
        }
        d.deserialize_seq(Seq(PhantomData))
    }
}

/// A map of strings to `V`, checked as a `BTreeMap<String, V>` is.
#[derive(Debug)]
pub struct CheckedMap<V>(PhantomData<V>);

impl<V> Default for CheckedMap<V> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for CheckedMap<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Map<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for Map<V> {
            type Value = CheckedMap<V>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CheckedMap<V>, A::Error> {
                while map.next_key::<CheckedStr>()?.is_some() {
                    map.next_value::<V>()?;
                }
                Ok(CheckedMap::default())
            }
        }
        d.deserialize_map(Map(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::Value;

    use super::*;

    /// Both verdicts of `T` and its owned counterpart `U` on every text, each verdict often.
    fn same_verdicts<'a, T: Deserialize<'a>, U: Deserialize<'a>>(texts: &'a [String]) {
        let mut taken = 0;
        for text in texts {
            let owned = serde_json::from_str::<U>(text).is_ok();
            assert_eq!(serde_json::from_str::<T>(text).is_ok(), owned, "{text}");
            taken += usize::from(owned);
        }
        assert!(
            taken >= 3 && texts.len() - taken >= 3,
            "{taken} of {}",
            texts.len()
        );
    }

    fn texts(list: &[&str]) -> Vec<String> {
        list.iter().map(|t| t.to_string()).collect()
    }

    #[test]
    fn any_json_takes_exactly_what_a_value_takes() {
        let deep = |n| format!("{}{}", "[".repeat(n), "]".repeat(n));
        let mut all = texts(&[
            "null",
            "true",
            "-0",
            "1.5e3",
            "18446744073709551616",
            "1e999",
            "-1e999",
            r#""\ud800""#,
            r#""\ud83d\ude00""#,
            r#""\x""#,
            "\"a\u{1}b\"",
            r#"{"a":1,"a":2}"#,
            r#"{"\ud800":1}"#,
            r#"{"a":[1,{"b":1e999}]}"#,
            "[1,]",
            r#"{"a":1,}"#,
            "01",
        ]);
        all.extend([deep(100), deep(200)]);
        same_verdicts::<AnyJson, Value>(&all);
    }

    #[test]
    fn checked_strings_lists_and_maps_take_what_their_owned_kinds_take() {
        let strings = texts(&[
            r#""a""#,
            r#""\n\"""#,
            r#""\ud800""#,
            r#""\ud83d\ude00""#,
            "null",
            "1",
            "[]",
            r#""\q""#,
        ]);
        same_verdicts::<CheckedStr, String>(&strings);
        let lists = texts(&[
            r#"["a","b"]"#,
            "[]",
            r#"["\n",""]"#,
            r#"["a",1]"#,
            "null",
            r#"{"a":"b"}"#,
            r#"["\ud800"]"#,
        ]);
        same_verdicts::<CheckedSeq<CheckedStr>, Vec<String>>(&lists);
        let maps = texts(&[
            r#"{"a":1,"a":2}"#,
            "{}",
            r#"{"a":"x"}"#,
            "[]",
            "null",
            r#"{"a":1e999}"#,
            r#"{"\ud800":1}"#,
        ]);
        same_verdicts::<CheckedMap<AnyJson>, BTreeMap<String, Value>>(&maps);
    }
}
