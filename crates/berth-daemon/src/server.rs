//! The operations endpoints: /metrics, /healthz, /livez, /readyz, /configz.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use tokio::net::TcpListener;

use crate::configz::Configz;
use crate::metrics::Metrics;
use crate::scheduling::Health;

/// Serves `app` over plain HTTP on `listener` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}

/// The endpoints: /metrics, /healthz, /livez, /readyz, /configz.
pub fn router(metrics: Metrics, health: Arc<Health>, configz: Arc<Configz>) -> Router {
    let live = health.clone();
    let livez = health.clone();
    let ready = health;
    Router::new()
        .route(
            "/metrics",
            get(move || {
                let text = metrics.encode();
                async move {
                    (
                        [(
                            header::CONTENT_TYPE,
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        )],
                        text,
                    )
                }
            }),
        )
        .route(
            "/healthz",
            get(move || {
                let alive = live.alive.load(Ordering::Relaxed);
                async move { status(alive, "scheduling thread stopped") }
            }),
        )
        .route(
            "/livez",
            get(move || {
                let alive = livez.alive.load(Ordering::Relaxed);
                async move { status(alive, "scheduling thread stopped") }
            }),
        )
        .route(
            "/readyz",
            get(move || {
                let synced = ready.synced.load(Ordering::Relaxed);
                async move { status(synced, "caches not synced") }
            }),
        )
        .route(
            "/configz",
            get(move || {
                let text = configz.text();
                async move { ([(header::CONTENT_TYPE, "application/json")], text) }
            }),
        )
}

fn status(ok: bool, problem: &'static str) -> impl IntoResponse {
    if ok {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, problem)
    }
}
