//! One pass over an event line whose envelope comes first, as our writer puts it:
//! `{"seq":…,"t_ms":…,"kind":"…", body…}`. The envelope is read off the front, then the rest
//! of the same map is decoded as that kind's body: the kinds most lines are through their
//! mirrors (`mirror.rs`, no buffering), the others by `EventBody`'s deserializer with `kind`
//! put back in front. Either way the line is scanned once. Anything else (another key order, an unknown kind, a bad line)
//! returns `None`, and the reader takes its general path, which gives the same event or the
//! precise problem.

use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::value::{BorrowedStrDeserializer, MapAccessDeserializer};
use serde::de::{DeserializeSeed, MapAccess, Visitor};

use super::event::{Event, EventBody};
use super::mirror;

/// What follows the envelope: decoded from the rest of the map, given the kind.
pub trait KindBody<'de>: Sized {
    /// The body of a `kind` event from the rest of its map; an error steps aside.
    fn body<A: MapAccess<'de>>(kind: &'de str, rest: A) -> Result<Self, A::Error>;
}

impl<'de> KindBody<'de> for EventBody {
    fn body<A: MapAccess<'de>>(kind: &'de str, rest: A) -> Result<Self, A::Error> {
        if mirror::MIRRORED.contains(&kind) {
            return mirror::full_body(kind, rest);
        }
        EventBody::deserialize(MapAccessDeserializer::new(KindInFront {
            kind: Some(kind),
            rest,
        }))
    }
}

/// The event, when `text` is a well-formed line with its envelope first and a known kind.
pub fn parse_envelope_first(text: &str) -> Option<Event> {
    let (seq, t_ms, body) = parse_with::<EventBody>(text)?;
    Some(Event { seq, t_ms, body })
}

/// `seq`, `t_ms` and the body `B` makes of the rest, when `text` has its envelope first.
pub fn parse_with<'de, B: KindBody<'de>>(text: &'de str) -> Option<(u64, u64, B)> {
    let mut de = serde_json::Deserializer::from_str(text);
    let parsed = serde::Deserializer::deserialize_map(&mut de, EnvelopeFirst(PhantomData)).ok()?;
    de.end().ok()?;
    Some(parsed)
}

struct EnvelopeFirst<B>(PhantomData<B>);

impl<'de, B: KindBody<'de>> Visitor<'de> for EnvelopeFirst<B> {
    type Value = (u64, u64, B);

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an event object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let key = |map: &mut A| map.next_key::<&'de str>();
        if key(&mut map)? != Some("seq") {
            return Err(serde::de::Error::custom("seq is not first"));
        }
        let seq = map.next_value::<u64>()?;
        if key(&mut map)? != Some("t_ms") {
            return Err(serde::de::Error::custom("t_ms is not second"));
        }
        let t_ms = map.next_value::<u64>()?;
        if key(&mut map)? != Some("kind") {
            return Err(serde::de::Error::custom("kind is not third"));
        }
        let kind = map.next_value::<&'de str>()?;
        Ok((seq, t_ms, B::body(kind, map)?))
    }
}

/// The rest of an event's map with its `kind` entry put back in front.
struct KindInFront<'de, A> {
    kind: Option<&'de str>,
    rest: A,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for KindInFront<'de, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        if self.kind.is_some() {
            return seed
                .deserialize(BorrowedStrDeserializer::new("kind"))
                .map(Some);
        }
        self.rest.next_key_seed(seed)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Self::Error> {
        match self.kind.take() {
            Some(kind) => seed.deserialize(BorrowedStrDeserializer::new(kind)),
            None => self.rest.next_value_seed(seed),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        self.rest
            .size_hint()
            .map(|n| n + usize::from(self.kind.is_some()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trajectory::reader::parse_event_general;

    #[test]
    fn the_one_pass_gives_what_the_general_path_gives_or_steps_aside() {
        let lines = [
            r#"{"seq":3,"t_ms":7,"kind":"answer","text":"a \"quoted\" answer"}"#,
            r#"{"seq":4,"t_ms":8,"kind":"tool_called","step":1,"tool":"t:x","arguments":{"a":[1,2]},"result":{"text":"ok","is_error":false},"latency_ms":3}"#,
            r#"{"seq":5,"t_ms":9,"kind":"phase","phase":"plan"}"#,
        ];
        for line in lines {
            let fast = parse_envelope_first(line).expect(line);
            assert_eq!(Ok(fast), parse_event_general(line), "{line}");
        }
        // Not ours to take: another order, an unknown kind, an escaped kind, a bad body, junk
        // after the object.
        for line in [
            r#"{"kind":"answer","seq":3,"t_ms":7,"text":"a"}"#,
            r#"{"seq":3,"t_ms":7,"kind":"from_the_future","x":1}"#,
            r#"{"seq":3,"t_ms":7,"kind":"answ\u0065r","text":"a"}"#,
            r#"{"seq":3,"t_ms":7,"kind":"answer","text":5}"#,
            r#"{"seq":3,"t_ms":7,"kind":"answer","text":"a"} x"#,
        ] {
            assert_eq!(parse_envelope_first(line), None, "{line}");
        }
    }
}
