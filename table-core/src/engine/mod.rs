//! The embedded engine (being written).
