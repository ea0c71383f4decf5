//! Quickstart on the embedded engine (being written).
fn main() {}
