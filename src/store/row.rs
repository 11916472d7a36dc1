//! The compact row: how the embedded store keeps an item's attributes (length-prefixed binary,
//! without the key attributes its redb keys already hold), and the one-pass [`Reader`] that
//! typed decoders (`items::raw`) read a row with instead of building an attribute map.
//!
//! Why not DynamoDB JSON, which the store kept until issue 24: every value paid its type tag
//! as `{"S":"…"}` and every name its quotes, and `PK`, `SK` and `GSI1SK` were held twice, in
//! the key and in the row. A row came to twice the item's size as DynamoDB counts it, so the
//! file was 3.6 times the data. Here a name or value costs its bytes and its length (one
//! byte under 128), a value one more byte for its type, and the key attributes are not
//! stored at all.
//!
//! The encoding (every length and count an unsigned LEB128 varint):
//!
//! ```text
//! attributes := attribute*            (to the end of the row)
//! attribute  := name value
//! name       := len utf8-bytes
//! value      := S len utf8 | N len utf8 | B len bytes | FALSE | TRUE | NULL | NOT_NULL
//!             | SS count (len utf8)* | NS count (len utf8)* | BS count (len bytes)*
//!             | L count value* | M count (name value)*
//! ```
//!
//! Rows are read from a file, so a reader trusts nothing: lengths are checked against what is
//! left, nesting is bounded, and every string is checked as UTF-8.

use std::borrow::Cow;
use std::collections::HashMap;

use super::table::{GSI1SK, PK, SK};
use super::{item_of, AttributeValue, Item};

/// Why bytes are not a row, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason} at byte {offset}")]
pub struct RowError {
    /// Byte offset into the row's attributes where reading stopped.
    pub offset: usize,
    pub reason: &'static str,
}

/// Nesting deeper than this is refused: DynamoDB allows 32 levels of `M` and `L`.
const MAX_DEPTH: usize = 40;

/// The most elements reserved ahead for a list, set or map a row says it holds: a count is
/// only checked against the bytes left, and a corrupt one must not make a reader reserve
/// more than the row could fill.
const MAX_RESERVE: usize = 64;

/// The type byte before each value.
mod tag {
    pub const S: u8 = 0;
    pub const N: u8 = 1;
    pub const B: u8 = 2;
    pub const FALSE: u8 = 3;
    pub const TRUE: u8 = 4;
    pub const NULL: u8 = 5;
    pub const SS: u8 = 6;
    pub const NS: u8 = 7;
    pub const BS: u8 = 8;
    pub const L: u8 = 9;
    pub const M: u8 = 10;
    /// `NULL: false`, which DynamoDB refuses but serde_dynamo can hold: kept as it is.
    pub const NOT_NULL: u8 = 11;
}

/// Appends `n` as an unsigned LEB128 varint.
fn put_len(out: &mut Vec<u8>, n: usize) {
    let (bytes, len) = len_bytes(n);
    out.extend_from_slice(&bytes[..len]);
}

/// The most bytes a varint of a `usize` takes.
const MAX_LEN_BYTES: usize = 10;

/// `n` as an unsigned LEB128 varint: its bytes, and how many.
fn len_bytes(mut n: usize) -> ([u8; MAX_LEN_BYTES], usize) {
    let mut bytes = [0; MAX_LEN_BYTES];
    let mut len = 0;
    while n >= 0x80 {
        bytes[len] = (n as u8) | 0x80;
        n >>= 7;
        len += 1;
    }
    bytes[len] = n as u8;
    (bytes, len + 1)
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_len(out, bytes.len());
    out.extend_from_slice(bytes);
}

fn put_value(out: &mut Vec<u8>, value: &AttributeValue) {
    match value {
        AttributeValue::S(s) => {
            out.push(tag::S);
            put_bytes(out, s.as_bytes());
        }
        AttributeValue::N(n) => {
            out.push(tag::N);
            put_bytes(out, n.as_bytes());
        }
        AttributeValue::B(b) => {
            out.push(tag::B);
            put_bytes(out, b);
        }
        AttributeValue::Bool(b) => out.push(if *b { tag::TRUE } else { tag::FALSE }),
        AttributeValue::Null(true) => out.push(tag::NULL),
        AttributeValue::Null(false) => out.push(tag::NOT_NULL),
        AttributeValue::Ss(set) | AttributeValue::Ns(set) => {
            out.push(match value {
                AttributeValue::Ss(_) => tag::SS,
                _ => tag::NS,
            });
            put_len(out, set.len());
            for s in set {
                put_bytes(out, s.as_bytes());
            }
        }
        AttributeValue::Bs(set) => {
            out.push(tag::BS);
            put_len(out, set.len());
            for b in set {
                put_bytes(out, b);
            }
        }
        AttributeValue::L(list) => {
            out.push(tag::L);
            put_len(out, list.len());
            for v in list {
                put_value(out, v);
            }
        }
        AttributeValue::M(map) => {
            out.push(tag::M);
            put_len(out, map.len());
            for (name, v) in map {
                put_attribute(out, name, v);
            }
        }
    }
}

fn put_attribute(out: &mut Vec<u8>, name: &str, value: &AttributeValue) {
    put_bytes(out, name.as_bytes());
    put_value(out, value);
}

/// The first byte of a row as the embedded store keeps it: this byte, the item's size as
/// DynamoDB counts it (a varint), then its attributes, all but `PK` and `SK` (which the
/// table's key holds), `GSI1SK` last. Rows of earlier versions were DynamoDB JSON, which
/// starts with `{` or, with their size, `0x01`.
///
/// Why keep the size: every read prices every row it reads, and counting a row's size from
/// its attributes is a walk over the whole row, as costly as reading it.
///
/// Why `GSI1SK` last: the index's key holds it too, so the index keeps the row without it,
/// the part before it ([`Stored::index_end`]).
const STORED_ROW: u8 = 0x02;

/// Room kept before a row's attributes for what comes first: [`STORED_ROW`] and the size,
/// known only once every attribute is in.
const HEAD: usize = 1 + MAX_LEN_BYTES;

/// An item as the embedded store keeps it in its table; the index keeps
/// `bytes[..index_end]`.
pub struct Stored {
    pub bytes: Vec<u8>,
    pub index_end: usize,
}

/// The stored form of an item of `size` bytes (by DynamoDB's count).
pub fn store(item: &Item, size: usize) -> Stored {
    let mut row = RowWriter::with_capacity(64 + 16 * item.len());
    for (name, value) in item.iter() {
        if name != PK && name != SK && name != GSI1SK {
            row.attribute(name, value);
        }
    }
    let (start, index_end) = row.end(item.get(GSI1SK), size);
    let mut bytes = row.buf;
    bytes.drain(..start);
    Stored {
        bytes,
        index_end: index_end - start,
    }
}

/// A stored row made attribute by attribute: [`store`] makes an item's row with it, and a
/// bulk load the rows of items it never builds as attribute maps. One writer makes row after
/// row in the same buffer.
pub struct RowWriter {
    /// [`HEAD`] bytes kept for the row's start, then its attributes.
    buf: Vec<u8>,
}

impl Default for RowWriter {
    fn default() -> Self {
        RowWriter::with_capacity(256)
    }
}

impl RowWriter {
    fn with_capacity(attributes: usize) -> Self {
        let mut buf = Vec::with_capacity(HEAD + attributes);
        buf.resize(HEAD, 0);
        RowWriter { buf }
    }

    /// Starts the next row, forgetting the last.
    pub fn start(&mut self) {
        self.buf.truncate(HEAD);
    }

    /// Adds an attribute other than `PK`, `SK` and `GSI1SK` (see [`RowWriter::finish`]).
    pub fn attribute(&mut self, name: &str, value: &AttributeValue) {
        put_attribute(&mut self.buf, name, value);
    }

    /// Ends the row of an item of `size` bytes (by DynamoDB's count), adding its `GSI1SK`:
    /// its stored form, and where the index's copy of it ends.
    pub fn finish(&mut self, gsi1sk: Option<&AttributeValue>, size: usize) -> (&[u8], usize) {
        let (start, index_end) = self.end(gsi1sk, size);
        (&self.buf[start..], index_end - start)
    }

    /// Adds `GSI1SK` and the row's start before its attributes: where the row starts in the
    /// buffer, and where the index's copy ends.
    fn end(&mut self, gsi1sk: Option<&AttributeValue>, size: usize) -> (usize, usize) {
        let index_end = self.buf.len();
        if let Some(g) = gsi1sk {
            put_attribute(&mut self.buf, GSI1SK, g);
        }
        let (len, n) = len_bytes(size);
        let start = HEAD - 1 - n;
        self.buf[start] = STORED_ROW;
        self.buf[start + 1..HEAD].copy_from_slice(&len[..n]);
        (start, index_end)
    }
}

/// A stored row's size (by DynamoDB's count) and attributes.
pub fn stored(bytes: &[u8]) -> Result<(usize, &[u8]), RowError> {
    match bytes.split_first() {
        Some((&STORED_ROW, rest)) => {
            let mut header = Bytes::new(rest);
            let size = header.len()?;
            Ok((size, &rest[header.at..]))
        }
        _ => Err(RowError {
            offset: 0,
            reason: "not a row of this version",
        }),
    }
}

/// A row as a store read it: its key attributes, from the key it was read under, and its
/// other attributes, encoded.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub pk: String,
    pub sk: String,
    /// `GSI1SK` when the row was read from the index, whose key holds it (a row of the table
    /// keeps it among its attributes).
    pub gsi1sk: Option<String>,
    pub attributes: Vec<u8>,
}

impl Row {
    /// The row, borrowed.
    pub fn as_ref(&self) -> RowRef<'_> {
        RowRef {
            pk: &self.pk,
            sk: &self.sk,
            gsi1sk: self.gsi1sk.as_deref(),
            attributes: &self.attributes,
        }
    }
}

/// A row borrowed from where it is stored (see [`Row`]).
#[derive(Clone, Copy, Debug)]
pub struct RowRef<'a> {
    pub pk: &'a str,
    pub sk: &'a str,
    pub gsi1sk: Option<&'a str>,
    pub attributes: &'a [u8],
}

impl<'a> RowRef<'a> {
    /// The whole item, as an attribute map.
    pub fn item(&self) -> Result<Item, RowError> {
        let mut map = HashMap::with_capacity(8);
        map.insert(PK.to_owned(), AttributeValue::S(self.pk.to_owned()));
        map.insert(SK.to_owned(), AttributeValue::S(self.sk.to_owned()));
        if let Some(g) = self.gsi1sk {
            map.insert(GSI1SK.to_owned(), AttributeValue::S(g.to_owned()));
        }
        let mut bytes = Bytes::new(self.attributes);
        while !bytes.done() {
            let name = bytes.string()?;
            let value = bytes.value(0)?;
            map.insert(name.to_owned(), value);
        }
        Ok(item_of(map))
    }

    /// A reader over the row's attributes, the key attributes first.
    pub fn reader(&self) -> Reader<'a> {
        Reader {
            bytes: Bytes::new(self.attributes),
            keys: [
                Some((PK, self.pk)),
                Some((SK, self.sk)),
                self.gsi1sk.map(|g| (GSI1SK, g)),
            ],
            held: None,
            depth: 0,
        }
    }

    /// Whether the item has a value at `path` (each part past the first naming an entry of a
    /// map), as `AttrPath::get` finds one in the item, read without building the item: what a
    /// filtered query asks of every row it reads.
    pub fn has_path(&self, path: &[String]) -> Result<bool, RowError> {
        let Some((first, rest)) = path.split_first() else {
            return Ok(false);
        };
        let mut found = false;
        self.reader().item(entry_has(&mut found, first, rest))?;
        Ok(found)
    }

    /// The `S` value of the top-level attribute `name` (`None` when it is absent or of
    /// another type), read without building anything.
    pub fn string(&self, name: &str) -> Result<Option<&'a str>, RowError> {
        let mut found = None;
        self.reader().item(|r, attribute| {
            match r.scalar()? {
                Scalar::S(Cow::Borrowed(s)) if attribute == name => found = Some(s),
                _ => {}
            }
            Ok(())
        })?;
        Ok(found)
    }
}

/// The bytes of a row being read, and where.
struct Bytes<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Bytes<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Bytes { bytes, at: 0 }
    }

    fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }

    fn fail<T>(&self, reason: &'static str) -> Result<T, RowError> {
        Err(RowError {
            offset: self.at,
            reason,
        })
    }

    fn byte(&mut self) -> Result<u8, RowError> {
        match self.bytes.get(self.at) {
            Some(&b) => {
                self.at += 1;
                Ok(b)
            }
            None => self.fail("the row ends inside a value"),
        }
    }

    fn len(&mut self) -> Result<usize, RowError> {
        let mut n: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            n |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return usize::try_from(n).or_else(|_| self.fail("a length past the row"));
            }
        }
        self.fail("a length longer than ten bytes")
    }

    /// A count of things each at least one byte long: never more than the bytes left, so a
    /// corrupt count cannot make a reader reserve more than the row.
    fn count(&mut self) -> Result<usize, RowError> {
        let n = self.len()?;
        if n > self.bytes.len() - self.at {
            return self.fail("a count past the end of the row");
        }
        Ok(n)
    }

    fn raw(&mut self) -> Result<&'a [u8], RowError> {
        let n = self.len()?;
        match self.bytes.get(self.at..self.at.saturating_add(n)) {
            Some(slice) => {
                self.at += n;
                Ok(slice)
            }
            None => self.fail("a length past the end of the row"),
        }
    }

    fn string(&mut self) -> Result<&'a str, RowError> {
        let start = self.at;
        let raw = self.raw()?;
        simdutf8::basic::from_utf8(raw).map_err(|_| RowError {
            offset: start,
            reason: "a string that is not UTF-8",
        })
    }

    fn strings(&mut self) -> Result<Vec<String>, RowError> {
        let n = self.count()?;
        let mut set = Vec::with_capacity(n.min(MAX_RESERVE));
        for _ in 0..n {
            set.push(self.string()?.to_owned());
        }
        Ok(set)
    }

    fn value(&mut self, depth: usize) -> Result<AttributeValue, RowError> {
        if depth > MAX_DEPTH {
            return self.fail("nested too deeply");
        }
        Ok(match self.byte()? {
            tag::S => AttributeValue::S(self.string()?.to_owned()),
            tag::N => AttributeValue::N(self.string()?.to_owned()),
            tag::B => AttributeValue::B(self.raw()?.to_vec()),
            tag::FALSE => AttributeValue::Bool(false),
            tag::TRUE => AttributeValue::Bool(true),
            tag::NULL => AttributeValue::Null(true),
            tag::NOT_NULL => AttributeValue::Null(false),
            tag::SS => AttributeValue::Ss(self.strings()?),
            tag::NS => AttributeValue::Ns(self.strings()?),
            tag::BS => {
                let n = self.count()?;
                let mut set = Vec::with_capacity(n.min(MAX_RESERVE));
                for _ in 0..n {
                    set.push(self.raw()?.to_vec());
                }
                AttributeValue::Bs(set)
            }
            tag::L => {
                let n = self.count()?;
                let mut list = Vec::with_capacity(n.min(MAX_RESERVE));
                for _ in 0..n {
                    list.push(self.value(depth + 1)?);
                }
                AttributeValue::L(list)
            }
            tag::M => {
                let n = self.count()?;
                let mut map = HashMap::with_capacity(n.min(MAX_RESERVE));
                for _ in 0..n {
                    let name = self.string()?.to_owned();
                    map.insert(name, self.value(depth + 1)?);
                }
                AttributeValue::M(map)
            }
            _ => {
                self.at -= 1;
                return self.fail("an unknown type");
            }
        })
    }

    /// Moves past a value of type `kind` (its type byte read), checking its structure and its
    /// strings as [`Bytes::value`] would.
    fn skip(&mut self, kind: u8, depth: usize) -> Result<(), RowError> {
        if depth > MAX_DEPTH {
            return self.fail("nested too deeply");
        }
        match kind {
            tag::S | tag::N => drop(self.string()?),
            tag::B => drop(self.raw()?),
            tag::FALSE | tag::TRUE | tag::NULL | tag::NOT_NULL => {}
            tag::SS | tag::NS => {
                for _ in 0..self.count()? {
                    self.string()?;
                }
            }
            tag::BS => {
                for _ in 0..self.count()? {
                    self.raw()?;
                }
            }
            tag::L => {
                for _ in 0..self.count()? {
                    let kind = self.byte()?;
                    self.skip(kind, depth + 1)?;
                }
            }
            tag::M => {
                for _ in 0..self.count()? {
                    self.string()?;
                    let kind = self.byte()?;
                    self.skip(kind, depth + 1)?;
                }
            }
            _ => {
                self.at -= 1;
                return self.fail("an unknown type");
            }
        }
        Ok(())
    }
}

/// A reader of a row's attributes or a map's entries that sets `found` to whether the entry
/// named `first` has a value at `rest` (a name given twice keeps its last value, as an
/// attribute map does).
fn entry_has<'a, 'f>(
    found: &'f mut bool,
    first: &'f str,
    rest: &'f [String],
) -> impl FnMut(&mut Reader<'a>, Cow<'a, str>) -> Result<(), RowError> + 'f {
    move |r, name| {
        if name == first {
            *found = r.has(rest)?;
            Ok(())
        } else {
            r.skip()
        }
    }
}

/// A scalar attribute value read by [`Reader::scalar`].
#[derive(Debug, PartialEq, Eq)]
pub enum Scalar<'a> {
    S(Cow<'a, str>),
    N(Cow<'a, str>),
    /// A value of any other type (read in full, then dropped).
    Other,
}

/// Reads one row attribute by attribute without building it, for decoders that want a few
/// typed values (`items::decode_issue_list_row`, `items::decode_partition_row`) and would
/// otherwise pay for an attribute map: a hash, an allocation per name and one per value, and
/// as many frees. The key attributes come first, as `S` values; the row's own follow.
///
/// Every value is read as strictly as [`RowRef::item`] reads it, so a row read through with
/// a reader is one `item` accepts.
pub struct Reader<'a> {
    bytes: Bytes<'a>,
    /// The key attributes still to hand over.
    keys: [Option<(&'static str, &'a str)>; 3],
    /// The value of the key attribute being read, until it is.
    held: Option<&'a str>,
    depth: usize,
}

impl<'a> Reader<'a> {
    /// Reads the row: calls `each` with every attribute's name, the reader placed at the
    /// attribute's value, which `each` must read with exactly one of [`Reader::scalar`],
    /// [`Reader::map`] or [`Reader::skip`].
    pub fn item(
        mut self,
        mut each: impl FnMut(&mut Self, Cow<'a, str>) -> Result<(), RowError>,
    ) -> Result<(), RowError> {
        for (name, value) in self.keys.into_iter().flatten() {
            self.held = Some(value);
            each(&mut self, Cow::Borrowed(name))?;
            self.held = None;
        }
        while !self.bytes.done() {
            let name = self.bytes.string()?;
            each(&mut self, Cow::Borrowed(name))?;
        }
        Ok(())
    }

    /// Reads an attribute value: the text of an `S` or `N`; a value of any other type is read
    /// and dropped.
    pub fn scalar(&mut self) -> Result<Scalar<'a>, RowError> {
        if let Some(value) = self.held.take() {
            return Ok(Scalar::S(Cow::Borrowed(value)));
        }
        Ok(match self.bytes.byte()? {
            tag::S => Scalar::S(Cow::Borrowed(self.bytes.string()?)),
            tag::N => Scalar::N(Cow::Borrowed(self.bytes.string()?)),
            kind => {
                self.bytes.skip(kind, self.depth)?;
                Scalar::Other
            }
        })
    }

    /// Reads an attribute value that is a map (`M`), handing each entry to `each` as
    /// [`Reader::item`] does; a value of any other type is read and dropped, and gives
    /// `false`.
    pub fn map(
        &mut self,
        mut each: impl FnMut(&mut Self, Cow<'a, str>) -> Result<(), RowError>,
    ) -> Result<bool, RowError> {
        if self.held.take().is_some() {
            return Ok(false);
        }
        let kind = self.bytes.byte()?;
        if kind != tag::M {
            self.bytes.skip(kind, self.depth)?;
            return Ok(false);
        }
        if self.depth >= MAX_DEPTH {
            return self.bytes.fail("nested too deeply");
        }
        self.depth += 1;
        for _ in 0..self.bytes.count()? {
            let name = self.bytes.string()?;
            each(self, Cow::Borrowed(name))?;
        }
        self.depth -= 1;
        Ok(true)
    }

    /// Whether the value at the reader has a value at `path` (every part an entry of a map;
    /// an empty path is the value itself), reading past it.
    fn has(&mut self, path: &[String]) -> Result<bool, RowError> {
        let Some((first, rest)) = path.split_first() else {
            self.skip()?;
            return Ok(true);
        };
        let mut found = false;
        let is_map = self.map(entry_has(&mut found, first, rest))?;
        Ok(is_map && found)
    }

    /// Moves past an attribute value.
    pub fn skip(&mut self) -> Result<(), RowError> {
        if self.held.take().is_some() {
            return Ok(());
        }
        let kind = self.bytes.byte()?;
        self.bytes.skip(kind, self.depth)
    }
}

/// Helpers for the tests of the row's readers elsewhere (`items::raw`, `store::raw`).
#[cfg(test)]
impl Row {
    /// The row of `item`, as the table would give it back (for tests of its readers).
    pub fn of_item(item: &Item) -> Row {
        let string = |name| match item.get(name) {
            Some(AttributeValue::S(s)) => s.clone(),
            _ => String::new(),
        };
        let row = store(item, 0);
        let attributes = stored(&row.bytes).map_or_else(|_| Vec::new(), |(_, a)| a.to_vec());
        Row {
            pk: string(PK),
            sk: string(SK),
            gsi1sk: None,
            attributes,
        }
    }
}

/// Encodes attributes as they come, repeats included: for tests of decoders that must settle
/// rows no writer leaves.
#[cfg(test)]
pub fn encode_attributes<'a>(
    attributes: impl IntoIterator<Item = (&'a str, &'a AttributeValue)>,
) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in attributes {
        put_attribute(&mut out, name, value);
    }
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Any value DynamoDB JSON can hold, and the one it cannot (`NULL: false`).
    fn attribute_value() -> impl Strategy<Value = AttributeValue> {
        prop_oneof![
            9 => crate::store::ddbjson::tests::attribute_value(),
            1 => Just(AttributeValue::Null(false)),
        ]
    }

    fn item() -> impl Strategy<Value = Item> {
        (
            "[a-z0-9#-]{1,12}",
            "[a-z0-9#-]{1,12}",
            proptest::option::of("[a-z0-9\u{1}]{1,12}"),
            proptest::collection::hash_map("[a-zA-Z0-9_é]{1,8}", attribute_value(), 0..6),
        )
            .prop_map(|(pk, sk, gsi1sk, mut map)| {
                map.insert(PK.into(), AttributeValue::S(pk));
                map.insert(SK.into(), AttributeValue::S(sk));
                match gsi1sk {
                    Some(g) => map.insert(GSI1SK.into(), AttributeValue::S(g)),
                    None => map.remove(GSI1SK),
                };
                item_of(map)
            })
    }

    fn string(item: &Item, name: &str) -> Option<String> {
        match item.get(name) {
            Some(AttributeValue::S(s)) => Some(s.clone()),
            _ => None,
        }
    }

    /// The row of the table and the index's (the prefix before `GSI1SK`) under their keys.
    fn rows(item: &Item) -> (Row, Option<Row>) {
        let row = store(item, 0);
        let (_, attributes) = stored(&row.bytes).unwrap();
        let head = row.bytes.len() - attributes.len();
        let (bytes, index_end) = (attributes.to_vec(), row.index_end - head);
        let (pk, sk) = (string(item, PK).unwrap(), string(item, SK).unwrap());
        let index = string(item, GSI1SK).map(|g| Row {
            pk: pk.clone(),
            sk: sk.clone(),
            gsi1sk: Some(g),
            attributes: bytes[..index_end].to_vec(),
        });
        let table = Row {
            pk,
            sk,
            gsi1sk: None,
            attributes: bytes,
        };
        (table, index)
    }

    /// The stored row spelled out: its first byte, the size (a varint of two bytes at 200),
    /// the attributes, `GSI1SK` last, the keys left to the table's key.
    #[test]
    fn a_stored_row_is_what_the_encoding_says() {
        let mut map = HashMap::new();
        for (name, value) in [(PK, "p"), (SK, "s"), (GSI1SK, "g"), ("A", "x")] {
            map.insert(name.to_owned(), AttributeValue::S(value.to_owned()));
        }
        let row = store(&item_of(map), 200);
        let mut want = vec![STORED_ROW, 0xC8, 0x01];
        want.extend([1, b'A', tag::S, 1, b'x']);
        want.extend([6, b'G', b'S', b'I', b'1', b'S', b'K', tag::S, 1, b'g']);
        assert_eq!(row.bytes, want);
        assert_eq!(row.index_end, 8);
        let mut writer = RowWriter::default();
        writer.attribute("A", &AttributeValue::S("x".into()));
        let g = AttributeValue::S("g".into());
        assert_eq!(writer.finish(Some(&g), 200), (&want[..], 8));
    }

    proptest! {
        /// A writer that made one row makes the next as [`store`] makes it, whatever the
        /// last was (its buffer is reused), and its size reads back from the row.
        #[test]
        fn a_writer_makes_what_store_makes(
            before in item(),
            item in item(),
            size in prop_oneof![
                0..200usize,
                Just(127),
                Just(128),
                Just(400 * 1024),
                Just(usize::MAX),
            ],
        ) {
            let mut writer = RowWriter::default();
            for (i, item) in [&before, &item].into_iter().enumerate() {
                writer.start();
                for (name, value) in item.iter() {
                    if name != PK && name != SK && name != GSI1SK {
                        writer.attribute(name, value);
                    }
                }
                let (bytes, index_end) = writer.finish(item.get(GSI1SK), size);
                if i == 1 {
                    let want = store(item, size);
                    prop_assert_eq!(bytes, &want.bytes[..]);
                    prop_assert_eq!(index_end, want.index_end);
                    prop_assert_eq!(stored(bytes).unwrap().0, size);
                }
            }
        }

        /// Every item reads back whole from the table's row and from the index's, and a
        /// reader hands over every attribute once, with the values `item` reads.
        #[test]
        fn rows_read_back_as_their_items(item in item()) {
            let (table, index) = rows(&item);
            for row in std::iter::once(&table).chain(index.as_ref()) {
                let row = row.as_ref();
                prop_assert_eq!(&row.item().unwrap(), &item);
                let mut seen = Vec::new();
                row.reader().item(|r, name| {
                    let want = match &item[&*name] {
                        AttributeValue::S(s) => Scalar::S(s.as_str().into()),
                        AttributeValue::N(n) => Scalar::N(n.as_str().into()),
                        _ => Scalar::Other,
                    };
                    assert_eq!(r.scalar()?, want, "{name}");
                    seen.push(name.into_owned());
                    Ok(())
                }).unwrap();
                seen.sort();
                let mut names: Vec<String> = item.keys().cloned().collect();
                names.sort();
                prop_assert_eq!(seen, names);
                let gsi1sk = string(&item, GSI1SK);
                prop_assert_eq!(row.string(GSI1SK).unwrap(), gsi1sk.as_deref());
            }
            // The index's copy holds no key attribute at all.
            if let Some(index) = &index {
                prop_assert!(index.attributes.len() < table.attributes.len());
            }
        }

        /// A map read through `Reader::map` gives its entries; skipping any value leaves the
        /// reader at the next attribute.
        #[test]
        fn maps_are_read_and_values_skipped(item in item()) {
            let (table, _) = rows(&item);
            let mut entries = 0;
            table.as_ref().reader().item(|r, name| {
                match &item[&*name] {
                    AttributeValue::M(map) => {
                        let mut inner = 0;
                        assert!(r.map(|r, _| { inner += 1; r.skip() })?);
                        assert_eq!(inner, map.len());
                        entries += 1;
                    }
                    _ => r.skip()?,
                }
                Ok(())
            }).unwrap();
            let maps = item.values().filter(|v| matches!(v, AttributeValue::M(_))).count();
            prop_assert_eq!(entries, maps);
        }

        /// A path is found in a row exactly where `AttrPath::get` finds it in the item.
        #[test]
        fn paths_are_found_as_in_the_item(
            item in item(),
            picks in proptest::collection::vec(any::<prop::sample::Index>(), 1..4),
            made_up in any::<bool>(),
        ) {
            // A path down the item's own maps, or a name it does not have at the end.
            let mut path = Vec::new();
            let mut map: Option<&HashMap<String, AttributeValue>> = Some(&item);
            for pick in picks {
                let Some(m) = map.filter(|m| !m.is_empty()) else { break };
                let mut names: Vec<&String> = m.keys().collect();
                names.sort();
                let name = names[pick.index(names.len())];
                path.push(name.clone());
                map = match &m[name] {
                    AttributeValue::M(inner) => Some(inner),
                    _ => None,
                };
            }
            if made_up {
                path.push("absent".into());
            }
            let (table, index) = rows(&item);
            let want = crate::store::AttrPath(path.clone()).get(&item).is_some();
            for row in std::iter::once(&table).chain(index.as_ref()) {
                prop_assert_eq!(row.as_ref().has_path(&path).unwrap(), want);
            }
        }

        /// Any bytes at all are read without a panic, and what a reader accepts `item` does.
        #[test]
        fn arbitrary_bytes_are_refused_or_read(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let row = RowRef { pk: "p", sk: "s", gsi1sk: None, attributes: &bytes };
            let whole = row.item();
            let read = row.reader().item(|r, _| r.skip());
            if read.is_ok() {
                prop_assert!(whole.is_ok());
            }
        }
    }

    /// Rows are compact: a field-value index row as the writers make it is its item's
    /// attribute bytes and a few bytes of lengths and types.
    #[test]
    fn a_value_row_costs_its_bytes_and_a_few_more() {
        let mut map = HashMap::new();
        for (name, value) in [
            (PK, "issue-0004z90cj14q6taswjcawdchdp"),
            (SK, "xvalue-593082kkmbj6sdd70phtrcvkm7"),
            (GSI1SK, "8180\u{1}0000008533"),
            ("Type", "FieldValue"),
        ] {
            map.insert(name.to_owned(), AttributeValue::S(value.to_owned()));
        }
        map.insert("Value".to_owned(), AttributeValue::N("-784".to_owned()));
        let item = item_of(map);
        let (table, index) = rows(&item);
        // Type and Value: 4 + 10 and 5 + 4 bytes, and 2 lengths and a type byte each.
        assert_eq!(index.unwrap().attributes.len(), 4 + 10 + 5 + 4 + 6);
        // The table's row adds GSI1SK: 6 + 15 bytes and the same 3.
        assert_eq!(table.attributes.len(), 29 + 6 + 15 + 3);
    }

    #[test]
    fn corrupt_rows_say_where() {
        let row = |bytes: &'static [u8]| RowRef {
            pk: "p",
            sk: "s",
            gsi1sk: None,
            attributes: bytes,
        };
        for (bytes, reason) in [
            (&b"\x01a\x00\x05ab"[..], "a length past the end of the row"),
            (b"\x01a\x63", "an unknown type"),
            (b"\x01a", "the row ends inside a value"),
            (b"\x01\xff\x00\x00", "a string that is not UTF-8"),
            (b"\x01a\x06\x7f", "a count past the end of the row"),
        ] {
            assert_eq!(row(bytes).item().unwrap_err().reason, reason);
            assert_eq!(
                row(bytes)
                    .reader()
                    .item(|r, _| r.skip())
                    .unwrap_err()
                    .reason,
                reason
            );
        }
        let mut deep = b"\x01a".to_vec();
        for _ in 0..=MAX_DEPTH + 1 {
            deep.extend_from_slice(b"\x09\x01");
        }
        deep.push(tag::NULL);
        let deep = RowRef {
            pk: "p",
            sk: "s",
            gsi1sk: None,
            attributes: &deep,
        };
        assert_eq!(deep.item().unwrap_err().reason, "nested too deeply");
        assert_eq!(
            deep.reader().item(|r, _| r.skip()).unwrap_err().reason,
            "nested too deeply"
        );
    }
}
