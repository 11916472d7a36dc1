//! Errors of the DynamoDB store: SDK failures and cancelled transactions mapped to
//! [`StoreError`]s, keeping the SDK's detail in the message for logs.

use std::fmt;

use aws_sdk_dynamodb::error::{BuildError, DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::CancellationReason;

use super::DynamoStore;
use crate::store::StoreError;

impl DynamoStore {
    pub(super) fn sdk_error<E, R>(&self, operation: &str, err: SdkError<E, R>) -> StoreError
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
        R: fmt::Debug,
    {
        map_sdk_error(&self.table, operation, err)
    }
}

/// Turns a cancelled transaction into the error of its first failing operation.
pub(super) fn cancellation_error(reasons: &[CancellationReason], context: String) -> StoreError {
    if let Some(index) = reasons
        .iter()
        .position(|reason| reason.code() == Some("ConditionalCheckFailed"))
    {
        return StoreError::ConditionFailed { index };
    }
    let failed: Vec<(usize, &str, &str)> = reasons
        .iter()
        .enumerate()
        .filter_map(|(i, reason)| match reason.code() {
            None | Some("None") => None,
            Some(code) => Some((i, code, reason.message().unwrap_or(""))),
        })
        .collect();
    let detail = failed
        .iter()
        .map(|(i, code, message)| format!("operation {i}: {code} {message}"))
        .collect::<Vec<_>>()
        .join("; ");
    let message = format!("{context} [{detail}]");
    let has = |codes: &[&str]| failed.iter().any(|(_, code, _)| codes.contains(code));
    if has(&["TransactionConflict"]) {
        return StoreError::TransactionConflict(message);
    }
    if has(&[
        "ThrottlingError",
        "ProvisionedThroughputExceeded",
        "RequestLimitExceeded",
    ]) {
        StoreError::Throttled(message)
    } else if has(&["ValidationError", "ItemCollectionSizeLimitExceeded"]) {
        StoreError::Invalid(message)
    } else {
        StoreError::Unavailable(message)
    }
}

/// Maps an SDK failure to a [`StoreError`], keeping the SDK's full error chain in the message
/// (for logs; clients never see it).
fn map_sdk_error<E, R>(table: &str, operation: &str, err: SdkError<E, R>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: fmt::Debug,
{
    let message = format!(
        "{operation} on table {table}: {}",
        DisplayErrorContext(&err)
    );
    match err.code() {
        Some(
            "ThrottlingException"
            | "ProvisionedThroughputExceededException"
            | "RequestLimitExceeded"
            | "LimitExceededException",
        ) => StoreError::Throttled(message),
        Some("ValidationException" | "ItemCollectionSizeLimitExceededException") => {
            StoreError::Invalid(message)
        }
        Some("ResourceNotFoundException") => {
            StoreError::Unavailable(format!("table {table} not found: {message}"))
        }
        // Other service errors, and dispatch failures, timeouts and unreadable responses.
        _ => StoreError::Unavailable(message),
    }
}

pub(super) fn build_error(err: BuildError) -> StoreError {
    StoreError::Invalid(format!("building DynamoDB request: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_conditional_check_failure_wins() {
        let reason = |code: &str| CancellationReason::builder().code(code).build();
        let reasons = [
            reason("None"),
            reason("TransactionConflict"),
            reason("ConditionalCheckFailed"),
            reason("ConditionalCheckFailed"),
        ];
        assert!(matches!(
            cancellation_error(&reasons, String::new()),
            StoreError::ConditionFailed { index: 2 }
        ));
        assert!(matches!(
            cancellation_error(&reasons[..2], String::new()),
            StoreError::TransactionConflict(_)
        ));
        assert!(matches!(
            cancellation_error(&[reason("None"), reason("ThrottlingError")], String::new()),
            StoreError::Throttled(_)
        ));
    }
}
