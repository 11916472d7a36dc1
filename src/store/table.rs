//! The physical table layout both stores maintain: attribute names of the keys and the index.
//!
//! These names are a contract with outside tools (see ARCHITECTURE.md); the *values* put in them
//! are built by `crate::keys`.

/// Default table name.
pub const DEFAULT_TABLE: &str = "gridgate";
/// Partition key of the table.
pub const PK: &str = "PK";
/// Sort key of the table, and partition key of `GSI1`.
pub const SK: &str = "SK";
/// Sort key of `GSI1`; items without it are not in the index.
pub const GSI1SK: &str = "GSI1SK";
/// The one global secondary index: partition `SK`, sort `GSI1SK`, projection ALL.
pub const GSI1: &str = "GSI1";
/// Every item carries its entity type here.
pub const TYPE: &str = "Type";
/// The attribute DynamoDB's time to live reads (unix seconds): expired rows (idempotency
/// records) are removed by the service.
pub const TTL: &str = "ExpiresAt";
