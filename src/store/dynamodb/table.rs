//! Table management for the DynamoDB store: creating the table with its index, describing it,
//! waiting until it is active or gone, and checking an existing table has gridgate's layout.

use std::time::Duration;

use aws_sdk_dynamodb::error::DisplayErrorContext;
use aws_sdk_dynamodb::operation::create_table::CreateTableError;
use aws_sdk_dynamodb::operation::delete_table::DeleteTableError;
use aws_sdk_dynamodb::operation::describe_table::DescribeTableError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, IndexStatus, KeySchemaElement, KeyType,
    Projection, ProjectionType, ScalarAttributeType, TableDescription, TableStatus,
    TimeToLiveSpecification,
};

use super::error::build_error;
use super::DynamoStore;
use crate::store::table::{GSI1, GSI1SK, PK, SK, TTL};
use crate::store::StoreError;

/// How long [`Store::ensure_table`](crate::store::Store::ensure_table) and
/// [`DynamoStore::delete_table`] wait for the table to change state: a new on-demand table
/// usually takes a few seconds on AWS, none on Local.
const TABLE_WAIT_ATTEMPTS: u32 = 120;
const TABLE_WAIT_INTERVAL: Duration = Duration::from_millis(500);

impl DynamoStore {
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
    pub(super) async fn describe(&self) -> Result<Option<TableDescription>, StoreError> {
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

    pub(super) async fn create_table(&self) -> Result<(), StoreError> {
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

    /// Turns on DynamoDB's time to live on `ExpiresAt`, so expired idempotency records are
    /// removed by the service. Best effort: readers ignore expired records anyway, the setting
    /// may already be on (DynamoDB then refuses the call), and an operator may manage it.
    pub(super) async fn enable_ttl(&self) {
        let spec = match TimeToLiveSpecification::builder()
            .attribute_name(TTL)
            .enabled(true)
            .build()
        {
            Ok(spec) => spec,
            Err(e) => {
                tracing::warn!(error = %e, "could not build the time-to-live setting");
                return;
            }
        };
        let result = self
            .client
            .update_time_to_live()
            .table_name(&self.table)
            .time_to_live_specification(spec)
            .send()
            .await;
        if let Err(err) = result {
            tracing::debug!(table = %self.table, error = %DisplayErrorContext(&err), "time to live not changed");
        }
    }

    /// Polls DescribeTable until the table and `GSI1` are ACTIVE, checking the key layout.
    pub(super) async fn wait_until_active(&self) -> Result<(), StoreError> {
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
