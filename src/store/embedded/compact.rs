//! Compacting the embedded store's file (`gridgate compact`), and measuring what the file
//! holds against its size: the items as DynamoDB sizes them and their index copies, beside the
//! file's apparent size and the blocks it takes on disk.
//!
//! redb writes copy-on-write: every transaction writes new pages and frees the old ones, which
//! later transactions reuse, but the file never shrinks by itself, and it grows ahead of the
//! pages it needs. Compaction moves the live pages to the front of the file and truncates it.
//! It needs the file to itself, so it runs where nothing else has the file open: by
//! `gridgate compact` (a running server's lock is reported as such), at the end of a bulk
//! load, and before a server opens the store, the last two only when it pays ([`when_it_pays`]).

use std::path::{Path, PathBuf};

use redb::{
    Database, DatabaseError, ReadableDatabase, ReadableTable, ReadableTableMetadata,
    TableDefinition, TableError, WriteTransaction,
};

use super::cache_bytes;
use super::table::{stored_row, unavailable, upgrade, GSI1_INDEX, ITEMS};
use crate::store::StoreError;

/// The most compaction passes one run makes; redb reports when none would gain more, which
/// takes a few passes.
const MAX_PASSES: u32 = 64;

/// Compaction pays when at least this share of the file (1 / FREE_SHARE) is free pages...
const FREE_SHARE: u64 = 4;
/// ...and they come to at least this many bytes: a small file is not worth the pass.
const MIN_FREE_BYTES: u64 = 64 * 1024 * 1024;

/// A file's size: as its length says, and in the blocks it takes on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileSize {
    pub apparent: u64,
    pub on_disk: u64,
}

/// What the file holds: the items and their sizes as DynamoDB counts them, and the index rows
/// (copies of the items that have a `GSI1SK`, as `GSI1` projects them); `stored_bytes` is every
/// key and row as stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Contents {
    pub items: u64,
    pub item_bytes: u64,
    pub index_rows: u64,
    pub index_bytes: u64,
    pub stored_bytes: u64,
}

/// What a compaction did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Compaction {
    pub before: FileSize,
    pub after: FileSize,
    pub contents: Contents,
    /// Passes redb made until nothing more could be gained.
    pub passes: u32,
}

/// The embedded store's file under `dir` for `table`.
pub fn file_path(dir: &Path, table: &str) -> PathBuf {
    dir.join(format!("{table}.redb"))
}

pub fn file_size(path: &Path) -> Result<FileSize, StoreError> {
    let metadata = std::fs::metadata(path)
        .map_err(|e| StoreError::Unavailable(format!("cannot read {}: {e}", path.display())))?;
    Ok(FileSize {
        apparent: metadata.len(),
        on_disk: on_disk(&metadata),
    })
}

#[cfg(unix)]
fn on_disk(metadata: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    // `blocks` counts 512-byte units whatever the file system's block size.
    metadata.blocks().saturating_mul(512)
}

#[cfg(not(unix))]
fn on_disk(metadata: &std::fs::Metadata) -> u64 {
    metadata.len()
}

/// Counts the items and index rows and their sizes, in one read transaction.
pub(super) fn contents(db: &Database) -> Result<Contents, StoreError> {
    let txn = db.begin_read().map_err(unavailable)?;
    let mut contents = Contents::default();
    let items = txn.open_table(ITEMS).map_err(unavailable)?;
    for entry in items.iter().map_err(unavailable)? {
        let (key, row) = entry.map_err(unavailable)?;
        let (size, _) = stored_row(row.value())?;
        let (pk, sk) = key.value();
        contents.items += 1;
        contents.item_bytes += size as u64;
        contents.stored_bytes += (pk.len() + sk.len() + row.value().len()) as u64;
    }
    let index = txn.open_table(GSI1_INDEX).map_err(unavailable)?;
    for entry in index.iter().map_err(unavailable)? {
        let (key, row) = entry.map_err(unavailable)?;
        let (size, _) = stored_row(row.value())?;
        let (sk, gsi1sk, pk) = key.value();
        contents.index_rows += 1;
        contents.index_bytes += size as u64;
        contents.stored_bytes += (sk.len() + gsi1sk.len() + pk.len() + row.value().len()) as u64;
    }
    Ok(contents)
}

/// How the free pages are counted before deciding whether compaction pays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Count {
    /// Every page walked (redb's stats): exact, and as costly as reading the file (about a
    /// second per GB from the OS's cache, several from disk); for the end of a bulk load that
    /// did not count itself, whose pages the OS still caches.
    Walked,
    /// Estimated from the last count ([`PAGES`]) scaled by the entries the tables hold now,
    /// which redb keeps in their headers: no page is read, so a server can ask at every
    /// start-up. A file without a count (never counted by this version, or bulk-loaded since
    /// and not compacted after) is left alone.
    Recorded,
    /// After a bulk load: the count the load recorded if it went into a fresh file (see
    /// [`LoadCount`]), which needs no walk; otherwise (every load removes the last count)
    /// every page walked.
    Loaded,
}

/// The last count of the file's pages in use: `"pages"` to (bytes in pages, entries of the
/// table and the index then). Written after every walk and every compaction, and by a load
/// into a fresh file ([`LoadCount`]); removed by every other load.
const PAGES: TableDefinition<&str, (u64, u64)> = TableDefinition::new("gridgate.pages.v1");
const PAGES_KEY: &str = "pages";

/// The entries of the table and the index (from their headers: nothing is read); a file
/// whose tables are not created yet has none.
fn entries(db: &Database) -> Result<u64, StoreError> {
    let txn = db.begin_read().map_err(unavailable)?;
    Ok(len_or_zero(txn.open_table(ITEMS))? + len_or_zero(txn.open_table(GSI1_INDEX))?)
}

/// The entries of a table as opened, none when it does not exist.
fn len_or_zero(opened: Result<impl ReadableTableMetadata, TableError>) -> Result<u64, StoreError> {
    match opened {
        Ok(table) => table.len().map_err(unavailable),
        Err(TableError::TableDoesNotExist(_)) => Ok(0),
        Err(e) => Err(unavailable(e)),
    }
}

/// Records that `used` bytes of pages hold `entries` entries.
fn record(db: &Database, used: u64, entries: u64) -> Result<(), StoreError> {
    let txn = db.begin_write().map_err(unavailable)?;
    txn.open_table(PAGES)
        .map_err(unavailable)?
        .insert(PAGES_KEY, (used, entries))
        .map_err(unavailable)?;
    txn.commit().map_err(unavailable)
}

/// The bytes of the file in pages, by `count` (`None`: not known without a walk).
fn used_bytes(db: &Database, count: Count) -> Result<Option<u64>, StoreError> {
    let now = entries(db)?;
    match count {
        Count::Walked => {
            let txn = db.begin_write().map_err(unavailable)?;
            let stats = txn.stats().map_err(unavailable)?;
            txn.abort().map_err(unavailable)?;
            let used = stats
                .allocated_pages()
                .saturating_mul(stats.page_size() as u64);
            record(db, used, now)?;
            Ok(Some(used))
        }
        Count::Loaded => match used_bytes(db, Count::Recorded)? {
            Some(used) => Ok(Some(used)),
            None => used_bytes(db, Count::Walked),
        },
        Count::Recorded => Ok(last_count(db)?
            .filter(|&(_, then)| then > 0)
            .map(|(used, then)| {
                (u128::from(used) * u128::from(now) / u128::from(then))
                    .try_into()
                    .unwrap_or(u64::MAX)
            })),
    }
}

/// The last count recorded ([`PAGES`]), if any.
fn last_count(db: &Database) -> Result<Option<(u64, u64)>, StoreError> {
    let txn = db.begin_read().map_err(unavailable)?;
    let pages = match txn.open_table(PAGES) {
        Ok(pages) => pages,
        Err(TableError::TableDoesNotExist(_)) => return Ok(None),
        Err(e) => return Err(unavailable(e)),
    };
    Ok(pages
        .get(PAGES_KEY)
        .map_err(unavailable)?
        .map(|guard| guard.value()))
}

/// What a bulk load does to the recorded count, so that the compaction after it
/// ([`after_bulk_load`]) need not walk every page to decide (2.6 s of a load of 1,000,000
/// issues).
pub(super) struct LoadCount {
    /// The file's blocks on disk before a load into empty tables; `None` for any other load
    /// (or if the size could not be read).
    empty_before: Option<u64>,
}

/// A load into empty tables counts itself only if the file before it was at most this share
/// of the file after it (1 / LOAD_SHARE): whatever the file held free before is then at most
/// that share of it.
const LOAD_SHARE: u64 = 20;

impl LoadCount {
    /// In the load's first transaction, before it writes: removes the last count (the rows a load
    /// replaces free pages that only a walk can count; should the load's own count never be
    /// recorded, the compaction after it walks), and notes the file's size if the table and
    /// the index are empty.
    pub(super) fn begin(txn: &WriteTransaction, path: &Path) -> Result<LoadCount, StoreError> {
        let empty = len_or_zero(txn.open_table(ITEMS))? == 0
            && len_or_zero(txn.open_table(GSI1_INDEX))? == 0;
        txn.open_table(PAGES)
            .map_err(unavailable)?
            .remove(PAGES_KEY)
            .map_err(unavailable)?;
        Ok(LoadCount {
            empty_before: empty
                .then(|| file_size(path).ok().map(|size| size.on_disk))
                .flatten(),
        })
    }

    /// Once the load is committed: a load into empty tables replaced nothing, so if the file
    /// before it was small beside it ([`LOAD_SHARE`]: a fresh file, not one emptied by
    /// deletes), the file's blocks on disk are its pages, less the few it freed itself (under
    /// 5 % at 100,000 issues; redb grows the file ahead of need, but what it never wrote
    /// takes no disk). That is recorded as the count: it can only understate the free pages,
    /// and by far less than the quarter of the file that compacting needs. A failure is
    /// logged, not returned: the load is in the file, and without a count the compaction
    /// after it walks.
    pub(super) fn committed(self, db: &Database, path: &Path) {
        let Some(before) = self.empty_before else {
            return;
        };
        let recorded = file_size(path).and_then(|after| {
            if before.saturating_mul(LOAD_SHARE) > after.on_disk {
                return Ok(());
            }
            record(db, after.on_disk, entries(db)?)
        });
        if let Err(e) = recorded {
            tracing::warn!(error = %e, "could not record the bulk load's page count");
        }
    }
}

/// Whether a file taking `on_disk` bytes with `used` of them in pages is worth compacting: a
/// quarter of it or more is free pages, and at least `min_free` bytes ([`MIN_FREE_BYTES`] but
/// in tests). What the file has room for but never wrote (redb grows it ahead of need) takes
/// no disk and does not count: compacting a freshly loaded file only to trim its apparent
/// size took longer than loading it.
fn pays(on_disk: u64, used: u64, min_free: u64) -> bool {
    let free = on_disk.saturating_sub(used);
    free >= min_free && free.saturating_mul(FREE_SHARE) >= on_disk
}

/// Compaction passes until redb gains nothing more (at most [`MAX_PASSES`]).
fn compact_passes(db: &mut Database) -> Result<u32, StoreError> {
    let mut passes = 0;
    while passes < MAX_PASSES && db.compact().map_err(unavailable)? {
        passes += 1;
    }
    Ok(passes)
}

/// Compacts the open file at `path` if it pays (see [`pays`]), its free pages counted by
/// `count`; returns its size before and after when it did. The caller must be the file's
/// only user: a server before it opens the store, or the bulk loader once it has finished.
fn when_it_pays(
    db: &mut Database,
    path: &Path,
    count: Count,
) -> Result<Option<(FileSize, FileSize)>, StoreError> {
    when_free(db, path, count, MIN_FREE_BYTES)
}

fn when_free(
    db: &mut Database,
    path: &Path,
    count: Count,
    min_free: u64,
) -> Result<Option<(FileSize, FileSize)>, StoreError> {
    let before = file_size(path)?;
    match used_bytes(db, count)? {
        Some(used) if pays(before.on_disk, used, min_free) => tracing::info!(
            path = %path.display(),
            on_disk = before.on_disk,
            free = before.on_disk.saturating_sub(used),
            "compacting the file: a quarter or more of it is free pages"
        ),
        _ => return Ok(None),
    }
    compact_passes(db)?;
    let after = file_size(path)?;
    // The compacted file is its pages.
    record(db, after.apparent, entries(db)?)?;
    Ok(Some((before, after)))
}

/// Opens the file at `path` to compact it; a file another process has open is reported as
/// such.
fn open_alone(path: &Path, cache_mb: u64) -> Result<Database, StoreError> {
    Database::builder()
        .set_cache_size(cache_bytes(cache_mb))
        .open(path)
        .map_err(|e| match e {
            DatabaseError::DatabaseAlreadyOpen => StoreError::Unavailable(format!(
                "{} is open in another process (a running server?): stop it, then compact",
                path.display()
            )),
            other => StoreError::Unavailable(format!("cannot open {}: {other}", path.display())),
        })
}

/// The compactions run when they pay ([`after_bulk_load`], [`at_start_up`]): given the data
/// directory, the table and the cache in MiB, the file's size before and after when it was
/// compacted.
pub type WhenItPays = fn(&Path, &str, u64) -> Result<Option<(FileSize, FileSize)>, StoreError>;

/// After a bulk load into the file of `table` under `dir` (closed by then): compacts it if it
/// pays, counted as [`Count::Loaded`] says, and returns its size before and after when it did.
pub fn after_bulk_load(
    dir: &Path,
    table: &str,
    cache_mb: u64,
) -> Result<Option<(FileSize, FileSize)>, StoreError> {
    let path = file_path(dir, table);
    let mut db = open_alone(&path, cache_mb)?;
    when_it_pays(&mut db, &path, Count::Loaded)
}

/// Before a server opens the file of `table` under `dir`: compacts it if the recorded count
/// says it pays (no page is read to decide), and returns its size before and after when it
/// did. A missing file is left for the store to create.
pub fn at_start_up(
    dir: &Path,
    table: &str,
    cache_mb: u64,
) -> Result<Option<(FileSize, FileSize)>, StoreError> {
    let path = file_path(dir, table);
    if !path.exists() {
        return Ok(None);
    }
    let mut db = open_alone(&path, cache_mb)?;
    when_it_pays(&mut db, &path, Count::Recorded)
}

/// Compacts the file of `table` under `dir` with a page cache of `cache_mb` MiB (upgrading a
/// file of an earlier version first, as opening it for serving would), and reports its size
/// before and after and what it holds.
pub fn compact(dir: &Path, table: &str, cache_mb: u64) -> Result<Compaction, StoreError> {
    let path = file_path(dir, table);
    if !path.exists() {
        return Err(StoreError::Invalid(format!(
            "there is no embedded store at {}",
            path.display()
        )));
    }
    let before = file_size(&path)?;
    let mut db = open_alone(&path, cache_mb)?;
    upgrade(&db, &path)?;
    let contents = contents(&db)?;
    let passes = compact_passes(&mut db)?;
    let after = file_size(&path)?;
    record(&db, after.apparent, entries(&db)?)?;
    drop(db);
    Ok(Compaction {
        before,
        after,
        contents,
        passes,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::store::embedded::table::string_attr;
    use crate::store::embedded::tests::item;
    use crate::store::embedded::EmbeddedStore;
    use crate::store::{AttributeValue, Index, Key, Query, Store, WriteOp};

    const MIB: u64 = 1024 * 1024;

    /// Compaction pays from a quarter of the file on disk free, and from 64 MiB free.
    #[test]
    fn compaction_pays_from_a_quarter_free_and_64_mib() {
        let min = MIN_FREE_BYTES;
        assert!(pays(1024 * MIB, 768 * MIB, min), "a quarter free");
        assert!(
            !pays(1024 * MIB, 768 * MIB + 1, min),
            "just under a quarter"
        );
        assert!(pays(256 * MIB, 192 * MIB, min), "64 MiB, a quarter");
        assert!(
            !pays(200 * MIB, 140 * MIB, min),
            "over a quarter, under 64 MiB"
        );
        assert!(
            !pays(100 * MIB, 200 * MIB, min),
            "more used than the file says"
        );
        assert!(!pays(0, 0, min));
    }

    /// Deletes the rows `p<i>`/`s` for `i` in `rows` from the store under `dir`, a hundred
    /// to a transaction, and closes it.
    async fn delete_rows(dir: &Path, rows: std::ops::Range<usize>) {
        let store = EmbeddedStore::open(dir, "gridgate").unwrap();
        for chunk in rows.collect::<Vec<_>>().chunks(100) {
            let deletes = chunk
                .iter()
                .map(|i| WriteOp::Delete {
                    key: Key::new(format!("p{i:05}"), "s"),
                    condition: None,
                })
                .collect();
            store.transact_write(deletes).await.unwrap();
        }
    }

    /// A bulk load into a fresh file records its blocks on disk as its count (which a walk
    /// confirms), and the compaction after it decides from that without a walk (which would
    /// record what it found instead); a load over stored rows removes the count, and the
    /// compaction after it walks every page and records that; a load into tables emptied by
    /// deletes, whose file is mostly free pages, does not count itself either.
    #[tokio::test]
    async fn a_load_into_an_empty_file_counts_itself_and_any_other_load_is_walked() {
        let dir = tempfile::tempdir().unwrap();
        let path = file_path(dir.path(), "gridgate");
        // The bytes in pages, every page walked (recording nothing).
        let walked = |path: &Path| {
            let db = open_alone(path, 1).unwrap();
            let txn = db.begin_write().unwrap();
            let stats = txn.stats().unwrap();
            txn.abort().unwrap();
            stats.allocated_pages() * stats.page_size() as u64
        };
        // Each load has the file to itself, as `seed` does, so the counts can be read after.
        let load_with = |g: &'static str, n: usize| {
            let dir = dir.path().to_owned();
            async move {
                let store = Arc::new(EmbeddedStore::open(&dir, "gridgate").unwrap());
                store.ensure_table().await.unwrap();
                let mut load = store.bulk_load().await.unwrap();
                let rows = (0..n)
                    .map(|i| item(&format!("p{i:05}"), "s", Some(&format!("{g}{i:05}"))))
                    .collect();
                load.put(rows).await.unwrap();
                load.finish().await.unwrap();
            }
        };
        load_with("a", 5_000).await;
        let count = |path: &Path| {
            let db = open_alone(path, 1).unwrap();
            (last_count(&db).unwrap(), entries(&db).unwrap())
        };
        let (loaded, now) = count(&path);
        let (blocks, then) = loaded.expect("the load counted itself");
        // The file's blocks once it was committed; since then only the count's own
        // transaction and the close wrote a few pages.
        let on_disk = file_size(&path).unwrap().on_disk;
        assert!(
            blocks <= on_disk && on_disk - blocks <= 64 * 1024,
            "{blocks} {on_disk}"
        );
        assert_eq!((then, now), (10_000, 10_000));
        // The premise: its blocks are its pages, within the share a fresh file's count is
        // allowed, and the few pages (8 at most) of the count's own transaction after it.
        let in_pages = walked(&path);
        assert!(
            in_pages.abs_diff(blocks) <= blocks / LOAD_SHARE + 8 * 4096,
            "{in_pages} {blocks}"
        );
        assert_eq!(after_bulk_load(dir.path(), "gridgate", 1).unwrap(), None);
        assert_eq!(count(&path).0, loaded, "decided without a walk");

        // The same rows again, each index entry moved.
        load_with("b", 5_000).await;
        assert_eq!(
            count(&path).0,
            None,
            "a load over stored rows removes the count"
        );
        let in_pages = walked(&path);
        assert_eq!(after_bulk_load(dir.path(), "gridgate", 1).unwrap(), None);
        assert_eq!(count(&path).0, Some((in_pages, 10_000)), "walked");

        // Every row deleted, then a small load: its tables were empty, but the file was not
        // fresh (its free pages are most of it), so the load does not count itself.
        delete_rows(dir.path(), 0..5_000).await;
        load_with("c", 10).await;
        assert_eq!(
            count(&path),
            (None, 20),
            "a load into an emptied file is walked"
        );
    }

    /// A bulk load's walk finds nothing worth compacting in a fresh file and records its
    /// count; once most rows are deleted, the start-up's estimate from that count sees the
    /// free pages without reading them, and compacts: the file is smaller after, the rows left
    /// read the same, and neither count finds more worth doing.
    #[tokio::test]
    async fn a_file_mostly_free_is_compacted_and_keeps_its_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = file_path(dir.path(), "gridgate");
        let padding = "x".repeat(2_000);
        let store = EmbeddedStore::open(dir.path(), "gridgate").unwrap();
        store.ensure_table().await.unwrap();
        let rows: Vec<_> = (0..3_000)
            .map(|i| {
                let mut it = item(&format!("p{i:05}"), "s", Some(&format!("{i:05}")));
                it.insert("Pad".into(), AttributeValue::S(padding.clone()));
                it
            })
            .collect();
        store.put_many(rows).await.unwrap();
        drop(store);

        let mut db = open_alone(&path, 1).unwrap();
        assert_eq!(
            when_free(&mut db, &path, Count::Recorded, MIB).unwrap(),
            None,
            "no count yet"
        );
        assert_eq!(
            when_free(&mut db, &path, Count::Walked, MIB).unwrap(),
            None,
            "a fresh load"
        );
        drop(db);

        delete_rows(dir.path(), 10..3_000).await;

        let mut db = open_alone(&path, 1).unwrap();
        let (before, after) = when_free(&mut db, &path, Count::Recorded, MIB)
            .unwrap()
            .expect("it pays");
        assert!(
            after.on_disk * 2 < before.on_disk,
            "{before:?} -> {after:?}"
        );
        for count in [Count::Recorded, Count::Walked] {
            assert_eq!(
                when_free(&mut db, &path, count, MIB).unwrap(),
                None,
                "{count:?}"
            );
        }
        drop(db);
        let store = EmbeddedStore::open(dir.path(), "gridgate").unwrap();
        let left = store
            .query(&Query::partition(Index::Gsi1, "s"))
            .await
            .unwrap();
        let pks: Vec<_> = left
            .items
            .iter()
            .map(|it| string_attr(it, "PK").unwrap().to_owned())
            .collect();
        assert_eq!(pks, (0..10).map(|i| format!("p{i:05}")).collect::<Vec<_>>());
    }
}
