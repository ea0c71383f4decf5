//! The [`TableEntity`] trait: a Rust type that is stored as table entities.

use crate::entity::{Entity, EntityKey};
use crate::error::Result;

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
/// | `version = 1` | written to `EntityVersion`, must match exactly on read (needs `entity_type`) |
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
/// them; a key that does not match its template is an error).
///
/// Field types: see the table in [`PropertyValue`](super::PropertyValue)'s module (`String`,
/// `bool`, `i32`, `i64`, `u32` and `u64` as Int64, `f64`, `DateTime<Utc>`, `Uuid`, `Vec<u8>`,
/// `Option<T>`, and unit-only enums with `#[derive(PropertyValue)]`).
///
/// Generated besides this trait, as inherent items of the struct:
///
/// | item | what it is |
/// |---|---|
/// | `Employee::AGE` | a [`Column`](super::Column) per stored field (and the `timestamp` field), named in SCREAMING_CASE, for typed filters (`Employee::AGE.gt(30)`) |
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
/// returns rows of several types.
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

    /// The version written to [`ENTITY_VERSION_PROPERTY`] and required, exactly, when reading
    /// (`version = N`).
    const VERSION: Option<i32> = None;

    /// The entity to write: keys, discriminator and every stored property (`None` fields are
    /// left out). Fails when a key cannot be built or a JSON field cannot be serialised.
    fn to_entity(&self) -> Result<Entity>;

    /// The value of a stored entity. Fails, naming the property, when a property is missing for
    /// a non-`Option` field or has another EDM type, when the discriminator does not match, or
    /// when a key does not match its template.
    fn from_entity(entity: Entity) -> Result<Self>;

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
    /// enum does). A struct with a subset of another's fields is thereby a projection.
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
