//! Errors of loading plugins and of watching their files.

use std::path::PathBuf;

/// Why a plugin module could not be loaded. The last good version (if any) stays in use.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The module file could not be read (missing, permissions).
    #[error("{}: cannot read the module: {source}", path.display())]
    Read {
        /// The module file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The bytes are not a valid WebAssembly module (or WAT text).
    #[error("{}: not a valid WebAssembly module: {message}", path.display())]
    Compile {
        /// The module file.
        path: PathBuf,
        /// What the compiler said.
        message: String,
    },
    /// The module does not fit the plugin ABI (exports, imports, version).
    #[error("{}: {message} (see docs/plugin-abi.md)", path.display())]
    Abi {
        /// The module file.
        path: PathBuf,
        /// What is missing or wrong.
        message: String,
    },
    /// Instantiating the module or its `berth_init` failed.
    #[error("{}: the plugin failed to start: {message}", path.display())]
    Init {
        /// The module file.
        path: PathBuf,
        /// The trap or the guest's error.
        message: String,
    },
    /// The plugin's instances would not fit the plugin memory budget.
    #[error("{}: {message}", path.display())]
    Budget {
        /// The module file.
        path: PathBuf,
        /// The figures and what to change.
        message: String,
    },
    /// The wasm engine could not be set up.
    #[error("cannot set up the wasm engine: {0}")]
    Engine(String),
}
