//! Typed entity traits (being written).
