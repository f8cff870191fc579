//! Wiring: the client, the watches, the scheduling thread, the binder, leader election and
//! the operations endpoints, with an orderly shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::Duration;

use berth_engine::{FeatureGates, Scheduler};
use berth_policy::EffectivePolicy;
use tokio::sync::{oneshot, watch};
use tracing::{error, info, warn};

use crate::Input;
use crate::binder::Binder;
use crate::client::{ClientError, ClientSettings, connect};
use crate::configz::{self, Configz};
use crate::extenders::ExtenderSet;
use crate::leader::{Leadership, LeaseSettings, campaign};
use crate::metrics::{Metrics, ReloadCounts};
use crate::queue::QueueConfig;
use crate::reachability::Reachability;
use crate::reload::Reloader;
use crate::scheduling::{Health, SchedulerUpdates, SchedulingLoop};
use crate::secure::{Delegation, SecureError, SecureServing};
use crate::watch::Relists;

/// Everything `berth run` configures.
#[derive(Debug, Clone)]
pub struct DaemonConfig {
    /// Pods whose `spec.schedulerName` is this are ours.
    pub scheduler_name: String,
    /// This replica's identity (events' reporting instance, the Lease holder).
    pub identity: String,
    /// How to reach the API server.
    pub client: ClientSettings,
    /// Leader election; None = schedule at once, alone.
    pub leader_election: Option<LeaseSettings>,
    /// Where to serve /metrics, /healthz, /livez, /readyz and /configz over plain,
    /// unauthenticated HTTP; None = nowhere.
    pub metrics_addr: Option<SocketAddr>,
    /// Where and how to serve the same endpoints over HTTPS with delegated authentication and
    /// authorization; None = nowhere.
    pub secure: Option<SecureServing>,
    /// The client for TokenReviews (`--authentication-kubeconfig`); None = [`Self::client`].
    pub authentication_client: Option<ClientSettings>,
    /// The client for SubjectAccessReviews (`--authorization-kubeconfig`); None =
    /// [`Self::client`].
    pub authorization_client: Option<ClientSettings>,
    /// Queue timing.
    pub queue: QueueConfig,
    /// How long in-flight bindings may take to finish at shutdown.
    pub shutdown_grace: Duration,
    /// The policy the scheduler was built from: its extenders are called in every cycle
    /// (and by the binder for a bindVerb), /configz shows it; a reloaded policy replaces it.
    pub policy: EffectivePolicy,
    /// The feature gates the scheduler was built with (for /configz).
    pub feature_gates: FeatureGates,
}

impl DaemonConfig {
    /// Upstream-like defaults for a scheduler called `scheduler_name` running `policy`.
    pub fn new(scheduler_name: &str, identity: &str, policy: EffectivePolicy) -> Self {
        DaemonConfig {
            scheduler_name: scheduler_name.to_string(),
            identity: identity.to_string(),
            client: ClientSettings::default(),
            leader_election: None,
            metrics_addr: None,
            secure: None,
            authentication_client: None,
            authorization_client: None,
            queue: QueueConfig::default(),
            shutdown_grace: Duration::from_secs(5),
            policy,
            feature_gates: FeatureGates::default(),
        }
    }
}

/// Why the daemon stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// No API client.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The profiles cannot be served together.
    #[error("profiles: {0}")]
    Profiles(String),
    /// Secure serving could not be set up.
    #[error(transparent)]
    Secure(#[from] SecureError),
    /// The operations endpoint could not listen.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// An extender's client could not be set up.
    #[error(transparent)]
    Extender(#[from] berth_extender::ConfigError),
    /// The scheduling thread could not start or died.
    #[error("scheduling thread: {0}")]
    Thread(String),
}

/// A scheduler name served beside [`DaemonConfig::scheduler_name`] from the same cache and
/// queue (another profile), with its policy and where newer versions of it come from.
pub struct ProfileRun {
    /// The `spec.schedulerName` it serves.
    pub name: String,
    /// Its scheduler.
    pub scheduler: Scheduler,
    /// The policy it was built from (for /configz).
    pub policy: EffectivePolicy,
    /// Where its newer schedulers come from.
    pub reloader: Option<Arc<Reloader>>,
}

/// Runs the scheduler until `shutdown` completes (or the scheduling thread dies).
pub async fn run(
    config: DaemonConfig,
    scheduler: Scheduler,
    reloader: Option<Arc<Reloader>>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), DaemonError> {
    run_profiles(config, scheduler, reloader, Vec::new(), shutdown).await
}

/// [`run`] serving `more` scheduler names (profiles) beside the primary one, all from one
/// cache and one queue: every profile's assumed pods count on the nodes every other profile
/// sees, so two names never race for the same room as two schedulers would.
pub async fn run_profiles(
    config: DaemonConfig,
    scheduler: Scheduler,
    reloader: Option<Arc<Reloader>>,
    more: Vec<ProfileRun>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), DaemonError> {
    if !more.is_empty() {
        let with_extenders = std::iter::once((&config.scheduler_name, &config.policy))
            .chain(more.iter().map(|p| (&p.name, &p.policy)))
            .find(|(_, policy)| !policy.extenders.is_empty());
        if let Some((name, _)) = with_extenders {
            return Err(DaemonError::Profiles(format!(
                "profile {name} calls extenders; Berth serves several profiles from one process \
                 only without extenders: run a berth per profile that calls them"
            )));
        }
        let mut names = vec![&config.scheduler_name];
        for p in &more {
            if names.contains(&&p.name) {
                return Err(DaemonError::Profiles(format!(
                    "scheduler name {} is served twice; each profile needs its own",
                    p.name
                )));
            }
            names.push(&p.name);
        }
    }
    let kube_config = crate::client::config(&config.client).await?;
    let reachability = Arc::new(Reachability::new(kube_config.cluster_url.to_string()));
    let client = crate::client::build(&config.client, kube_config)?;
    let events = connect(&config.client).await?;
    let runtime = tokio::runtime::Handle::current();
    let (inputs, receiver) = mpsc::channel::<Input>();
    let mut metrics = Metrics::new(&config.scheduler_name);
    if let Some(lease) = &config.leader_election {
        metrics = metrics.with_lease(&lease.name);
    }
    // Reload totals of every profile's reloader together.
    let reloaders: Vec<Arc<Reloader>> = reloader
        .iter()
        .chain(more.iter().filter_map(|p| p.reloader.as_ref()))
        .cloned()
        .collect();
    if !reloaders.is_empty() {
        metrics = metrics.with_reload_source(Arc::new(move || {
            let mut counts = ReloadCounts::default();
            for s in reloaders.iter().map(|r| r.status()) {
                counts.policy_applied += s.policy_reloads;
                counts.policy_rejected += s.policy_failures;
                counts.module_applied += s.module_reloads;
                counts.module_rejected += s.module_failures;
            }
            counts
        }));
    }
    let relists = Relists::default();
    let extenders = ExtenderSet::new(
        &config.policy.extenders,
        &runtime,
        metrics.extender_observer(),
        relists.clone(),
    )?;
    if !extenders.is_empty() {
        info!(count = extenders.len(), "calling the policy's extenders");
    }
    let scheduler = scheduler.with_extenders(extenders.engine());
    let configz = Arc::new(Configz::default());
    configz.set_profile(
        &config.scheduler_name,
        &configz::document(&config.policy, &scheduler, config.feature_gates),
    );
    let updates = reloader.map(|next| {
        with_extenders(
            next,
            extenders.clone(),
            configz.clone(),
            &config.scheduler_name,
            config.feature_gates,
        )
    });
    let mut profiles = vec![(config.scheduler_name.clone(), scheduler)];
    let mut profile_updates = Vec::new();
    for p in more {
        configz.set_profile(
            &p.name,
            &configz::document(&p.policy, &p.scheduler, config.feature_gates),
        );
        if let Some(reloader) = p.reloader {
            profile_updates.push((
                p.name.clone(),
                without_extenders(reloader, configz.clone(), &p.name, config.feature_gates),
            ));
        }
        profiles.push((p.name, p.scheduler));
    }
    let health = Arc::new(Health::default());
    let (stop_tx, stop) = watch::channel(false);

    let app = crate::server::router(metrics.clone(), health.clone(), configz.clone());
    let mut servers = Vec::new();
    if let Some(secure) = &config.secure {
        let acceptor = crate::secure::acceptor(secure)?;
        let client_for = |settings: &Option<ClientSettings>| {
            let settings = settings.clone().unwrap_or_else(|| config.client.clone());
            async move { connect(&settings).await }
        };
        let delegation = Arc::new(Delegation::new(
            client_for(&config.authentication_client).await?,
            client_for(&config.authorization_client).await?,
            secure.clone(),
        ));
        let listener = listen(secure.addr).await?;
        info!(addr = %listener.local_addr().unwrap_or(secure.addr),
            "serving /metrics, /healthz, /livez, /readyz, /configz over HTTPS \
             (delegated authentication and authorization)");
        let mut stop = stop.clone();
        let shutdown = async move {
            let _ = stop.wait_for(|s| *s).await;
        };
        servers.push(tokio::spawn(crate::secure::serve(
            listener,
            acceptor,
            app.clone(),
            delegation,
            shutdown,
        )));
    }
    if let Some(addr) = config.metrics_addr {
        let listener = listen(addr).await?;
        info!(addr = %listener.local_addr().unwrap_or(addr),
            "serving /metrics, /healthz, /livez, /readyz, /configz over plain HTTP \
             (unauthenticated)");
        let mut stop = stop.clone();
        let shutdown = async move {
            let _ = stop.wait_for(|s| *s).await;
        };
        let app = app.clone();
        servers.push(tokio::spawn(async move {
            if let Err(e) = crate::server::serve(listener, app, shutdown).await {
                error!(error = %e, "plain HTTP endpoint stopped");
            }
        }));
    }

    let mut watches = crate::watch::spawn_all(&client, &runtime, &inputs, &relists, &reachability);
    let (election, leadership) = match config.leader_election.clone() {
        Some(lease) => {
            info!(lease = %lease.name, namespace = %lease.namespace, identity = %lease.identity,
                "campaigning for the lease");
            // A client of its own, as kube-scheduler's leader election has: queued behind
            // the bindings' rate limit at low QPS, renewals came back too late to extend
            // the lease before it lapsed, and bindings stopped every few seconds.
            let lease_client = connect(&config.client).await?;
            let leadership = Leadership::elected();
            let task = tokio::spawn(campaign(
                lease_client,
                lease,
                leadership.clone(),
                inputs.clone(),
                stop.clone(),
            ));
            (Some(task), leadership)
        }
        None => {
            let _ = inputs.send(Input::Leader(true));
            (None, Leadership::sole())
        }
    };

    let binder = Binder::new(
        client,
        events,
        &config.scheduler_name,
        &config.identity,
        runtime,
        inputs.clone(),
        metrics.clone(),
    )
    .with_extenders(extenders.clone())
    .with_leadership(leadership.clone());
    let tasks = binder.tasks().clone();
    let mut scheduling =
        SchedulingLoop::with_profiles(profiles, binder, config.queue, metrics, health.clone())
            .with_leadership(leadership);
    if let Some(updates) = updates {
        scheduling = scheduling.with_updates(updates);
    }
    for (name, updates) in profile_updates {
        scheduling = scheduling.with_profile_updates(&name, updates);
    }
    scheduling = scheduling.with_documents(extenders.documents().clone());
    let (done_tx, done) = oneshot::channel::<()>();
    health.alive.store(true, Ordering::Relaxed);
    let thread_health = health.clone();
    let thread = std::thread::Builder::new()
        .name("berth-scheduling".into())
        .spawn(move || {
            scheduling.run(receiver);
            thread_health.alive.store(false, Ordering::Relaxed);
            let _ = done_tx.send(());
        })
        .map_err(|e| DaemonError::Thread(e.to_string()))?;
    info!(scheduler = %config.scheduler_name, "scheduler started");

    let mut done = done;
    let died = tokio::select! {
        _ = shutdown => false,
        _ = &mut done => true,
    };
    info!("shutting down: no new pods are taken");
    let _ = inputs.send(Input::Shutdown);
    if !died {
        let _ = done.await;
    }
    let joined = tokio::task::spawn_blocking(move || thread.join()).await;
    tasks.close();
    if tokio::time::timeout(config.shutdown_grace, tasks.wait())
        .await
        .is_err()
    {
        warn!(
            left = tasks.len(),
            "in-flight requests cut short at shutdown"
        );
    }
    let _ = stop_tx.send(true);
    if let Some(election) = election {
        let _ = election.await;
    }
    watches.shutdown().await;
    for server in servers {
        let _ = server.await;
    }
    match joined {
        Ok(Ok(())) if !died => Ok(()),
        Ok(Ok(())) => Err(DaemonError::Thread("stopped unexpectedly".into())),
        Ok(Err(_)) | Err(_) => Err(DaemonError::Thread("panicked".into())),
    }
}

async fn listen(addr: SocketAddr) -> Result<tokio::net::TcpListener, DaemonError> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| DaemonError::Listen { addr, source })
}

/// Attaches the extenders of each reloaded policy to its scheduler, and shows the policy on
/// /configz once it is swapped in. A policy whose extenders cannot be set up is refused
/// whole: its scheduler is dropped, and the running policy and extenders stay.
fn with_extenders(
    reloader: Arc<Reloader>,
    extenders: ExtenderSet,
    configz: Arc<Configz>,
    profile: &str,
    gates: FeatureGates,
) -> SchedulerUpdates {
    let profile = profile.to_string();
    Box::new(move || {
        let (scheduler, policy) = reloader.take_update()?;
        match extenders.update(&policy.extenders) {
            Ok(changed) => {
                if changed {
                    info!(
                        count = extenders.len(),
                        "the reloaded policy's extenders are now called"
                    );
                }
                let scheduler = scheduler.with_extenders(extenders.engine());
                configz.set_profile(&profile, &configz::document(&policy, &scheduler, gates));
                Some(scheduler)
            }
            Err(e) => {
                error!(
                    error = %e,
                    "reloaded policy refused: its extenders cannot be set up; the previous \
                     policy and its extenders keep running"
                );
                None
            }
        }
    })
}

/// Another profile's reloaded schedulers, shown on /configz once swapped in; one whose policy
/// calls extenders is refused (profiles beside the primary one run without them), and the
/// running one stays.
fn without_extenders(
    reloader: Arc<Reloader>,
    configz: Arc<Configz>,
    profile: &str,
    gates: FeatureGates,
) -> SchedulerUpdates {
    let profile = profile.to_string();
    Box::new(move || {
        let (scheduler, policy) = reloader.take_update()?;
        if !policy.extenders.is_empty() {
            error!(%profile, "reloaded policy refused: it calls extenders, which Berth runs only \
                with a single profile; the previous policy keeps running");
            return None;
        }
        configz.set_profile(&profile, &configz::document(&policy, &scheduler, gates));
        Some(scheduler)
    })
}

/// Completes on SIGTERM or SIGINT.
pub async fn termination_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {},
                    _ = tokio::signal::ctrl_c() => {},
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
