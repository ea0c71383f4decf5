//! The process-wide registry of named engines: what the connection string
//! `UseEmbeddedEngine=true;Name=<name>` opens, so that every client opened with one name,
//! anywhere in the process, sees the same tables.
//!
//! Invariants:
//! - A name is bound to one engine from its first [`open`] until [`remove`] or [`clear`];
//!   every `open` in between returns a handle to that engine.
//! - Unbinding a name never touches the engine: clients and handles that already hold it keep
//!   it and its data (an engine lives as long as its last handle). The next `open` of the name
//!   binds a fresh, empty engine.
//!
//! ```
//! use table_core::engine::registry;
//!
//! let first = registry::open("docs-registry");
//! first.create_table("Kept").unwrap();
//! assert!(registry::remove("docs-registry").is_some());
//! let fresh = registry::open("docs-registry");
//! assert!(fresh.create_table("Kept").is_ok()); // a new engine: the name is free again
//! assert!(first.create_table("Kept").is_err()); // the old handle still has its table
//! ```

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use super::Engine;

// A std mutex, not an async one: each critical section is one map operation on cheap handles,
// runs no user code and cannot span an `.await` (it is reached only through `with_engines`).
static ENGINES: Mutex<BTreeMap<String, Engine>> = Mutex::new(BTreeMap::new());

/// The engine bound to `name`, binding a new engine with the default options on first use.
pub fn open(name: &str) -> Engine {
    with_engines(|engines| engines.entry(name.to_owned()).or_default().clone())
}

/// Unbinds `name` and returns its engine, or `None` when the name is not bound. Handles to
/// the engine keep working; the next [`open`] of `name` gets a fresh engine.
pub fn remove(name: &str) -> Option<Engine> {
    with_engines(|engines| engines.remove(name))
}

/// Unbinds every name, as [`remove`] does for one.
pub fn clear() {
    // The last handle to an engine may be in the map: drop them after unlocking, so freeing a
    // large engine does not keep other threads waiting on the registry.
    let unbound = with_engines(std::mem::take);
    drop(unbound);
}

fn with_engines<T>(change: impl FnOnce(&mut BTreeMap<String, Engine>) -> T) -> T {
    // A poisoned registry still holds valid engine handles; recover it.
    let mut engines = ENGINES.lock().unwrap_or_else(PoisonError::into_inner);
    change(&mut engines)
}
