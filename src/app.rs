//! The application, assembled once: the gateway over a store, its background sweeper and the
//! HTTP routes. `serve` and the tests build it the same way, through [`build`].

use std::sync::Arc;

use axum::Router;

use crate::graphql::Gateway;
use crate::http;
use crate::paging::Limits;
use crate::repo::sweep::{SweepConfig, SweepHandle, Sweeper};
use crate::repo::writes::RetryPolicy;
use crate::store::DynStore;

/// Everything that shapes a running gateway besides its store.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    pub limits: Limits,
    pub retry: RetryPolicy,
    pub sweep: SweepConfig,
}

/// A built application.
pub struct App {
    gateway: Arc<Gateway>,
    sweeps: SweepHandle,
}

/// Builds the application over `store` and starts its sweeper, which first resumes the
/// sweeps that earlier processes left unfinished.
pub fn build(store: DynStore, settings: Settings) -> App {
    let sweeps = SweepHandle::spawn(Sweeper::new(store.clone(), settings.sweep));
    let gateway = Gateway::new(store, settings.limits, settings.retry, Some(sweeps.clone()));
    App {
        gateway: Arc::new(gateway),
        sweeps,
    }
}

impl App {
    /// The HTTP routes.
    pub fn router(&self) -> Router {
        http::router(self.gateway.clone())
    }

    pub fn gateway(&self) -> &Arc<Gateway> {
        &self.gateway
    }

    /// The background sweeper (tests wait on it).
    pub fn sweeps(&self) -> &SweepHandle {
        &self.sweeps
    }

    /// Serves until `shutdown` completes.
    pub async fn serve(
        &self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        axum::serve(listener, self.router())
            .with_graceful_shutdown(shutdown)
            .await
    }
}
