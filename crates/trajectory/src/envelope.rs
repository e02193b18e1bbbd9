//! One pass over an event line whose envelope comes first, as our writer puts it:
//! `{"seq":…,"t_ms":…,"kind":"…", body…}`. The envelope is read off the front, then the rest
//! of the same map is decoded as that kind's body: the kinds most lines are through their
//! mirrors (`mirror.rs`, no buffering), the others by `EventBody`'s deserializer with `kind`
//! put back in front. Either way the line is scanned once. Anything else (another key order,
//! an unknown kind, a bad line) returns `None`, and the reader takes its general path, which
//! gives the same event or the precise problem.
//!
//! The envelope as our writer spells it (no spaces, plain numbers, a kind without escapes) is
//! read by hand ([`Front`]), and the rest of the line copied after a `{` for serde: through
//! serde the envelope was a fifth of a big run's reading, three keys matched and two numbers
//! parsed on every line. Any other spelling goes through serde whole, as before; tests hold the
//! two readings to the same result.
//!
//! The fast path of `reader::parse_event_str`: a line whose envelope comes first
//! (`seq`, `t_ms`, `kind`, as our writer puts it) is decoded in one pass: the kinds most lines
//! are through their mirrors (`mirror.rs`), the others by `EventBody`'s deserializer with `kind`
//! handed back in front of the rest of the map; anything else steps aside to the general path,
//! which gives the same event or the precise problem. The envelope as the writer spells it is
//! read by hand (`Front`) and the rest handed to serde as a map of its own; any other spelling
//! goes through serde whole (tests hold the two to the same result). Lines are checked as UTF-8
//! once, by the reader, and parsed from `&str`.

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
pub fn parse_with<B: for<'de> KindBody<'de>>(text: &str) -> Option<(u64, u64, B)> {
    match Front::of(text) {
        Some(front) => front.body(text),
        None => parse_through_serde(text),
    }
}

/// [`parse_with`] with the envelope read by serde too: for any spelling of it.
fn parse_through_serde<'de, B: KindBody<'de>>(text: &'de str) -> Option<(u64, u64, B)> {
    let mut de = serde_json::Deserializer::from_str(text);
    let parsed = serde::Deserializer::deserialize_map(&mut de, EnvelopeFirst(PhantomData)).ok()?;
    de.end().ok()?;
    Some(parsed)
}

/// An envelope as our writer spells it, read by hand: `{"seq":N,"t_ms":N,"kind":"K"` with `N`
/// a JSON integer of at most 19 digits and `K` free of escapes and control characters, then
/// `,"` or `}`. Any other spelling is left to serde.
#[derive(Debug)]
struct Front<'a> {
    seq: u64,
    t_ms: u64,
    kind: &'a str,
    /// Where the rest of the map begins: at its `,` or closing `}`.
    rest: usize,
}

impl<'a> Front<'a> {
    fn of(text: &'a str) -> Option<Self> {
        let bytes = text.as_bytes();
        let mut at = 0;
        let expect = |at: &mut usize, literal: &[u8]| {
            let found = bytes.get(*at..*at + literal.len()) == Some(literal);
            *at += literal.len();
            found
        };
        if !expect(&mut at, b"{\"seq\":") {
            return None;
        }
        let seq = integer(bytes, &mut at)?;
        if !expect(&mut at, b",\"t_ms\":") {
            return None;
        }
        let t_ms = integer(bytes, &mut at)?;
        if !expect(&mut at, b",\"kind\":\"") {
            return None;
        }
        // The kind ends at the first quote; a backslash or a control character before it is
        // serde's to read (or refuse).
        let length = bytes[at..]
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        if bytes[at + length] != b'"' {
            return None;
        }
        let kind = &text[at..at + length];
        let rest = at + length + 1;
        // Only `,"` (another field) or `}`: a trailing comma (`,}`) would read as an empty map
        // once its comma became a brace, and spaces are serde's to read.
        let after = &bytes[rest..];
        if !(after.starts_with(b",\"") || after.starts_with(b"}")) {
            return None;
        }
        Some(Self {
            seq,
            t_ms,
            kind,
            rest,
        })
    }

    /// The body of the rest of the map, decoded as the map it is: the rest is copied after an
    /// opening brace in place of its comma (serde cannot start reading inside a map), into a
    /// buffer each thread keeps.
    fn body<B: for<'de> KindBody<'de>>(self, text: &str) -> Option<(u64, u64, B)> {
        thread_local! {
            static REST: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
        }
        REST.with_borrow_mut(|rest| {
            rest.clear();
            let tail = &text[self.rest..];
            rest.push('{');
            rest.push_str(tail.strip_prefix(',').unwrap_or(tail));
            let mut de = serde_json::Deserializer::from_str(rest);
            let body =
                serde::Deserializer::deserialize_map(&mut de, BodyOf(self.kind, PhantomData))
                    .ok()
                    .filter(|_| de.end().is_ok());
            // A rare huge line leaves no huge buffer behind.
            if rest.capacity() > KEPT_REST_BYTES {
                *rest = String::new();
            }
            Some((self.seq, self.t_ms, body?))
        })
    }
}

/// The most room [`Front::body`]'s buffer keeps between lines.
const KEPT_REST_BYTES: usize = 1 << 16;

/// A JSON integer of at most 19 digits (so it fits in a `u64`) at `*at`: one or more
/// digits, no leading zero. A longer one is serde's to read.
fn integer(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let start = *at;
    let mut value: u64 = 0;
    while let Some(digit) = bytes
        .get(*at)
        .map(|b| b.wrapping_sub(b'0'))
        .filter(|&d| d <= 9)
    {
        // (Wraps only past 19 digits, which are refused below.)
        value = value.wrapping_mul(10).wrapping_add(u64::from(digit));
        *at += 1;
    }
    match *at - start {
        1 => Some(value),
        2..=19 if bytes[start] != b'0' => Some(value),
        _ => None,
    }
}

/// The body of a `kind` event from a map that holds only its fields.
struct BodyOf<'k, B>(&'k str, PhantomData<B>);

impl<'de, 'k: 'de, B: KindBody<'de>> Visitor<'de> for BodyOf<'k, B> {
    type Value = B;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an event's fields")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<B, A::Error> {
        B::body(self.0, map)
    }
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
    use crate::reader::parse_event_general;

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

    /// Both readings of `line`, as a whole event and lean: the same, and whether the hand
    /// took the envelope.
    fn read_both_ways(line: &str) -> bool {
        use crate::lean::LeanBody;
        assert_eq!(
            parse_with::<EventBody>(line),
            parse_through_serde::<EventBody>(line),
            "{line}"
        );
        assert_eq!(
            parse_with::<LeanBody>(line),
            parse_through_serde::<LeanBody>(line),
            "{line}"
        );
        Front::of(line).is_some()
    }

    /// Lines as the writer spells them, of kinds read lean and kinds read whole.
    const WRITTEN: [&str; 5] = [
        r#"{"seq":1,"t_ms":0,"kind":"phase","phase":"plan"}"#,
        r#"{"seq":9999999999999999999,"t_ms":10,"kind":"answer","text":"a \"quoted\" answer"}"#,
        r#"{"seq":7,"t_ms":202,"kind":"node_evaluated","node":1,"verdict":"valid","base_reward":0.1,"critic_reward":0.74,"critic_reason":"r","reward":0.42,"terminal":false}"#,
        r#"{"seq":8,"t_ms":212,"kind":"backpropagated","path":[0,1],"value":0.42}"#,
        r#"{"seq":9,"t_ms":300,"kind":"llm_call","role":"planner","model":"m","prompt_tokens":1016,"completion_tokens":68,"latency_ms":301}"#,
    ];

    #[test]
    fn the_envelope_read_by_hand_is_the_one_serde_reads() {
        for line in WRITTEN {
            assert!(
                read_both_ways(line),
                "the writer's spelling is read by hand: {line}"
            );
            assert!(parse_with::<EventBody>(line).is_some(), "{line}");
        }
        // Other spellings of an envelope, and broken ones: serde's to read or refuse.
        for line in [
            r#"{"seq":03,"t_ms":7,"kind":"answer","text":"a"}"#,
            r#"{"seq":18446744073709551615,"t_ms":7,"kind":"answer","text":"a"}"#,
            r#"{"seq":18446744073709551616,"t_ms":7,"kind":"answer","text":"a"}"#,
            r#"{"seq":3.0,"t_ms":7,"kind":"answer","text":"a"}"#,
            r#"{"seq":-3,"t_ms":7,"kind":"answer","text":"a"}"#,
            r#"{"seq":3,"t_ms":7e0,"kind":"answer","text":"a"}"#,
            r#"{ "seq":3,"t_ms":7,"kind":"answer","text":"a"}"#,
            r#"{"seq": 3,"t_ms":7,"kind":"answer","text":"a"}"#,
            r#"{"seq":3,"t_ms":7,"kind":"answ\u0065r","text":"a"}"#,
            r#"{"seq":3,"t_ms":7,"kind":"answer" ,"text":"a"}"#,
            r#"{"seq":3,"t_ms":7,"kind":"answer", "text":"a"}"#,
            r#"{"seq":3,"t_ms":7,"kind":"answer",}"#,
            r#"{"seq":3,"t_ms":7,"kind":"answer""#,
            r#"{"seq":3,"t_ms":7,"kind":"ans"#,
        ] {
            assert!(!read_both_ways(line), "not the writer's spelling: {line}");
        }
        // Taken by hand, and as serde takes them: a kind with no fields (refused by both for
        // want of them), a kind in no release, junk after the object.
        for line in [
            r#"{"seq":3,"t_ms":7,"kind":"answer"}"#,
            r#"{"seq":3,"t_ms":7,"kind":"from_the_future","x":1}"#,
            r#"{"seq":3,"t_ms":7,"kind":"answer","text":"a"} x"#,
            r#"{"seq":3,"t_ms":7,"kind":"answer","text":"a"}  "#,
        ] {
            assert!(read_both_ways(line), "{line}");
        }
    }

    #[test]
    fn a_line_longer_than_the_kept_buffer_reads_as_serde_reads_it_and_so_does_the_next() {
        let long = format!(
            r#"{{"seq":1,"t_ms":2,"kind":"answer","text":"{}"}}"#,
            "x".repeat(KEPT_REST_BYTES * 2)
        );
        assert!(read_both_ways(&long));
        assert!(parse_with::<EventBody>(&long).is_some());
        for line in WRITTEN {
            assert!(read_both_ways(line), "{line}");
        }
    }

    proptest::proptest! {
        /// Any edit near the envelope of a written line reads the same by hand as by serde.
        #[test]
        fn an_edited_envelope_reads_as_serde_reads_it(
            line in proptest::sample::select(WRITTEN.to_vec()),
            edits in proptest::collection::vec(
                (0usize..48, proptest::sample::select(br#"{}",:019-.e \uax"#.to_vec()), 0u8..3),
                1..4,
            ),
        ) {
            let mut bytes = line.as_bytes().to_vec();
            for (at, byte, how) in edits {
                let at = at.min(bytes.len() - 1);
                match how {
                    0 => bytes[at] = byte,
                    1 => bytes.insert(at, byte),
                    _ => {
                        bytes.remove(at);
                    }
                }
            }
            read_both_ways(std::str::from_utf8(&bytes).expect("ASCII edits"));
        }
    }
}
