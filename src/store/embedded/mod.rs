//! The embedded store: [`Store`] over one local redb file, with DynamoDB's semantics.
//!
//! The file `<dir>/<table>.redb` holds two redb tables. `items.v3` maps the table key
//! `(PK, SK)` to the item's row: its size as DynamoDB counts it, then its attributes but `PK`
//! and `SK` in the compact encoding of [`crate::store::row`]. `GSI1.v3` is the inverted index:
//! it maps `(SK, GSI1SK, PK)` to a copy of the row without `GSI1SK` (projection ALL), and every
//! write updates it in the same redb write transaction as the item itself, so the index can
//! never be observed out of step with the table (DynamoDB's GSIs are only eventually
//! consistent; being stricter here is safe because no caller may rely on index lag).
//!
//! Key strings are stored as their UTF-8 bytes. redb orders tuple keys element by element and
//! byte-string elements by their bytes, which is exactly DynamoDB's UTF-8 byte order for string
//! keys, so a Query is one redb range scan with tight bounds: it costs the page it reads, not
//! the partition it reads from.
//!
//! Everything a conformance suite can observe is meant to match DynamoDB: `Limit` counts items
//! read before the filter, a page also ends once 1 MB has been read, `LastEvaluatedKey` is
//! returned whenever the page ended by `Limit` or size (even if nothing follows), and requests
//! DynamoDB rejects (duplicate keys, oversized items, empty key values, ...) are rejected with
//! [`StoreError::Invalid`]. Where DynamoDB leaves an order unspecified (index items with equal
//! `GSI1SK`), this store orders by `PK`.
//!
//! The submodules split the work by concern: `validate` checks requests as DynamoDB would,
//! `write` applies puts, deletes and transactions, `query` plans and pages reads, `equality`
//! compares attribute values as conditions do, `table` owns the redb tables themselves,
//! `behind` is the file under them (written behind redb's locks), `compact` shrinks the file
//! and measures what it holds, `batch` prepares a bulk load's batches, `runs` holds them as
//! sorted runs (spilled, and merged by `merge`), and `bulk` writes bulk loads.

mod batch;
mod behind;
mod bulk;
pub mod compact;
mod equality;
mod merge;
mod query;
mod runs;
mod table;
mod validate;
mod write;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use redb::backends::FileBackend;
use redb::{Database, ReadableDatabase};

use self::query::{batch_get_sync, query_sync, scan_sync, Form, QueryPlan};
use self::table::{create_tables, tables_exist, unavailable, upgrade};
use self::validate::{reject_duplicates, validate_key, validate_transaction, ItemRow};
use self::write::{transact_sync, write_puts};
use super::capacity::item_size;
use super::{
    BatchGetOutput, BulkLoad, Capacity, GetOutput, Index, Item, Key, Query, QueryOutput, RawItem,
    ScanOutput, Store, StoreError, WriteOp, WriteOutput, MAX_BATCH_GET, MAX_BATCH_WRITE,
};

/// The most rows a read may take and still run on the calling task rather than on the blocking
/// pool. A BatchGetItem takes at most 100 keys, so it always runs in place. A Query runs in
/// place until it has read this many rows; one that would read more is given up before its
/// next row and run again, whole, on the blocking pool, so it costs at most this many rows'
/// work twice and still answers from one read transaction.
///
/// Why: a read of a page from a file in the OS page cache takes tens of microseconds, less
/// than handing it to a blocking thread and waking the task again, which cost a grid page
/// about a tenth of its CPU in thread wake-ups per call (a project's partition, read without
/// `Limit`, is a few rows). What one such read can cost is bounded by the rows it may read
/// (at most 1 MB, like any Query page). Longer queries, scans and every write (which syncs the
/// file) run on the blocking pool.
const MAX_READ_IN_PLACE: usize = 128;

/// The page cache redb keeps in memory, in MiB, unless configured (`--embedded-cache-mb`).
///
/// redb's own default is 1 GiB, and nothing else bounds it: a server that had paged a
/// 100,000-issue project in three orders held 788 MB. 64 MiB holds the upper levels of both
/// tables' B-trees and the hot pages of a few sorted grids, which is what paging keeps
/// touching, and fits a laptop beside a browser and a 256 MB container with room to spare;
/// pages past it are read from the OS page cache, which costs microseconds per page.
pub const DEFAULT_CACHE_MB: u64 = 64;

/// A cache of `mb` MiB in bytes, as redb takes it.
fn cache_bytes(mb: u64) -> usize {
    usize::try_from(mb.saturating_mul(1024 * 1024)).unwrap_or(usize::MAX)
}

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
    /// The bytes of redb's cache, which a bulk load's transactions are sized by.
    cache: usize,
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
    /// Opens (creating if needed) `<dir>/<table>.redb`, creating `dir` if missing, with the
    /// default page cache ([`DEFAULT_CACHE_MB`]).
    ///
    /// This blocks on file I/O; call it at startup, not on a request path. The tables inside
    /// are created by [`Store::ensure_table`], as with DynamoDB; a file written by an earlier
    /// run is usable at once (one written by an earlier version, with string keys or an index
    /// of keys only, is upgraded first, in one transaction).
    pub fn open(dir: &Path, table: &str) -> Result<Self, StoreError> {
        Self::open_with_cache(dir, table, DEFAULT_CACHE_MB)
    }

    /// [`EmbeddedStore::open`] with a page cache of `cache_mb` MiB: what the store keeps of the
    /// file in memory, whatever the size of the data and whatever is read.
    pub fn open_with_cache(dir: &Path, table: &str, cache_mb: u64) -> Result<Self, StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| {
            StoreError::Unavailable(format!("cannot create {}: {e}", dir.display()))
        })?;
        let path = dir.join(format!("{table}.redb"));
        let cannot = |e: &dyn std::fmt::Display| {
            StoreError::Unavailable(format!("cannot open {}: {e}", path.display()))
        };
        // The file is opened as `Builder::create` opens it, but under a backend that writes
        // behind (see `behind`), so that redb never waits for the kernel under its locks.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| cannot(&e))?;
        // A second handle on the file, for the write thread to start its writeback through
        // (see `behind::WRITEBACK_BYTES`; Linux only).
        let writeback = if cfg!(target_os = "linux") {
            Some(file.try_clone().map_err(|e| cannot(&e))?)
        } else {
            None
        };
        let backend = FileBackend::new(file).map_err(|e| cannot(&e))?;
        let db = Database::builder()
            .set_cache_size(cache_bytes(cache_mb))
            .create_with_backend(behind::Behind::new(backend, writeback).map_err(|e| cannot(&e))?)
            .map_err(|e| cannot(&e))?;
        runs::remove_leftover_runs(&path);
        if upgrade(&db, &path)? {
            tracing::info!(path = %path.display(), "upgraded the file to the current tables");
        }
        let ready = tables_exist(&db)?;
        Ok(EmbeddedStore {
            db: Arc::new(db),
            path,
            ready: Arc::new(AtomicBool::new(ready)),
            cache: cache_bytes(cache_mb),
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

    /// Runs a synchronous redb operation on the blocking pool: writes sync the file, and a
    /// large read can take milliseconds, which must not stall the async runtime's worker
    /// threads.
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

    /// One BatchGetItem, its items in form `T`.
    async fn batch_get_as<T: Form + Send + 'static>(
        &self,
        keys: &[Key],
    ) -> Result<BatchGetOutput<T>, StoreError> {
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
        reject_duplicates(keys.iter(), "BatchGetItem")?;
        // At most 100 keys: a read of a page's size, run in place (see `MAX_READ_IN_PLACE`).
        batch_get_sync(&self.db, keys)
    }

    /// One Query, its items in form `T`.
    async fn query_as<T: Form + Send + 'static>(
        &self,
        query: &Query,
    ) -> Result<QueryOutput<T>, StoreError> {
        self.check_ready()?;
        if query.consistent && query.index == Index::Gsi1 {
            return Err(StoreError::Invalid(
                "consistent reads are not supported on global secondary indexes".into(),
            ));
        }
        let plan = QueryPlan::new(query)?;
        // Read in place while the read is short; a read that turns out longer is given up
        // before its next row and run again on the blocking pool (see `MAX_READ_IN_PLACE`).
        // A page of `Limit` ≤ the cap, unfiltered or not, is always short.
        let in_place = query_sync(&self.db, &plan, query.filter.as_ref(), MAX_READ_IN_PLACE)?;
        let mut out = match in_place {
            Some(out) => out,
            None => {
                let filter = query.filter.clone();
                self.blocking(move |db| {
                    query_sync(db, &plan, filter.as_ref(), usize::MAX)?.ok_or_else(|| {
                        StoreError::Unavailable("an uncapped read stopped at its cap".into())
                    })
                })
                .await?
            }
        };
        if query.consistent {
            // Strongly consistent reads cost twice the eventually consistent price.
            out.consumed.read_units *= 2.0;
        }
        Ok(out)
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

    /// The file's name without `.redb`: the `table` it was opened with.
    fn table_name(&self) -> &str {
        self.path
            .file_stem()
            .and_then(|stem| stem.to_str())
            .unwrap_or_default()
    }

    async fn get(&self, key: &Key) -> Result<GetOutput, StoreError> {
        self.check_ready()?;
        validate_key(key)?;
        let out = batch_get_sync::<Item>(&self.db, std::slice::from_ref(key))?;
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
        self.batch_get_as(keys).await
    }

    async fn batch_get_raw(&self, keys: &[Key]) -> Result<BatchGetOutput<RawItem>, StoreError> {
        self.batch_get_as(keys).await
    }

    async fn query(&self, query: &Query) -> Result<QueryOutput, StoreError> {
        self.query_as(query).await
    }

    async fn query_raw(&self, query: &Query) -> Result<QueryOutput<RawItem>, StoreError> {
        self.query_as(query).await
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

    /// The whole load at its end, each table written once in key order, in transactions
    /// sized by the cache and on disk whole or not at all (see `bulk`), instead of a
    /// transaction per batch.
    async fn bulk_load(self: Arc<Self>) -> Result<Box<dyn BulkLoad>, StoreError> {
        self.check_ready()?;
        Ok(Box::new(bulk::EmbeddedLoad::new(
            Arc::clone(&self.db),
            &self.path,
            self.cache,
        )))
    }

    async fn ensure_table(&self) -> Result<(), StoreError> {
        self.blocking(create_tables).await?;
        self.ready.store(true, Ordering::Release);
        Ok(())
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.blocking(|db| db.begin_read().map(drop).map_err(unavailable))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::table::string_attr;
    use super::*;
    use crate::store::table::{GSI1SK, PK, SK};
    use crate::store::{AttributeValue, SortCondition, StartKey};

    pub(super) fn s(v: &str) -> AttributeValue {
        AttributeValue::S(v.to_owned())
    }

    pub(super) fn item(pk: &str, sk: &str, gsi1sk: Option<&str>) -> Item {
        let mut it = Item::default();
        it.insert(PK.to_owned(), s(pk));
        it.insert(SK.to_owned(), s(sk));
        if let Some(g) = gsi1sk {
            it.insert(GSI1SK.to_owned(), s(g));
        }
        it
    }

    pub(super) fn with(mut it: Item, name: &str, value: AttributeValue) -> Item {
        it.insert(name.to_owned(), value);
        it
    }

    pub(super) async fn store() -> (tempfile::TempDir, EmbeddedStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(&dir.path().join("data"), "gridgate").unwrap();
        store.ensure_table().await.unwrap();
        (dir, store)
    }

    pub(super) fn sks(items: &[Item]) -> Vec<String> {
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

    pub(super) fn table_start(pk: &str, sk: &str) -> StartKey {
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

    /// Data written before closing is there after reopening; calls before `ensure_table` fail.
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
}
