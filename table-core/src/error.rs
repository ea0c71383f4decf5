//! The one error type of the SDK.
//!
//! Every failure, local or remote, is an [`Error`] with a [`ErrorKind`] to branch on, the
//! service's error [`code`](Error::code) and HTTP [`status`](Error::status) (the ones the
//! service would answer, also for failures detected locally and by the embedded engine), the
//! failing operation's index inside a batch, and for local validation a typed [`Violation`]
//! naming the key, property or table and the limit. `Display` describes this layer only; the
//! cause is in `source()`.

use std::fmt;

/// Broad category of an error, for branching (like `std::io::ErrorKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The table or entity does not exist (404).
    NotFound,
    /// The table or entity already exists (409).
    AlreadyExists,
    /// An `If-Match` condition failed (412).
    PreconditionFailed,
    /// The request breaks a rule of the service (400), detected locally or remotely.
    InvalidInput,
    /// A size limit was exceeded (property, entity, batch body).
    TooLarge,
    /// The service asked the client to slow down (429, 503 `ServerBusy`).
    Throttled,
    /// The service failed or is temporarily unavailable (500, 502, 503, 504).
    Unavailable,
    /// The request or the whole operation timed out.
    Timeout,
    /// Authentication or authorization failed (401, 403).
    Auth,
    /// The request could not be sent or the response could not be received.
    Transport,
    /// A response could not be understood.
    Decode,
    /// The service does not implement the requested construct (501).
    NotImplemented,
    /// A write's outcome is unknown: an earlier attempt failed without a trustworthy answer (its
    /// response was lost, or the service failed mid-way), and a retry could not tell whether that
    /// attempt applied (e.g. a retried conditional write got 412 and the stored entity is not the
    /// one written). [`Error::may_have_applied`] is always `true` for this kind; re-read the
    /// entity to learn the truth.
    Ambiguous,
    /// A write lost the race against concurrent writers more times than the contention budget
    /// allows (index maintenance, moves, wide entities re-read and retry on their own; this is
    /// what they report when the races never stop). Never a 412 the caller did not ask for:
    /// what the write left behind is told by [`Error::may_have_applied`] (`false`: nothing of
    /// it was applied). Retrying later may succeed.
    Contention,
    /// Anything else the service answered.
    Other,
}

macro_rules! error_codes {
    ($($(#[$doc:meta])* $name:ident,)*) => {
        /// A service error code, e.g. `EntityAlreadyExists`.
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $($(#[$doc])* $name,)*
            /// Any other code, verbatim.
            Other(String),
        }

        impl ErrorCode {
            /// The code as the service spells it.
            pub fn as_str(&self) -> &str {
                match self {
                    $(ErrorCode::$name => stringify!($name),)*
                    ErrorCode::Other(s) => s,
                }
            }

            /// Parses a code the service sent; unknown codes are kept as [`ErrorCode::Other`].
            pub fn parse(s: &str) -> ErrorCode {
                match s {
                    $(stringify!($name) => ErrorCode::$name,)*
                    other => ErrorCode::Other(other.to_owned()),
                }
            }
        }
    };
}

error_codes! {
    /// 409: the entity exists.
    EntityAlreadyExists,
    /// 404: the entity (or, on delete, the table) does not exist.
    ResourceNotFound,
    /// 404: the table of an entity operation does not exist.
    TableNotFound,
    /// 409: the table exists.
    TableAlreadyExists,
    /// 409: the table is being deleted.
    TableBeingDeleted,
    /// 412: the ETag did not match.
    UpdateConditionNotSatisfied,
    /// 400: generic invalid input (bad filter, bad ETag, bad batch).
    InvalidInput,
    /// 400: a value is out of range (key characters, DateTime, table name length).
    OutOfRangeInput,
    /// 400: a property value exceeds 64 KiB.
    PropertyValueTooLarge,
    /// 400: an entity exceeds 1 MiB.
    EntityTooLarge,
    /// 400: more than 255 properties including the system ones.
    TooManyProperties,
    /// 400: a key exceeds 1 KiB characters.
    KeyValueTooLarge,
    /// 400: `PartitionKey` or `RowKey` missing.
    PropertiesNeedValue,
    /// 400: a property name breaks the naming rules.
    PropertyNameInvalid,
    /// 400: a property name exceeds 255 characters.
    PropertyNameTooLong,
    /// 400: a property appears twice.
    DuplicatePropertiesSpecified,
    /// 400: a value does not fit its declared type.
    InvalidValueType,
    /// 400: a table name has invalid characters.
    InvalidResourceName,
    /// 400: a batch spans several partitions.
    CommandsInBatchActOnDifferentPartitions,
    /// 400: a batch touches one entity twice.
    InvalidDuplicateRow,
    /// 413: the request body is too large.
    RequestBodyTooLarge,
    /// 501: unsupported construct.
    NotImplemented,
    /// 403: authentication failed.
    AuthenticationFailed,
    /// 403: authentication failed (Azurite's code).
    AuthorizationFailure,
    /// 403: the SAS lacks a permission.
    AuthorizationPermissionMismatch,
    /// 503: throttled.
    ServerBusy,
    /// 500: the service timed out.
    OperationTimedOut,
    /// 500: internal error.
    InternalError,
}

impl ErrorCode {
    /// The HTTP status the service answers with this code.
    pub fn status(&self) -> u16 {
        use ErrorCode::*;
        match self {
            EntityAlreadyExists | TableAlreadyExists | TableBeingDeleted => 409,
            ResourceNotFound | TableNotFound => 404,
            UpdateConditionNotSatisfied => 412,
            RequestBodyTooLarge => 413,
            NotImplemented => 501,
            AuthenticationFailed | AuthorizationFailure | AuthorizationPermissionMismatch => 403,
            ServerBusy => 503,
            OperationTimedOut | InternalError => 500,
            _ => 400,
        }
    }

    /// The kind this code belongs to.
    pub fn kind(&self) -> ErrorKind {
        use ErrorCode::*;
        match self {
            EntityAlreadyExists | TableAlreadyExists | TableBeingDeleted => ErrorKind::AlreadyExists,
            ResourceNotFound | TableNotFound => ErrorKind::NotFound,
            UpdateConditionNotSatisfied => ErrorKind::PreconditionFailed,
            PropertyValueTooLarge
            | EntityTooLarge
            | KeyValueTooLarge
            | RequestBodyTooLarge
            | TooManyProperties => ErrorKind::TooLarge,
            NotImplemented => ErrorKind::NotImplemented,
            AuthenticationFailed | AuthorizationFailure | AuthorizationPermissionMismatch => ErrorKind::Auth,
            ServerBusy => ErrorKind::Throttled,
            OperationTimedOut => ErrorKind::Timeout,
            InternalError => ErrorKind::Unavailable,
            Other(_) => ErrorKind::Other,
            _ => ErrorKind::InvalidInput,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which of the two keys a key violation concerns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyName {
    /// `PartitionKey`
    PartitionKey,
    /// `RowKey`
    RowKey,
}

impl fmt::Display for KeyName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KeyName::PartitionKey => "PartitionKey",
            KeyName::RowKey => "RowKey",
        })
    }
}

/// A rule of the service broken by a request, found before sending it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Violation {
    /// A key is longer than the service allows (in UTF-16 code units).
    #[error("{key} is {length} UTF-16 code units long; the limit is {max}")]
    KeyTooLong {
        /// Which key.
        key: KeyName,
        /// Its length in UTF-16 code units.
        length: usize,
        /// The limit.
        max: usize,
    },
    /// A key contains a character the service forbids.
    #[error("{key} contains the forbidden character {character:?} at character {position}")]
    KeyCharacter {
        /// Which key.
        key: KeyName,
        /// The offending character.
        character: char,
        /// Its index, counted in characters.
        position: usize,
    },
    /// An entity lacks `PartitionKey` or `RowKey`.
    #[error("the entity has no {key}")]
    KeyMissing {
        /// Which key.
        key: KeyName,
    },
    /// A property name is empty, reserved or not an identifier.
    #[error("property name {name:?} is invalid: {reason}")]
    PropertyNameInvalid {
        /// The name.
        name: String,
        /// Why it is invalid.
        reason: &'static str,
    },
    /// A property name is longer than 255 characters.
    #[error("property name {name:?} is {length} characters long; the limit is {max}")]
    PropertyNameTooLong {
        /// The name.
        name: String,
        /// Its length in characters.
        length: usize,
        /// The limit.
        max: usize,
    },
    /// A property value exceeds 64 KiB.
    #[error("property {property:?} holds {size} bytes; the limit is {max}")]
    PropertyValueTooLarge {
        /// The property name.
        property: String,
        /// Its size as the service counts it (UTF-16 for strings).
        size: usize,
        /// The limit.
        max: usize,
    },
    /// An entity exceeds 1 MiB.
    #[error("entity {key} is {size} bytes; the limit is {max}")]
    EntityTooLarge {
        /// The entity's key, as text.
        key: String,
        /// Its size as the service counts it.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// An entity has more properties than allowed.
    #[error("entity {key} has {count} properties including the 3 system ones; the limit is {max}")]
    TooManyProperties {
        /// The entity's key, as text.
        key: String,
        /// Its property count including the system properties.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// A DateTime lies outside 1601-01-01 ..= 9999-12-31.
    #[error("property {property:?} holds the DateTime {value}, outside 1601-01-01 to 9999-12-31")]
    DateTimeOutOfRange {
        /// The property name.
        property: String,
        /// The value, printed.
        value: String,
    },
    /// A table name breaks the naming rules.
    #[error("table name {name:?} is invalid: {reason}")]
    TableName {
        /// The name.
        name: String,
        /// Why it is invalid.
        reason: &'static str,
    },
    /// A table name is shorter than 3 or longer than 63 characters.
    #[error("table name {name:?} is {length} characters long; it must be 3 to 63")]
    TableNameLength {
        /// The name.
        name: String,
        /// Its length.
        length: usize,
    },
    /// An `If-Match` ETag holds a control character (it could not be sent as a header).
    #[error("ETag {etag:?} contains a control character")]
    ETag {
        /// The ETag text.
        etag: String,
    },
    /// A batch holds no operation.
    #[error("a batch needs at least one operation")]
    EmptyBatch,
    /// A batch holds more operations than allowed.
    #[error("the batch has {count} operations; the limit is {max}")]
    TooManyOperations {
        /// The operation count.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// A batch spans more than one partition.
    #[error("operation {index} targets partition {found:?} but the batch is for {expected:?}")]
    MixedPartitions {
        /// The first operation with another partition key.
        index: usize,
        /// The batch's partition key (from operation 0).
        expected: String,
        /// The operation's partition key.
        found: String,
    },
    /// A batch touches one entity twice.
    #[error("operation {index} touches RowKey {row_key:?} again; an entity can appear only once in a batch")]
    DuplicateRow {
        /// The second occurrence.
        index: usize,
        /// The repeated row key.
        row_key: String,
    },
    /// A batch body exceeds 4 MiB.
    #[error("the batch body is {size} bytes; the limit is {max}")]
    BatchTooLarge {
        /// Its size in bytes.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// A `$filter` does not parse.
    #[error("syntax error at position {position} in filter: {message}")]
    FilterSyntax {
        /// Byte offset of the problem.
        position: usize,
        /// What was expected.
        message: String,
    },
    /// A `$filter` uses a construct the service does not implement.
    #[error("unsupported filter construct at position {position}: {message}")]
    FilterUnsupported {
        /// Byte offset of the problem.
        position: usize,
        /// What is unsupported.
        message: String,
    },
    /// A `$filter` has more comparisons than allowed.
    #[error("the filter has {count} comparisons; the limit is {max}")]
    TooManyComparisons {
        /// The comparison count.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// A filter compares a property with NaN or an infinity: no literal for them is accepted
    /// by every service (the OData `NaN`/`INF` are not portable), so the filter is not sent.
    #[error(
        "filter compares property {property:?} with the double {value}; only finite doubles can be compared"
    )]
    FilterNonFiniteDouble {
        /// The property name.
        property: String,
        /// The value (NaN or an infinity).
        value: f64,
    },
    /// A `$select` entry is not a property name.
    #[error("$select entry {index} ({entry:?}) is not a property name: {reason}")]
    SelectEntry {
        /// The entry's index in the list.
        index: usize,
        /// The entry.
        entry: String,
        /// Why it is not a property name.
        reason: &'static str,
    },
    /// `$top` outside 1..=1000.
    #[error("top is {value}; it must be between 1 and 1000")]
    Top {
        /// The value given.
        value: u64,
    },
    /// A continuation token could not be read.
    #[error("continuation token {token:?} is malformed")]
    Continuation {
        /// The token text.
        token: String,
    },
    /// A property's value does not fit the field or the declared type.
    #[error("property {property:?}: {message}")]
    Value {
        /// The property name.
        property: String,
        /// What is wrong.
        message: String,
    },
}

impl Violation {
    /// The code the service answers for this violation.
    pub fn code(&self) -> ErrorCode {
        use Violation::*;
        match self {
            KeyTooLong { .. } => ErrorCode::KeyValueTooLarge,
            KeyCharacter { .. } | DateTimeOutOfRange { .. } => ErrorCode::OutOfRangeInput,
            KeyMissing { .. } => ErrorCode::PropertiesNeedValue,
            PropertyNameInvalid { .. } => ErrorCode::PropertyNameInvalid,
            PropertyNameTooLong { .. } => ErrorCode::PropertyNameTooLong,
            PropertyValueTooLarge { .. } => ErrorCode::PropertyValueTooLarge,
            EntityTooLarge { .. } => ErrorCode::EntityTooLarge,
            TooManyProperties { .. } => ErrorCode::TooManyProperties,
            TableNameLength { .. } => ErrorCode::OutOfRangeInput,
            TableName { .. } => ErrorCode::InvalidResourceName,
            MixedPartitions { .. } => ErrorCode::CommandsInBatchActOnDifferentPartitions,
            DuplicateRow { .. } => ErrorCode::InvalidDuplicateRow,
            BatchTooLarge { .. } => ErrorCode::RequestBodyTooLarge,
            FilterUnsupported { .. } => ErrorCode::NotImplemented,
            Value { .. } => ErrorCode::InvalidValueType,
            ETag { .. }
            | EmptyBatch
            | TooManyOperations { .. }
            | FilterSyntax { .. }
            | TooManyComparisons { .. }
            | FilterNonFiniteDouble { .. }
            | SelectEntry { .. }
            | Top { .. }
            | Continuation { .. } => ErrorCode::InvalidInput,
        }
    }

    /// The operation index inside a batch, for the batch rules that name one.
    pub fn batch_index(&self) -> Option<usize> {
        match self {
            Violation::MixedPartitions { index, .. } | Violation::DuplicateRow { index, .. } => Some(*index),
            _ => None,
        }
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// An error from any part of the SDK. Cheap to move (one box).
pub struct Error {
    inner: Box<Inner>,
}

struct Inner {
    kind: ErrorKind,
    code: Option<ErrorCode>,
    status: Option<u16>,
    message: String,
    batch_index: Option<usize>,
    violation: Option<Violation>,
    request_id: Option<String>,
    may_have_applied: bool,
    source: Option<BoxError>,
}

impl Error {
    /// An error of `kind` with a message; no code or status.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            inner: Box::new(Inner {
                kind,
                code: None,
                status: None,
                message: message.into(),
                batch_index: None,
                violation: None,
                request_id: None,
                may_have_applied: false,
                source: None,
            }),
        }
    }

    /// The error the service answers with `code` (its kind and status follow from the code).
    pub fn service(code: ErrorCode, message: impl Into<String>) -> Self {
        let mut e = Error::new(code.kind(), message);
        e.inner.status = Some(code.status());
        e.inner.code = Some(code);
        e
    }

    /// A rule broken locally: kind, code and status are those the service would answer.
    pub fn invalid(violation: Violation) -> Self {
        let code = violation.code();
        let mut e = Error::service(code, violation.to_string());
        e.inner.batch_index = violation.batch_index();
        e.inner.violation = Some(violation);
        e
    }

    /// Sets the HTTP status (for errors answered by a server).
    #[must_use]
    pub fn with_status(mut self, status: u16) -> Self {
        self.inner.status = Some(status);
        self
    }

    /// Sets the service error code, keeping the kind and status (for answers whose code the
    /// SDK does not know, where the kind follows from the HTTP status instead).
    #[must_use]
    pub fn with_code(mut self, code: ErrorCode) -> Self {
        self.inner.code = Some(code);
        self
    }

    /// Sets the index of the failing operation inside a batch.
    #[must_use]
    pub fn with_batch_index(mut self, index: usize) -> Self {
        self.inner.batch_index = Some(index);
        self
    }

    /// Sets the service request id (`x-ms-request-id`).
    #[must_use]
    pub fn with_request_id(mut self, id: impl Into<String>) -> Self {
        self.inner.request_id = Some(id.into());
        self
    }

    /// Marks a failed write whose request may nevertheless have been applied by the service
    /// (its response was lost, timed out, or was a 500/502/504). See
    /// [`Error::may_have_applied`].
    #[must_use]
    pub fn with_may_have_applied(mut self) -> Self {
        self.inner.may_have_applied = true;
        self
    }

    /// Sets the underlying cause.
    #[must_use]
    pub fn with_source(mut self, source: impl Into<BoxError>) -> Self {
        self.inner.source = Some(source.into());
        self
    }

    /// The broad category.
    pub fn kind(&self) -> ErrorKind {
        self.inner.kind
    }

    /// The service error code, when the service answered one (or would have).
    pub fn code(&self) -> Option<&ErrorCode> {
        self.inner.code.as_ref()
    }

    /// The HTTP status, when the error is (or mirrors) a service answer.
    pub fn status(&self) -> Option<u16> {
        self.inner.status
    }

    /// The message, without the cause.
    pub fn message(&self) -> &str {
        &self.inner.message
    }

    /// The zero-based index of the failing operation, for batch failures.
    pub fn batch_index(&self) -> Option<usize> {
        self.inner.batch_index
    }

    /// The local rule that was broken, for errors found before sending.
    pub fn violation(&self) -> Option<&Violation> {
        self.inner.violation.as_ref()
    }

    /// The service request id, when the service answered.
    pub fn request_id(&self) -> Option<&str> {
        self.inner.request_id.as_deref()
    }

    /// `true` when the failed request was a write that the service may have applied anyway: an
    /// attempt failed without a trustworthy answer (timeout, dropped connection, 500/502/504) and
    /// nothing after it proved the write absent. The stored state is unknown: re-read it before
    /// acting on the failure. `false` means the write was not applied (or the request was a read).
    pub fn may_have_applied(&self) -> bool {
        self.inner.may_have_applied || self.inner.kind == ErrorKind::Ambiguous
    }

    /// `true` for a missing table or entity.
    pub fn is_not_found(&self) -> bool {
        self.kind() == ErrorKind::NotFound
    }

    /// `true` for an existing table or entity.
    pub fn is_conflict(&self) -> bool {
        self.kind() == ErrorKind::AlreadyExists
    }

    /// `true` for an ETag mismatch.
    pub fn is_precondition_failed(&self) -> bool {
        self.kind() == ErrorKind::PreconditionFailed
    }

    /// `true` when a retry after a pause may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(
            self.kind(),
            ErrorKind::Throttled
                | ErrorKind::Unavailable
                | ErrorKind::Timeout
                | ErrorKind::Transport
                | ErrorKind::Contention
        )
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.inner.kind);
        if let Some(code) = &self.inner.code {
            d.field("code", &code.as_str());
        }
        if let Some(status) = self.inner.status {
            d.field("status", &status);
        }
        d.field("message", &self.inner.message);
        if let Some(i) = self.inner.batch_index {
            d.field("batch_index", &i);
        }
        if let Some(id) = &self.inner.request_id {
            d.field("request_id", id);
        }
        if self.may_have_applied() {
            d.field("may_have_applied", &true);
        }
        if let Some(s) = &self.inner.source {
            d.field("source", s);
        }
        d.finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(i) = self.inner.batch_index {
            write!(f, "batch operation {i}: ")?;
        }
        f.write_str(&self.inner.message)?;
        if self.may_have_applied() && self.inner.kind != ErrorKind::Ambiguous {
            f.write_str("; the write may have been applied")?;
        }
        if let Some(code) = &self.inner.code {
            write!(f, " ({code}")?;
            if let Some(s) = self.inner.status {
                write!(f, ", HTTP {s}")?;
            }
            f.write_str(")")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner.source.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl From<Violation> for Error {
    fn from(v: Violation) -> Self {
        Error::invalid(v)
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

const _: () = {
    const fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<Error>();
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn violations_carry_the_service_code_status_and_index() {
        let e = Error::invalid(Violation::DuplicateRow { index: 3, row_key: "r".into() });
        assert_eq!(e.code(), Some(&ErrorCode::InvalidDuplicateRow));
        assert_eq!(e.status(), Some(400));
        assert_eq!(e.batch_index(), Some(3));
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(e.to_string().starts_with("batch operation 3: "), "{e}");
    }

    #[test]
    fn codes_round_trip_and_map_to_statuses() {
        for code in [
            ErrorCode::EntityAlreadyExists,
            ErrorCode::ResourceNotFound,
            ErrorCode::UpdateConditionNotSatisfied,
            ErrorCode::Other("Weird".into()),
        ] {
            assert_eq!(ErrorCode::parse(code.as_str()), code);
        }
        assert_eq!(ErrorCode::UpdateConditionNotSatisfied.status(), 412);
        assert_eq!(ErrorCode::TableNotFound.kind(), ErrorKind::NotFound);
    }
}
