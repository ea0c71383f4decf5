//! Shared access signature verification (protocol doc section 2.3): table service SAS and
//! account SAS, each signature checked over the client's own string to sign
//! (`table_client::auth::TableSasFields`, `AccountSasFields`), and the grant the request then
//! works under: for a table SAS a table, its permissions and the (PartitionKey, RowKey) range
//! that Azurite ignores and the service enforces; for an account SAS resource types and
//! permissions.
//!
//! The checks, their order and their codes are the service's (its protocol layer,
//! decompiled): first every field's form (a field given empty is refused like a malformed
//! one; a table SAS's `sp` is letters of `raud` in that order, each once; an account SAS's
//! letters each once, in any order; `spr` is `https`, `https,http` or `http,https`; a `sip`
//! range does not end before it starts), then the validity window, then the signature, then a
//! table SAS's stored access policy and the window it gives, and last the request's origin
//! (`sip`, then `spr`, then an account SAS's services). All of these are 403
//! `AuthenticationFailed` but the origin's own codes; what a valid token does not reach is
//! `AuthorizationFailure`, `AuthorizationPermissionMismatch` or, for an account SAS,
//! `AuthorizationResourceTypeMismatch`.
//!
//! Parameter names are read without regard to ASCII case (`SIG=`, `Sv=`), as the service reads
//! its query parameters; one name given twice in different cases is `AuthenticationFailed`.

use std::cmp::Ordering;
use std::net::IpAddr;

use chrono::{DateTime, Utc};
use table_client::auth::{
    AccountSasFields, AccountSasPermissions, AccountSasResourceTypes, AccountSasServices, TableSasFields,
    TableSasPermissions, parse_sas_time,
};
use table_core::engine::Engine;
use table_core::{ErrorCode, Operation, compare_ordinal};

use crate::accounts::Keys;
use crate::answer::Failure;
use crate::auth::{authentication_failed, decode_base64};
use crate::route::Query;
use crate::version::{ServiceVersion, not_a_version};

/// The oldest signed version whose table SAS string to sign is the 12-line form (the
/// service signs `sip` and `spr` from this version on; nothing changed for tables since).
const OLDEST_TABLE_VERSION: &str = "2015-04-05";

/// The oldest signed version of an account SAS.
const OLDEST_ACCOUNT_VERSION: &str = "2015-04-05";

/// Where a request comes from, as a SAS restricts it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Origin {
    pub(crate) ip: IpAddr,
    pub(crate) https: bool,
}

/// What a verified SAS allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Grant {
    Table(TableGrant),
    Account(AccountGrant),
}

/// What a table SAS allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableGrant {
    /// `tn`, the one table reachable (compared ignoring case).
    table: String,
    permissions: TableSasPermissions,
    /// `spk` and `srk` (absent: the partition's first row).
    start: Option<(String, Option<String>)>,
    /// `epk` and `erk` (absent: the partition's last row).
    end: Option<(String, Option<String>)>,
}

/// What an account SAS allows (its services include the Table service).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AccountGrant {
    resource_types: AccountSasResourceTypes,
    permissions: AccountSasPermissions,
}

/// The operations on tables themselves (an account SAS's container resource type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TableOperation {
    /// Query Tables and Get Table: `l`.
    List,
    /// Create Table: `c` or `w` (the service takes either; `a` is for entities only).
    Create,
    /// Delete Table: `d`.
    Delete,
    /// Get and Set Table ACL: the account key's alone.
    Acl,
    /// Get Service Properties and Stats: the service resource type, `r`.
    ServiceRead,
    /// Set Service Properties: the service resource type, `w`.
    ServiceWrite,
}

/// A SAS names what it does not have the right to: 403 `AuthorizationPermissionMismatch`.
fn permission_mismatch(why: &str) -> Failure {
    let service = Failure::service(ErrorCode::AuthorizationPermissionMismatch);
    Failure { message: format!("{}\n{why}", service.message), ..service }
}

/// A SAS does not reach what the request names (another table, tables themselves under a
/// table SAS, an entity outside its key range): 403 `AuthorizationFailure`, as the service
/// answers for signed versions from 2015-04-05.
fn authorization_failure(why: &str) -> Failure {
    let service = Failure::service(ErrorCode::AuthorizationFailure);
    Failure { message: format!("{}\n{why}", service.message), ..service }
}

fn forbidden(code: &str, message: &str) -> Failure {
    Failure::new(403, ErrorCode::Other(code.to_owned()), message)
}

fn resource_type_mismatch() -> Failure {
    forbidden(
        "AuthorizationResourceTypeMismatch",
        "This request is not authorized to perform this operation using this resource type.",
    )
}

/// `true` when the query carries a SAS (a `sig`, its name in any case), so that it is checked
/// instead of SharedKey.
pub(crate) fn carries_sas(query: &Query<'_>) -> bool {
    query.get_ignoring_case("sig").next().is_some()
}

/// The versions of a SAS request (the REST docs, "Versioning for Azure Storage": `sv`
/// authorizes the request, the optional `api-version` names the version of the operation; the
/// decompiled emulator reads `api-version` from [`ServiceVersion::API_VERSION_SINCE`] on, right
/// after `x-ms-version`, and would take `x-ms-version` instead of `sv`).
#[derive(Debug)]
pub(crate) struct SasVersion {
    /// The SAS's `sv`.
    signed: ServiceVersion,
    /// Its `api-version`: `None` when not given, or not read at that `sv`; 400
    /// `InvalidQueryParameterValue` for one naming no version the service knows, empty, or
    /// given twice (its name in another case).
    api: Result<Option<ServiceVersion>, Failure>,
}

impl SasVersion {
    /// The versions of the SAS `query` carries; `None` without a SAS, or with an `sv` the
    /// service does not know, which is refused when the SAS is checked.
    pub(crate) fn of(query: &Query<'_>) -> Option<SasVersion> {
        let version = query.get_ignoring_case("sv").next().filter(|_| carries_sas(query))?;
        let signed = ServiceVersion::known(version.as_bytes())?;
        Some(SasVersion { signed, api: api_version(query, signed) })
    }

    /// The version the request is served at: its `api-version`, else its `sv`, whatever its
    /// `x-ms-version` says (an `api-version` that is refused, [`check`](Self::check), is
    /// passed over).
    pub(crate) fn served(&self) -> ServiceVersion {
        self.api.as_ref().ok().copied().flatten().unwrap_or(self.signed)
    }

    /// The refusal of its `api-version`, when it names no version.
    pub(crate) fn check(&self) -> Result<(), Failure> {
        self.api.as_ref().map(drop).map_err(Failure::clone)
    }
}

/// The `api-version` of a SAS request signed at `signed`: `None` when not given, or not read
/// at that `sv`.
fn api_version(query: &Query<'_>, signed: ServiceVersion) -> Result<Option<ServiceVersion>, Failure> {
    if signed < ServiceVersion::API_VERSION_SINCE {
        return Ok(None);
    }
    let mut named = query.get_ignoring_case("api-version");
    match (named.next(), named.next()) {
        (None, _) => Ok(None),
        (Some(text), None) => ServiceVersion::known(text.as_bytes())
            .map(Some)
            .ok_or_else(|| Failure::invalid_query_parameter_value(not_a_version("api-version", Some(text)))),
        (Some(_), Some(_)) => Err(Failure::invalid_query_parameter_value("api-version is given twice")),
    }
}

/// Checks the SAS in `query` (an account SAS when it names services, `ss`, else a table SAS),
/// signed with one of `keys`, for a request from `origin` at `now`. `engine` holds the tables' stored
/// access policies (`si`).
pub(crate) fn verify(
    keys: &Keys,
    query: &Query<'_>,
    engine: &Engine,
    origin: Origin,
    now: DateTime<Utc>,
) -> Result<Grant, Failure> {
    if parameter(query, "ss")?.is_some() {
        verify_account(keys, query, origin, now).map(Grant::Account)
    } else {
        verify_table(keys, query, engine, origin, now).map(Grant::Table)
    }
}

/// A SAS parameter as the service looks it up: its name in any case (`SIG=`, `Sv=`), `None`
/// when absent. A name given twice in different cases is refused: the service reads the two as
/// one value joined by a comma, which no field's form or signature accepts.
fn parameter<'q>(query: &'q Query<'_>, name: &str) -> Result<Option<&'q str>, Failure> {
    let mut values = query.get_ignoring_case(name);
    let value = values.next();
    match values.next() {
        Some(_) => Err(authentication_failed(&format!("The SAS's {name} is given twice."))),
        None => Ok(value),
    }
}

/// A SAS parameter ([`parameter`]), `None` when absent. One given empty (or blank) is refused,
/// as the service refuses it.
fn optional<'q>(query: &'q Query<'_>, name: &str) -> Result<Option<&'q str>, Failure> {
    match parameter(query, name)? {
        Some(value) if value.trim().is_empty() => {
            Err(authentication_failed(&format!("The SAS's {name} is given but empty.")))
        }
        value => Ok(value),
    }
}

/// A SAS parameter that must be given, not blank.
fn required<'q>(query: &'q Query<'_>, name: &str) -> Result<&'q str, Failure> {
    optional(query, name)?.ok_or_else(|| authentication_failed(&format!("The SAS has no {name}.")))
}

/// `sig`: the base64 of a 32-byte HMAC-SHA256, decoded.
fn signature(query: &Query<'_>) -> Result<Vec<u8>, Failure> {
    match decode_base64(required(query, "sig")?) {
        Some(bytes) if bytes.len() == 32 => Ok(bytes),
        _ => Err(authentication_failed("The SAS's sig is not the base64 of a 32-byte signature.")),
    }
}

/// `sv`: a version the service knows, no older than `oldest`; any other is refused as the
/// service refuses it (the storage emulator's protocol layer, decompiled: an `sv` it does not
/// know, one newer than its newest included, is `AuthenticationFailed`, the emulator alone
/// answering a newer one with its own `VersionNotSupportedByEmulator`).
fn signed_version<'q>(query: &'q Query<'_>, oldest: &str) -> Result<&'q str, Failure> {
    let version = required(query, "sv")?;
    match ServiceVersion::known(version.as_bytes()) {
        Some(known) if known.as_str() >= oldest => Ok(version),
        _ => Err(authentication_failed(&format!(
            "The SAS's sv is not a version of the Table service from {oldest} on."
        ))),
    }
}

/// The fields both kinds of SAS share, read and checked for form: as sent (for the string to
/// sign) and as values.
struct Access<'q> {
    start_text: &'q str,
    expiry_text: &'q str,
    ip_text: &'q str,
    protocol_text: &'q str,
    start: Option<DateTime<Utc>>,
    expiry: Option<DateTime<Utc>>,
    /// `sip`: the inclusive range of addresses allowed.
    ip: Option<(IpAddr, IpAddr)>,
    https_only: bool,
}

/// Reads `st`, `se` (required unless `expiry_optional`: a stored policy may supply it), `sip`
/// and `spr`.
fn access<'q>(query: &'q Query<'_>, expiry_optional: bool) -> Result<Access<'q>, Failure> {
    let time = |name: &str| -> Result<(&'q str, Option<DateTime<Utc>>), Failure> {
        match optional(query, name)? {
            None => Ok(("", None)),
            Some(text) => parse_sas_time(text)
                .map(|time| (text, Some(time)))
                .ok_or_else(|| authentication_failed(&format!("The SAS's {name} is not a date."))),
        }
    };
    let (start_text, start) = time("st")?;
    let (expiry_text, expiry) = time("se")?;
    if expiry.is_none() && !expiry_optional {
        return Err(authentication_failed("The SAS has no se."));
    }
    let ip_text = optional(query, "sip")?.unwrap_or("");
    let ip = if ip_text.is_empty() { None } else { Some(ip_range(ip_text)?) };
    let protocol_text = optional(query, "spr")?.unwrap_or("");
    let https_only = match protocol_text {
        "" | "https,http" | "http,https" => false,
        "https" => true,
        _ => return Err(authentication_failed("The SAS's spr is neither https nor https,http.")),
    };
    Ok(Access { start_text, expiry_text, ip_text, protocol_text, start, expiry, ip, https_only })
}

/// `sip`: one address or an inclusive range `a-b` whose start does not exceed its end.
fn ip_range(sip: &str) -> Result<(IpAddr, IpAddr), Failure> {
    let malformed = || authentication_failed("The SAS's sip is not an address or a range of addresses.");
    let (low, high) = sip.split_once('-').unwrap_or((sip, sip));
    let parse = |text: &str| text.trim().parse::<IpAddr>().map_err(|_| malformed());
    let (low, high) = (parse(low)?, parse(high)?);
    if low > high {
        return Err(malformed());
    }
    Ok((low, high))
}

/// The validity window at `now`: the expiry after the start (or `now` when there is none),
/// and `now` within. Without an expiry (one a stored policy will supply), only a start that
/// has not come yet is refused.
fn check_window(
    start: Option<DateTime<Utc>>,
    expiry: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<(), Failure> {
    let Some(expiry) = expiry else {
        return match start {
            Some(start) if start > now => Err(authentication_failed("The SAS is not valid yet.")),
            _ => Ok(()),
        };
    };
    let start = start.unwrap_or(now);
    if start >= expiry {
        return Err(authentication_failed("The SAS's expiry is not after its start."));
    }
    if now < start {
        return Err(authentication_failed("The SAS is not valid yet."));
    }
    if now >= expiry {
        return Err(authentication_failed("The SAS has expired."));
    }
    Ok(())
}

/// `sip` and `spr` against where the request comes from, in the service's order.
fn check_origin(access: &Access<'_>, origin: Origin) -> Result<(), Failure> {
    if let Some((low, high)) = access.ip {
        let ip = match (origin.ip, low) {
            (IpAddr::V6(v6), IpAddr::V4(_)) => v6.to_ipv4_mapped().map_or(origin.ip, IpAddr::V4),
            _ => origin.ip,
        };
        if !(low <= ip && ip <= high) {
            return Err(forbidden(
                "AuthorizationSourceIPMismatch",
                &format!(
                    "This request is not authorized to perform this operation using this source IP {ip}."
                ),
            ));
        }
    }
    if access.https_only && !origin.https {
        return Err(forbidden(
            "AuthorizationProtocolMismatch",
            "This request is not authorized to perform this operation using this protocol.",
        ));
    }
    Ok(())
}

/// A table SAS's `sp`: letters of `raud`, each at most once and in that order, as the
/// service demands (`ra` passes, `ar` and `rr` do not).
fn table_permissions(sp: &str) -> Result<TableSasPermissions, Failure> {
    let refused = || authentication_failed("The SAS's sp is not letters of raud, in that order, each once.");
    let mut rest = "raud";
    for letter in sp.chars() {
        let at = rest.find(letter).ok_or_else(refused)?;
        rest = rest.get(at + 1..).unwrap_or("");
    }
    TableSasPermissions::parse(sp).map_err(|_| refused())
}

/// Letters of an account SAS field (`ss`, `srt`, `sp`), each at most once, as the service
/// demands (in any order).
fn once_each<T>(text: &str, what: &str, parse: impl Fn(&str) -> table_core::Result<T>) -> Result<T, Failure> {
    let refused = || authentication_failed(&format!("The SAS's {what} are not known letters, each once."));
    let repeated = text
        .char_indices()
        .any(|(at, letter)| text.get(at + letter.len_utf8()..).is_some_and(|rest| rest.contains(letter)));
    if repeated {
        return Err(refused());
    }
    parse(text).map_err(|_| refused())
}

fn verify_table(
    keys: &Keys,
    query: &Query<'_>,
    engine: &Engine,
    origin: Origin,
    now: DateTime<Utc>,
) -> Result<TableGrant, Failure> {
    // The service's order: every field's form, the validity window, the signature, the
    // stored access policy and the window it gives, then the request's origin.
    let signature = signature(query)?;
    let policy_id = optional(query, "si")?;
    let table = required(query, "tn")?;
    // A key bound may be empty (the empty key is a key), so it is not `optional`.
    let bound = |pk: &str, rk: &str| match (parameter(query, pk)?, parameter(query, rk)?) {
        (None, Some(_)) => Err(authentication_failed(&format!("The SAS has {rk} without {pk}."))),
        (pk, rk) => Ok((pk, rk)),
    };
    let (start_partition_key, start_row_key) = bound("spk", "srk")?;
    let (end_partition_key, end_row_key) = bound("epk", "erk")?;
    let version = signed_version(query, OLDEST_TABLE_VERSION)?;
    let access = access(query, policy_id.is_some())?;
    let permissions_text = optional(query, "sp")?;
    let permissions = permissions_text.map(table_permissions).transpose()?;
    if permissions.is_none() && policy_id.is_none() {
        return Err(authentication_failed("The SAS has no sp."));
    }
    check_window(access.start, access.expiry, now)?;
    let fields = TableSasFields {
        permissions: permissions_text.unwrap_or(""),
        start: access.start_text,
        expiry: access.expiry_text,
        account: keys.account(),
        table,
        policy_id: policy_id.unwrap_or(""),
        ip: access.ip_text,
        protocol: access.protocol_text,
        version,
        start_partition_key: start_partition_key.unwrap_or(""),
        start_row_key: start_row_key.unwrap_or(""),
        end_partition_key: end_partition_key.unwrap_or(""),
        end_row_key: end_row_key.unwrap_or(""),
    };
    if !keys.verify(&fields.string_to_sign(), &signature) {
        return Err(authentication_failed("The SAS signature does not match."));
    }
    let own = Terms { permissions, start: access.start, expiry: access.expiry };
    let Terms { permissions, start, expiry } = match policy_id {
        None => own,
        Some(id) => with_policy(engine, table, id, own)?,
    };
    check_window(start, expiry, now)?;
    check_origin(&access, origin)?;
    Ok(TableGrant {
        table: table.to_owned(),
        permissions: permissions.unwrap_or_default(),
        start: start_partition_key.map(|pk| (pk.to_owned(), start_row_key.map(str::to_owned))),
        end: end_partition_key.map(|pk| (pk.to_owned(), end_row_key.map(str::to_owned))),
    })
}

/// What a stored access policy may supply in place of the SAS.
struct Terms {
    permissions: Option<TableSasPermissions>,
    start: Option<DateTime<Utc>>,
    expiry: Option<DateTime<Utc>>,
}

/// The terms of a table SAS with `own` terms naming the stored access policy `id` of
/// `table`: each from the SAS or from the policy, never from both, and the permissions and
/// expiry from one of them.
fn with_policy(engine: &Engine, table: &str, id: &str, own: Terms) -> Result<Terms, Failure> {
    let Terms { permissions, start, expiry } = own;
    let policies = engine
        .get_access_policies(table)
        .map_err(|_| authentication_failed("The SAS's table has no stored access policies."))?;
    let policy = policies
        .iter()
        .find(|p| p.id == id)
        .ok_or_else(|| authentication_failed("The SAS names no stored access policy of its table."))?;
    let stored_permissions = Some(policy.permissions.as_str())
        .filter(|p| !p.is_empty())
        .map(TableSasPermissions::parse)
        .transpose()
        .map_err(|_| {
            authentication_failed("The stored access policy's permissions are not letters of raud.")
        })?;
    if expiry.is_none() && policy.expiry.is_none() {
        return Err(authentication_failed("Neither the SAS nor its stored access policy has an expiry."));
    }
    if permissions.is_none() && stored_permissions.is_none() {
        return Err(authentication_failed("Neither the SAS nor its stored access policy has permissions."));
    }
    if (start.is_some() && policy.start.is_some())
        || (expiry.is_some() && policy.expiry.is_some())
        || (permissions.is_some() && stored_permissions.is_some())
    {
        return Err(authentication_failed("The SAS and its stored access policy both set one field."));
    }
    Ok(Terms {
        permissions: permissions.or(stored_permissions),
        start: start.or(policy.start),
        expiry: expiry.or(policy.expiry),
    })
}

fn verify_account(
    keys: &Keys,
    query: &Query<'_>,
    origin: Origin,
    now: DateTime<Utc>,
) -> Result<AccountGrant, Failure> {
    // The service's order: every field's form, the validity window, the signature, then the
    // request's origin and service.
    let version = signed_version(query, OLDEST_ACCOUNT_VERSION)?;
    let access = access(query, false)?;
    let services_text = required(query, "ss")?;
    let services = once_each(services_text, "services", AccountSasServices::parse)?;
    let resource_types_text = required(query, "srt")?;
    let resource_types = once_each(resource_types_text, "resource types", AccountSasResourceTypes::parse)?;
    let signature = signature(query)?;
    let permissions_text = required(query, "sp")?;
    let permissions = once_each(permissions_text, "permissions", AccountSasPermissions::parse)?;
    check_window(access.start, access.expiry, now)?;
    let fields = AccountSasFields {
        account: keys.account(),
        permissions: permissions_text,
        services: services_text,
        resource_types: resource_types_text,
        start: access.start_text,
        expiry: access.expiry_text,
        ip: access.ip_text,
        protocol: access.protocol_text,
        version,
    };
    if !keys.verify(&fields.string_to_sign(), &signature) {
        return Err(authentication_failed("The SAS signature does not match."));
    }
    check_origin(&access, origin)?;
    if !services.table {
        return Err(forbidden(
            "AuthorizationServiceMismatch",
            "This request is not authorized to perform this operation using this service.",
        ));
    }
    Ok(AccountGrant { resource_types, permissions })
}

impl TableGrant {
    /// The request names `table`, which must be the SAS's own.
    pub(crate) fn check_table(&self, table: &str) -> Result<(), Failure> {
        if table.eq_ignore_ascii_case(&self.table) {
            Ok(())
        } else {
            Err(authorization_failure("The SAS is for another table."))
        }
    }

    /// `r` on the table: queries and point reads (point reads are checked with [`Self::check_key`]).
    pub(crate) fn check_read(&self, table: &str) -> Result<(), Failure> {
        self.check_table(table)?;
        if self.permissions.read { Ok(()) } else { Err(permission_mismatch("The SAS does not allow reads.")) }
    }

    /// A write `operation` on `table`: its permissions (upserts need `a` and `u`) and its key.
    pub(crate) fn check_write(&self, table: &str, operation: &Operation) -> Result<(), Failure> {
        self.check_table(table)?;
        let p = self.permissions;
        if !allows(operation, p.add, p.update, p.delete) {
            return Err(permission_mismatch("The SAS does not allow this operation."));
        }
        self.check_key(operation.partition_key(), operation.row_key())
    }

    /// An entity named by a point operation or a write lies in the SAS's key range.
    pub(crate) fn check_key(&self, partition_key: &str, row_key: &str) -> Result<(), Failure> {
        if self.contains(partition_key, row_key) {
            Ok(())
        } else {
            Err(authorization_failure("The entity is outside the SAS's key range."))
        }
    }

    /// `true` when (`partition_key`, `row_key`) lies in the inclusive range, keys compared in
    /// the service's key order (ordinal UTF-16, [`compare_ordinal`]), the order the engine
    /// keeps rows in.
    pub(crate) fn contains(&self, partition_key: &str, row_key: &str) -> bool {
        // Where the entity lies against a bound: by partition, then by row when the bound
        // names a row (a bound without one takes its whole partition).
        let against = |(pk, rk): &(String, Option<String>)| {
            compare_ordinal(partition_key, pk)
                .then_with(|| rk.as_deref().map_or(Ordering::Equal, |rk| compare_ordinal(row_key, rk)))
        };
        let after_start = self.start.as_ref().is_none_or(|bound| against(bound) != Ordering::Less);
        let before_end = self.end.as_ref().is_none_or(|bound| against(bound) != Ordering::Greater);
        after_start && before_end
    }
}

/// Whether a write is allowed by the add, update and delete permissions (both SAS kinds
/// name them alike): upserts need add and update.
fn allows(operation: &Operation, add: bool, update: bool, delete: bool) -> bool {
    match operation {
        Operation::Insert(_) => add,
        Operation::Replace { .. } | Operation::Merge { .. } => update,
        Operation::InsertOrReplace(_) | Operation::InsertOrMerge(_) => add && update,
        Operation::Delete { .. } => delete,
    }
}

impl AccountGrant {
    /// Objects (entities) with `permission` among the SAS's.
    fn check_object(&self, permitted: bool) -> Result<(), Failure> {
        if !self.resource_types.object {
            return Err(resource_type_mismatch());
        }
        if permitted { Ok(()) } else { Err(permission_mismatch("The SAS does not allow this operation.")) }
    }
}

impl Grant {
    /// An operation on tables themselves or the service: never under a table SAS (403
    /// `AuthorizationFailure`, as the service refuses a table SAS on its tables table); under
    /// an account SAS with the container (service) resource type and the operation's
    /// permission.
    pub(crate) fn check_tables(&self, operation: TableOperation) -> Result<(), Failure> {
        let Grant::Account(account) = self else {
            return Err(authorization_failure("A table SAS reaches its table's entities only."));
        };
        let (types, p) = (account.resource_types, account.permissions);
        let (resource, permitted) = match operation {
            TableOperation::List => (types.container, p.list),
            TableOperation::Create => (types.container, p.create || p.write),
            TableOperation::Delete => (types.container, p.delete),
            TableOperation::Acl => (false, false),
            TableOperation::ServiceRead => (types.service, p.read),
            TableOperation::ServiceWrite => (types.service, p.write),
        };
        match (resource, permitted) {
            (false, _) => Err(resource_type_mismatch()),
            (true, false) => Err(permission_mismatch("The SAS does not allow this operation.")),
            (true, true) => Ok(()),
        }
    }

    /// Queries and point reads of `table` (point reads also [`Self::check_key`]).
    pub(crate) fn check_read(&self, table: &str) -> Result<(), Failure> {
        match self {
            Grant::Table(grant) => grant.check_read(table),
            Grant::Account(grant) => grant.check_object(grant.permissions.read),
        }
    }

    /// A write `operation` on `table`: its permissions (upserts need `a` and `u`) and its key.
    pub(crate) fn check_write(&self, table: &str, operation: &Operation) -> Result<(), Failure> {
        match self {
            Grant::Table(grant) => grant.check_write(table, operation),
            Grant::Account(grant) => {
                let p = grant.permissions;
                grant.check_object(allows(operation, p.add, p.update, p.delete))
            }
        }
    }

    /// An entity named by a point read lies in a table SAS's key range.
    pub(crate) fn check_key(&self, partition_key: &str, row_key: &str) -> Result<(), Failure> {
        match self {
            Grant::Table(grant) => grant.check_key(partition_key, row_key),
            Grant::Account(_) => Ok(()),
        }
    }

    /// `true` when a query may return the entity (`partition_key`, `row_key`).
    pub(crate) fn contains(&self, partition_key: &str, row_key: &str) -> bool {
        match self {
            Grant::Table(grant) => grant.contains(partition_key, row_key),
            Grant::Account(_) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use chrono::TimeZone;
    use proptest::prelude::*;
    use table_client::auth::{SasProtocol, TableSasBuilder};
    use table_core::{Entity, EntityKey, IfMatch, SignedIdentifier};

    use table_client::auth::AccountKey;

    use super::*;
    use crate::accounts::{DEV_ACCOUNT, DEV_KEY};

    fn key() -> AccountKey {
        AccountKey::new(DEV_ACCOUNT, DEV_KEY).expect("the development key decodes")
    }

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2025, 6, 1, 0, 0, 0).single().unwrap_or_default()
    }

    const LOCAL: Origin = Origin { ip: IpAddr::V4(Ipv4Addr::LOCALHOST), https: false };

    /// The reference token of protocol doc section 2.3 (accepted by Azurite).
    const REFERENCE: &str = "sv=2019-02-02&tn=QryProbe&st=2024-01-01T00%3A00%3A00Z&se=2099-01-01T00%3A00%3A00Z&sp=raud&spk=p&srk=00&epk=p&erk=zz&sig=zmWEOSFJoh0iAbbL4i6PGd7SN5%2FYdbx%2F9RnuTSsVQrk%3D";

    fn check(token: &str, engine: &Engine, origin: Origin) -> Result<Grant, (u16, String)> {
        let query = Query::parse(token).map_err(|f| (f.status, f.code.to_string()))?;
        let keys = Keys::new(key(), None);
        verify(&keys, &query, engine, origin, now()).map_err(|f| (f.status, f.code.to_string()))
    }

    fn code(token: &str) -> Option<String> {
        check(token, &Engine::new(), LOCAL).err().map(|(status, code)| format!("{status} {code}"))
    }

    fn signed(builder: TableSasBuilder) -> String {
        builder.sign(&key()).map(|t| t.as_query().to_owned()).unwrap_or_default()
    }

    fn base() -> TableSasBuilder {
        TableSasBuilder::new("QryProbe")
            .permissions(TableSasPermissions::parse("r").unwrap_or_default())
            .expiry(now() + chrono::TimeDelta::hours(1))
    }

    #[test]
    fn the_reference_token_verifies_with_its_range() {
        let grant = check(REFERENCE, &Engine::new(), LOCAL);
        let Ok(grant) = grant else { panic!("{grant:?}") };
        assert!(grant.contains("p", "00") && grant.contains("p", "zz") && grant.contains("p", "5"));
        assert!(!grant.contains("p", "0") && !grant.contains("o", "zz") && !grant.contains("q", ""));
        assert!(grant.check_read("qryprobe").is_ok());
        assert!(grant.check_read("Other").is_err());
    }

    #[test]
    fn a_bad_or_absent_signature_or_field_fails_authentication() {
        let failed = Some("403 AuthenticationFailed".to_owned());
        for bad in [
            REFERENCE.replace("sig=zm", "sig=zn"),
            REFERENCE.replace("sp=raud", "sp=rau"),
            REFERENCE.replace("erk=zz", "erk=zy"),
            REFERENCE.replace("tn=QryProbe", "tn=Other"),
            REFERENCE.replace("&sig=", "&x="),
            REFERENCE.replace("sig=zm", "sig=!!"),
            REFERENCE.replace("sv=2019-02-02&", ""),
            REFERENCE.replace("sv=2019-02-02", "sv=2015-04-05"),
            REFERENCE.replace("tn=QryProbe&", ""),
            "sig=".to_owned(),
            signed(base().version("2019-02-0x")),
            signed(base().version("2019-02-30")),
            signed(base().version("2019-2-02")),
            signed(base().version("2019+02-02")),
            signed(base().version("2019-02-021")),
            // Days between the service's versions.
            signed(base().version("2019-02-03")),
            signed(base().version("2026-06-05")),
        ] {
            assert_eq!(code(&bad), failed, "{bad}");
        }
    }

    /// `token` with every parameter name upper-cased.
    fn shouted(token: &str) -> String {
        let pairs: Vec<String> = token
            .split('&')
            .map(|pair| {
                pair.split_once('=').map_or(pair.to_owned(), |(n, v)| format!("{}={v}", n.to_uppercase()))
            })
            .collect();
        pairs.join("&")
    }

    #[test]
    fn parameter_names_are_read_in_any_case() {
        let grant = check(&shouted(REFERENCE), &Engine::new(), LOCAL);
        let Ok(grant) = grant else { panic!("{grant:?}") };
        // The range (`SPK`, `SRK`, `EPK`, `ERK`) is read, not only the signed fields.
        assert!(grant.contains("p", "00") && !grant.contains("p", "0"));
        let mixed = REFERENCE.replace("sig=", "Sig=").replace("sv=", "sV=");
        assert!(check(&mixed, &Engine::new(), LOCAL).is_ok());
        let account = shouted(&account_token(&account("o", "r")));
        assert!(account.contains("SS=") && check(&account, &Engine::new(), LOCAL).is_ok(), "{account}");
    }

    #[test]
    fn a_parameter_given_twice_in_different_cases_fails_authentication() {
        // The service joins the two values with a comma, which no field nor signature accepts.
        let failed = Some("403 AuthenticationFailed".to_owned());
        for name in ["sig", "sv", "tn", "sp", "se", "spk", "erk"] {
            let at = REFERENCE.find(&format!("{name}=")).unwrap_or_default();
            let twice = format!(
                "{REFERENCE}&{}",
                &REFERENCE[at..].split('&').next().unwrap_or_default().to_uppercase()
            );
            assert_eq!(code(&twice), failed, "{twice}");
        }
    }

    #[test]
    fn the_validity_window_is_checked() {
        let failed = Some("403 AuthenticationFailed".to_owned());
        let hour = chrono::TimeDelta::hours(1);
        assert_eq!(code(&signed(base())), None);
        assert_eq!(code(&signed(base().expiry(now()))), failed, "expired");
        assert_eq!(
            code(&signed(base().start(now() + hour).expiry(now() + hour * 2))),
            failed,
            "not yet valid"
        );
        assert_eq!(code(&signed(base().start(now() - hour))), None);
    }

    #[test]
    fn malformed_dates_and_letters_fail_authentication() {
        // Hand-signed tokens, so that the signature is right and the values are not.
        let token = |sp: &str, se: &str| {
            let fields = TableSasFields {
                permissions: sp,
                expiry: se,
                account: DEV_ACCOUNT,
                table: "t1",
                version: "2019-02-02",
                ..TableSasFields::default()
            };
            let sig = key().sign(&fields.string_to_sign());
            format!(
                "sv=2019-02-02&tn=t1&sp={sp}&se={se}&sig={}",
                percent_encoding::utf8_percent_encode(&sig, percent_encoding::NON_ALPHANUMERIC)
            )
        };
        assert_eq!(code(&token("r", "2099-01-01")), None);
        assert_eq!(code(&token("r", "2099-01-01T10:00Z")), None);
        let failed = Some("403 AuthenticationFailed".to_owned());
        assert_eq!(code(&token("r", "tomorrow")), failed);
        assert_eq!(code(&token("r", "")), failed, "no expiry");
        assert_eq!(code(&token("rx", "2099-01-01")), failed);
    }

    /// `params` as a query with a `sig` that is right for them, whatever their values: a table
    /// SAS when `account` is false, an account SAS when true.
    fn hand_signed(params: &[(&str, &str)], account: bool) -> String {
        let get = |name: &str| params.iter().find(|(n, _)| *n == name).map_or("", |(_, v)| *v);
        let string_to_sign = if account {
            AccountSasFields {
                account: DEV_ACCOUNT,
                permissions: get("sp"),
                services: get("ss"),
                resource_types: get("srt"),
                start: get("st"),
                expiry: get("se"),
                ip: get("sip"),
                protocol: get("spr"),
                version: get("sv"),
            }
            .string_to_sign()
        } else {
            TableSasFields {
                permissions: get("sp"),
                start: get("st"),
                expiry: get("se"),
                account: DEV_ACCOUNT,
                table: get("tn"),
                policy_id: get("si"),
                ip: get("sip"),
                protocol: get("spr"),
                version: get("sv"),
                start_partition_key: get("spk"),
                start_row_key: get("srk"),
                end_partition_key: get("epk"),
                end_row_key: get("erk"),
            }
            .string_to_sign()
        };
        let encode = |v: &str| {
            percent_encoding::utf8_percent_encode(v, percent_encoding::NON_ALPHANUMERIC).to_string()
        };
        let sig = key().sign(&string_to_sign);
        let pairs = params.iter().map(|(name, value)| format!("{name}={}", encode(value)));
        pairs.chain([format!("sig={}", encode(&sig))]).collect::<Vec<_>>().join("&")
    }

    /// A hand-signed table SAS for `QryProbe` (`sp=r`, expiring in 2099) with `changes`
    /// (an empty value removes the parameter; `Some("")` keeps it, empty).
    fn table_token(changes: &[(&str, Option<&str>)]) -> String {
        let mut params =
            vec![("sv", "2019-02-02"), ("tn", "QryProbe"), ("sp", "r"), ("se", "2099-01-01T00:00:00Z")];
        for (name, value) in changes {
            params.retain(|(n, _)| n != name);
            if let Some(value) = value {
                params.push((name, value));
            }
        }
        hand_signed(&params, false)
    }

    #[test]
    fn table_permissions_are_raud_letters_in_that_order_each_once() {
        for sp in ["r", "ra", "raud", "rd", "ud", "d"] {
            assert_eq!(code(&table_token(&[("sp", Some(sp))])), None, "{sp}");
        }
        for sp in ["ar", "rr", "dr", "ua", "rx", "rw", "R"] {
            assert_eq!(
                code(&table_token(&[("sp", Some(sp))])),
                Some("403 AuthenticationFailed".into()),
                "{sp}"
            );
        }
    }

    #[test]
    fn an_optional_field_given_empty_is_refused() {
        assert_eq!(code(&table_token(&[])), None);
        for name in ["st", "sip", "spr", "si", "sp", "se"] {
            let token = table_token(&[(name, Some(""))]);
            assert_eq!(code(&token), Some("403 AuthenticationFailed".into()), "{token}");
        }
    }

    #[test]
    fn both_orders_of_https_and_http_are_read() {
        for spr in ["https,http", "http,https"] {
            assert_eq!(code(&table_token(&[("spr", Some(spr))])), None, "{spr}");
        }
        assert_eq!(
            code(&table_token(&[("spr", Some("https"))])),
            Some("403 AuthorizationProtocolMismatch".into())
        );
        for spr in ["http", "https,https", "HTTPS"] {
            assert_eq!(
                code(&table_token(&[("spr", Some(spr))])),
                Some("403 AuthenticationFailed".into()),
                "{spr}"
            );
        }
    }

    #[test]
    fn an_address_range_must_not_end_before_it_starts_and_a_mismatch_names_the_address() {
        let reversed = table_token(&[("sip", Some("10.0.0.9-10.0.0.1"))]);
        assert_eq!(code(&reversed), Some("403 AuthenticationFailed".into()));
        let query = table_token(&[("sip", Some("10.0.0.1-10.0.0.9"))]);
        let query = Query::parse(&query).unwrap_or_else(|_| panic!("{query}"));
        let refused = verify(&Keys::new(key(), None), &query, &Engine::new(), LOCAL, now()).err();
        let message = refused.map(|f| f.message).unwrap_or_default();
        assert!(message.ends_with("using this source IP 127.0.0.1."), "{message}");
    }

    #[test]
    fn versions_from_2015_04_05_sign_the_same_string() {
        for sv in ["2015-04-05", "2017-04-17", "2018-03-28", "2020-12-06"] {
            assert_eq!(code(&table_token(&[("sv", Some(sv))])), None, "{sv}");
        }
        for sv in ["2015-02-21", "2014-02-14"] {
            assert_eq!(
                code(&table_token(&[("sv", Some(sv))])),
                Some("403 AuthenticationFailed".into()),
                "{sv}"
            );
        }
    }

    /// Every field's form and the validity window are checked before the signature, and the
    /// request's origin only after it: a token with a malformed field, a wrong signature or
    /// no longer valid is an authentication failure wherever it comes from.
    #[test]
    fn the_origin_is_checked_last() {
        let elsewhere = Some("10.0.0.1");
        let failed = Some("403 AuthenticationFailed".to_owned());
        assert_eq!(
            code(&table_token(&[("sip", elsewhere)])),
            Some("403 AuthorizationSourceIPMismatch".into())
        );
        assert_eq!(code(&table_token(&[("sip", elsewhere), ("sp", Some("rx"))])), failed);
        let expired = table_token(&[("sip", elsewhere), ("se", Some("2025-05-01"))]);
        assert_eq!(code(&expired), failed);
        let forged = table_token(&[("sip", elsewhere)]).replace("sig=", "sig=A");
        assert_eq!(code(&forged), failed);
    }

    #[test]
    fn account_sas_letters_are_each_given_once() {
        let token = |ss: &str, srt: &str, sp: &str| {
            let params =
                [("sv", "2019-02-02"), ("ss", ss), ("srt", srt), ("sp", sp), ("se", "2099-01-01T00:00:00Z")];
            code(&hand_signed(&params, true))
        };
        assert_eq!(token("bt", "sco", "lr"), None, "any order");
        let failed = Some("403 AuthenticationFailed".to_owned());
        assert_eq!(token("tt", "o", "r"), failed);
        assert_eq!(token("t", "oo", "r"), failed);
        assert_eq!(token("t", "o", "rr"), failed);
        assert_eq!(token("t", "o", "rx"), failed);
    }

    #[test]
    fn ip_and_protocol_restrictions_have_their_codes() {
        let ip = |sip: &str, from: [u8; 4]| {
            let origin = Origin { ip: IpAddr::from(from), https: false };
            check(&signed(base().ip(sip)), &Engine::new(), origin).err().map(|(_, c)| c)
        };
        assert_eq!(ip("127.0.0.1", [127, 0, 0, 1]), None);
        assert_eq!(ip("10.0.0.1-10.0.0.9", [10, 0, 0, 5]), None);
        let mismatch = Some("AuthorizationSourceIPMismatch".to_owned());
        assert_eq!(ip("10.0.0.1-10.0.0.9", [10, 0, 0, 10]), mismatch);
        assert_eq!(ip("10.0.0.2", [10, 0, 0, 1]), mismatch);
        assert_eq!(ip("10.0.0", [10, 0, 0, 1]), Some("AuthenticationFailed".to_owned()));
        let https = signed(base().protocol(SasProtocol::Https));
        assert_eq!(code(&https), Some("403 AuthorizationProtocolMismatch".to_owned()));
        assert!(check(&https, &Engine::new(), Origin { https: true, ..LOCAL }).is_ok());
        assert_eq!(code(&signed(base().protocol(SasProtocol::HttpsAndHttp))), None);
    }

    #[test]
    fn a_stored_policy_supplies_what_the_token_leaves_out() {
        let engine = Engine::new();
        let _ = engine.create_table("QryProbe");
        let later = now() + chrono::TimeDelta::hours(1);
        let policies = [
            SignedIdentifier::new("readers", "r").expiry(later),
            SignedIdentifier::new("gone", "r").expiry(now()),
            SignedIdentifier::new("open", ""),
        ];
        assert!(engine.set_access_policies("QryProbe", &policies).is_ok());
        let by_policy = |id: &str| signed(TableSasBuilder::new("QryProbe").policy_id(id));
        let grant = check(&by_policy("readers"), &engine, LOCAL);
        let read_only = |g: &Grant| matches!(g, Grant::Table(t) if t.permissions.read && !t.permissions.add);
        assert!(grant.as_ref().is_ok_and(read_only), "{grant:?}");
        let failed = |t: &str| check(t, &engine, LOCAL).err().map(|(_, c)| c);
        let auth = Some("AuthenticationFailed".to_owned());
        assert_eq!(failed(&by_policy("gone")), auth, "the policy expired");
        assert_eq!(failed(&by_policy("missing")), auth, "no such policy");
        assert_eq!(failed(&by_policy("open")), auth, "no expiry anywhere");
        let expiring = signed(TableSasBuilder::new("QryProbe").policy_id("open").expiry(later));
        assert_eq!(failed(&expiring), auth, "no permissions anywhere");
        assert_eq!(failed(&signed(base().policy_id("readers"))), auth, "sp and se given twice");
        assert!(check(&signed(base().policy_id("open")), &engine, LOCAL).is_ok());
    }

    #[test]
    fn each_table_operation_needs_its_permission_and_a_key_in_range() {
        let grant = |sp: &str| TableGrant {
            table: "t1".into(),
            permissions: TableSasPermissions::parse(sp).unwrap_or_default(),
            start: Some(("b".into(), None)),
            end: Some(("c".into(), Some("5".into()))),
        };
        let entity = |pk: &str| Entity::new(pk, "1");
        let key = EntityKey::new("b", "1");
        let operations = [
            ("a", Operation::Insert(entity("b"))),
            ("u", Operation::Replace { entity: entity("b"), if_match: IfMatch::Any }),
            ("u", Operation::Merge { entity: entity("b"), if_match: IfMatch::Any }),
            ("au", Operation::InsertOrReplace(entity("b"))),
            ("au", Operation::InsertOrMerge(entity("b"))),
            ("d", Operation::Delete { key, if_match: IfMatch::Any }),
        ];
        for (needed, operation) in &operations {
            let code = |sp: &str, table: &str| {
                grant(sp).check_write(table, operation).err().map(|f| f.code.to_string())
            };
            assert_eq!(code(needed, "T1"), None, "{operation:?}");
            assert_eq!(code("raud", "t2"), Some("AuthorizationFailure".into()), "another table");
            for letter in needed.chars() {
                let fewer: String = "raud".chars().filter(|c| *c != letter).collect();
                assert_eq!(
                    code(&fewer, "t1"),
                    Some("AuthorizationPermissionMismatch".into()),
                    "{operation:?}"
                );
            }
        }
        let outside = Operation::Insert(entity("a"));
        let refused = grant("a").check_write("t1", &outside).err().map(|f| (f.status, f.code.to_string()));
        assert_eq!(refused, Some((403, "AuthorizationFailure".into())));
        assert!(grant("r").check_key("c", "6").is_err() && grant("r").check_key("c", "5").is_ok());
        assert!(grant("r").check_key("bz", "").is_ok() && grant("r").check_key("d", "").is_err());
        assert!(grant("a").check_read("t1").is_err());
    }

    fn account(srt: &str, sp: &str) -> table_client::auth::AccountSasBuilder {
        table_client::auth::AccountSasBuilder::new()
            .resource_types(AccountSasResourceTypes::parse(srt).unwrap_or_default())
            .permissions(AccountSasPermissions::parse(sp).unwrap_or_default())
            .expiry(now() + chrono::TimeDelta::hours(1))
    }

    fn account_token(builder: &table_client::auth::AccountSasBuilder) -> String {
        builder.sign(&key()).map(|t| t.as_query().to_owned()).unwrap_or_default()
    }

    #[test]
    fn an_account_sas_grants_resource_types_and_permissions() {
        let grant = |srt: &str, sp: &str| check(&account_token(&account(srt, sp)), &Engine::new(), LOCAL);
        let code = |result: Result<(), Failure>| result.err().map(|f| f.code.to_string());
        let Ok(objects) = grant("o", "rau") else { panic!("an account SAS verifies") };
        assert_eq!(code(objects.check_read("AnyTable")), None);
        assert_eq!(code(objects.check_key("any", "key")), None);
        let upsert = Operation::InsertOrMerge(Entity::new("p", "r"));
        assert_eq!(code(objects.check_write("t", &upsert)), None);
        let delete = Operation::Delete { key: EntityKey::new("p", "r"), if_match: IfMatch::Any };
        assert_eq!(code(objects.check_write("t", &delete)), Some("AuthorizationPermissionMismatch".into()));
        let types = Some("AuthorizationResourceTypeMismatch".to_owned());
        assert_eq!(code(objects.check_tables(TableOperation::List)), types);
        let Ok(containers) = grant("c", "lc") else { panic!("an account SAS verifies") };
        assert_eq!(code(containers.check_tables(TableOperation::List)), None);
        assert_eq!(code(containers.check_tables(TableOperation::Create)), None);
        // Create Table takes `c` or `w` (the JavaScript SDK's account SAS names it `write`),
        // never `a`, which is for entities.
        for (sp, expected) in [("w", None), ("a", Some("AuthorizationPermissionMismatch".to_owned()))] {
            let Ok(grant) = grant("c", sp) else { panic!("an account SAS verifies") };
            assert_eq!(code(grant.check_tables(TableOperation::Create)), expected, "sp={sp}");
        }
        assert_eq!(
            code(containers.check_tables(TableOperation::Delete)),
            Some("AuthorizationPermissionMismatch".into())
        );
        assert_eq!(code(containers.check_tables(TableOperation::Acl)), types);
        // The service's settings: reading them takes `r`, setting them `w`.
        for (sp, read, write) in [("r", true, false), ("w", false, true)] {
            let Ok(service) = grant("s", sp) else { panic!("an account SAS verifies") };
            let mismatch = |allowed: bool| (!allowed).then(|| "AuthorizationPermissionMismatch".to_owned());
            assert_eq!(code(service.check_tables(TableOperation::ServiceRead)), mismatch(read), "sp={sp}");
            assert_eq!(code(service.check_tables(TableOperation::ServiceWrite)), mismatch(write), "sp={sp}");
        }
        assert_eq!(code(containers.check_read("t")), types);
        let blob_only = account("o", "r").services(AccountSasServices::parse("b").unwrap_or_default());
        let failed = check(&account_token(&blob_only), &Engine::new(), LOCAL).err();
        assert_eq!(failed.map(|(_, c)| c), Some("AuthorizationServiceMismatch".into()));
        let token = account_token(&account("o", "r"));
        for bad in [
            token.replace("srt=o", "srt=c"),
            token.replace("sp=r", "sp=rw"),
            token.replace("sv=2019-02-02", "sv=2014-02-14"),
            token.replace("&sig=", "&sig=A"),
        ] {
            assert_eq!(self::code(&bad), Some("403 AuthenticationFailed".into()), "{bad}");
        }
        let expired = account("o", "r").start(now() - chrono::TimeDelta::hours(2)).expiry(now());
        assert_eq!(self::code(&account_token(&expired)), Some("403 AuthenticationFailed".into()));
        // A table SAS grant refuses table operations whatever its permissions.
        let Ok(table) = check(REFERENCE, &Engine::new(), LOCAL) else { panic!("the reference verifies") };
        for operation in [TableOperation::List, TableOperation::Create, TableOperation::ServiceRead] {
            assert_eq!(code(table.check_tables(operation)), Some("AuthorizationFailure".into()));
        }
    }

    proptest! {
        /// Any query string is verified or refused with a 403, never a panic.
        #[test]
        fn any_token_is_refused_without_panic(token in ".{0,200}") {
            if let Err((status, _)) = check(&token, &Engine::new(), LOCAL) {
                prop_assert!(status == 403 || status == 400);
            }
        }

        /// The range is the inclusive (PartitionKey, RowKey) interval of the pairs' order.
        #[test]
        fn contains_is_the_pair_order(pk in "[a-c]{0,2}", rk in "[0-2]{0,2}") {
            let grant = TableGrant {
                table: "t".into(),
                permissions: TableSasPermissions::all(),
                start: Some(("a".into(), Some("1".into()))),
                end: Some(("b".into(), Some("1".into()))),
            };
            let pair = (pk.as_str(), rk.as_str());
            prop_assert_eq!(grant.contains(&pk, &rk), (("a", "1")..=("b", "1")).contains(&pair));
        }

        /// Keys are compared in the service's key order, UTF-16 code units, not Rust's byte
        /// order: they differ when a character at or above U+10000 meets one in
        /// U+E000..=U+FFFF, where the surrogate pair sorts first.
        #[test]
        fn keys_compare_in_utf16_order(pk in "[a\u{e000}\u{ffff}\u{10000}\u{1f600}]{0,3}") {
            let grant = TableGrant {
                table: "t".into(),
                permissions: TableSasPermissions::all(),
                start: Some(("\u{10000}".into(), None)),
                end: Some(("\u{e000}".into(), None)),
            };
            let utf16 = |s: &str| s.encode_utf16().collect::<Vec<u16>>();
            let expected = (utf16("\u{10000}")..=utf16("\u{e000}")).contains(&utf16(&pk));
            prop_assert_eq!(grant.contains(&pk, "x"), expected);
        }
    }
}
