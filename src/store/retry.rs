//! Chunking and retrying above any [`Store`]: batch gets and puts of any size, whole queries.
//!
//! DynamoDB limits each call (100 keys per BatchGetItem, 25 puts per BatchWriteItem) and may
//! answer only part of a batch under load (`UnprocessedKeys` / `UnprocessedItems`). Both stores
//! return such raw per-call results; this module turns them into complete answers, so the
//! retry policy exists once and the embedded store exercises it too.

use std::borrow::Cow;
use std::collections::HashSet;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::{StreamExt, TryStreamExt};
use rand::Rng;

use super::instrumented::unprocessed_retry;
use super::repeated_key;
use super::{
    BatchGetOutput, Item, Key, Query, RawItem, StartKey, Store, StoreError, MAX_BATCH_GET,
    MAX_BATCH_WRITE,
};

/// Exponential backoff with full jitter, as AWS recommends for unprocessed batch entries:
/// before retry `n` (from 0), sleep a uniformly random time in `[0, min(cap, base * 2^n)]`.
#[derive(Clone, Copy, Debug)]
struct Backoff {
    base: Duration,
    cap: Duration,
    max_retries: u32,
}

impl Backoff {
    const DEFAULT: Backoff = Backoff {
        base: Duration::from_millis(25),
        cap: Duration::from_secs(1),
        max_retries: 8,
    };

    /// The upper bound of the delay before retry `retry` (from 0).
    fn ceiling(&self, retry: u32) -> Duration {
        let factor = 1u32.checked_shl(retry).unwrap_or(u32::MAX);
        self.base.saturating_mul(factor).min(self.cap)
    }

    fn delay(&self, retry: u32) -> Duration {
        let ceiling = self.ceiling(retry);
        if ceiling.is_zero() {
            return ceiling;
        }
        rand::rng().random_range(Duration::ZERO..=ceiling)
    }

    async fn sleep(&self, retry: u32) {
        let delay = self.delay(retry);
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
    }
}

/// Gets any number of keys: de-duplicates, splits into chunks of [`MAX_BATCH_GET`], issues
/// the chunks concurrently, and re-asks for `UnprocessedKeys` with exponential backoff and full
/// jitter (base 25 ms, cap 1 s, at most 8 retries per chunk; then [`StoreError::Throttled`]).
///
/// Returns the items found, in no particular order; missing keys are simply absent.
pub async fn batch_get_all(store: &dyn Store, keys: &[Key]) -> Result<Vec<Item>, StoreError> {
    batch_get_all_with(store, keys, Backoff::DEFAULT).await
}

/// [`batch_get_all`], the items as the store read them ([`Store::batch_get_raw`]).
pub async fn batch_get_all_raw(
    store: &dyn Store,
    keys: &[Key],
) -> Result<Vec<RawItem>, StoreError> {
    batch_get_all_with(store, keys, Backoff::DEFAULT).await
}

/// The form a batch read returns its items in, and the call that reads them so.
trait BatchForm: Sized + Send {
    fn batch_get<'a>(
        store: &'a dyn Store,
        keys: &'a [Key],
    ) -> BoxFuture<'a, Result<BatchGetOutput<Self>, StoreError>>;
}

impl BatchForm for Item {
    fn batch_get<'a>(
        store: &'a dyn Store,
        keys: &'a [Key],
    ) -> BoxFuture<'a, Result<BatchGetOutput<Self>, StoreError>> {
        store.batch_get(keys)
    }
}

impl BatchForm for RawItem {
    fn batch_get<'a>(
        store: &'a dyn Store,
        keys: &'a [Key],
    ) -> BoxFuture<'a, Result<BatchGetOutput<Self>, StoreError>> {
        store.batch_get_raw(keys)
    }
}

async fn batch_get_all_with<T: BatchForm>(
    store: &dyn Store,
    keys: &[Key],
    backoff: Backoff,
) -> Result<Vec<T>, StoreError> {
    // DynamoDB rejects a batch naming one key twice; the first occurrence keeps its place.
    // Keys are nearly always distinct (a loader's batch is), and then they are sent as they
    // are, without a copy.
    let distinct: Cow<'_, [Key]> = if repeated_key(keys.iter()).is_some() {
        let mut seen = HashSet::with_capacity(keys.len());
        Cow::Owned(
            keys.iter()
                .filter(|key| seen.insert(*key))
                .cloned()
                .collect(),
        )
    } else {
        Cow::Borrowed(keys)
    };
    let chunks = distinct
        .chunks(MAX_BATCH_GET)
        .map(|chunk| get_chunk(store, chunk, backoff));
    let results = futures::future::try_join_all(chunks).await?;
    Ok(results.into_iter().flatten().collect())
}

async fn get_chunk<T: BatchForm>(
    store: &dyn Store,
    chunk: &[Key],
    backoff: Backoff,
) -> Result<Vec<T>, StoreError> {
    let mut items = Vec::with_capacity(chunk.len());
    let mut pending = Cow::Borrowed(chunk);
    let mut retry = 0;
    loop {
        // Retries are marked for the metrics (`gridgate_dynamodb_unprocessed_retries_total`).
        let out = unprocessed_retry(retry > 0, T::batch_get(store, &pending)).await?;
        items.extend(out.items);
        if out.unprocessed.is_empty() {
            return Ok(items);
        }
        if retry == backoff.max_retries {
            return Err(StoreError::Throttled(format!(
                "{} of the keys of a BatchGetItem still unprocessed after {retry} retries \
                 (first: {})",
                out.unprocessed.len(),
                out.unprocessed[0]
            )));
        }
        backoff.sleep(retry).await;
        retry += 1;
        pending = Cow::Owned(out.unprocessed);
    }
}

/// Puts any number of items via [`Store::batch_put`] in chunks of [`MAX_BATCH_WRITE`],
/// `concurrency` chunks at a time (at least one), retrying unprocessed items with the same
/// backoff as [`batch_get_all`].
///
/// The items must have distinct keys: DynamoDB rejects a batch putting one key twice, and
/// chunks in flight together are not ordered.
pub async fn batch_put_all<S: Store + ?Sized>(
    store: &S,
    items: Vec<Item>,
    concurrency: usize,
) -> Result<(), StoreError> {
    batch_put_all_with(store, items, concurrency, Backoff::DEFAULT).await
}

async fn batch_put_all_with<S: Store + ?Sized>(
    store: &S,
    mut items: Vec<Item>,
    concurrency: usize,
    backoff: Backoff,
) -> Result<(), StoreError> {
    let mut chunks = Vec::with_capacity(items.len().div_ceil(MAX_BATCH_WRITE));
    while !items.is_empty() {
        let rest = items.split_off(items.len().min(MAX_BATCH_WRITE));
        chunks.push(std::mem::replace(&mut items, rest));
    }
    futures::stream::iter(chunks)
        .map(|chunk| put_chunk(store, chunk, backoff))
        .buffer_unordered(concurrency.max(1))
        .try_collect::<()>()
        .await
}

async fn put_chunk<S: Store + ?Sized>(
    store: &S,
    mut pending: Vec<Item>,
    backoff: Backoff,
) -> Result<(), StoreError> {
    let mut retry = 0;
    loop {
        let unprocessed = unprocessed_retry(retry > 0, store.batch_put(pending)).await?;
        if unprocessed.is_empty() {
            return Ok(());
        }
        if retry == backoff.max_retries {
            return Err(StoreError::Throttled(format!(
                "{} items of a BatchWriteItem still unprocessed after {retry} retries",
                unprocessed.len()
            )));
        }
        backoff.sleep(retry).await;
        retry += 1;
        pending = unprocessed;
    }
}

/// Runs a query to the end of its range (following `last_evaluated`), returning all items
/// that pass its filter. For small partitions only (a project's custom fields): everything is
/// held in memory.
pub async fn query_all(store: &dyn Store, query: &Query) -> Result<Vec<Item>, StoreError> {
    let mut pages = Pages(query.clone());
    let mut items = Vec::new();
    loop {
        let out = store.query(&pages.0).await?;
        items.extend(out.items);
        if !pages.advance(out.last_evaluated)? {
            return Ok(items);
        }
    }
}

/// [`query_all`], with each item as the store read it ([`Store::query_raw`]).
pub async fn query_all_raw(store: &dyn Store, query: &Query) -> Result<Vec<RawItem>, StoreError> {
    let mut pages = Pages(query.clone());
    let mut items = Vec::new();
    loop {
        let out = store.query_raw(&pages.0).await?;
        items.extend(out.items);
        if !pages.advance(out.last_evaluated)? {
            return Ok(items);
        }
    }
}

/// A query followed to the end of its range, one page after another.
struct Pages(Query);

impl Pages {
    /// Moves on past a page that ended at `last`: `false` at the end of the range.
    fn advance(&mut self, last: Option<StartKey>) -> Result<bool, StoreError> {
        match last {
            None => Ok(false),
            // A store that hands back the position it was given would loop forever.
            Some(next) if self.0.start.as_ref() == Some(&next) => {
                Err(StoreError::Corrupt(format!(
                    "query of partition {} did not advance past {}",
                    self.0.partition, next.key
                )))
            }
            Some(next) => {
                self.0.start = Some(next);
                Ok(true)
            }
        }
    }
}

/// Scans the whole table page by page, handing each page to `visit`.
pub async fn scan_all(
    store: &dyn Store,
    mut visit: impl FnMut(Vec<Item>),
) -> Result<(), StoreError> {
    let mut start: Option<Key> = None;
    loop {
        let out = store.scan(start.as_ref(), None).await?;
        visit(out.items);
        match out.last_evaluated {
            None => return Ok(()),
            Some(next) if start.as_ref() == Some(&next) => {
                return Err(StoreError::Corrupt(format!(
                    "scan did not advance past {next}"
                )))
            }
            Some(next) => start = Some(next),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};
    use std::sync::Mutex;

    use async_trait::async_trait;

    use super::*;
    use crate::store::{
        AttributeValue, BatchGetOutput, Capacity, GetOutput, Index, QueryOutput, RawItem, StartKey,
        WriteOp, WriteOutput,
    };

    /// No waiting in tests: the delays themselves are not what these tests check.
    const NO_DELAY: Backoff = Backoff {
        base: Duration::ZERO,
        cap: Duration::ZERO,
        max_retries: 8,
    };

    fn item_for(key: &Key) -> Item {
        HashMap::from([
            ("PK".to_string(), AttributeValue::S(key.pk.clone())),
            ("SK".to_string(), AttributeValue::S(key.sk.clone())),
        ])
        .into()
    }

    fn key_of(item: &Item) -> Key {
        let s = |name: &str| match item.get(name) {
            Some(AttributeValue::S(s)) => s.clone(),
            other => panic!("no string {name}: {other:?}"),
        };
        Key::new(s("PK"), s("SK"))
    }

    /// A fake store over a sorted map. On each of its first `flaky_calls` batch calls it
    /// processes only the first half (rounded down) of the request, so at least one entry is
    /// left over; keys in `stuck` are never processed.
    #[derive(Default)]
    struct FakeStore {
        data: Mutex<BTreeMap<Key, Item>>,
        flaky_calls: usize,
        stuck: HashSet<Key>,
        calls: Mutex<Vec<usize>>,
        in_flight: Mutex<(usize, usize)>,
    }

    impl FakeStore {
        fn with_keys(keys: &[Key], flaky_calls: usize) -> Self {
            FakeStore {
                data: Mutex::new(keys.iter().map(|k| (k.clone(), item_for(k))).collect()),
                flaky_calls,
                ..FakeStore::default()
            }
        }

        /// Records a call of `size` entries; returns how many of them to process.
        fn record(&self, size: usize) -> usize {
            let mut calls = self.calls.lock().unwrap();
            calls.push(size);
            if calls.len() <= self.flaky_calls {
                size / 2
            } else {
                size
            }
        }

        fn calls(&self) -> Vec<usize> {
            self.calls.lock().unwrap().clone()
        }
    }

    #[async_trait]
    impl Store for FakeStore {
        fn name(&self) -> &'static str {
            "fake"
        }

        async fn get(&self, key: &Key) -> Result<GetOutput, StoreError> {
            self.record(1);
            let item = self.data.lock().unwrap().get(key).cloned();
            Ok(GetOutput {
                item,
                consumed: Capacity::read(0.5),
            })
        }

        // An in-memory map: its raw reads are its maps.
        async fn query_raw(&self, query: &Query) -> Result<QueryOutput<RawItem>, StoreError> {
            Ok(self.query(query).await?.into_raw())
        }

        async fn batch_get_raw(&self, keys: &[Key]) -> Result<BatchGetOutput<RawItem>, StoreError> {
            Ok(self.batch_get(keys).await?.into_raw())
        }

        async fn batch_get(&self, keys: &[Key]) -> Result<BatchGetOutput, StoreError> {
            assert!(
                !keys.is_empty() && keys.len() <= MAX_BATCH_GET,
                "{}",
                keys.len()
            );
            let distinct: HashSet<&Key> = keys.iter().collect();
            assert_eq!(distinct.len(), keys.len(), "duplicate keys in one batch");
            let processed = self.record(keys.len());
            let data = self.data.lock().unwrap();
            let mut out = BatchGetOutput::default();
            for (i, key) in keys.iter().enumerate() {
                if i >= processed || self.stuck.contains(key) {
                    out.unprocessed.push(key.clone());
                } else if let Some(item) = data.get(key) {
                    out.items.push(item.clone());
                }
            }
            out.consumed = Capacity::read(0.5 * out.items.len() as f64);
            Ok(out)
        }

        async fn query(&self, query: &Query) -> Result<QueryOutput, StoreError> {
            self.record(0);
            let data = self.data.lock().unwrap();
            let after = query.start.as_ref().map(|s| s.key.clone());
            let matching: Vec<&Item> = data
                .range(Key::new(query.partition.clone(), String::new())..)
                .take_while(|(k, _)| k.pk == query.partition)
                .filter(|(k, _)| after.as_ref().is_none_or(|a| *k > a))
                .map(|(_, item)| item)
                .collect();
            let limit = query.limit.map_or(usize::MAX, |l| l as usize);
            let read: Vec<Item> = matching.iter().take(limit).map(|i| (*i).clone()).collect();
            let last_evaluated = (matching.len() > limit).then(|| StartKey {
                key: key_of(&read[read.len() - 1]),
                gsi1sk: None,
            });
            Ok(QueryOutput {
                scanned: read.len(),
                items: read,
                last_evaluated,
                consumed: Capacity::read(0.5),
            })
        }

        async fn get_consistent(&self, key: &Key) -> Result<GetOutput, StoreError> {
            self.get(key).await
        }

        async fn scan(
            &self,
            _start: Option<&Key>,
            _limit: Option<u32>,
        ) -> Result<crate::store::ScanOutput, StoreError> {
            Err(StoreError::Invalid("not in this fake".into()))
        }

        async fn transact_write(&self, _ops: Vec<WriteOp>) -> Result<WriteOutput, StoreError> {
            Err(StoreError::Invalid("not in this fake".into()))
        }

        async fn batch_put(&self, items: Vec<Item>) -> Result<Vec<Item>, StoreError> {
            assert!(!items.is_empty() && items.len() <= MAX_BATCH_WRITE);
            {
                let mut in_flight = self.in_flight.lock().unwrap();
                in_flight.0 += 1;
                in_flight.1 = in_flight.1.max(in_flight.0);
            }
            // Let other chunks start, so the concurrency bound is actually exercised.
            tokio::task::yield_now().await;
            let processed = self.record(items.len());
            let mut unprocessed = Vec::new();
            {
                let mut data = self.data.lock().unwrap();
                for (i, item) in items.into_iter().enumerate() {
                    if i >= processed {
                        unprocessed.push(item);
                    } else {
                        let previous = data.insert(key_of(&item), item);
                        assert!(previous.is_none(), "item written twice");
                    }
                }
            }
            self.in_flight.lock().unwrap().0 -= 1;
            Ok(unprocessed)
        }

        async fn ensure_table(&self) -> Result<(), StoreError> {
            Ok(())
        }

        async fn ping(&self) -> Result<(), StoreError> {
            Ok(())
        }
    }

    fn keys(n: usize) -> Vec<Key> {
        (0..n)
            .map(|i| Key::new(format!("p{}", i % 7), format!("s{i:04}")))
            .collect()
    }

    fn assert_each_once(items: &[Item], expected: &[Key]) {
        let mut got: Vec<Key> = items.iter().map(key_of).collect();
        got.sort();
        let mut want = expected.to_vec();
        want.sort();
        assert_eq!(got, want);
    }

    #[tokio::test]
    async fn batch_get_returns_every_key_once_across_chunks_and_retries() {
        let existing = keys(250);
        let store = FakeStore::with_keys(&existing, 3);
        // Ask for every key, 40 of them twice, plus 5 keys that do not exist.
        let mut asked: Vec<Key> = existing.clone();
        asked.extend(existing[100..140].iter().cloned());
        asked.extend((0..5).map(|i| Key::new("missing", format!("m{i}"))));

        let items = batch_get_all_with(&store, &asked, NO_DELAY).await.unwrap();

        assert_each_once(&items, &existing);
        let calls = store.calls();
        // 255 distinct keys: chunks of 100, 100, 55; each of the first 3 calls (whichever
        // chunks they serve) leaves some keys unprocessed, costing exactly one extra call.
        assert_eq!(calls.len(), 3 + 3, "{calls:?}");
        assert!(calls.iter().all(|&n| n <= MAX_BATCH_GET));
    }

    #[tokio::test]
    async fn batch_get_retries_a_shrinking_remainder_with_the_real_backoff() {
        let existing = keys(10);
        let store = FakeStore::with_keys(&existing, 2);
        let items = batch_get_all(&store, &existing).await.unwrap();
        assert_each_once(&items, &existing);
        // 10 keys -> 5 processed -> 2 processed -> rest.
        assert_eq!(store.calls(), vec![10, 5, 3]);

        // Items as the store read them come through the same chunks and retries.
        let store = FakeStore::with_keys(&existing, 2);
        let raw = batch_get_all_raw(&store, &existing).await.unwrap();
        let items: Vec<Item> = raw.into_iter().map(|r| r.item().unwrap()).collect();
        assert_each_once(&items, &existing);
        assert_eq!(store.calls(), vec![10, 5, 3]);
    }

    #[tokio::test]
    async fn batch_get_of_nothing_makes_no_call() {
        let store = FakeStore::default();
        assert!(batch_get_all(&store, &[]).await.unwrap().is_empty());
        assert!(store.calls().is_empty());
    }

    #[tokio::test]
    async fn a_key_never_processed_ends_throttled_after_the_retry_limit() {
        let existing = keys(150);
        let mut store = FakeStore::with_keys(&existing, 0);
        store.stuck.insert(existing[120].clone());

        let result = batch_get_all_with::<Item>(&store, &existing, NO_DELAY).await;

        assert!(
            matches!(result, Err(StoreError::Throttled(_))),
            "{result:?}"
        );
        let calls = store.calls();
        // The first chunk takes one call; the second its first call plus 8 retries.
        assert_eq!(
            calls.len(),
            1 + 1 + NO_DELAY.max_retries as usize,
            "{calls:?}"
        );
        assert_eq!(calls.iter().filter(|&&n| n == 1).count(), 8);
    }

    #[tokio::test]
    async fn batch_put_writes_every_item_once_in_bounded_concurrent_chunks() {
        let store = FakeStore {
            flaky_calls: 4,
            ..FakeStore::default()
        };
        let wanted = keys(110);
        let items: Vec<Item> = wanted.iter().map(item_for).collect();

        batch_put_all_with(&store, items, 2, NO_DELAY)
            .await
            .unwrap();

        let stored: Vec<Item> = store.data.lock().unwrap().values().cloned().collect();
        assert_each_once(&stored, &wanted);
        let calls = store.calls();
        // 110 items: 5 chunks (4 x 25 + 10), plus one extra call for each of the 4 flaky ones.
        assert_eq!(calls.len(), 5 + 4, "{calls:?}");
        assert!(calls.iter().all(|&n| n <= MAX_BATCH_WRITE));
        let max_in_flight = store.in_flight.lock().unwrap().1;
        assert_eq!(max_in_flight, 2);
    }

    #[tokio::test]
    async fn batch_put_gives_up_throttled() {
        let store = FakeStore {
            flaky_calls: usize::MAX,
            ..FakeStore::default()
        };
        let items: Vec<Item> = keys(3).iter().map(item_for).collect();
        let result = batch_put_all_with(&store, items, 4, NO_DELAY).await;
        assert!(
            matches!(result, Err(StoreError::Throttled(_))),
            "{result:?}"
        );
        assert_eq!(store.calls().len(), 1 + NO_DELAY.max_retries as usize);
    }

    #[tokio::test]
    async fn query_all_follows_pages_to_the_end() {
        let all = keys(70);
        let store = FakeStore::with_keys(&all, 0);
        let mut query = Query::partition(Index::Table, "p3");
        query.limit = Some(3);
        let items = query_all(&store, &query).await.unwrap();
        let expected: Vec<Key> = all.iter().filter(|k| k.pk == "p3").cloned().collect();
        assert_eq!(expected.len(), 10);
        assert_eq!(items.iter().map(key_of).collect::<Vec<_>>(), expected);
        // Pages of 3, 3, 3, 1.
        assert_eq!(store.calls().len(), 4);
    }

    #[test]
    fn backoff_grows_exponentially_up_to_the_cap() {
        let b = Backoff::DEFAULT;
        assert_eq!(b.ceiling(0), Duration::from_millis(25));
        assert_eq!(b.ceiling(3), Duration::from_millis(200));
        assert_eq!(b.ceiling(6), Duration::from_secs(1));
        assert_eq!(b.ceiling(40), Duration::from_secs(1));
        for retry in 0..10 {
            assert!(b.delay(retry) <= b.ceiling(retry));
        }
    }
}
