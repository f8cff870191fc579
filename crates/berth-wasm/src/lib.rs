//! Berth's WASM plugin runtime: policy predicates and priorities served by sandboxed
//! `wasm32-wasip1` modules, batched per pod, hot-reloaded.
//!
//! The ABI is specified in docs/plugin-abi.md; [`abi`] holds its names and numbers. A
//! [`Runtime`] owns the wasm engine; a [`PluginHost`] loads modules from a directory and is the
//! [`berth_engine::PluginFactory`] the engine builds rules with, and swaps a changed
//! module inside its plugin when asked ([`PluginHost::reload_modules`]; berth-daemon's reload
//! decides when).
//!
//! Architecture invariants: the engine never sees wasmtime; a plugin is called a few times
//! per pod (one call per chunk of nodes), never once per node; every call is bounded in time
//! and memory, and a failing call costs that call only.

pub mod abi;
mod error;
mod factory;
mod host;
mod plugin;
mod rules;
mod runtime;
mod view;

pub use error::LoadError;
pub use factory::PluginHost;
pub use plugin::{Kind, MAX_MODULE_BYTES, Plugin, PluginStats, Reloaded};
pub use rules::{WasmFilter, WasmScore};
pub use runtime::Runtime;
