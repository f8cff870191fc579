//! What can go wrong calling an extender. Transport and status errors keep the wording of
//! kube-scheduler's HTTPExtender, so Events read as they do upstream; the rest name what was
//! wrong and what Berth would have accepted.

use std::time::Duration;

/// An extender that cannot be set up from its Policy entry.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// `urlPrefix` is not an http(s) URL.
    #[error("extender {url:?}: urlPrefix must be an http:// or https:// URL: {problem}")]
    BadUrl {
        /// The URL prefix as written.
        url: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A TLS file could not be read.
    #[error("extender {url:?}: tlsConfig.{field} {path:?} cannot be read: {problem}")]
    TlsFile {
        /// The extender's URL prefix.
        url: String,
        /// `certFile`, `keyFile` or `caFile`.
        field: &'static str,
        /// The path as written.
        path: String,
        /// The IO error.
        problem: String,
    },
    /// TLS material that does not parse or does not fit together.
    #[error("extender {url:?}: tlsConfig: {problem}")]
    Tls {
        /// The extender's URL prefix.
        url: String,
        /// What is wrong, naming the field.
        problem: String,
    },
}

/// A failed call to an extender.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// Connecting, TLS, sending or receiving failed (Go's `Post "URL": cause`).
    #[error("Post {url:?}: {cause}")]
    Transport {
        /// The full URL of the call.
        url: String,
        /// What failed.
        cause: String,
    },
    /// No complete answer within `httpTimeout`.
    #[error(
        "Post {url:?}: no complete answer within the extender's httpTimeout of {timeout:?} \
         (Client.Timeout exceeded)"
    )]
    Timeout {
        /// The full URL of the call.
        url: String,
        /// The timeout.
        timeout: Duration,
    },
    /// A status other than 200 OK (upstream's wording).
    #[error("failed {verb} with extender at URL {url}, code {code}")]
    Status {
        /// The verb called.
        verb: String,
        /// The full URL of the call.
        url: String,
        /// The HTTP status code.
        code: u16,
    },
    /// A 3xx answer: Berth does not follow redirects.
    #[error(
        "failed {verb} with extender at URL {url}: it answered {code} redirecting to {location:?}, \
         and Berth does not follow redirects: set the extender's urlPrefix to the final address"
    )]
    Redirect {
        /// The verb called.
        verb: String,
        /// The full URL of the call.
        url: String,
        /// The HTTP status code.
        code: u16,
        /// The `Location` header (empty if none).
        location: String,
    },
    /// The answer's body is larger than Berth reads.
    #[error(
        "failed {verb} with extender at URL {url}: its answer is larger than {limit} bytes, the \
         most Berth reads for this call (1 MiB plus twice the request)"
    )]
    TooLarge {
        /// The verb called.
        verb: String,
        /// The full URL of the call.
        url: String,
        /// The limit in bytes.
        limit: usize,
    },
    /// The answer is not the JSON the verb returns.
    #[error("failed {verb} with extender at URL {url}: the answer is not {expected}: {problem}")]
    Garbage {
        /// The verb called.
        verb: String,
        /// The full URL of the call.
        url: String,
        /// What an answer to this verb looks like.
        expected: &'static str,
        /// What was wrong, with its JSON path.
        problem: String,
    },
    /// The extender answered with its `Error` field set (the text is the extender's).
    #[error("{0}")]
    Reported(String),
    /// The call could not be made at all (the runtime is shutting down).
    #[error("extender {extender:?}: the call could not be made: {cause}")]
    NotCalled {
        /// The extender's URL prefix.
        extender: String,
        /// Why.
        cause: String,
    },
}
