//! Writes for the embedded store: puts, deletes, updates and transactions inside one redb write
//! transaction each, with `GSI1` kept in step and conditions checked before anything applies.

use std::cmp::Ordering;
use std::ops::Bound;

use redb::{Database, ReadableTable};

use super::equality::values_equal;
use super::table::{
    decode_table_row, index_key, stored_gsi1sk, table_key, unavailable, IndexTable, ItemsTable,
    GSI1_INDEX, ITEMS,
};
use super::validate::{ItemRow, TxOp};
use crate::store::capacity::item_size;
use crate::store::table::{PK, SK};
use crate::store::{
    AttributeValue, Capacity, Condition, Item, Key, StoreError, UpdateAction, WriteOutput,
};

/// Puts one validated row and keeps `GSI1` in step, inside the caller's transaction (see
/// [`put_rows`]).
fn put_row(
    items: &mut ItemsTable<'_>,
    index: &mut IndexTable<'_>,
    row: &ItemRow,
) -> Result<(), StoreError> {
    put_rows(items, index, vec![row])
}

/// Puts validated rows and keeps `GSI1` in step, inside the caller's transaction: each
/// replaced item's index entry (if any) is removed, then each new one (if any, holding the
/// row without `GSI1SK`) is added. The rows go in key order, the last of each key winning as
/// it would written in order (the sort is stable, over the rows reversed), through
/// [`insert_in_order`].
pub(super) fn put_rows(
    items: &mut ItemsTable<'_>,
    index: &mut IndexTable<'_>,
    mut order: Vec<&ItemRow>,
) -> Result<(), StoreError> {
    order.reverse();
    order.sort_by(|a, b| table_key(&a.pk, &a.sk).cmp(&table_key(&b.pk, &b.sk)));
    order.dedup_by(|a, b| (&a.pk, &a.sk) == (&b.pk, &b.sk));
    let mut stale = Vec::new();
    let rows = order.iter().map(|row| Ok(TableEntry(row)));
    insert_in_order(items, rows, |row, old| {
        if let Some(g) = stored_gsi1sk(old)? {
            stale.push((row.0.sk.clone(), g, row.0.pk.clone()));
        }
        Ok(())
    })?;
    remove_index_entries(index, stale)?;
    let mut fresh: Vec<IndexEntry<'_>> = order
        .iter()
        .filter_map(|row| Some(IndexEntry(row, row.gsi1sk.as_deref()?)))
        .collect();
    fresh.sort_by(|a, b| a.key().cmp(&b.key()));
    insert_in_order(index, fresh.into_iter().map(Ok), |_, _| Ok(()))
}

/// Removes index entries `(SK, GSI1SK, PK)` (those of replaced items), in key order.
pub(super) fn remove_index_entries(
    index: &mut IndexTable<'_>,
    mut stale: Vec<(String, String, String)>,
) -> Result<(), StoreError> {
    // Index keys hold the item's key, so the entries removed and the ones a write adds never
    // collide: every removal comes first.
    stale.sort();
    for (sk, g, pk) in &stale {
        index.remove(index_key(sk, g, pk)).map_err(unavailable)?;
    }
    Ok(())
}

/// An entry to insert into a redb table of byte rows: its key, as the table's key type reads
/// it, and its row.
pub(super) trait Entry {
    type Key: redb::Key + 'static;
    fn key(&self) -> <Self::Key as redb::Value>::SelfType<'_>;
    fn row(&self) -> &[u8];
}

/// A validated row, as the table keeps it.
struct TableEntry<'r>(&'r ItemRow);

impl Entry for TableEntry<'_> {
    type Key = (&'static [u8], &'static [u8]);
    fn key(&self) -> (&[u8], &[u8]) {
        table_key(&self.0.pk, &self.0.sk)
    }
    fn row(&self) -> &[u8] {
        &self.0.bytes
    }
}

/// A validated row's index entry, under its `GSI1SK`.
struct IndexEntry<'r>(&'r ItemRow, &'r str);

impl Entry for IndexEntry<'_> {
    type Key = (&'static [u8], &'static [u8], &'static [u8]);
    fn key(&self) -> (&[u8], &[u8], &[u8]) {
        index_key(&self.0.sk, self.1, &self.0.pk)
    }
    fn row(&self) -> &[u8] {
        self.0.index_bytes()
    }
}

/// Inserts `entries` (in key order, no key twice) through cursors, each taking a run of
/// entries that fall between the same two stored keys, and calls `replaced` with each entry
/// whose key was already stored and the row it replaced.
///
/// Why cursors: redb's `CursorMut` buffers a run of inserts and writes it as full leaves, in
/// one update of their parent, where `Table::insert` descends the tree for every key and
/// splits a full leaf in half. A bulk load into a new partition is one run, written once and
/// full (B-trees fed by `insert` were about 57 % full). A new entry among stored ones is a
/// run of one, which costs what an `insert` does; a replaced one costs a removal and a
/// placement more (redb applies a cursor's pending inserts before it removes), so a load that
/// replaces every key writes about as slowly as single writes.
pub(super) fn insert_in_order<E: Entry>(
    table: &mut redb::Table<'_, E::Key, &'static [u8]>,
    entries: impl Iterator<Item = Result<E, StoreError>>,
    mut replaced: impl FnMut(&E, &[u8]) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let mut entries = entries.peekable();
    while let Some(first) = entries.peek() {
        let first = match first {
            Ok(first) => first,
            Err(_) => return entries.next().map_or(Ok(()), |e| e.map(drop)),
        };
        let mut cursor = table
            .lower_bound_mut(Bound::Included(first.key()))
            .map_err(unavailable)?;
        // The stored key after the gap, which inserts before the gap leave in place: read once
        // per placement, and again after a key it held is replaced.
        let mut stored = next_key::<E::Key>(&mut cursor)?;
        while let Some(entry) = entries.peek() {
            let Ok(entry) = entry else { break };
            let next = stored.as_deref().map(|stored| {
                let key = entry.key();
                let wanted = <E::Key as redb::Value>::as_bytes(&key);
                <E::Key as redb::Key>::compare(stored, wanted.as_ref())
            });
            match next {
                // A stored key lies before this entry: the run ends, and a cursor is placed
                // again at the entry.
                Some(Ordering::Less) => break,
                Some(Ordering::Equal) => {
                    if let Some((_, old)) = cursor.remove_next().map_err(unavailable)? {
                        replaced(entry, old.value())?;
                    }
                    stored = next_key::<E::Key>(&mut cursor)?;
                }
                Some(Ordering::Greater) | None => {}
            }
            cursor
                .insert_before(entry.key(), entry.row())
                .map_err(unavailable)?;
            entries.next();
        }
        cursor.close().map_err(unavailable)?;
    }
    Ok(())
}

/// The encoded key of the entry after a cursor's gap, if any.
fn next_key<K: redb::Key + 'static>(
    cursor: &mut redb::CursorMut<'_, K, &'static [u8]>,
) -> Result<Option<Vec<u8>>, StoreError> {
    Ok(cursor
        .peek_next()
        .map_err(unavailable)?
        .map(|(key, _)| <K as redb::Value>::as_bytes(&key.value()).as_ref().to_vec()))
}

/// Deletes one item and its index entry; deleting a missing item is a no-op, as in DynamoDB.
fn delete_key(
    items: &mut ItemsTable<'_>,
    index: &mut IndexTable<'_>,
    key: &Key,
) -> Result<(), StoreError> {
    let old_gsi1sk = {
        let old = items
            .remove(table_key(&key.pk, &key.sk))
            .map_err(unavailable)?;
        match old {
            Some(guard) => stored_gsi1sk(guard.value())?,
            None => None,
        }
    };
    if let Some(g) = old_gsi1sk {
        index
            .remove(index_key(&key.sk, &g, &key.pk))
            .map_err(unavailable)?;
    }
    Ok(())
}

pub(super) fn write_puts(db: &Database, rows: &[ItemRow]) -> Result<(), StoreError> {
    let txn = db.begin_write().map_err(unavailable)?;
    {
        let mut items = txn.open_table(ITEMS).map_err(unavailable)?;
        let mut index = txn.open_table(GSI1_INDEX).map_err(unavailable)?;
        put_rows(&mut items, &mut index, rows.iter().collect())?;
    }
    // An early return above drops the transaction uncommitted, which aborts it.
    txn.commit().map_err(unavailable)
}

/// Applies update actions to an item (a new one holding just the key when it is missing).
fn apply_update(
    key: &Key,
    current: Option<Item>,
    actions: &[UpdateAction],
) -> Result<Item, StoreError> {
    let mut item = current.unwrap_or_else(|| {
        let mut item = Item::default();
        item.insert(PK.to_string(), AttributeValue::S(key.pk.clone()));
        item.insert(SK.to_string(), AttributeValue::S(key.sk.clone()));
        item
    });
    for action in actions {
        let added;
        let (path, value) = match action {
            UpdateAction::Set(path, value) => (path, Some(value)),
            UpdateAction::Remove(path) => (path, None),
            UpdateAction::Add(path, delta) => {
                // DynamoDB's ADD: a missing number starts at 0; any other type is refused.
                let name = path.0.first().map(String::as_str).unwrap_or_default();
                let current = match item.get(name) {
                    None => 0,
                    Some(AttributeValue::N(n)) => n.parse::<i64>().map_err(|_| {
                        StoreError::Invalid(format!(
                            "ADD to {name} on item {key}: {n} is not a whole number"
                        ))
                    })?,
                    Some(_) => {
                        return Err(StoreError::Invalid(format!(
                            "an operand in the update expression has an incorrect data type: ADD to {name} on item {key}"
                        )))
                    }
                };
                added = AttributeValue::N(current.saturating_add(*delta).to_string());
                (path, Some(&added))
            }
        };
        let invalid = || {
            StoreError::Invalid(format!(
                "the document path {} is invalid for update on item {key}",
                path.0.join(".")
            ))
        };
        let (last, parents) = path.0.split_last().ok_or_else(invalid)?;
        let mut map: &mut std::collections::HashMap<String, AttributeValue> = &mut item;
        for part in parents {
            match map.get_mut(part) {
                Some(AttributeValue::M(inner)) => map = inner,
                _ => return Err(invalid()),
            }
        }
        match value {
            Some(value) => {
                map.insert(last.clone(), value.clone());
            }
            None => {
                map.remove(last);
            }
        }
    }
    Ok(item)
}

fn read_item(items: &ItemsTable<'_>, key: &Key) -> Result<Option<Item>, StoreError> {
    items
        .get(table_key(&key.pk, &key.sk))
        .map_err(unavailable)?
        .map(|guard| decode_table_row(&key.pk, &key.sk, guard.value()))
        .transpose()
}

pub(super) fn transact_sync(db: &Database, ops: &[TxOp]) -> Result<WriteOutput, StoreError> {
    let txn = db.begin_write().map_err(unavailable)?;
    let mut consumed = Capacity::ZERO;
    {
        let mut items = txn.open_table(ITEMS).map_err(unavailable)?;
        let mut index = txn.open_table(GSI1_INDEX).map_err(unavailable)?;
        // Every condition is checked against the state before any operation applies, as
        // DynamoDB does; there are no two operations on one item, so the order of application
        // cannot matter either.
        let mut before = Vec::with_capacity(ops.len());
        for (i, op) in ops.iter().enumerate() {
            let current = read_item(&items, &op.key())?;
            if let Some(condition) = op.condition() {
                if !condition_holds(condition, current.as_ref()) {
                    // Dropping the uncommitted transaction aborts it: nothing is written.
                    return Err(StoreError::ConditionFailed { index: i });
                }
            }
            before.push(current);
        }
        for (op, current) in ops.iter().zip(before) {
            let old_size = current.as_ref().map_or(0, item_size);
            let new_size = match op {
                TxOp::Put(row, _) => {
                    put_row(&mut items, &mut index, row)?;
                    row.size
                }
                TxOp::Delete(key, _) => {
                    delete_key(&mut items, &mut index, key)?;
                    0
                }
                TxOp::Check(..) => 0,
                TxOp::Update(key, actions, _) => {
                    let row = ItemRow::validate(&apply_update(key, current, actions)?)?;
                    put_row(&mut items, &mut index, &row)?;
                    row.size
                }
            };
            consumed += Capacity::for_write(old_size, new_size, true);
        }
    }
    txn.commit().map_err(unavailable)?;
    Ok(WriteOutput { consumed })
}

fn condition_holds(condition: &Condition, current: Option<&Item>) -> bool {
    match (condition, current) {
        (Condition::NotExists, current) => current.is_none(),
        (Condition::Exists, current) => current.is_some(),
        (Condition::AttributeEquals { name, value }, Some(item)) => item
            .get(name.as_str())
            .is_some_and(|actual| values_equal(actual, value)),
        (Condition::AttributeEquals { .. }, None) => false,
        (Condition::AttributeMissing(name), Some(item)) => !item.contains_key(name.as_str()),
        (Condition::AttributeMissing(_), None) => false,
        (Condition::All(all), current) => all.iter().all(|c| condition_holds(c, current)),
        (Condition::Any(any), current) => any.iter().any(|c| condition_holds(c, current)),
    }
}
