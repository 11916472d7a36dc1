//! Bulk loads into the embedded store ([`Store::bulk_load`](crate::store::Store::bulk_load),
//! what `seed --synthetic` writes through): batches are prepared ([`super::batch`]: checked,
//! laid out as records and sorted) on the blocking pool as they come, several at once, and
//! kept as sorted runs ([`super::runs`]: spilled to files beside the database past half a
//! gigabyte, by a thread of their own while the load goes on); `finish` writes the whole
//! load, merging the runs into the table and into the index side by side, each in key order,
//! each once, in transactions that fit the store's write buffer ([`Commits`]): committed
//! without a sync but the last, and undone should the load fail.
//!
//! Why not a transaction per batch: a batch's index entries (a cell's value, an issue's name)
//! are spread over the whole index, so every batch rewrote most of the index's pages, and the
//! load slowed as the file grew (1,000,000 issues took 341 s, against 24 s for 100,000). A
//! merge writes each table front to back as full leaves, so the load costs what the data
//! does. Only the last transaction syncs, and a failure restores the savepoint taken before
//! the first, so the load is on disk whole or not at all.
//!
//! Where the time goes (issue 24's profiles), and so what runs beside what: making the items
//! and preparing batches keep both cores busy until the last batch (past 512 MiB, beside a
//! spill's two threads); then the table's writer, the index's writer and their two merges
//! share them, stopping for a commit every few megabytes; then the last commit, with its
//! sync, runs alone.

use std::cell::RefCell;
use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use redb::{Database, Durability, WriteTransaction};

use super::batch::{
    index_key, prepare, prepare_written, supersede, IndexKey, Record, Records, Sorted,
};
use super::compact::LoadCount;
use super::runs::{Held, LoadRuns, Runs};
use super::table::{stored_gsi1sk, unavailable, GSI1_INDEX, ITEMS};
use super::write::{insert_in_order, Entry};
use crate::store::{BulkLoad, Item, StoreError, WriteItems};

/// A record a merge handed over, in the chunk it came in (see [`merged_on`]).
struct Shared {
    chunk: Arc<Records>,
    at: usize,
}

impl Shared {
    fn record(&self) -> Record<'_> {
        self.chunk.get(self.at)
    }
}

/// A table row of the load.
struct TableRecord(Shared);

impl Entry for TableRecord {
    type Key = (&'static [u8], &'static [u8]);
    fn key(&self) -> (&[u8], &[u8]) {
        let record = self.0.record();
        (record.part(0), record.part(1))
    }
    fn row(&self) -> &[u8] {
        self.0.record().row()
    }
}

/// An index entry of the load.
struct IndexRecord(Shared);

impl AsRef<Shared> for TableRecord {
    fn as_ref(&self) -> &Shared {
        &self.0
    }
}

impl AsRef<Shared> for IndexRecord {
    fn as_ref(&self) -> &Shared {
        &self.0
    }
}

impl Entry for IndexRecord {
    type Key = (&'static [u8], &'static [u8], &'static [u8]);
    fn key(&self) -> (&[u8], &[u8], &[u8]) {
        self.0.record().key()
    }
    fn row(&self) -> &[u8] {
        self.0.record().row()
    }
}

/// A bulk load into the embedded store (see the module's documentation).
pub(super) struct EmbeddedLoad {
    db: Arc<Database>,
    file: PathBuf,
    /// Batches being validated and sorted on the blocking pool, oldest first, at most
    /// [`EmbeddedLoad::width`] of them (one more than the cores, at most
    /// [`MAX_PREPARING`]): the loader makes its next batch meanwhile, and on a machine with
    /// more than one core they are prepared side by side.
    preparing: VecDeque<tokio::task::JoinHandle<Result<Sorted, StoreError>>>,
    width: usize,
    /// What the load holds, or the task that is adding the last prepared batch to it (which
    /// may spill runs). Neither, once a step failed: the load is then lost, and says so
    /// rather than start again empty.
    runs: Option<LoadRuns>,
    pending: Option<tokio::task::JoinHandle<Result<LoadRuns, StoreError>>>,
    /// The bytes of records each table's writer writes in one transaction (see [`Commits`]).
    commit_bytes: usize,
}

/// A load's transactions, beside the store's cache: each table's writer writes up to this
/// share of it per transaction. redb's write buffer is half the cache; the two writers' pages
/// fill half of that, leaving room for the pages of the commit before, which the buffer
/// writes out as the next transaction goes.
const COMMIT_SHARE_OF_CACHE: usize = 8;

/// Writes the load `held` (see [`LoadRuns::held`]), starting in `txn`, and returns the
/// transaction it ends in, for the caller to commit: the table's runs merged into the table
/// while the index's runs are merged into the index, then the index entries the load left
/// behind removed (see [`table_rows_on`]). With `commits`, each table's writer stops after its
/// share of bytes, and the transaction is committed without a sync and another begun (see
/// [`Commits`]); without, it is all one transaction.
pub(super) fn write_in(
    held: Held,
    txn: WriteTransaction,
    commits: Option<&Commits<'_>>,
) -> Result<WriteTransaction, StoreError> {
    let Held {
        dir,
        items,
        index,
        superseded,
        ..
    } = held;
    let share = commits.map_or(usize::MAX, |c| c.bytes);
    // The table and the index are written side by side (redb lets two threads write two
    // tables of one transaction), each fed by a merge on a thread of its own: writing
    // pages took two thirds of a load's last step, merging the rest. So the index's
    // writer cannot yet know which of its entries a row replaced within the load, or a
    // stored row replaced by the load, leaves behind: the table's writer lists them,
    // and they go once both are written.
    let (txn, superseded, stale) = std::thread::scope(|scope| {
        let (rows, table_merge) = table_rows_on(scope, items, superseded);
        let (entries, index_merge) = merged_on(scope, move |send| {
            let mut merge = index.merge(|_| Ok(()))?;
            while let Some(entry) = merge.next()? {
                if !send(entry) {
                    break;
                }
            }
            Ok(())
        });
        let (mut rows, mut entries) = (rows.peekable(), entries.map(IndexRecord).peekable());
        let mut txn = txn;
        let mut stale = Vec::new();
        let written = loop {
            let step = write_share(
                &txn,
                share_of(&mut rows, share),
                share_of(&mut entries, share),
                &mut stale,
            );
            if let Err(e) = step {
                break Err(e);
            }
            if rows.peek().is_none() && entries.peek().is_none() {
                break Ok(txn);
            }
            if let Some(commits) = commits {
                txn = match commits.next(txn) {
                    Ok(next) => next,
                    Err(e) => break Err(e),
                };
            }
        };
        // The merges end once their receivers go (a writer that failed leaves records
        // unread), and both are joined before either result is looked at; a merge's
        // failure comes first: it ends the records early, which the writers cannot tell
        // from their end.
        drop((rows, entries));
        let (table_merged, index_merged) = (joined_merge(table_merge), joined_merge(index_merge));
        let superseded = table_merged?;
        index_merged?;
        written.map(|txn| (txn, superseded, stale))
    })?;
    // In key order, so the removals walk the index once.
    let left: std::collections::BTreeSet<IndexKey> = superseded.into_iter().chain(stale).collect();
    {
        let mut gsi1 = txn.open_table(GSI1_INDEX).map_err(unavailable)?;
        for (sk, g, pk) in &left {
            gsi1.remove((sk.as_slice(), g.as_slice(), pk.as_slice()))
                .map_err(unavailable)?;
        }
    }
    // The runs' files are no longer needed.
    drop(dir);
    Ok(txn)
}

/// How a load that does not fit the store's write buffer is committed: in transactions of
/// `bytes` of records per table, each committed without a sync, the last with one.
///
/// Why: redb computes the checksums of a transaction's pages at its commit, and takes each
/// page back into its write buffer to do it. A load in one transaction had written most of
/// its pages out long before (the buffer is half the cache), so its commit read every page
/// back and wrote it again: 15 s of a 73 s load of 1,000,000 issues, and the file written to
/// the disk twice. Transactions that fit the buffer have their pages checksummed while they
/// are still in it.
///
/// What it keeps of one transaction: a commit without a sync is not on disk until a later
/// commit with one (or the database's close), so a crash loses all of the load; a failure or
/// a panic restores the savepoint taken before it (see [`EmbeddedLoad::finish`]). Readers in
/// this process may see a load part written while it runs, and nothing else may write the
/// store meanwhile: another writer's commit could slip between two of the load's and sync
/// them, and a failed load's restore would undo it (`seed`, the only caller, runs offline).
pub(super) struct Commits<'db> {
    db: &'db Database,
    bytes: usize,
    /// Whether a transaction was committed: only then is there anything to undo.
    made: std::cell::Cell<bool>,
}

impl Commits<'_> {
    /// Commits `txn` without a sync and begins the next.
    fn next(&self, mut txn: WriteTransaction) -> Result<WriteTransaction, StoreError> {
        txn.set_durability(Durability::None).map_err(unavailable)?;
        txn.commit().map_err(unavailable)?;
        self.made.set(true);
        self.db.begin_write().map_err(unavailable)
    }
}

/// The records of `records` up to `bytes` of them (the one that reaches past it included).
fn share_of<'a, R: AsRef<Shared>>(
    records: &'a mut impl Iterator<Item = R>,
    bytes: usize,
) -> impl Iterator<Item = R> + 'a {
    let mut taken = 0usize;
    std::iter::from_fn(move || {
        if taken >= bytes {
            return None;
        }
        let record = records.next()?;
        taken = taken.saturating_add(record.as_ref().record().len());
        Some(record)
    })
}

/// Writes `rows` into the table and `entries` into the index of `txn`, side by side, and
/// lists in `stale` the index entries of stored rows that a row replaced with one without
/// the same entry.
fn write_share(
    txn: &WriteTransaction,
    rows: impl Iterator<Item = TableRecord>,
    entries: impl Iterator<Item = IndexRecord> + Send,
    stale: &mut Vec<IndexKey>,
) -> Result<(), StoreError> {
    let mut table = txn.open_table(ITEMS).map_err(unavailable)?;
    let mut gsi1 = txn.open_table(GSI1_INDEX).map_err(unavailable)?;
    std::thread::scope(|scope| {
        let indexing = scope.spawn(|| insert_in_order(&mut gsi1, entries.map(Ok), |_, _| Ok(())));
        // Only entries that move are listed: a row whose replacement has the same entry has
        // it written over by the index's writer, so a load over the same data lists none.
        let table_written = insert_in_order(&mut table, rows.map(Ok), |row, old| {
            if let Some(g) = stored_gsi1sk(old)? {
                let row = row.0.record();
                if stored_gsi1sk(row.row())?.as_deref() != Some(g.as_str()) {
                    stale.push(index_key(row, g));
                }
            }
            Ok(())
        });
        let index_written = indexing
            .join()
            .map_err(|_| unavailable("a bulk load's index writer panicked"))?;
        table_written.and(index_written)
    })
}

/// The table's rows, merged from `items` on a thread of `scope`, the last of each key kept.
/// The thread's result is the index entries left behind by rows of the load that a later
/// row of their key replaced (unless the row kept has the same).
fn table_rows_on<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    items: Runs,
    superseded: HashSet<IndexKey>,
) -> (
    impl Iterator<Item = TableRecord> + Send + 'scope,
    std::thread::ScopedJoinHandle<'scope, Result<HashSet<IndexKey>, StoreError>>,
) {
    let (rows, merging) = merged_on(scope, move |send| {
        // Written by the merge as it drops rows, and read as it hands over the row kept.
        let superseded = RefCell::new(superseded);
        let mut rows = items.merge(|old| supersede(&mut *superseded.borrow_mut(), old))?;
        while let Some(row) = rows.next()? {
            // The row that stays keeps its index entry, whatever the rows of its key it
            // replaced (dropped before it is handed over) had.
            let mut superseded = superseded.borrow_mut();
            if !superseded.is_empty() {
                if let Some(g) = stored_gsi1sk(row.row())? {
                    superseded.remove(&index_key(row, g));
                }
            }
            if !send(row) {
                break;
            }
        }
        drop(rows);
        Ok(superseded.into_inner())
    });
    (rows.map(TableRecord), merging)
}

/// Records a merge hands to the writer at a time, and chunks it may have ready ahead of it.
const MERGE_CHUNK: usize = 1024;
const MERGE_AHEAD: usize = 8;

/// The bytes a chunk's records take to begin with.
const MERGE_CHUNK_BYTES: usize = 256 * 1024;

/// Runs `merge` on a thread of `scope`: it hands each record to the function it is given,
/// which says whether the receiving end still wants them. Returns the records, in the order
/// handed over (copied into chunks that go through a bounded channel), and the thread, whose
/// result says whether the merge ended, or failed.
fn merged_on<'scope, R: Send + 'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    merge: impl FnOnce(&mut dyn FnMut(Record<'_>) -> bool) -> Result<R, StoreError> + Send + 'scope,
) -> (
    impl Iterator<Item = Shared> + 'scope,
    std::thread::ScopedJoinHandle<'scope, Result<R, StoreError>>,
) {
    let (send, receive) = std::sync::mpsc::sync_channel::<Records>(MERGE_AHEAD);
    let merging = scope.spawn(move || {
        let chunk = || Records::with_capacity(MERGE_CHUNK, MERGE_CHUNK_BYTES);
        let mut records = chunk();
        let mut open = true;
        let result = merge(&mut |record| {
            records.push_record(record);
            if records.len() == MERGE_CHUNK {
                open = send.send(std::mem::replace(&mut records, chunk())).is_ok();
            }
            open
        });
        // A failed merge's rows may be written in part (the chunks sent so far): what keeps
        // them out of the file is that the writers' callers check the merge's result before
        // theirs, and fail the load, whose transactions are then undone (see `Commits`).
        if result.is_ok() && !records.is_empty() {
            let _ = send.send(records);
        }
        result
    });
    let records = receive.into_iter().flat_map(|chunk| {
        let chunk = Arc::new(chunk);
        (0..chunk.len()).map(move |at| Shared {
            chunk: Arc::clone(&chunk),
            at,
        })
    });
    (records, merging)
}

fn joined_merge<R>(
    merging: std::thread::ScopedJoinHandle<'_, Result<R, StoreError>>,
) -> Result<R, StoreError> {
    merging
        .join()
        .map_err(|_| unavailable("a bulk load's merge panicked"))?
}

/// Batches a load prepares at once, at most: each holds its items and their records, about
/// 30 MB for 10,000 issues × 8 fields.
const MAX_PREPARING: usize = 4;

impl EmbeddedLoad {
    /// A load into `db`, whose file is `file` and whose cache holds `cache` bytes.
    pub(super) fn new(db: Arc<Database>, file: &Path, cache: usize) -> EmbeddedLoad {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        EmbeddedLoad {
            db,
            file: file.to_owned(),
            preparing: VecDeque::new(),
            // One batch more than the cores: one is ready to add while the others are made.
            width: (cores + 1).clamp(2, MAX_PREPARING),
            runs: Some(LoadRuns::beside(file)),
            pending: None,
            commit_bytes: (cache / COMMIT_SHARE_OF_CACHE).max(1),
        }
    }

    /// Whether a step failed (or was cancelled), which loses the load.
    fn failed(&self) -> bool {
        self.runs.is_none() && self.pending.is_none()
    }

    /// What the load holds, once the batch being added is in.
    async fn settled(&mut self) -> Result<LoadRuns, StoreError> {
        if let Some(pending) = self.pending.take() {
            return joined(pending).await?;
        }
        self.runs.take().ok_or_else(failed_earlier)
    }

    /// Hands a batch's preparation to the blocking pool once fewer than
    /// [`EmbeddedLoad::width`] are being prepared, and returns.
    async fn prepare_in_pool(
        &mut self,
        prepare: impl FnOnce() -> Result<Sorted, StoreError> + Send + 'static,
    ) -> Result<(), StoreError> {
        while self.preparing.len() >= self.width {
            self.add_oldest().await?;
        }
        if self.failed() {
            return Err(failed_earlier());
        }
        self.preparing
            .push_back(tokio::task::spawn_blocking(prepare));
        Ok(())
    }

    /// Adds the oldest batch being prepared to the load, once it is ready and the batch
    /// before it is in, on the blocking pool. A step that failed fails the load whole: a
    /// load missing a batch is not what its caller asked for. Dropping the tasks' handles
    /// detaches them; the runs go when they end.
    async fn add_oldest(&mut self) -> Result<(), StoreError> {
        if self.failed() {
            self.preparing.clear();
            return Err(failed_earlier());
        }
        let Some(task) = self.preparing.pop_front() else {
            return Ok(());
        };
        // The load counts as failed until the step is done: a call cancelled while it waits
        // (a timeout, a `select!`) leaves it so, rather than carry on without the batch.
        let (runs, pending) = (self.runs.take(), self.pending.take());
        let step = async move {
            let batch = joined(task).await??;
            let mut runs = match pending {
                Some(pending) => joined(pending).await??,
                None => runs.ok_or_else(failed_earlier)?,
            };
            Ok::<_, StoreError>(tokio::task::spawn_blocking(move || {
                runs.add(batch)?;
                Ok(runs)
            }))
        };
        match step.await {
            Ok(adding) => {
                self.pending = Some(adding);
                Ok(())
            }
            Err(e) => {
                self.preparing.clear();
                Err(e)
            }
        }
    }
}

/// Returns the database to `savepoint`, after a load failed part written (see [`Commits`]).
///
/// Should that fail too (or panic), the load's commits stay in this process's database, and
/// closing it would put them on disk (redb syncs what it holds at close). So it is never
/// closed: the handle is leaked, and the next open of the file finds the last commit that
/// was synced, the one before the load. The error returned says that this process must not
/// write the store again (a later commit with a sync would keep the part-written load).
fn restore(db: &Arc<Database>, savepoint: &redb::Savepoint) -> Result<(), StoreError> {
    let restored = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut txn = db.begin_write().map_err(unavailable)?;
        txn.restore_savepoint(savepoint).map_err(unavailable)?;
        txn.commit().map_err(unavailable)
    }))
    .unwrap_or_else(|_| Err(unavailable("the restore panicked")));
    restored.map_err(|e| {
        std::mem::forget(Arc::clone(db));
        tracing::error!(error = %e, "a failed bulk load could not be undone");
        unavailable(format!(
            "a bulk load failed part written and could not be undone ({e}): stop this process \
             without writing to the store again; the file, opened again, holds what it held \
             before the load"
        ))
    })
}

/// A blocking task's result; a task that panicked or was cancelled is an error.
async fn joined<T>(task: tokio::task::JoinHandle<T>) -> Result<T, StoreError> {
    task.await
        .map_err(|e| unavailable(format!("bulk load task failed: {e}")))
}

fn failed_earlier() -> StoreError {
    unavailable("the bulk load failed earlier, and holds nothing")
}

#[async_trait]
impl BulkLoad for EmbeddedLoad {
    /// Hands the batch to the blocking pool to be validated and sorted, once fewer than
    /// [`EmbeddedLoad::width`] batches are being prepared, and returns: the loader makes its
    /// next batch meanwhile. A batch that is refused, or a step that fails, fails this call
    /// or a later one (`finish` at the latest), and the load with it.
    async fn put(&mut self, items: Vec<Item>) -> Result<(), StoreError> {
        self.prepare_in_pool(move || prepare(&items)).await
    }

    /// As [`EmbeddedLoad::put`], the items made and laid out on the blocking pool.
    async fn put_written(&mut self, write: WriteItems) -> Result<(), StoreError> {
        self.prepare_in_pool(move || prepare_written(write)).await
    }

    async fn finish(mut self: Box<Self>) -> Result<(), StoreError> {
        while !self.preparing.is_empty() {
            self.add_oldest().await?;
        }
        let runs = self.settled().await?;
        let (db, file, bytes) = (Arc::clone(&self.db), self.file.clone(), self.commit_bytes);
        let write = tokio::task::spawn_blocking(move || {
            // The last spill ends before the first transaction starts, not inside it.
            let held = runs.held()?;
            let txn = db.begin_write().map_err(unavailable)?;
            // What a failure returns to: the commits before it are in this process's
            // database, and a later commit with a sync, or closing the database, would put
            // them on disk.
            let before = txn.ephemeral_savepoint().map_err(unavailable)?;
            let count = LoadCount::begin(&txn, &file)?;
            let commits = Commits {
                db: &db,
                bytes,
                made: std::cell::Cell::new(false),
            };
            // A panic is undone too: the commits would otherwise outlive it.
            let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                write_in(held, txn, Some(&commits)).and_then(|mut txn| {
                    txn.set_durability(Durability::Immediate)
                        .map_err(unavailable)?;
                    txn.commit().map_err(unavailable)
                })
            }));
            // Nothing to undo unless a transaction was committed.
            let undone = || {
                if commits.made.get() {
                    restore(&db, &before)
                } else {
                    Ok(())
                }
            };
            match written {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    return Err(match undone() {
                        Ok(()) => e,
                        Err(not_undone) => unavailable(format!("{e}; {not_undone}")),
                    })
                }
                Err(panic) => {
                    let _ = undone();
                    std::panic::resume_unwind(panic);
                }
            }
            // A live savepoint keeps redb tracking pages, and the pages the load freed.
            drop(before);
            count.committed(&db, &file);
            Ok(())
        });
        joined(write).await?
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;
    use redb::{ReadableDatabase, ReadableTable};

    use super::*;
    use crate::store::embedded::table::{decode, key_str, stored_row};
    use crate::store::embedded::tests::{item, s, store, with};
    use crate::store::embedded::EmbeddedStore;
    use crate::store::row::RowRef;

    /// An item of a small key space, so loads replace items, and with a `GSI1SK` of a small
    /// set (or none), so replacements move, keep or drop index entries; `v` tells versions
    /// apart.
    fn an_item() -> impl Strategy<Value = Item> {
        (0..4u8, 0..2u8, prop::option::of(0..3u8), any::<u16>()).prop_map(|(p, k, g, v)| {
            let g = g.map(|g| format!("g{g}"));
            with(
                item(&format!("p{p}"), &format!("s{k}"), g.as_deref()),
                "V",
                s(&v.to_string()),
            )
        })
    }

    /// Every row of the table by `(PK, SK)`, and of the index by `(SK, GSI1SK, PK)`.
    type Contents = (
        BTreeMap<(String, String), Item>,
        BTreeMap<(String, String, String), Item>,
    );

    /// Every row of both tables, read back under its key.
    fn contents(store: &EmbeddedStore) -> Contents {
        let txn = store.db.begin_read().unwrap();
        let mut table = BTreeMap::new();
        for entry in txn.open_table(ITEMS).unwrap().iter().unwrap() {
            let (key, value) = entry.unwrap();
            let (pk, sk) = key.value();
            let (pk, sk) = (key_str(pk).unwrap(), key_str(sk).unwrap());
            let (_, attributes) = stored_row(value.value()).unwrap();
            let row = RowRef {
                pk,
                sk,
                gsi1sk: None,
                attributes,
            };
            table.insert((pk.to_owned(), sk.to_owned()), decode(row).unwrap());
        }
        let mut index = BTreeMap::new();
        for entry in txn.open_table(GSI1_INDEX).unwrap().iter().unwrap() {
            let (key, value) = entry.unwrap();
            let (sk, g, pk) = key.value();
            let (sk, g, pk) = (
                key_str(sk).unwrap(),
                key_str(g).unwrap(),
                key_str(pk).unwrap(),
            );
            let (_, attributes) = stored_row(value.value()).unwrap();
            let row = RowRef {
                pk,
                sk,
                gsi1sk: Some(g),
                attributes,
            };
            index.insert(
                (sk.to_owned(), g.to_owned(), pk.to_owned()),
                decode(row).unwrap(),
            );
        }
        (table, index)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// A load over stored items, in batches, spilling after any number of bytes, leaves
        /// exactly what writing every item in order leaves: the last item of each key, and
        /// an index entry for each item that has a `GSI1SK`, none for the versions replaced.
        #[test]
        fn a_load_leaves_what_writing_in_order_leaves(
            before in prop::collection::vec(an_item(), 0..8),
            batches in prop::collection::vec(prop::collection::vec(an_item(), 0..8), 0..5),
            run_bytes in prop_oneof![Just(1usize), Just(200), Just(usize::MAX)],
            commit_bytes in prop_oneof![Just(1usize), Just(150), Just(usize::MAX)],
            max_runs in prop_oneof![Just(0usize), Just(2), Just(usize::MAX)],
        ) {
            let runtime = tokio::runtime::Runtime::new().unwrap();
            runtime.block_on(async {
                let (_dir, store) = store().await;
                store.put_many(before.clone()).await.unwrap();
                let mut load = EmbeddedLoad::new(Arc::clone(&store.db), &store.path, store.cache);
                if let Some(runs) = load.runs.as_mut() {
                    runs.spill_after(run_bytes, max_runs);
                }
                load.commit_bytes = commit_bytes;
                for batch in &batches {
                    load.put(batch.clone()).await.unwrap();
                }
                Box::new(load).finish().await.unwrap();

                let mut model: BTreeMap<(String, String), Item> = BTreeMap::new();
                for it in before.iter().chain(batches.iter().flatten()) {
                    let key = |name: &str| match &it[name] { crate::store::AttributeValue::S(s) => s.clone(), _ => unreachable!() };
                    model.insert((key("PK"), key("SK")), it.clone());
                }
                let index: BTreeMap<(String, String, String), Item> = model
                    .iter()
                    .filter_map(|((pk, sk), it)| match it.get("GSI1SK") {
                        Some(crate::store::AttributeValue::S(g)) => Some(((sk.clone(), g.clone(), pk.clone()), it.clone())),
                        _ => None,
                    })
                    .collect();
                let (table_read, index_read) = contents(&store);
                assert_eq!(table_read, model);
                assert_eq!(index_read, index);
                // The runs' directory went with the load.
                let leftovers = std::fs::read_dir(store.path.parent().unwrap())
                    .unwrap()
                    .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().contains(crate::store::embedded::runs::SPILL_SUFFIX))
                    .count();
                assert_eq!(leftovers, 0);
            });
        }
    }

    /// A merge hands every record over in order, across many chunks; one that fails mid-way
    /// says so (after only records from before its failure), one whose receiver stops ends,
    /// and one that panics is an error, none of them hanging.
    #[test]
    fn merged_on_hands_over_in_order_and_ends_on_every_path() {
        let n = MERGE_CHUNK * (MERGE_AHEAD + 3) + 7;
        // Record `i`: its first part `i`, and a row of `row_of(i)`, some longer than a
        // chunk's first block, so that chunks grow.
        let row_of = |i: usize| {
            let len = if i % 1000 == 999 {
                MERGE_CHUNK_BYTES + 1
            } else {
                i % 50
            };
            vec![7; len]
        };
        let send_numbered = |send: &mut dyn FnMut(Record<'_>) -> bool, i: usize| {
            let mut one = Records::default();
            one.push([&i.to_be_bytes(), b"s", b""], &row_of(i));
            send(one.get(0))
        };
        let number = |shared: Shared| -> usize {
            let record = shared.record();
            let i = usize::from_be_bytes(record.part(0).try_into().unwrap());
            assert_eq!(record.part(1), b"s");
            assert_eq!(record.row(), row_of(i));
            i
        };
        let all: Vec<usize> = std::thread::scope(|scope| {
            let (records, merging) = merged_on(scope, move |send| {
                for i in 0..n {
                    if !send_numbered(send, i) {
                        break;
                    }
                }
                Ok(())
            });
            let all = records.map(number).collect();
            joined_merge(merging).unwrap();
            all
        });
        assert_eq!(all, (0..n).collect::<Vec<_>>());

        let (got, failed) = std::thread::scope(|scope| {
            let (records, merging) = merged_on(scope, move |send| {
                for i in 0..n {
                    if i == n / 2 {
                        return Err(StoreError::Invalid("broken run".into()));
                    }
                    send_numbered(send, i);
                }
                Ok(())
            });
            let got: Vec<usize> = records.map(number).collect();
            (got, joined_merge(merging))
        });
        assert!(matches!(failed, Err(StoreError::Invalid(_))), "{failed:?}");
        // Every full chunk from before the failure, and nothing after it.
        assert_eq!(
            got,
            (0..n / 2 / MERGE_CHUNK * MERGE_CHUNK).collect::<Vec<_>>()
        );

        let stopped = std::thread::scope(|scope| {
            let (records, merging) = merged_on(scope, move |send| {
                // Bounded, so a merge that never heard the receiver stop fails the test
                // rather than hang it.
                let mut sent = 0;
                while sent < 2 * n && send_numbered(send, sent) {
                    sent += 1;
                }
                Ok(sent)
            });
            assert_eq!(records.take(10).count(), 10);
            joined_merge(merging)
        });
        assert!(stopped.unwrap() < n);

        let panicked = std::thread::scope(|scope| {
            let (records, merging) = merged_on(
                scope,
                |_: &mut dyn FnMut(Record<'_>) -> bool| -> Result<(), StoreError> {
                    panic!("a merge that panics")
                },
            );
            assert_eq!(records.count(), 0);
            joined_merge(merging)
        });
        assert!(matches!(panicked, Err(StoreError::Unavailable(_))));
    }

    /// Every key and row of both tables, as stored.
    fn stored(db: &Database) -> Vec<(Vec<u8>, Vec<u8>)> {
        let txn = db.begin_read().unwrap();
        let table = txn.open_table(ITEMS).unwrap();
        let index = txn.open_table(GSI1_INDEX).unwrap();
        let rows = table.iter().unwrap().map(|entry| {
            let (key, row) = entry.unwrap();
            let (pk, sk) = key.value();
            ([pk, b"/", sk].concat(), row.value().to_vec())
        });
        let entries = index.iter().unwrap().map(|entry| {
            let (key, row) = entry.unwrap();
            let (sk, g, pk) = key.value();
            ([sk, b"/", g, b"/", pk].concat(), row.value().to_vec())
        });
        rows.chain(entries).collect()
    }

    /// A load that fails after some of its transactions were committed leaves the store as
    /// it was, in this process and once the file is opened again: the commits made without a
    /// sync are undone.
    #[tokio::test]
    async fn a_load_that_fails_part_written_leaves_the_store_as_it_was() {
        let (dir, store) = store().await;
        store
            .put_many(vec![item("a", "s", Some("g")), item("z", "s", None)])
            .await
            .unwrap();
        // A stored row that is not a row: the load's writer fails when it replaces it, after
        // the rows before it in key order were committed, a few to a transaction.
        {
            let txn = store.db.begin_write().unwrap();
            txn.open_table(ITEMS)
                .unwrap()
                .insert((b"q".as_slice(), b"s".as_slice()), b"not a row".as_slice())
                .unwrap();
            txn.commit().unwrap();
        }
        let before = stored(&store.db);
        let mut load = EmbeddedLoad::new(Arc::clone(&store.db), &store.path, store.cache);
        load.commit_bytes = 100;
        let mut batch: Vec<Item> = (0..50)
            .map(|i| item(&format!("p{i:02}"), "s", Some("g")))
            .collect();
        batch.push(item("q", "s", Some("g")));
        load.put(batch).await.unwrap();
        let failed = Box::new(load).finish().await;
        assert!(failed.is_err(), "{failed:?}");
        assert_eq!(stored(&store.db), before);
        drop(store);
        let store = EmbeddedStore::open(&dir.path().join("data"), "gridgate").unwrap();
        assert_eq!(stored(&store.db), before);
    }

    /// A `put` cancelled while it waits for a batch leaves the load failed, rather than
    /// carry on without the batch; one that was not cancelled leaves it going.
    #[tokio::test]
    async fn a_cancelled_put_fails_the_load() {
        use futures::FutureExt;
        let (_dir, store) = store().await;
        let mut load = EmbeddedLoad::new(Arc::clone(&store.db), &store.path, store.cache);
        // Batches large enough that preparing them takes a while.
        let batch = |k: usize| -> Vec<Item> {
            (0..5_000)
                .map(|i| item(&format!("p{k}-{i}"), "s", Some("g")))
                .collect()
        };
        // Made before, so the calls follow one another closer than a batch is prepared.
        let mut batches: Vec<Vec<Item>> = (0..load.width + 2).map(batch).collect();
        let (last, waiting) = (batches.pop().unwrap(), batches.pop().unwrap());
        for batch in batches {
            load.put(batch).await.unwrap();
        }
        // This call must first wait for the oldest batch: polled once, then dropped.
        let cancelled = load.put(waiting).now_or_never().is_none();
        let later = load.put(last).await;
        let finished = Box::new(load).finish().await;
        if cancelled {
            assert!(
                matches!(&later, Err(StoreError::Unavailable(m)) if m.contains("failed earlier")),
                "{later:?}"
            );
            assert!(finished.is_err());
            let (table, _) = contents(&store);
            assert!(table.is_empty());
        } else {
            later.unwrap();
            finished.unwrap();
        }
    }

    /// The first failure among `results` is `first`'s, and every call after it says the
    /// load failed earlier.
    fn fails_then_failed_earlier(
        results: &[Result<(), StoreError>],
        first: impl Fn(&StoreError) -> bool,
    ) {
        let failed = results.iter().position(Result::is_err).unwrap();
        assert!(results[failed].as_ref().is_err_and(first), "{results:?}");
        for later in &results[failed + 1..] {
            assert!(
                matches!(later, Err(StoreError::Unavailable(m)) if m.contains("failed earlier")),
                "{results:?}"
            );
        }
    }

    /// Puts six batches of an item each into `load`, spilling after each, then finishes it:
    /// every call's result.
    async fn spilling_each_batch(mut load: EmbeddedLoad) -> Vec<Result<(), StoreError>> {
        load.runs.as_mut().unwrap().spill_after(1, usize::MAX);
        let mut results = Vec::new();
        for pk in ["a", "b", "c", "d", "e", "f"] {
            results.push(load.put(vec![item(pk, "s", None)]).await);
        }
        results.push(Box::new(load).finish().await);
        results
    }

    /// A load whose batch is refused, or whose run cannot be written (by the load, or by a
    /// spill's thread), fails whole: later calls say so rather than carry on without it, and
    /// nothing is written, and the runs' directory goes with the load.
    #[tokio::test]
    async fn a_failed_load_stays_failed_and_its_runs_go() {
        let (_dir, store) = store().await;
        // An item without SK is refused as a write would refuse it.
        let mut keyless = item("b", "s", None);
        keyless.remove("SK");
        let mut load = EmbeddedLoad::new(Arc::clone(&store.db), &store.path, store.cache);
        load.put(vec![item("a", "s", None)]).await.unwrap();
        // The batch is refused by this call or a later one (it is validated on the blocking
        // pool, beside the next batches); every call after that says the load failed.
        let mut results = vec![
            load.put(vec![keyless]).await,
            load.put(vec![item("c", "s", None)]).await,
        ];
        for _ in 0..MAX_PREPARING {
            results.push(load.put(vec![item("d", "s", None)]).await);
        }
        results.push(Box::new(load).finish().await);
        fails_then_failed_earlier(&results, |e| matches!(e, StoreError::Invalid(_)));

        // A run that cannot be written (a file where its directory goes) fails the task that
        // writes it, and the load with it.
        let load = EmbeddedLoad::new(Arc::clone(&store.db), &store.path, store.cache);
        let blocked = load.runs.as_ref().unwrap().dir().to_owned();
        std::fs::write(&blocked, b"in the way").unwrap();
        let results = spilling_each_batch(load).await;
        fails_then_failed_earlier(
            &results,
            |e| matches!(e, StoreError::Unavailable(m) if m.contains("bulk load runs")),
        );
        let _ = std::fs::remove_file(&blocked);
        let (table, _) = contents(&store);
        assert!(table.is_empty());

        // A run file that cannot be written fails the spill's thread, which fails the load
        // when it is next looked at: at the next batch once it ended, at the next spill, or
        // at `finish`. Here the second
        // spill's index run is blocked (a directory where it goes), so the first lands.
        let load = EmbeddedLoad::new(Arc::clone(&store.db), &store.path, store.cache);
        let runs = load.runs.as_ref().unwrap().dir().to_owned();
        std::fs::create_dir_all(runs.join("index-1")).unwrap();
        let results = spilling_each_batch(load).await;
        fails_then_failed_earlier(
            &results,
            |e| matches!(e, StoreError::Unavailable(m) if m.contains("index-1")),
        );
        let (table, _) = contents(&store);
        assert!(table.is_empty());
        assert!(!runs.exists(), "the runs go with the load");
    }
}
