//! The API client: in-cluster or kubeconfig configuration, with a client-side token-bucket
//! rate limit (QPS and burst, as client-go's), which kube's client does not have.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use kube::client::ClientBuilder;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use tokio::time::{Instant, Sleep};
use tower::{Layer, Service};

/// How to reach the API server.
#[derive(Debug, Clone)]
pub struct ClientSettings {
    /// A kubeconfig file; None = in-cluster configuration (or the usual kubeconfig lookup
    /// when not in a cluster).
    pub kubeconfig: Option<PathBuf>,
    /// The API server's URL, over the kubeconfig's (kube-scheduler's `--master`).
    pub master: Option<String>,
    /// Sustained requests per second.
    pub qps: f64,
    /// Requests allowed at once above the sustained rate.
    pub burst: u32,
}

impl Default for ClientSettings {
    fn default() -> Self {
        ClientSettings {
            kubeconfig: None,
            master: None,
            qps: 50.0,
            burst: 100,
        }
    }
}

/// Why no client could be made.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The kubeconfig file could not be read.
    #[error("kubeconfig {path}: {source}")]
    Kubeconfig {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: kube::config::KubeconfigError,
    },
    /// No in-cluster configuration and no kubeconfig.
    #[error("no API server configuration (not in a cluster and no kubeconfig): {0}")]
    Infer(#[from] kube::config::InferConfigError),
    /// The client could not be built from the configuration.
    #[error("API client: {0}")]
    Build(#[from] kube::Error),
    /// `--master` is not a URL.
    #[error("--master {url:?} is not a URL such as https://10.0.0.1:6443: {reason}")]
    Master {
        /// What was given.
        url: String,
        /// Why it does not parse.
        reason: String,
    },
    /// QPS or burst out of range.
    #[error("client rate limit: qps must be > 0 and burst >= 1 (got qps {qps}, burst {burst})")]
    BadRateLimit {
        /// QPS given.
        qps: f64,
        /// Burst given.
        burst: u32,
    },
}

/// Builds a rate-limited client.
pub async fn connect(settings: &ClientSettings) -> Result<Client, ClientError> {
    build(settings, config(settings).await?)
}

/// The connection settings a client of `settings` uses (kubeconfig or in-cluster), read once
/// so the caller can also name the server in its messages.
pub async fn config(settings: &ClientSettings) -> Result<Config, ClientError> {
    if settings.qps.is_nan() || settings.qps <= 0.0 || settings.burst == 0 {
        return Err(ClientError::BadRateLimit {
            qps: settings.qps,
            burst: settings.burst,
        });
    }
    let config = match &settings.kubeconfig {
        Some(path) => {
            let kubeconfig =
                Kubeconfig::read_from(path).map_err(|source| ClientError::Kubeconfig {
                    path: path.clone(),
                    source,
                })?;
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(|source| ClientError::Kubeconfig {
                    path: path.clone(),
                    source,
                })?
        }
        None => Config::infer().await?,
    };
    let mut config = config;
    if let Some(url) = &settings.master {
        config.cluster_url = url
            .parse::<http::Uri>()
            .ok()
            .filter(|u| u.scheme().is_some() && u.host().is_some())
            .ok_or_else(|| ClientError::Master {
                url: url.clone(),
                reason: "it needs a scheme (https:// or http://) and a host".into(),
            })?;
    }
    Ok(config)
}

/// A rate-limited client over `config`.
pub fn build(settings: &ClientSettings, mut config: Config) -> Result<Client, ClientError> {
    // kube's own retry of 429/503/504 answers would resend a request below the rate limit
    // and after the binder's lease check (a binding retried after a pause past the lease
    // binds on stale state); every caller here retries by itself: watches relist with
    // backoff, bindings go back to the queue, the lease loop tries each retry period.
    config.default_retry = false;
    let client = ClientBuilder::try_from(config)?
        .with_layer(&RateLimitLayer::new(settings.qps, settings.burst))
        .build();
    Ok(client)
}

/// A token bucket: `burst` tokens, refilled at `qps` per second.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    tokens: f64,
    updated: Instant,
}

impl TokenBucket {
    /// A full bucket.
    pub fn new(qps: f64, burst: u32, now: Instant) -> Self {
        TokenBucket {
            qps,
            burst: f64::from(burst),
            tokens: f64::from(burst),
            updated: now,
        }
    }

    /// Takes a token, or says how long until one is available.
    pub fn take(&mut self, now: Instant) -> Result<(), Duration> {
        let elapsed = now.saturating_duration_since(self.updated).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.qps).min(self.burst);
        self.updated = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - self.tokens) / self.qps))
        }
    }
}

/// A tower layer applying a [`TokenBucket`] to every request.
#[derive(Debug, Clone)]
pub struct RateLimitLayer {
    qps: f64,
    burst: u32,
}

impl RateLimitLayer {
    /// `qps` sustained, `burst` at once.
    pub fn new(qps: f64, burst: u32) -> Self {
        RateLimitLayer { qps, burst }
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimit<S>;
    fn layer(&self, inner: S) -> RateLimit<S> {
        RateLimit {
            inner,
            bucket: TokenBucket::new(self.qps, self.burst, Instant::now()),
            sleep: None,
            reserved: false,
        }
    }
}

/// The service made by [`RateLimitLayer`]. The client calls it through a buffer whose one
/// worker polls readiness before each request, so limiting in `poll_ready` limits every
/// request while responses still proceed concurrently.
pub struct RateLimit<S> {
    inner: S,
    bucket: TokenBucket,
    sleep: Option<Pin<Box<Sleep>>>,
    /// A token was taken for the next call but the inner service was not ready yet.
    reserved: bool,
}

impl<S, R> Service<R> for RateLimit<S>
where
    S: Service<R>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        while !self.reserved {
            if let Some(sleep) = &mut self.sleep {
                ready!(sleep.as_mut().poll(cx));
                self.sleep = None;
            }
            match self.bucket.take(Instant::now()) {
                Ok(()) => self.reserved = true,
                Err(wait) => self.sleep = Some(Box::pin(tokio::time::sleep(wait))),
            }
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        self.reserved = false;
        self.inner.call(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_allows_a_burst_then_the_sustained_rate() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(10.0, 3, t0);
        assert!((0..3).all(|_| b.take(t0).is_ok()));
        let wait = b.take(t0).unwrap_err();
        assert_eq!(wait, Duration::from_millis(100));
        assert!(b.take(t0 + Duration::from_millis(100)).is_ok());
        assert!(b.take(t0 + Duration::from_millis(150)).is_err());
        // Idle time refills up to the burst, no more.
        let later = t0 + Duration::from_secs(10);
        assert!((0..3).all(|_| b.take(later).is_ok()));
        assert!(b.take(later).is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn the_layer_spaces_requests_at_the_rate() {
        use tower::ServiceExt;
        let svc = tower::service_fn(|_: ()| async { Ok::<_, std::convert::Infallible>(()) });
        let mut svc = RateLimitLayer::new(100.0, 2).layer(svc);
        let start = Instant::now();
        for _ in 0..12 {
            svc.ready().await.unwrap().call(()).await.unwrap();
        }
        // 2 at once, then 10 at 100/s.
        let elapsed = start.elapsed();
        assert!(
            elapsed >= Duration::from_millis(99) && elapsed <= Duration::from_millis(110),
            "{elapsed:?}"
        );
    }
}
