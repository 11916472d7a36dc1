//! The [`Store`] over Amazon DynamoDB (or DynamoDB Local): each trait call is one SDK call.
//!
//! This is the only module that knows the AWS SDK. It translates the typed operations of
//! [`super`] into expressions (always with `#name` / `:value` placeholders, since field ids
//! contain `-` and attribute names like `Type` are reserved words) and maps the SDK's results
//! and errors back. Chunking and retrying of unprocessed keys is not done here but in
//! [`super::retry`], shared with the embedded store.
//!
//! The submodules split it by concern: `table` creates, describes and checks the table, `expr`
//! builds expressions, `convert` turns keys and items into SDK values and back, `error`
//! maps SDK failures to [`StoreError`]s, `attempts` counts the client's attempts of each
//! call for `store::instrumented`, and `lift` reads the items of read responses with
//! `store::ddbjson` instead of the SDK's deserializer.

mod attempts;
mod convert;
mod error;
mod expr;
mod lift;
mod table;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use aws_config::meta::region::RegionProviderChain;
use aws_config::retry::RetryConfig;
use aws_config::stalled_stream_protection::StalledStreamProtectionConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region};
use aws_sdk_dynamodb::config::Credentials;
use aws_sdk_dynamodb::types::{
    ConditionCheck, Delete, KeysAndAttributes, Put, PutRequest, ReturnConsumedCapacity,
    TransactWriteItem, Update, WriteRequest,
};
use aws_sdk_dynamodb::Client;

use self::convert::{
    from_sdk_item, key_from_map, key_map, non_empty, start_key_from_map, start_key_map,
    total_capacity, total_units, SdkItem, SdkValue,
};
use self::error::{build_error, transact_error};
use self::expr::{
    condition_expression, condition_text, filter_expression, sort_condition, update_expression,
    Expression,
};
use self::lift::{lifting, LiftItems, Member};
use super::table::{GSI1, GSI1SK, PK, SK};
use super::{
    BatchGetOutput, Capacity, GetOutput, Index, Item, Key, Query, QueryOutput, RawItem, ScanOutput,
    Store, StoreError, WriteOp, WriteOutput,
};
use crate::telemetry::LiftMiss;

/// Region used when neither the environment nor the profile configures one.
const DEFAULT_REGION: &str = "us-east-1";

/// Where and how to reach DynamoDB.
#[derive(Clone, Debug)]
pub struct DynamoConfig {
    /// The table name.
    pub table: String,
    /// Endpoint override (DynamoDB Local). When None, the SDK's own config applies (incl.
    /// `AWS_ENDPOINT_URL_DYNAMODB`).
    pub endpoint: Option<String>,
    /// Use fixed dummy credentials and region us-east-1 (for DynamoDB Local in tests), instead
    /// of the standard chain.
    pub local_credentials: bool,
}

/// How the SDK client retries and times out, tuned for an interactive gateway: a client waits
/// on every call, so a call must either answer quickly or fail quickly with a clean error
/// (`STORE_UNAVAILABLE` / `THROTTLED`) that tells the client to retry later.
///
/// The SDK's own defaults suit batch work, not a request path: no operation timeout at all (a
/// call on a half-open connection can wait for the OS's TCP timeouts, minutes), 3.1 s to
/// connect, and backoffs of up to 20 s between attempts. A grid page makes 2–3 sequential
/// calls and a mutation 3–4 (consistent read, transaction, read-back), so whatever one call
/// may take is multiplied by the request.
///
/// Retries here are only the SDK's per-call retries of transient failures (throttling, 5xx,
/// timeouts, refused connections). Unprocessed batch keys are retried by `store::retry`, and
/// transaction conflicts by the write layer, each with its own backoff.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SdkSettings {
    /// Attempts per call, the first included (at least 1). 3, the SDK's standard default:
    /// enough to ride out a dropped connection or a short throttling burst, while a DynamoDB
    /// that keeps failing fails the request within a few backoffs instead of holding it.
    pub max_attempts: u32,
    /// Base of the exponential backoff with full jitter (attempt n waits a random time in
    /// `[0, initial × 2^(n-1))`). 25 ms, not the SDK's general 1 s: DynamoDB answers in
    /// single-digit milliseconds, so a throttled partition is worth asking again after tens
    /// of milliseconds, not seconds; 25 ms is also what the SDK itself uses for DynamoDB's
    /// non-throttling retries (retry behaviour 2.1) and what the DynamoDB SDKs have used as
    /// their base delay. With 3 attempts the waits are at most 25 ms and 50 ms.
    pub initial_backoff: Duration,
    /// Cap of any single wait between attempts, including a server's retry-after hint. 1 s
    /// (the SDK's default is 20 s): reached only with more attempts than the default (25 ms
    /// doubles past a second at the 7th retry) or when DynamoDB asks for a longer pause, and a
    /// longer wait would only spend the operation timeout asleep while the client waits.
    pub max_backoff: Duration,
    /// Time to establish a connection. 1 s (SDK default 3.1 s): a TCP + TLS handshake to a
    /// regional endpoint takes tens of milliseconds, so a second means a lost SYN or a dead
    /// host, and the next attempt (on a new connection) is the better bet.
    pub connect_timeout: Duration,
    /// Time for one attempt: sending, DynamoDB's work and reading the answer. 2 s: DynamoDB's
    /// latency is milliseconds even for a 1 MB Query page or a 100-key BatchGetItem, so an
    /// attempt still silent after 2 s is stuck (a half-open connection, an overloaded
    /// endpoint) and is abandoned for a retry instead of waiting on TCP.
    pub attempt_timeout: Duration,
    /// Time for one call with all its attempts and backoffs. 5 s: the bound a caller can rely
    /// on (two stuck attempts and a backoff fit, a third is cut short), about as long as an
    /// interactive client waits for a grid before giving up itself.
    pub operation_timeout: Duration,
}

impl Default for SdkSettings {
    fn default() -> Self {
        SdkSettings {
            max_attempts: 3,
            initial_backoff: Duration::from_millis(25),
            max_backoff: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(1),
            attempt_timeout: Duration::from_secs(2),
            operation_timeout: Duration::from_secs(5),
        }
    }
}

impl SdkSettings {
    /// Refuses settings the SDK would reject or that make no sense.
    fn validate(&self) -> Result<(), StoreError> {
        let invalid = |what: &str| Err(StoreError::Invalid(format!("DynamoDB client: {what}")));
        if self.max_attempts == 0 {
            return invalid("max attempts must be at least 1");
        }
        let durations = [
            ("connect timeout", self.connect_timeout),
            ("attempt timeout", self.attempt_timeout),
            ("operation timeout", self.operation_timeout),
            ("initial backoff", self.initial_backoff),
            ("max backoff", self.max_backoff),
        ];
        if let Some((name, _)) = durations.iter().find(|(_, d)| d.is_zero()) {
            return invalid(&format!("{name} must be positive"));
        }
        if self.attempt_timeout > self.operation_timeout {
            return invalid(&format!(
                "attempt timeout ({} ms) longer than the operation timeout ({} ms)",
                self.attempt_timeout.as_millis(),
                self.operation_timeout.as_millis()
            ));
        }
        if self.initial_backoff > self.max_backoff {
            return invalid("initial backoff longer than max backoff");
        }
        Ok(())
    }

    /// The SDK's standard retry mode with these attempts and backoffs. Its retry quota (a
    /// token bucket shared by the process's DynamoDB clients) stays: during a long outage
    /// retries stop and calls fail on their first attempt instead of multiplying the load on
    /// a struggling service, and the quota refills as calls succeed again.
    fn retry_config(&self) -> RetryConfig {
        RetryConfig::standard()
            .with_max_attempts(self.max_attempts)
            .with_initial_backoff(self.initial_backoff)
            .with_max_backoff(self.max_backoff)
    }

    fn timeout_config(&self) -> TimeoutConfig {
        TimeoutConfig::builder()
            .connect_timeout(self.connect_timeout)
            .operation_attempt_timeout(self.attempt_timeout)
            .operation_timeout(self.operation_timeout)
            .build()
    }
}

/// A [`Store`] backed by one DynamoDB table.
#[derive(Clone)]
pub struct DynamoStore {
    client: Client,
    table: String,
    item_reads: Arc<ItemReadCounts>,
}

/// How the items of successful reads were read: lifted out of the response body by
/// `store::ddbjson` (the fast path, see `lift`) or deserialized by the SDK (the fallback).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ItemReads {
    pub lifted: u64,
    pub by_sdk: u64,
}

#[derive(Debug, Default)]
struct ItemReadCounts {
    lifted: AtomicU64,
    by_sdk: AtomicU64,
}

impl fmt::Debug for DynamoStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynamoStore")
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

/// The key [`Store::ping`] reads: no item has it (gridgate's keys all start with an entity
/// prefix such as `project-`).
const PING_KEY: &str = "gridgate#ping";

impl DynamoStore {
    /// Builds a client from the standard AWS configuration (environment, profile, instance
    /// role), with region us-east-1 when none is configured, and the default [`SdkSettings`].
    /// Makes no call: use [`Store::ensure_table`] or [`Store::ping`] to check the table is
    /// reachable.
    pub async fn connect(config: DynamoConfig) -> Result<Self, StoreError> {
        DynamoStore::connect_with(config, SdkSettings::default()).await
    }

    /// [`DynamoStore::connect`] with the given retries and timeouts. They replace the SDK's
    /// (and `AWS_MAX_ATTEMPTS` / `AWS_RETRY_MODE`): the gateway's flags decide.
    pub async fn connect_with(config: DynamoConfig, sdk: SdkSettings) -> Result<Self, StoreError> {
        if config.table.is_empty() {
            return Err(StoreError::Invalid("empty DynamoDB table name".into()));
        }
        sdk.validate()?;
        // Stalled-stream protection wraps every request and response body in a throughput
        // monitor (a few percent of a grid page's CPU); DynamoDB's bodies are small JSON
        // documents, and the attempt and operation timeouts already end a stalled call.
        let mut loader = aws_config::defaults(BehaviorVersion::latest())
            .retry_config(sdk.retry_config())
            .timeout_config(sdk.timeout_config())
            .stalled_stream_protection(StalledStreamProtectionConfig::disabled());
        if config.local_credentials {
            // DynamoDB Local accepts any credentials but only alphanumeric access key ids.
            loader = loader
                .region(Region::new(DEFAULT_REGION))
                .credentials_provider(Credentials::new(
                    "gridgatelocal",
                    "gridgatelocal",
                    None,
                    None,
                    "gridgate-local",
                ));
        } else {
            loader = loader.region(
                RegionProviderChain::default_provider().or_else(Region::new(DEFAULT_REGION)),
            );
        }
        if let Some(endpoint) = &config.endpoint {
            loader = loader.endpoint_url(endpoint);
        }
        let sdk_config = loader.load().await;
        let client_config = aws_sdk_dynamodb::config::Builder::from(&sdk_config)
            .interceptor(attempts::AttemptCounter)
            .interceptor(LiftItems)
            .build();
        Ok(DynamoStore {
            client: Client::from_conf(client_config),
            table: config.table,
            item_reads: Arc::default(),
        })
    }

    /// The table this store reads and writes.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// How many successful reads (by this store and its clones) had their items lifted out of
    /// the response, and how many fell back to the SDK's deserializer. A fallback is correct
    /// but slower; outside tests of odd responses it should stay at zero.
    pub fn item_reads(&self) -> ItemReads {
        ItemReads {
            lifted: self.item_reads.lifted.load(Ordering::Relaxed),
            by_sdk: self.item_reads.by_sdk.load(Ordering::Relaxed),
        }
    }

    /// The items of a successful read: the lifted ones, or else the SDK's, converted (a
    /// fall-back, counted with its reason in the application's metrics through the
    /// instrumented call it runs in).
    fn read_items<I>(
        &self,
        lifted: Result<Vec<Item>, LiftMiss>,
        sdk: I,
    ) -> Result<Vec<Item>, StoreError>
    where
        I: IntoIterator<Item = SdkItem>,
    {
        match lifted {
            Ok(items) => {
                self.item_reads.lifted.fetch_add(1, Ordering::Relaxed);
                Ok(items)
            }
            Err(miss) => {
                self.item_reads.by_sdk.fetch_add(1, Ordering::Relaxed);
                crate::store::instrumented::note_lift_fallback(miss);
                sdk.into_iter().map(from_sdk_item).collect()
            }
        }
    }
}

#[async_trait]
impl Store for DynamoStore {
    fn name(&self) -> &'static str {
        "dynamodb"
    }

    fn table_name(&self) -> &str {
        &self.table
    }

    async fn get(&self, key: &Key) -> Result<GetOutput, StoreError> {
        self.get_item(key, false).await
    }

    async fn get_consistent(&self, key: &Key) -> Result<GetOutput, StoreError> {
        self.get_item(key, true).await
    }

    async fn batch_get(&self, keys: &[Key]) -> Result<BatchGetOutput, StoreError> {
        // DynamoDB rejects an empty request; asking for nothing finds nothing.
        if keys.is_empty() {
            return Ok(BatchGetOutput::default());
        }
        let request = KeysAndAttributes::builder()
            .set_keys(Some(keys.iter().map(key_map).collect()))
            .build()
            .map_err(build_error)?;
        let call = self
            .client
            .batch_get_item()
            .request_items(&self.table, request)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send();
        let (out, lifted) = lifting(Member::Responses, call).await;
        let mut out = out.map_err(|err| self.sdk_error("BatchGetItem", err))?;

        let items = self.read_items(
            lifted,
            out.responses
                .as_mut()
                .and_then(|responses| responses.remove(&self.table))
                .unwrap_or_default(),
        )?;
        let unprocessed = out
            .unprocessed_keys
            .as_mut()
            .and_then(|unprocessed| unprocessed.remove(&self.table))
            .map(|request| request.keys)
            .unwrap_or_default()
            .iter()
            .map(key_from_map)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(BatchGetOutput {
            items,
            unprocessed,
            consumed: total_capacity(out.consumed_capacity.as_deref().unwrap_or_default()),
        })
    }

    /// The attribute maps the response's items were lifted into (`lift`): DynamoDB's JSON is
    /// read once, into maps, whichever reader asks.
    async fn query_raw(&self, query: &Query) -> Result<QueryOutput<RawItem>, StoreError> {
        Ok(self.query(query).await?.into_raw())
    }

    async fn batch_get_raw(&self, keys: &[Key]) -> Result<BatchGetOutput<RawItem>, StoreError> {
        Ok(self.batch_get(keys).await?.into_raw())
    }

    async fn query(&self, query: &Query) -> Result<QueryOutput, StoreError> {
        let (partition_attr, sort_attr) = match query.index {
            Index::Table => (PK, SK),
            Index::Gsi1 => (SK, GSI1SK),
        };
        let mut expr = Expression::default();
        let mut key_condition = format!(
            "{} = {}",
            expr.name("#pk", partition_attr),
            expr.value(":pk", SdkValue::S(query.partition.clone()))
        );
        if let Some(sort) = sort_condition(&mut expr, sort_attr, &query.sort) {
            key_condition.push_str(" AND ");
            key_condition.push_str(&sort);
        }
        let filter = query
            .filter
            .as_ref()
            .map(|filter| filter_expression(&mut expr, filter))
            .transpose()?;
        let limit = query
            .limit
            .map(|limit| {
                i32::try_from(limit)
                    .map_err(|_| StoreError::Invalid(format!("query limit {limit} too large")))
            })
            .transpose()?;
        let start = query
            .start
            .as_ref()
            .map(|start| start_key_map(query.index, start))
            .transpose()?;

        let mut request = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression(key_condition)
            .set_filter_expression(filter)
            .set_expression_attribute_names(Some(expr.names))
            .set_expression_attribute_values(Some(expr.values))
            .scan_index_forward(query.forward)
            .set_limit(limit)
            .set_exclusive_start_key(start)
            .set_consistent_read(query.consistent.then_some(true))
            .return_consumed_capacity(ReturnConsumedCapacity::Total);
        if query.index == Index::Gsi1 {
            request = request.index_name(GSI1);
        }
        let (out, lifted) = lifting(Member::Items, request.send()).await;
        let out = out.map_err(|err| self.sdk_error("Query", err))?;

        let last_evaluated = out
            .last_evaluated_key
            .as_ref()
            .map(|key| start_key_from_map(query.index, key))
            .transpose()?;
        Ok(QueryOutput {
            scanned: usize::try_from(out.scanned_count).unwrap_or(0),
            consumed: total_capacity(out.consumed_capacity.as_slice()),
            items: self.read_items(lifted, out.items.unwrap_or_default())?,
            last_evaluated,
        })
    }

    async fn scan(
        &self,
        start: Option<&Key>,
        limit: Option<u32>,
    ) -> Result<ScanOutput, StoreError> {
        let limit = limit
            .map(|l| {
                i32::try_from(l)
                    .map_err(|_| StoreError::Invalid(format!("scan limit {l} too large")))
            })
            .transpose()?;
        let call = self
            .client
            .scan()
            .table_name(&self.table)
            .set_exclusive_start_key(start.map(key_map))
            .set_limit(limit)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send();
        let (out, lifted) = lifting(Member::Items, call).await;
        let out = out.map_err(|err| self.sdk_error("Scan", err))?;
        Ok(ScanOutput {
            consumed: total_capacity(out.consumed_capacity.as_slice()),
            last_evaluated: out
                .last_evaluated_key
                .as_ref()
                .map(key_from_map)
                .transpose()?,
            items: self.read_items(lifted, out.items.unwrap_or_default())?,
        })
    }

    async fn transact_write(&self, ops: Vec<WriteOp>) -> Result<WriteOutput, StoreError> {
        // DynamoDB rejects an empty transaction; writing nothing trivially succeeds.
        if ops.is_empty() {
            return Ok(WriteOutput::default());
        }
        let items = ops
            .into_iter()
            .map(|op| self.transact_item(op))
            .collect::<Result<Vec<_>, _>>()?;
        let out = self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(|err| transact_error(&self.table, err))?;
        Ok(WriteOutput {
            consumed: Capacity::write(total_units(
                out.consumed_capacity.as_deref().unwrap_or_default(),
            )),
        })
    }

    async fn batch_put(&self, items: Vec<Item>) -> Result<Vec<Item>, StoreError> {
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let requests = items
            .into_iter()
            .map(|item| {
                let put = PutRequest::builder()
                    .set_item(Some(item.into()))
                    .build()
                    .map_err(build_error)?;
                Ok(WriteRequest::builder().put_request(put).build())
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        let mut out = self
            .client
            .batch_write_item()
            .request_items(&self.table, requests)
            .send()
            .await
            .map_err(|err| self.sdk_error("BatchWriteItem", err))?;
        out.unprocessed_items
            .as_mut()
            .and_then(|unprocessed| unprocessed.remove(&self.table))
            .unwrap_or_default()
            .into_iter()
            .filter_map(|request| request.put_request)
            .map(|put| from_sdk_item(put.item))
            .collect()
    }

    async fn ensure_table(&self) -> Result<(), StoreError> {
        self.create_table().await?;
        self.wait_until_active().await?;
        self.enable_ttl().await;
        Ok(())
    }

    /// One GetItem of a key no item has: it proves that the endpoint answers, the
    /// credentials are accepted and the table exists (ResourceNotFoundException otherwise),
    /// for 0.5 RCU. DescribeTable would be free on DynamoDB, but DynamoDB Local takes about
    /// 50 ms to answer it (a GetItem, 2 ms), and a readiness probe at start-up waits for it.
    async fn ping(&self) -> Result<(), StoreError> {
        self.get_item(&Key::new(PING_KEY, PING_KEY), false)
            .await
            .map(drop)
    }
}

impl DynamoStore {
    /// One GetItem call.
    async fn get_item(&self, key: &Key, consistent: bool) -> Result<GetOutput, StoreError> {
        let call = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key_map(key)))
            .set_consistent_read(consistent.then_some(true))
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send();
        let (out, lifted) = lifting(Member::Item, call).await;
        let out = out.map_err(|err| self.sdk_error("GetItem", err))?;
        Ok(GetOutput {
            consumed: total_capacity(out.consumed_capacity.as_slice()),
            item: self.read_items(lifted, out.item)?.pop(),
        })
    }

    fn transact_item(&self, op: WriteOp) -> Result<TransactWriteItem, StoreError> {
        let item = match op {
            WriteOp::Put { item, condition } => {
                let expr = condition.map(condition_expression).unwrap_or_default();
                let put = Put::builder()
                    .table_name(&self.table)
                    .set_item(Some(item.into()))
                    .set_condition_expression(expr.expression)
                    .set_expression_attribute_names(non_empty(expr.names))
                    .set_expression_attribute_values(non_empty(expr.values))
                    .build()
                    .map_err(build_error)?;
                TransactWriteItem::builder().put(put).build()
            }
            WriteOp::Delete { key, condition } => {
                let expr = condition.map(condition_expression).unwrap_or_default();
                let delete = Delete::builder()
                    .table_name(&self.table)
                    .set_key(Some(key_map(&key)))
                    .set_condition_expression(expr.expression)
                    .set_expression_attribute_names(non_empty(expr.names))
                    .set_expression_attribute_values(non_empty(expr.values))
                    .build()
                    .map_err(build_error)?;
                TransactWriteItem::builder().delete(delete).build()
            }
            WriteOp::Update {
                key,
                actions,
                condition,
            } => {
                let mut expr = Expression::default();
                let update = update_expression(&mut expr, &actions)?;
                if let Some(condition) = condition {
                    expr.expression = Some(condition_text(&mut expr, &condition));
                }
                let update = Update::builder()
                    .table_name(&self.table)
                    .set_key(Some(key_map(&key)))
                    .update_expression(update)
                    .set_condition_expression(expr.expression)
                    .set_expression_attribute_names(non_empty(expr.names))
                    .set_expression_attribute_values(non_empty(expr.values))
                    .build()
                    .map_err(build_error)?;
                TransactWriteItem::builder().update(update).build()
            }
            WriteOp::ConditionCheck { key, condition } => {
                let expr = condition_expression(condition);
                let check = ConditionCheck::builder()
                    .table_name(&self.table)
                    .set_key(Some(key_map(&key)))
                    .set_condition_expression(expr.expression)
                    .set_expression_attribute_names(non_empty(expr.names))
                    .set_expression_attribute_values(non_empty(expr.values))
                    .build()
                    .map_err(build_error)?;
                TransactWriteItem::builder().condition_check(check).build()
            }
        };
        Ok(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local(table: &str) -> DynamoConfig {
        DynamoConfig {
            table: table.into(),
            endpoint: Some("http://127.0.0.1:9".into()),
            local_credentials: true,
        }
    }

    #[tokio::test]
    async fn the_client_retries_and_times_out_as_configured() {
        let sdk = SdkSettings {
            max_attempts: 5,
            connect_timeout: Duration::from_millis(150),
            attempt_timeout: Duration::from_millis(400),
            operation_timeout: Duration::from_millis(1200),
            ..SdkSettings::default()
        };
        let store = DynamoStore::connect_with(local("t"), sdk).await.unwrap();
        let config = store.client.config();
        let retry = config.retry_config().expect("retry config");
        assert_eq!(retry.mode(), aws_config::retry::RetryMode::Standard);
        assert_eq!(retry.max_attempts(), 5);
        assert_eq!(retry.initial_backoff(), Duration::from_millis(25));
        assert_eq!(retry.max_backoff(), Duration::from_secs(1));
        let timeouts = config.timeout_config().expect("timeout config");
        assert_eq!(timeouts.connect_timeout(), Some(Duration::from_millis(150)));
        assert_eq!(
            timeouts.operation_attempt_timeout(),
            Some(Duration::from_millis(400))
        );
        assert_eq!(
            timeouts.operation_timeout(),
            Some(Duration::from_millis(1200))
        );

        let defaults = DynamoStore::connect(local("t")).await.unwrap();
        let timeouts = defaults.client.config().timeout_config().unwrap();
        assert_eq!(timeouts.operation_timeout(), Some(Duration::from_secs(5)));
        assert_eq!(
            defaults
                .client
                .config()
                .retry_config()
                .unwrap()
                .max_attempts(),
            3
        );
    }

    #[tokio::test]
    async fn nonsensical_settings_are_refused() {
        for sdk in [
            SdkSettings {
                max_attempts: 0,
                ..SdkSettings::default()
            },
            SdkSettings {
                connect_timeout: Duration::ZERO,
                ..SdkSettings::default()
            },
            SdkSettings {
                attempt_timeout: Duration::from_secs(6),
                ..SdkSettings::default()
            },
        ] {
            assert!(
                matches!(
                    DynamoStore::connect_with(local("t"), sdk).await,
                    Err(StoreError::Invalid(_))
                ),
                "{sdk:?}"
            );
        }
    }
}
