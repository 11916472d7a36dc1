//! The record a mutation leaves under its `clientMutationId`, so a retry returns the first
//! result instead of applying again.

use serde::{Deserialize, Serialize};

use super::{check_type, from_item, to_item, types, ItemError};
use crate::store::{Item, Key};

/// What a mutation recorded under its `clientMutationId`, so a retry returns the first
/// result instead of applying twice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MutationRecord {
    /// The mutation's field name, e.g. `createIssue`.
    pub mutation: String,
    /// A digest of the mutation's input: a retry must send the same input.
    pub fingerprint: String,
    /// The id of the node the mutation wrote (or deleted).
    pub result: String,
    /// Unix seconds after which the record no longer counts (and DynamoDB's TTL may drop it).
    pub expires_at: i64,
}

entity! {
    struct MutationRecordItem, enum MutationRecordAttr {
        pk: String = Pk "PK",
        sk: String = Sk "SK",
        kind: String = Type "Type",
        mutation: String = Mutation "Mutation",
        fingerprint: String = Input "Input",
        result: String = Result "Result",
        expires_at: i64 = ExpiresAt "ExpiresAt",
    }
}

pub fn mutation_record_item(key: &Key, record: &MutationRecord) -> Item {
    to_item(&MutationRecordItem {
        pk: key.pk.clone(),
        sk: key.sk.clone(),
        kind: types::MUTATION.into(),
        mutation: record.mutation.clone(),
        fingerprint: record.fingerprint.clone(),
        result: record.result.clone(),
        expires_at: record.expires_at,
    })
}

pub fn decode_mutation_record(item: &Item) -> Result<MutationRecord, ItemError> {
    const E: &str = "mutation record";
    check_type(item, types::MUTATION, E)?;
    let raw: MutationRecordItem = from_item(item, E)?;
    Ok(MutationRecord {
        mutation: raw.mutation,
        fingerprint: raw.fingerprint,
        result: raw.result,
        expires_at: raw.expires_at,
    })
}
