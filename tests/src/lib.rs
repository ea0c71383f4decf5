//! Test harness for the conformance suite (being written).
