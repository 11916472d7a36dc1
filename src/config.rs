//! Configuration: which store to open and how, shared by every subcommand and by tests.

use std::path::PathBuf;
use std::sync::Arc;

use crate::store::dynamodb::{DynamoConfig, DynamoStore};
use crate::store::embedded::EmbeddedStore;
use crate::store::{table, DynStore, Store, StoreError};

/// The two stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StoreKind {
    /// redb files under the data directory: zero set-up.
    Embedded,
    /// DynamoDB (or DynamoDB Local with an endpoint override).
    Dynamodb,
}

/// Where the data lives.
#[derive(Clone, Debug, clap::Args)]
pub struct StoreConfig {
    /// Which store to use.
    #[arg(long, env = "GRIDGATE_STORE", value_enum, default_value_t = StoreKind::Embedded)]
    pub store: StoreKind,
    /// Directory of the embedded store's files.
    #[arg(long, env = "GRIDGATE_DATA_DIR", default_value = "data")]
    pub data_dir: PathBuf,
    /// Table name (DynamoDB table, or file name of the embedded store).
    #[arg(long, env = "GRIDGATE_TABLE", default_value = table::DEFAULT_TABLE)]
    pub table: String,
    /// DynamoDB endpoint override, e.g. http://127.0.0.1:8000 for DynamoDB Local (the AWS
    /// SDK's own AWS_ENDPOINT_URL_DYNAMODB works too).
    #[arg(long, env = "GRIDGATE_ENDPOINT")]
    pub endpoint: Option<String>,
}

impl StoreConfig {
    pub fn embedded(data_dir: impl Into<PathBuf>) -> Self {
        StoreConfig {
            store: StoreKind::Embedded,
            data_dir: data_dir.into(),
            table: table::DEFAULT_TABLE.into(),
            endpoint: None,
        }
    }

    /// Opens the configured store. The embedded store creates its files and tables (zero
    /// set-up); a DynamoDB table must already exist (`gridgate table create`), because creating
    /// production tables is an operator's decision, not a side effect of starting a server.
    pub async fn open(&self) -> Result<DynStore, StoreError> {
        match self.store {
            StoreKind::Embedded if self.endpoint.is_some() => Err(StoreError::Invalid(
                "--endpoint (GRIDGATE_ENDPOINT) only applies to --store dynamodb; the embedded \
                 store keeps its data under --data-dir"
                    .into(),
            )),
            StoreKind::Embedded => {
                let store = EmbeddedStore::open(&self.data_dir, &self.table)?;
                store.ensure_table().await?;
                Ok(Arc::new(store))
            }
            StoreKind::Dynamodb => {
                // DynamoDB Local accepts any credentials; when pointed at an endpoint with none
                // configured, use placeholders instead of failing in the credential chain.
                let endpoint = self
                    .endpoint
                    .clone()
                    .or_else(|| std::env::var("AWS_ENDPOINT_URL_DYNAMODB").ok());
                let local_credentials = endpoint.is_some()
                    && std::env::var_os("AWS_ACCESS_KEY_ID").is_none()
                    && std::env::var_os("AWS_PROFILE").is_none();
                let store = DynamoStore::connect(DynamoConfig {
                    table: self.table.clone(),
                    endpoint,
                    local_credentials,
                })
                .await?;
                Ok(Arc::new(store))
            }
        }
    }
}
