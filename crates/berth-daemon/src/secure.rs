//! Secure serving as kube-scheduler's: HTTPS with a given or self-signed certificate, bearer
//! tokens authenticated by the API server (TokenReview) and requests authorized by it
//! (SubjectAccessReview on the path), with always-allowed paths and groups. A request without
//! a token is `system:anonymous`, as upstream's delegated authentication allows, so it gets
//! 403 on a protected path unless RBAC grants it; an invalid token gets 401.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::Client;
use kube::api::{Api, PostParams};
use rustls::ServerConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tracing::{debug, warn};

/// Where the serving certificate comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Certificate {
    /// `--tls-cert-file` and `--tls-private-key-file` (PEM).
    Files {
        /// The certificate chain.
        cert: PathBuf,
        /// Its private key.
        key: PathBuf,
    },
    /// Self-signed for localhost and 127.0.0.1, as kube-scheduler makes one; kept in
    /// `dir/kube-scheduler.{crt,key}` when a `--cert-dir` is given (and reused from there),
    /// else in memory only.
    SelfSigned {
        /// `--cert-dir`.
        dir: Option<PathBuf>,
    },
}

/// The lowest TLS version offered (`--tls-min-version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MinTls {
    /// TLS 1.2 (the default).
    V12,
    /// TLS 1.3.
    V13,
}

/// Secure serving settings.
#[derive(Debug, Clone)]
pub struct SecureServing {
    /// Where to listen (`--bind-address`, `--secure-port`).
    pub addr: SocketAddr,
    /// The serving certificate.
    pub certificate: Certificate,
    /// The lowest TLS version.
    pub min_tls: MinTls,
    /// Paths served to anyone (`--authorization-always-allow-paths`): exact, or a prefix when
    /// they end in `*`.
    pub always_allow_paths: Vec<String>,
    /// Groups allowed everything (upstream: system:masters).
    pub always_allow_groups: Vec<String>,
    /// How long a TokenReview's answer is kept.
    pub authentication_ttl: Duration,
    /// How long an allowed SubjectAccessReview is kept.
    pub authorized_ttl: Duration,
    /// How long a denied SubjectAccessReview is kept.
    pub unauthorized_ttl: Duration,
}

impl SecureServing {
    /// kube-scheduler's defaults on `addr`.
    pub fn new(addr: SocketAddr) -> Self {
        SecureServing {
            addr,
            certificate: Certificate::SelfSigned { dir: None },
            min_tls: MinTls::V12,
            always_allow_paths: ["/healthz", "/readyz", "/livez"].map(String::from).to_vec(),
            always_allow_groups: vec!["system:masters".to_string()],
            authentication_ttl: Duration::from_secs(10),
            authorized_ttl: Duration::from_secs(10),
            unauthorized_ttl: Duration::from_secs(10),
        }
    }
}

/// Why secure serving could not start.
#[derive(Debug, thiserror::Error)]
pub enum SecureError {
    /// A certificate or key file could not be read or parsed.
    #[error("{path}: {reason}")]
    Pem {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// The self-signed certificate could not be made or kept.
    #[error("self-signed serving certificate: {0}")]
    SelfSigned(String),
    /// rustls refused the certificate and key.
    #[error("serving certificate: {0}")]
    Tls(#[from] rustls::Error),
}

/// The TLS acceptor for `settings`.
pub fn acceptor(settings: &SecureServing) -> Result<TlsAcceptor, SecureError> {
    let (certs, key) = match &settings.certificate {
        Certificate::Files { cert, key } => (read_certs(cert)?, read_key(key)?),
        Certificate::SelfSigned { dir } => self_signed(dir.as_deref())?,
    };
    let versions: &[&rustls::SupportedProtocolVersion] = match settings.min_tls {
        MinTls::V12 => &[&rustls::version::TLS13, &rustls::version::TLS12],
        MinTls::V13 => &[&rustls::version::TLS13],
    };
    let mut config =
        ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_protocol_versions(versions)?
            .with_no_client_auth()
            .with_single_cert(certs, key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, SecureError> {
    let pem = |reason: String| SecureError::Pem {
        path: path.to_path_buf(),
        reason,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| pem(format!("cannot read PEM certificates: {e}")))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem(format!("not a PEM certificate: {e}")))?;
    if certs.is_empty() {
        return Err(pem(
            "holds no CERTIFICATE block; expected the PEM serving certificate (and its chain)"
                .into(),
        ));
    }
    Ok(certs)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, SecureError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| SecureError::Pem {
        path: path.to_path_buf(),
        reason: format!("expected a PEM private key (PKCS#8, PKCS#1 or SEC1): {e}"),
    })
}

/// The pair name kube-scheduler gives its self-signed certificate in `--cert-dir`.
const PAIR_NAME: &str = "kube-scheduler";

fn self_signed(
    dir: Option<&Path>,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), SecureError> {
    if let Some(dir) = dir {
        let cert = dir.join(format!("{PAIR_NAME}.crt"));
        let key = dir.join(format!("{PAIR_NAME}.key"));
        if cert.exists() && key.exists() {
            return Ok((read_certs(&cert)?, read_key(&key)?));
        }
    }
    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let made = rcgen::generate_simple_self_signed(names)
        .map_err(|e| SecureError::SelfSigned(e.to_string()))?;
    let cert_pem = made.cert.pem();
    let key_pem = made.signing_key.serialize_pem();
    if let Some(dir) = dir {
        let write = |name: String, text: &str| {
            std::fs::create_dir_all(dir)
                .and_then(|()| std::fs::write(dir.join(&name), text))
                .map_err(|e| {
                    SecureError::SelfSigned(format!("writing {}: {e}", dir.join(&name).display()))
                })
        };
        write(format!("{PAIR_NAME}.crt"), &cert_pem)?;
        write(format!("{PAIR_NAME}.key"), &key_pem)?;
    }
    let cert = CertificateDer::from(made.cert.der().to_vec());
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
        .map_err(|e| SecureError::SelfSigned(e.to_string()))?;
    Ok((vec![cert], key))
}

/// Who made a request.
#[derive(Debug, Clone, PartialEq, Eq)]
struct User {
    name: String,
    uid: String,
    groups: Vec<String>,
}

impl User {
    fn anonymous() -> Self {
        User {
            name: "system:anonymous".into(),
            uid: String::new(),
            groups: vec!["system:unauthenticated".into()],
        }
    }
}

/// A TTL cache of review answers.
#[derive(Default)]
struct Cache<K, V> {
    entries: Mutex<HashMap<K, (V, Instant)>>,
}

/// At most this many answers are kept per cache; beyond it the cache starts over, so a flood
/// of distinct tokens cannot grow memory without bound.
const CACHE_LIMIT: usize = 4096;

impl<K: std::hash::Hash + Eq, V: Clone> Cache<K, V> {
    fn get(&self, key: &K) -> Option<V> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .get(key)
            .filter(|(_, until)| Instant::now() < *until)
            .map(|(v, _)| v.clone())
    }

    fn put(&self, key: K, value: V, ttl: Duration) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= CACHE_LIMIT {
            entries.clear();
        }
        entries.insert(key, (value, Instant::now() + ttl));
    }
}

/// Authentication and authorization delegated to the API server.
pub struct Delegation {
    authn: Client,
    authz: Client,
    settings: SecureServing,
    tokens: Cache<[u8; 32], Option<User>>,
    decisions: Cache<(String, String, String), bool>,
}

impl Delegation {
    /// Delegates to the API servers `authn` (TokenReview) and `authz` (SubjectAccessReview)
    /// reach.
    pub fn new(authn: Client, authz: Client, settings: SecureServing) -> Self {
        Delegation {
            authn,
            authz,
            settings,
            tokens: Cache::default(),
            decisions: Cache::default(),
        }
    }

    /// The user a bearer token belongs to; `Ok(None)` when the API server says it is not
    /// valid.
    async fn authenticate(&self, token: &str) -> Result<Option<User>, kube::Error> {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(user) = self.tokens.get(&key) {
            return Ok(user);
        }
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: token.to_string(),
                ..TokenReviewSpec::default()
            },
            ..TokenReview::default()
        };
        let answer = Api::<TokenReview>::all(self.authn.clone())
            .create(&PostParams::default(), &review)
            .await?;
        let status = answer.status.unwrap_or_default();
        let user = status
            .authenticated
            .unwrap_or(false)
            .then(|| status.user.unwrap_or_default())
            .map(|u| User {
                name: u.username.unwrap_or_default(),
                uid: u.uid.unwrap_or_default(),
                groups: u.groups.unwrap_or_default(),
            });
        self.tokens
            .put(key, user.clone(), self.settings.authentication_ttl);
        Ok(user)
    }

    /// Whether `user` may `verb` `path`.
    async fn authorize(&self, user: &User, verb: &str, path: &str) -> Result<bool, kube::Error> {
        if always_allowed(&self.settings.always_allow_paths, path)
            || user
                .groups
                .iter()
                .any(|g| self.settings.always_allow_groups.contains(g))
        {
            return Ok(true);
        }
        let key = (user.name.clone(), verb.to_string(), path.to_string());
        if let Some(allowed) = self.decisions.get(&key) {
            return Ok(allowed);
        }
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(user.name.clone()),
                uid: (!user.uid.is_empty()).then(|| user.uid.clone()),
                groups: Some(user.groups.clone()),
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(path.to_string()),
                    verb: Some(verb.to_string()),
                }),
                ..SubjectAccessReviewSpec::default()
            },
            ..SubjectAccessReview::default()
        };
        let answer = Api::<SubjectAccessReview>::all(self.authz.clone())
            .create(&PostParams::default(), &review)
            .await?;
        let allowed = answer.status.is_some_and(|s| s.allowed);
        let ttl = if allowed {
            self.settings.authorized_ttl
        } else {
            self.settings.unauthorized_ttl
        };
        self.decisions.put(key, allowed, ttl);
        Ok(allowed)
    }
}

/// Upstream's always-allow path match: exact, or a prefix for an entry ending in `*`.
fn always_allowed(paths: &[String], path: &str) -> bool {
    paths.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix),
        None => p == path,
    })
}

/// The authentication and authorization step in front of every endpoint.
async fn guard(
    State(delegation): State<Arc<Delegation>>,
    request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path().to_string();
    let verb = request.method().as_str().to_ascii_lowercase();
    let bearer = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string);
    let user = match bearer {
        None => User::anonymous(),
        Some(token) => match delegation.authenticate(&token).await {
            Ok(Some(user)) => user,
            Ok(None) => return unauthorized(),
            Err(e) => {
                warn!(error = %e, "TokenReview failed; answering 401");
                return unauthorized();
            }
        },
    };
    match delegation.authorize(&user, &verb, &path).await {
        Ok(true) => next.run(request).await,
        Ok(false) => {
            debug!(user = %user.name, %path, "forbidden");
            (
                StatusCode::FORBIDDEN,
                format!(
                    "forbidden: User \"{}\" cannot {verb} path \"{path}\"",
                    user.name
                ),
            )
                .into_response()
        }
        Err(e) => {
            warn!(error = %e, "SubjectAccessReview failed; answering 500");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "Internal Server Error: authorization check failed",
            )
                .into_response()
        }
    }
}

fn unauthorized() -> Response {
    (StatusCode::UNAUTHORIZED, "Unauthorized").into_response()
}

/// Serves `app` over HTTPS on `listener`, each request authenticated and authorized through
/// `delegation`, until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    app: Router,
    delegation: Arc<Delegation>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let app = app.layer(middleware::from_fn_with_state(delegation, guard));
    let connections = tokio_util::task::TaskTracker::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    warn!(error = %e, "secure port: accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let acceptor = acceptor.clone();
        let app = app.clone();
        connections.spawn(async move {
            // A client that never finishes its handshake must not hold a task for ever.
            let tls = match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(stream))
                .await
            {
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => {
                    debug!(%peer, error = %e, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    debug!(%peer, "TLS handshake timed out");
                    return;
                }
            };
            let service = TowerToHyperService::new(app);
            let served = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                .http1_only()
                .serve_connection(TokioIo::new(tls), service)
                .await;
            if let Err(e) = served {
                debug!(%peer, error = %e, "secure connection ended with an error");
            }
        });
    }
    connections.close();
    let _ = tokio::time::timeout(Duration::from_secs(2), connections.wait()).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn always_allowed_paths_match_exactly_or_by_a_star_prefix() {
        let paths = ["/healthz", "/readyz", "/livez", "/debug/*"].map(String::from);
        for (path, want) in [
            ("/healthz", true),
            ("/healthz/", false),
            ("/healthz/ping", false),
            ("/metrics", false),
            ("/debug/pprof", true),
            ("/configz", false),
        ] {
            assert_eq!(always_allowed(&paths, path), want, "{path}");
        }
    }

    #[test]
    fn a_self_signed_certificate_is_made_once_and_kept_in_the_cert_dir() {
        let dir = tempfile::tempdir().unwrap();
        let settings = SecureServing {
            certificate: Certificate::SelfSigned {
                dir: Some(dir.path().to_path_buf()),
            },
            ..SecureServing::new("127.0.0.1:0".parse().unwrap())
        };
        acceptor(&settings).expect("made");
        let crt = std::fs::read(dir.path().join("kube-scheduler.crt")).unwrap();
        acceptor(&settings).expect("reused");
        assert_eq!(
            crt,
            std::fs::read(dir.path().join("kube-scheduler.crt")).unwrap()
        );
        let files = Certificate::Files {
            cert: dir.path().join("kube-scheduler.crt"),
            key: dir.path().join("kube-scheduler.key"),
        };
        acceptor(&SecureServing {
            certificate: files,
            ..settings.clone()
        })
        .expect("the kept pair serves as files");
    }

    #[test]
    fn bad_certificate_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not pem").unwrap();
        let settings = SecureServing {
            certificate: Certificate::Files {
                cert: empty.clone(),
                key: empty.clone(),
            },
            ..SecureServing::new("127.0.0.1:0".parse().unwrap())
        };
        let err = acceptor(&settings).err().expect("refused").to_string();
        assert!(
            err.contains("empty.pem") && err.contains("CERTIFICATE"),
            "{err}"
        );
    }
}
