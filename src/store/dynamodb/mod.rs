//! The [`Store`] over Amazon DynamoDB (or DynamoDB Local): each trait call is one SDK call.
//!
//! This is the only module that knows the AWS SDK. It translates the typed operations of
//! [`super`] into expressions (always with `#name` / `:value` placeholders, since field ids
//! contain `-` and attribute names like `Type` are reserved words) and maps the SDK's results
//! and errors back. Chunking and retrying of unprocessed keys is not done here but in
//! [`super::retry`], shared with the embedded store.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use aws_config::meta::region::RegionProviderChain;
use aws_config::{BehaviorVersion, Region};
use aws_sdk_dynamodb::config::Credentials;
use aws_sdk_dynamodb::error::{BuildError, DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::create_table::CreateTableError;
use aws_sdk_dynamodb::operation::delete_table::DeleteTableError;
use aws_sdk_dynamodb::operation::describe_table::DescribeTableError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, CancellationReason, ConditionCheck, ConsumedCapacity, Delete,
    GlobalSecondaryIndex, IndexStatus, KeySchemaElement, KeyType, KeysAndAttributes, Projection,
    ProjectionType, Put, PutRequest, ReturnConsumedCapacity, ScalarAttributeType, TableDescription,
    TableStatus, TransactWriteItem, Update, WriteRequest,
};
use aws_sdk_dynamodb::Client;

use super::table::{GSI1, GSI1SK, PK, SK};
use super::{
    AttributeValue, BatchGetOutput, Capacity, Condition, Filter, GetOutput, Index, Item, Key,
    Query, QueryOutput, ScanOutput, SortCondition, StartKey, Store, StoreError, UpdateAction,
    WriteOp, WriteOutput,
};

type SdkValue = aws_sdk_dynamodb::types::AttributeValue;
type SdkItem = HashMap<String, SdkValue>;

/// How long [`Store::ensure_table`] and [`DynamoStore::delete_table`] wait for the table to
/// change state: a new on-demand table usually takes a few seconds on AWS, none on Local.
const TABLE_WAIT_ATTEMPTS: u32 = 120;
const TABLE_WAIT_INTERVAL: Duration = Duration::from_millis(500);

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

/// A [`Store`] backed by one DynamoDB table.
#[derive(Clone)]
pub struct DynamoStore {
    client: Client,
    table: String,
}

impl fmt::Debug for DynamoStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynamoStore")
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

impl DynamoStore {
    /// Builds a client from the standard AWS configuration (environment, profile, instance
    /// role), with region us-east-1 when none is configured. Makes no call: use
    /// [`Store::ensure_table`] or [`Store::ping`] to check the table is reachable.
    pub async fn connect(config: DynamoConfig) -> Result<Self, StoreError> {
        if config.table.is_empty() {
            return Err(StoreError::Invalid("empty DynamoDB table name".into()));
        }
        let mut loader = aws_config::defaults(BehaviorVersion::latest());
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
        Ok(DynamoStore {
            client: Client::new(&sdk_config),
            table: config.table,
        })
    }

    /// The table this store reads and writes.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Deletes the table and waits until it is gone (for tests' cleanup). Deleting a table
    /// that does not exist succeeds.
    pub async fn delete_table(&self) -> Result<(), StoreError> {
        let result = self
            .client
            .delete_table()
            .table_name(&self.table)
            .send()
            .await;
        match result {
            Ok(_) => {}
            Err(err) => match err.as_service_error() {
                Some(DeleteTableError::ResourceNotFoundException(_)) => return Ok(()),
                // Already being deleted (or still being created): wait for it below.
                Some(DeleteTableError::ResourceInUseException(_)) => {}
                _ => return Err(self.sdk_error("DeleteTable", err)),
            },
        }
        for attempt in 0..TABLE_WAIT_ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(TABLE_WAIT_INTERVAL).await;
            }
            if self.describe().await?.is_none() {
                return Ok(());
            }
        }
        Err(StoreError::Unavailable(format!(
            "table {} still exists after waiting for its deletion",
            self.table
        )))
    }

    /// DescribeTable; `None` when the table does not exist.
    async fn describe(&self) -> Result<Option<TableDescription>, StoreError> {
        match self
            .client
            .describe_table()
            .table_name(&self.table)
            .send()
            .await
        {
            Ok(out) => Ok(out.table),
            Err(err) => match err.as_service_error() {
                Some(DescribeTableError::ResourceNotFoundException(_)) => Ok(None),
                _ => Err(self.sdk_error("DescribeTable", err)),
            },
        }
    }

    async fn create_table(&self) -> Result<(), StoreError> {
        let gsi1 = GlobalSecondaryIndex::builder()
            .index_name(GSI1)
            .key_schema(key_schema(SK, KeyType::Hash)?)
            .key_schema(key_schema(GSI1SK, KeyType::Range)?)
            .projection(
                Projection::builder()
                    .projection_type(ProjectionType::All)
                    .build(),
            )
            .build()
            .map_err(build_error)?;
        let result = self
            .client
            .create_table()
            .table_name(&self.table)
            .billing_mode(BillingMode::PayPerRequest)
            .key_schema(key_schema(PK, KeyType::Hash)?)
            .key_schema(key_schema(SK, KeyType::Range)?)
            .attribute_definitions(string_attribute(PK)?)
            .attribute_definitions(string_attribute(SK)?)
            .attribute_definitions(string_attribute(GSI1SK)?)
            .global_secondary_indexes(gsi1)
            .send()
            .await;
        match result {
            Ok(_) => {
                tracing::info!(table = %self.table, "created DynamoDB table");
                Ok(())
            }
            Err(err) => match err.as_service_error() {
                // The table exists (or another process is creating it right now).
                Some(CreateTableError::ResourceInUseException(_)) => Ok(()),
                _ => Err(self.sdk_error("CreateTable", err)),
            },
        }
    }

    /// Polls DescribeTable until the table and `GSI1` are ACTIVE, checking the key layout.
    async fn wait_until_active(&self) -> Result<(), StoreError> {
        let mut last_state = String::from("not found");
        for attempt in 0..TABLE_WAIT_ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(TABLE_WAIT_INTERVAL).await;
            }
            let Some(desc) = self.describe().await? else {
                // Right after CreateTable the table may not be visible yet.
                continue;
            };
            check_layout(&self.table, &desc)?;
            let table_status = desc.table_status();
            let index_status = desc
                .global_secondary_indexes()
                .iter()
                .find(|gsi| gsi.index_name() == Some(GSI1))
                .and_then(|gsi| gsi.index_status());
            // DynamoDB Local may leave IndexStatus out; its indexes are usable at once.
            let index_active = matches!(index_status, None | Some(IndexStatus::Active));
            if table_status == Some(&TableStatus::Active) && index_active {
                return Ok(());
            }
            last_state = format!("table {table_status:?}, {GSI1} {index_status:?}");
        }
        Err(StoreError::Unavailable(format!(
            "table {} not ACTIVE after waiting ({last_state})",
            self.table
        )))
    }

    fn sdk_error<E, R>(&self, operation: &str, err: SdkError<E, R>) -> StoreError
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
        R: fmt::Debug,
    {
        map_sdk_error(&self.table, operation, err)
    }
}

#[async_trait]
impl Store for DynamoStore {
    fn name(&self) -> &'static str {
        "dynamodb"
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
        let mut out = self
            .client
            .batch_get_item()
            .request_items(&self.table, request)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(|err| self.sdk_error("BatchGetItem", err))?;

        let items = out
            .responses
            .as_mut()
            .and_then(|responses| responses.remove(&self.table))
            .unwrap_or_default()
            .into_iter()
            .map(from_sdk_item)
            .collect::<Result<Vec<_>, _>>()?;
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
        let out = request
            .send()
            .await
            .map_err(|err| self.sdk_error("Query", err))?;

        let last_evaluated = out
            .last_evaluated_key
            .as_ref()
            .map(|key| start_key_from_map(query.index, key))
            .transpose()?;
        Ok(QueryOutput {
            scanned: usize::try_from(out.scanned_count).unwrap_or(0),
            consumed: total_capacity(out.consumed_capacity.as_slice()),
            items: out
                .items
                .unwrap_or_default()
                .into_iter()
                .map(from_sdk_item)
                .collect::<Result<Vec<_>, _>>()?,
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
        let out = self
            .client
            .scan()
            .table_name(&self.table)
            .set_exclusive_start_key(start.map(key_map))
            .set_limit(limit)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(|err| self.sdk_error("Scan", err))?;
        Ok(ScanOutput {
            consumed: total_capacity(out.consumed_capacity.as_slice()),
            last_evaluated: out
                .last_evaluated_key
                .as_ref()
                .map(key_from_map)
                .transpose()?,
            items: out
                .items
                .unwrap_or_default()
                .into_iter()
                .map(from_sdk_item)
                .collect::<Result<Vec<_>, _>>()?,
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
        match self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
        {
            Ok(out) => Ok(WriteOutput {
                consumed: Capacity::write(total_units(
                    out.consumed_capacity.as_deref().unwrap_or_default(),
                )),
            }),
            Err(err) => match err.as_service_error() {
                Some(TransactWriteItemsError::TransactionCanceledException(canceled)) => {
                    let context = format!(
                        "TransactWriteItems on table {}: {}",
                        self.table,
                        DisplayErrorContext(&err)
                    );
                    Err(cancellation_error(canceled.cancellation_reasons(), context))
                }
                _ => Err(self.sdk_error("TransactWriteItems", err)),
            },
        }
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
        self.wait_until_active().await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        match self.describe().await? {
            Some(_) => Ok(()),
            None => Err(StoreError::Unavailable(format!(
                "table {} not found",
                self.table
            ))),
        }
    }
}

impl DynamoStore {
    /// One GetItem call.
    async fn get_item(&self, key: &Key, consistent: bool) -> Result<GetOutput, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key_map(key)))
            .set_consistent_read(consistent.then_some(true))
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(|err| self.sdk_error("GetItem", err))?;
        Ok(GetOutput {
            consumed: total_capacity(out.consumed_capacity.as_slice()),
            item: out.item.map(from_sdk_item).transpose()?,
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

/// An expression under construction with its placeholder maps.
#[derive(Default)]
struct Expression {
    expression: Option<String>,
    names: HashMap<String, String>,
    values: HashMap<String, SdkValue>,
}

impl Expression {
    /// Registers `#placeholder` for an attribute name and returns the placeholder.
    fn name(&mut self, placeholder: &str, attribute: &str) -> String {
        self.names
            .insert(placeholder.to_string(), attribute.to_string());
        placeholder.to_string()
    }

    /// Registers `:placeholder` for a value and returns the placeholder.
    fn value(&mut self, placeholder: &str, value: SdkValue) -> String {
        self.values.insert(placeholder.to_string(), value);
        placeholder.to_string()
    }
}

/// The sort-key half of a key condition, or `None` for [`SortCondition::Any`]. Only registers
/// `#sk` when used: DynamoDB rejects unused placeholders.
fn sort_condition(expr: &mut Expression, attribute: &str, sort: &SortCondition) -> Option<String> {
    let s = |v: &String| SdkValue::S(v.clone());
    let condition = match sort {
        SortCondition::Any => return None,
        SortCondition::Eq(v) => format!("#sk = {}", expr.value(":s", s(v))),
        SortCondition::BeginsWith(v) => format!("begins_with(#sk, {})", expr.value(":s", s(v))),
        SortCondition::Between(lo, hi) => format!(
            "#sk BETWEEN {} AND {}",
            expr.value(":a", s(lo)),
            expr.value(":b", s(hi))
        ),
        SortCondition::Lt(v) => format!("#sk < {}", expr.value(":s", s(v))),
        SortCondition::Le(v) => format!("#sk <= {}", expr.value(":s", s(v))),
        SortCondition::Gt(v) => format!("#sk > {}", expr.value(":s", s(v))),
        SortCondition::Ge(v) => format!("#sk >= {}", expr.value(":s", s(v))),
    };
    expr.name("#sk", attribute);
    Some(condition)
}

/// `attribute_not_exists(#f0.#f1)` and friends: every path segment is a placeholder, because
/// field ids contain `-` and would otherwise parse as subtraction.
fn filter_expression(expr: &mut Expression, filter: &Filter) -> Result<String, StoreError> {
    let (function, path) = match filter {
        Filter::AttributeNotExists(path) => ("attribute_not_exists", path),
        Filter::AttributeExists(path) => ("attribute_exists", path),
    };
    if path.0.is_empty() {
        return Err(StoreError::Invalid(
            "filter on an empty attribute path".into(),
        ));
    }
    let segments: Vec<String> = path
        .0
        .iter()
        .enumerate()
        .map(|(i, segment)| expr.name(&format!("#f{i}"), segment))
        .collect();
    Ok(format!("{function}({})", segments.join(".")))
}

/// The condition expression of one transactional write.
fn condition_expression(condition: Condition) -> Expression {
    let mut expr = Expression::default();
    expr.expression = Some(condition_text(&mut expr, &condition));
    expr
}

/// Registers a fresh placeholder for an attribute name (`#n0`, `#n1`, …).
fn fresh_name(expr: &mut Expression, attribute: &str) -> String {
    let placeholder = format!("#n{}", expr.names.len());
    expr.name(&placeholder, attribute)
}

/// Registers a fresh placeholder for a value (`:v0`, `:v1`, …).
fn fresh_value(expr: &mut Expression, value: &AttributeValue) -> String {
    let placeholder = format!(":v{}", expr.values.len());
    expr.value(&placeholder, value.clone().into())
}

fn condition_text(expr: &mut Expression, condition: &Condition) -> String {
    match condition {
        Condition::NotExists => format!("attribute_not_exists({})", fresh_name(expr, PK)),
        Condition::Exists => format!("attribute_exists({})", fresh_name(expr, PK)),
        Condition::AttributeEquals { name, value } => {
            format!("{} = {}", fresh_name(expr, name), fresh_value(expr, value))
        }
        Condition::AttributeMissing(name) => format!(
            "attribute_exists({}) AND attribute_not_exists({})",
            fresh_name(expr, PK),
            fresh_name(expr, name)
        ),
        Condition::All(all) => {
            if all.is_empty() {
                return format!(
                    "attribute_exists({}) OR attribute_not_exists({0})",
                    fresh_name(expr, PK)
                );
            }
            all.iter()
                .map(|c| format!("({})", condition_text(expr, c)))
                .collect::<Vec<_>>()
                .join(" AND ")
        }
    }
}

/// `SET #n0.#n1 = :v0 REMOVE #n2`: every path segment is a placeholder.
fn update_expression(
    expr: &mut Expression,
    actions: &[UpdateAction],
) -> Result<String, StoreError> {
    let mut sets = Vec::new();
    let mut removes = Vec::new();
    for action in actions {
        let path = match action {
            UpdateAction::Set(path, _) | UpdateAction::Remove(path) => path,
        };
        if path.0.is_empty() {
            return Err(StoreError::Invalid(
                "update of an empty attribute path".into(),
            ));
        }
        let path = path
            .0
            .iter()
            .map(|segment| fresh_name(expr, segment))
            .collect::<Vec<_>>()
            .join(".");
        match action {
            UpdateAction::Set(_, value) => {
                sets.push(format!("{path} = {}", fresh_value(expr, value)))
            }
            UpdateAction::Remove(_) => removes.push(path),
        }
    }
    let mut text = Vec::new();
    if !sets.is_empty() {
        text.push(format!("SET {}", sets.join(", ")));
    }
    if !removes.is_empty() {
        text.push(format!("REMOVE {}", removes.join(", ")));
    }
    if text.is_empty() {
        return Err(StoreError::Invalid(
            "an update needs at least one action".into(),
        ));
    }
    Ok(text.join(" "))
}

/// Turns a cancelled transaction into the error of its first failing operation.
fn cancellation_error(reasons: &[CancellationReason], context: String) -> StoreError {
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

fn build_error(err: BuildError) -> StoreError {
    StoreError::Invalid(format!("building DynamoDB request: {err}"))
}

/// Sums consumed capacity over the entries of a response (one per table; each entry's
/// `CapacityUnits` already includes the indexes it touched).
fn total_capacity(entries: &[ConsumedCapacity]) -> Capacity {
    Capacity::read(total_units(entries))
}

/// The `CapacityUnits` of a response, summed over its tables.
fn total_units(entries: &[ConsumedCapacity]) -> f64 {
    entries
        .iter()
        .filter_map(ConsumedCapacity::capacity_units)
        .sum()
}

fn key_schema(attribute: &str, key_type: KeyType) -> Result<KeySchemaElement, StoreError> {
    KeySchemaElement::builder()
        .attribute_name(attribute)
        .key_type(key_type)
        .build()
        .map_err(build_error)
}

fn string_attribute(attribute: &str) -> Result<AttributeDefinition, StoreError> {
    AttributeDefinition::builder()
        .attribute_name(attribute)
        .attribute_type(ScalarAttributeType::S)
        .build()
        .map_err(build_error)
}

/// Checks an existing table has the layout gridgate needs, so a wrong table fails at startup
/// with a clear message rather than on the first query.
fn check_layout(table: &str, desc: &TableDescription) -> Result<(), StoreError> {
    let has_keys = |schema: &[KeySchemaElement], hash: &str, range: &str| {
        let find = |key_type: KeyType| {
            schema
                .iter()
                .find(|k| *k.key_type() == key_type)
                .map(|k| k.attribute_name())
        };
        schema.len() == 2
            && find(KeyType::Hash) == Some(hash)
            && find(KeyType::Range) == Some(range)
    };
    if !has_keys(desc.key_schema(), PK, SK) {
        return Err(StoreError::Invalid(format!(
            "table {table} exists but its key is not {PK} (HASH) / {SK} (RANGE)"
        )));
    }
    let Some(gsi) = desc
        .global_secondary_indexes()
        .iter()
        .find(|gsi| gsi.index_name() == Some(GSI1))
    else {
        return Err(StoreError::Invalid(format!(
            "table {table} exists but has no global secondary index {GSI1}; \
             create it with key {SK} (HASH) / {GSI1SK} (RANGE), projection ALL"
        )));
    };
    let projection_all = gsi
        .projection()
        .and_then(|p| p.projection_type())
        .is_none_or(|t| *t == ProjectionType::All);
    if !has_keys(gsi.key_schema(), SK, GSI1SK) || !projection_all {
        return Err(StoreError::Invalid(format!(
            "index {GSI1} of table {table} must have key {SK} (HASH) / {GSI1SK} (RANGE) \
             and projection ALL"
        )));
    }
    Ok(())
}

fn non_empty<K, V>(map: HashMap<K, V>) -> Option<HashMap<K, V>> {
    (!map.is_empty()).then_some(map)
}

fn key_map(key: &Key) -> SdkItem {
    HashMap::from([
        (PK.to_string(), SdkValue::S(key.pk.clone())),
        (SK.to_string(), SdkValue::S(key.sk.clone())),
    ])
}

fn string_attr(map: &SdkItem, name: &str) -> Result<String, StoreError> {
    match map.get(name) {
        Some(SdkValue::S(s)) => Ok(s.clone()),
        other => Err(StoreError::Corrupt(format!(
            "expected string attribute {name} in a key, found {other:?}"
        ))),
    }
}

fn key_from_map(map: &SdkItem) -> Result<Key, StoreError> {
    Ok(Key::new(string_attr(map, PK)?, string_attr(map, SK)?))
}

fn start_key_map(index: Index, start: &StartKey) -> Result<SdkItem, StoreError> {
    let mut map = key_map(&start.key);
    if index == Index::Gsi1 {
        let Some(gsi1sk) = &start.gsi1sk else {
            return Err(StoreError::Invalid(format!(
                "start key {} of a {GSI1} query lacks {GSI1SK}",
                start.key
            )));
        };
        map.insert(GSI1SK.to_string(), SdkValue::S(gsi1sk.clone()));
    }
    Ok(map)
}

fn start_key_from_map(index: Index, map: &SdkItem) -> Result<StartKey, StoreError> {
    Ok(StartKey {
        key: key_from_map(map)?,
        gsi1sk: match index {
            Index::Table => None,
            Index::Gsi1 => Some(string_attr(map, GSI1SK)?),
        },
    })
}

/// Converts an item read from DynamoDB. Written by hand rather than with serde_dynamo's `From`
/// because that one panics on value types this SDK version does not know; here they are
/// reported as corrupt data.
fn from_sdk_item(item: SdkItem) -> Result<Item, StoreError> {
    item.into_iter()
        .map(|(name, value)| Ok((name, from_sdk_value(value)?)))
        .collect::<Result<HashMap<_, _>, StoreError>>()
        .map(Item::from)
}

fn from_sdk_value(value: SdkValue) -> Result<AttributeValue, StoreError> {
    Ok(match value {
        SdkValue::S(s) => AttributeValue::S(s),
        SdkValue::N(n) => AttributeValue::N(n),
        SdkValue::Bool(b) => AttributeValue::Bool(b),
        SdkValue::Null(n) => AttributeValue::Null(n),
        SdkValue::B(b) => AttributeValue::B(b.into_inner()),
        SdkValue::M(m) => AttributeValue::M(
            m.into_iter()
                .map(|(k, v)| Ok((k, from_sdk_value(v)?)))
                .collect::<Result<_, StoreError>>()?,
        ),
        SdkValue::L(l) => AttributeValue::L(
            l.into_iter()
                .map(from_sdk_value)
                .collect::<Result<_, _>>()?,
        ),
        SdkValue::Ss(ss) => AttributeValue::Ss(ss),
        SdkValue::Ns(ns) => AttributeValue::Ns(ns),
        SdkValue::Bs(bs) => AttributeValue::Bs(bs.into_iter().map(|b| b.into_inner()).collect()),
        other => {
            return Err(StoreError::Corrupt(format!(
                "unknown DynamoDB attribute value type: {other:?}"
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::AttrPath;

    #[test]
    fn query_expressions_use_placeholders_for_every_name() {
        let mut expr = Expression::default();
        let filter = Filter::AttributeNotExists(AttrPath::new(["Values", "xattrib-3812"]));
        assert_eq!(
            filter_expression(&mut expr, &filter).unwrap(),
            "attribute_not_exists(#f0.#f1)"
        );
        assert_eq!(expr.names["#f1"], "xattrib-3812");
        let sort = SortCondition::Between("a".into(), "b".into());
        assert_eq!(
            sort_condition(&mut expr, GSI1SK, &sort).unwrap(),
            "#sk BETWEEN :a AND :b"
        );
        assert_eq!(expr.names["#sk"], GSI1SK);
        let mut unused = Expression::default();
        assert_eq!(sort_condition(&mut unused, SK, &SortCondition::Any), None);
        assert!(unused.names.is_empty());
    }

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

    #[test]
    fn values_convert_both_ways() {
        let item: Item = HashMap::from([
            ("PK".to_string(), AttributeValue::S("p".into())),
            (
                "Values".to_string(),
                AttributeValue::M(HashMap::from([
                    ("n".to_string(), AttributeValue::N("1.5".into())),
                    ("b".to_string(), AttributeValue::B(vec![1, 2])),
                    (
                        "l".to_string(),
                        AttributeValue::L(vec![AttributeValue::Null(true)]),
                    ),
                ])),
            ),
        ])
        .into();
        let sdk: SdkItem = item.clone().into();
        assert_eq!(from_sdk_item(sdk).unwrap(), item);
    }
}
