//! The [`TableEntity`] trait: a Rust type that is stored as table entities.

use crate::entity::{Entity, EntityKey};
use crate::error::Result;
use crate::validate::FieldSink;

use super::decode::{EntityReader, PropertySlots, ReadEntity};
use super::encode::{PreparedWrite, StaticName};
use super::grammar;
use super::index::IndexDef;
use super::template::KeyTemplates;

/// The property holding the discriminator of `entity_type = "..."` (an `Edm.String`).
pub const ENTITY_TYPE_PROPERTY: &str = grammar::ENTITY_TYPE;
/// The property holding `version = N` (an `Edm.Int32`).
pub const ENTITY_VERSION_PROPERTY: &str = grammar::ENTITY_VERSION;

/// A Rust type stored as table entities, usually through `#[derive(TableEntity)]`.
///
/// # `#[derive(TableEntity)]`
///
/// On a struct with named fields, the derive maps each field to one property and builds the
/// keys from templates. Generated code names `::table_client::__private`; with only
/// `table-core` and `table-derive`, add `crate = "table_core"`.
///
/// Container attributes (`#[table(...)]` on the struct, in one attribute or several):
///
/// | attribute | meaning |
/// |---|---|
/// | `partition_key = "..."`, `row_key = "..."` | key templates (required) |
/// | `entity_type = "Employee"` | discriminator written to `EntityType` and checked on read |
/// | `version = 2` | written to `EntityVersion` (an `Edm.Int32`) on every write; on read, a row of this version is decoded directly, a newer one is a [`NewerEntityVersion`](crate::Violation::NewerEntityVersion) error, an older one needs `upgrade_from` (needs `entity_type`) |
/// | `upgrade_from(1 = upgrade_v1, 2 = EmployeeV2::upgrade)` | older versions this type reads: a row stored at version 1 is read as the type `upgrade_v1` takes and upgraded by it (see [Versions](#versions)) |
/// | `index(name = "..", partition_key = "..", row_key = "..", project(a, b))` | secondary index: a copy under other keys; same partition when `partition_key` is left out or equal to the entity's; `project` limits the copied properties |
/// | `lookup(name = "..", partition_key = "..", row_key = "..")` | index entity listing the primary keys per value |
/// | `rename_all = "PascalCase"` | property names from field names (`lowercase`, `UPPERCASE`, `camelCase`, `snake_case`, `SCREAMING_SNAKE_CASE`) |
/// | `crate = "table_core"` | where generated code finds `__private` |
///
/// Key templates are literal text with `{field}` or `{field:spec}` (`{{`/`}}` for braces):
/// `{id:06}` zero pads an integer to exactly 6 digits (a wider value is an error, since it
/// would break key order); `{at:ticks}` / `{at:inverted_ticks}` write a `DateTime<Utc>` as
/// 19-digit .NET ticks or `3155378975999999999 - ticks` (newest first: the log tail);
/// `{day:%Y%m%d}` is a chrono date format; `{n:ordered}` writes any integer as `n + 2^63` in
/// 20 digits so that key order is numeric order, negatives included. Every value placed in a
/// key is checked against the service's key rules when the key is built, the error naming
/// the field.
///
/// Field attributes: `rename = "Name"`; `skip` (not stored, `Default` on read); `json` (any
/// serde type as one JSON string property; `None`/`null` is an absent property); `timestamp`
/// (`Option<DateTime<Utc>>` filled from the entity's `Timestamp`); `etag` (`Option<ETag>`
/// filled from the entity's ETag); `key_only` (stored only in the keys and parsed back from
/// them; a key that does not match its template is an error); `encrypt` (on a `String` or
/// `Option<String>` field, or with `json`, whose JSON text is encrypted: a client with an
/// encryption policy stores it encrypted as `Edm.Binary` on every typed write and decrypts it
/// on every typed read, one without a policy refuses to write it, and with
/// `require_encryption` a row holding it in clear fails the read; such a type is never merged,
/// and has no filter column for the field, since the service sees only ciphertext. `encrypt`
/// on a key field, a `key_only` field, a field in an index template or projection, or a
/// non-string field is a compile error; whole-entity `index(...)` copies hold the field
/// encrypted for each copy's own keys).
///
/// Field types: see the table on [`PropertyValue`](super::PropertyValue) (`String`,
/// `bool`, `i8`, `i16`, `u8` and `u16` as Int32, `i32`, `i64`, `u32` and `u64` as Int64, `f64`,
/// `f32` as Double, `DateTime<Utc>`, `Uuid`, `Vec<u8>`, `Option<T>`, and unit-only enums with
/// `#[derive(PropertyValue)]`). Every integer type can be in a key, with the integer specs.
///
/// Generated besides this trait, as inherent items of the struct:
///
/// | item | what it is |
/// |---|---|
/// | `Employee::AGE` | a [`Column`](super::Column) per stored field that is not `encrypt` (and the `timestamp` field), named in SCREAMING_CASE, for typed filters (`Employee::AGE.gt(30)`) |
/// | `Employee::DEPARTMENT` | a [`KeyColumn`](super::KeyColumn) per `key_only` field, filtering on the key it is stored in: for a field that is its whole key (`partition_key = "{department}"`) `Employee::DEPARTMENT.eq("Sales")` is `PartitionKey eq 'Sales'`, and `gt`/`ge`/`lt`/`le` work when the spec keeps the field's order (a string, `{n:06}`, `{n:ordered}`, `{at:ticks}`); on a field that is only part of its key, or written with a date format, comparing is a compile error that says why |
/// | `key(pk fields.., rk fields..)` | `Result<EntityKey>`, the fields in template order, partition key first |
/// | `partition_key_for(..)`, `row_key_for(..)` | `Result<String>`: one key from its fields, e.g. a composite partition for `Query::partition(&Reading::partition_key_for(device, day)?)` |
/// | `partition_key_prefix(..)`, `row_key_prefix(..)` | for a template with distinct fields, `Result<KeyRange>` of every key whose fields but the last have these values |
/// | `partition_key_range(.., from, to)`, `row_key_range(.., from, to)` | for a template with distinct fields, `Result<KeyRange>` with the last field from `from` to `to` |
/// | `Employee::BY_EMAIL` | per `index(...)`/`lookup(...)`, a handle named after the index in SCREAMING_CASE, implementing [`Index`](super::Index) and [`SecondaryIndex`](super::SecondaryIndex) or [`LookupIndex`](super::LookupIndex); its methods are the key helpers above for the index's templates (`Employee::BY_EMAIL.key("Sales", "a@b.c")`, `.partition_key_for(..)`, `.row_key_prefix(..)`, ...), and the typed index reads take it (`get_by_index`, `query_index`, `lookup`), so a misspelt index or one of the wrong kind does not compile |
///
/// A typed query checks every `PartitionKey eq` and `RowKey eq` condition against the key
/// templates ([`key_templates`](TableEntity::key_templates)) before any request: `.partition("a")`
/// on the template `"{a}_{b}"` could never match, and fails with
/// [`Violation::QueryKeyMismatch`](crate::Violation::QueryKeyMismatch).
///
/// On an enum whose variants each wrap one entity struct with an `entity_type`, the derive
/// reads any of them, dispatching on `EntityType` (an unknown value is an error), so one query
/// returns rows of several types. Variants may wrap several versions of one entity type
/// (`enum AnyEmployee { V1(EmployeeV1), V2(EmployeeV2) }`, each with its own `version`): a row
/// goes to the variant of its `EntityVersion`, or else to the oldest newer variant (which may
/// upgrade it); a version newer than every variant's is a `NewerEntityVersion` error. Two
/// variants of the same `entity_type` and `version`, or of the same `entity_type` without
/// versions, are a compile error.
///
/// # Versions
///
/// A type's stored shape changes by raising `version` and declaring how older rows become the
/// new type: `upgrade_from(N = path)` names a function `fn(Old) -> Self` or
/// `fn(Old) -> Result<Self>`, where `Old` is the `TableEntity` type that wrote version `N`
/// (kept in the code, usually as `EmployeeV1`). The derive reads the row with `Old`'s
/// `from_entity` (the type is inferred from the function's parameter) and calls the function;
/// a chain over several versions is a function that calls the next one. Reading then works so:
///
/// - `EntityVersion` equal to `version`: decoded directly;
/// - a version listed in `upgrade_from`: decoded as the old type, then upgraded; the upgraded
///   value's `etag` and `timestamp` fields hold the stored row's, whatever the function set,
///   so a conditional write of the upgraded value replaces exactly the row read;
/// - newer than `version`: a [`NewerEntityVersion`](crate::Violation::NewerEntityVersion) error
///   ("stored by a newer version 3 of the type; this build reads up to version 2");
/// - older and not listed: an
///   [`UnreadableEntityVersion`](crate::Violation::UnreadableEntityVersion) error naming the
///   versions the type reads;
/// - missing, or not an `Edm.Int32`: a `Value` error naming `EntityVersion`.
///
/// Writes always write the current version, so writing an upgraded value back migrates its row.
/// A type with `upgrade_from` selects every property (its [`select`](Self::select) is `None`),
/// since an old version may store properties its own fields do not name. Listing a version
/// twice, a version not below `version`, or `upgrade_from` without `version` is a compile
/// error, and so is a function whose parameter type has another `entity_type` or `version`.
///
/// ```
/// use table_core::typed::TableEntity;
/// use table_core::{Value, Violation};
/// use table_derive::TableEntity;
///
/// #[derive(Debug, PartialEq, TableEntity)]
/// #[table(crate = "table_core", partition_key = "{team}", row_key = "{id}")]
/// #[table(entity_type = "Player", version = 1)]
/// struct PlayerV1 { #[table(key_only)] team: String, #[table(key_only)] id: u32, name: String }
///
/// #[derive(Debug, PartialEq, TableEntity)]
/// #[table(crate = "table_core", partition_key = "{team}", row_key = "{id}")]
/// #[table(entity_type = "Player", version = 2, upgrade_from(1 = Player::from_v1))]
/// struct Player {
///     #[table(key_only)] team: String,
///     #[table(key_only)] id: u32,
///     name: String,
///     rating: Option<i32>,
/// }
///
/// impl Player {
///     fn from_v1(old: PlayerV1) -> Player {
///         Player { team: old.team, id: old.id, name: old.name, rating: None }
///     }
/// }
///
/// # fn main() -> table_core::Result<()> {
/// let stored = PlayerV1 { team: "Reds".into(), id: 9, name: "Ann".into() }.to_entity()?;
/// assert_eq!(stored.get("EntityVersion"), Some(&Value::Int32(1)));
///
/// let upgraded = Player::from_entity(stored)?;
/// assert_eq!(upgraded, Player { team: "Reds".into(), id: 9, name: "Ann".into(), rating: None });
/// assert_eq!(upgraded.to_entity()?.get("EntityVersion"), Some(&Value::Int32(2)));
///
/// let mut newer = upgraded.to_entity()?;
/// newer.insert("EntityVersion", 3);
/// let err = Player::from_entity(newer).unwrap_err();
/// assert!(matches!(err.violation(), Some(Violation::NewerEntityVersion { found: 3, current: 2, .. })));
/// assert!(err.to_string().contains("stored by a newer version 3 of the type; this build reads up to version 2"));
/// # Ok(())
/// # }
/// ```
///
/// # Example
///
/// ```
/// use chrono::{DateTime, Utc};
/// use table_core::typed::{PARTITION_KEY, PropertyValue as _, TableEntity};
/// use table_core::{ETag, EntityKey};
/// use table_derive::{PropertyValue, TableEntity};
///
/// #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
/// struct Address { city: String }
///
/// #[derive(Debug, Clone, PartialEq, PropertyValue)]
/// #[table(crate = "table_core", rename_all = "snake_case")]
/// enum Contract { FullTime, #[table(rename = "pt")] PartTime }
///
/// #[derive(Debug, Clone, PartialEq, TableEntity)]
/// #[table(crate = "table_core", rename_all = "PascalCase")]
/// #[table(partition_key = "{department}", row_key = "empid_{id:06}")]
/// #[table(entity_type = "Employee", version = 1)]
/// #[table(index(name = "by_email", row_key = "email_{email}", project(first_name)))]
/// #[table(index(name = "by_email_global", partition_key = "email_{department}", row_key = "{email}"))]
/// #[table(lookup(name = "by_last_name", row_key = "lastname_{last_name}"))]
/// struct Employee {
///     #[table(key_only)] department: String,
///     #[table(key_only)] id: u32,
///     #[table(rename = "First")] first_name: String,
///     last_name: String,
///     age: i32,
///     email: String,
///     contract: Contract,
///     #[table(json)] address: Address,
///     #[table(skip)] cache: Option<String>,
///     #[table(timestamp)] updated: Option<DateTime<Utc>>,
///     #[table(etag)] etag: Option<ETag>,
/// }
///
/// /// A log-tail entity: the newest reading sorts first in its partition.
/// #[derive(Debug, Clone, PartialEq, TableEntity)]
/// #[table(crate = "table_core", partition_key = "{device}", row_key = "{at:inverted_ticks}")]
/// struct Reading { device: String, at: DateTime<Utc>, value: f64 }
///
/// # fn main() -> table_core::Result<()> {
/// let e = Employee {
///     department: "Sales".into(), id: 223, first_name: "Don".into(), last_name: "Hall".into(),
///     age: 34, email: "donh@contoso.com".into(), contract: Contract::PartTime,
///     address: Address { city: "Redmond".into() }, cache: None, updated: None, etag: None,
/// };
/// let entity = e.to_entity()?;
/// assert_eq!(entity.key(), EntityKey::new("Sales", "empid_000223"));
/// assert_eq!(entity.get("First"), Some(&"Don".into()));
/// assert_eq!(entity.get("Contract"), Some(&"pt".into()));
/// assert_eq!(Employee::from_entity(entity)?, e);
///
/// assert_eq!(Employee::key("Sales", 223)?, EntityKey::new("Sales", "empid_000223"));
/// let ids = Employee::row_key_range(100, 199)?;
/// assert_eq!(
///     ids.in_partition(Employee::partition_key_for("Sales")?).to_string(),
///     "PartitionKey eq 'Sales' and RowKey ge 'empid_000100' and RowKey le 'empid_000199'",
/// );
/// assert_eq!(Employee::AGE.gt(30).to_string(), "Age gt 30");
/// assert_eq!(PARTITION_KEY.eq("Sales").and(Employee::LAST_NAME.eq("Smith")).to_string(),
///            "PartitionKey eq 'Sales' and LastName eq 'Smith'");
/// assert_eq!(e.index_key("by_email")?, Some(EntityKey::new("Sales", "email_donh@contoso.com")));
/// assert_eq!(Employee::BY_EMAIL.key("Sales", "donh@contoso.com")?, EntityKey::new("Sales", "email_donh@contoso.com"));
/// assert_eq!(Employee::BY_LAST_NAME.row_key_prefix()?.to_filter().to_string(),
///            "RowKey ge 'lastname_' and RowKey lt 'lastname`'");
/// assert_eq!(Employee::DEPARTMENT.eq("Sales").to_string(), "PartitionKey eq 'Sales'");
/// assert_eq!(Employee::indexes()[0].projection, Some(&["First"][..]));
///
/// let at: DateTime<Utc> = "2014-08-22T00:50:32Z".parse().unwrap();
/// let r = Reading { device: "d1".into(), at, value: 1.5 };
/// assert_eq!(r.row_key()?, "2519936321679999999");
/// # Ok(())
/// # }
/// ```
pub trait TableEntity: Sized {
    /// The discriminator written to [`ENTITY_TYPE_PROPERTY`] and required when reading
    /// (`entity_type = "..."`); `None` when the type has none.
    const ENTITY_TYPE: Option<&'static str> = None;

    /// The version written to [`ENTITY_VERSION_PROPERTY`] (`version = N`): the newest this type
    /// reads; older ones only through `upgrade_from` (see [Versions](#versions)).
    const VERSION: Option<i32> = None;

    /// The properties of `#[table(encrypt)]` fields: a client with an encryption policy
    /// encrypts them on every typed write, and one without refuses to write them in clear.
    #[doc(hidden)]
    const ENCRYPTED_PROPERTIES: &'static [&'static str] = &[];

    /// Where a reader that reads for this type puts each property
    /// [`from_parts`](Self::from_parts) takes (see the `decode` module); the derive lists the
    /// type's own properties, the default none. Any slots read alike, only faster.
    #[doc(hidden)]
    const PROPERTY_SLOTS: &'static PropertySlots = &PropertySlots::NONE;

    /// The entity to write: keys, discriminator and every stored property (`None` fields are
    /// left out). Fails when a key cannot be built or a JSON field cannot be serialised.
    fn to_entity(&self) -> Result<Entity>;

    /// What a write of `self` works out once, before it walks the properties with
    /// [`write_through`](Self::write_through): the keys and the JSON fields' text (see the
    /// `encode` module), with the errors of [`to_entity`](Self::to_entity) in its order.
    /// `None` when the type does not write through a sink (the default): writes then use
    /// `to_entity`. The derive implements it for structs, and enums of entity types pass it on
    /// to their variants.
    #[doc(hidden)]
    fn prepare_write(&self) -> Result<Option<PreparedWrite>> {
        Ok(None)
    }

    /// Hands the properties of [`to_entity`](Self::to_entity) to `sink`, in ascending name
    /// order, each name once, borrowed from `self` where they can be; `prepared` is what
    /// [`prepare_write`](Self::prepare_write) gave for `self`. The same properties on every
    /// call, so that a write may walk them more than once (see the `encode` module). A type
    /// whose `prepare_write` answers `Some` implements it; the default hands nothing.
    ///
    /// Generic, so that each sink (the entity rules, the engine's row encoder) gets a walk
    /// compiled for its own type, its work inlined into the field reads.
    #[doc(hidden)]
    fn write_through<S: FieldSink<StaticName>>(&self, prepared: &PreparedWrite, sink: &mut S) {
        let _ = (prepared, sink);
    }

    /// The value of a stored entity, upgraded when it was stored by an older version the type
    /// reads. Fails, naming the property, when a property is missing for a non-`Option` field
    /// or has another EDM type, when the discriminator does not match or the version is one the
    /// type does not read, or when a key does not match its template.
    fn from_entity(entity: Entity) -> Result<Self>;

    /// The value of an entity as a reader handed it over, without a generic [`Entity`] (see
    /// the `decode` module): same value and same errors as [`from_entity`](Self::from_entity).
    /// The derive implements it for types without `upgrade_from`; the default builds the
    /// `Entity` and calls `from_entity`, so hand-written impls need nothing.
    #[doc(hidden)]
    fn from_parts(parts: ReadEntity<'_>) -> Result<Self> {
        Self::from_entity(parts.into_entity())
    }

    /// The value of an entity read through `reader` (see the `decode` module): same value and
    /// same errors as [`from_entity`](Self::from_entity). The derive implements it for types
    /// without `upgrade_from`; the default takes the `Entity` and calls `from_entity`.
    ///
    /// Generic, so that each reader (the engine's stored row, the client's JSON reader) gets a
    /// decoder compiled for its own type, its takes inlined (see [`Decoder`](super::Decoder)).
    #[doc(hidden)]
    fn read_through<R: EntityReader + ?Sized>(reader: &mut R) -> Result<Self> {
        Self::from_entity(reader.take_entity())
    }

    /// The `PartitionKey` built from the partition key template.
    fn partition_key(&self) -> Result<String>;

    /// The `RowKey` built from the row key template.
    fn row_key(&self) -> Result<String>;

    /// Both keys.
    fn entity_key(&self) -> Result<EntityKey> {
        Ok(EntityKey::new(self.partition_key()?, self.row_key()?))
    }

    /// The properties to request with `$select` so that [`from_entity`](Self::from_entity)
    /// has all it reads: `PartitionKey`, `RowKey`, `Timestamp` when a field holds it, the
    /// discriminator and every stored field. `None` asks for every property (a heterogeneous
    /// enum does, and so does a type with `upgrade_from`). A struct with a subset of another's fields is thereby a projection.
    fn select() -> Option<&'static [&'static str]> {
        None
    }

    /// The templates every key of the type follows; `None` when no single pair does (an enum
    /// over several entity types). Typed queries check the keys they compare with against
    /// them.
    fn key_templates() -> Option<KeyTemplates> {
        None
    }

    /// The declared secondary indexes and index entities.
    fn indexes() -> &'static [IndexDef] {
        &[]
    }

    /// The key of this entity's row in the index called `index`; `None` when the type has no
    /// index of that name.
    fn index_key(&self, index: &str) -> Result<Option<EntityKey>> {
        let _ = index;
        Ok(None)
    }
}
