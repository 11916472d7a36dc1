//! Configuration: which store to open and how, shared by every subcommand and by tests.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::store::dynamodb::{DynamoConfig, DynamoStore, SdkSettings};
use crate::store::embedded::{EmbeddedStore, DEFAULT_CACHE_MB};
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
    /// The embedded store: MiB of the file kept in memory (redb's page cache); the process's
    /// memory is this plus a fixed overhead, whatever the size of the data [default: 64].
    #[arg(long, env = "GRIDGATE_EMBEDDED_CACHE_MB", value_parser = clap::value_parser!(u64).range(1..=1_048_576))]
    pub embedded_cache_mb: Option<u64>,
    /// Table name (DynamoDB table, or file name of the embedded store).
    #[arg(long, env = "GRIDGATE_TABLE", default_value = table::DEFAULT_TABLE)]
    pub table: String,
    /// DynamoDB endpoint override, e.g. http://127.0.0.1:8000 for DynamoDB Local (the AWS
    /// SDK's own AWS_ENDPOINT_URL_DYNAMODB works too).
    #[arg(long, env = "GRIDGATE_ENDPOINT")]
    pub endpoint: Option<String>,
    /// DynamoDB: attempts per call, the first included, before the call fails with
    /// STORE_UNAVAILABLE or THROTTLED [default: 3].
    #[arg(long, env = "GRIDGATE_DYNAMODB_MAX_ATTEMPTS", value_parser = clap::value_parser!(u32).range(1..))]
    pub dynamodb_max_attempts: Option<u32>,
    /// DynamoDB: milliseconds to establish a connection [default: 1000].
    #[arg(long, env = "GRIDGATE_DYNAMODB_CONNECT_TIMEOUT_MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub dynamodb_connect_timeout_ms: Option<u64>,
    /// DynamoDB: milliseconds for one attempt of a call [default: 2000].
    #[arg(long, env = "GRIDGATE_DYNAMODB_ATTEMPT_TIMEOUT_MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub dynamodb_attempt_timeout_ms: Option<u64>,
    /// DynamoDB: milliseconds for a whole call, every attempt and backoff included
    /// [default: 5000].
    #[arg(long, env = "GRIDGATE_DYNAMODB_OPERATION_TIMEOUT_MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub dynamodb_operation_timeout_ms: Option<u64>,
}

impl StoreConfig {
    pub fn embedded(data_dir: impl Into<PathBuf>) -> Self {
        StoreConfig {
            store: StoreKind::Embedded,
            data_dir: data_dir.into(),
            embedded_cache_mb: None,
            table: table::DEFAULT_TABLE.into(),
            endpoint: None,
            dynamodb_max_attempts: None,
            dynamodb_connect_timeout_ms: None,
            dynamodb_attempt_timeout_ms: None,
            dynamodb_operation_timeout_ms: None,
        }
    }

    /// The DynamoDB table `table`, at `endpoint` (DynamoDB Local) or where the AWS
    /// configuration says, with the default client settings.
    pub fn dynamodb(table: impl Into<String>, endpoint: Option<String>) -> Self {
        StoreConfig {
            store: StoreKind::Dynamodb,
            table: table.into(),
            endpoint,
            ..StoreConfig::embedded("data")
        }
    }

    /// The DynamoDB client's retries and timeouts: the defaults of [`SdkSettings`] with the
    /// flags given.
    pub fn sdk_settings(&self) -> SdkSettings {
        let defaults = SdkSettings::default();
        let ms = |flag: Option<u64>, default: Duration| flag.map_or(default, Duration::from_millis);
        SdkSettings {
            max_attempts: self.dynamodb_max_attempts.unwrap_or(defaults.max_attempts),
            connect_timeout: ms(self.dynamodb_connect_timeout_ms, defaults.connect_timeout),
            attempt_timeout: ms(self.dynamodb_attempt_timeout_ms, defaults.attempt_timeout),
            operation_timeout: ms(
                self.dynamodb_operation_timeout_ms,
                defaults.operation_timeout,
            ),
            ..defaults
        }
    }

    /// The DynamoDB-only flags given, by name (refused with the embedded store).
    fn dynamodb_flags(&self) -> Vec<&'static str> {
        [
            ("--endpoint (GRIDGATE_ENDPOINT)", self.endpoint.is_some()),
            (
                "--dynamodb-max-attempts (GRIDGATE_DYNAMODB_MAX_ATTEMPTS)",
                self.dynamodb_max_attempts.is_some(),
            ),
            (
                "--dynamodb-connect-timeout-ms (GRIDGATE_DYNAMODB_CONNECT_TIMEOUT_MS)",
                self.dynamodb_connect_timeout_ms.is_some(),
            ),
            (
                "--dynamodb-attempt-timeout-ms (GRIDGATE_DYNAMODB_ATTEMPT_TIMEOUT_MS)",
                self.dynamodb_attempt_timeout_ms.is_some(),
            ),
            (
                "--dynamodb-operation-timeout-ms (GRIDGATE_DYNAMODB_OPERATION_TIMEOUT_MS)",
                self.dynamodb_operation_timeout_ms.is_some(),
            ),
        ]
        .into_iter()
        .filter_map(|(name, given)| given.then_some(name))
        .collect()
    }

    /// The embedded store's page cache in MiB: the flag's, or the default.
    pub fn cache_mb(&self) -> u64 {
        self.embedded_cache_mb.unwrap_or(DEFAULT_CACHE_MB)
    }

    /// Refuses the flags of one store given with the other.
    pub fn check_flags(&self) -> Result<(), StoreError> {
        match self.store {
            StoreKind::Embedded if !self.dynamodb_flags().is_empty() => {
                Err(StoreError::Invalid(format!(
                    "{} only applies to --store dynamodb; the embedded store keeps its data \
                     under --data-dir",
                    self.dynamodb_flags().join(", ")
                )))
            }
            StoreKind::Dynamodb if self.embedded_cache_mb.is_some() => Err(StoreError::Invalid(
                "--embedded-cache-mb (GRIDGATE_EMBEDDED_CACHE_MB) only applies to the embedded \
                 store"
                    .into(),
            )),
            _ => Ok(()),
        }
    }

    /// Opens the configured store. The embedded store creates its files and tables (zero
    /// set-up); a DynamoDB table must already exist (`gridgate table create`), because creating
    /// production tables is an operator's decision, not a side effect of starting a server.
    pub async fn open(&self) -> Result<DynStore, StoreError> {
        self.check_flags()?;
        match self.store {
            StoreKind::Embedded => {
                let store =
                    EmbeddedStore::open_with_cache(&self.data_dir, &self.table, self.cache_mb())?;
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
                let store = DynamoStore::connect_with(
                    DynamoConfig {
                        table: self.table.clone(),
                        endpoint,
                        local_credentials,
                    },
                    self.sdk_settings(),
                )
                .await?;
                Ok(Arc::new(store))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        store: StoreConfig,
    }

    #[test]
    fn dynamodb_client_flags_override_the_defaults() {
        let cli = Cli::parse_from([
            "gridgate",
            "--store",
            "dynamodb",
            "--dynamodb-max-attempts",
            "5",
            "--dynamodb-operation-timeout-ms",
            "800",
            "--dynamodb-attempt-timeout-ms",
            "300",
        ]);
        assert_eq!(
            cli.store.sdk_settings(),
            SdkSettings {
                max_attempts: 5,
                attempt_timeout: Duration::from_millis(300),
                operation_timeout: Duration::from_millis(800),
                ..SdkSettings::default()
            }
        );
        let defaults = Cli::parse_from(["gridgate", "--store", "dynamodb"]);
        assert_eq!(defaults.store.sdk_settings(), SdkSettings::default());
        assert!(Cli::try_parse_from(["gridgate", "--dynamodb-max-attempts", "0"]).is_err());
        assert!(Cli::try_parse_from(["gridgate", "--dynamodb-connect-timeout-ms", "0"]).is_err());
    }

    #[tokio::test]
    async fn dynamodb_client_flags_are_refused_with_the_embedded_store() {
        let dir = std::env::temp_dir().join("gridgate-config-test-unused");
        let mut config = StoreConfig::embedded(&dir);
        config.dynamodb_max_attempts = Some(2);
        match config.open().await {
            Err(StoreError::Invalid(message)) => {
                assert!(
                    message.contains("--dynamodb-max-attempts")
                        && message.contains("--store dynamodb"),
                    "{message}"
                );
            }
            other => panic!("expected a refusal, got {:?}", other.map(|_| ())),
        }
        assert!(!dir.exists(), "nothing is created when refused");
    }

    #[test]
    fn the_embedded_cache_is_configured_in_mib_and_bounded() {
        let cli = Cli::parse_from(["gridgate", "--embedded-cache-mb", "16"]);
        assert_eq!(cli.store.embedded_cache_mb, Some(16));
        let defaults = Cli::parse_from(["gridgate"]);
        assert_eq!(
            defaults.store.embedded_cache_mb, None,
            "the default applies"
        );
        assert!(Cli::try_parse_from(["gridgate", "--embedded-cache-mb", "0"]).is_err());
        assert!(Cli::try_parse_from(["gridgate", "--embedded-cache-mb", "lots"]).is_err());
    }

    #[tokio::test]
    async fn the_embedded_cache_flag_is_refused_with_dynamodb() {
        let mut config = StoreConfig::dynamodb("unused", Some("http://127.0.0.1:9".into()));
        config.embedded_cache_mb = Some(16);
        match config.open().await {
            Err(StoreError::Invalid(message)) => {
                assert!(message.contains("--embedded-cache-mb"), "{message}");
            }
            other => panic!("expected a refusal, got {:?}", other.map(|_| ())),
        }
    }

    #[tokio::test]
    async fn the_embedded_store_opens_with_the_configured_cache() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut config = StoreConfig::embedded(dir.path());
        config.embedded_cache_mb = Some(1);
        let store = config.open().await.expect("opens with a 1 MiB cache");
        store.ping().await.expect("answers");
        let empty = store.scan(None, Some(1)).await.expect("a scan");
        assert!(empty.items.is_empty(), "a new file is empty");
    }
}
