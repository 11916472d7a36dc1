//! A bulk load's batches ([`prepare`], [`prepare_written`]): items, as attribute maps or as
//! a caller's code writes them, checked as a write would check them and laid out as the
//! records of both tables ([`Records`]: each record its key's parts and its row, end to end
//! in large blocks), then sorted by key with the last of each key kept. What `runs` holds as
//! its runs; a [`Record`] is one of them where it lies, and the unit of a run file.
//!
//! Why the sort orders positions by an abbreviated key (see [`key_order`]): a comparison that
//! reads two records mostly waits for memory.

use std::collections::HashMap;
use std::io::{Read, Write};

use super::table::stored_gsi1sk;
use super::validate::{check_item, ItemRow};
use crate::store::capacity::{attribute_size, key_size};
use crate::store::limits::MAX_ITEM_BYTES;
use crate::store::row::RowWriter;
use crate::store::table::{GSI1SK, PK, SK};
use crate::store::{AttributeValue, Item, ItemWriter, Key, StoreError, WriteItems};

/// One row of a run, where it lies: its key's parts (two for the table, three for the index)
/// and its row, end to end, in a block of [`Records`] or in a [`ReadRecord`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Record<'a> {
    bytes: &'a [u8],
    /// Where the key's parts end in `bytes`; the row follows the last.
    ends: [u32; 3],
}

impl<'a> Record<'a> {
    pub(super) fn part(&self, i: usize) -> &'a [u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.bytes[start..self.ends[i] as usize]
    }

    /// The key's parts, in the order redb compares a tuple key's elements.
    pub(super) fn key(&self) -> (&'a [u8], &'a [u8], &'a [u8]) {
        (self.part(0), self.part(1), self.part(2))
    }

    pub(super) fn row(&self) -> &'a [u8] {
        &self.bytes[self.ends[2] as usize..]
    }

    /// The bytes of its key and row.
    pub(super) fn len(&self) -> usize {
        self.bytes.len()
    }

    /// The bytes [`Record::write`] writes.
    pub(super) fn stored_len(&self) -> u64 {
        16 + self.bytes.len() as u64
    }

    pub(super) fn write(&self, out: &mut impl Write) -> std::io::Result<()> {
        let mut header = [0u8; 16];
        for (word, value) in header
            .chunks_exact_mut(4)
            .zip(self.ends.into_iter().chain([self.bytes.len() as u32]))
        {
            word.copy_from_slice(&value.to_le_bytes());
        }
        out.write_all(&header)?;
        out.write_all(self.bytes)
    }
}

/// Where a record lies in its [`Records`]' blocks, and where its key's parts end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    block: u32,
    start: u32,
    len: u32,
    ends: [u32; 3],
}

/// Records laid end to end in a few large blocks, in an order of their own: a batch's as
/// they are made, then sorted (only their spans move), one run's in memory, a chunk of a
/// merge's.
///
/// Why blocks: a record each in an allocation of its own cost a load of 1,000,000 issues
/// about 13 % of its samples in the allocator (most of it freeing, on the spill's thread,
/// what the batches' threads had allocated), and left a batch's records all over the heap, where the
/// sort read them. Blocks of a fixed size, rather than one buffer, so that a batch of unknown
/// size is never copied as it grows.
#[derive(Debug, Default)]
pub(super) struct Records {
    blocks: Vec<Vec<u8>>,
    spans: Vec<Span>,
}

/// The bytes of a block (a record longer than this gets a block of its own size).
const BLOCK_BYTES: usize = 256 * 1024;

impl Records {
    /// Records with room for `records` before their spans grow, and a first block of
    /// `bytes` (at most a block's size).
    pub(super) fn with_capacity(records: usize, bytes: usize) -> Records {
        Records {
            blocks: vec![Vec::with_capacity(bytes.min(BLOCK_BYTES))],
            spans: Vec::with_capacity(records),
        }
    }

    /// The block a record of `len` bytes goes to the end of.
    fn room(&mut self, len: usize) -> (u32, &mut Vec<u8>) {
        let fits = self
            .blocks
            .last()
            .is_some_and(|b| b.capacity() - b.len() >= len);
        if !fits {
            self.blocks.push(Vec::with_capacity(len.max(BLOCK_BYTES)));
        }
        let n = self.blocks.len() - 1;
        // A load never holds 2^32 blocks of a run (a run is a batch, at most gigabytes).
        (n as u32, &mut self.blocks[n])
    }

    /// Adds a record of these key parts and row, and returns its bytes.
    pub(super) fn push(&mut self, parts: [&[u8]; 3], row: &[u8]) -> usize {
        let mut ends = [0; 3];
        let mut end = 0;
        for (e, part) in ends.iter_mut().zip(parts) {
            end += part.len();
            *e = end as u32;
        }
        let len = end + row.len();
        self.place(len, ends, |bytes| {
            for part in parts {
                bytes.extend_from_slice(part);
            }
            bytes.extend_from_slice(row);
        });
        len
    }

    /// Adds a copy of `record`.
    pub(super) fn push_record(&mut self, record: Record<'_>) {
        self.place(record.bytes.len(), record.ends, |bytes| {
            bytes.extend_from_slice(record.bytes)
        });
    }

    /// Adds the record of `len` bytes, whose key's parts end at `ends`, that `write` writes
    /// to the end of a block.
    fn place(&mut self, len: usize, ends: [u32; 3], write: impl FnOnce(&mut Vec<u8>)) {
        let (block, bytes) = self.room(len);
        let start = bytes.len();
        write(bytes);
        debug_assert_eq!(bytes.len() - start, len);
        self.spans.push(Span {
            block,
            start: start as u32,
            len: len as u32,
            ends,
        });
    }

    pub(super) fn len(&self) -> usize {
        self.spans.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    pub(super) fn get(&self, i: usize) -> Record<'_> {
        let span = self.spans[i];
        let start = span.start as usize;
        Record {
            bytes: &self.blocks[span.block as usize][start..start + span.len as usize],
            ends: span.ends,
        }
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = Record<'_>> {
        (0..self.len()).map(|i| self.get(i))
    }
}

/// A record read from a run file into a buffer of its own, which a later read reuses (the
/// buffer keeps the size of the largest record read into it).
#[derive(Debug, Default)]
pub(super) struct ReadRecord {
    bytes: Vec<u8>,
    ends: [u32; 3],
}

impl ReadRecord {
    pub(super) fn record(&self) -> Record<'_> {
        Record {
            bytes: &self.bytes,
            ends: self.ends,
        }
    }

    /// Reads the next record of a run file over this one; `false` at the run's end.
    pub(super) fn read(&mut self, input: &mut impl Read) -> std::io::Result<bool> {
        let mut header = [0u8; 16];
        // The end of the run only between records: a record cut short is an error.
        match input.read_exact(&mut header[..1]) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
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
        self.bytes.resize(word(12) as usize, 0);
        input.read_exact(&mut self.bytes)?;
        if ends[0] > ends[1] || ends[1] > ends[2] || ends[2] as usize > self.bytes.len() {
            return Err(std::io::Error::other(
                "a run record's key is past its bytes",
            ));
        }
        self.ends = ends;
        Ok(true)
    }
}

/// Sorts a batch's records by key, the last of each key kept (as written in order); the
/// others are handed to `dropped`.
pub(super) fn sorted(
    mut batch: Records,
    mut dropped: impl FnMut(Record<'_>) -> Dropped,
) -> Result<Records, StoreError> {
    let order = key_order(&batch);
    let mut kept = Vec::with_capacity(order.len());
    for (i, repeated) in order {
        if repeated {
            dropped(batch.get(i))?;
        } else {
            kept.push(batch.spans[i]);
        }
    }
    // The dropped records' bytes stay in their blocks, unread, until the run goes. The last
    // block gives back the room it did not fill: a batch of a few items would otherwise
    // hold a block's size for a few hundred bytes, which the load does not count.
    batch.spans = kept;
    if let Some(last) = batch.blocks.last_mut() {
        last.shrink_to_fit();
    }
    Ok(batch)
}

/// The batch's positions in key order, the later of two equal keys first, each with whether
/// its key is the one before it (so a repeated key is told without reading the records, but
/// where their abbreviations tie).
///
/// Why not sort the records themselves: a batch's records span megabytes, and a comparison
/// that reads two of them mostly waits for memory (a load's profile spent 14 % of its time
/// in the sort's `memcmp`, when each record was an allocation of its own). Here each
/// position is sorted beside an abbreviation of its key: the rank of its first part among
/// the batch's first parts, then 12 bytes of its second part past the prefix that every key
/// of its first part shares (an issue's sort strings share their field's). Abbreviations
/// that differ order their keys as the keys do; a run of equal ones is sorted by a second
/// abbreviation of the next 16 bytes, which reads each of its records once, and only where
/// both are equal are records compared.
fn key_order(batch: &Records) -> Vec<(usize, bool)> {
    // The batch's first parts, numbered as they are met: `firsts[g]` is the first record of
    // group `g`. Neighbours often share one (an issue's rows), which skips the map. The
    // same pass measures the prefix of the second part that every record of a group shares
    // (`shared[g]`), while the record is at hand: a batch is larger than the caches, and each
    // pass over its records waits for memory.
    let mut numbers: HashMap<&[u8], usize, foldhash::fast::RandomState> = HashMap::default();
    let mut firsts: Vec<usize> = Vec::new();
    let mut shared: Vec<usize> = Vec::new();
    let mut groups: Vec<usize> = Vec::with_capacity(batch.len());
    for (i, record) in batch.iter().enumerate() {
        let part = record.part(0);
        let group = match groups.last() {
            Some(&g) if batch.get(firsts[g]).part(0) == part => g,
            _ => *numbers.entry(part).or_insert_with(|| {
                firsts.push(i);
                shared.push(record.part(1).len());
                firsts.len() - 1
            }),
        };
        let first = batch.get(firsts[group]).part(1);
        shared[group] = common_prefix(&first[..shared[group]], record.part(1));
        groups.push(group);
    }
    drop(numbers);
    let mut by_key: Vec<usize> = (0..firsts.len()).collect();
    by_key.sort_unstable_by(|&a, &b| {
        batch
            .get(firsts[a])
            .part(0)
            .cmp(batch.get(firsts[b]).part(0))
    });
    // A rank takes the abbreviation's top 32 bits; a batch is never near 2^32 records.
    debug_assert!(firsts.len() <= u32::MAX as usize);
    let mut ranks = vec![0u128; firsts.len()];
    for (rank, group) in by_key.into_iter().enumerate() {
        ranks[group] = rank as u128;
    }
    let mut keyed: Vec<(u128, usize)> = batch
        .iter()
        .zip(&groups)
        .enumerate()
        .map(|(i, (record, &g))| {
            let rest = &record.part(1)[shared[g]..];
            (ranks[g] << 96 | abbreviated::<12>(rest), i)
        })
        .collect();
    // Equal abbreviations have equal first parts and equal shared prefixes: the rest decides.
    let rest = |i: usize| {
        let record = batch.get(i);
        (&record.part(1)[shared[groups[i]]..], record.part(2))
    };
    keyed.sort_unstable_by_key(|&(a, _)| a);
    // A run of equal abbreviations (a select field's values of one option, say) is sorted
    // by the next 16 bytes of its second parts, abbreviated the same way, and only where
    // those tie by the records: sorting it by the records read two of them per comparison,
    // most of them waiting for memory, where this reads each once.
    let mut start = 0;
    while start < keyed.len() {
        let a = keyed[start].0;
        let end = start + keyed[start..].iter().take_while(|&&(b, _)| b == a).count();
        if end - start > 1 {
            let next = |i: usize| {
                let (rest, _) = rest(i);
                abbreviated::<16>(&rest[rest.len().min(12)..])
            };
            let mut run: Vec<(u128, usize)> = keyed[start..end]
                .iter()
                .map(|&(_, i)| (next(i), i))
                .collect();
            run.sort_unstable_by(|&(a, i), &(b, j)| {
                a.cmp(&b)
                    .then_with(|| rest(i).cmp(&rest(j)))
                    .then(j.cmp(&i))
            });
            for (slot, (_, i)) in keyed[start..end].iter_mut().zip(run) {
                slot.1 = i;
            }
        }
        start = end;
    }
    let mut before: Option<(u128, usize)> = None;
    keyed
        .into_iter()
        .map(|(a, i)| {
            let repeated = before.is_some_and(|(b, j)| a == b && rest(i) == rest(j));
            before = Some((a, i));
            (i, repeated)
        })
        .collect()
}

/// The first `N` bytes of `bytes` (at most 16), zero-padded so that a part that ends sooner
/// (a prefix of another) sorts no later, as the low bytes of a big-endian number: two differ
/// only as the bytes do. The copy of `N` bytes, which most records take, has a length the
/// compiler knows and is made in place, where one of any length was a call.
fn abbreviated<const N: usize>(bytes: &[u8]) -> u128 {
    const { assert!(N <= 16) };
    let mut buffer = [0u8; 16];
    match bytes.get(..N) {
        Some(head) => buffer[16 - N..].copy_from_slice(head),
        None => buffer[16 - N..16 - N + bytes.len()].copy_from_slice(bytes),
    }
    u128::from_be_bytes(buffer)
}

/// The length of the prefix `a` and `b` share, compared eight bytes at a time (second parts
/// share a few dozen: an issue's sort strings start with their field's).
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut at = 0;
    while at + 8 <= n {
        let x = u64::from_le_bytes(a[at..at + 8].try_into().unwrap_or_default());
        let y = u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default());
        if x != y {
            return at + ((x ^ y).trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    at + a[at..n]
        .iter()
        .zip(&b[at..n])
        .take_while(|(x, y)| x == y)
        .count()
}

/// What a callback for a row dropped in favour of a later one gives.
pub(super) type Dropped = Result<(), StoreError>;

/// An index entry's key parts, `(SK, GSI1SK, PK)`.
pub(super) type IndexKey = (Vec<u8>, Vec<u8>, Vec<u8>);

/// A batch ready to join a load: the table's rows and the index's entries, each sorted with
/// the last of a key kept, the index entries of the rows dropped as replaced, and the
/// records' bytes.
pub(super) struct Sorted {
    pub(super) rows: Records,
    pub(super) entries: Records,
    pub(super) superseded: Vec<IndexKey>,
    pub(super) bytes: usize,
}

/// Validates a batch's items (as a write would) into the records of both tables, sorted.
pub(super) fn prepare(items: &[Item]) -> Result<Sorted, StoreError> {
    let mut batch = Batch::with_capacity(items.len());
    for item in items {
        let row = ItemRow::validate(item)?;
        batch.add(
            &row.pk,
            &row.sk,
            row.gsi1sk.as_deref(),
            &row.bytes,
            row.index_end,
        );
    }
    batch.sorted()
}

/// Runs `write` (see [`BulkLoad::put_written`]) into the records of both tables, sorted: each
/// item checked as [`ItemRow::validate`] checks an item, and its row made as
/// [`row::store`](crate::store::row::store) makes it, with no attribute map between.
pub(super) fn prepare_written(write: WriteItems) -> Result<Sorted, StoreError> {
    let mut written = Written {
        batch: Batch::with_capacity(1024),
        row: RowWriter::default(),
        names: Vec::new(),
        refused: None,
    };
    write(&mut written)?;
    match written.refused {
        Some(e) => Err(e),
        None => written.batch.sorted(),
    }
}

/// A batch's records as they come, before [`Batch::sorted`].
struct Batch {
    rows: Records,
    entries: Records,
    bytes: usize,
}

/// The bytes a batch's records take to begin with, per item.
const ITEM_BYTES: usize = 256;

impl Batch {
    fn with_capacity(items: usize) -> Batch {
        Batch {
            rows: Records::with_capacity(items, items * ITEM_BYTES),
            entries: Records::with_capacity(items, items * ITEM_BYTES),
            bytes: 0,
        }
    }

    /// Adds a checked item's table row, and its index entry when it has a `GSI1SK` (the
    /// row's first `index_end` bytes).
    fn add(&mut self, pk: &str, sk: &str, gsi1sk: Option<&str>, row: &[u8], index_end: usize) {
        self.bytes += self.rows.push([pk.as_bytes(), sk.as_bytes(), b""], row);
        if let Some(g) = gsi1sk {
            self.bytes += self.entries.push(
                [sk.as_bytes(), g.as_bytes(), pk.as_bytes()],
                &row[..index_end],
            );
        }
    }

    /// Sorts both tables' records, keeping the last of each key (see [`sorted`]).
    fn sorted(self) -> Result<Sorted, StoreError> {
        let mut superseded = Vec::new();
        let rows = sorted(self.rows, |old| supersede(&mut superseded, old))?;
        let entries = sorted(self.entries, |_| Ok(()))?;
        Ok(Sorted {
            rows,
            entries,
            superseded,
            bytes: self.bytes,
        })
    }
}

/// The writer [`prepare_written`] hands its caller's code: each item's row made as it comes.
struct Written {
    batch: Batch,
    row: RowWriter,
    /// The names of the attributes of the item being written, to refuse one named twice.
    names: Vec<&'static str>,
    /// The first item refused; the batch fails with it once written.
    refused: Option<StoreError>,
}

impl ItemWriter for Written {
    fn put(
        &mut self,
        key: Key,
        gsi1sk: Option<String>,
        attributes: &mut dyn Iterator<Item = (&'static str, AttributeValue)>,
    ) {
        if self.refused.is_some() {
            return;
        }
        self.row.start();
        self.names.clear();
        let mut size = key_size(PK, &key.pk) + key_size(SK, &key.sk);
        for (name, value) in attributes {
            if [PK, SK, GSI1SK].contains(&name) || self.names.contains(&name) {
                self.refused = Some(StoreError::Invalid(format!(
                    "item ({}, {}) was written with attribute {name} twice",
                    key.pk, key.sk
                )));
                return;
            }
            self.names.push(name);
            size += attribute_size(name, &value);
            // An item too large is refused below, its whole size counted for the message,
            // but its row is not grown past the limit.
            if size <= MAX_ITEM_BYTES {
                self.row.attribute(name, &value);
            }
        }
        if let Some(g) = &gsi1sk {
            size += key_size(GSI1SK, g);
        }
        if let Err(e) = check_item(&key.pk, &key.sk, gsi1sk.as_deref(), size) {
            self.refused = Some(e);
            return;
        }
        let g = gsi1sk.map(AttributeValue::S);
        let (row, index_end) = self.row.finish(g.as_ref(), size);
        let g = match &g {
            Some(AttributeValue::S(g)) => Some(g.as_str()),
            _ => None,
        };
        self.batch.add(&key.pk, &key.sk, g, row, index_end);
    }
}

/// Notes the index entry of a table row replaced within the load.
pub(super) fn supersede(superseded: &mut impl Extend<IndexKey>, old: Record<'_>) -> Dropped {
    if let Some(g) = stored_gsi1sk(old.row())? {
        superseded.extend([index_key(old, g)]);
    }
    Ok(())
}

/// The key of the index entry whose `GSI1SK` is `g` of the table row `row`.
pub(super) fn index_key(row: Record<'_>, g: String) -> IndexKey {
    (row.part(1).to_vec(), g.into_bytes(), row.part(0).to_vec())
}

#[cfg(test)]
pub(super) mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::store::embedded::table::{decode, stored_row};
    use crate::store::embedded::tests::s;
    use crate::store::row::RowRef;

    /// An item as [`ItemWriter::put`] takes it.
    type WrittenItem = (Key, Option<String>, Vec<(&'static str, AttributeValue)>);

    /// An item as [`ItemWriter::put`] takes it: a key from a small space (empty parts, which
    /// a store refuses, included), maybe a `GSI1SK`, and attributes of any value under
    /// names from a fixed set (the writer takes them as `&'static str`), one of them at
    /// times too large for an item.
    fn a_written_item() -> impl Strategy<Value = WrittenItem> {
        const NAMES: &[&str] = &["A", "Name", "Values", "é", "Type", "x"];
        // Mostly items a store keeps, so that batches are accepted and repeat keys (a
        // refused item fails the whole batch).
        let part = |valid: Vec<&'static str>| {
            let valid = prop::sample::select(valid);
            prop_oneof![1 => Just(""), 12 => valid]
        };
        (
            part(vec!["p0", "p1", "p2"]),
            part(vec!["s0", "s1"]),
            prop::option::of(part(vec!["g0", "g1"])),
            prop::collection::btree_map(
                prop::sample::select(NAMES),
                prop_oneof![
                    80 => crate::store::ddbjson::tests::attribute_value(),
                    1 => Just(AttributeValue::S("x".repeat(400 * 1024))),
                ],
                0..4,
            ),
        )
            .prop_map(|(pk, sk, g, attributes)| {
                (
                    Key::new(pk, sk),
                    g.map(str::to_owned),
                    attributes.into_iter().collect(),
                )
            })
    }

    /// A record's key parts, and its row's size and item (the index's keys put back where
    /// an item holds them).
    fn read_record(record: Record<'_>, index: bool) -> (Vec<Vec<u8>>, usize, Item) {
        let parts = (0..3).map(|i| record.part(i).to_vec()).collect();
        let (size, attributes) = stored_row(record.row()).unwrap();
        let text = |i| std::str::from_utf8(record.part(i)).unwrap();
        let row = if index {
            RowRef {
                pk: text(2),
                sk: text(0),
                gsi1sk: Some(text(1)),
                attributes,
            }
        } else {
            RowRef {
                pk: text(0),
                sk: text(1),
                gsi1sk: None,
                attributes,
            }
        };
        (parts, size, decode(row).unwrap())
    }

    proptest! {
        /// A batch written item by item makes the records that its items, made as attribute
        /// maps, make: the same keys, rows of the same items and sizes, the same versions
        /// superseded; or it is refused with the same error.
        #[test]
        fn a_written_batch_makes_what_its_items_make(
            batch in prop::collection::vec(a_written_item(), 0..8),
        ) {
            let write = |batch: Vec<WrittenItem>| -> WriteItems {
                Box::new(move |out| {
                    for (key, g, attributes) in batch {
                        out.put(key, g, &mut attributes.into_iter());
                    }
                    Ok(())
                })
            };
            let mut items = Vec::new();
            write(batch.clone())(&mut items).unwrap();
            let read = |sorted: Result<Sorted, StoreError>| sorted.map(|sorted| {
                let rows: Vec<_> = sorted.rows.iter().map(|r| read_record(r, false)).collect();
                let entries: Vec<_> = sorted.entries.iter().map(|r| read_record(r, true)).collect();
                (rows, entries, sorted.superseded, sorted.bytes)
            }).map_err(|e| e.to_string());
            prop_assert_eq!(read(prepare_written(write(batch))), read(prepare(&items)));
        }
    }

    /// A writer refuses an item that names a key attribute or another attribute twice
    /// among its attributes (attribute maps cannot hold either), and the batch with it.
    #[test]
    fn a_written_item_names_each_attribute_once() {
        for attributes in [
            vec![("A", s("1")), ("A", s("2"))],
            vec![("PK", s("p"))],
            vec![("A", s("1")), ("GSI1SK", s("g"))],
        ] {
            let write: WriteItems = Box::new(move |out| {
                out.put(Key::new("p", "s"), None, &mut std::iter::empty());
                out.put(Key::new("p", "t"), None, &mut attributes.into_iter());
                Ok(())
            });
            assert!(matches!(
                prepare_written(write),
                Err(StoreError::Invalid(_))
            ));
        }
    }

    /// Records read back as they were pushed, across blocks: records that fill a block to
    /// its end, one that does not fit what is left of it, and ones larger than a block; a
    /// copy pushed into other records is the same record.
    #[test]
    fn records_read_back_as_pushed_across_blocks() {
        let sizes = [
            10,
            BLOCK_BYTES - 30,
            20,
            2,
            2 * BLOCK_BYTES,
            5,
            BLOCK_BYTES,
            0,
            7,
        ];
        let made: Vec<([Vec<u8>; 3], Vec<u8>)> = sizes
            .iter()
            .enumerate()
            .map(|(i, &size)| {
                let part = |n: usize| vec![i as u8; n];
                (
                    [part(i % 3), part(1), part(i % 2)],
                    vec![i as u8 ^ 0x5a; size],
                )
            })
            .collect();
        let mut records = Records::with_capacity(2, 64);
        for (parts, row) in &made {
            let len = records.push([&parts[0], &parts[1], &parts[2]], row);
            assert_eq!(len, parts.iter().map(Vec::len).sum::<usize>() + row.len());
        }
        let mut copies = Records::default();
        for record in records.iter() {
            copies.push_record(record);
        }
        for read in [&records, &copies] {
            assert_eq!(read.len(), made.len());
            for (record, (parts, row)) in read.iter().zip(&made) {
                assert_eq!(record.key(), (&parts[0][..], &parts[1][..], &parts[2][..]));
                assert_eq!(record.row(), &row[..]);
            }
        }
        // Each record goes whole where there is room for it: the first into the first block
        // (64 bytes); the second into a new block of BLOCK_BYTES, the third after it and the
        // fourth (4 bytes) into the 4 bytes left; the fifth (twice a block) and the seventh (a
        // block and a byte) each into a block of its own size; the sixth, and the eighth with
        // the last, into new blocks.
        assert_eq!(records.blocks.len(), 6);
    }

    /// Key parts from a small alphabet (the lowest and highest bytes included), so that keys
    /// share first parts and end where others go on.
    pub(in crate::store::embedded) fn a_part() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(prop::sample::select(vec![0u8, 1, b'a', b'b', 255]), 0..4)
    }

    /// Second parts that agree past the 12 and the 28 bytes abbreviated, or differ only by trailing
    /// zero bytes (which the abbreviation's padding must not confuse), or are short.
    fn a_second_part() -> impl Strategy<Value = Vec<u8>> {
        let long = prop::sample::select(vec![
            b"aaaaaaaaaaaaaa".to_vec(),
            b"aaaaaaaaaaaaab".to_vec(),
            b"abababababab".to_vec(),
            // Past the 28 bytes of both abbreviations.
            b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".to_vec(),
            b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaab".to_vec(),
            b"aaaaaaaaaaaaaaaaaaaaab".to_vec(),
            // Zeros where a short part is padded, so that a short and a long part tie on the
            // first abbreviation.
            b"a\0\0\0\0\0\0\0\0\0\0\0\0b".to_vec(),
        ]);
        prop_oneof![
            a_part(),
            (long, a_part(), 0..3usize).prop_map(|(mut part, tail, zeros)| {
                part.extend(tail);
                part.extend(std::iter::repeat_n(0u8, zeros));
                part
            }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// The prefix compared eight bytes at a time is the one compared byte by byte.
        #[test]
        fn common_prefix_is_the_bytes_shared(
            (a, b) in (a_second_part(), a_second_part(), 0..20usize).prop_map(|(a, b, n)| {
                // Often a copy of `a`'s first bytes with `b` after them.
                let mut c = a[..n.min(a.len())].to_vec();
                c.extend(b);
                (a, c)
            }),
        ) {
            let plain = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
            prop_assert_eq!(common_prefix(&a, &b), plain);
            prop_assert_eq!(common_prefix(&b, &a), plain);
        }

        /// The abbreviated sort puts a batch in the order of a plain sort by key, the later of
        /// equal keys first, and marks exactly the keys equal to the one before.
        #[test]
        fn key_order_is_the_order_of_the_keys(
            keys in prop::collection::vec((a_part(), a_second_part(), a_part()), 0..60),
        ) {
            let mut batch = Records::default();
            for (a, b, c) in &keys {
                batch.push([a, b, c], b"row");
            }
            let mut plain: Vec<usize> = (0..batch.len()).collect();
            plain.sort_by(|&i, &j| batch.get(i).key().cmp(&batch.get(j).key()).then(j.cmp(&i)));
            let plain: Vec<(usize, bool)> = plain
                .iter()
                .enumerate()
                .map(|(n, &i)| (i, n > 0 && batch.get(plain[n - 1]).key() == batch.get(i).key()))
                .collect();
            prop_assert_eq!(key_order(&batch), plain);
        }

    }
}
