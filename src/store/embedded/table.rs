//! The redb side of the embedded store: the two table definitions and their keys, creating
//! them, detecting them and upgrading a file of an earlier version, encoding and decoding
//! stored rows, and mapping redb failures to store errors.

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition, TableError};

use crate::store::capacity::item_size;
use crate::store::table::GSI1SK;
use crate::store::{ddbjson, AttributeValue, Item, StoreError};

/// A key of [`ITEMS`]: `(PK, SK)`, each string's UTF-8 bytes.
type TableKey = (&'static [u8], &'static [u8]);
/// A key of [`GSI1_INDEX`]: `(SK, GSI1SK, PK)`, each string's UTF-8 bytes.
type IndexKey = (&'static [u8], &'static [u8], &'static [u8]);

/// The table: `(PK, SK)` to the item's row (see [`encode_row`]).
///
/// Keys are byte strings, not `&str`: redb orders both by their bytes, which is DynamoDB's
/// order, but it checks a `&str` key as UTF-8 at every comparison, about forty times per point
/// read, which cost a grid page sorted by a custom field about a tenth of its instructions. The
/// keys written are the `String`s of validated requests; keys read back are checked once, when
/// a row is returned (see [`key_str`]).
pub(super) const ITEMS: TableDefinition<TableKey, &[u8]> = TableDefinition::new("items.v2");
/// The inverted index: `(SK, GSI1SK, PK)` to a copy of the item's row, as DynamoDB keeps
/// `GSI1` (projection ALL): a page of the index is read in one pass over the index, with no
/// lookup of each item in the table. Items without `GSI1SK` have no entry.
pub(super) const GSI1_INDEX: TableDefinition<IndexKey, &[u8]> = TableDefinition::new("GSI1.v2");

/// A write transaction's open [`ITEMS`].
pub(super) type ItemsTable<'txn> = redb::Table<'txn, TableKey, &'static [u8]>;
/// A write transaction's open [`GSI1_INDEX`].
pub(super) type IndexTable<'txn> = redb::Table<'txn, IndexKey, &'static [u8]>;

/// The key of an item in [`ITEMS`].
pub(super) fn table_key<'a>(pk: &'a str, sk: &'a str) -> (&'a [u8], &'a [u8]) {
    (pk.as_bytes(), sk.as_bytes())
}

/// The key of an item's entry in [`GSI1_INDEX`].
pub(super) fn index_key<'a>(
    sk: &'a str,
    gsi1sk: &'a str,
    pk: &'a str,
) -> (&'a [u8], &'a [u8], &'a [u8]) {
    (sk.as_bytes(), gsi1sk.as_bytes(), pk.as_bytes())
}

/// A stored key string, checked as UTF-8 once as it leaves the store.
pub(super) fn key_str(bytes: &[u8]) -> Result<&str, StoreError> {
    simdutf8::basic::from_utf8(bytes).map_err(|_| corrupt(&"a key that is not UTF-8"))
}

/// The tables as earlier versions kept them, which [`upgrade`] replaces: string keys; the
/// index first as keys only, then holding the rows.
mod legacy {
    use redb::TableDefinition;

    pub(super) const ITEMS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("items");
    pub(super) const GSI1_ROWS: TableDefinition<(&str, &str, &str), &[u8]> =
        TableDefinition::new("GSI1.items");
    pub(super) const GSI1_KEYS_ONLY: TableDefinition<(&str, &str, &str), ()> =
        TableDefinition::new(crate::store::table::GSI1);
}

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

/// Replaces the tables of a file written by an earlier version (see [`legacy`]) with the
/// current ones, in one write transaction, so a file is either upgraded whole or left as it
/// was: every row is rewritten in the current form (carrying its size) under a byte key, and
/// the index is rebuilt from the items. Returns whether there was anything to upgrade.
pub(super) fn upgrade(db: &Database) -> Result<bool, StoreError> {
    {
        let txn = db.begin_read().map_err(unavailable)?;
        let old = table_present(txn.open_table(legacy::ITEMS).map(drop))?;
        let new = table_present(txn.open_table(ITEMS).map(drop))?;
        if !old || new {
            return Ok(false);
        }
    }
    let txn = db.begin_write().map_err(unavailable)?;
    {
        let old = txn.open_table(legacy::ITEMS).map_err(unavailable)?;
        let mut items = txn.open_table(ITEMS).map_err(unavailable)?;
        let mut index = txn.open_table(GSI1_INDEX).map_err(unavailable)?;
        for entry in old.iter().map_err(unavailable)? {
            let (key, value) = entry.map_err(unavailable)?;
            let (pk, sk) = key.value();
            let item = decode(value.value())?;
            let row = encode_row(&item, item_size(&item)).map_err(|e| corrupt(&e))?;
            items
                .insert(table_key(pk, sk), row.as_slice())
                .map_err(unavailable)?;
            if let Some(gsi1sk) = string_attr(&item, GSI1SK) {
                index
                    .insert(index_key(sk, gsi1sk, pk), row.as_slice())
                    .map_err(unavailable)?;
            }
        }
    }
    txn.delete_table(legacy::ITEMS).map_err(unavailable)?;
    txn.delete_table(legacy::GSI1_ROWS).map_err(unavailable)?;
    txn.delete_table(legacy::GSI1_KEYS_ONLY)
        .map_err(unavailable)?;
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

/// A stored row's item text, and its size when the row carries it (rows of the tables of
/// earlier versions, read by [`upgrade`], do not).
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

/// A current row's item text and the size it carries. Every row of the current tables
/// carries its size (writes encode it, and [`upgrade`] rewrites older rows), so a row without
/// one is corrupt.
pub(super) fn sized_row_text(bytes: &[u8]) -> Result<(usize, &str), StoreError> {
    match row_text(bytes)? {
        (Some(size), text) => Ok((size, text)),
        (None, _) => Err(corrupt(&"a row without its size header")),
    }
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

    /// The two layouts of earlier versions: the index as keys only, or holding the rows.
    #[derive(Clone, Copy, Debug)]
    enum Legacy {
        KeysOnlyIndex,
        RowIndex,
    }

    /// Writes `rows` as a file of an earlier version would hold them: string keys and rows
    /// of JSON alone, without their size.
    fn write_legacy(path: &std::path::Path, layout: Legacy, rows: &[Item]) {
        let db = Database::create(path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut items = txn.open_table(legacy::ITEMS).unwrap();
            let mut keys_only = txn.open_table(legacy::GSI1_KEYS_ONLY).unwrap();
            let mut with_rows = txn.open_table(legacy::GSI1_ROWS).unwrap();
            for row in rows {
                let pk = string_attr(row, "PK").unwrap();
                let sk = string_attr(row, "SK").unwrap();
                let bytes = serde_json::to_vec(row).unwrap();
                items.insert((pk, sk), bytes.as_slice()).unwrap();
                if let Some(g) = string_attr(row, "GSI1SK") {
                    match layout {
                        Legacy::KeysOnlyIndex => drop(keys_only.insert((sk, g, pk), ()).unwrap()),
                        Legacy::RowIndex => {
                            drop(with_rows.insert((sk, g, pk), bytes.as_slice()).unwrap())
                        }
                    }
                }
            }
        }
        match layout {
            Legacy::KeysOnlyIndex => txn.delete_table(legacy::GSI1_ROWS).unwrap(),
            Legacy::RowIndex => txn.delete_table(legacy::GSI1_KEYS_ONLY).unwrap(),
        };
        txn.commit().unwrap();
    }

    /// A file of either earlier layout opens upgraded: the table and the index read the same
    /// items (the index only those with `GSI1SK`), every row now carries its size (a read of
    /// the rows as text costs what a read of the items does), the old tables are gone, and
    /// writes keep the new index in step.
    #[tokio::test]
    async fn files_of_earlier_versions_are_upgraded_when_they_open() {
        for layout in [Legacy::KeysOnlyIndex, Legacy::RowIndex] {
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
            write_legacy(&dir.path().join("gridgate.redb"), layout, &rows);

            let store = EmbeddedStore::open(dir.path(), "gridgate").unwrap();
            assert!(store.ready.load(std::sync::atomic::Ordering::Relaxed));
            let page = store
                .query(&Query::partition(Index::Gsi1, "p"))
                .await
                .unwrap();
            assert_eq!(
                page.items,
                vec![rows[1].clone(), rows[0].clone()],
                "{layout:?}"
            );
            let raw = store
                .query_raw(&Query::partition(Index::Gsi1, "p"))
                .await
                .unwrap();
            assert_eq!(raw.consumed, page.consumed);
            let read: Vec<Item> = raw.items.into_iter().map(|r| r.item().unwrap()).collect();
            assert_eq!(read, page.items);
            let table = store
                .query(&Query::partition(Index::Table, "c"))
                .await
                .unwrap();
            assert_eq!(table.items, vec![rows[2].clone()]);
            {
                let txn = store.db.begin_read().unwrap();
                let items = txn.open_table(ITEMS).unwrap();
                for entry in items.iter().unwrap() {
                    let (_, value) = entry.unwrap();
                    let (size, _) = row_text(value.value()).unwrap();
                    assert_eq!(size, Some(item_size(&decode(value.value()).unwrap())));
                }
                for gone in [
                    txn.open_table(legacy::ITEMS).map(drop),
                    txn.open_table(legacy::GSI1_ROWS).map(drop),
                    txn.open_table(legacy::GSI1_KEYS_ONLY).map(drop),
                ] {
                    assert!(matches!(gone, Err(TableError::TableDoesNotExist(_))));
                }
            }
            assert!(!upgrade(&store.db).unwrap());

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
    }

    /// Rows of the current tables are read with the size they carry; a row without one
    /// (as only the tables of earlier versions hold) is refused as corrupt.
    #[test]
    fn current_rows_carry_their_size() {
        let item = decode(br#"{"PK":{"S":"p"},"N":{"N":"1"}}"#).unwrap();
        let row = encode_row(&item, item_size(&item)).unwrap();
        let (size, text) = sized_row_text(&row).unwrap();
        assert_eq!(
            (size, decode(text.as_bytes()).unwrap()),
            (item_size(&item), item)
        );
        assert!(matches!(
            sized_row_text(br#"{"PK":{"S":"p"}}"#),
            Err(StoreError::Corrupt(_))
        ));
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
