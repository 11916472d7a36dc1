//! Writes for the embedded store: puts, deletes, updates and transactions inside one redb write
//! transaction each, with `GSI1` kept in step and conditions checked before anything applies.

use redb::{Database, ReadableTable};

use super::equality::values_equal;
use super::table::{
    decode, index_key, string_attr, table_key, unavailable, IndexTable, ItemsTable, GSI1_INDEX,
    ITEMS,
};
use super::validate::{ItemRow, TxOp};
use crate::store::capacity::item_size;
use crate::store::table::{GSI1SK, PK, SK};
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
/// replaced item's index entry (if any) is removed, then each new one (if any, holding a copy
/// of the row) is added. The rows go in key order, the last of each key winning as it would
/// written in order (the sort is stable, over the rows reversed): a B-tree written in key
/// order reaches each page once, however scattered the keys arrive, and a bulk load's index
/// rows are, since their keys start with the field and the value.
fn put_rows(
    items: &mut ItemsTable<'_>,
    index: &mut IndexTable<'_>,
    mut order: Vec<&ItemRow>,
) -> Result<(), StoreError> {
    order.reverse();
    order.sort_by(|a, b| table_key(&a.pk, &a.sk).cmp(&table_key(&b.pk, &b.sk)));
    order.dedup_by(|a, b| (&a.pk, &a.sk) == (&b.pk, &b.sk));
    let mut stale = Vec::new();
    for row in &order {
        let old = items
            .insert(table_key(&row.pk, &row.sk), row.bytes.as_slice())
            .map_err(unavailable)?;
        if let Some(guard) = old {
            if let Some(g) = string_attr(&decode(guard.value())?, GSI1SK) {
                stale.push((*row, g.to_owned()));
            }
        }
    }
    // Index keys hold the item's key, so the entries removed and added never collide: every
    // removal first, then every addition, each in key order.
    stale.sort_by(|(a, g), (b, h)| index_key(&a.sk, g, &a.pk).cmp(&index_key(&b.sk, h, &b.pk)));
    for (row, g) in &stale {
        index
            .remove(index_key(&row.sk, g, &row.pk))
            .map_err(unavailable)?;
    }
    let mut fresh: Vec<(&ItemRow, &str)> = order
        .iter()
        .filter_map(|row| row.gsi1sk.as_deref().map(|g| (*row, g)))
        .collect();
    fresh.sort_by(|(a, g), (b, h)| index_key(&a.sk, g, &a.pk).cmp(&index_key(&b.sk, h, &b.pk)));
    for (row, g) in fresh {
        index
            .insert(index_key(&row.sk, g, &row.pk), row.bytes.as_slice())
            .map_err(unavailable)?;
    }
    Ok(())
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
            Some(guard) => string_attr(&decode(guard.value())?, GSI1SK).map(str::to_owned),
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
        .map(|guard| decode(guard.value()))
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
