//! Key codecs (being written).
