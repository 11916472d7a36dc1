//! The application, assembled once: the gateway over a store, its background sweeper, the
//! HTTP routes and the metrics they all report to. `serve` and the tests build it the same
//! way, through [`build`].

use std::sync::Arc;

use axum::Router;

use crate::auth::Authenticator;
use crate::graphql::{Gateway, GatewayOptions};
use crate::http::{self, HttpLimits};
use crate::repo::sweep::{SweepConfig, SweepHandle, Sweeper};
use crate::store::{DynStore, Instrumented};
use crate::telemetry::{Metrics, TelemetryOptions};

/// Everything that shapes a running gateway besides its store.
#[derive(Default)]
pub struct Settings {
    pub gateway: GatewayOptions,
    pub sweep: SweepConfig,
    pub http: HttpLimits,
    pub auth: Authenticator,
    pub telemetry: TelemetryOptions,
}

/// A built application.
pub struct App {
    gateway: Arc<Gateway>,
    sweeps: SweepHandle,
    http: Arc<http::Http>,
    metrics: Option<Arc<Metrics>>,
}

/// Builds the application over `store` and starts its sweeper, which first resumes the
/// sweeps that earlier processes left unfinished.
///
/// Each application has its own metrics (none with `telemetry.metrics` off): the store is
/// wrapped once for the requests' calls and once for the sweeper's, which report under their
/// own `source` label, so background work never blurs what requests cost.
pub fn build(store: DynStore, settings: Settings) -> App {
    let metrics = settings
        .telemetry
        .metrics
        .then(|| match Metrics::new() {
            Ok(metrics) => Some(Arc::new(metrics)),
            // Only a bad metric name could fail (the unit tests define them all): serve
            // without metrics rather than not at all.
            Err(e) => {
                tracing::error!(error = %e, "metrics are off: they could not be defined");
                None
            }
        })
        .flatten();
    let instrumented = |source: &'static str| -> DynStore {
        let store_metrics = metrics.as_ref().map(|m| m.store(source));
        Arc::new(Instrumented::new(store.clone(), source, store_metrics))
    };
    let sweeps = SweepHandle::spawn(Sweeper::new(instrumented("sweep"), settings.sweep));
    let gateway_options = GatewayOptions {
        fallbacks: metrics.as_ref().map(|m| m.fallbacks()),
        ..settings.gateway
    };
    let gateway = Arc::new(Gateway::new(
        instrumented("api"),
        gateway_options,
        Some(sweeps.clone()),
    ));
    let http = Arc::new(
        http::Http::new(gateway.clone(), settings.auth, settings.http)
            .with_metrics(metrics.clone()),
    );
    App {
        gateway,
        sweeps,
        http,
        metrics,
    }
}

impl App {
    /// The HTTP routes.
    pub fn router(&self) -> Router {
        http::router(self.http.clone())
    }

    pub fn gateway(&self) -> &Arc<Gateway> {
        &self.gateway
    }

    /// The application's metrics, when on (served at `/metrics`).
    pub fn metrics(&self) -> Option<&Arc<Metrics>> {
        self.metrics.as_ref()
    }

    /// The background sweeper (tests wait on it).
    pub fn sweeps(&self) -> &SweepHandle {
        &self.sweeps
    }

    /// Serves until `shutdown` completes, then lets requests in flight finish for at most
    /// the configured grace period (see [`http::serve`]).
    pub async fn serve(
        &self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        http::serve(listener, self.router(), &self.http.limits, shutdown).await
    }
}
