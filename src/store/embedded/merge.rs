//! The merge of a bulk load's sorted runs in key order ([`Merge`]), the latest row of each
//! key kept and the others handed back as dropped: a tournament tree over the runs' heads,
//! each run in memory or read where it lies in its file ([`Run`]), each record handed over
//! where it lies. [`super::runs`] holds the runs and opens their merge.

use std::cmp::Ordering;
use std::fs::File;
use std::io::{BufReader, Read};
use std::sync::Arc;

use super::batch::{Dropped, ReadRecord, Record, Records};
use super::table::unavailable;
use crate::store::StoreError;

/// A run's bytes in its file, read where they lie, so that the runs of one file share its
/// handle (a merge reads a hundred runs at once).
pub(super) struct Run {
    pub(super) file: Arc<File>,
    /// Where the run's next byte is read from.
    pub(super) at: u64,
    /// Where the run ends.
    pub(super) end: u64,
}

impl Read for Run {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let want =
            usize::try_from(self.end - self.at).map_or(buf.len(), |left| left.min(buf.len()));
        if want == 0 {
            return Ok(0);
        }
        let n = read_at(&self.file, &mut buf[..want], self.at)?;
        if n == 0 {
            // The file ends before the run does: it was cut, not read to its end.
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.at += n as u64;
        Ok(n)
    }
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, at)
}

#[cfg(windows)]
fn read_at(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, at)
}

/// A run as a merge reads it: its head, the record it reads next, and the one it read
/// before, which stays where it is until the run moves on again (so that a merge hands over
/// a record where it lies, and not a copy).
pub(super) enum Source {
    File {
        input: BufReader<Run>,
        /// The head and the record before it, taking turns: `head` says which is which.
        records: [ReadRecord; 2],
        head: usize,
        /// Whether `records[head]` holds a record, or the run is done.
        more: bool,
    },
    Memory {
        records: Records,
        /// The head's position, `records.len()` once the run is done.
        head: usize,
    },
}

impl Source {
    /// The run `input` reads, its first record read.
    pub(super) fn file(input: BufReader<Run>) -> Result<Source, StoreError> {
        let mut source = Source::File {
            input,
            records: Default::default(),
            // Moving on reads the first record into `records[0]`.
            head: 1,
            more: false,
        };
        source.advance()?;
        Ok(source)
    }

    pub(super) fn memory(records: Records) -> Source {
        Source::Memory { records, head: 0 }
    }

    fn head(&self) -> Option<Record<'_>> {
        match self {
            Source::File {
                records,
                head,
                more,
                ..
            } => more.then(|| records[*head].record()),
            Source::Memory { records, head } => (*head < records.len()).then(|| records.get(*head)),
        }
    }

    /// Moves on to the next record: the head becomes [`Source::taken`].
    fn advance(&mut self) -> Result<(), StoreError> {
        match self {
            Source::File {
                input,
                records,
                head,
                more,
            } => {
                *head ^= 1;
                // Done until the read says otherwise: a record half read is no head.
                *more = false;
                *more = records[*head]
                    .read(input)
                    .map_err(|e| unavailable(format!("bulk load run: {e}")))?;
            }
            Source::Memory { head, .. } => *head += 1,
        }
        Ok(())
    }

    /// The record the run held at its head before it last moved on.
    fn taken(&self) -> Record<'_> {
        match self {
            Source::File { records, head, .. } => records[*head ^ 1].record(),
            Source::Memory { records, head } => records.get(*head - 1),
        }
    }
}

/// A merge of sorted runs: a tournament (loser) tree over the rows at their heads, so that
/// the next row costs one comparison per level (a binary heap's pop and push took about
/// twice as many, and the merges' comparisons were a tenth of a load).
pub(super) struct Merge<D> {
    /// The runs, each with the row at its head, none once the run is done.
    sources: Vec<Source>,
    /// `tree[0]` is the run whose head comes next; `tree[n]` for `n` in `1..runs` is the
    /// run that lost the match at node `n`, whose children are nodes `2n` and `2n + 1`, the
    /// leaves being `runs + r` for run `r`.
    tree: Vec<usize>,
    dropped: D,
    /// Set by a failure (a run that cannot be read, a refused drop): the merge then ends, so
    /// that it never goes on without the rows it lost.
    failed: bool,
}

impl<D: FnMut(Record<'_>) -> Dropped> Merge<D> {
    pub(super) fn new(sources: Vec<Source>, dropped: D) -> Merge<D> {
        let runs = sources.len();
        let mut merge = Merge {
            sources,
            tree: vec![0; runs.max(1)],
            dropped,
            failed: false,
        };
        // Each node's winner, from the leaves up; the tree keeps the losers.
        let mut winners = vec![0; 2 * runs];
        for (run, winner) in winners.iter_mut().skip(runs).enumerate() {
            *winner = run;
        }
        for node in (1..runs).rev() {
            let (a, b) = (winners[2 * node], winners[2 * node + 1]);
            let (winner, loser) = if merge.first(a, b) { (a, b) } else { (b, a) };
            winners[node] = winner;
            merge.tree[node] = loser;
        }
        if runs > 0 {
            merge.tree[0] = winners[1];
        }
        merge
    }

    /// Whether run `a`'s head comes before run `b`'s: by key, then the later run first; a
    /// finished run comes last.
    fn first(&self, a: usize, b: usize) -> bool {
        match (self.sources[a].head(), self.sources[b].head()) {
            (Some(x), Some(y)) => match x.key().cmp(&y.key()) {
                Ordering::Equal => a > b,
                order => order == Ordering::Less,
            },
            (Some(_), None) => true,
            (None, _) => false,
        }
    }

    /// Moves the winning run on, replays its matches up the tree, and returns it: its
    /// record is then its [`Source::taken`]. `None` once every run is done.
    fn take_winner(&mut self) -> Result<Option<usize>, StoreError> {
        let Some(&run) = self.tree.first() else {
            return Ok(None);
        };
        // No runs at all leave the tree its one node.
        if self.sources.get(run).and_then(Source::head).is_none() {
            return Ok(None);
        }
        self.sources[run].advance()?;
        let mut winner = run;
        let mut node = (self.sources.len() + run) / 2;
        while node > 0 {
            if self.first(self.tree[node], winner) {
                std::mem::swap(&mut self.tree[node], &mut winner);
            }
            node /= 2;
        }
        self.tree[0] = winner;
        Ok(Some(run))
    }

    /// The run whose record comes next, its older rows of the key handed to `dropped`.
    fn next_run(&mut self) -> Result<Option<usize>, StoreError> {
        let Some(run) = self.take_winner()? else {
            return Ok(None);
        };
        // Rows of the same key in older runs come right after it: they are replaced.
        loop {
            let next = self.tree[0];
            let Some(older) = self.sources[next].head() else {
                break;
            };
            if older.key() != self.sources[run].taken().key() {
                break;
            }
            // A run holds a key once (each is sorted with the last of a key kept), so the
            // record taken stays where it is while the others move on; a run that repeats
            // it would move it, and is refused (a repeat in an older run is dropped as any
            // older row of the key is).
            if next == run {
                return Err(unavailable("a bulk load run holds a key twice"));
            }
            (self.dropped)(older)?;
            self.take_winner()?;
        }
        Ok(Some(run))
    }

    /// The next record in key order, which stays where it lies until the next call; `None`
    /// once every run is done, or after a failure (which ends the merge).
    pub(super) fn next(&mut self) -> Result<Option<Record<'_>>, StoreError> {
        if self.failed {
            return Ok(None);
        }
        match self.next_run() {
            Ok(run) => Ok(run.map(|run| self.sources[run].taken())),
            Err(e) => {
                self.failed = true;
                Err(e)
            }
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;

    use proptest::prelude::*;

    use super::*;
    use crate::store::embedded::batch::tests::a_part;

    /// A two-part key.
    type TwoParts = (Vec<u8>, Vec<u8>);

    /// A run of these keys' records (their second parts `s`), with these rows.
    pub(in crate::store::embedded) fn run<'a>(
        rows: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
    ) -> Records {
        let mut records = Records::default();
        for (key, row) in rows {
            records.push([key, b"s", b""], row);
        }
        records
    }

    /// A record's first part and row.
    type PartAndRow = (Vec<u8>, Vec<u8>);

    /// Everything a merge hands over, and its error if it failed.
    pub(in crate::store::embedded) fn drained<D: FnMut(Record<'_>) -> Dropped>(
        mut merge: Merge<D>,
    ) -> (Vec<PartAndRow>, Option<StoreError>) {
        let mut records = Vec::new();
        loop {
            match merge.next() {
                Ok(Some(record)) => records.push((record.part(0).to_vec(), record.row().to_vec())),
                Ok(None) => return (records, None),
                Err(e) => {
                    // A failed merge then ends.
                    assert!(matches!(merge.next(), Ok(None)));
                    return (records, Some(e));
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// A merge of runs in memory and in files (read through small buffers, so that they
        /// are refilled mid-record) hands over every key once, in key order, with the row of
        /// the latest run that has it, and hands every other row of the key to `dropped`,
        /// each before the row kept is handed over.
        #[test]
        fn a_merge_keeps_the_latest_row_of_each_key_in_key_order(
            runs in prop::collection::vec(
                (
                    prop::collection::btree_map((a_part(), a_part()), any::<u8>(), 0..20),
                    any::<bool>(),
                ),
                0..12,
            ),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let sources = runs
                .iter()
                .enumerate()
                .map(|(n, (run, in_file))| {
                    let mut records = Records::default();
                    for ((a, b), v) in run {
                        records.push([a, b, b""], &[*v]);
                    }
                    if !in_file {
                        return Source::memory(records);
                    }
                    let path = dir.path().join(n.to_string());
                    let mut bytes = Vec::new();
                    for record in records.iter() {
                        record.write(&mut bytes).unwrap();
                    }
                    std::fs::write(&path, &bytes).unwrap();
                    let run = Run {
                        file: Arc::new(File::open(&path).unwrap()),
                        at: 0,
                        end: bytes.len() as u64,
                    };
                    Source::file(BufReader::with_capacity(7, run)).unwrap()
                })
                .collect();
            // What the merge did, in order: a row dropped (false) or handed over (true).
            let events = std::cell::RefCell::new(Vec::new());
            let mut merge = Merge::new(sources, |old: Record<'_>| {
                let key = (old.part(0).to_vec(), old.part(1).to_vec());
                events.borrow_mut().push((false, key, old.row()[0]));
                Ok(())
            });
            while let Some(record) = merge.next().unwrap() {
                let key = (record.part(0).to_vec(), record.part(1).to_vec());
                events.borrow_mut().push((true, key, record.row()[0]));
            }
            drop(merge);
            let events = events.into_inner();
            // The model: the latest run's row of each key, and the rows of earlier runs.
            let mut kept: BTreeMap<TwoParts, u8> = BTreeMap::new();
            let mut all: Vec<(TwoParts, u8)> = Vec::new();
            for (run, _) in &runs {
                for (key, v) in run {
                    kept.insert(key.clone(), *v);
                    all.push((key.clone(), *v));
                }
            }
            let merged: Vec<(TwoParts, u8)> =
                events.iter().filter(|e| e.0).map(|(_, k, v)| (k.clone(), *v)).collect();
            prop_assert_eq!(merged, kept.clone().into_iter().collect::<Vec<_>>());
            let mut dropped: Vec<(TwoParts, u8)> =
                events.iter().filter(|e| !e.0).map(|(_, k, v)| (k.clone(), *v)).collect();
            // Every row but the kept one of each key, once (the runs' rows of a key may hold
            // the same value, so as multisets).
            let mut others = all;
            for (key, v) in &kept {
                let at = others.iter().position(|(k, w)| k == key && w == v).unwrap();
                others.remove(at);
            }
            dropped.sort();
            others.sort();
            prop_assert_eq!(dropped, others);
            // Each key's dropped rows come before its row kept.
            for (i, (handed, key, _)) in events.iter().enumerate() {
                if !handed {
                    let later = events[i..].iter().any(|(h, k, _)| *h && k == key);
                    prop_assert!(later, "a row of {:?} dropped after the row kept", key);
                }
            }
        }
    }

    /// A run file in `dir` of the records `a` and `c`, cut inside `c`.
    fn cut_run(dir: &Path) -> Run {
        let path = dir.join("run");
        let mut bytes = Vec::new();
        for record in run([(&b"a"[..], &b"row"[..]), (b"c", b"row")]).iter() {
            record.write(&mut bytes).unwrap();
        }
        bytes.truncate(bytes.len() - 2);
        std::fs::write(&path, &bytes).unwrap();
        Run {
            file: Arc::new(File::open(&path).unwrap()),
            at: 0,
            end: bytes.len() as u64,
        }
    }

    /// A file run whose next record cannot be read has no head once the read failed (not
    /// the half-read record).
    #[test]
    fn a_file_run_that_fails_to_read_has_no_head() {
        let dir = tempfile::tempdir().unwrap();
        let mut source = Source::file(BufReader::new(cut_run(dir.path()))).unwrap();
        assert_eq!(source.head().map(|r| r.part(0)), Some(&b"a"[..]));
        assert!(source.advance().is_err());
        assert!(source.head().is_none());
        assert_eq!(source.taken().part(0), b"a");
    }

    /// A run that holds its winning key twice is refused: taking its second row would move
    /// the run past the first while it is being handed over, so the second would be dropped
    /// as older and handed over in its place, and the first lost.
    #[test]
    fn a_run_that_repeats_a_key_is_refused() {
        let sources = vec![
            Source::memory(run([(&b"a"[..], &b"1"[..]), (b"a", b"2")])),
            Source::memory(run([(&b"b"[..], &b"3"[..])])),
        ];
        let (merged, failed) = drained(Merge::new(sources, |_: Record<'_>| Ok(())));
        assert!(merged.is_empty(), "{merged:?}");
        assert!(
            matches!(&failed, Some(StoreError::Unavailable(m)) if m.contains("twice")),
            "{failed:?}"
        );
    }

    /// A merge whose run is cut short says so once, and then ends: it never goes on
    /// without the rows it lost.
    #[test]
    fn a_merge_that_fails_ends() {
        let dir = tempfile::tempdir().unwrap();
        let cut = cut_run(dir.path());
        let others = run([(&b"b"[..], &b"row"[..])]);
        let sources = vec![
            Source::file(BufReader::new(cut)).unwrap(),
            Source::memory(others),
        ];
        let (merged, failed) = drained(Merge::new(sources, |_: Record<'_>| Ok(())));
        // Taking "a" reads its run's next row, which is cut short: the merge fails there.
        assert!(merged.is_empty(), "{merged:?}");
        assert!(failed.is_some());

        // A replaced row that cannot be dropped fails the merge too, which then ends, though
        // its runs hold more.
        let keys =
            |keys: &[&'static [u8]]| Source::memory(run(keys.iter().map(|&k| (k, &b"row"[..]))));
        let sources = vec![keys(&[b"a", b"b", b"d"]), keys(&[b"b", b"c"])];
        let refused = |_: Record<'_>| Err(unavailable("refused"));
        let (merged, failed) = drained(Merge::new(sources, refused));
        assert_eq!(merged, [(b"a".to_vec(), b"row".to_vec())]);
        assert!(failed.is_some());
    }
}
