//! Waiting for conditions with a deadline.

use std::fmt::Debug;
use std::future::Future;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use kube::runtime::wait::{Condition, await_condition};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;

/// How often [`wait_until`] polls.
const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// Polls `check` until it returns `Ok(true)`, failing after `timeout`. An `Err` from `check`
/// counts as "not yet" (the apiserver may be restarting) and is reported if time runs out.
pub async fn wait_until<F, Fut>(what: &str, timeout: Duration, mut check: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<bool>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    let mut last_error = None;
    loop {
        match check().await {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => last_error = Some(e),
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(match last_error {
                Some(e) => e.context(format!("timed out after {timeout:?} waiting for {what}")),
                None => anyhow!("timed out after {timeout:?} waiting for {what}"),
            });
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// Watches the object `name` until `condition` holds and returns it, failing after `timeout`
/// or if the object is deleted first.
pub async fn wait_for<K>(
    api: &Api<K>,
    name: &str,
    timeout: Duration,
    condition: impl Condition<K>,
) -> Result<K>
where
    K: Clone + Debug + Send + DeserializeOwned + Resource + 'static,
    K::DynamicType: Default,
{
    let kind = K::kind(&Default::default()).into_owned();
    let watched = tokio::time::timeout(timeout, await_condition(api.clone(), name, condition));
    match watched.await {
        Err(_) => bail!("timed out after {timeout:?} waiting for {kind} {name}"),
        Ok(result) => match result? {
            Some(object) => Ok(object),
            None => bail!("{kind} {name} was deleted while waiting for it"),
        },
    }
}
