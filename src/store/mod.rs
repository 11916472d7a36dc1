//! The storage boundary: DynamoDB's operations in typed form, one trait, two implementations.
//!
//! Everything above this module speaks [`Store`]; only the submodules here know how a call is
//! carried out (`dynamodb` over the AWS SDK, `embedded` over redb). The physical table layout —
//! attribute names, the index name — lives in [`table`] so both stores maintain it identically.
//! Each call reports the read capacity DynamoDB would charge for it ([`capacity`]); [`Metered`]
//! adds those up per request; [`instrumented::Instrumented`] traces and counts them for the
//! process's metrics.

pub mod capacity;
pub mod ddbjson;
pub mod dynamodb;
pub mod embedded;
pub mod instrumented;
pub mod limits;
mod metered;
pub mod raw;
pub mod retry;
pub mod row;
pub mod table;

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
pub use serde_dynamo::{AttributeValue, Item};

pub use capacity::Capacity;
pub use instrumented::Instrumented;
pub use metered::{CallBudget, CostMeter, CostReport, Metered};
pub use raw::RawItem;

/// Makes an item of a map as it is. serde_dynamo's `Item::from` rebuilds the map entry by entry
/// (it converts each value), which costs a hash and a move per attribute of every item read.
pub fn item_of(map: std::collections::HashMap<String, AttributeValue>) -> Item {
    let mut item = Item::default();
    *item.inner_mut() = map;
    item
}

/// A shared handle to any store.
pub type DynStore = Arc<dyn Store>;

/// The primary key of a table item: partition key `PK` and sort key `SK`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub pk: String,
    pub sk: String,
}

impl Key {
    pub fn new(pk: impl Into<String>, sk: impl Into<String>) -> Self {
        Key {
            pk: pk.into(),
            sk: sk.into(),
        }
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {})", self.pk, self.sk)
    }
}

/// A key that `keys` name more than once (the first such in key order), if any: what
/// DynamoDB refuses in one BatchGetItem, BatchWriteItem or transaction. Found by sorting the
/// keys as given (a call names at most 100), with no copies of them and no hashing.
pub(crate) fn repeated_key<K: std::borrow::Borrow<Key>>(
    keys: impl Iterator<Item = K>,
) -> Option<K> {
    let mut keys: Vec<K> = keys.collect();
    keys.sort_unstable_by(|a, b| a.borrow().cmp(b.borrow()));
    let at = keys
        .windows(2)
        .position(|pair| pair[0].borrow() == pair[1].borrow())?;
    Some(keys.swap_remove(at))
}

/// Which key structure a [`Query`] reads: the table (`PK`, `SK`) or the inverted index
/// `GSI1` (`SK`, `GSI1SK`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Index {
    Table,
    Gsi1,
}

/// The sort-key half of a key condition. Comparisons are on UTF-8 bytes, as DynamoDB compares
/// strings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SortCondition {
    Any,
    Eq(String),
    BeginsWith(String),
    /// Inclusive on both ends, like DynamoDB's `BETWEEN`.
    Between(String, String),
    Lt(String),
    Le(String),
    Gt(String),
    Ge(String),
}

impl SortCondition {
    /// Whether a sort-key value satisfies this condition.
    pub fn matches(&self, value: &str) -> bool {
        match self {
            SortCondition::Any => true,
            SortCondition::Eq(v) => value == v,
            SortCondition::BeginsWith(p) => value.starts_with(p.as_str()),
            SortCondition::Between(lo, hi) => value >= lo.as_str() && value <= hi.as_str(),
            SortCondition::Lt(v) => value < v.as_str(),
            SortCondition::Le(v) => value <= v.as_str(),
            SortCondition::Gt(v) => value > v.as_str(),
            SortCondition::Ge(v) => value >= v.as_str(),
        }
    }
}

/// A position in a query's result order, as DynamoDB's `LastEvaluatedKey` /
/// `ExclusiveStartKey`. For `GSI1` queries it carries the index sort key too.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StartKey {
    pub key: Key,
    pub gsi1sk: Option<String>,
}

/// A path into an item, e.g. `["Values", "xattrib-3812"]` for one entry of a map attribute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttrPath(pub Vec<String>);

impl AttrPath {
    pub fn new<I, S>(parts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        AttrPath(parts.into_iter().map(Into::into).collect())
    }

    /// Resolves the path in an item.
    pub fn get<'a>(&self, item: &'a Item) -> Option<&'a AttributeValue> {
        let (first, rest) = self.0.split_first()?;
        let mut value = item.get(first)?;
        for part in rest {
            match value {
                AttributeValue::M(map) => value = map.get(part)?,
                _ => return None,
            }
        }
        Some(value)
    }
}

/// A filter applied to the items a query read, after `Limit` (as DynamoDB's
/// `FilterExpression`): filtered-out items still cost read capacity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Filter {
    AttributeNotExists(AttrPath),
    AttributeExists(AttrPath),
}

impl Filter {
    pub fn matches(&self, item: &Item) -> bool {
        match self {
            Filter::AttributeNotExists(path) => path.get(item).is_none(),
            Filter::AttributeExists(path) => path.get(item).is_some(),
        }
    }

    /// [`Filter::matches`] on a stored row, read without building the item: a filtered
    /// query reads many rows to keep a few (the empty cells of a sorted column).
    pub fn matches_row(&self, row: row::RowRef<'_>) -> Result<bool, row::RowError> {
        Ok(match self {
            Filter::AttributeNotExists(path) => !row.has_path(&path.0)?,
            Filter::AttributeExists(path) => row.has_path(&path.0)?,
        })
    }
}

/// A Query call: one partition of the table or of `GSI1`, in sort-key order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    pub index: Index,
    pub partition: String,
    pub sort: SortCondition,
    /// `true` for ascending sort-key order (`ScanIndexForward`).
    pub forward: bool,
    /// The maximum number of items to *read* (before the filter), as DynamoDB's `Limit`.
    pub limit: Option<u32>,
    /// Continue after this position (exclusive).
    pub start: Option<StartKey>,
    pub filter: Option<Filter>,
    /// A strongly consistent read (`ConsistentRead`): twice the read capacity, and only on the
    /// table, never on `GSI1` (DynamoDB refuses it there).
    pub consistent: bool,
}

impl Query {
    /// A query over a whole partition, ascending, without limit, filter or start key.
    pub fn partition(index: Index, partition: impl Into<String>) -> Self {
        Query {
            index,
            partition: partition.into(),
            sort: SortCondition::Any,
            forward: true,
            limit: None,
            start: None,
            filter: None,
            consistent: false,
        }
    }
}

/// What a Query returns: its items as attribute maps ([`Store::query`]) or as the store
/// read them ([`Store::query_raw`]).
#[derive(Clone, Debug)]
pub struct QueryOutput<T = Item> {
    /// The items that passed the filter, in the query's order.
    pub items: Vec<T>,
    /// Set when the query stopped before the end of the matching range (by `Limit` or by
    /// DynamoDB's 1 MB page limit): pass it back as `start` to continue.
    pub last_evaluated: Option<StartKey>,
    /// How many items were read before the filter.
    pub scanned: usize,
    pub consumed: Capacity,
}

impl QueryOutput {
    /// The same output with its items as attribute maps ([`RawItem::Map`]): what a store that
    /// reads maps hands over from [`Store::query_raw`].
    pub fn into_raw(self) -> QueryOutput<RawItem> {
        QueryOutput {
            items: self.items.into_iter().map(RawItem::Map).collect(),
            last_evaluated: self.last_evaluated,
            scanned: self.scanned,
            consumed: self.consumed,
        }
    }
}

impl BatchGetOutput {
    /// The same output with its items as attribute maps (see [`QueryOutput::into_raw`]).
    pub fn into_raw(self) -> BatchGetOutput<RawItem> {
        BatchGetOutput {
            items: self.items.into_iter().map(RawItem::Map).collect(),
            unprocessed: self.unprocessed,
            consumed: self.consumed,
        }
    }
}

impl<T> Default for QueryOutput<T> {
    fn default() -> Self {
        QueryOutput {
            items: Vec::new(),
            last_evaluated: None,
            scanned: 0,
            consumed: Capacity::ZERO,
        }
    }
}

/// One page of a Scan.
#[derive(Clone, Debug, Default)]
pub struct ScanOutput {
    pub items: Vec<Item>,
    /// Where to continue; `None` at the end of the table.
    pub last_evaluated: Option<Key>,
    pub consumed: Capacity,
}

#[derive(Clone, Debug, Default)]
pub struct GetOutput {
    /// The item, or `None` when the key names nothing.
    pub item: Option<Item>,
    pub consumed: Capacity,
}

/// What a BatchGetItem returns: its items as attribute maps ([`Store::batch_get`]) or as the
/// store read them ([`Store::batch_get_raw`]).
#[derive(Clone, Debug)]
pub struct BatchGetOutput<T = Item> {
    /// Found items, in no particular order; missing keys are simply absent.
    pub items: Vec<T>,
    /// Keys the store did not get to (DynamoDB's `UnprocessedKeys`): ask again.
    pub unprocessed: Vec<Key>,
    pub consumed: Capacity,
}

impl<T> Default for BatchGetOutput<T> {
    fn default() -> Self {
        BatchGetOutput {
            items: Vec::new(),
            unprocessed: Vec::new(),
            consumed: Capacity::ZERO,
        }
    }
}

/// A condition on the current state of one item, checked atomically with a write.
#[derive(Clone, Debug, PartialEq)]
pub enum Condition {
    /// The item does not exist (`attribute_not_exists(PK)`).
    NotExists,
    /// The item exists (`attribute_exists(PK)`).
    Exists,
    /// The item exists and attribute `name` equals `value`.
    AttributeEquals { name: String, value: AttributeValue },
    /// The item exists and has no attribute `name` (`attribute_exists(PK) AND
    /// attribute_not_exists(name)`).
    AttributeMissing(String),
    /// Every condition holds (`AND`).
    All(Vec<Condition>),
    /// At least one condition holds (`OR`); an empty list never holds.
    Any(Vec<Condition>),
}

impl Condition {
    /// `name = value` on an existing item.
    pub fn equals(name: &str, value: AttributeValue) -> Self {
        Condition::AttributeEquals {
            name: name.to_string(),
            value,
        }
    }

    /// `name = value`, or `name` absent, on an existing item: for attributes that read as a
    /// default when missing (a version written before versions existed).
    pub fn equals_or_missing(name: &str, value: AttributeValue) -> Self {
        Condition::Any(vec![
            Condition::equals(name, value),
            Condition::AttributeMissing(name.to_string()),
        ])
    }
}

/// One change of an UpdateItem: set a (possibly nested) attribute, remove it, or add to a
/// number (DynamoDB's `ADD`: a top-level number attribute, created as 0 when missing), which
/// concurrent writers can do without reading it first.
#[derive(Clone, Debug, PartialEq)]
pub enum UpdateAction {
    Set(AttrPath, AttributeValue),
    Remove(AttrPath),
    Add(AttrPath, i64),
}

impl UpdateAction {
    /// The attribute the action changes.
    pub fn path(&self) -> &AttrPath {
        match self {
            UpdateAction::Set(path, _)
            | UpdateAction::Remove(path)
            | UpdateAction::Add(path, _) => path,
        }
    }
}

/// One operation of a transactional write.
#[derive(Clone, Debug, PartialEq)]
pub enum WriteOp {
    Put {
        item: Item,
        condition: Option<Condition>,
    },
    Delete {
        key: Key,
        condition: Option<Condition>,
    },
    ConditionCheck {
        key: Key,
        condition: Condition,
    },
    /// An UpdateItem: changes only the named attributes. A nested path's parent map must
    /// exist. Updating a missing item creates it (as DynamoDB does), so writers pair it with a
    /// condition that requires the item.
    Update {
        key: Key,
        actions: Vec<UpdateAction>,
        condition: Option<Condition>,
    },
}

impl WriteOp {
    /// The key of the item this operation touches.
    pub fn key(&self) -> Key {
        match self {
            WriteOp::Put { item, .. } => Key::new(
                string_attr(item, table::PK).unwrap_or_default(),
                string_attr(item, table::SK).unwrap_or_default(),
            ),
            WriteOp::Delete { key, .. }
            | WriteOp::ConditionCheck { key, .. }
            | WriteOp::Update { key, .. } => key.clone(),
        }
    }
}

fn string_attr<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    match item.get(name) {
        Some(AttributeValue::S(s)) => Some(s.as_str()),
        _ => None,
    }
}

/// What a write call consumed.
#[derive(Clone, Debug, Default)]
pub struct WriteOutput {
    pub consumed: Capacity,
}

pub use limits::{
    MAX_BATCH_GET, MAX_BATCH_WRITE, MAX_ITEM_BYTES, MAX_TRANSACT_BYTES, MAX_TRANSACT_WRITE,
};

/// How many BatchWriteItem calls a bulk load keeps in flight.
pub const BULK_PUT_CONCURRENCY: usize = 8;

/// Errors of the storage layer. Messages may contain internal detail: they are logged, never
/// shown to API clients (the GraphQL layer maps them to `STORE_UNAVAILABLE`).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store could not be reached or failed to answer.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// DynamoDB throttled the call and the SDK's retries gave up.
    #[error("store throttled: {0}")]
    Throttled(String),
    /// A condition of a transactional write did not hold; `index` is the failing operation.
    /// The data changed since it was read: the caller decides whether to retry.
    #[error("condition failed on operation {index}")]
    ConditionFailed { index: usize },
    /// Another transaction was writing one of the same items at the same moment (DynamoDB's
    /// `TransactionConflict`): nothing was written and an immediate retry may succeed.
    #[error("transaction conflict: {0}")]
    TransactionConflict(String),
    /// The request itself was invalid for the store (too many keys, item too large, ...).
    #[error("invalid store request: {0}")]
    Invalid(String),
    /// Stored data could not be read back.
    #[error("corrupt store data: {0}")]
    Corrupt(String),
    /// The request spent its budget of calls or read capacity; the call was not made.
    #[error("the request's budget of store calls is spent")]
    BudgetExceeded,
}

impl StoreError {
    /// The error's kind, as a metric label and a span field (a bounded set, unlike messages).
    pub fn kind(&self) -> &'static str {
        match self {
            StoreError::Unavailable(_) => "unavailable",
            StoreError::Throttled(_) => "throttled",
            StoreError::ConditionFailed { .. } => "condition_failed",
            StoreError::TransactionConflict(_) => "transaction_conflict",
            StoreError::Invalid(_) => "invalid",
            StoreError::Corrupt(_) => "corrupt",
            StoreError::BudgetExceeded => "budget_exceeded",
        }
    }
}

/// DynamoDB's operations, in the typed form the single-table logic needs.
///
/// Implementations return raw per-call results (including `UnprocessedKeys` and consumed
/// capacity); retrying and chunking are shared code in [`retry`], not written per store.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// A short name for logs and test output: `"embedded"` or `"dynamodb"`.
    fn name(&self) -> &'static str;

    /// The table the store reads and writes, for spans and logs. Wrappers forward it.
    fn table_name(&self) -> &str {
        ""
    }

    /// One GetItem call, eventually consistent.
    async fn get(&self, key: &Key) -> Result<GetOutput, StoreError>;

    /// One strongly consistent GetItem call (twice the read capacity): what writers read
    /// before deciding, and what mutation payloads return.
    async fn get_consistent(&self, key: &Key) -> Result<GetOutput, StoreError>;

    /// One BatchGetItem call: at most [`MAX_BATCH_GET`] distinct keys, eventually consistent.
    async fn batch_get(&self, keys: &[Key]) -> Result<BatchGetOutput, StoreError>;

    /// One BatchGetItem call, its items as the store read them (see [`Store::query_raw`]).
    async fn batch_get_raw(&self, keys: &[Key]) -> Result<BatchGetOutput<RawItem>, StoreError>;

    /// One Query call.
    async fn query(&self, query: &Query) -> Result<QueryOutput, StoreError>;

    /// One Query call, its items as the store read them, for readers that decode them typed
    /// (the paging engine): the embedded store hands over its stored rows with their keys, the DynamoDB
    /// store the attribute maps it lifted from the response ([`QueryOutput::into_raw`]). There
    /// is no default: every store and every wrapper says what it does, so a wrapper in a test
    /// cannot quietly send the production path down [`Store::query`].
    async fn query_raw(&self, query: &Query) -> Result<QueryOutput<RawItem>, StoreError>;

    /// One Scan call of the table, in key order on the embedded store (in DynamoDB's own order
    /// on DynamoDB), continuing after `start`. Only the offline tools (`verify`, `reindex`) scan:
    /// items written by other tools without their index attributes cannot be found otherwise.
    async fn scan(&self, start: Option<&Key>, limit: Option<u32>)
        -> Result<ScanOutput, StoreError>;

    /// One TransactWriteItems call: all operations or none, at most [`MAX_TRANSACT_WRITE`],
    /// at most one operation per item, at most [`MAX_TRANSACT_BYTES`] of items.
    async fn transact_write(&self, ops: Vec<WriteOp>) -> Result<WriteOutput, StoreError>;

    /// One BatchWriteItem call of unconditional puts (bulk loading): at most
    /// [`MAX_BATCH_WRITE`] items. Returns the items the store did not get to.
    async fn batch_put(&self, items: Vec<Item>) -> Result<Vec<Item>, StoreError>;

    /// Writes any number of items without conditions, for bulk loading (seeding). The default
    /// issues BatchWriteItem calls through [`retry::batch_put_all`]; the embedded store
    /// overrides it with a single transaction.
    async fn bulk_put(&self, items: Vec<Item>) -> Result<(), StoreError> {
        retry::batch_put_all(self, items, BULK_PUT_CONCURRENCY).await
    }

    /// Starts a bulk load (seeding, offline): items handed to the loader are written without
    /// conditions, a later item of a key replacing an earlier one, and all are written once
    /// [`BulkLoad::finish`] returns. The default writes each batch as it comes with
    /// [`Store::bulk_put`]; the embedded store writes the whole load at `finish`, on disk
    /// whole or not at all, so a load dropped without `finish` leaves nothing there (and
    /// everything put so far with the default). Nothing else may write the store while an
    /// embedded load finishes (see `embedded::bulk::Commits`).
    async fn bulk_load(self: Arc<Self>) -> Result<Box<dyn BulkLoad>, StoreError> {
        Ok(Box::new(EachBatch(self)))
    }

    /// Creates the table and `GSI1` if they do not exist, and waits until they are usable.
    async fn ensure_table(&self) -> Result<(), StoreError>;

    /// A cheap call that proves the store answers (for `/healthz`).
    async fn ping(&self) -> Result<(), StoreError>;
}

/// A bulk load in progress (see [`Store::bulk_load`]).
#[async_trait]
pub trait BulkLoad: Send {
    /// Adds items to the load. Callers stop at the first error. With the embedded store an
    /// error may belong to an earlier batch (it validates batches while its caller makes the
    /// next, so a refused batch fails a later `put`, or `finish` at the latest), and after
    /// any error the load is failed, and so is every later call.
    async fn put(&mut self, items: Vec<Item>) -> Result<(), StoreError>;

    /// Adds the items `write` hands its writer, as [`BulkLoad::put`] adds items (its error
    /// fails the load like a refused batch). The default collects them as attribute maps and
    /// puts those; the embedded store lays each out as its row as it comes, on the blocking
    /// pool, and never builds the maps (a load of 1,000,000 issues built, validated and
    /// dropped ten million of them).
    async fn put_written(&mut self, write: WriteItems) -> Result<(), StoreError> {
        let mut items = Vec::new();
        write(&mut items)?;
        self.put(items).await
    }

    /// Writes whatever the load has not written yet, and ends it.
    async fn finish(self: Box<Self>) -> Result<(), StoreError>;
}

/// Where items are made for a store, one at a time: its key, its `GSI1SK` if it has one,
/// then its other attributes. The code that writes items this way makes attribute maps with
/// the writer `Vec<Item>`, and, unchanged, the rows a store keeps with the store's own writer,
/// without building a map (the embedded store's bulk load, [`BulkLoad::put_written`]).
pub trait ItemWriter {
    /// Writes one item. The attributes must not name `PK`, `SK` or `GSI1SK`, nor one another
    /// twice. A writer that refuses an item says so when it is done with (the embedded
    /// load's at the end of its batch), as DynamoDB would refuse it in a batch.
    fn put(
        &mut self,
        key: Key,
        gsi1sk: Option<String>,
        attributes: &mut dyn Iterator<Item = (&'static str, AttributeValue)>,
    );
}

/// The attribute maps of the items written, in order.
impl ItemWriter for Vec<Item> {
    fn put(
        &mut self,
        key: Key,
        gsi1sk: Option<String>,
        attributes: &mut dyn Iterator<Item = (&'static str, AttributeValue)>,
    ) {
        let (least, most) = attributes.size_hint();
        let mut map = std::collections::HashMap::with_capacity(3 + most.unwrap_or(least));
        map.insert(table::PK.to_owned(), AttributeValue::S(key.pk));
        map.insert(table::SK.to_owned(), AttributeValue::S(key.sk));
        if let Some(g) = gsi1sk {
            map.insert(table::GSI1SK.to_owned(), AttributeValue::S(g));
        }
        for (name, value) in attributes {
            // The embedded store's writer refuses these; a map would silently keep the last.
            let replaced = map.insert(name.to_owned(), value);
            debug_assert!(replaced.is_none(), "attribute {name} written twice");
        }
        self.push(item_of(map));
    }
}

/// What a caller hands [`BulkLoad::put_written`]: code that writes a batch's items, run
/// where the store's load wants it (the embedded store's on its blocking pool).
pub type WriteItems = Box<dyn FnOnce(&mut dyn ItemWriter) -> Result<(), StoreError> + Send>;

/// The default bulk load: each batch written as it comes, by [`Store::bulk_put`].
struct EachBatch<S: ?Sized>(Arc<S>);

#[async_trait]
impl<S: Store + ?Sized> BulkLoad for EachBatch<S> {
    async fn put(&mut self, items: Vec<Item>) -> Result<(), StoreError> {
        self.0.bulk_put(items).await
    }

    async fn finish(self: Box<Self>) -> Result<(), StoreError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repeated key is found wherever its two occurrences stand, and the first in key
    /// order is named; distinct keys have none.
    #[test]
    fn repeated_keys_are_found_in_any_order() {
        let keys: Vec<Key> = ["c", "a", "b", "a", "c"]
            .iter()
            .map(|pk| Key::new(*pk, "s"))
            .collect();
        assert_eq!(repeated_key(keys.iter()), Some(&Key::new("a", "s")));
        assert_eq!(repeated_key(keys[..3].iter()), None);
        assert_eq!(repeated_key(std::iter::empty::<Key>()), None);
        let owned = vec![Key::new("x", "1"), Key::new("x", "2"), Key::new("x", "1")];
        assert_eq!(repeated_key(owned.into_iter()), Some(Key::new("x", "1")));
    }
}
