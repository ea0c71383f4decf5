//! The one error type of the SDK.
//!
//! Every failure, local or remote, is an [`Error`] with a [`ErrorKind`] to branch on, the
//! service's error [`code`](Error::code) and HTTP [`status`](Error::status) (the ones the
//! service would answer, also for failures detected locally and by the embedded engine), its
//! [`Origin`] (a server's HTTP answer, the embedded engine, or a check of the SDK before
//! sending; [`Error::service_code`] gives code and origin together), the failing operation's
//! index inside a batch, and for local validation a typed [`Violation`] naming the key,
//! property or table and the limit. `Display` describes this layer only (it says "HTTP" only
//! for a status a server answered); the cause is in `source()`.
//!
//! Branch on [`Error::kind`]; the only predicate, [`Error::is_transient`], spans several kinds.
//! Errors are built by a few constructors, so kind, code and status never disagree: a code
//! decides kind and status, and the service's own message for each code is stored once, beside
//! the code (the engine answers with it). Callers outside the SDK build [`Error::other`] and
//! [`Error::invalid`].

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
    /// Client-side encryption failed: a key could not wrap or unwrap a content key (wrong key,
    /// unknown key id), a ciphertext or its metadata failed authentication or decryption, an
    /// encryption format is not supported, or a row that must be encrypted was read in clear.
    /// Never retried; nothing is returned in place of the data.
    Crypto,
    /// Anything else the service answered.
    Other,
}

/// Where an error was decided: by a server that answered over HTTP, by the embedded engine
/// (which answers as the service would), or by the SDK itself before or without a request.
///
/// The engine is its own origin rather than [`Local`](Origin::Local): it stands for the
/// service, so code tested on it sees the answers production gets, yet no HTTP status was
/// received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Origin {
    /// A server answered the request over HTTP; [`Error::status`] is the status received.
    Service,
    /// The embedded engine answered, as the service would; [`Error::status`] is the status
    /// the service would answer.
    Engine,
    /// The SDK found it on this side: a rule checked before sending (a [`Violation`]), a
    /// decision the client makes as the service would, a transport failure or a caller's
    /// error. [`Error::status`], when present, is the status the service would answer.
    Local,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Origin::Service => "answered by the service",
            Origin::Engine => "answered by the embedded engine",
            Origin::Local => "found locally",
        })
    }
}

macro_rules! error_codes {
    ($($(#[$doc:meta])* $name:ident => $message:literal,)*) => {
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

            /// The service's own message for this code (the first line of its answer), which the
            /// engine answers too; `None` for a code the SDK does not know.
            fn canonical_message(&self) -> Option<&'static str> {
                match self {
                    $(ErrorCode::$name => Some($message),)*
                    ErrorCode::Other(_) => None,
                }
            }
        }

        #[cfg(test)]
        const KNOWN_CODES: &[&str] = &[$(stringify!($name)),*];
    };
}

// Each code with the message the service answers with it (protocol doc section 8; the first
// line of the answer, without the batch index, `RequestId:` and `Time:` lines).
error_codes! {
    /// 409: the entity exists.
    EntityAlreadyExists => "The specified entity already exists.",
    /// 404: the entity (or, on delete, the table) does not exist.
    ResourceNotFound => "The specified resource does not exist.",
    /// 404: the table of an entity operation does not exist.
    TableNotFound => "The table specified does not exist.",
    /// 409: the table exists.
    TableAlreadyExists => "The table specified already exists.",
    /// 409: the table is being deleted.
    TableBeingDeleted => "The specified table is being deleted. Try operation later.",
    /// 412: the ETag did not match.
    UpdateConditionNotSatisfied => "The update condition specified in the request was not satisfied.",
    /// 400: generic invalid input (bad filter, bad ETag, bad batch).
    InvalidInput => "One of the request inputs is not valid.",
    /// 400: a value is out of range (key characters, DateTime, table name length).
    OutOfRangeInput => "One of the request inputs is out of range.",
    /// 400: a property value exceeds 64 KiB.
    PropertyValueTooLarge => "The property value exceeds the maximum allowed size (64KB). If the property \
        value is a string, it is UTF-16 encoded and the maximum number of characters should be 32K or less.",
    /// 400: an entity exceeds 1 MiB.
    EntityTooLarge => "The entity is larger than the maximum allowed size (1MB).",
    /// 400: more than 255 properties including the system ones.
    TooManyProperties => "The entity contains more properties than allowed. Each entity can include up to \
        252 properties to store data. Each entity also has 3 system properties.",
    /// 400: a key exceeds 1 KiB characters.
    KeyValueTooLarge => "The key exceeds the maximum allowed key size (2KB). It is a UTF-16 encoded string \
        and the maximum number of characters should be 1K or less.",
    /// 400: `PartitionKey` or `RowKey` missing.
    PropertiesNeedValue => "The values are not specified for all properties in the entity.",
    /// 400: a property name breaks the naming rules.
    PropertyNameInvalid => "The property name is invalid.",
    /// 400: a property name exceeds 255 characters.
    PropertyNameTooLong => "The property name exceeds the maximum allowed length (255).",
    /// 400: a property appears twice.
    DuplicatePropertiesSpecified => "A property is specified more than once.",
    /// 400: a value does not fit its declared type.
    InvalidValueType => "The value specified is invalid.",
    /// 400: a table name has invalid characters.
    InvalidResourceName => "The specified resource name contains invalid characters.",
    /// 400: a batch spans several partitions.
    CommandsInBatchActOnDifferentPartitions => "All commands in a batch must operate on same entity group.",
    /// 400: a batch touches one entity twice.
    InvalidDuplicateRow => "The batch request contains multiple changes with same row key. An entity can \
        appear only once in a batch request.",
    /// 400: an XML request body breaks the service's schema (e.g. more than 5 signed
    /// identifiers, more than 5 CORS rules).
    InvalidXmlDocument => "XML specified is not syntactically valid.",
    /// 400: a value in an XML request body is out of range (an access policy's id or
    /// permissions, a retention period).
    InvalidXmlNodeValue => "The value for one of the XML nodes is not in the correct format.",
    /// 413: the request body is too large.
    RequestBodyTooLarge => "The request body is too large and exceeds the maximum permissible limit.",
    /// 501: unsupported construct.
    NotImplemented => "The requested operation is not implemented on the specified resource.",
    /// 403: authentication failed.
    AuthenticationFailed => "Server failed to authenticate the request. Make sure the value of \
        Authorization header is formed correctly including the signature.",
    /// 403: authentication failed (Azurite's code).
    AuthorizationFailure => "This request is not authorized to perform this operation.",
    /// 403: the SAS lacks a permission.
    AuthorizationPermissionMismatch => "This request is not authorized to perform this operation using \
        this permission.",
    /// 503: throttled.
    ServerBusy => "The server is currently unable to receive requests. Please retry your request.",
    /// 500: the service timed out.
    OperationTimedOut => "The operation could not be completed within the permitted time.",
    /// 500: internal error.
    InternalError => "The server encountered an internal error. Please retry the request.",
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

impl ErrorKind {
    /// The kind of an answer whose code says nothing the SDK knows, from its HTTP status.
    fn of_status(status: u16) -> ErrorKind {
        match status {
            400 => ErrorKind::InvalidInput,
            401 | 403 => ErrorKind::Auth,
            404 => ErrorKind::NotFound,
            408 => ErrorKind::Timeout,
            409 => ErrorKind::AlreadyExists,
            412 => ErrorKind::PreconditionFailed,
            413 => ErrorKind::TooLarge,
            429 | 503 => ErrorKind::Throttled,
            500 | 502 | 504 => ErrorKind::Unavailable,
            501 => ErrorKind::NotImplemented,
            _ => ErrorKind::Other,
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
    /// An `If-Match` value is not an ETag: not a quoted string, with or without `W/`.
    #[error("the If-Match value {etag:?} is not an ETag (a quoted string, optionally prefixed by W/)")]
    ETagSyntax {
        /// The value given.
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
    /// A typed transaction's operations and the index rows they maintain, written in the same
    /// batch, exceed the operations one batch holds.
    #[error(
        "the transaction's {operations} operations maintain at least {index_rows} index rows in the same \
         batch, {} operations in all; the limit is {max}: split the transaction",
        .operations + .index_rows
    )]
    IndexRowsOverBatchLimit {
        /// The operations the caller added (those that write).
        operations: usize,
        /// The index rows they maintain (at least: before reading, only the rows certain to change).
        index_rows: usize,
        /// The limit.
        max: usize,
    },
    /// A typed transaction writes a type with a cross-partition index, which no entity-group
    /// transaction (one partition) can keep in step atomically.
    #[error(
        "operation {index} writes `{entity_type}`, whose index `{index_name}` lives in other partitions; \
         a transaction cannot update it atomically, so write `{entity_type}` one value at a time through \
         its TypedTable"
    )]
    CrossPartitionIndexInTransaction {
        /// The operation.
        index: usize,
        /// The type written.
        entity_type: String,
        /// The cross-partition index.
        index_name: String,
    },
    /// Two operations of a typed transaction need the same row (an entity, an index copy, or
    /// index entities of different indexes) and cannot be combined into one change.
    #[error(
        "operations {first} and {index} of the transaction both write the row {row_key:?} ({rows}); an \
         entity can appear only once in a batch: write them in separate transactions"
    )]
    SharedRowInTransaction {
        /// The earlier operation.
        first: usize,
        /// The later operation.
        index: usize,
        /// The row both need.
        row_key: String,
        /// What each needs the row for.
        rows: String,
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
    /// A typed query would scan the whole table (no PartitionKey equality or range bounds it)
    /// and did not ask to: table scans are opt-in for typed queries.
    #[error(
        "the query of table {table} has no PartitionKey condition that bounds it and would scan \
         the whole table; call .table_scan() to scan the whole table deliberately"
    )]
    TableScanNotRequested {
        /// The table queried.
        table: String,
    },
    /// A stored entity was written by a newer version of its type than this build reads.
    #[error(
        "entity type {entity_type:?}: stored by a newer version {found} of the type; this build \
         reads up to version {current}"
    )]
    NewerEntityVersion {
        /// The entity's `EntityType`.
        entity_type: String,
        /// The stored `EntityVersion`.
        found: i32,
        /// The newest version this build reads.
        current: i32,
    },
    /// A stored entity has an older version of its type that the type declares no upgrade from.
    #[error(
        "entity type {entity_type:?}: stored version {found} cannot be read; this type reads \
         versions {reads:?} (declare `upgrade_from({found} = ...)` to read it)"
    )]
    UnreadableEntityVersion {
        /// The entity's `EntityType`.
        entity_type: String,
        /// The stored `EntityVersion`.
        found: i32,
        /// The versions the type reads, in ascending order.
        reads: Vec<i32>,
    },
    /// A table has more stored access policies (signed identifiers) than allowed.
    #[error("table {table} would have {count} stored access policies; the limit is {max}")]
    TooManySignedIdentifiers {
        /// The table.
        table: String,
        /// The number given.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// A stored access policy's id is empty or longer than allowed.
    #[error("stored access policy id {id:?} is {length} characters long; it must be 1 to {max}")]
    SignedIdentifierId {
        /// The id.
        id: String,
        /// Its length in characters.
        length: usize,
        /// The limit.
        max: usize,
    },
    /// A stored access policy grants a permission a table policy cannot hold.
    #[error(
        "stored access policy {id:?} has the permission {permission:?}; a table policy allows only r, a, u and d"
    )]
    AccessPolicyPermission {
        /// The policy's id.
        id: String,
        /// The letter outside `raud`.
        permission: char,
    },
    /// The service properties hold more CORS rules than allowed.
    #[error("the service properties hold {count} CORS rules; the limit is {max}")]
    TooManyCorsRules {
        /// The number given.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// A CORS rule breaks the service's rules.
    #[error("CORS rule {index}: {reason}")]
    CorsRule {
        /// The rule's index in the list.
        index: usize,
        /// What is wrong.
        reason: String,
    },
    /// The CORS rules together hold more text than the service stores.
    #[error(
        "the CORS rules hold {size} characters of origins, methods, headers and ages; the limit is {max}"
    )]
    CorsRulesTooLarge {
        /// Their characters.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// A retention period is outside 1..=365 days.
    #[error("the {setting} retention is {days} days; it must be 1 to {max}")]
    RetentionDays {
        /// Which setting (`logging`, `hour metrics`, `minute metrics`).
        setting: &'static str,
        /// The number of days given.
        days: u32,
        /// The limit.
        max: u32,
    },
    /// A typed read or query names a key that no key of the type's (or index's) template can
    /// equal (`.partition("a")` when the partition key template is `{a}_{b}`), so it would
    /// silently match nothing.
    #[error(
        "{key} {value:?} can never match the {key} template `{template}` ({reason}); build keys \
         from field values with the type's key helpers, e.g. `partition_key_for(..)`"
    )]
    QueryKeyMismatch {
        /// Which key.
        key: KeyName,
        /// The value compared with.
        value: String,
        /// The key template of the queried type (or index).
        template: String,
        /// Where the value departs from the template.
        reason: String,
    },
    /// A typed query's filter names a property its type encrypts client-side
    /// (`#[table(encrypt)]`): the service holds only ciphertext, so no comparison on it can
    /// test the plaintext.
    #[error(
        "the filter of the query of table {table} names property {property:?}, which its type encrypts \
         client-side (`#[table(encrypt)]`): the service stores only the ciphertext, random for every \
         write, so a comparison on it cannot test the value the caller means; filter on other \
         properties and test this one after reading"
    )]
    FilterOnEncryptedProperty {
        /// The table queried.
        table: String,
        /// The encrypted property the filter names.
        property: String,
    },
    /// A `$select` given by the caller of a typed read names a property its type encrypts
    /// client-side (`#[table(encrypt)]`).
    #[error(
        "the $select of a read of table {table} names property {property:?}, which its type encrypts \
         client-side (`#[table(encrypt)]`): the service stores only the ciphertext, so a projection \
         of it cannot mean the value the caller asked for; read it through a typed projection (a \
         type whose field is marked `#[table(encrypt)]`), which fetches the encryption metadata \
         and decrypts it"
    )]
    SelectOfEncryptedProperty {
        /// The table read.
        table: String,
        /// The encrypted property the `$select` names.
        property: String,
    },
    /// A typed value's properties changed between the write's check of them and their
    /// encoding (a hand-written `PropertyValue::to_value` that answers differently on each
    /// call): what was checked is not what would be stored, so the embedded engine stores
    /// nothing.
    #[error(
        "the entity's properties changed while it was written (a PropertyValue::to_value that \
         answers differently on each call); nothing was stored"
    )]
    UnstableValues,
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
            DuplicateRow { .. } | SharedRowInTransaction { .. } => ErrorCode::InvalidDuplicateRow,
            BatchTooLarge { .. } => ErrorCode::RequestBodyTooLarge,
            FilterUnsupported { .. } => ErrorCode::NotImplemented,
            Value { .. } | UnstableValues | NewerEntityVersion { .. } | UnreadableEntityVersion { .. } => {
                ErrorCode::InvalidValueType
            }
            TooManySignedIdentifiers { .. } | TooManyCorsRules { .. } | CorsRulesTooLarge { .. } => {
                ErrorCode::InvalidXmlDocument
            }
            SignedIdentifierId { .. }
            | AccessPolicyPermission { .. }
            | CorsRule { .. }
            | RetentionDays { .. } => ErrorCode::InvalidXmlNodeValue,
            ETag { .. }
            | ETagSyntax { .. }
            | EmptyBatch
            | TooManyOperations { .. }
            | IndexRowsOverBatchLimit { .. }
            | CrossPartitionIndexInTransaction { .. }
            | FilterSyntax { .. }
            | TooManyComparisons { .. }
            | FilterNonFiniteDouble { .. }
            | SelectEntry { .. }
            | Top { .. }
            | Continuation { .. }
            | TableScanNotRequested { .. }
            | QueryKeyMismatch { .. }
            | FilterOnEncryptedProperty { .. }
            | SelectOfEncryptedProperty { .. } => ErrorCode::InvalidInput,
        }
    }

    /// The operation index inside a batch, for the batch rules that name one.
    pub fn batch_index(&self) -> Option<usize> {
        match self {
            Violation::MixedPartitions { index, .. }
            | Violation::DuplicateRow { index, .. }
            | Violation::CrossPartitionIndexInTransaction { index, .. }
            | Violation::SharedRowInTransaction { index, .. } => Some(*index),
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
    origin: Origin,
    message: String,
    batch_index: Option<usize>,
    violation: Option<Violation>,
    request_id: Option<String>,
    may_have_applied: bool,
    source: Option<BoxError>,
}

// Construction. Every error is built by one of these, so that kind, code and status cannot
// disagree: a code decides the kind and status (`service`, `invalid`), an answer's status and
// code decide the kind (`answered`), and only errors that are no service answer pick a kind
// (`other`, and the hidden `new` for the SDK's own crates).
//
// The `#[doc(hidden)]` items are for table-client, which is pinned to this exact version: it
// builds transport, authentication, decode and ambiguity errors, and errors about answers it
// refuses, that table-core cannot. They are not part of the API and may change with any release.
impl Error {
    fn with_kind(kind: ErrorKind, message: String) -> Self {
        Error {
            inner: Box::new(Inner {
                kind,
                code: None,
                status: None,
                origin: Origin::Local,
                message,
                batch_index: None,
                violation: None,
                request_id: None,
                may_have_applied: false,
                source: None,
            }),
        }
    }

    /// An error of the caller's own, of kind [`ErrorKind::Other`], for code that returns this
    /// crate's [`Result`] (a closure the SDK runs, an application built on it). Attach the cause
    /// with [`with_source`](Error::with_source).
    pub fn other(message: impl Into<String>) -> Self {
        Error::with_kind(ErrorKind::Other, message.into())
    }

    /// A rule broken locally: kind, code and status are those the service would answer, the
    /// message names the rule and what broke it.
    pub fn invalid(violation: Violation) -> Self {
        let code = violation.code();
        let mut e = Error::with_kind(code.kind(), violation.to_string());
        e.inner.status = Some(code.status());
        e.inner.code = Some(code);
        e.inner.batch_index = violation.batch_index();
        e.inner.violation = Some(violation);
        e
    }

    /// A request that timed out on the client's side, with no answer (the engine's injected
    /// timeouts).
    pub(crate) fn timeout(message: impl Into<String>) -> Self {
        Error::with_kind(ErrorKind::Timeout, message.into())
    }

    /// A write the engine's journal refused (an I/O error while recording it): NOT applied,
    /// answered as the service answers a write it could not take (503 `ServerBusy`), so a
    /// client may retry it; the cause is the journal's error.
    pub(crate) fn not_recorded(source: std::io::Error) -> Self {
        let mut e = Error::service(ErrorCode::ServerBusy).with_source(source);
        e.inner.message = "the write was not applied: the engine's journal could not record it".to_owned();
        e
    }

    /// Whether this is a [`not_recorded`](Error::not_recorded) refusal: inside the engine, the
    /// only 503 `ServerBusy` caused by an I/O error (injected throttling has no cause).
    pub(crate) fn is_not_recorded(&self) -> bool {
        self.inner.code == Some(ErrorCode::ServerBusy)
            && self.inner.source.as_ref().is_some_and(|source| source.is::<std::io::Error>())
    }

    /// A call that succeeded, but whose changes (its own, or earlier ones it may show) the
    /// journal could not make durable (an I/O error while flushing them): a write WAS applied
    /// and may still be read, but may be lost when the engine restarts (a failed flush may
    /// drop the pages it did not write, not only on a power loss); answered 500
    /// `InternalError`, so that no client takes it as refused. The cause is the journal's error.
    pub(crate) fn not_durable(source: std::io::Error) -> Self {
        Error::unflushed(
            source,
            "the call took effect, but the engine's journal could not flush the changes it made \
             or read to disk: they may be lost when the engine restarts",
        )
    }

    /// A call that failed (so applied nothing), but whose answer rests on changes the journal
    /// could not make durable, such as a conflict with a row not yet on disk: the answer is
    /// withheld, as a read's would be, and nothing claims the call applied. 500
    /// `InternalError`; the cause is the journal's error.
    pub(crate) fn unflushed_refusal(source: std::io::Error) -> Self {
        Error::unflushed(
            source,
            "the call was not applied, and its answer is withheld: the engine's journal could not \
             flush the changes it read to disk",
        )
    }

    fn unflushed(source: std::io::Error, message: &str) -> Self {
        let mut e = Error::service(ErrorCode::InternalError).with_source(source);
        e.inner.message = message.to_owned();
        e
    }

    /// An error of `kind` that is no service answer (no code or status): for the SDK's crates,
    /// which wrap it in one constructor per kind.
    #[doc(hidden)]
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error::with_kind(kind, message.into())
    }

    /// The error the service answers with `code`: its kind, status and message (the service's
    /// own wording), decided without a request ([`Origin::Local`]; the engine marks its own
    /// errors [`Origin::Engine`]).
    #[doc(hidden)]
    pub fn service(code: ErrorCode) -> Self {
        let message = match code.canonical_message() {
            Some(message) => message.to_owned(),
            None => format!("the service answered the error code {code}"),
        };
        let mut e = Error::with_kind(code.kind(), message);
        e.inner.status = Some(code.status());
        e.inner.code = Some(code);
        e
    }

    /// The error a server answered with HTTP `status` and, when it sent one, `code`
    /// ([`Origin::Service`]). A code the SDK knows decides the kind (so `ServerBusy` is
    /// `Throttled` whatever its status); otherwise the status does.
    #[doc(hidden)]
    pub fn answered(status: u16, code: Option<ErrorCode>, message: impl Into<String>) -> Self {
        let kind = match &code {
            Some(ErrorCode::Other(_)) | None => ErrorKind::of_status(status),
            Some(known) => known.kind(),
        };
        let mut e = Error::with_kind(kind, message.into());
        e.inner.status = Some(status);
        e.inner.origin = Origin::Service;
        e.inner.code = code;
        e
    }

    /// Records the status of the answer a server sent that an error is about whose kind the
    /// SDK decided (a success answer that cannot be trusted is `Decode` with status 200): the
    /// status tells retries that an answer came. Sets the origin to [`Origin::Service`].
    #[doc(hidden)]
    #[must_use]
    pub fn with_status(mut self, status: u16) -> Self {
        self.inner.status = Some(status);
        self.inner.origin = Origin::Service;
        self
    }

    /// Sets who decided the error, for an error that takes its code and status from another
    /// (a limit met by a whole the client splits up keeps its rule's origin).
    #[doc(hidden)]
    #[must_use]
    pub fn with_origin(mut self, origin: Origin) -> Self {
        self.inner.origin = origin;
        self
    }

    /// Names what a not-found, already-exists or precondition-failed error is about: the
    /// table, and the entity when `key` (`PartitionKey`, `RowKey`) is given, ahead of the
    /// message (`entity (PartitionKey="p", RowKey="r") in table T: The specified resource does
    /// not exist.`). Other kinds are returned unchanged: their messages name their subject.
    #[doc(hidden)]
    #[must_use]
    pub fn about(mut self, table: &str, key: Option<(&str, &str)>) -> Self {
        if !matches!(
            self.inner.kind,
            ErrorKind::NotFound | ErrorKind::AlreadyExists | ErrorKind::PreconditionFailed
        ) {
            return self;
        }
        let message = &self.inner.message;
        self.inner.message = match key {
            // The key is written as `EntityKey` displays it.
            Some((pk, rk)) => {
                format!("entity (PartitionKey={pk:?}, RowKey={rk:?}) in table {table}: {message}")
            }
            None => format!("table {table}: {message}"),
        };
        self
    }

    /// Records the service code of the answer or cause an error is about whose kind the SDK
    /// decided (a success answer carrying a service error is `Decode` with its code).
    #[doc(hidden)]
    #[must_use]
    pub fn with_code(mut self, code: ErrorCode) -> Self {
        self.inner.code = Some(code);
        self
    }

    /// Sets the index of the failing operation inside a batch.
    #[doc(hidden)]
    #[must_use]
    pub fn with_batch_index(mut self, index: usize) -> Self {
        self.inner.batch_index = Some(index);
        self
    }

    /// Sets the service request id (`x-ms-request-id`).
    #[doc(hidden)]
    #[must_use]
    pub fn with_request_id(mut self, id: impl Into<String>) -> Self {
        self.inner.request_id = Some(id.into());
        self
    }

    /// Marks a failed write whose request may nevertheless have been applied by the service
    /// (its response was lost, timed out, or was a 500/502/504). See
    /// [`Error::may_have_applied`].
    #[doc(hidden)]
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
}

// Inspection.
impl Error {
    /// The broad category, to branch on (`err.kind() == ErrorKind::NotFound`).
    pub fn kind(&self) -> ErrorKind {
        self.inner.kind
    }

    /// The service error code, when the service answered one (or would have).
    pub fn code(&self) -> Option<&ErrorCode> {
        self.inner.code.as_ref()
    }

    /// The HTTP status of the answer: the status received when a server answered
    /// ([`Origin::Service`]), otherwise the status the service would answer (a local
    /// [`Violation`] or the embedded engine's answer carry it too, so retry decisions and
    /// branching are the same on every backend). `None` for errors that are no answer
    /// (transport, a caller's error). [`origin`](Error::origin) tells whether it was received.
    pub fn status(&self) -> Option<u16> {
        self.inner.status
    }

    /// Who decided the error: a server over HTTP, the embedded engine, or the SDK itself.
    pub fn origin(&self) -> Origin {
        self.inner.origin
    }

    /// Which service error code this is and where it was decided: answered by a server
    /// ([`Origin::Service`]), by the embedded engine ([`Origin::Engine`]), or found locally
    /// before sending ([`Origin::Local`], e.g. a broken [`Violation`]). `None` when the error
    /// carries no service code (transport failures, caller errors, answers without a code).
    pub fn service_code(&self) -> Option<(&ErrorCode, Origin)> {
        self.inner.code.as_ref().map(|code| (code, self.inner.origin))
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

    /// `true` when a retry after a pause may succeed: the kinds `Throttled`, `Unavailable`,
    /// `Timeout`, `Transport` and `Contention`. (One kind is asked with [`kind`](Error::kind).)
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
        d.field("origin", &self.inner.origin);
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
            // Only a server's answer is called HTTP: an error found on this side says which
            // status the service would answer instead.
            match (self.inner.origin, self.inner.status) {
                (Origin::Service, Some(s)) => write!(f, " ({code}, HTTP {s})")?,
                (origin, Some(s)) => write!(f, " ({code}, {origin}; the service would answer {s})")?,
                (origin, None) => write!(f, " ({code}, {origin})")?,
            }
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
    fn a_local_violation_names_the_status_the_service_would_answer_never_http() {
        let e = Error::invalid(Violation::KeyMissing { key: KeyName::RowKey });
        assert_eq!(e.service_code(), Some((&ErrorCode::PropertiesNeedValue, Origin::Local)));
        assert_eq!(e.status(), Some(400));
        assert_eq!(
            e.to_string(),
            "the entity has no RowKey (PropertiesNeedValue, found locally; the service would answer 400)"
        );
    }

    #[test]
    fn only_a_server_s_answer_is_called_http() {
        let e = Error::answered(412, Some(ErrorCode::UpdateConditionNotSatisfied), "stale");
        assert_eq!(e.service_code(), Some((&ErrorCode::UpdateConditionNotSatisfied, Origin::Service)));
        assert_eq!(e.to_string(), "stale (UpdateConditionNotSatisfied, HTTP 412)");
        let engine = Error::service(ErrorCode::ResourceNotFound).with_origin(Origin::Engine);
        assert_eq!(
            engine.to_string(),
            "The specified resource does not exist. (ResourceNotFound, answered by the embedded engine; \
             the service would answer 404)"
        );
        assert_eq!(Error::other("mine").service_code(), None);
    }

    #[test]
    fn not_found_already_exists_and_precondition_errors_name_table_and_key() {
        let e = Error::service(ErrorCode::ResourceNotFound).about("Employees", Some(("p", "r")));
        assert_eq!(
            e.message(),
            "entity (PartitionKey=\"p\", RowKey=\"r\") in table Employees: The specified resource does not exist."
        );
        let t = Error::service(ErrorCode::TableAlreadyExists).about("Employees", None);
        assert_eq!(t.message(), "table Employees: The table specified already exists.");
        let busy = Error::service(ErrorCode::ServerBusy).about("Employees", Some(("p", "r")));
        assert_eq!(busy.message(), ErrorCode::ServerBusy.canonical_message().unwrap_or_default());
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

    #[test]
    fn service_errors_take_kind_status_and_message_from_the_code() {
        let e = Error::service(ErrorCode::UpdateConditionNotSatisfied);
        assert_eq!(e.kind(), ErrorKind::PreconditionFailed);
        assert_eq!(e.status(), Some(412));
        assert_eq!(e.message(), "The update condition specified in the request was not satisfied.");
        assert_eq!(Error::service(ErrorCode::TableNotFound).message(), "The table specified does not exist.");
        let other = Error::service(ErrorCode::Other("Weird".into()));
        assert_eq!((other.kind(), other.status()), (ErrorKind::Other, Some(400)));
        assert!(other.message().contains("Weird"), "{other}");
    }

    #[test]
    fn every_known_code_has_a_sentence_of_the_service() {
        for name in KNOWN_CODES {
            let message = ErrorCode::parse(name).canonical_message().unwrap_or_default();
            assert!(message.starts_with(char::is_uppercase) && message.ends_with('.'), "{name}: {message:?}");
            assert!(!message.contains("  "), "{name}: a line break left spaces in {message:?}");
        }
        assert_eq!(ErrorCode::Other("X".into()).canonical_message(), None);
    }

    #[test]
    fn answers_take_their_kind_from_a_known_code_else_from_the_status() {
        let busy = Error::answered(500, Some(ErrorCode::ServerBusy), "busy");
        assert_eq!((busy.kind(), busy.status()), (ErrorKind::Throttled, Some(500)));
        let unknown = Error::answered(409, Some(ErrorCode::Other("New".into())), "x");
        assert_eq!(unknown.kind(), ErrorKind::AlreadyExists);
        assert_eq!(unknown.code(), Some(&ErrorCode::Other("New".into())));
        let bare = Error::answered(302, None, "moved");
        assert_eq!((bare.kind(), bare.code(), bare.status()), (ErrorKind::Other, None, Some(302)));
        for (status, kind) in
            [(403, ErrorKind::Auth), (429, ErrorKind::Throttled), (504, ErrorKind::Unavailable)]
        {
            assert_eq!(Error::answered(status, None, "").kind(), kind, "{status}");
        }
    }

    #[test]
    fn errors_of_the_caller_are_other_without_code_or_status() {
        let e = Error::other("mine");
        assert_eq!((e.kind(), e.code(), e.status(), e.message()), (ErrorKind::Other, None, None, "mine"));
    }

    #[test]
    fn an_error_is_one_pointer() {
        use std::mem::size_of;
        assert_eq!(size_of::<Error>(), size_of::<usize>());
        assert_eq!(size_of::<Option<Error>>(), size_of::<usize>());
        assert_eq!(size_of::<Result<(), Error>>(), size_of::<usize>());
    }
}
