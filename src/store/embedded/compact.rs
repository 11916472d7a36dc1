//! Compacting the embedded store's file (`gridgate compact`), and measuring what the file
//! holds against its size: the items as DynamoDB sizes them and their index copies, beside the
//! file's apparent size and the blocks it takes on disk.
//!
//! redb writes copy-on-write: every transaction writes new pages and frees the old ones, which
//! later transactions reuse, but the file never shrinks by itself. Compaction moves the live
//! pages to the front of the file and truncates it. It needs the file to itself, so it runs
//! with the server stopped (redb locks the file, and a running server is reported as such).

use std::path::{Path, PathBuf};

use redb::{Database, DatabaseError, ReadableDatabase, ReadableTable};

use super::cache_bytes;
use super::table::{sized_row_text, unavailable, upgrade, GSI1_INDEX, ITEMS};
use crate::store::StoreError;

/// The most compaction passes one run makes; redb reports when none would gain more, which
/// takes a few passes.
const MAX_PASSES: u32 = 64;

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
        let (size, _) = sized_row_text(row.value())?;
        let (pk, sk) = key.value();
        contents.items += 1;
        contents.item_bytes += size as u64;
        contents.stored_bytes += (pk.len() + sk.len() + row.value().len()) as u64;
    }
    let index = txn.open_table(GSI1_INDEX).map_err(unavailable)?;
    for entry in index.iter().map_err(unavailable)? {
        let (key, row) = entry.map_err(unavailable)?;
        let (size, _) = sized_row_text(row.value())?;
        let (sk, gsi1sk, pk) = key.value();
        contents.index_rows += 1;
        contents.index_bytes += size as u64;
        contents.stored_bytes += (sk.len() + gsi1sk.len() + pk.len() + row.value().len()) as u64;
    }
    Ok(contents)
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
    let mut db = Database::builder()
        .set_cache_size(cache_bytes(cache_mb))
        .open(&path)
        .map_err(|e| match e {
            DatabaseError::DatabaseAlreadyOpen => StoreError::Unavailable(format!(
                "{} is open in another process (a running server?): stop it, then compact",
                path.display()
            )),
            other => StoreError::Unavailable(format!("cannot open {}: {other}", path.display())),
        })?;
    upgrade(&db)?;
    let contents = contents(&db)?;
    let mut passes = 0;
    while passes < MAX_PASSES && db.compact().map_err(unavailable)? {
        passes += 1;
    }
    drop(db);
    Ok(Compaction {
        before,
        after: file_size(&path)?,
        contents,
        passes,
    })
}
