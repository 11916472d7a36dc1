//! The SDK's attempts inside each call: an interceptor that tells `store::instrumented` of
//! every attempt the client makes and whether DynamoDB refused it for capacity, so a call's
//! span and the metrics show the retries and throttles that a successful call hides.
//!
//! The interceptor runs inside the call's future (the SDK's orchestrator is polled by the
//! caller's task), where the instrumented wrapper keeps a task-local count for that call.

use aws_sdk_dynamodb::config::interceptors::FinalizerInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::{BoxError, ProvideErrorMetadata};
use aws_sdk_dynamodb::operation::batch_get_item::BatchGetItemError;
use aws_sdk_dynamodb::operation::batch_write_item::BatchWriteItemError;
use aws_sdk_dynamodb::operation::describe_table::DescribeTableError;
use aws_sdk_dynamodb::operation::get_item::GetItemError;
use aws_sdk_dynamodb::operation::query::QueryError;
use aws_sdk_dynamodb::operation::scan::ScanError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;

use super::error::{THROTTLING_CODES, THROTTLING_REASONS};
use crate::store::instrumented::note_attempt;

/// Notes every attempt of every call of the client it is registered on.
#[derive(Debug)]
pub(super) struct AttemptCounter;

impl Intercept for AttemptCounter {
    fn name(&self) -> &'static str {
        "gridgate::AttemptCounter"
    }

    /// Runs after every attempt, also one that timed out (the SDK runs it outside the attempt
    /// timeout), before the retry strategy decides whether to try again.
    fn read_after_attempt(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let throttled = match context.output_or_error() {
            Some(Err(error)) => error.as_operation_error().is_some_and(|error| {
                // The error is type-erased: try the operations the store makes.
                if let Some(TransactWriteItemsError::TransactionCanceledException(canceled)) =
                    error.downcast_ref::<TransactWriteItemsError>()
                {
                    return canceled.cancellation_reasons().iter().any(|reason| {
                        reason
                            .code()
                            .is_some_and(|code| THROTTLING_REASONS.contains(&code))
                    });
                }
                let code = None
                    .or_else(|| error.downcast_ref::<GetItemError>().and_then(|e| e.code()))
                    .or_else(|| error.downcast_ref::<QueryError>().and_then(|e| e.code()))
                    .or_else(|| {
                        error
                            .downcast_ref::<BatchGetItemError>()
                            .and_then(|e| e.code())
                    })
                    .or_else(|| {
                        error
                            .downcast_ref::<TransactWriteItemsError>()
                            .and_then(|e| e.code())
                    })
                    .or_else(|| error.downcast_ref::<ScanError>().and_then(|e| e.code()))
                    .or_else(|| {
                        error
                            .downcast_ref::<BatchWriteItemError>()
                            .and_then(|e| e.code())
                    })
                    .or_else(|| {
                        error
                            .downcast_ref::<DescribeTableError>()
                            .and_then(|e| e.code())
                    });
                code.is_some_and(|code| THROTTLING_CODES.contains(&code))
            }),
            _ => false,
        };
        note_attempt(throttled);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::super::{DynamoConfig, DynamoStore, SdkSettings};
    use crate::store::{Instrumented, Key, Store};
    use crate::telemetry::Metrics;

    /// Answers each request on 127.0.0.1 with the next of `bodies` (status, JSON body), as
    /// DynamoDB would; keeps connections alive like DynamoDB does.
    async fn fake_dynamodb(bodies: Vec<(u16, &'static str)>) -> std::net::SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let bodies = Arc::new(std::sync::Mutex::new(bodies.into_iter()));
        tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let bodies = bodies.clone();
                tokio::spawn(async move {
                    let mut buffer = Vec::new();
                    loop {
                        // Read one request: headers, then Content-Length bytes of body.
                        let header_end = loop {
                            if let Some(i) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                                break i + 4;
                            }
                            let mut chunk = [0u8; 4096];
                            match socket.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
                            }
                        };
                        let head = String::from_utf8_lossy(&buffer[..header_end]).to_lowercase();
                        let length: usize = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse().ok())
                            .unwrap_or(0);
                        while buffer.len() < header_end + length {
                            let mut chunk = [0u8; 4096];
                            match socket.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
                            }
                        }
                        buffer.drain(..header_end + length);
                        let next = bodies.lock().unwrap().next();
                        let Some((status, body)) = next else {
                            return;
                        };
                        let response = format!(
                            "HTTP/1.1 {status} X\r\ncontent-type: application/x-amz-json-1.0\r\n\
                             x-amzn-requestid: r\r\ncontent-length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        if socket.write_all(response.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        addr
    }

    #[tokio::test]
    async fn throttled_attempts_are_retries_and_throttles_of_one_call() {
        let addr = fake_dynamodb(vec![
            (
                400,
                r#"{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"slow down"}"#,
            ),
            (
                400,
                r#"{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"slow down"}"#,
            ),
            (
                200,
                r#"{"Item":{"PK":{"S":"a"},"SK":{"S":"b"}},"ConsumedCapacity":{"TableName":"t","CapacityUnits":0.5}}"#,
            ),
        ])
        .await;
        let store = DynamoStore::connect_with(
            DynamoConfig {
                table: "t".into(),
                endpoint: Some(format!("http://{addr}")),
                local_credentials: true,
            },
            SdkSettings::default(),
        )
        .await
        .unwrap();
        let metrics = Metrics::new().unwrap();
        let store = Instrumented::new(Arc::new(store), "api", Some(metrics.store("api")));
        let out = store.get(&Key::new("a", "b")).await.unwrap();
        assert!(out.item.is_some());
        assert_eq!(out.consumed.read_units, 0.5);
        let text = metrics.render().unwrap();
        for line in [
            "gridgate_dynamodb_calls_total{operation=\"GetItem\",source=\"api\"} 1",
            "gridgate_dynamodb_retries_total{operation=\"GetItem\",source=\"api\"} 2",
            "gridgate_dynamodb_throttles_total{operation=\"GetItem\",source=\"api\"} 2",
            "gridgate_dynamodb_read_capacity_units_total{operation=\"GetItem\",source=\"api\"} 0.5",
        ] {
            assert!(text.lines().any(|l| l == line), "no {line} in\n{text}");
        }
    }
}
