//! The server loop: hyper connections with header-read deadlines (for HTTP/1 and HTTP/2
//! alike), and a graceful shutdown bounded by the grace period.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::Router;

use super::HttpLimits;

/// Serves `router` on `listener` until `shutdown` completes: every connection gets a header
/// read timeout (a client that connects and sends nothing, or trickles headers, is dropped);
/// on shutdown the listener closes, connections finish their requests in flight, and after
/// `shutdown_grace` whatever is still running is cancelled.
///
/// hyper's own `header_read_timeout` only starts once a connection is known to be HTTP/1:
/// the automatic HTTP/1-or-2 detection before it waits for bytes without a deadline, and
/// HTTP/2 has no such timeout. So each connection must also deliver its first request's head
/// within `header_read_timeout` of being accepted, whatever its protocol, or it is closed.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: &HttpLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
    use hyper_util::server::conn::auto::Builder;
    use hyper_util::service::TowerToHyperService;
    use tower::ServiceExt;

    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_headers(limits.max_headers * 2);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(Duration::from_secs(20)))
        .max_header_list_size((limits.max_header_bytes * 2) as u32);
    let first_request_timeout = limits.header_read_timeout;
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        // Out of file descriptors, say: back off briefly instead of spinning.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let requested = Arc::new(AtomicBool::new(false));
                let seen = requested.clone();
                let service = TowerToHyperService::new(router.clone().map_request(
                    move |r: axum::http::Request<hyper::body::Incoming>| {
                        seen.store(true, Ordering::Relaxed);
                        r.map(Body::new)
                    },
                ));
                let connection = builder
                    .serve_connection_with_upgrades(TokioIo::new(stream), service)
                    .into_owned();
                let connection = graceful.watch(connection);
                tokio::spawn(async move {
                    tokio::pin!(connection);
                    let result =
                        match tokio::time::timeout(first_request_timeout, &mut connection).await {
                            Ok(result) => result,
                            Err(_) if !requested.load(Ordering::Relaxed) => {
                                // Dropping the connection closes the socket.
                                tracing::debug!("no request head in time: connection closed");
                                return;
                            }
                            Err(_) => connection.await,
                        };
                    if let Err(e) = result {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }
                });
            }
            () = &mut shutdown => break,
        }
    }
    drop(listener);
    tracing::info!(
        grace_ms = limits.shutdown_grace.as_millis() as u64,
        "draining connections"
    );
    if tokio::time::timeout(limits.shutdown_grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("grace period over: cancelling requests still in flight");
    }
    Ok(())
}
