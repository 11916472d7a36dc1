//! DynamoDB's service limits, in one place: both stores enforce them, and writers check their
//! inputs against them before sending anything.

/// The most keys of one BatchGetItem call.
pub const MAX_BATCH_GET: usize = 100;
/// The most puts of one BatchWriteItem call.
pub const MAX_BATCH_WRITE: usize = 25;
/// The most operations of one TransactWriteItems call.
pub const MAX_TRANSACT_WRITE: usize = 100;
/// The most bytes of items in one TransactWriteItems call.
pub const MAX_TRANSACT_BYTES: usize = 4 * 1024 * 1024;
/// The largest item (attribute names plus values, as `capacity::item_size` counts them).
pub const MAX_ITEM_BYTES: usize = 400 * 1024;
/// The longest partition key value.
pub const MAX_PARTITION_KEY_BYTES: usize = 2048;
/// The longest sort key value (table or index).
pub const MAX_SORT_KEY_BYTES: usize = 1024;
/// A Query stops once it has read this much data and returns a `LastEvaluatedKey`.
pub const PAGE_BYTES: usize = 1024 * 1024;
