//! The embedded store: [`Store`] over one local redb file, with DynamoDB's semantics.
//!
//! The file `<dir>/<table>.redb` holds two redb tables. `items` maps the table key
//! `(PK, SK)` to the item serialized as DynamoDB JSON (`serde_json` of [`Item`]). `GSI1` is the
//! inverted index: it maps `(SK, GSI1SK, PK)` to `()`, and every write updates it in the same
//! redb write transaction as the item itself, so the index can never be observed out of step
//! with the table (DynamoDB's GSIs are only eventually consistent; being stricter here is safe
//! because no caller may rely on index lag).
//!
//! redb orders tuple keys element by element and `&str` elements by their bytes, which is
//! exactly DynamoDB's UTF-8 byte order for string keys, so a Query is one redb range scan with
//! tight bounds: it costs the page it reads, not the partition it reads from.
//!
//! Everything a conformance suite can observe is meant to match DynamoDB: `Limit` counts items
//! read before the filter, a page also ends once 1 MB has been read, `LastEvaluatedKey` is
//! returned whenever the page ended by `Limit` or size (even if nothing follows), and requests
//! DynamoDB rejects (duplicate keys, oversized items, empty key values, ...) are rejected with
//! [`StoreError::Invalid`]. Where DynamoDB leaves an order unspecified (index items with equal
//! `GSI1SK`), this store orders by `PK`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition, TableError};

use super::capacity::item_size;
use super::table::{GSI1, GSI1SK, PK, SK};
use super::{
    AttributeValue, BatchGetOutput, Capacity, Condition, Filter, GetOutput, Index, Item, Key,
    Query, QueryOutput, ScanOutput, SortCondition, StartKey, Store, StoreError, UpdateAction,
    WriteOp, WriteOutput, MAX_BATCH_GET, MAX_BATCH_WRITE, MAX_TRANSACT_WRITE,
};

/// The table: `(PK, SK)` to the item as DynamoDB JSON.
const ITEMS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("items");
/// The inverted index: `(SK, GSI1SK, PK)`. Items without `GSI1SK` have no entry.
const GSI1_INDEX: TableDefinition<(&str, &str, &str), ()> = TableDefinition::new(GSI1);

use super::limits::{
    MAX_ITEM_BYTES, MAX_PARTITION_KEY_BYTES, MAX_SORT_KEY_BYTES, MAX_TRANSACT_BYTES, PAGE_BYTES,
};

/// A [`Store`] backed by a local redb database file.
///
/// Cloning is cheap and shares the open database. redb locks its file, so open each file once
/// per process and clone the handle rather than calling [`EmbeddedStore::open`] again.
#[derive(Clone)]
pub struct EmbeddedStore {
    db: Arc<Database>,
    path: PathBuf,
    /// Whether the redb tables exist. DynamoDB answers calls on a missing table with
    /// `ResourceNotFoundException`; this flag lets every call fail the same way until
    /// [`Store::ensure_table`] has run, instead of redb silently creating tables on first write.
    ready: Arc<AtomicBool>,
}

impl std::fmt::Debug for EmbeddedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedStore")
            .field("path", &self.path)
            .field("ready", &self.ready.load(Ordering::Relaxed))
            .finish()
    }
}

impl EmbeddedStore {
    /// Opens (creating if needed) `<dir>/<table>.redb`, creating `dir` if missing.
    ///
    /// This blocks on file I/O; call it at startup, not on a request path. The tables inside
    /// are created by [`Store::ensure_table`], as with DynamoDB; a file written by an earlier
    /// run is usable at once.
    pub fn open(dir: &Path, table: &str) -> Result<Self, StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| {
            StoreError::Unavailable(format!("cannot create {}: {e}", dir.display()))
        })?;
        let path = dir.join(format!("{table}.redb"));
        let db = Database::create(&path)
            .map_err(|e| StoreError::Unavailable(format!("cannot open {}: {e}", path.display())))?;
        let ready = tables_exist(&db)?;
        Ok(EmbeddedStore {
            db: Arc::new(db),
            path,
            ready: Arc::new(AtomicBool::new(ready)),
        })
    }

    /// The database file this store reads and writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes any number of items in one write transaction, maintaining `GSI1` exactly as
    /// [`Store::batch_put`] does. This is the bulk loader's fast path: DynamoDB has no such
    /// call, so nothing but seeding should use it. Every item is validated as a put would be;
    /// if several items share a key, the last one wins.
    pub async fn put_many(&self, items: Vec<Item>) -> Result<(), StoreError> {
        self.check_ready()?;
        let rows = items
            .iter()
            .map(ItemRow::validate)
            .collect::<Result<Vec<_>, _>>()?;
        if rows.is_empty() {
            return Ok(());
        }
        self.blocking(move |db| write_puts(db, &rows)).await
    }

    /// Runs a synchronous redb operation on the blocking pool, because redb does file I/O and
    /// must not stall the async runtime's worker threads.
    async fn blocking<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Database) -> Result<T, StoreError> + Send + 'static,
    {
        let db = Arc::clone(&self.db);
        tokio::task::spawn_blocking(move || f(&db))
            .await
            .map_err(|e| StoreError::Unavailable(format!("embedded store task failed: {e}")))?
    }

    fn check_ready(&self) -> Result<(), StoreError> {
        if self.ready.load(Ordering::Acquire) {
            Ok(())
        } else {
            Err(StoreError::Unavailable(format!(
                "table in {} does not exist: call ensure_table first",
                self.path.display()
            )))
        }
    }
}

#[async_trait]
impl Store for EmbeddedStore {
    fn name(&self) -> &'static str {
        "embedded"
    }

    async fn get(&self, key: &Key) -> Result<GetOutput, StoreError> {
        self.check_ready()?;
        validate_key(key)?;
        let key = key.clone();
        let out = self
            .blocking(move |db| batch_get_sync(db, std::slice::from_ref(&key)))
            .await?;
        Ok(GetOutput {
            item: out.items.into_iter().next(),
            consumed: out.consumed,
        })
    }

    async fn get_consistent(&self, key: &Key) -> Result<GetOutput, StoreError> {
        // Every read of this store sees the latest commit; only the price differs.
        let out = self.get(key).await?;
        let size = out.item.as_ref().map_or(0, item_size);
        Ok(GetOutput {
            consumed: Capacity::for_consistent_bytes(size),
            ..out
        })
    }

    async fn batch_get(&self, keys: &[Key]) -> Result<BatchGetOutput, StoreError> {
        self.check_ready()?;
        // Nothing to read: a no-op, as the DynamoDB store treats it (DynamoDB itself would
        // reject the empty request, so that store never sends it).
        if keys.is_empty() {
            return Ok(BatchGetOutput::default());
        }
        if keys.len() > MAX_BATCH_GET {
            return Err(StoreError::Invalid(format!(
                "BatchGetItem takes 1 to {MAX_BATCH_GET} keys, got {}",
                keys.len()
            )));
        }
        for key in keys {
            validate_key(key)?;
        }
        reject_duplicates(keys.iter().cloned(), "BatchGetItem")?;
        let keys = keys.to_vec();
        self.blocking(move |db| batch_get_sync(db, &keys)).await
    }

    async fn query(&self, query: &Query) -> Result<QueryOutput, StoreError> {
        self.check_ready()?;
        if query.consistent && query.index == Index::Gsi1 {
            return Err(StoreError::Invalid(
                "consistent reads are not supported on global secondary indexes".into(),
            ));
        }
        let plan = QueryPlan::new(query)?;
        let filter = query.filter.clone();
        let mut out = self
            .blocking(move |db| query_sync(db, &plan, filter.as_ref()))
            .await?;
        if query.consistent {
            // Strongly consistent reads cost twice the eventually consistent price.
            out.consumed.read_units *= 2.0;
        }
        Ok(out)
    }

    async fn scan(
        &self,
        start: Option<&Key>,
        limit: Option<u32>,
    ) -> Result<ScanOutput, StoreError> {
        self.check_ready()?;
        let start = start.cloned();
        self.blocking(move |db| scan_sync(db, start.as_ref(), limit))
            .await
    }

    async fn transact_write(&self, ops: Vec<WriteOp>) -> Result<WriteOutput, StoreError> {
        self.check_ready()?;
        if ops.is_empty() {
            return Ok(WriteOutput::default());
        }
        let ops = validate_transaction(ops)?;
        self.blocking(move |db| transact_sync(db, &ops)).await
    }

    async fn batch_put(&self, items: Vec<Item>) -> Result<Vec<Item>, StoreError> {
        self.check_ready()?;
        if items.is_empty() {
            return Ok(Vec::new());
        }
        if items.len() > MAX_BATCH_WRITE {
            return Err(StoreError::Invalid(format!(
                "BatchWriteItem takes 1 to {MAX_BATCH_WRITE} items, got {}",
                items.len()
            )));
        }
        let rows = items
            .iter()
            .map(ItemRow::validate)
            .collect::<Result<Vec<_>, _>>()?;
        reject_duplicates(rows.iter().map(ItemRow::key), "BatchWriteItem")?;
        self.blocking(move |db| write_puts(db, &rows)).await?;
        // Unlike DynamoDB, one local transaction never leaves items unprocessed.
        Ok(Vec::new())
    }

    /// One write transaction for the whole load (see [`EmbeddedStore::put_many`]), instead of
    /// the default's many BatchWriteItem-sized calls, each of which would be its own commit.
    async fn bulk_put(&self, items: Vec<Item>) -> Result<(), StoreError> {
        self.put_many(items).await
    }

    async fn ensure_table(&self) -> Result<(), StoreError> {
        self.blocking(|db| {
            let txn = db.begin_write().map_err(unavailable)?;
            {
                // Opening a table in a write transaction creates it if it is missing.
                txn.open_table(ITEMS).map_err(unavailable)?;
                txn.open_table(GSI1_INDEX).map_err(unavailable)?;
            }
            txn.commit().map_err(unavailable)
        })
        .await?;
        self.ready.store(true, Ordering::Release);
        Ok(())
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.blocking(|db| db.begin_read().map(drop).map_err(unavailable))
            .await
    }
}

/// Maps any redb failure to `Unavailable`: from the caller's point of view the store failed to
/// answer, just as a DynamoDB network or service error would.
fn unavailable(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(format!("redb: {e}"))
}

fn tables_exist(db: &Database) -> Result<bool, StoreError> {
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

fn decode(bytes: &[u8]) -> Result<Item, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt(format!("stored item: {e}")))
}

/// The string value of attribute `name`, if the item has one of type `S`.
fn string_attr<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    match item.get(name) {
        Some(AttributeValue::S(s)) => Some(s.as_str()),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Validation: everything DynamoDB rejects with a ValidationException is rejected here before
// any transaction starts, so an invalid request never half-applies.

/// An item validated for writing, with its keys extracted and its bytes encoded.
struct ItemRow {
    pk: String,
    sk: String,
    gsi1sk: Option<String>,
    bytes: Vec<u8>,
    size: usize,
}

impl ItemRow {
    fn validate(item: &Item) -> Result<ItemRow, StoreError> {
        let pk = key_attr(item, PK, MAX_PARTITION_KEY_BYTES)?;
        let sk = key_attr(item, SK, MAX_SORT_KEY_BYTES)?;
        // GSI1SK is optional, but when present it is an index key attribute, so DynamoDB holds
        // it to the key rules: type S, not empty, at most 1024 bytes.
        let gsi1sk = match item.get(GSI1SK) {
            None => None,
            Some(_) => Some(key_attr(item, GSI1SK, MAX_SORT_KEY_BYTES)?),
        };
        let size = item_size(item);
        if size > MAX_ITEM_BYTES {
            return Err(StoreError::Invalid(format!(
                "item ({pk}, {sk}) is {size} bytes, over the {MAX_ITEM_BYTES}-byte limit"
            )));
        }
        let bytes = serde_json::to_vec(item)
            .map_err(|e| StoreError::Invalid(format!("item ({pk}, {sk}): {e}")))?;
        Ok(ItemRow {
            pk,
            sk,
            gsi1sk,
            bytes,
            size,
        })
    }

    fn key(&self) -> Key {
        Key::new(self.pk.clone(), self.sk.clone())
    }
}

fn key_attr(item: &Item, name: &str, max: usize) -> Result<String, StoreError> {
    match item.get(name) {
        Some(AttributeValue::S(s)) => {
            check_key_value(name, s, max)?;
            Ok(s.clone())
        }
        Some(_) => Err(StoreError::Invalid(format!(
            "key attribute {name} must be of type S"
        ))),
        None => Err(StoreError::Invalid(format!(
            "item is missing key attribute {name}"
        ))),
    }
}

fn check_key_value(name: &str, value: &str, max: usize) -> Result<(), StoreError> {
    if value.is_empty() {
        return Err(StoreError::Invalid(format!(
            "key attribute {name} cannot be an empty string"
        )));
    }
    if value.len() > max {
        return Err(StoreError::Invalid(format!(
            "key attribute {name} is {} bytes, over the {max}-byte limit",
            value.len()
        )));
    }
    Ok(())
}

fn validate_key(key: &Key) -> Result<(), StoreError> {
    check_key_value(PK, &key.pk, MAX_PARTITION_KEY_BYTES)?;
    check_key_value(SK, &key.sk, MAX_SORT_KEY_BYTES)
}

fn reject_duplicates(keys: impl Iterator<Item = Key>, call: &str) -> Result<(), StoreError> {
    let mut seen = HashSet::new();
    for key in keys {
        if !seen.insert(key.clone()) {
            return Err(StoreError::Invalid(format!(
                "{call} names item {key} more than once"
            )));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Writes.

/// Puts one validated row and keeps `GSI1` in step: the replaced item's index entry (if any)
/// is removed before the new one (if any) is added, inside the caller's transaction.
fn put_row(
    items: &mut redb::Table<(&str, &str), &[u8]>,
    index: &mut redb::Table<(&str, &str, &str), ()>,
    row: &ItemRow,
) -> Result<(), StoreError> {
    let old_gsi1sk = {
        let old = items
            .insert((row.pk.as_str(), row.sk.as_str()), row.bytes.as_slice())
            .map_err(unavailable)?;
        match old {
            Some(guard) => string_attr(&decode(guard.value())?, GSI1SK).map(str::to_owned),
            None => None,
        }
    };
    if let Some(g) = old_gsi1sk {
        index
            .remove((row.sk.as_str(), g.as_str(), row.pk.as_str()))
            .map_err(unavailable)?;
    }
    if let Some(g) = &row.gsi1sk {
        index
            .insert((row.sk.as_str(), g.as_str(), row.pk.as_str()), ())
            .map_err(unavailable)?;
    }
    Ok(())
}

/// Deletes one item and its index entry; deleting a missing item is a no-op, as in DynamoDB.
fn delete_key(
    items: &mut redb::Table<(&str, &str), &[u8]>,
    index: &mut redb::Table<(&str, &str, &str), ()>,
    key: &Key,
) -> Result<(), StoreError> {
    let old_gsi1sk = {
        let old = items
            .remove((key.pk.as_str(), key.sk.as_str()))
            .map_err(unavailable)?;
        match old {
            Some(guard) => string_attr(&decode(guard.value())?, GSI1SK).map(str::to_owned),
            None => None,
        }
    };
    if let Some(g) = old_gsi1sk {
        index
            .remove((key.sk.as_str(), g.as_str(), key.pk.as_str()))
            .map_err(unavailable)?;
    }
    Ok(())
}

fn write_puts(db: &Database, rows: &[ItemRow]) -> Result<(), StoreError> {
    let txn = db.begin_write().map_err(unavailable)?;
    {
        let mut items = txn.open_table(ITEMS).map_err(unavailable)?;
        let mut index = txn.open_table(GSI1_INDEX).map_err(unavailable)?;
        for row in rows {
            put_row(&mut items, &mut index, row)?;
        }
    }
    // An early return above drops the transaction uncommitted, which aborts it.
    txn.commit().map_err(unavailable)
}

/// A transaction operation after validation.
enum TxOp {
    Put(ItemRow, Option<Condition>),
    Delete(Key, Option<Condition>),
    Check(Key, Condition),
    Update(Key, Vec<UpdateAction>, Option<Condition>),
}

impl TxOp {
    fn key(&self) -> Key {
        match self {
            TxOp::Put(row, _) => row.key(),
            TxOp::Delete(key, _) | TxOp::Check(key, _) | TxOp::Update(key, _, _) => key.clone(),
        }
    }

    fn condition(&self) -> Option<&Condition> {
        match self {
            TxOp::Put(_, c) | TxOp::Delete(_, c) | TxOp::Update(_, _, c) => c.as_ref(),
            TxOp::Check(_, c) => Some(c),
        }
    }
}

fn validate_transaction(ops: Vec<WriteOp>) -> Result<Vec<TxOp>, StoreError> {
    if ops.is_empty() || ops.len() > MAX_TRANSACT_WRITE {
        return Err(StoreError::Invalid(format!(
            "TransactWriteItems takes 1 to {MAX_TRANSACT_WRITE} operations, got {}",
            ops.len()
        )));
    }
    let ops = ops
        .into_iter()
        .map(|op| match op {
            WriteOp::Put { item, condition } => Ok(TxOp::Put(ItemRow::validate(&item)?, condition)),
            WriteOp::Delete { key, condition } => {
                validate_key(&key)?;
                Ok(TxOp::Delete(key, condition))
            }
            WriteOp::ConditionCheck { key, condition } => {
                validate_key(&key)?;
                Ok(TxOp::Check(key, condition))
            }
            WriteOp::Update {
                key,
                actions,
                condition,
            } => {
                validate_key(&key)?;
                validate_actions(&actions)?;
                Ok(TxOp::Update(key, actions, condition))
            }
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    reject_duplicates(ops.iter().map(TxOp::key), "TransactWriteItems")?;
    let total: usize = ops
        .iter()
        .map(|op| match op {
            TxOp::Put(row, _) => row.size,
            _ => 0,
        })
        .sum();
    if total > MAX_TRANSACT_BYTES {
        return Err(StoreError::Invalid(format!(
            "TransactWriteItems items total {total} bytes, over the {MAX_TRANSACT_BYTES}-byte limit"
        )));
    }
    Ok(ops)
}

/// An update may not be empty, touch a key attribute or name an empty path, as in DynamoDB.
fn validate_actions(actions: &[UpdateAction]) -> Result<(), StoreError> {
    if actions.is_empty() {
        return Err(StoreError::Invalid(
            "an update needs at least one action".into(),
        ));
    }
    for action in actions {
        let path = match action {
            UpdateAction::Set(path, _) | UpdateAction::Remove(path) => path,
        };
        match path.0.first().map(String::as_str) {
            None => {
                return Err(StoreError::Invalid(
                    "update of an empty attribute path".into(),
                ))
            }
            Some(PK | SK) => {
                return Err(StoreError::Invalid(
                    "an update cannot change a key attribute".into(),
                ))
            }
            Some(_) => {}
        }
    }
    Ok(())
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
        let (path, value) = match action {
            UpdateAction::Set(path, value) => (path, Some(value)),
            UpdateAction::Remove(path) => (path, None),
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

fn read_item(
    items: &redb::Table<(&str, &str), &[u8]>,
    key: &Key,
) -> Result<Option<Item>, StoreError> {
    items
        .get((key.pk.as_str(), key.sk.as_str()))
        .map_err(unavailable)?
        .map(|guard| decode(guard.value()))
        .transpose()
}

fn transact_sync(db: &Database, ops: &[TxOp]) -> Result<WriteOutput, StoreError> {
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
    }
}

/// Equality as DynamoDB's `=` and set comparison see it: numbers compare by numeric value
/// (`"1.50"` equals `"1.5"` and `"15e-1"`), sets compare as sets (element order is not
/// significant), maps and lists compare element by element. A number that does not parse
/// falls back to string equality, which DynamoDB would never have stored in the first place.
fn values_equal(a: &AttributeValue, b: &AttributeValue) -> bool {
    use AttributeValue as V;
    match (a, b) {
        (V::N(x), V::N(y)) => numbers_equal(x, y),
        (V::Ss(x), V::Ss(y)) => as_set(x.iter()) == as_set(y.iter()),
        (V::Bs(x), V::Bs(y)) => as_set(x.iter()) == as_set(y.iter()),
        (V::Ns(x), V::Ns(y)) => {
            as_set(
                x.iter()
                    .map(|n| canonical_number(n).ok_or_else(|| n.clone())),
            ) == as_set(
                y.iter()
                    .map(|n| canonical_number(n).ok_or_else(|| n.clone())),
            )
        }
        (V::M(x), V::M(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| values_equal(v, w)))
        }
        (V::L(x), V::L(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| values_equal(v, w))
        }
        _ => a == b,
    }
}

fn as_set<T: Eq + std::hash::Hash>(values: impl Iterator<Item = T>) -> HashSet<T> {
    values.collect()
}

fn numbers_equal(x: &str, y: &str) -> bool {
    match (canonical_number(x), canonical_number(y)) {
        (Some(a), Some(b)) => a == b,
        _ => x == y,
    }
}

/// A decimal number as (negative, significant digits, power of ten), with leading and trailing
/// zeros removed, so two spellings of one value give equal triples. Zero is `(false, "", 0)`.
fn canonical_number(n: &str) -> Option<(bool, String, i64)> {
    let n = n.trim();
    let (negative, unsigned) = match n.as_bytes().first() {
        Some(b'-') => (true, &n[1..]),
        Some(b'+') => (false, &n[1..]),
        _ => (false, n),
    };
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i64>().ok()?),
        None => (unsigned, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits = format!("{int}{frac}");
    let mut power = exponent.checked_sub(i64::try_from(frac.len()).ok()?)?;
    let trimmed = digits.trim_start_matches('0');
    let significant = trimmed.trim_end_matches('0');
    if significant.is_empty() {
        return Some((false, String::new(), 0));
    }
    power = power.checked_add(i64::try_from(trimmed.len() - significant.len()).ok()?)?;
    Some((negative, significant.to_owned(), power))
}

// ---------------------------------------------------------------------------------------------
// Reads.

/// What a BatchGetItem costs. Each key is read as its own GetItem: found items are rounded up
/// to 4 KB each, and a key that names no item still costs the minimum read, as AWS documents
/// (DynamoDB Local reports 0 for it; see ARCHITECTURE.md, "Cost accounting").
fn batch_get_capacity(found_sizes: &[usize], missing: usize) -> Capacity {
    Capacity::for_batch_get_sizes(
        found_sizes
            .iter()
            .copied()
            .chain(std::iter::repeat_n(0, missing)),
    )
}

fn batch_get_sync(db: &Database, keys: &[Key]) -> Result<BatchGetOutput, StoreError> {
    let txn = db.begin_read().map_err(unavailable)?;
    let table = txn.open_table(ITEMS).map_err(unavailable)?;
    let mut items = Vec::new();
    let mut sizes = Vec::new();
    for key in keys {
        if let Some(guard) = table
            .get((key.pk.as_str(), key.sk.as_str()))
            .map_err(unavailable)?
        {
            let item = decode(guard.value())?;
            sizes.push(item_size(&item));
            items.push(item);
        }
    }
    Ok(BatchGetOutput {
        items,
        unprocessed: Vec::new(),
        consumed: batch_get_capacity(&sizes, keys.len() - sizes.len()),
    })
}

/// A validated Query turned into a half-open range `[lo, hi)` of redb keys. Table keys are
/// `[partition, SK]`; index keys are `[partition, GSI1SK, PK]`. Comparing these vectors
/// lexicographically is the order redb uses for the tuple keys, because every element compares
/// by bytes.
struct QueryPlan {
    index: Index,
    forward: bool,
    limit: Option<usize>,
    lo: Vec<String>,
    hi: Vec<String>,
}

impl QueryPlan {
    fn new(query: &Query) -> Result<QueryPlan, StoreError> {
        let (partition_name, partition_max) = match query.index {
            Index::Table => (PK, MAX_PARTITION_KEY_BYTES),
            Index::Gsi1 => (SK, MAX_SORT_KEY_BYTES),
        };
        check_key_value(partition_name, &query.partition, partition_max)?;
        let limit = match query.limit {
            Some(0) => {
                return Err(StoreError::Invalid("Query Limit must be at least 1".into()));
            }
            Some(n) => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            None => None,
        };
        let (sort_lo, sort_hi) = sort_bounds(&query.sort)?;
        let partition = query.partition.clone();
        // Index keys carry PK as a third element; "" sorts before every real PK (key values are
        // never empty), so it stands for "the first entry with this GSI1SK".
        let pad = |mut key: Vec<String>| {
            if query.index == Index::Gsi1 {
                key.push(String::new());
            }
            key
        };
        let mut lo = pad(vec![partition.clone(), sort_lo]);
        let mut hi = match sort_hi {
            Some(h) => pad(vec![partition.clone(), h]),
            // The end of the partition: `partition + "\0"` is the next string after
            // `partition`, so no key of this partition reaches it.
            None => pad(vec![successor(&partition), String::new()]),
        };
        if let Some(start) = &query.start {
            let position = start_position(query, start)?;
            if query.forward {
                // Exclusive start going up: begin at the position's successor.
                let mut after = position;
                if let Some(last) = after.last_mut() {
                    last.push('\0');
                }
                lo = lo.max(after);
            } else {
                hi = hi.min(position);
            }
        }
        Ok(QueryPlan {
            index: query.index,
            forward: query.forward,
            limit,
            lo,
            hi,
        })
    }
}

/// The smallest string greater than `s` in byte order.
fn successor(s: &str) -> String {
    format!("{s}\0")
}

/// The sort-key condition as a half-open range `[lo, hi)` of sort-key values; `hi == None`
/// means "to the end of the partition". The bounds are exact, so the scan reads no item the
/// condition would reject.
fn sort_bounds(sort: &SortCondition) -> Result<(String, Option<String>), StoreError> {
    let operand = |v: &String| check_key_value("sort key condition", v, MAX_SORT_KEY_BYTES);
    Ok(match sort {
        SortCondition::Any => (String::new(), None),
        SortCondition::Eq(v) => {
            operand(v)?;
            (v.clone(), Some(successor(v)))
        }
        SortCondition::BeginsWith(p) => {
            operand(p)?;
            (p.clone(), prefix_end(p))
        }
        SortCondition::Between(a, b) => {
            operand(a)?;
            operand(b)?;
            if a > b {
                return Err(StoreError::Invalid(
                    "BETWEEN requires the lower bound to be at most the upper bound".into(),
                ));
            }
            (a.clone(), Some(successor(b)))
        }
        SortCondition::Lt(v) => {
            operand(v)?;
            (String::new(), Some(v.clone()))
        }
        SortCondition::Le(v) => {
            operand(v)?;
            (String::new(), Some(successor(v)))
        }
        SortCondition::Gt(v) => {
            operand(v)?;
            (successor(v), None)
        }
        SortCondition::Ge(v) => {
            operand(v)?;
            (v.clone(), None)
        }
    })
}

/// The smallest string greater than every string starting with `prefix`, or `None` if there is
/// none. UTF-8 byte order is code point order, so incrementing the last code point that can be
/// incremented (dropping any `char::MAX` after it) gives that bound.
fn prefix_end(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(c) = chars.pop() {
        let next = match c {
            '\u{D7FF}' => Some('\u{E000}'),
            _ => char::from_u32(u32::from(c) + 1),
        };
        if let Some(next) = next {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// Checks an exclusive start key the way DynamoDB does and returns its position in the scan.
///
/// DynamoDB rejects a start key of another partition ("outside query boundaries") and one whose
/// sort key does not satisfy the key condition ("does not match the range key predicate"); the
/// key must also have exactly the attributes of the key schema being read.
fn start_position(query: &Query, start: &StartKey) -> Result<Vec<String>, StoreError> {
    validate_key(&start.key)?;
    let invalid = |why: &str| {
        Err(StoreError::Invalid(format!(
            "start key {}: {why}",
            start.key
        )))
    };
    match (query.index, &start.gsi1sk) {
        (Index::Table, None) => {
            if start.key.pk != query.partition {
                return invalid("outside the queried partition");
            }
            if !query.sort.matches(&start.key.sk) {
                return invalid("does not match the sort key condition");
            }
            Ok(vec![start.key.pk.clone(), start.key.sk.clone()])
        }
        (Index::Gsi1, Some(g)) => {
            check_key_value(GSI1SK, g, MAX_SORT_KEY_BYTES)?;
            if start.key.sk != query.partition {
                return invalid("outside the queried partition");
            }
            if !query.sort.matches(g) {
                return invalid("does not match the sort key condition");
            }
            Ok(vec![start.key.sk.clone(), g.clone(), start.key.pk.clone()])
        }
        (Index::Table, Some(_)) => invalid("a table query's start key has no GSI1SK"),
        (Index::Gsi1, None) => invalid("a GSI1 query's start key needs GSI1SK"),
    }
}

/// Collects one Query page: counts what was read, applies the filter, and decides when the
/// page is over.
struct Page<'a> {
    limit: Option<usize>,
    filter: Option<&'a Filter>,
    items: Vec<Item>,
    scanned: usize,
    bytes: usize,
    last_evaluated: Option<StartKey>,
}

impl<'a> Page<'a> {
    fn new(limit: Option<usize>, filter: Option<&'a Filter>) -> Self {
        Page {
            limit,
            filter,
            items: Vec::new(),
            scanned: 0,
            bytes: 0,
            last_evaluated: None,
        }
    }

    /// Takes one item read at `position`; returns `true` when the page is full. DynamoDB ends a
    /// page when `Limit` items have been read or when 1 MB has been read, and in both cases
    /// returns the last item read as `LastEvaluatedKey` without looking further, even if no
    /// item follows.
    fn read(&mut self, item: Item, position: impl FnOnce() -> StartKey) -> bool {
        self.scanned += 1;
        self.bytes += item_size(&item);
        if self.filter.is_none_or(|f| f.matches(&item)) {
            self.items.push(item);
        }
        let full = self.limit.is_some_and(|l| self.scanned >= l) || self.bytes >= PAGE_BYTES;
        if full {
            self.last_evaluated = Some(position());
        }
        full
    }

    fn finish(self) -> QueryOutput {
        QueryOutput {
            items: self.items,
            last_evaluated: self.last_evaluated,
            scanned: self.scanned,
            consumed: Capacity::for_query_bytes(self.bytes),
        }
    }
}

/// A page of the table in key order after `start`, stopping at `limit` items or after 1 MB
/// read, priced like a Query (one rounding for the page).
fn scan_sync(
    db: &Database,
    start: Option<&Key>,
    limit: Option<u32>,
) -> Result<ScanOutput, StoreError> {
    let txn = db.begin_read().map_err(unavailable)?;
    let table = txn.open_table(ITEMS).map_err(unavailable)?;
    let range = match start {
        Some(key) => table.range((key.pk.as_str(), key.sk.as_str())..),
        None => table.range::<(&str, &str)>(..),
    }
    .map_err(unavailable)?;
    let limit = limit.map_or(usize::MAX, |l| l as usize);
    let mut out = ScanOutput::default();
    let mut bytes = 0;
    let mut last = None;
    for entry in range {
        let (key, value) = entry.map_err(unavailable)?;
        let (pk, sk) = key.value();
        if start.is_some_and(|s| s.pk == pk && s.sk == sk) {
            continue;
        }
        if out.items.len() >= limit || bytes >= PAGE_BYTES {
            out.last_evaluated = last;
            break;
        }
        let item = decode(value.value())?;
        bytes += item_size(&item);
        last = Some(Key::new(pk, sk));
        out.items.push(item);
    }
    out.consumed = Capacity::for_query_bytes(bytes);
    Ok(out)
}

fn query_sync(
    db: &Database,
    plan: &QueryPlan,
    filter: Option<&Filter>,
) -> Result<QueryOutput, StoreError> {
    let mut page = Page::new(plan.limit, filter);
    // A start key at or past the end of the condition's range leaves nothing to read; redb's
    // range needs lo <= hi, so this is checked rather than handed down.
    if plan.lo >= plan.hi {
        return Ok(page.finish());
    }
    let txn = db.begin_read().map_err(unavailable)?;
    let items = txn.open_table(ITEMS).map_err(unavailable)?;
    match plan.index {
        Index::Table => {
            let (lo, hi) = (&plan.lo, &plan.hi);
            let range = items
                .range((lo[0].as_str(), lo[1].as_str())..(hi[0].as_str(), hi[1].as_str()))
                .map_err(unavailable)?;
            let entries: Box<dyn Iterator<Item = _>> = if plan.forward {
                Box::new(range)
            } else {
                Box::new(range.rev())
            };
            for entry in entries {
                let (key, value) = entry.map_err(unavailable)?;
                let item = decode(value.value())?;
                let position = || {
                    let (pk, sk) = key.value();
                    StartKey {
                        key: Key::new(pk, sk),
                        gsi1sk: None,
                    }
                };
                if page.read(item, position) {
                    break;
                }
            }
        }
        Index::Gsi1 => {
            let index = txn.open_table(GSI1_INDEX).map_err(unavailable)?;
            let (lo, hi) = (&plan.lo, &plan.hi);
            let range = index
                .range(
                    (lo[0].as_str(), lo[1].as_str(), lo[2].as_str())
                        ..(hi[0].as_str(), hi[1].as_str(), hi[2].as_str()),
                )
                .map_err(unavailable)?;
            let entries: Box<dyn Iterator<Item = _>> = if plan.forward {
                Box::new(range)
            } else {
                Box::new(range.rev())
            };
            for entry in entries {
                let (key, _) = entry.map_err(unavailable)?;
                let (sk, gsi1sk, pk) = key.value();
                // Projection ALL: the index entry stands for the whole item, read from the
                // table in the same snapshot, so it cannot be missing unless the file is bad.
                let item = match items.get((pk, sk)).map_err(unavailable)? {
                    Some(guard) => decode(guard.value())?,
                    None => {
                        return Err(StoreError::Corrupt(format!(
                            "GSI1 entry ({sk}, {gsi1sk}, {pk}) has no item"
                        )));
                    }
                };
                let position = || StartKey {
                    key: Key::new(pk, sk),
                    gsi1sk: Some(gsi1sk.to_owned()),
                };
                if page.read(item, position) {
                    break;
                }
            }
        }
    }
    Ok(page.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> AttributeValue {
        AttributeValue::S(v.to_owned())
    }

    fn item(pk: &str, sk: &str, gsi1sk: Option<&str>) -> Item {
        let mut it = Item::default();
        it.insert(PK.to_owned(), s(pk));
        it.insert(SK.to_owned(), s(sk));
        if let Some(g) = gsi1sk {
            it.insert(GSI1SK.to_owned(), s(g));
        }
        it
    }

    fn with(mut it: Item, name: &str, value: AttributeValue) -> Item {
        it.insert(name.to_owned(), value);
        it
    }

    async fn store() -> (tempfile::TempDir, EmbeddedStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(&dir.path().join("data"), "gridgate").unwrap();
        store.ensure_table().await.unwrap();
        (dir, store)
    }

    fn sks(items: &[Item]) -> Vec<String> {
        items
            .iter()
            .map(|i| string_attr(i, SK).unwrap().to_owned())
            .collect()
    }

    fn query(index: Index, partition: &str, sort: SortCondition) -> Query {
        Query {
            sort,
            ..Query::partition(index, partition)
        }
    }

    fn table_start(pk: &str, sk: &str) -> StartKey {
        StartKey {
            key: Key::new(pk, sk),
            gsi1sk: None,
        }
    }

    fn gsi_start(pk: &str, sk: &str, g: &str) -> StartKey {
        StartKey {
            key: Key::new(pk, sk),
            gsi1sk: Some(g.to_owned()),
        }
    }

    /// All index entries, to check GSI maintenance directly.
    #[tokio::test]
    async fn data_survives_reopening_and_calls_before_ensure_table_fail() {
        let dir = tempfile::tempdir().unwrap();
        {
            let fresh = EmbeddedStore::open(dir.path(), "t").unwrap();
            assert!(matches!(
                fresh.batch_put(vec![item("p", "s", None)]).await,
                Err(StoreError::Unavailable(_))
            ));
            assert!(matches!(
                fresh.query(&Query::partition(Index::Table, "p")).await,
                Err(StoreError::Unavailable(_))
            ));
            fresh.ensure_table().await.unwrap();
            fresh.ensure_table().await.unwrap();
            fresh
                .batch_put(vec![item("p", "s", Some("g"))])
                .await
                .unwrap();
        }
        let reopened = EmbeddedStore::open(dir.path(), "t").unwrap();
        assert_eq!(reopened.path(), dir.path().join("t.redb"));
        let out = reopened.batch_get(&[Key::new("p", "s")]).await.unwrap();
        assert_eq!(out.items, vec![item("p", "s", Some("g"))]);
    }

    #[tokio::test]
    async fn a_page_ends_after_one_megabyte_read() {
        let (_dir, store) = store().await;
        // Each item is exactly 300 KiB by DynamoDB's count, so the fourth read crosses 1 MiB.
        let big = |sk: &str| {
            let base = item("P", sk, None);
            let pad = 300 * 1024 - item_size(&base) - "Pad".len();
            with(base, "Pad", s(&"x".repeat(pad)))
        };
        assert_eq!(item_size(&big("k1")), 300 * 1024);
        let sks_all = ["k1", "k2", "k3", "k4", "k5"];
        store
            .put_many(sks_all.iter().map(|k| big(k)).collect())
            .await
            .unwrap();

        let first = store
            .query(&Query::partition(Index::Table, "P"))
            .await
            .unwrap();
        assert_eq!(sks(&first.items), vec!["k1", "k2", "k3", "k4"]);
        assert_eq!(first.scanned, 4);
        assert_eq!(first.last_evaluated, Some(table_start("P", "k4")));
        assert_eq!(first.consumed, Capacity::for_query_bytes(4 * 300 * 1024));

        let second = store
            .query(&Query {
                start: first.last_evaluated,
                ..Query::partition(Index::Table, "P")
            })
            .await
            .unwrap();
        assert_eq!(sks(&second.items), vec!["k5"]);
        assert_eq!(second.last_evaluated, None);
    }

    #[tokio::test]
    async fn invalid_items_and_queries_are_rejected() {
        let (_dir, store) = store().await;
        let invalid = |r: Result<Vec<Item>, StoreError>| matches!(r, Err(StoreError::Invalid(_)));

        assert!(invalid(store.batch_put(vec![item("", "s", None)]).await));
        assert!(invalid(
            store.batch_put(vec![item("p", "s", Some(""))]).await
        ));
        assert!(invalid(
            store
                .batch_put(vec![with(
                    item("p", "s", None),
                    GSI1SK,
                    AttributeValue::N("1".into())
                )])
                .await
        ));
        let mut no_sk = item("p", "s", None);
        no_sk.remove(SK);
        assert!(invalid(store.batch_put(vec![no_sk]).await));
        assert!(invalid(
            store
                .batch_put(vec![item(&"p".repeat(2049), "s", None)])
                .await
        ));
        assert!(store
            .batch_put(vec![item(&"p".repeat(2048), "s", None)])
            .await
            .is_ok());
        assert!(invalid(
            store
                .batch_put(vec![item("p", &"s".repeat(1025), None)])
                .await
        ));
        assert!(invalid(
            store
                .batch_put(vec![item("p", "s", Some(&"g".repeat(1025)))])
                .await
        ));
        let huge = with(item("p", "s", None), "Pad", s(&"x".repeat(400 * 1024)));
        assert!(invalid(store.batch_put(vec![huge.clone()]).await));
        assert!(matches!(
            store.put_many(vec![huge.clone()]).await,
            Err(StoreError::Invalid(_))
        ));
        assert!(matches!(
            store
                .transact_write(vec![WriteOp::Put {
                    item: huge,
                    condition: None
                }])
                .await,
            Err(StoreError::Invalid(_))
        ));

        let bad_queries = vec![
            Query {
                limit: Some(0),
                ..Query::partition(Index::Table, "p")
            },
            Query::partition(Index::Table, ""),
            query(
                Index::Table,
                "p",
                SortCondition::Between("b".into(), "a".into()),
            ),
            // Start keys from another partition, outside the condition, or of the wrong shape.
            Query {
                start: Some(table_start("q", "s")),
                ..Query::partition(Index::Table, "p")
            },
            Query {
                start: Some(table_start("p", "a")),
                ..query(Index::Table, "p", SortCondition::Ge("b".into()))
            },
            Query {
                start: Some(gsi_start("p", "s", "g")),
                ..Query::partition(Index::Table, "p")
            },
            Query {
                start: Some(table_start("p", "s")),
                ..Query::partition(Index::Gsi1, "s")
            },
            Query {
                start: Some(gsi_start("p", "other", "g")),
                ..Query::partition(Index::Gsi1, "s")
            },
        ];
        for q in bad_queries {
            assert!(
                matches!(store.query(&q).await, Err(StoreError::Invalid(_))),
                "{q:?}"
            );
        }
    }

    #[test]
    fn numbers_compare_by_value() {
        for (a, b) in [
            ("1.5", "1.50"),
            ("15e-1", "1.5"),
            ("0", "-0.00"),
            ("100", "1E2"),
            ("+7", "7"),
        ] {
            assert!(numbers_equal(a, b), "{a} = {b}");
        }
        for (a, b) in [("1.5", "1.05"), ("-1", "1"), ("10", "1")] {
            assert!(!numbers_equal(a, b), "{a} != {b}");
        }
        assert!(values_equal(
            &AttributeValue::Ss(vec!["a".into(), "b".into()]),
            &AttributeValue::Ss(vec!["b".into(), "a".into()])
        ));
        assert!(!values_equal(
            &AttributeValue::S("1".into()),
            &AttributeValue::N("1".into())
        ));
    }

    #[test]
    fn prefix_end_is_the_next_string_after_every_extension() {
        assert_eq!(prefix_end("ab"), Some("ac".to_owned()));
        assert_eq!(prefix_end("a\u{10FFFF}"), Some("b".to_owned()));
        assert_eq!(prefix_end("\u{D7FF}"), Some("\u{E000}".to_owned()));
        assert_eq!(prefix_end("\u{10FFFF}"), None);
    }
}
