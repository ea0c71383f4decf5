//! The async client (being written).
