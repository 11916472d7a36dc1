//! The redb side of the embedded store: the two table definitions, creating them, detecting
//! them and upgrading a file's older index, decoding stored items, and mapping redb failures
//! to store errors.

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition, TableError};

use crate::store::table::GSI1;
use crate::store::{ddbjson, AttributeValue, Item, StoreError};

/// The table: `(PK, SK)` to the item as DynamoDB JSON.
pub(super) const ITEMS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("items");
/// The inverted index: `(SK, GSI1SK, PK)` to a copy of the item, as DynamoDB keeps `GSI1`
/// (projection ALL): a page of the index is read in one pass over the index, with no lookup of
/// each item in the table. Items without `GSI1SK` have no entry.
pub(super) const GSI1_INDEX: TableDefinition<(&str, &str, &str), &[u8]> =
    TableDefinition::new("GSI1.items");
/// The index as files kept it before it held the items: keys only. [`upgrade_index`] replaces
/// it.
const GSI1_KEYS_ONLY: TableDefinition<(&str, &str, &str), ()> = TableDefinition::new(GSI1);

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

/// Replaces a keys-only index (written by earlier versions) with the projected one, built from
/// the table in one write transaction: a file is either upgraded whole or left as it was.
/// Returns whether there was anything to upgrade.
pub(super) fn upgrade_index(db: &Database) -> Result<bool, StoreError> {
    {
        let txn = db.begin_read().map_err(unavailable)?;
        let old = table_present(txn.open_table(GSI1_KEYS_ONLY).map(drop))?;
        let new = table_present(txn.open_table(GSI1_INDEX).map(drop))?;
        if !old || new {
            return Ok(false);
        }
    }
    let txn = db.begin_write().map_err(unavailable)?;
    {
        let items = txn.open_table(ITEMS).map_err(unavailable)?;
        let mut index = txn.open_table(GSI1_INDEX).map_err(unavailable)?;
        for entry in items.iter().map_err(unavailable)? {
            let (key, value) = entry.map_err(unavailable)?;
            let (pk, sk) = key.value();
            let item = decode(value.value())?;
            if let Some(gsi1sk) = string_attr(&item, crate::store::table::GSI1SK) {
                index
                    .insert((sk, gsi1sk, pk), value.value())
                    .map_err(unavailable)?;
            }
        }
    }
    txn.delete_table(GSI1_KEYS_ONLY).map_err(unavailable)?;
    txn.commit().map_err(unavailable)?;
    Ok(true)
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

/// The first byte of a stored row that carries its size: the row is this byte, the item's
/// size as DynamoDB counts it (`u32`, little-endian), then the item as DynamoDB JSON
/// (`serde_json` of the [`Item`]). Rows written before the size was kept are the JSON alone,
/// which starts with `{`; they read the same, their size counted from the decoded item.
///
/// Why keep the size: every read prices every row it reads, and counting a row's size from
/// its text is a walk over the whole row, as costly as reading it.
const SIZED_ROW: u8 = 0x01;
const SIZE_BYTES: usize = 4;

/// A row to store for an item of `size` bytes (by DynamoDB's count).
pub(super) fn encode_row(item: &Item, size: usize) -> Result<Vec<u8>, String> {
    let size = u32::try_from(size).map_err(|_| format!("an item of {size} bytes"))?;
    let mut bytes = Vec::with_capacity(256);
    bytes.push(SIZED_ROW);
    bytes.extend_from_slice(&size.to_le_bytes());
    serde_json::to_writer(&mut bytes, item).map_err(|e| e.to_string())?;
    Ok(bytes)
}

/// A stored row's item text, and its size when the row carries it.
pub(super) fn row_text(bytes: &[u8]) -> Result<(Option<usize>, &str), StoreError> {
    let (size, json) = match bytes.split_first() {
        Some((&SIZED_ROW, rest)) => {
            let (size, json) = rest
                .split_first_chunk::<SIZE_BYTES>()
                .ok_or_else(|| corrupt(&"a row shorter than its header"))?;
            (Some(u32::from_le_bytes(*size) as usize), json)
        }
        _ => (None, bytes),
    };
    // `basic` reports no position on failure, so a corrupt row is checked again by std for
    // the message.
    let text = match simdutf8::basic::from_utf8(json) {
        Ok(text) => text,
        Err(_) => std::str::from_utf8(json).map_err(|e| corrupt(&e))?,
    };
    Ok((size, text))
}

/// Reads a stored item with the store's own parser (`store::ddbjson`), which reads attribute
/// values straight from the text.
pub(super) fn decode(bytes: &[u8]) -> Result<Item, StoreError> {
    let (_, text) = row_text(bytes)?;
    ddbjson::item(text).map_err(|e| corrupt(&e))
}

/// The error for a stored row that cannot be read.
fn corrupt(e: &dyn std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("stored item: {e}"))
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
    use crate::store::embedded::tests::{item, sks, with};
    use crate::store::embedded::EmbeddedStore;
    use crate::store::{Index, Key, Query, Store, WriteOp};

    /// A file written before `GSI1` held its items opens upgraded: the index reads the same
    /// items (only those with `GSI1SK`), the keys-only table is gone, and writes keep the new
    /// index in step.
    #[tokio::test]
    async fn a_keys_only_index_is_upgraded_when_the_file_opens() {
        let dir = tempfile::tempdir().unwrap();
        let rows = [
            with(
                item("a", "p", Some("2")),
                "Name",
                AttributeValue::S("two".into()),
            ),
            item("b", "p", Some("1")),
            item("c", "p", None),
        ];
        {
            let db = Database::create(dir.path().join("gridgate.redb")).unwrap();
            let txn = db.begin_write().unwrap();
            {
                let mut items = txn.open_table(ITEMS).unwrap();
                let mut index = txn.open_table(GSI1_KEYS_ONLY).unwrap();
                for row in &rows {
                    let pk = string_attr(row, "PK").unwrap();
                    let sk = string_attr(row, "SK").unwrap();
                    let bytes = serde_json::to_vec(row).unwrap();
                    items.insert((pk, sk), bytes.as_slice()).unwrap();
                    if let Some(g) = string_attr(row, "GSI1SK") {
                        index.insert((sk, g, pk), ()).unwrap();
                    }
                }
            }
            txn.commit().unwrap();
        }

        let store = EmbeddedStore::open(dir.path(), "gridgate").unwrap();
        let page = store
            .query(&Query::partition(Index::Gsi1, "p"))
            .await
            .unwrap();
        assert_eq!(page.items, vec![rows[1].clone(), rows[0].clone()]);
        // Rows written before rows carried their size read the same as text, priced alike
        // (their size counted from the decoded item).
        let raw = store
            .query_raw(&Query::partition(Index::Gsi1, "p"))
            .await
            .unwrap();
        assert_eq!(raw.consumed, page.consumed);
        let read: Vec<Item> = raw.items.into_iter().map(|r| r.item().unwrap()).collect();
        assert_eq!(read, page.items);
        {
            let txn = store.db.begin_read().unwrap();
            assert!(matches!(
                txn.open_table(GSI1_KEYS_ONLY).map(drop),
                Err(TableError::TableDoesNotExist(_))
            ));
        }
        assert!(!upgrade_index(&store.db).unwrap());

        store
            .transact_write(vec![
                WriteOp::Delete {
                    key: Key::new("a", "p"),
                    condition: None,
                },
                WriteOp::Put {
                    item: item("d", "p", Some("0")),
                    condition: None,
                },
            ])
            .await
            .unwrap();
        let page = store
            .query(&Query::partition(Index::Gsi1, "p"))
            .await
            .unwrap();
        assert_eq!(sks(&page.items), ["p", "p"]);
        assert_eq!(page.items, vec![item("d", "p", Some("0")), rows[1].clone()]);
    }

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
