//! The redb side of the embedded store: the two table definitions and their keys, creating
//! them, detecting them and upgrading a file of an earlier version, encoding and decoding
//! stored rows, and mapping redb failures to store errors.

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition, TableError};

use super::batch::prepare;
use super::bulk::write_in;
use super::runs::LoadRuns;
use crate::store::row::{self, RowRef};
use crate::store::{ddbjson, Item, StoreError};

/// A key of [`ITEMS`]: `(PK, SK)`, each string's UTF-8 bytes.
type TableKey = (&'static [u8], &'static [u8]);
/// A key of [`GSI1_INDEX`]: `(SK, GSI1SK, PK)`, each string's UTF-8 bytes.
type IndexKey = (&'static [u8], &'static [u8], &'static [u8]);

/// The table: `(PK, SK)` to the item's row (see [`row::store`]), which holds every attribute
/// but `PK` and `SK`.
///
/// Keys are byte strings, not `&str`: redb orders both by their bytes, which is DynamoDB's
/// order, but it checks a `&str` key as UTF-8 at every comparison, about forty times per point
/// read, which cost a grid page sorted by a custom field about a tenth of its instructions. The
/// keys written are the `String`s of validated requests; keys read back are checked once, when
/// a row is returned (see [`key_str`]).
pub(super) const ITEMS: TableDefinition<TableKey, &[u8]> = TableDefinition::new("items.v3");
/// The inverted index: `(SK, GSI1SK, PK)` to a copy of the item's row without `GSI1SK` (its
/// key holds all three), as DynamoDB keeps `GSI1` (projection ALL): a page of the index is
/// read in one pass over the index, with no lookup of each item in the table. Items without
/// `GSI1SK` have no entry.
pub(super) const GSI1_INDEX: TableDefinition<IndexKey, &[u8]> = TableDefinition::new("GSI1.v3");

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

/// The tables as earlier versions kept them, which [`upgrade`] replaces: rows of DynamoDB JSON
/// under string keys, the index first as keys only, then holding the rows; then the same rows,
/// with their size, under byte keys.
mod legacy {
    use redb::TableDefinition;

    use super::{IndexKey, TableKey};

    pub(super) const ITEMS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("items");
    pub(super) const GSI1_ROWS: TableDefinition<(&str, &str, &str), &[u8]> =
        TableDefinition::new("GSI1.items");
    pub(super) const GSI1_KEYS_ONLY: TableDefinition<(&str, &str, &str), ()> =
        TableDefinition::new(crate::store::table::GSI1);
    pub(super) const ITEMS_V2: TableDefinition<TableKey, &[u8]> = TableDefinition::new("items.v2");
    pub(super) const GSI1_V2: TableDefinition<IndexKey, &[u8]> = TableDefinition::new("GSI1.v2");
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
/// was: every item is rewritten as a current row (see [`row::store`]) under a byte key, and
/// the index is rebuilt from the items. Returns whether there was anything to upgrade.
pub(super) fn upgrade(db: &Database, file: &std::path::Path) -> Result<bool, StoreError> {
    let from_v2 = {
        let txn = db.begin_read().map_err(unavailable)?;
        if table_present(txn.open_table(ITEMS).map(drop))? {
            return Ok(false);
        }
        if table_present(txn.open_table(legacy::ITEMS_V2).map(drop))? {
            true
        } else if table_present(txn.open_table(legacy::ITEMS).map(drop))? {
            false
        } else {
            return Ok(false);
        }
    };
    let txn = db.begin_write().map_err(unavailable)?;
    // The rows are rewritten as a bulk load is (sorted runs, spilled past a size, merged into
    // each table once), so a file of any size upgrades in bounded memory.
    let mut runs = LoadRuns::beside(file);
    if from_v2 {
        legacy_rows(&txn, legacy::ITEMS_V2, &mut runs)?;
    } else {
        legacy_rows(&txn, legacy::ITEMS, &mut runs)?;
    }
    let txn = write_in(runs.held()?, txn, None)?;
    txn.delete_table(legacy::ITEMS_V2).map_err(unavailable)?;
    txn.delete_table(legacy::ITEMS).map_err(unavailable)?;
    txn.delete_table(legacy::GSI1_V2).map_err(unavailable)?;
    txn.delete_table(legacy::GSI1_ROWS).map_err(unavailable)?;
    txn.delete_table(legacy::GSI1_KEYS_ONLY)
        .map_err(unavailable)?;
    txn.commit().map_err(unavailable)?;
    Ok(true)
}

/// Every item of an earlier version's table, validated as a write would be, added to `runs`
/// a batch at a time.
fn legacy_rows<K: redb::Key + 'static>(
    txn: &redb::WriteTransaction,
    table: TableDefinition<K, &[u8]>,
    runs: &mut LoadRuns,
) -> Result<(), StoreError> {
    const BATCH: usize = 10_000;
    let old = txn.open_table(table).map_err(unavailable)?;
    let mut batch = Vec::with_capacity(BATCH);
    for entry in old.iter().map_err(unavailable)? {
        let (_, value) = entry.map_err(unavailable)?;
        batch.push(decode_json(value.value())?);
        if batch.len() == BATCH {
            runs.add(prepare(&batch).map_err(|e| corrupt(&e))?)?;
            batch.clear();
        }
    }
    runs.add(prepare(&batch).map_err(|e| corrupt(&e))?)
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

/// A stored row's size (by DynamoDB's count) and its attributes (see [`row::stored`]).
pub(super) fn stored_row(bytes: &[u8]) -> Result<(usize, &[u8]), StoreError> {
    row::stored(bytes).map_err(|e| corrupt(&e))
}

/// The item of a row read under its key.
pub(super) fn decode(row: RowRef<'_>) -> Result<Item, StoreError> {
    row.item().map_err(|e| corrupt(&e))
}

/// The `GSI1SK` of a table row (where it keeps it among its attributes): what a write that
/// replaces or deletes the item removes from the index.
pub(super) fn stored_gsi1sk(bytes: &[u8]) -> Result<Option<String>, StoreError> {
    let (_, attributes) = stored_row(bytes)?;
    let row = RowRef {
        pk: "",
        sk: "",
        gsi1sk: None,
        attributes,
    };
    Ok(row
        .string(crate::store::table::GSI1SK)
        .map_err(|e| corrupt(&e))?
        .map(str::to_owned))
}

/// The item of a table row read under `(pk, sk)`.
pub(super) fn decode_table_row(pk: &str, sk: &str, bytes: &[u8]) -> Result<Item, StoreError> {
    let (_, attributes) = stored_row(bytes)?;
    decode(RowRef {
        pk,
        sk,
        gsi1sk: None,
        attributes,
    })
}

/// The first byte of a row of the tables of the second version that carries its size: the
/// byte, the size (`u32`, little-endian), then the item as DynamoDB JSON. Rows of the first
/// version are the JSON alone.
const V2_SIZED_ROW: u8 = 0x01;

/// Reads an item of the tables of earlier versions, kept as DynamoDB JSON.
fn decode_json(bytes: &[u8]) -> Result<Item, StoreError> {
    let json = match bytes.split_first() {
        Some((&V2_SIZED_ROW, rest)) => rest
            .get(4..)
            .ok_or_else(|| corrupt(&"a row shorter than its header"))?,
        _ => bytes,
    };
    let text = std::str::from_utf8(json).map_err(|e| corrupt(&e))?;
    ddbjson::item(text).map_err(|e| corrupt(&e))
}

/// The error for a stored row that cannot be read.
pub(super) fn corrupt(e: &dyn std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("stored item: {e}"))
}

/// The string value of attribute `name`, if the item has one of type `S`.
#[cfg(test)]
pub(super) fn string_attr<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    match item.get(name) {
        Some(crate::store::AttributeValue::S(s)) => Some(s.as_str()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::capacity::item_size;
    use crate::store::embedded::tests::{item, sks, with};
    use crate::store::embedded::EmbeddedStore;
    use crate::store::table::GSI1SK;
    use crate::store::{AttributeValue, Index, Key, Query, Store, WriteOp};

    /// The layouts of earlier versions: the index as keys only, or holding the rows (string
    /// keys, rows of JSON alone); then byte keys and rows of JSON with their size.
    #[derive(Clone, Copy, Debug)]
    enum Legacy {
        KeysOnlyIndex,
        RowIndex,
        SizedJson,
    }

    /// Writes `rows` as a file of an earlier version would hold them.
    fn write_legacy(path: &std::path::Path, layout: Legacy, rows: &[Item]) {
        let db = Database::create(path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut items = txn.open_table(legacy::ITEMS).unwrap();
            let mut keys_only = txn.open_table(legacy::GSI1_KEYS_ONLY).unwrap();
            let mut with_rows = txn.open_table(legacy::GSI1_ROWS).unwrap();
            let mut items_v2 = txn.open_table(legacy::ITEMS_V2).unwrap();
            let mut index_v2 = txn.open_table(legacy::GSI1_V2).unwrap();
            for row in rows {
                let pk = string_attr(row, "PK").unwrap();
                let sk = string_attr(row, "SK").unwrap();
                let json = serde_json::to_vec(row).unwrap();
                let mut sized = vec![V2_SIZED_ROW];
                sized.extend_from_slice(&(item_size(row) as u32).to_le_bytes());
                sized.extend_from_slice(&json);
                match layout {
                    Legacy::SizedJson => drop(
                        items_v2
                            .insert(table_key(pk, sk), sized.as_slice())
                            .unwrap(),
                    ),
                    _ => drop(items.insert((pk, sk), json.as_slice()).unwrap()),
                }
                if let Some(g) = string_attr(row, "GSI1SK") {
                    match layout {
                        Legacy::KeysOnlyIndex => drop(keys_only.insert((sk, g, pk), ()).unwrap()),
                        Legacy::RowIndex => {
                            drop(with_rows.insert((sk, g, pk), json.as_slice()).unwrap())
                        }
                        Legacy::SizedJson => drop(
                            index_v2
                                .insert(index_key(sk, g, pk), sized.as_slice())
                                .unwrap(),
                        ),
                    }
                }
            }
        }
        match layout {
            Legacy::KeysOnlyIndex => txn.delete_table(legacy::GSI1_ROWS).unwrap(),
            Legacy::RowIndex => txn.delete_table(legacy::GSI1_KEYS_ONLY).unwrap(),
            Legacy::SizedJson => {
                txn.delete_table(legacy::ITEMS).unwrap();
                txn.delete_table(legacy::GSI1_ROWS).unwrap();
                txn.delete_table(legacy::GSI1_KEYS_ONLY).unwrap()
            }
        };
        if !matches!(layout, Legacy::SizedJson) {
            txn.delete_table(legacy::ITEMS_V2).unwrap();
            txn.delete_table(legacy::GSI1_V2).unwrap();
        }
        txn.commit().unwrap();
    }

    /// A file of any earlier layout opens upgraded: the table and the index read the same
    /// items (the index only those with `GSI1SK`), every row is a current one carrying its
    /// size, the old tables are gone, and writes keep the new index in step.
    #[tokio::test]
    async fn files_of_earlier_versions_are_upgraded_when_they_open() {
        for layout in [Legacy::KeysOnlyIndex, Legacy::RowIndex, Legacy::SizedJson] {
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
                    let (key, value) = entry.unwrap();
                    let (pk, sk) = key.value();
                    let (pk, sk) = (key_str(pk).unwrap(), key_str(sk).unwrap());
                    let (size, _) = stored_row(value.value()).unwrap();
                    let item = decode_table_row(pk, sk, value.value()).unwrap();
                    assert_eq!(size, item_size(&item));
                }
                for gone in [
                    txn.open_table(legacy::ITEMS).map(drop),
                    txn.open_table(legacy::GSI1_ROWS).map(drop),
                    txn.open_table(legacy::GSI1_KEYS_ONLY).map(drop),
                    txn.open_table(legacy::GSI1_V2).map(drop),
                ] {
                    assert!(matches!(gone, Err(TableError::TableDoesNotExist(_))));
                }
                assert!(matches!(
                    txn.open_table(legacy::ITEMS_V2).map(drop),
                    Err(TableError::TableDoesNotExist(_))
                ));
            }
            assert!(!upgrade(&store.db, &store.path).unwrap());

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

    /// A table row keeps `GSI1SK` (its key does not hold it) and the index's copy does not;
    /// both carry the item's size; anything else is refused as corrupt.
    #[test]
    fn rows_carry_their_size_and_the_index_leaves_gsi1sk_to_its_key() {
        let item = item("p", "s", Some("g"));
        let size = item_size(&item);
        let stored = row::store(&item, size);
        assert_eq!(stored_gsi1sk(&stored.bytes).unwrap().as_deref(), Some("g"));
        assert_eq!(
            stored_gsi1sk(&stored.bytes[..stored.index_end]).unwrap(),
            None
        );
        let (read_size, attributes) = stored_row(&stored.bytes[..stored.index_end]).unwrap();
        let index_row = RowRef {
            pk: "p",
            sk: "s",
            gsi1sk: Some("g"),
            attributes,
        };
        assert_eq!(
            (read_size, decode(index_row).unwrap()),
            (size, item.clone())
        );
        assert_eq!(decode_table_row("p", "s", &stored.bytes).unwrap(), item);
        for bad in [&br#"{"PK":{"S":"p"}}"#[..], b"\x01\0\0\0\0{}", b""] {
            assert!(matches!(stored_row(bad), Err(StoreError::Corrupt(_))));
        }
        assert!(matches!(
            decode_table_row("p", "s", b"\x02\x05\x01a\x63"),
            Err(StoreError::Corrupt(_))
        ));
    }

    #[test]
    fn json_rows_of_earlier_versions_are_read_and_the_rest_called_corrupt() {
        let item = decode_json(br#"{"PK":{"S":"p"},"N":{"N":"1"}}"#).unwrap();
        assert_eq!(string_attr(&item, "PK"), Some("p"));
        let mut sized = vec![V2_SIZED_ROW, 0, 0, 0, 0];
        sized.extend_from_slice(br#"{"PK":{"S":"p"},"N":{"N":"1"}}"#);
        assert_eq!(decode_json(&sized).unwrap(), item);
        assert!(string_attr(&item, GSI1SK).is_none());
        for bad in [
            &br#"{"a":{"X":"x"}}"#[..],
            b"\xff",
            br#"{"a":{"S":"x"}} trailing"#,
            b"\x01\0",
        ] {
            assert!(
                matches!(decode_json(bad), Err(StoreError::Corrupt(_))),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
