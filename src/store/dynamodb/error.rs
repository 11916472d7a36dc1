//! Errors of the DynamoDB store: SDK failures and cancelled transactions mapped to
//! [`StoreError`]s, keeping the SDK's detail in the message for logs.
//!
//! The SDK has already retried what it considers transient (throttling, 5xx, timeouts,
//! connection failures) when an error reaches this module, so every error here is final for
//! the call: throttling is [`StoreError::Throttled`]; timeouts, dispatch and connection
//! failures, unreadable responses and server errors are [`StoreError::Unavailable`].

use std::fmt;

use aws_sdk_dynamodb::error::{BuildError, DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
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

/// DynamoDB's error codes for a call refused for lack of capacity: the table's or an index's
/// provisioned throughput, the account's request rate, an on-demand table's throughput, and
/// too many control-plane operations at once.
pub(super) const THROTTLING_CODES: &[&str] = &[
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "LimitExceededException",
];

/// Cancellation reason codes of a transaction refused for lack of capacity.
pub(super) const THROTTLING_REASONS: &[&str] = &[
    "ThrottlingError",
    "ProvisionedThroughputExceeded",
    "RequestLimitExceeded",
];

/// Maps a failed TransactWriteItems: a cancelled transaction by its reasons, anything else as
/// any other call.
pub(super) fn transact_error<R>(
    table: &str,
    err: SdkError<TransactWriteItemsError, R>,
) -> StoreError
where
    R: fmt::Debug,
{
    match err.as_service_error() {
        Some(TransactWriteItemsError::TransactionCanceledException(canceled)) => {
            let context = format!(
                "TransactWriteItems on table {table}: {}",
                DisplayErrorContext(&err)
            );
            cancellation_error(canceled.cancellation_reasons(), context)
        }
        _ => map_sdk_error(table, "TransactWriteItems", err),
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
    if has(THROTTLING_REASONS) {
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
        Some(code) if THROTTLING_CODES.contains(&code) => StoreError::Throttled(message),
        Some("ValidationException" | "ItemCollectionSizeLimitExceededException") => {
            StoreError::Invalid(message)
        }
        Some("ResourceNotFoundException") => {
            StoreError::Unavailable(format!("table {table} not found: {message}"))
        }
        // Other service errors (InternalServerError, 503s, ...), and, with no code, the SDK's
        // own failures: timeouts (connect, attempt, operation), dispatch failures (connection
        // refused or reset, DNS), unreadable responses and requests it could not build (e.g.
        // no credentials).
        _ => StoreError::Unavailable(message),
    }
}

pub(super) fn build_error(err: BuildError) -> StoreError {
    StoreError::Invalid(format!("building DynamoDB request: {err}"))
}

#[cfg(test)]
mod tests {
    use aws_sdk_dynamodb::error::{ConnectorError, ErrorMetadata};
    use aws_sdk_dynamodb::operation::get_item::GetItemError;
    use aws_sdk_dynamodb::types::error::{
        ProvisionedThroughputExceededException, ThrottlingException, TransactionCanceledException,
    };

    use super::*;

    fn reason(code: &str) -> CancellationReason {
        CancellationReason::builder().code(code).build()
    }

    /// Error metadata as the SDK's deserializer attaches it to every service error.
    fn meta(code: &str) -> ErrorMetadata {
        ErrorMetadata::builder()
            .code(code)
            .message("SECRET detail")
            .build()
    }

    fn get_item(err: SdkError<GetItemError, ()>) -> StoreError {
        map_sdk_error("t", "GetItem", err)
    }

    fn service(err: GetItemError) -> SdkError<GetItemError, ()> {
        SdkError::service_error(err, ())
    }

    fn canceled(reasons: &[&str]) -> SdkError<TransactWriteItemsError, ()> {
        let mut builder = TransactionCanceledException::builder()
            .message("Transaction cancelled")
            .meta(meta("TransactionCanceledException"));
        for code in reasons {
            builder = builder.cancellation_reasons(reason(code));
        }
        SdkError::service_error(
            TransactWriteItemsError::TransactionCanceledException(builder.build()),
            (),
        )
    }

    #[test]
    fn first_conditional_check_failure_wins() {
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

    #[test]
    fn throttling_that_outlasts_the_retries_is_throttled() {
        let modeled = [
            GetItemError::ProvisionedThroughputExceededException(
                ProvisionedThroughputExceededException::builder()
                    .message("throughput exceeded")
                    .meta(meta("ProvisionedThroughputExceededException"))
                    .build(),
            ),
            GetItemError::ThrottlingException(
                ThrottlingException::builder()
                    .message("throttled")
                    .meta(meta("ThrottlingException"))
                    .build(),
            ),
            GetItemError::generic(meta("RequestLimitExceeded")),
            GetItemError::generic(meta("LimitExceededException")),
        ];
        for err in modeled {
            let code = err.code().map(str::to_owned);
            assert!(
                matches!(get_item(service(err)), StoreError::Throttled(_)),
                "{code:?}"
            );
        }
    }

    #[test]
    fn throttled_transactions_are_throttled() {
        for reasons in [
            &["None", "ThrottlingError"][..],
            &["ProvisionedThroughputExceeded", "None"],
            &["RequestLimitExceeded"],
        ] {
            assert!(
                matches!(
                    transact_error("t", canceled(reasons)),
                    StoreError::Throttled(_)
                ),
                "{reasons:?}"
            );
        }
        // A condition failure or a conflict elsewhere in the transaction decides first: the
        // write layer re-plans those.
        assert!(matches!(
            transact_error(
                "t",
                canceled(&["ThrottlingError", "ConditionalCheckFailed"])
            ),
            StoreError::ConditionFailed { index: 1 }
        ));
        assert!(matches!(
            transact_error("t", canceled(&["ThrottlingError", "TransactionConflict"])),
            StoreError::TransactionConflict(_)
        ));
        // Throttling of the whole call, before any operation ran.
        let throttled = SdkError::service_error(
            TransactWriteItemsError::generic(meta("ThrottlingException")),
            (),
        );
        assert!(matches!(
            transact_error("t", throttled),
            StoreError::Throttled(_)
        ));
    }

    #[test]
    fn timeouts_and_connection_failures_are_unavailable() {
        let failures: Vec<SdkError<GetItemError, ()>> = vec![
            SdkError::timeout_error("operation timeout (all attempts) after 1.5s"),
            SdkError::dispatch_failure(ConnectorError::io(
                "error sending request: connection refused".into(),
            )),
            SdkError::dispatch_failure(ConnectorError::timeout("connect timeout".into())),
            SdkError::dispatch_failure(ConnectorError::other("hyper: closed".into(), None)),
            SdkError::response_error("unexpected end of body", ()),
            SdkError::construction_failure("no credentials"),
            service(GetItemError::generic(meta("InternalServerError"))),
            service(GetItemError::generic(meta("ServiceUnavailable"))),
        ];
        for err in failures {
            let text = DisplayErrorContext(&err).to_string();
            assert!(
                matches!(get_item(err), StoreError::Unavailable(_)),
                "{text}"
            );
        }
        assert!(matches!(
            transact_error::<()>("t", SdkError::timeout_error("attempt timeout")),
            StoreError::Unavailable(_)
        ));
    }

    #[test]
    fn invalid_requests_are_invalid() {
        assert!(matches!(
            get_item(service(GetItemError::generic(meta("ValidationException")))),
            StoreError::Invalid(_)
        ));
    }
}
