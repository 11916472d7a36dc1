//! Reads for the embedded store: Query plans as exact redb key ranges, paging by `Limit` and
//! 1 MB, Scan and BatchGetItem, each priced as DynamoDB prices it.

use redb::{Database, ReadableDatabase};

use super::table::{
    corrupt, decode, index_key, key_str, stored_row, table_key, unavailable, GSI1_INDEX, ITEMS,
};
use super::validate::{check_key_value, validate_key};
use crate::store::limits::{MAX_PARTITION_KEY_BYTES, MAX_SORT_KEY_BYTES, PAGE_BYTES};
use crate::store::row::{Row, RowRef};
use crate::store::table::{GSI1SK, PK, SK};
use crate::store::{
    BatchGetOutput, Capacity, Filter, Index, Item, Key, Query, QueryOutput, RawItem, ScanOutput,
    SortCondition, StartKey, StoreError,
};

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

pub(super) fn batch_get_sync<T: Form>(
    db: &Database,
    keys: &[Key],
) -> Result<BatchGetOutput<T>, StoreError> {
    let txn = db.begin_read().map_err(unavailable)?;
    let table = txn.open_table(ITEMS).map_err(unavailable)?;
    let mut items = Vec::with_capacity(keys.len());
    let mut sizes = Vec::with_capacity(keys.len());
    for key in keys {
        if let Some(guard) = table
            .get(table_key(&key.pk, &key.sk))
            .map_err(unavailable)?
        {
            let (size, attributes) = stored_row(guard.value())?;
            let row = RowRef {
                pk: &key.pk,
                sk: &key.sk,
                gsi1sk: None,
                attributes,
            };
            let item = T::read(row, None)?;
            sizes.push(size);
            items.extend(item);
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
pub(super) struct QueryPlan {
    index: Index,
    forward: bool,
    limit: Option<usize>,
    lo: Vec<String>,
    hi: Vec<String>,
}

impl QueryPlan {
    pub(super) fn new(query: &Query) -> Result<QueryPlan, StoreError> {
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

/// The form a query hands its items over in: attribute maps ([`Store::query`]) or the
/// stored rows as they are ([`Store::query_raw`]).
///
/// [`Store::query`]: crate::store::Store::query
/// [`Store::query_raw`]: crate::store::Store::query_raw
pub(super) trait Form: Sized {
    /// Reads a stored row, unless `filter` leaves it out.
    fn read(row: RowRef<'_>, filter: Option<&Filter>) -> Result<Option<Self>, StoreError>;
}

impl Form for Item {
    fn read(row: RowRef<'_>, filter: Option<&Filter>) -> Result<Option<Self>, StoreError> {
        if !kept(row, filter)? {
            return Ok(None);
        }
        decode(row).map(Some)
    }
}

impl Form for RawItem {
    fn read(row: RowRef<'_>, filter: Option<&Filter>) -> Result<Option<Self>, StoreError> {
        if !kept(row, filter)? {
            return Ok(None);
        }
        Ok(Some(RawItem::Row(Row {
            pk: row.pk.to_owned(),
            sk: row.sk.to_owned(),
            gsi1sk: row.gsi1sk.map(str::to_owned),
            attributes: row.attributes.to_vec(),
        })))
    }
}

/// Whether `filter` keeps a row, asked of the row as stored: the rows a filter leaves out
/// (most of what the empty cells of a sorted column read) are never built.
fn kept(row: RowRef<'_>, filter: Option<&Filter>) -> Result<bool, StoreError> {
    match filter {
        None => Ok(true),
        Some(filter) => filter.matches_row(row).map_err(|e| corrupt(&e)),
    }
}

/// What reading one more row did to a page.
enum Step {
    /// The page takes more rows.
    More,
    /// The page is over (by `Limit` or size).
    Full,
    /// The row was not read: the page would read more rows than its cap.
    OverCap,
}

/// Collects one Query page: counts what was read, applies the filter, and decides when the
/// page is over.
struct Page<'a, T> {
    limit: Option<usize>,
    /// The most rows this read may take before it gives up (see [`query_sync`]).
    cap: usize,
    filter: Option<&'a Filter>,
    items: Vec<T>,
    scanned: usize,
    bytes: usize,
    last_evaluated: Option<StartKey>,
}

impl<'a, T: Form> Page<'a, T> {
    fn new(limit: Option<usize>, cap: usize, filter: Option<&'a Filter>) -> Self {
        Page {
            limit,
            cap,
            filter,
            items: Vec::with_capacity(limit.unwrap_or(0).min(128)),
            scanned: 0,
            bytes: 0,
            last_evaluated: None,
        }
    }

    /// Takes one stored row read at `position`, unless the page has read its cap of rows.
    /// DynamoDB ends a page when `Limit` items have been read or when 1 MB has been read, and
    /// in both cases returns the last item read as `LastEvaluatedKey` without looking
    /// further, even if no item follows.
    fn read(
        &mut self,
        bytes: &[u8],
        key: (&str, &str, Option<&str>),
        position: impl FnOnce() -> StartKey,
    ) -> Result<Step, StoreError> {
        if self.scanned >= self.cap {
            return Ok(Step::OverCap);
        }
        let (size, attributes) = stored_row(bytes)?;
        let (pk, sk, gsi1sk) = key;
        let row = RowRef {
            pk,
            sk,
            gsi1sk,
            attributes,
        };
        let item = T::read(row, self.filter)?;
        self.scanned += 1;
        self.bytes += size;
        self.items.extend(item);
        let full = self.limit.is_some_and(|l| self.scanned >= l) || self.bytes >= PAGE_BYTES;
        if full {
            self.last_evaluated = Some(position());
            return Ok(Step::Full);
        }
        Ok(Step::More)
    }

    fn finish(self) -> QueryOutput<T> {
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
pub(super) fn scan_sync(
    db: &Database,
    start: Option<&Key>,
    limit: Option<u32>,
) -> Result<ScanOutput, StoreError> {
    let txn = db.begin_read().map_err(unavailable)?;
    let table = txn.open_table(ITEMS).map_err(unavailable)?;
    let range = match start {
        Some(key) => table.range(table_key(&key.pk, &key.sk)..),
        None => table.range::<(&[u8], &[u8])>(..),
    }
    .map_err(unavailable)?;
    let limit = limit.map_or(usize::MAX, |l| l as usize);
    let mut out = ScanOutput::default();
    let mut bytes = 0;
    let mut last = None;
    for entry in range {
        let (key, value) = entry.map_err(unavailable)?;
        let (pk, sk) = key.value();
        let (pk, sk) = (key_str(pk)?, key_str(sk)?);
        if start.is_some_and(|s| s.pk == pk && s.sk == sk) {
            continue;
        }
        if out.items.len() >= limit || bytes >= PAGE_BYTES {
            out.last_evaluated = last.take();
            break;
        }
        let (size, attributes) = stored_row(value.value())?;
        let item = decode(RowRef {
            pk,
            sk,
            gsi1sk: None,
            attributes,
        })?;
        bytes += size;
        last = Some(Key::new(pk, sk));
        out.items.push(item);
    }
    // Like DynamoDB, a page that stopped at its limit names where it stopped even when
    // nothing follows; the next page is then empty.
    if out.items.len() >= limit && out.last_evaluated.is_none() {
        out.last_evaluated = last;
    }
    out.consumed = Capacity::for_query_bytes(bytes);
    Ok(out)
}

/// One Query page, read in one redb read transaction. A read that would take more than `cap`
/// rows stops before the next one and returns `None`, having answered nothing: the caller
/// runs it again where a long read may run (see `EmbeddedStore::query_as`).
pub(super) fn query_sync<T: Form>(
    db: &Database,
    plan: &QueryPlan,
    filter: Option<&Filter>,
    cap: usize,
) -> Result<Option<QueryOutput<T>>, StoreError> {
    let mut page = Page::new(plan.limit, cap, filter);
    // A start key at or past the end of the condition's range leaves nothing to read; redb's
    // range needs lo <= hi, so this is checked rather than handed down.
    if plan.lo >= plan.hi {
        return Ok(Some(page.finish()));
    }
    let txn = db.begin_read().map_err(unavailable)?;
    match plan.index {
        Index::Table => {
            let items = txn.open_table(ITEMS).map_err(unavailable)?;
            let (lo, hi) = (&plan.lo, &plan.hi);
            let range = items
                .range(table_key(&lo[0], &lo[1])..table_key(&hi[0], &hi[1]))
                .map_err(unavailable)?;
            let entries: Box<dyn Iterator<Item = _>> = if plan.forward {
                Box::new(range)
            } else {
                Box::new(range.rev())
            };
            for entry in entries {
                let (key, value) = entry.map_err(unavailable)?;
                let (pk, sk) = key.value();
                let (pk, sk) = (key_str(pk)?, key_str(sk)?);
                let position = || StartKey {
                    key: Key::new(pk, sk),
                    gsi1sk: None,
                };
                match page.read(value.value(), (pk, sk, None), position)? {
                    Step::More => {}
                    Step::Full => break,
                    Step::OverCap => return Ok(None),
                }
            }
        }
        Index::Gsi1 => {
            let index = txn.open_table(GSI1_INDEX).map_err(unavailable)?;
            let (lo, hi) = (&plan.lo, &plan.hi);
            let range = index
                .range(index_key(&lo[0], &lo[1], &lo[2])..index_key(&hi[0], &hi[1], &hi[2]))
                .map_err(unavailable)?;
            let entries: Box<dyn Iterator<Item = _>> = if plan.forward {
                Box::new(range)
            } else {
                Box::new(range.rev())
            };
            for entry in entries {
                let (key, value) = entry.map_err(unavailable)?;
                let (sk, gsi1sk, pk) = key.value();
                let (sk, gsi1sk, pk) = (key_str(sk)?, key_str(gsi1sk)?, key_str(pk)?);
                // Projection ALL: the entry holds the item, written with it in one transaction.
                let position = || StartKey {
                    key: Key::new(pk, sk),
                    gsi1sk: Some(gsi1sk.to_owned()),
                };
                match page.read(value.value(), (pk, sk, Some(gsi1sk)), position)? {
                    Step::More => {}
                    Step::Full => break,
                    Step::OverCap => return Ok(None),
                }
            }
        }
    }
    Ok(Some(page.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::capacity::item_size;
    use crate::store::embedded::tests::{item, s, sks, store, table_start, with};
    use crate::store::{AttrPath, Store};

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
        // Read as text, each row is priced by the size it carries: the same page, the same cost,
        // and each item with its key from the row.
        let raw = store
            .query_raw(&Query::partition(Index::Table, "P"))
            .await
            .unwrap();
        assert_eq!(
            (raw.scanned, &raw.last_evaluated, raw.consumed),
            (first.scanned, &first.last_evaluated, first.consumed)
        );
        let read: Vec<Item> = raw.items.into_iter().map(|r| r.item().unwrap()).collect();
        assert_eq!(read, first.items);

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

    /// A read in place gives up before the row past its cap, answering nothing; the store
    /// then runs it whole on the blocking pool, so a Query longer than the cap reads exactly
    /// as a short one would (filtered or not, either index).
    #[tokio::test]
    async fn a_read_longer_than_its_cap_is_run_again_uncapped() {
        let (_dir, store) = store().await;
        let n = crate::store::embedded::MAX_READ_IN_PLACE + 5;
        let rows: Vec<Item> = (0..n)
            .map(|i| {
                let sk = format!("k{i:04}");
                let row = item("P", &sk, Some(&sk));
                if i % 2 == 1 {
                    with(row, "Odd", s("yes"))
                } else {
                    row
                }
            })
            .collect();
        store.put_many(rows.clone()).await.unwrap();
        let plan = QueryPlan::new(&Query::partition(Index::Table, "P")).unwrap();
        assert!(query_sync::<Item>(&store.db, &plan, None, 3)
            .unwrap()
            .is_none());
        let capped = query_sync::<Item>(&store.db, &plan, None, n)
            .unwrap()
            .unwrap();
        assert_eq!(capped.items, rows);

        let all = store
            .query(&Query::partition(Index::Table, "P"))
            .await
            .unwrap();
        assert_eq!((all.items, all.scanned), (rows.clone(), n));
        assert_eq!(all.last_evaluated, None);
        // The index partition `G`: one row in each of `n` table partitions.
        let indexed: Vec<Item> = (0..n)
            .map(|i| item(&format!("p{i:04}"), "G", Some(&format!("k{i:04}"))))
            .collect();
        store.put_many(indexed.clone()).await.unwrap();
        let by_index = store
            .query_raw(&Query::partition(Index::Gsi1, "G"))
            .await
            .unwrap();
        let read: Vec<Item> = by_index
            .items
            .into_iter()
            .map(|r| r.item().unwrap())
            .collect();
        assert_eq!(read, indexed);
        let odd = store
            .query(&Query {
                filter: Some(Filter::AttributeExists(AttrPath::new(["Odd"]))),
                ..Query::partition(Index::Table, "P")
            })
            .await
            .unwrap();
        assert_eq!(odd.scanned, n);
        assert_eq!(odd.items.len(), n / 2);
    }

    #[test]
    fn prefix_end_is_the_next_string_after_every_extension() {
        assert_eq!(prefix_end("ab"), Some("ac".to_owned()));
        assert_eq!(prefix_end("a\u{10FFFF}"), Some("b".to_owned()));
        assert_eq!(prefix_end("\u{D7FF}"), Some("\u{E000}".to_owned()));
        assert_eq!(prefix_end("\u{10FFFF}"), None);
    }
}
