//! The typed insert and get phases the instruction probes (`ops_probe` on the embedded engine,
//! `http_probe` over HTTP) share. Each phase is a plain function that drives its own loop to
//! the end (the poll of an async function's future would be inlined into the runtime's and
//! lose its name), so a profiler can collect it alone by name.

use table_client::{EntityKey, TypedTable};
use tokio::runtime::Runtime;

use super::customer::Customer;

/// Inserts `customers` one by one.
#[inline(never)]
pub fn probe_inserts(runtime: &Runtime, table: &TypedTable<Customer>, customers: &[Customer]) {
    runtime.block_on(async {
        for c in customers {
            table.insert(c).await.expect("a fresh key");
        }
    });
}

/// Reads each of `keys` back.
#[inline(never)]
pub fn probe_gets(runtime: &Runtime, table: &TypedTable<Customer>, keys: &[EntityKey]) {
    runtime.block_on(async {
        for key in keys {
            std::hint::black_box(table.get(key).await.expect("stored"));
        }
    });
}
