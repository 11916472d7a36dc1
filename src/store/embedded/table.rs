//! The redb side of the embedded store: the two table definitions, creating them and
//! detecting them, decoding stored items, and mapping redb failures to store errors.

use std::collections::HashMap;
use std::fmt;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use redb::{Database, ReadableDatabase, TableDefinition, TableError};
use serde::de::{Deserializer, Error as _, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;

use crate::store::table::GSI1;
use crate::store::{AttributeValue, Item, StoreError};

/// The table: `(PK, SK)` to the item as DynamoDB JSON.
pub(super) const ITEMS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("items");
/// The inverted index: `(SK, GSI1SK, PK)`. Items without `GSI1SK` have no entry.
pub(super) const GSI1_INDEX: TableDefinition<(&str, &str, &str), ()> = TableDefinition::new(GSI1);

/// Maps any redb failure to `Unavailable`: from the caller's point of view the store failed to
/// answer, just as a DynamoDB network or service error would.
pub(super) fn unavailable(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(format!("redb: {e}"))
}

pub(super) fn tables_exist(db: &Database) -> Result<bool, StoreError> {
    let txn = db.begin_read().map_err(unavailable)?;
    let items = table_present(txn.open_table(ITEMS).map(drop))?;
    let index = table_present(txn.open_table(GSI1_INDEX).map(drop))?;
    Ok(items && index)
}

fn table_present(opened: Result<(), TableError>) -> Result<bool, StoreError> {
    match opened {
        Ok(()) => Ok(true),
        Err(TableError::TableDoesNotExist(_)) => Ok(false),
        Err(e) => Err(unavailable(e)),
    }
}

/// Creates the table and the index if they are missing, in one write transaction.
pub(super) fn create_tables(db: &Database) -> Result<(), StoreError> {
    let txn = db.begin_write().map_err(unavailable)?;
    {
        // Opening a table in a write transaction creates it if it is missing.
        txn.open_table(ITEMS).map_err(unavailable)?;
        txn.open_table(GSI1_INDEX).map_err(unavailable)?;
    }
    txn.commit().map_err(unavailable)
}

/// Reads a stored item (DynamoDB JSON, as serde_dynamo writes it).
///
/// Every read decodes every item it returns, so this reads the JSON straight into
/// attribute values with [`Stored`], which knows the type tags: serde_dynamo's own
/// `Deserialize` reads each tag into a new `String` first, one allocation per attribute, a
/// sixth of a grid page's CPU on this store. The format is unchanged (a proptest checks that
/// both read the same items).
///
/// Two more savings: the bytes are checked as UTF-8 once, as a whole, so the parser does not
/// check every string again; and the map becomes the `Item` as it is (serde_dynamo's
/// `From<HashMap>` rebuilds it entry by entry).
pub(super) fn decode(bytes: &[u8]) -> Result<Item, StoreError> {
    let corrupt = |e: serde_json::Error| StoreError::Corrupt(format!("stored item: {e}"));
    let text =
        std::str::from_utf8(bytes).map_err(|e| StoreError::Corrupt(format!("stored item: {e}")))?;
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let map = StoredMap::deserialize(&mut deserializer).map_err(corrupt)?;
    deserializer.end().map_err(corrupt)?;
    Ok(crate::store::item_of(map.0))
}

/// An attribute value read from DynamoDB JSON: an object with exactly one type tag.
struct Stored(AttributeValue);

/// A map of attribute values (an item, or the value of an `M`).
struct StoredMap(HashMap<String, AttributeValue>);

/// DynamoDB JSON's type tags, read as identifiers (no allocation).
#[derive(Deserialize)]
enum Tag {
    S,
    N,
    B,
    #[serde(rename = "BOOL")]
    Bool,
    #[serde(rename = "NULL")]
    Null,
    M,
    L,
    #[serde(rename = "SS")]
    Ss,
    #[serde(rename = "NS")]
    Ns,
    #[serde(rename = "BS")]
    Bs,
}

impl<'de> Deserialize<'de> for Stored {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> Visitor<'de> for Visit {
            type Value = Stored;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object with one DynamoDB type tag")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Stored, A::Error> {
                let Some(tag) = map.next_key::<Tag>()? else {
                    return Err(A::Error::custom("an attribute value without a type tag"));
                };
                let base64 = |text: String| {
                    BASE64
                        .decode(text)
                        .map_err(|e| A::Error::custom(format!("base64: {e}")))
                };
                let value = match tag {
                    Tag::S => AttributeValue::S(map.next_value()?),
                    Tag::N => AttributeValue::N(map.next_value()?),
                    Tag::B => AttributeValue::B(base64(map.next_value()?)?),
                    Tag::Bool => AttributeValue::Bool(map.next_value()?),
                    Tag::Null => AttributeValue::Null(map.next_value()?),
                    Tag::M => AttributeValue::M(map.next_value::<StoredMap>()?.0),
                    Tag::L => AttributeValue::L(
                        map.next_value::<Vec<Stored>>()?
                            .into_iter()
                            .map(|v| v.0)
                            .collect(),
                    ),
                    Tag::Ss => AttributeValue::Ss(map.next_value()?),
                    Tag::Ns => AttributeValue::Ns(map.next_value()?),
                    Tag::Bs => AttributeValue::Bs(
                        map.next_value::<Vec<String>>()?
                            .into_iter()
                            .map(base64)
                            .collect::<Result<_, _>>()?,
                    ),
                };
                if map.next_key::<IgnoredAny>()?.is_some() {
                    return Err(A::Error::custom(
                        "an attribute value with several type tags",
                    ));
                }
                Ok(Stored(value))
            }
        }
        deserializer.deserialize_map(Visit)
    }
}

impl<'de> Deserialize<'de> for StoredMap {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> Visitor<'de> for Visit {
            type Value = StoredMap;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of attribute values")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StoredMap, A::Error> {
                let mut out = HashMap::with_capacity(map.size_hint().unwrap_or(16));
                while let Some((name, value)) = map.next_entry::<String, Stored>()? {
                    out.insert(name, value.0);
                }
                Ok(StoredMap(out))
            }
        }
        deserializer.deserialize_map(Visit)
    }
}

/// The string value of attribute `name`, if the item has one of type `S`.
pub(super) fn string_attr<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    match item.get(name) {
        Some(AttributeValue::S(s)) => Some(s.as_str()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn attribute_value() -> impl Strategy<Value = AttributeValue> {
        let text = "[a-zA-Z0-9 #\\-_.\"\\\\é\u{1F600}]{0,12}";
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

    proptest! {
        /// The stored form reads back as serde_dynamo reads it, for every kind of value.
        #[test]
        fn decode_reads_what_serde_dynamo_reads(
            attrs in proptest::collection::hash_map("[A-Za-z0-9#]{1,8}", attribute_value(), 0..8)
        ) {
            let item: Item = attrs.into();
            let bytes = serde_json::to_vec(&item).unwrap();
            let theirs: Item = serde_json::from_slice(&bytes).unwrap();
            prop_assert_eq!(decode(&bytes).unwrap(), theirs);
        }
    }

    #[test]
    fn decode_refuses_what_is_not_an_item() {
        for bad in [
            &br#"{"a":{}}"#[..],
            br#"{"a":{"S":"x","N":"1"}}"#,
            br#"{"a":{"X":"x"}}"#,
            br#"{"a":{"B":"not base64!"}}"#,
            br#"{"a":{"S":"x"}} trailing"#,
            br#"[]"#,
        ] {
            assert!(
                matches!(decode(bad), Err(StoreError::Corrupt(_))),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
