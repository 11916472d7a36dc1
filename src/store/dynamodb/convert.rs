//! Conversions for the DynamoDB store: keys and start keys to and from SDK attribute maps,
//! items read from the SDK, and the consumed capacity of a response.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::ConsumedCapacity;

use crate::store::table::{GSI1, GSI1SK, PK, SK};
use crate::store::{AttributeValue, Capacity, Index, Item, Key, StartKey, StoreError};

pub(super) type SdkValue = aws_sdk_dynamodb::types::AttributeValue;
pub(super) type SdkItem = HashMap<String, SdkValue>;

/// Sums consumed capacity over the entries of a response (one per table; each entry's
/// `CapacityUnits` already includes the indexes it touched).
pub(super) fn total_capacity(entries: &[ConsumedCapacity]) -> Capacity {
    Capacity::read(total_units(entries))
}

/// The `CapacityUnits` of a response, summed over its tables.
pub(super) fn total_units(entries: &[ConsumedCapacity]) -> f64 {
    entries
        .iter()
        .filter_map(ConsumedCapacity::capacity_units)
        .sum()
}

pub(super) fn non_empty<K, V>(map: HashMap<K, V>) -> Option<HashMap<K, V>> {
    (!map.is_empty()).then_some(map)
}

pub(super) fn key_map(key: &Key) -> SdkItem {
    HashMap::from([
        (PK.to_string(), SdkValue::S(key.pk.clone())),
        (SK.to_string(), SdkValue::S(key.sk.clone())),
    ])
}

fn string_attr(map: &SdkItem, name: &str) -> Result<String, StoreError> {
    match map.get(name) {
        Some(SdkValue::S(s)) => Ok(s.clone()),
        other => Err(StoreError::Corrupt(format!(
            "expected string attribute {name} in a key, found {other:?}"
        ))),
    }
}

pub(super) fn key_from_map(map: &SdkItem) -> Result<Key, StoreError> {
    Ok(Key::new(string_attr(map, PK)?, string_attr(map, SK)?))
}

pub(super) fn start_key_map(index: Index, start: &StartKey) -> Result<SdkItem, StoreError> {
    let mut map = key_map(&start.key);
    if index == Index::Gsi1 {
        let Some(gsi1sk) = &start.gsi1sk else {
            return Err(StoreError::Invalid(format!(
                "start key {} of a {GSI1} query lacks {GSI1SK}",
                start.key
            )));
        };
        map.insert(GSI1SK.to_string(), SdkValue::S(gsi1sk.clone()));
    }
    Ok(map)
}

pub(super) fn start_key_from_map(index: Index, map: &SdkItem) -> Result<StartKey, StoreError> {
    Ok(StartKey {
        key: key_from_map(map)?,
        gsi1sk: match index {
            Index::Table => None,
            Index::Gsi1 => Some(string_attr(map, GSI1SK)?),
        },
    })
}

/// Converts an item read from DynamoDB. Written by hand rather than with serde_dynamo's `From`
/// because that one panics on value types this SDK version does not know; here they are
/// reported as corrupt data.
pub(super) fn from_sdk_item(item: SdkItem) -> Result<Item, StoreError> {
    item.into_iter()
        .map(|(name, value)| Ok((name, from_sdk_value(value)?)))
        .collect::<Result<HashMap<_, _>, StoreError>>()
        .map(crate::store::item_of)
}

fn from_sdk_value(value: SdkValue) -> Result<AttributeValue, StoreError> {
    Ok(match value {
        SdkValue::S(s) => AttributeValue::S(s),
        SdkValue::N(n) => AttributeValue::N(n),
        SdkValue::Bool(b) => AttributeValue::Bool(b),
        SdkValue::Null(n) => AttributeValue::Null(n),
        SdkValue::B(b) => AttributeValue::B(b.into_inner()),
        SdkValue::M(m) => AttributeValue::M(
            m.into_iter()
                .map(|(k, v)| Ok((k, from_sdk_value(v)?)))
                .collect::<Result<_, StoreError>>()?,
        ),
        SdkValue::L(l) => AttributeValue::L(
            l.into_iter()
                .map(from_sdk_value)
                .collect::<Result<_, _>>()?,
        ),
        SdkValue::Ss(ss) => AttributeValue::Ss(ss),
        SdkValue::Ns(ns) => AttributeValue::Ns(ns),
        SdkValue::Bs(bs) => AttributeValue::Bs(bs.into_iter().map(|b| b.into_inner()).collect()),
        other => {
            return Err(StoreError::Corrupt(format!(
                "unknown DynamoDB attribute value type: {other:?}"
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_convert_both_ways() {
        let item: Item = HashMap::from([
            ("PK".to_string(), AttributeValue::S("p".into())),
            (
                "Values".to_string(),
                AttributeValue::M(HashMap::from([
                    ("n".to_string(), AttributeValue::N("1.5".into())),
                    ("b".to_string(), AttributeValue::B(vec![1, 2])),
                    (
                        "l".to_string(),
                        AttributeValue::L(vec![AttributeValue::Null(true)]),
                    ),
                ])),
            ),
        ])
        .into();
        let sdk: SdkItem = item.clone().into();
        assert_eq!(from_sdk_item(sdk).unwrap(), item);
    }
}
