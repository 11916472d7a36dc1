//! The redb side of the embedded store: the two table definitions, creating them and
//! detecting them, decoding stored items, and mapping redb failures to store errors.

use redb::{Database, ReadableDatabase, TableDefinition, TableError};

use crate::store::table::GSI1;
use crate::store::{ddbjson, AttributeValue, Item, StoreError};

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

/// Reads a stored item (DynamoDB JSON, as serde_dynamo writes it) with the store's own parser
/// (`store::ddbjson`), which reads attribute values straight from the text.
pub(super) fn decode(bytes: &[u8]) -> Result<Item, StoreError> {
    let corrupt = |e: &dyn std::fmt::Display| StoreError::Corrupt(format!("stored item: {e}"));
    let text = std::str::from_utf8(bytes).map_err(|e| corrupt(&e))?;
    ddbjson::item(text).map_err(|e| corrupt(&e))
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
    use super::*;

    #[test]
    fn decode_reads_stored_items_and_calls_the_rest_corrupt() {
        let item = decode(br#"{"PK":{"S":"p"},"N":{"N":"1"}}"#).unwrap();
        assert_eq!(string_attr(&item, "PK"), Some("p"));
        for bad in [
            &br#"{"a":{"X":"x"}}"#[..],
            b"\xff",
            br#"{"a":{"S":"x"}} trailing"#,
        ] {
            assert!(
                matches!(decode(bad), Err(StoreError::Corrupt(_))),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
