//! The client's errors, built in one place: one constructor per [`ErrorKind`] the client
//! decides itself, over [`table_core::Error`] (the one error type of the SDK).
//!
//! Invariants: a call site names the kind by the constructor it calls and gives only the
//! context (which table, entity, header, limit); a service code always comes with the kind and
//! status the code decides ([`refused`], and [`Error::answered`] for answers decoded in
//! `wire::error`); an error the client decides is [`Origin::Local`], only a server's answer is
//! [`Origin::Service`]; no error says a write was applied or not unless the caller knows.

use table_core::{Error, ErrorCode, ErrorKind, Origin};

/// [`ErrorKind::InvalidInput`]: the caller's arguments break a rule of the client that no
/// service rule ([`table_core::Violation`]) names (a connection string, a SAS, an endpoint, a
/// pattern's parameters).
pub(crate) fn invalid_input(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidInput, message)
}

/// [`ErrorKind::Auth`]: a credential is unusable before any request is sent.
pub(crate) fn auth(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Auth, message)
}

/// [`ErrorKind::Transport`]: the request could not be sent or its answer not received.
pub(crate) fn transport(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Transport, message)
}

/// [`ErrorKind::Timeout`]: the request timed out on the client's side.
pub(crate) fn timeout(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Timeout, message)
}

/// [`ErrorKind::Decode`]: an answer, or a row the SDK wrote, cannot be understood or trusted.
pub(crate) fn decode(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Decode, message)
}

/// [`ErrorKind::Crypto`]: client-side encryption or decryption failed.
pub(crate) fn crypto(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Crypto, message)
}

/// [`ErrorKind::Ambiguous`]: a write whose outcome the SDK could not learn.
pub(crate) fn ambiguous(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Ambiguous, message)
}

/// [`ErrorKind::Contention`]: concurrent writers won every race within the contention budget.
pub(crate) fn contention(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Contention, message)
}

/// The error the service answers with `code` (its kind and status), worded with what the
/// client knows: for refusals the client decides as the service would (a unique index that
/// already holds a key, a wide entity with no part 0). Found locally: no server said it.
pub(crate) fn refused(code: ErrorCode, message: impl Into<String>) -> Error {
    Error::answered(code.status(), Some(code), message).with_origin(Origin::Local)
}

/// [`ErrorKind::TooLarge`] for a limit of the service met by a whole the client splits up (a
/// wide entity's transaction): `cause`, the broken rule, is the source, and its code, status
/// and origin are kept.
pub(crate) fn too_large(message: impl Into<String>, cause: Error) -> Error {
    let mut error = Error::new(ErrorKind::TooLarge, message);
    if let Some(code) = cause.code() {
        error = error.with_code(code.clone());
    }
    if let Some(status) = cause.status() {
        error = error.with_status(status);
    }
    error.with_origin(cause.origin()).with_source(cause)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_take_kind_and_status_from_the_code() {
        let e = refused(ErrorCode::EntityAlreadyExists, "the unique index `by_email` holds it");
        assert_eq!((e.kind(), e.status()), (ErrorKind::AlreadyExists, Some(409)));
        assert_eq!(e.service_code(), Some((&ErrorCode::EntityAlreadyExists, Origin::Local)));
        assert_eq!(e.message(), "the unique index `by_email` holds it");
        assert!(!e.to_string().contains("HTTP"), "{e}");
    }

    #[test]
    fn too_large_keeps_the_code_and_status_of_the_rule() {
        let rule = Error::invalid(table_core::Violation::TooManyOperations { count: 101, max: 100 });
        let e = too_large("the wide entity needs 101 rows", rule);
        assert_eq!(e.kind(), ErrorKind::TooLarge);
        assert_eq!((e.code(), e.status()), (Some(&ErrorCode::InvalidInput), Some(400)));
        assert_eq!(e.origin(), Origin::Local);
        assert!(std::error::Error::source(&e).is_some());
    }
}
