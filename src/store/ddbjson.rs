//! DynamoDB JSON, read: items in the form of DynamoDB's wire responses (`{"Name":{"S":"x"}}`,
//! which the embedded store's rows also were until issue 24; `gridgate` reads those once, to
//! upgrade the file), parsed straight into attribute values.
//!
//! Every read of a grid page decodes every item it returns, so this is the hottest code of a
//! read after the network. A generic JSON deserializer (serde_json driving a visitor, or the
//! AWS SDK's token stream followed by a conversion to serde_dynamo's types) spent a third of a
//! grid page's CPU here; this parser knows the shape (objects of one type tag each, strings
//! for numbers) and makes one allocation per string it keeps and none per token. It accepts
//! exactly JSON (escapes, surrogate pairs, whitespace between tokens) and refuses anything
//! that is not an item, with the byte offset; property tests check it against serde_dynamo.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;

use super::{item_of, AttributeValue, Item};
use crate::jsonscan;

/// Why a text is not DynamoDB JSON, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonError {
    /// Byte offset into the text where reading stopped.
    pub offset: usize,
    pub reason: &'static str,
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.reason, self.offset)
    }
}

impl std::error::Error for JsonError {}

/// Nesting deeper than this is refused. DynamoDB itself allows 32 levels of `M` and `L`; each
/// level here is one JSON object or array, so an item at DynamoDB's limit fits.
const MAX_DEPTH: usize = 80;

/// Reads one item: a JSON object of attribute values, with nothing but whitespace after it.
pub fn item(text: &str) -> Result<Item, JsonError> {
    let mut parser = Parser::new(text);
    let map = parser.map(0)?;
    parser.end()?;
    Ok(item_of(map))
}

/// Reads a JSON array of items (a Query's `Items`, a BatchGetItem's table entry), with nothing
/// but whitespace after it.
pub fn items(text: &str) -> Result<Vec<Item>, JsonError> {
    let mut parser = Parser::new(text);
    let out = parser.item_list()?;
    parser.end()?;
    Ok(out)
}

/// Where a response envelope keeps its items.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemsShape {
    /// A list of items (`Items` of a Query or Scan).
    List,
    /// One item (`Item` of a GetItem).
    One,
    /// An object from table name to a list of items (`Responses` of a BatchGetItem), naming
    /// at most one table.
    Tables,
}

/// Splits a DynamoDB response envelope in one pass: returns the envelope without `member`
/// (JSON text, the other members copied as they are) and the items `member` held (none when
/// it is absent). Refuses a body that is not one JSON object, a member name with escapes
/// (DynamoDB writes none, and an escaped name could hide the member), and a member that is not
/// of `shape`. The other members are skipped, not checked: whoever reads the envelope does.
pub fn split_response(
    text: &str,
    member: &str,
    shape: ItemsShape,
) -> Result<(String, Vec<Item>), JsonError> {
    let mut parser = Parser::new(text);
    // The rest of a Query's envelope (counts, a key, capacity) is a few hundred bytes.
    let mut rest = String::with_capacity(512);
    let mut items = Vec::new();
    rest.push('{');
    parser.object("expected a response object", |p| {
        let name = p.plain_name()?;
        p.eat(b':', "expected : after a member name")?;
        if name == member {
            items = p.shaped_items(shape)?;
        } else {
            p.skip_ws();
            let start = p.at;
            p.skip_value(0)?;
            if rest.len() > 1 {
                rest.push(',');
            }
            rest.push('"');
            rest.push_str(name);
            rest.push_str("\":");
            rest.push_str(&text[start..p.at]);
        }
        Ok(())
    })?;
    parser.end()?;
    rest.push('}');
    Ok((rest, items))
}

/// The type tag of an attribute value (`S`, `M`, ...) and where it starts in the text.
#[derive(Clone, Copy)]
struct Tag<'a> {
    name: &'a [u8],
    at: usize,
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        Parser {
            text,
            bytes: text.as_bytes(),
            at: 0,
        }
    }

    fn fail<T>(&self, reason: &'static str) -> Result<T, JsonError> {
        Err(JsonError {
            offset: self.at,
            reason,
        })
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    /// The next byte after whitespace, not consumed.
    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8, reason: &'static str) -> Result<(), JsonError> {
        if self.peek() == Some(byte) {
            self.at += 1;
            Ok(())
        } else {
            self.fail(reason)
        }
    }

    fn end(&mut self) -> Result<(), JsonError> {
        if self.peek().is_some() {
            return self.fail("trailing characters");
        }
        Ok(())
    }

    /// Reads `[a, b, ...]`, calling `each` with the parser positioned at every element.
    fn list(
        &mut self,
        mut each: impl FnMut(&mut Self) -> Result<(), JsonError>,
    ) -> Result<(), JsonError> {
        self.eat(b'[', "expected an array")?;
        if self.peek() == Some(b']') {
            self.at += 1;
            return Ok(());
        }
        loop {
            each(self)?;
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return self.fail("expected , or ] in an array"),
            }
        }
    }

    /// Reads a map of attribute values: `{"name": {"S": "..."}, ...}`. A repeated name keeps
    /// its last value, as serde_json's maps do.
    fn map(&mut self, depth: usize) -> Result<HashMap<String, AttributeValue>, JsonError> {
        if depth > MAX_DEPTH {
            return self.fail("nested too deeply");
        }
        let mut out = HashMap::with_capacity(8);
        self.object("expected an object of attribute values", |p| {
            let name = p.string()?;
            p.eat(b':', "expected : after an attribute name")?;
            let value = p.value(depth + 1)?;
            out.insert(name, value);
            Ok(())
        })?;
        Ok(out)
    }

    /// Reads `{member, member, ...}`, calling `each` with the parser positioned at every
    /// member (its name first); `absent` is the refusal when there is no object.
    fn object(
        &mut self,
        absent: &'static str,
        mut each: impl FnMut(&mut Self) -> Result<(), JsonError>,
    ) -> Result<(), JsonError> {
        self.eat(b'{', absent)?;
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(());
        }
        loop {
            each(self)?;
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return self.fail("expected , or } in an object"),
            }
        }
    }

    /// Reads a JSON array of items.
    fn item_list(&mut self) -> Result<Vec<Item>, JsonError> {
        let mut items = Vec::new();
        self.list(|p| {
            items.push(item_of(p.map(1)?));
            Ok(())
        })?;
        Ok(items)
    }

    /// Reads one attribute value: an object with exactly one type tag.
    fn value(&mut self, depth: usize) -> Result<AttributeValue, JsonError> {
        if depth > MAX_DEPTH {
            return self.fail("nested too deeply");
        }
        let tag = self.type_tag()?;
        let value = self.typed_value(tag, depth)?;
        self.value_end()?;
        Ok(value)
    }

    /// Reads the opening of an attribute value, `{"TAG":`, and returns the tag.
    fn type_tag(&mut self) -> Result<Tag<'a>, JsonError> {
        self.eat(b'{', "expected an attribute value object")?;
        self.eat(b'"', "an attribute value without a type tag")?;
        let tag_start = self.at;
        let tag_end = match self.bytes[tag_start..].iter().position(|&b| b == b'"') {
            Some(len) => tag_start + len,
            None => return self.fail("unterminated type tag"),
        };
        self.at = tag_end + 1;
        self.eat(b':', "expected : after a type tag")?;
        Ok(Tag {
            name: &self.bytes[tag_start..tag_end],
            at: tag_start,
        })
    }

    /// Reads the value of an attribute value whose tag [`Parser::type_tag`] has just read.
    fn typed_value(&mut self, tag: Tag<'_>, depth: usize) -> Result<AttributeValue, JsonError> {
        Ok(match tag.name {
            b"S" => AttributeValue::S(self.string()?),
            b"N" => AttributeValue::N(self.string()?),
            b"B" => AttributeValue::B(self.binary()?),
            b"BOOL" => AttributeValue::Bool(self.boolean()?),
            b"NULL" => AttributeValue::Null(self.boolean()?),
            b"M" => AttributeValue::M(self.map(depth + 1)?),
            b"L" => {
                let mut values = Vec::new();
                self.list(|p| {
                    values.push(p.value(depth + 1)?);
                    Ok(())
                })?;
                AttributeValue::L(values)
            }
            b"SS" => AttributeValue::Ss(self.strings()?),
            b"NS" => AttributeValue::Ns(self.strings()?),
            b"BS" => {
                let mut values = Vec::new();
                self.list(|p| {
                    values.push(p.binary()?);
                    Ok(())
                })?;
                AttributeValue::Bs(values)
            }
            _ => {
                self.at = tag.at;
                return self.fail("unknown type tag");
            }
        })
    }

    /// Reads the `}` that closes an attribute value.
    fn value_end(&mut self) -> Result<(), JsonError> {
        match self.peek() {
            Some(b'}') => {
                self.at += 1;
                Ok(())
            }
            Some(b',') => self.fail("an attribute value with several type tags"),
            _ => self.fail("expected } after an attribute value"),
        }
    }

    fn strings(&mut self) -> Result<Vec<String>, JsonError> {
        let mut values = Vec::new();
        self.list(|p| {
            values.push(p.string()?);
            Ok(())
        })?;
        Ok(values)
    }

    fn binary(&mut self) -> Result<Vec<u8>, JsonError> {
        let start = self.at;
        let text = self.string()?;
        BASE64.decode(text).or_else(|_| {
            self.at = start;
            self.fail("a binary value that is not base64")
        })
    }

    fn boolean(&mut self) -> Result<bool, JsonError> {
        self.skip_ws();
        let rest = &self.bytes[self.at..];
        if rest.starts_with(b"true") {
            self.at += 4;
            Ok(true)
        } else if rest.starts_with(b"false") {
            self.at += 5;
            Ok(false)
        } else {
            self.fail("expected true or false")
        }
    }

    /// Reads a JSON string. The common case (no escape) is one scan and one copy.
    fn string(&mut self) -> Result<String, JsonError> {
        self.string_cow().map(Cow::into_owned)
    }

    /// Reads a JSON string, borrowed from the text when it has no escape.
    fn string_cow(&mut self) -> Result<Cow<'a, str>, JsonError> {
        self.eat(b'"', "expected a string")?;
        let start = self.at;
        let Some(len) = jsonscan::special_at(&self.bytes[start..]) else {
            self.at = self.bytes.len();
            return self.fail("unterminated string");
        };
        let i = start + len;
        match self.bytes[i] {
            b'"' => {
                self.at = i + 1;
                // Both ends are ASCII quotes, so the slice lies on character boundaries.
                Ok(Cow::Borrowed(&self.text[start..i]))
            }
            b'\\' => {
                let mut out = String::with_capacity(len + 16);
                out.push_str(&self.text[start..i]);
                self.at = i;
                self.escaped_rest(out).map(Cow::Owned)
            }
            _ => {
                self.at = i;
                self.fail("a control character in a string")
            }
        }
    }

    /// Finishes a string that has escapes, from the first backslash.
    fn escaped_rest(&mut self, mut out: String) -> Result<String, JsonError> {
        loop {
            let run_start = self.at;
            self.at = jsonscan::special_at(&self.bytes[run_start..])
                .map_or(self.bytes.len(), |len| run_start + len);
            out.push_str(&self.text[run_start..self.at]);
            match self.bytes.get(self.at) {
                Some(b'"') => {
                    self.at += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.at += 1;
                    let escaped = match self.bytes.get(self.at) {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            self.at += 1;
                            let c = self.unicode_escape()?;
                            out.push(c);
                            continue;
                        }
                        _ => return self.fail("an invalid escape"),
                    };
                    self.at += 1;
                    out.push(escaped);
                }
                Some(_) => return self.fail("a control character in a string"),
                None => return self.fail("unterminated string"),
            }
        }
    }

    /// Reads the digits of `\uXXXX` (the parser is past the `u`), and a low surrogate's
    /// `\uXXXX` after a high one.
    fn unicode_escape(&mut self) -> Result<char, JsonError> {
        let high = self.hex4()?;
        let code = match high {
            0xD800..=0xDBFF => {
                if self.bytes.get(self.at..self.at + 2) != Some(b"\\u") {
                    return self.fail("a lone surrogate in a string");
                }
                self.at += 2;
                let low = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&low) {
                    return self.fail("a lone surrogate in a string");
                }
                0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
            }
            0xDC00..=0xDFFF => return self.fail("a lone surrogate in a string"),
            code => code,
        };
        match char::from_u32(code) {
            Some(c) => Ok(c),
            None => self.fail("an invalid unicode escape"),
        }
    }

    /// Reads an object member's name that has no escapes, without copying it.
    fn plain_name(&mut self) -> Result<&'a str, JsonError> {
        self.eat(b'"', "expected a member name")?;
        let start = self.at;
        let len = jsonscan::special_at(&self.bytes[start..]);
        match len.map(|len| (len, self.bytes[start + len])) {
            Some((len, b'"')) => {
                self.at = start + len + 1;
                Ok(&self.text[start..start + len])
            }
            _ => self.fail("a member name with escapes"),
        }
    }

    fn shaped_items(&mut self, shape: ItemsShape) -> Result<Vec<Item>, JsonError> {
        match shape {
            ItemsShape::List => self.item_list(),
            ItemsShape::One => Ok(vec![item_of(self.map(0)?)]),
            ItemsShape::Tables => {
                let mut items = None;
                self.object("expected an object of tables", |p| {
                    if items.is_some() {
                        return p.fail("more than one table");
                    }
                    p.plain_name()?;
                    p.eat(b':', "expected : after a table name")?;
                    items = Some(p.item_list()?);
                    Ok(())
                })?;
                Ok(items.unwrap_or_default())
            }
        }
    }

    /// Moves past one JSON value of any kind without building it. Strings and nesting are
    /// followed exactly (so a `}` inside a string ends nothing); numbers and literals are
    /// taken up to the next delimiter and left for the envelope's reader to check.
    fn skip_value(&mut self, depth: usize) -> Result<(), JsonError> {
        if depth > MAX_DEPTH {
            return self.fail("nested too deeply");
        }
        match self.peek() {
            Some(b'{') => self.object("expected an object", |p| {
                p.skip_string()?;
                p.eat(b':', "expected : after a member name")?;
                p.skip_value(depth + 1)
            }),
            Some(b'[') => self.list(|p| p.skip_value(depth + 1)),
            Some(b'"') => self.skip_string(),
            Some(_) => {
                let start = self.at;
                while let Some(&b) = self.bytes.get(self.at) {
                    if matches!(b, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t') {
                        break;
                    }
                    self.at += 1;
                }
                if self.at == start {
                    return self.fail("expected a value");
                }
                Ok(())
            }
            None => self.fail("expected a value"),
        }
    }

    /// Moves past one string; an escape's first character is skipped with the backslash, so
    /// `\"` never ends the string.
    fn skip_string(&mut self) -> Result<(), JsonError> {
        self.eat(b'"', "expected a string")?;
        loop {
            // After an escape's backslash the position can be one past the end.
            let rest = self.bytes.get(self.at..).unwrap_or_default();
            let Some(len) = jsonscan::special_at(rest) else {
                self.at = self.bytes.len();
                return self.fail("unterminated string");
            };
            self.at += len;
            match self.bytes[self.at] {
                b'"' => {
                    self.at += 1;
                    return Ok(());
                }
                // The escaped character is skipped with its backslash, whatever it is.
                b'\\' => self.at += 2,
                _ => return self.fail("a control character in a string"),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let Some(digits) = self.bytes.get(self.at..self.at + 4) else {
            return self.fail("a short unicode escape");
        };
        let mut code = 0;
        for &d in digits {
            let v = match d {
                b'0'..=b'9' => d - b'0',
                b'a'..=b'f' => d - b'a' + 10,
                b'A'..=b'F' => d - b'A' + 10,
                _ => return self.fail("a unicode escape that is not hexadecimal"),
            };
            code = code * 16 + u32::from(v);
        }
        self.at += 4;
        Ok(code)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Any attribute value, nested a few levels (also what `store::row` encodes).
    pub(crate) fn attribute_value() -> impl Strategy<Value = AttributeValue> {
        // Quotes, backslashes, control characters and characters outside the BMP make the
        // serializer escape; the text parser must read them back.
        let text = "[a-zA-Z0-9 #\\-_.\"\\\\/\u{1}\n\t\u{7f}é\u{2028}\u{1F600}]{0,12}";
        let leaf = prop_oneof![
            text.prop_map(AttributeValue::S),
            "-?[0-9]{1,6}(\\.[0-9]{1,4})?".prop_map(AttributeValue::N),
            proptest::collection::vec(any::<u8>(), 0..8).prop_map(AttributeValue::B),
            any::<bool>().prop_map(AttributeValue::Bool),
            Just(AttributeValue::Null(true)),
            proptest::collection::vec(text, 1..3).prop_map(AttributeValue::Ss),
            proptest::collection::vec("[0-9]{1,4}", 1..3).prop_map(AttributeValue::Ns),
            proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..4), 1..3)
                .prop_map(AttributeValue::Bs),
        ];
        leaf.prop_recursive(3, 24, 4, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(AttributeValue::L),
                proptest::collection::hash_map(text, inner, 0..4).prop_map(AttributeValue::M),
            ]
        })
    }

    fn an_item() -> impl Strategy<Value = Item> {
        proptest::collection::hash_map("[A-Za-z0-9#]{1,8}", attribute_value(), 0..8)
            .prop_map(Item::from)
    }

    proptest! {
        /// What serde_dynamo writes, compact or pretty, reads back as serde_dynamo reads it.
        #[test]
        fn reads_what_serde_dynamo_writes(item in an_item(), pretty in any::<bool>()) {
            let text = if pretty {
                serde_json::to_string_pretty(&item).unwrap()
            } else {
                serde_json::to_string(&item).unwrap()
            };
            let theirs: Item = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(super::item(&text).unwrap(), theirs);
        }

        /// Lists of items, as in a Query response.
        #[test]
        fn reads_lists_of_items(list in proptest::collection::vec(an_item(), 0..4)) {
            let text = serde_json::to_string(&list).unwrap();
            prop_assert_eq!(items(&text).unwrap(), list);
        }

        /// Whatever the text, the parser answers (never panics), and it accepts a text only if
        /// serde_json accepts it as an item.
        #[test]
        fn refuses_what_serde_dynamo_refuses(text in "[{}\\[\\]\":,SNMLBOUL0-9a-z\\\\ ]{0,40}") {
            let theirs = serde_json::from_str::<Item>(&text);
            if let Ok(ours) = super::item(&text) {
                prop_assert_eq!(Some(ours), theirs.ok());
            }
        }
    }

    /// Escapes that a serializer never writes but JSON allows (`\/`, `\u` for plain letters,
    /// surrogate pairs) and whitespace everywhere between tokens.
    #[test]
    fn reads_every_form_of_json_string_and_spacing() {
        let text = " {\r\n \"a\\u0062\" : { \"S\" : \"x\\/y\\u00e9\\ud83d\\ude00\\b\\f\" } ,\t\"n\":{\"NULL\":true} } ";
        let item = item(text).unwrap();
        assert_eq!(
            item.get("ab"),
            Some(&AttributeValue::S("x/y\u{e9}\u{1F600}\u{8}\u{c}".into()))
        );
        assert_eq!(item.get("n"), Some(&AttributeValue::Null(true)));
    }

    #[test]
    fn refuses_what_is_not_an_item() {
        for (bad, reason) in [
            (r#"{"a":{}}"#, "an attribute value without a type tag"),
            (
                r#"{"a":{"S":"x","N":"1"}}"#,
                "an attribute value with several type tags",
            ),
            (r#"{"a":{"X":"x"}}"#, "unknown type tag"),
            (
                r#"{"a":{"B":"not base64!"}}"#,
                "a binary value that is not base64",
            ),
            (r#"{"a":{"S":"x"}} trailing"#, "trailing characters"),
            ("[]", "expected an object of attribute values"),
            (r#"{"a":{"S":"x"}"#, "expected , or } in an object"),
            (
                "{\"a\":{\"S\":\"x\u{1}\"}}",
                "a control character in a string",
            ),
            (r#"{"a":{"S":"\ud800"}}"#, "a lone surrogate in a string"),
            (r#"{"a":{"S":"\q"}}"#, "an invalid escape"),
            (r#"{"a":{"S":"x"#, "unterminated string"),
            (r#"{"a":{"BOOL":"true"}}"#, "expected true or false"),
        ] {
            assert_eq!(item(bad).map_err(|e| e.reason), Err(reason), "{bad}");
        }
        let deep = format!("{{\"a\":{}{}}}", r#"{"L":["#.repeat(100), "]}".repeat(100));
        assert_eq!(item(&deep).map_err(|e| e.reason), Err("nested too deeply"));
    }
}
