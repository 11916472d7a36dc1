//! The sorted runs a bulk load holds until it is written ([`LoadRuns`]): its prepared
//! batches kept in memory, spilled past [`RUN_BYTES`] to files beside the database by a
//! thread of their own, and merged back in key order ([`Runs::merge`]), the latest row of
//! each key kept. [`super::bulk`] writes what they merge into the store, and says why a load
//! is written this way.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::batch::{supersede, Dropped, IndexKey, Record, Records, Sorted};
use super::merge::{Merge, Run, Source};
use super::table::unavailable;
use crate::store::StoreError;

/// The bytes of rows and keys a load keeps in memory before it spills them to a run file
/// per table: a load of 100,000 issues × 8 fields (306 MB) is written from memory, one of
/// 1,000,000 from six files of about 17 runs each.
const RUN_BYTES: usize = 512 * 1024 * 1024;

/// The sorted runs of one table: runs spilled to files so far, then the batches not yet
/// spilled, each sorted, in the order they came.
#[derive(Default)]
pub(super) struct Runs {
    files: Vec<RunFile>,
    memory: Vec<Records>,
}

/// A spill's file: the runs it holds, one after another, each ending where `ends` says.
struct RunFile {
    path: PathBuf,
    ends: Vec<u64>,
}

/// The buffer a run file is written through: a system call per 8 KiB (the std buffers'
/// default) was a tenth of a spill.
const RUN_BUFFER: usize = 1 << 20;

/// The buffer each run in a file is read through, when the final merge reads many.
const RUN_READ_BUFFER: usize = 128 * 1024;

/// The runs a table may have before a spill merges its batches into one run rather than
/// writing each as it is: the last merge then reads at most this many, plus one per later
/// spill (512 MiB each) and the batches still in memory, which bounds its buffers and levels
/// as the one run per spill of before did.
const MAX_RUNS: usize = 128;

impl Runs {
    /// How many runs the table has, in files and in memory.
    fn runs(&self) -> usize {
        self.files.iter().map(|f| f.ends.len()).sum::<usize>() + self.memory.len()
    }

    /// Takes the batches in memory, to be spilled (see [`Runs::write_file`]).
    fn spilling(&mut self) -> Runs {
        Runs {
            files: Vec::new(),
            memory: std::mem::take(&mut self.memory),
        }
    }

    /// Writes these batches into one file at `path`: each as the run it is, one after
    /// another, or, with `merge`, merged into one run (the rows of a key but the latest handed
    /// to `dropped`).
    ///
    /// Why not always merge: the merge compared records that had left the cache long before,
    /// and took two fifths of a spill's time while the load was making its batches on both
    /// cores; the load's last merge reads the runs as they are, its records fresh from the
    /// file, while the writers leave a core partly idle.
    fn write_file(
        self,
        path: &Path,
        merge: bool,
        dropped: impl FnMut(Record<'_>) -> Dropped,
    ) -> Result<RunFile, StoreError> {
        let io = |e: std::io::Error| unavailable(format!("bulk load run {}: {e}", path.display()));
        let mut out = BufWriter::with_capacity(RUN_BUFFER, File::create(path).map_err(io)?);
        let mut ends = Vec::new();
        let mut at = 0;
        if merge {
            let mut merge = self.merge(dropped)?;
            while let Some(record) = merge.next()? {
                record.write(&mut out).map_err(io)?;
                at += record.stored_len();
            }
            ends.push(at);
        } else {
            // Each batch goes once written, so that memory comes back as the spill goes.
            for run in self.memory {
                for record in run.iter() {
                    record.write(&mut out).map_err(io)?;
                    at += record.stored_len();
                }
                ends.push(at);
            }
        }
        out.flush().map_err(io)?;
        Ok(RunFile {
            path: path.to_owned(),
            ends,
        })
    }

    /// Every run merged in key order: of rows of one key in several runs, the latest run's
    /// (runs come in the order they were written), the others handed to `dropped`.
    pub(super) fn merge<D: FnMut(Record<'_>) -> Dropped>(
        self,
        dropped: D,
    ) -> Result<Merge<D>, StoreError> {
        let mut sources: Vec<Source> = Vec::new();
        for run_file in &self.files {
            let path = &run_file.path;
            let file = File::open(path)
                .map_err(|e| unavailable(format!("bulk load run {}: {e}", path.display())))?;
            let file = Arc::new(file);
            let mut start = 0;
            for &end in &run_file.ends {
                let run = Run {
                    file: Arc::clone(&file),
                    at: start,
                    end,
                };
                sources.push(Source::file(BufReader::with_capacity(
                    RUN_READ_BUFFER,
                    run,
                ))?);
                start = end;
            }
        }
        sources.extend(self.memory.into_iter().map(Source::memory));
        Ok(Merge::new(sources, dropped))
    }
}

/// The directory a load spills its runs to, beside the database file, removed when the last
/// owner (the load, or a spill's thread still writing a run) lets it go.
pub(super) struct SpillDir(PathBuf);

/// Loads started by this process, to name each one's directory apart.
static LOADS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// What a spill directory's name starts with, after the database file's name: what
/// [`remove_leftover_runs`] looks for.
pub(super) const SPILL_SUFFIX: &str = ".load-";

impl SpillDir {
    pub(super) fn beside(file: &Path) -> SpillDir {
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
/// is in use when the store opens, but for the spill thread of a load this process dropped
/// (whose result nobody reads, and which removes its directory itself when it ends).
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

/// What a spill hands back: each table's file, and the index entries of rows it dropped.
type Spilled = (RunFile, RunFile, Vec<IndexKey>);

/// What a load holds until it is written: each table's runs, and the spill under way.
pub(super) struct LoadRuns {
    dir: Arc<SpillDir>,
    items: Runs,
    index: Runs,
    /// Bytes of rows in memory, and how many it holds before it spills them.
    held: usize,
    run_bytes: usize,
    /// How many runs a table may have before a spill merges its batches ([`MAX_RUNS`]).
    max_runs: usize,
    /// Index entries of rows a later row of the same key replaced within the load: written
    /// with the rest of the load's, then removed, less the entries of the rows that stay.
    superseded: HashSet<IndexKey>,
    /// The thread writing the last runs' files, if one is under way: it hands back the
    /// files, and the index entries of the rows its merge (if it merged) dropped as replaced.
    spilling: Option<std::thread::JoinHandle<Result<Spilled, StoreError>>>,
}

impl LoadRuns {
    /// An empty load spilling beside the database `file`.
    pub(super) fn beside(file: &Path) -> LoadRuns {
        LoadRuns {
            dir: Arc::new(SpillDir::beside(file)),
            items: Runs::default(),
            index: Runs::default(),
            held: 0,
            run_bytes: RUN_BYTES,
            max_runs: MAX_RUNS,
            superseded: HashSet::new(),
            spilling: None,
        }
    }

    /// Adds a batch (see [`super::batch::prepare`]) as a run of each table. Once the runs in
    /// memory hold [`RUN_BYTES`], they are written to a file each, run after run (merged into
    /// one run once a table has more than [`MAX_RUNS`]; see [`Runs::write_file`]), on a thread
    /// of their own while the load goes on (the spill before must have ended first).
    ///
    /// Why on a thread of its own: a spill merged and wrote half a gigabyte, about 2.5 s,
    /// and the load used to wait for it, with a core idle, five times in a load of
    /// 1,000,000 issues.
    ///
    /// A spill that has ended is taken in here, so that one that failed fails the load at
    /// the next batch, not only at the next spill (half a gigabyte later) or at the end.
    pub(super) fn add(&mut self, batch: Sorted) -> Result<(), StoreError> {
        if self.spilling.as_ref().is_some_and(|s| s.is_finished()) {
            self.spilled()?;
        }
        self.held += batch.bytes;
        self.superseded.extend(batch.superseded);
        self.items.memory.push(batch.rows);
        self.index.memory.push(batch.entries);
        if self.held >= self.run_bytes {
            self.spilled()?;
            let dir = &self.dir.0;
            std::fs::create_dir_all(dir)
                .map_err(|e| unavailable(format!("bulk load runs in {}: {e}", dir.display())))?;
            let n = self.items.files.len();
            let (items_path, index_path) = (
                dir.join(format!("items-{n}")),
                dir.join(format!("index-{n}")),
            );
            // Both tables have a run per batch, so they agree.
            let merge = self.items.runs() > self.max_runs;
            let (items, index) = (self.items.spilling(), self.index.spilling());
            // The thread keeps the directory until it is done, should the load be dropped.
            let dir = Arc::clone(&self.dir);
            let spill = move || {
                let _dir = dir;
                std::thread::scope(|scope| {
                    let index = scope.spawn(|| index.write_file(&index_path, merge, |_| Ok(())));
                    let mut superseded = Vec::new();
                    let items =
                        items.write_file(&items_path, merge, |old| supersede(&mut superseded, old));
                    let index = index
                        .join()
                        .map_err(|_| unavailable("a bulk load's spill panicked"))??;
                    Ok((items?, index, superseded))
                })
            };
            self.spilling = Some(
                std::thread::Builder::new()
                    .name("gridgate-spill".into())
                    .spawn(spill)
                    .map_err(|e| unavailable(format!("bulk load spill: {e}")))?,
            );
            self.held = 0;
        }
        Ok(())
    }

    /// Waits for the spill under way, if any, and takes the index entries of the rows it
    /// dropped as replaced.
    fn spilled(&mut self) -> Result<(), StoreError> {
        if let Some(spill) = self.spilling.take() {
            let (items, index, superseded) = spill
                .join()
                .map_err(|_| unavailable("a bulk load's spill panicked"))??;
            self.items.files.push(items);
            self.index.files.push(index);
            self.superseded.extend(superseded);
        }
        Ok(())
    }

    /// Waits for the last spill and hands over what the load holds, to be written (see
    /// [`super::bulk::write_in`]).
    pub(super) fn held(mut self) -> Result<Held, StoreError> {
        self.spilled()?;
        let LoadRuns {
            dir,
            items,
            index,
            superseded,
            ..
        } = self;
        Ok(Held {
            dir,
            items,
            index,
            superseded,
            _spilled: (),
        })
    }
}

/// What a load holds once its spills are done: each table's runs, the index entries its rows
/// replaced within the load left behind, and the directory of the runs' files, to be removed
/// once they are read.
pub(super) struct Held {
    pub(super) dir: Arc<SpillDir>,
    pub(super) items: Runs,
    pub(super) index: Runs,
    pub(super) superseded: HashSet<IndexKey>,
    /// Private, so that only [`LoadRuns::held`], which waits for the last spill, makes one.
    _spilled: (),
}

#[cfg(test)]
impl LoadRuns {
    /// Spills past `run_bytes` held, merging a spill's batches past `max_runs` runs.
    pub(super) fn spill_after(&mut self, run_bytes: usize, max_runs: usize) {
        self.run_bytes = run_bytes;
        self.max_runs = max_runs;
    }

    /// The directory the load spills to.
    pub(super) fn dir(&self) -> &Path {
        &self.dir.0
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;
    use crate::store::embedded::batch::prepare;
    use crate::store::embedded::merge::tests::{drained, run};
    use crate::store::embedded::tests::item;
    use crate::store::embedded::EmbeddedStore;

    /// Runs spilled as they are read back from their file as they went in, each on its own,
    /// across many refills of their buffers and past a record larger than a buffer; a file
    /// cut short inside a run is an error, not its end.
    #[test]
    fn runs_spilled_as_they_are_read_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run");
        let run = |start: u32, big: bool| -> Records {
            let mut records = Records::default();
            for i in 0..2000u32 {
                let key = format!("k{:06}", start + 3 * i);
                let row = if big && i == 1000 {
                    vec![7; RUN_READ_BUFFER + 4096]
                } else {
                    format!("row {}", start + 3 * i).into_bytes()
                };
                records.push([key.as_bytes(), b"s", b""], &row);
            }
            records
        };
        let runs = || vec![run(0, false), run(1, true), run(2, false)];
        let spilled = Runs {
            files: Vec::new(),
            memory: runs(),
        }
        .write_file(&path, false, |_| Ok(()))
        .unwrap();
        assert_eq!(spilled.ends.len(), 3);
        let rows = |runs: Runs| {
            let (rows, failed) = drained(runs.merge(|_| Ok(())).unwrap());
            assert!(failed.is_none());
            rows
        };
        let want = rows(Runs {
            files: Vec::new(),
            memory: runs(),
        });
        assert_eq!(want.len(), 6000);
        let read = Runs {
            files: vec![spilled],
            memory: Vec::new(),
        };
        assert_eq!(rows(read), want);

        // The file cut inside its last run.
        let len = std::fs::metadata(&path).unwrap().len();
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.set_len(len - 100).unwrap();
        let ends = [len / 3, 2 * len / 3, len];
        let mut cut = Run {
            file: Arc::new(File::open(&path).unwrap()),
            at: ends[1],
            end: ends[2],
        };
        let mut all = Vec::new();
        let error = cut.read_to_end(&mut all).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::UnexpectedEof);
    }

    /// A key whose rows are spread over runs of every kind, an unmerged file's, a merged
    /// file's and memory's, comes out once with the latest row, and every older row of it is
    /// dropped once (the merged file's own older row at its spill).
    #[test]
    fn a_key_across_files_and_memory_keeps_its_latest_row() {
        let dir = tempfile::tempdir().unwrap();
        let texts = |rows: &[(&str, &str)]| -> Records {
            run(rows
                .iter()
                .map(|(key, row)| (key.as_bytes(), row.as_bytes())))
        };
        let mut dropped = Vec::new();
        let mut drop_row = |old: Record<'_>| {
            dropped.push(String::from_utf8(old.row().to_vec()).unwrap());
            Ok(())
        };
        let as_is = Runs {
            files: Vec::new(),
            memory: vec![texts(&[("a", "a1"), ("k", "k1")]), texts(&[("k", "k2")])],
        }
        .write_file(&dir.path().join("0"), false, &mut drop_row)
        .unwrap();
        let merged = Runs {
            files: Vec::new(),
            memory: vec![texts(&[("b", "b3"), ("k", "k3")]), texts(&[("k", "k4")])],
        }
        .write_file(&dir.path().join("1"), true, &mut drop_row)
        .unwrap();
        assert_eq!((as_is.ends.len(), merged.ends.len()), (2, 1));
        let runs = |memory: Vec<Records>| Runs {
            files: vec![
                RunFile {
                    path: as_is.path.clone(),
                    ends: as_is.ends.clone(),
                },
                RunFile {
                    path: merged.path.clone(),
                    ends: merged.ends.clone(),
                },
            ],
            memory,
        };
        let rows = |runs: Runs, dropped: &mut Vec<String>| -> Vec<String> {
            let (rows, failed) = drained(
                runs.merge(|old: Record<'_>| {
                    dropped.push(String::from_utf8(old.row().to_vec()).unwrap());
                    Ok(())
                })
                .unwrap(),
            );
            assert!(failed.is_none());
            rows.into_iter()
                .map(|(_, row)| String::from_utf8(row).unwrap())
                .collect()
        };
        assert_eq!(dropped, ["k3"], "the merged spill drops its own older row");

        let mut later = Vec::new();
        let merged_rows = rows(runs(vec![texts(&[("c", "c5"), ("k", "k5")])]), &mut later);
        assert_eq!(merged_rows, ["a1", "b3", "c5", "k5"]);
        later.sort();
        assert_eq!(later, ["k1", "k2", "k4"]);

        // Without the key in memory, the merged file's row is the latest.
        let mut later = Vec::new();
        assert_eq!(
            rows(runs(vec![texts(&[("c", "c5")])]), &mut later),
            ["a1", "b3", "c5", "k4"]
        );
        later.sort();
        assert_eq!(later, ["k1", "k2"]);
    }

    /// A spill that failed fails the load at the next batch once it has ended, not only at
    /// the next spill (half a gigabyte later) or at the end.
    #[test]
    fn a_failed_spill_fails_the_next_batch() {
        let dir = tempfile::tempdir().unwrap();
        let mut runs = LoadRuns::beside(&dir.path().join("data"));
        runs.spill_after(1, MAX_RUNS);
        // A directory where the first spill's index run goes.
        std::fs::create_dir_all(runs.dir().join("index-0")).unwrap();
        let batch = |pk: &str| prepare(&[item(pk, "s", None)]).unwrap();
        runs.add(batch("a")).unwrap();
        runs.spill_after(usize::MAX, MAX_RUNS);
        // The spill ends on its own thread; the next batch finds it ended, unjoined.
        while !runs.spilling.as_ref().unwrap().is_finished() {
            std::thread::yield_now();
        }
        let failed = runs.add(batch("b"));
        assert!(
            matches!(&failed, Err(StoreError::Unavailable(m)) if m.contains("index-0")),
            "{failed:?}"
        );
    }

    /// The directory of a load that never finished (a crash) is removed when the store next
    /// opens.
    #[tokio::test]
    async fn leftover_runs_are_removed_when_the_store_opens() {
        let (dir, store) = crate::store::embedded::tests::store().await;
        let stale = SpillDir::beside(&store.path);
        std::fs::create_dir_all(stale.0.join("x")).unwrap();
        let path = stale.0.clone();
        // As a crash would leave it.
        std::mem::forget(stale);
        drop(store);
        let _reopened = EmbeddedStore::open(&dir.path().join("data"), "gridgate").unwrap();
        assert!(!path.exists());
    }
}
