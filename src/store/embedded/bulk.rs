//! Bulk loads into the embedded store ([`Store::bulk_load`](crate::store::Store::bulk_load),
//! what `seed --synthetic` writes through): batches are validated as they come and kept as
//! sorted runs, spilled to files beside the database past [`RUN_BYTES`]; `finish` writes the
//! whole load in one write transaction, merging the runs into the table and then into the
//! index, each in key order, each once.
//!
//! Why not a transaction per batch: a batch's index entries (a cell's value, an issue's name)
//! are spread over the whole index, so every batch rewrote most of the index's pages, and the
//! load slowed as the file grew (1,000,000 issues took 341 s, against 24 s for 100,000). A
//! merge writes each table front to back as full leaves, so the load costs what the data
//! does. The load is one transaction, so it is written whole or not at all.

use std::cell::RefCell;
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashSet};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use redb::{Database, WriteTransaction};

use super::table::{stored_gsi1sk, unavailable, GSI1_INDEX, ITEMS};
use super::validate::ItemRow;
use super::write::{insert_in_order, Entry};
use crate::store::{BulkLoad, Item, StoreError};

/// The bytes of rows and keys a load keeps in memory before it merges them into a run file:
/// a load of 100,000 issues × 8 fields (306 MB) is written from memory, one of 1,000,000
/// from six runs.
const RUN_BYTES: usize = 512 * 1024 * 1024;

/// One row of a run: its key's parts (two for the table, three for the index) and its row,
/// in one allocation.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Record {
    bytes: Box<[u8]>,
    /// Where the key's parts end in `bytes`; the row follows the last.
    ends: [u32; 3],
}

impl Record {
    fn new(parts: [&[u8]; 3], row: &[u8]) -> Record {
        let mut bytes =
            Vec::with_capacity(parts.iter().map(|p| p.len()).sum::<usize>() + row.len());
        let mut ends = [0; 3];
        for (end, part) in ends.iter_mut().zip(parts) {
            bytes.extend_from_slice(part);
            *end = bytes.len() as u32;
        }
        bytes.extend_from_slice(row);
        Record {
            bytes: bytes.into_boxed_slice(),
            ends,
        }
    }

    fn part(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.bytes[start..self.ends[i] as usize]
    }

    /// The key's parts, in the order redb compares a tuple key's elements.
    fn key(&self) -> (&[u8], &[u8], &[u8]) {
        (self.part(0), self.part(1), self.part(2))
    }

    fn row(&self) -> &[u8] {
        &self.bytes[self.ends[2] as usize..]
    }

    fn write(&self, out: &mut impl Write) -> std::io::Result<()> {
        for end in self.ends {
            out.write_all(&end.to_le_bytes())?;
        }
        out.write_all(&(self.bytes.len() as u32).to_le_bytes())?;
        out.write_all(&self.bytes)
    }

    /// The next record of a run file, `None` at its end.
    fn read(input: &mut impl Read) -> std::io::Result<Option<Record>> {
        let mut header = [0u8; 16];
        // The end of the run only between records: a record cut short is an error.
        match input.read_exact(&mut header[..1]) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(e),
        }
        input.read_exact(&mut header[1..])?;
        let word =
            |i: usize| u32::from_le_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]);
        let ends = [word(0), word(4), word(8)];
        // A record is one row and its key: never near this, unless the file is damaged.
        const MAX_RECORD: u32 = 64 * 1024 * 1024;
        if word(12) > MAX_RECORD {
            return Err(std::io::Error::other("a run record longer than any row"));
        }
        let mut bytes = vec![0; word(12) as usize];
        input.read_exact(&mut bytes)?;
        if ends[0] > ends[1] || ends[1] > ends[2] || ends[2] as usize > bytes.len() {
            return Err(std::io::Error::other(
                "a run record's key is past its bytes",
            ));
        }
        Ok(Some(Record {
            bytes: bytes.into_boxed_slice(),
            ends,
        }))
    }
}

/// A table row of the load.
struct TableRecord(Record);

impl Entry for TableRecord {
    type Key = (&'static [u8], &'static [u8]);
    fn key(&self) -> (&[u8], &[u8]) {
        (self.0.part(0), self.0.part(1))
    }
    fn row(&self) -> &[u8] {
        self.0.row()
    }
}

/// An index entry of the load.
struct IndexRecord(Record);

impl Entry for IndexRecord {
    type Key = (&'static [u8], &'static [u8], &'static [u8]);
    fn key(&self) -> (&[u8], &[u8], &[u8]) {
        self.0.key()
    }
    fn row(&self) -> &[u8] {
        self.0.row()
    }
}

/// The sorted runs of one table: files spilled so far, then the batches not yet spilled,
/// each sorted, in the order they came.
#[derive(Default)]
struct Runs {
    files: Vec<PathBuf>,
    memory: Vec<Vec<Record>>,
}

/// Sorts a batch's rows by key, the last of each key kept (as written in order); the others
/// are handed to `dropped`.
fn sorted(
    batch: Vec<Record>,
    mut dropped: impl FnMut(&Record) -> Dropped,
) -> Result<Vec<Record>, StoreError> {
    // Rows of one key latest first, by their place in the batch: an unstable sort, faster
    // than a stable one, still keeps the last.
    let mut batch: Vec<(usize, Record)> = batch.into_iter().enumerate().collect();
    batch.sort_unstable_by(|(i, a), (j, b)| a.key().cmp(&b.key()).then(j.cmp(i)));
    let mut kept: Vec<Record> = Vec::with_capacity(batch.len());
    for (_, record) in batch {
        match kept.last() {
            Some(last) if last.key() == record.key() => dropped(&record)?,
            _ => kept.push(record),
        }
    }
    Ok(kept)
}

/// What a callback for a row dropped in favour of a later one gives.
type Dropped = Result<(), StoreError>;

impl Runs {
    /// Merges the batches in memory into one run file at `path`.
    fn spill(&mut self, path: PathBuf, dropped: impl FnMut(&Record) -> Dropped) -> Dropped {
        let io = |e: std::io::Error| unavailable(format!("bulk load run {}: {e}", path.display()));
        let batches = Runs {
            files: Vec::new(),
            memory: std::mem::take(&mut self.memory),
        };
        let mut out = BufWriter::new(File::create(&path).map_err(io)?);
        for record in batches.merge(dropped)? {
            record?.write(&mut out).map_err(io)?;
        }
        out.flush().map_err(io)?;
        self.files.push(path);
        Ok(())
    }

    /// Every run merged in key order: of rows of one key in several runs, the latest run's
    /// (runs come in the order they were written), the others handed to `dropped`.
    fn merge<'d>(
        self,
        dropped: impl FnMut(&Record) -> Dropped + 'd,
    ) -> Result<impl Iterator<Item = Result<Record, StoreError>> + 'd, StoreError> {
        let mut sources: Vec<Source> = Vec::new();
        for path in &self.files {
            let file = File::open(path)
                .map_err(|e| unavailable(format!("bulk load run {}: {e}", path.display())))?;
            sources.push(Source::File(BufReader::with_capacity(1 << 20, file)));
        }
        sources.extend(
            self.memory
                .into_iter()
                .map(|batch| Source::Memory(batch.into_iter())),
        );
        let mut merge = Merge {
            sources,
            heap: BinaryHeap::new(),
            dropped,
        };
        for run in 0..merge.sources.len() {
            merge.refill(run)?;
        }
        Ok(merge)
    }
}

enum Source {
    File(BufReader<File>),
    Memory(std::vec::IntoIter<Record>),
}

impl Source {
    fn next(&mut self) -> Result<Option<Record>, StoreError> {
        match self {
            Source::File(file) => {
                Record::read(file).map_err(|e| unavailable(format!("bulk load run: {e}")))
            }
            Source::Memory(rows) => Ok(rows.next()),
        }
    }
}

/// A row at the head of its run, ordered for a min-heap by key, then latest run first.
struct Head {
    record: Record,
    run: usize,
}

impl Ord for Head {
    fn cmp(&self, other: &Self) -> Ordering {
        self.record
            .key()
            .cmp(&other.record.key())
            .then(other.run.cmp(&self.run))
    }
}

impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Head {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Head {}

struct Merge<D> {
    sources: Vec<Source>,
    heap: BinaryHeap<Reverse<Head>>,
    dropped: D,
}

impl<D: FnMut(&Record) -> Dropped> Merge<D> {
    fn refill(&mut self, run: usize) -> Result<(), StoreError> {
        if let Some(record) = self.sources[run].next()? {
            self.heap.push(Reverse(Head { record, run }));
        }
        Ok(())
    }

    fn next_record(&mut self) -> Result<Option<Record>, StoreError> {
        let Some(Reverse(head)) = self.heap.pop() else {
            return Ok(None);
        };
        self.refill(head.run)?;
        while let Some(Reverse(next)) = self.heap.peek() {
            if next.record.key() != head.record.key() {
                break;
            }
            let Some(Reverse(older)) = self.heap.pop() else {
                break;
            };
            (self.dropped)(&older.record)?;
            self.refill(older.run)?;
        }
        Ok(Some(head.record))
    }
}

impl<D: FnMut(&Record) -> Dropped> Iterator for Merge<D> {
    type Item = Result<Record, StoreError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().transpose()
    }
}

/// A bulk load into the embedded store (see the module's documentation).
pub(super) struct EmbeddedLoad {
    db: Arc<Database>,
    /// What the load holds, or the task that is sorting the last batch into it: a batch is
    /// sorted on the blocking pool while the loader makes the next one. Neither, once a
    /// step failed: the load is then lost, and says so rather than start again empty.
    runs: Option<LoadRuns>,
    pending: Option<tokio::task::JoinHandle<Result<LoadRuns, StoreError>>>,
}

/// The directory a load spills its runs to, beside the database file, removed when the last
/// owner (the load, or a task still writing a run) lets it go.
struct SpillDir(PathBuf);

/// Loads started by this process, to name each one's directory apart.
static LOADS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// What a spill directory's name starts with, after the database file's name: what
/// [`remove_leftover_runs`] looks for.
const SPILL_SUFFIX: &str = ".load-";

impl SpillDir {
    fn beside(file: &Path) -> SpillDir {
        let n = LOADS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut dir = file.as_os_str().to_owned();
        dir.push(format!("{SPILL_SUFFIX}{}-{n}", std::process::id()));
        SpillDir(dir.into())
    }
}

impl Drop for SpillDir {
    fn drop(&mut self) {
        // Nothing may be left to do about a failure here; a directory left behind is removed
        // the next time the store opens (see `remove_leftover_runs`).
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Removes the run directories of loads that never finished (a crash, an interrupt) beside
/// `file`. Only the process that holds redb's lock on the file loads into it, so none of them
/// is in use when the store opens.
pub(super) fn remove_leftover_runs(file: &Path) {
    let (Some(dir), Some(name)) = (file.parent(), file.file_name()) else {
        return;
    };
    let prefix = format!("{}{SPILL_SUFFIX}", name.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    }) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            tracing::info!(dir = %entry.path().display(), "removing the runs of an unfinished bulk load");
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// What a load holds until it is written.
pub(super) struct LoadRuns {
    dir: SpillDir,
    items: Runs,
    index: Runs,
    /// Bytes of rows in memory, and how many it holds before it spills them.
    held: usize,
    run_bytes: usize,
    /// Index entries of rows a later row of the same key replaced within the load: not
    /// written, unless the row that stays has the same entry.
    superseded: HashSet<IndexKey>,
}

/// An index entry's key parts, `(SK, GSI1SK, PK)`.
type IndexKey = (Vec<u8>, Vec<u8>, Vec<u8>);

/// A batch as records: the table's rows, the index's entries, and their bytes.
pub(super) type Batch = (Vec<Record>, Vec<Record>, usize);

/// Validates a batch's items into the records of both tables.
pub(super) fn records(items: &[Item]) -> Result<Batch, StoreError> {
    let mut rows = Vec::with_capacity(items.len());
    let mut entries = Vec::with_capacity(items.len());
    let mut bytes = 0;
    for item in items {
        let row = ItemRow::validate(item)?;
        let record = Record::new([row.pk.as_bytes(), row.sk.as_bytes(), b""], &row.bytes);
        bytes += record.bytes.len();
        rows.push(record);
        if let Some(g) = &row.gsi1sk {
            let record = Record::new(
                [row.sk.as_bytes(), g.as_bytes(), row.pk.as_bytes()],
                row.index_bytes(),
            );
            bytes += record.bytes.len();
            entries.push(record);
        }
    }
    Ok((rows, entries, bytes))
}

impl LoadRuns {
    /// An empty load spilling beside the database `file`.
    pub(super) fn beside(file: &Path) -> LoadRuns {
        LoadRuns {
            dir: SpillDir::beside(file),
            items: Runs::default(),
            index: Runs::default(),
            held: 0,
            run_bytes: RUN_BYTES,
            superseded: HashSet::new(),
        }
    }

    /// Adds a batch's records (see [`records`]), sorted, as a run of each table; merges the
    /// runs in memory into a file each once they hold [`RUN_BYTES`].
    pub(super) fn add(&mut self, batch: Batch) -> Result<(), StoreError> {
        let (rows, entries, bytes) = batch;
        self.held += bytes;
        let superseded = &mut self.superseded;
        let rows = sorted(rows, |old| supersede(superseded, old))?;
        self.items.memory.push(rows);
        self.index.memory.push(sorted(entries, |_| Ok(()))?);
        if self.held >= self.run_bytes {
            let dir = &self.dir.0;
            std::fs::create_dir_all(dir)
                .map_err(|e| unavailable(format!("bulk load runs in {}: {e}", dir.display())))?;
            let n = self.items.files.len();
            let superseded = &mut self.superseded;
            self.items.spill(dir.join(format!("items-{n}")), |old| {
                supersede(superseded, old)
            })?;
            self.index
                .spill(dir.join(format!("index-{n}")), |_| Ok(()))?;
            self.held = 0;
        }
        Ok(())
    }

    /// Writes the load in `txn`: the table's runs merged into the table (the index entries of
    /// the stored items they replace removed as they are met, those of rows of the load they
    /// replace noted), then the index's runs merged into the index, less the noted entries.
    pub(super) fn write_in(self, txn: &WriteTransaction) -> Result<(), StoreError> {
        let LoadRuns {
            dir,
            items,
            index,
            superseded,
            ..
        } = self;
        // Written by the merge as it drops rows, and read as it hands over the row kept.
        let superseded = RefCell::new(superseded);
        let mut table = txn.open_table(ITEMS).map_err(unavailable)?;
        let mut gsi1 = txn.open_table(GSI1_INDEX).map_err(unavailable)?;
        {
            let rows = items.merge(|old| supersede(&mut superseded.borrow_mut(), old))?;
            let rows = rows.map(|row| {
                let row = row?;
                // The row that stays keeps its index entry, whatever the rows of its key it
                // replaced (dropped before it is handed over) had.
                let mut superseded = superseded.borrow_mut();
                if !superseded.is_empty() {
                    if let Some(g) = stored_gsi1sk(row.row())? {
                        let key = (row.part(1).to_vec(), g.into_bytes(), row.part(0).to_vec());
                        superseded.remove(&key);
                    }
                }
                Ok(TableRecord(row))
            });
            insert_in_order(&mut table, rows, |row, old| {
                // A stored item replaced: its index entry goes now (the load's own entries,
                // added below, may put it back), so a load over a full table holds no list
                // of them.
                if let Some(g) = stored_gsi1sk(old)? {
                    gsi1.remove((row.0.part(1), g.as_bytes(), row.0.part(0)))
                        .map_err(unavailable)?;
                }
                Ok(())
            })?;
        }
        let superseded = superseded.into_inner();
        let entries = index.merge(|_| Ok(()))?.filter(|entry| match entry {
            Ok(record) if !superseded.is_empty() => {
                let (sk, g, pk) = record.key();
                !superseded.contains(&(sk.to_vec(), g.to_vec(), pk.to_vec()))
            }
            _ => true,
        });
        insert_in_order(
            &mut gsi1,
            entries.map(|r| r.map(IndexRecord)),
            |_, _| Ok(()),
        )?;
        // The runs' files are no longer needed.
        drop(dir);
        Ok(())
    }
}

impl EmbeddedLoad {
    pub(super) fn new(db: Arc<Database>, file: &Path) -> EmbeddedLoad {
        EmbeddedLoad {
            db,
            runs: Some(LoadRuns::beside(file)),
            pending: None,
        }
    }

    /// What the load holds, once the batch being sorted is in.
    async fn settled(&mut self) -> Result<LoadRuns, StoreError> {
        if let Some(pending) = self.pending.take() {
            return pending
                .await
                .map_err(|e| unavailable(format!("bulk load task failed: {e}")))?;
        }
        self.runs
            .take()
            .ok_or_else(|| unavailable("the bulk load failed earlier, and holds nothing"))
    }
}

/// Notes the index entry of a table row replaced within the load.
fn supersede(superseded: &mut HashSet<IndexKey>, old: &Record) -> Dropped {
    if let Some(g) = stored_gsi1sk(old.row())? {
        superseded.insert((old.part(1).to_vec(), g.into_bytes(), old.part(0).to_vec()));
    }
    Ok(())
}

#[async_trait]
impl BulkLoad for EmbeddedLoad {
    /// Validates the batch, then hands it to the blocking pool to be sorted once the batch
    /// before it is, and returns: the loader makes its next batch meanwhile. A step that
    /// fails fails this call or the next, and the load with it.
    async fn put(&mut self, items: Vec<Item>) -> Result<(), StoreError> {
        let batch = match records(&items) {
            Ok(batch) => batch,
            Err(refused) => {
                // A load missing a batch is not what its caller asked for: it fails whole.
                // Dropping the task's handle detaches it; the runs go when it ends.
                self.runs = None;
                self.pending = None;
                return Err(refused);
            }
        };
        drop(items);
        let mut runs = self.settled().await?;
        self.pending = Some(tokio::task::spawn_blocking(move || {
            runs.add(batch)?;
            Ok(runs)
        }));
        Ok(())
    }

    async fn finish(mut self: Box<Self>) -> Result<(), StoreError> {
        let runs = self.settled().await?;
        let db = Arc::clone(&self.db);
        tokio::task::spawn_blocking(move || {
            let txn = db.begin_write().map_err(unavailable)?;
            runs.write_in(&txn)?;
            txn.commit().map_err(unavailable)
        })
        .await
        .map_err(|e| unavailable(format!("bulk load task failed: {e}")))?
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
        ) {
            let runtime = tokio::runtime::Runtime::new().unwrap();
            runtime.block_on(async {
                let (_dir, store) = store().await;
                store.put_many(before.clone()).await.unwrap();
                let mut load = EmbeddedLoad::new(Arc::clone(&store.db), &store.path);
                if let Some(runs) = load.runs.as_mut() {
                    runs.run_bytes = run_bytes;
                }
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
                    .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().contains(SPILL_SUFFIX))
                    .count();
                assert_eq!(leftovers, 0);
            });
        }
    }

    /// A load whose batch is refused, or whose run cannot be written, fails whole: later
    /// calls say so rather than carry on without it, and nothing is written; the directory
    /// of an unfinished load is removed when the store next opens.
    #[tokio::test]
    async fn a_failed_load_stays_failed_and_leftover_runs_are_removed() {
        let (dir, store) = store().await;
        // An item without SK is refused as a write would refuse it.
        let mut keyless = item("b", "s", None);
        keyless.remove("SK");
        let mut load = EmbeddedLoad::new(Arc::clone(&store.db), &store.path);
        load.put(vec![item("a", "s", None)]).await.unwrap();
        assert!(matches!(
            load.put(vec![keyless]).await,
            Err(StoreError::Invalid(_))
        ));
        let later = load.put(vec![item("c", "s", None)]).await;
        assert!(
            matches!(later, Err(StoreError::Unavailable(_))),
            "{later:?}"
        );
        assert!(Box::new(load).finish().await.is_err());

        // A run that cannot be written (a file where its directory goes) fails the task that
        // writes it, and the load with it.
        let mut load = EmbeddedLoad::new(Arc::clone(&store.db), &store.path);
        let blocked = load.runs.as_ref().unwrap().dir.0.clone();
        std::fs::write(&blocked, b"in the way").unwrap();
        load.runs.as_mut().unwrap().run_bytes = 1;
        load.put(vec![item("a", "s", None)]).await.unwrap();
        let failed = load.put(vec![item("b", "s", None)]).await;
        assert!(
            matches!(&failed, Err(StoreError::Unavailable(m)) if m.contains("bulk load runs")),
            "{failed:?}"
        );
        let later = load.put(vec![item("c", "s", None)]).await;
        assert!(
            matches!(&later, Err(StoreError::Unavailable(m)) if m.contains("failed earlier")),
            "{later:?}"
        );
        assert!(Box::new(load).finish().await.is_err());
        let _ = std::fs::remove_file(&blocked);
        let (table, _) = contents(&store);
        assert!(table.is_empty());

        let stale = SpillDir::beside(&store.path);
        std::fs::create_dir_all(stale.0.join("x")).unwrap();
        let path = stale.0.clone();
        std::mem::forget(stale);
        drop(store);
        let _reopened = EmbeddedStore::open(&dir.path().join("data"), "gridgate").unwrap();
        assert!(!path.exists());
    }
}
