//! The application, assembled once: the gateway over a store, its background sweeper and the
//! HTTP routes. `serve` and the tests build it the same way, through [`build`].

use std::sync::Arc;

use axum::Router;

use crate::auth::Authenticator;
use crate::graphql::{Gateway, GatewayOptions};
use crate::http::{self, HttpLimits};
use crate::repo::sweep::{SweepConfig, SweepHandle, Sweeper};
use crate::store::DynStore;

/// Everything that shapes a running gateway besides its store.
#[derive(Default)]
pub struct Settings {
    pub gateway: GatewayOptions,
    pub sweep: SweepConfig,
    pub http: HttpLimits,
    pub auth: Authenticator,
}

/// A built application.
pub struct App {
    gateway: Arc<Gateway>,
    sweeps: SweepHandle,
    http: Arc<http::Http>,
}

/// Builds the application over `store` and starts its sweeper, which first resumes the
/// sweeps that earlier processes left unfinished.
pub fn build(store: DynStore, settings: Settings) -> App {
    let sweeps = SweepHandle::spawn(Sweeper::new(store.clone(), settings.sweep));
    let gateway = Arc::new(Gateway::new(store, settings.gateway, Some(sweeps.clone())));
    let http = Arc::new(http::Http::new(
        gateway.clone(),
        settings.auth,
        settings.http,
    ));
    App {
        gateway,
        sweeps,
        http,
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
