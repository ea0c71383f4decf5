//! ETags as received from the service, whichever way they arrive: an `ETag` response header,
//! an `odata.etag` member of an entity body, or an `ETag` header inside a `$batch` response
//! part. All three go through [`check_received_etag`] (wrapped by [`received_etag`] where the
//! ETag is kept at once), so they are held to one rule.
//!
//! An ETag is opaque, but it goes back verbatim in an `If-Match` header and in the lines of a
//! batch body: an empty one matches nothing the service wrote, and a control character could
//! never be sent as a header (and a CR or LF would break the lines of a batch body). Both are
//! refused as [`ErrorKind::Decode`] errors rather than kept to fail later, far from their cause.

use table_core::{ETag, Result};

/// Checks an ETag the service sent and wraps it.
pub(crate) fn received_etag(text: &str) -> Result<ETag> {
    check_received_etag(text)?;
    Ok(ETag::new(text))
}

/// Checks an ETag the service sent, without copying it: a page's entities keep theirs borrowed
/// from the body until a decoder takes one.
pub(crate) fn check_received_etag(text: &str) -> Result<()> {
    // The text is not echoed: it comes from the network and may be anything, of any length.
    if text.is_empty() {
        return Err(crate::error::decode("the service sent an empty ETag"));
    }
    // Printable ASCII, the form the service sends, is checked without decoding, and without
    // stopping early: a fold over every byte compiles to a vector loop (every read entity has
    // an ETag to check).
    let printable_ascii = text.bytes().fold(true, |ok, b| ok & (b' '..=b'~').contains(&b));
    if !printable_ascii && text.chars().any(char::is_control) {
        return Err(crate::error::decode("the service sent an ETag containing a control character"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use table_core::ErrorKind;

    use super::*;

    #[test]
    fn empty_and_control_characters_are_refused() {
        assert_eq!(
            received_etag("W/\"datetime'x'\"").map(|e| e.as_str().to_owned()).ok().as_deref(),
            Some("W/\"datetime'x'\"")
        );
        for bad in ["", "W/\"x\"\r\nX: 1", "W/\"x\u{0}\"", "\t", "W/\"\u{85}\""] {
            assert_eq!(received_etag(bad).map_err(|e| e.kind()).err(), Some(ErrorKind::Decode), "{bad:?}");
        }
    }
}
