//! What the watches make of an API server that fails them, said once: the first failure of
//! each cause names the server and the cause, later ones are counted into a summary line
//! every [`SUMMARY_EVERY`] while the cause persists, and the first success after failures
//! says the server answers again. Thirteen watches retrying with backoff against a server
//! that is down would otherwise print a line each per retry.

use std::collections::BTreeMap;
use std::error::Error;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tracing::{info, warn};

/// How often a persisting failure is summarised.
pub const SUMMARY_EVERY: Duration = Duration::from_secs(30);

/// The failures of one cause.
#[derive(Debug)]
struct Failing {
    since: Instant,
    /// Failures since the last line about this cause.
    unreported: u64,
    /// Failures in all.
    total: u64,
    last_line: Instant,
    /// The kinds whose watches failed this way.
    kinds: Vec<String>,
}

/// Failures of the API server as the watches see them, by cause.
#[derive(Debug)]
pub struct Reachability {
    server: String,
    failing: Mutex<BTreeMap<String, Failing>>,
}

/// The innermost cause of an error: what went wrong, without the layers that each repeat it
/// with a prefix ("failed to perform initial object list: ServiceError: client error
/// (Connect): tcp connect error: Connection refused" says "Connection refused").
pub fn root_cause(error: &(dyn Error + 'static)) -> String {
    let mut cause = error;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    cause.to_string()
}

impl Reachability {
    /// Failures of the server at `server` (its URL, for messages).
    pub fn new(server: impl Into<String>) -> Self {
        Reachability {
            server: server.into(),
            failing: Mutex::new(BTreeMap::new()),
        }
    }

    /// A watch of `kind` failed with `error`; logs as the module says.
    pub fn failed(&self, kind: &str, error: &(dyn Error + 'static)) {
        self.failed_at(kind, &root_cause(error), Instant::now());
    }

    /// A watch delivered an event: the server answers.
    pub fn answered(&self) {
        self.answered_at(Instant::now());
    }

    fn failed_at(&self, kind: &str, cause: &str, now: Instant) {
        let mut failing = self.failing.lock().unwrap_or_else(|e| e.into_inner());
        match failing.get_mut(cause) {
            None => {
                warn!(server = %self.server, %kind, %cause,
                    "API server request failed; retrying with backoff (further failures of this \
                     cause are summarised every {}s)", SUMMARY_EVERY.as_secs());
                failing.insert(
                    cause.to_owned(),
                    Failing {
                        since: now,
                        unreported: 0,
                        total: 1,
                        last_line: now,
                        kinds: vec![kind.to_owned()],
                    },
                );
            }
            Some(f) => {
                f.unreported += 1;
                f.total += 1;
                if !f.kinds.iter().any(|k| k == kind) {
                    f.kinds.push(kind.to_owned());
                }
                if now.duration_since(f.last_line) >= SUMMARY_EVERY {
                    warn!(server = %self.server, %cause, failures = f.unreported,
                        for_s = now.duration_since(f.since).as_secs(),
                        kinds = %f.kinds.join(","),
                        "API server still failing; retrying with backoff");
                    f.unreported = 0;
                    f.last_line = now;
                }
            }
        }
    }

    fn answered_at(&self, now: Instant) {
        let mut failing = self.failing.lock().unwrap_or_else(|e| e.into_inner());
        if failing.is_empty() {
            return;
        }
        for (cause, f) in std::mem::take(&mut *failing) {
            info!(server = %self.server, %cause, failures = f.total,
                after_s = now.duration_since(f.since).as_secs(), "API server answers again");
        }
    }

    /// The causes failing now, with how many failures each has had (for tests).
    #[cfg(test)]
    fn failing(&self) -> Vec<(String, u64, u64)> {
        let failing = self.failing.lock().unwrap_or_else(|e| e.into_inner());
        failing
            .iter()
            .map(|(c, f)| (c.clone(), f.total, f.unreported))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);

    impl std::fmt::Display for Layer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl Error for Layer {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            self.1.as_deref().map(|l| l as &(dyn Error + 'static))
        }
    }

    #[test]
    fn the_innermost_cause_names_what_went_wrong() {
        let e = Layer(
            "failed to perform initial object list",
            Some(Box::new(Layer(
                "client error (Connect)",
                Some(Box::new(Layer("Connection refused (os error 111)", None))),
            ))),
        );
        assert_eq!(root_cause(&e), "Connection refused (os error 111)");
    }

    #[test]
    fn failures_are_counted_per_cause_summarised_and_cleared_on_an_answer() {
        let r = Reachability::new("https://127.0.0.1:1");
        let t0 = Instant::now();
        r.failed_at("Node", "refused", t0);
        r.failed_at("Pod", "refused", t0 + Duration::from_secs(1));
        r.failed_at("Pod", "forbidden", t0 + Duration::from_secs(1));
        assert_eq!(
            r.failing(),
            [("forbidden".into(), 1, 0), ("refused".into(), 2, 1)]
        );
        // Past the summary interval the unreported count starts again.
        r.failed_at(
            "Node",
            "refused",
            t0 + SUMMARY_EVERY + Duration::from_secs(1),
        );
        assert_eq!(r.failing()[1], ("refused".into(), 3, 0));
        r.answered_at(t0 + SUMMARY_EVERY * 2);
        assert!(r.failing().is_empty());
    }
}
