//! Validation for the embedded store: everything DynamoDB rejects with a ValidationException is
//! rejected here before any transaction starts, so an invalid request never half-applies.

use crate::store::capacity::item_size;
use crate::store::limits::{
    MAX_ITEM_BYTES, MAX_PARTITION_KEY_BYTES, MAX_SORT_KEY_BYTES, MAX_TRANSACT_BYTES,
};
use crate::store::row;
use crate::store::table::{GSI1SK, PK, SK};
use crate::store::{
    repeated_key, AttributeValue, Condition, Item, Key, StoreError, UpdateAction, WriteOp,
    MAX_TRANSACT_WRITE,
};

/// An item validated for writing, with its keys extracted and its row encoded.
pub(super) struct ItemRow {
    pub(super) pk: String,
    pub(super) sk: String,
    pub(super) gsi1sk: Option<String>,
    /// The table's row; the index's is `bytes[..index_end]` (see [`row::store`]).
    pub(super) bytes: Vec<u8>,
    pub(super) index_end: usize,
    pub(super) size: usize,
}

impl ItemRow {
    pub(super) fn validate(item: &Item) -> Result<ItemRow, StoreError> {
        let pk = key_attr(item, PK)?;
        let sk = key_attr(item, SK)?;
        let gsi1sk = match item.get(GSI1SK) {
            None => None,
            Some(_) => Some(key_attr(item, GSI1SK)?),
        };
        let size = item_size(item);
        check_item(&pk, &sk, gsi1sk.as_deref(), size)?;
        let row::Stored { bytes, index_end } = row::store(item, size);
        Ok(ItemRow {
            pk,
            sk,
            gsi1sk,
            bytes,
            index_end,
            size,
        })
    }

    /// The row the index keeps, its key holding `GSI1SK`.
    pub(super) fn index_bytes(&self) -> &[u8] {
        &self.bytes[..self.index_end]
    }

    pub(super) fn key(&self) -> Key {
        Key::new(self.pk.clone(), self.sk.clone())
    }
}

/// What DynamoDB holds an item to beside its attributes' types: its keys and its size.
/// `GSI1SK` is optional, but when present it is an index key attribute, so DynamoDB holds it
/// to the key rules: not empty, at most 1024 bytes.
pub(super) fn check_item(
    pk: &str,
    sk: &str,
    gsi1sk: Option<&str>,
    size: usize,
) -> Result<(), StoreError> {
    check_key_value(PK, pk, MAX_PARTITION_KEY_BYTES)?;
    check_key_value(SK, sk, MAX_SORT_KEY_BYTES)?;
    if let Some(g) = gsi1sk {
        check_key_value(GSI1SK, g, MAX_SORT_KEY_BYTES)?;
    }
    if size > MAX_ITEM_BYTES {
        return Err(StoreError::Invalid(format!(
            "item ({pk}, {sk}) is {size} bytes, over the {MAX_ITEM_BYTES}-byte limit"
        )));
    }
    Ok(())
}

/// A key attribute's value, which must be of type S (its other rules: [`check_item`]).
fn key_attr(item: &Item, name: &str) -> Result<String, StoreError> {
    match item.get(name) {
        Some(AttributeValue::S(s)) => Ok(s.clone()),
        Some(_) => Err(StoreError::Invalid(format!(
            "key attribute {name} must be of type S"
        ))),
        None => Err(StoreError::Invalid(format!(
            "item is missing key attribute {name}"
        ))),
    }
}

pub(super) fn check_key_value(name: &str, value: &str, max: usize) -> Result<(), StoreError> {
    if value.is_empty() {
        return Err(StoreError::Invalid(format!(
            "key attribute {name} cannot be an empty string"
        )));
    }
    if value.len() > max {
        return Err(StoreError::Invalid(format!(
            "key attribute {name} is {} bytes, over the {max}-byte limit",
            value.len()
        )));
    }
    Ok(())
}

pub(super) fn validate_key(key: &Key) -> Result<(), StoreError> {
    check_key_value(PK, &key.pk, MAX_PARTITION_KEY_BYTES)?;
    check_key_value(SK, &key.sk, MAX_SORT_KEY_BYTES)
}

/// Refuses a call that names one item twice, as DynamoDB does.
pub(super) fn reject_duplicates<K: std::borrow::Borrow<Key>>(
    keys: impl Iterator<Item = K>,
    call: &str,
) -> Result<(), StoreError> {
    match repeated_key(keys) {
        Some(key) => Err(StoreError::Invalid(format!(
            "{call} names item {} more than once",
            key.borrow()
        ))),
        None => Ok(()),
    }
}

/// A transaction operation after validation.
pub(super) enum TxOp {
    Put(ItemRow, Option<Condition>),
    Delete(Key, Option<Condition>),
    Check(Key, Condition),
    Update(Key, Vec<UpdateAction>, Option<Condition>),
}

impl TxOp {
    pub(super) fn key(&self) -> Key {
        match self {
            TxOp::Put(row, _) => row.key(),
            TxOp::Delete(key, _) | TxOp::Check(key, _) | TxOp::Update(key, _, _) => key.clone(),
        }
    }

    pub(super) fn condition(&self) -> Option<&Condition> {
        match self {
            TxOp::Put(_, c) | TxOp::Delete(_, c) | TxOp::Update(_, _, c) => c.as_ref(),
            TxOp::Check(_, c) => Some(c),
        }
    }
}

pub(super) fn validate_transaction(ops: Vec<WriteOp>) -> Result<Vec<TxOp>, StoreError> {
    if ops.is_empty() || ops.len() > MAX_TRANSACT_WRITE {
        return Err(StoreError::Invalid(format!(
            "TransactWriteItems takes 1 to {MAX_TRANSACT_WRITE} operations, got {}",
            ops.len()
        )));
    }
    let ops = ops
        .into_iter()
        .map(|op| match op {
            WriteOp::Put { item, condition } => Ok(TxOp::Put(ItemRow::validate(&item)?, condition)),
            WriteOp::Delete { key, condition } => {
                validate_key(&key)?;
                Ok(TxOp::Delete(key, condition))
            }
            WriteOp::ConditionCheck { key, condition } => {
                validate_key(&key)?;
                Ok(TxOp::Check(key, condition))
            }
            WriteOp::Update {
                key,
                actions,
                condition,
            } => {
                validate_key(&key)?;
                validate_actions(&actions)?;
                Ok(TxOp::Update(key, actions, condition))
            }
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    reject_duplicates(ops.iter().map(TxOp::key), "TransactWriteItems")?;
    let total: usize = ops
        .iter()
        .map(|op| match op {
            TxOp::Put(row, _) => row.size,
            _ => 0,
        })
        .sum();
    if total > MAX_TRANSACT_BYTES {
        return Err(StoreError::Invalid(format!(
            "TransactWriteItems items total {total} bytes, over the {MAX_TRANSACT_BYTES}-byte limit"
        )));
    }
    Ok(ops)
}

/// An update may not be empty, touch a key attribute or name an empty path, as in DynamoDB.
fn validate_actions(actions: &[UpdateAction]) -> Result<(), StoreError> {
    if actions.is_empty() {
        return Err(StoreError::Invalid(
            "an update needs at least one action".into(),
        ));
    }
    for action in actions {
        let path = action.path();
        if matches!(action, UpdateAction::Add(..)) && path.0.len() != 1 {
            return Err(StoreError::Invalid(
                "ADD applies to top-level attributes only".into(),
            ));
        }
        match path.0.first().map(String::as_str) {
            None => {
                return Err(StoreError::Invalid(
                    "update of an empty attribute path".into(),
                ))
            }
            Some(PK | SK) => {
                return Err(StoreError::Invalid(
                    "an update cannot change a key attribute".into(),
                ))
            }
            Some(_) => {}
        }
    }
    Ok(())
}
