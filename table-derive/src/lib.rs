//! `#[derive(TableEntity)]` (being written).
