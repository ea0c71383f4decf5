//! JSON bodies: entities (protocol doc section 4), query pages and table lists.
//!
//! Writing: `PartitionKey`, `RowKey`, then every custom property in name order. Int64,
//! Double, DateTime, Guid and Binary values always carry an `@odata.type` annotation, so the
//! service and Azurite store exactly the type the caller chose (an unannotated `2.0` is an
//! Int32 in Azurite, an unannotated integer above `i32::MAX` has no defined type). String,
//! Int32 and Boolean are written plain. `Timestamp` and `odata.etag` are never written.
//!
//! Reading accepts `nometadata`, `minimalmetadata` and `fullmetadata` bodies: annotations may
//! come before or after their value, `odata.*` control keys are skipped, `null` values (the
//! service's answer for a `$select`ed property the entity lacks) mean "absent", and missing
//! `PartitionKey`/`RowKey` (not `$select`ed) read as empty strings. Unannotated values are
//! typed as the service types them: string -> String, bool -> Boolean, integer -> Int32, or
//! Int64 when it does not fit an `i32` (the service never sends that, Azurite may; keeping the
//! value beats failing), number with `.` or exponent -> Double.
//!
//! Reading stops at the entity as read, a [`ReadEntity`] ([`read_entity`], [`read_query_page`]):
//! names borrowed from the body, values already typed by the rules here ([`property_value`] is
//! the one place an annotation meets a value). The generic [`Entity`] is its
//! `into_entity()`; a typed read hands it to `TableEntity::from_parts` instead, so typed and
//! untyped reads share every rule of this module and differ only after it. A typed read
//! ([`decode_entity_as`], [`decode_query_page_as`]) also hands the reader the type's
//! `PropertySlots`: a property the type reads goes to its slot as it is met (a generated
//! `match` on the name), the others to the list that is sorted once the object ends; every
//! check reports the fault of the smallest property name, in a slot or in the list alike, so
//! slots change the speed of a read and nothing else. A decoder that reads through an
//! `EntityReader` (every derived type) reads each checked entity where it lies, a
//! `BodyEntity`: keys and ETag stay borrowed from the body (when they hold no escapes), so a
//! type that keeps none of them copies none, and a page's entities reuse one buffer for their
//! slots' values. Its `read_through` is compiled for `BodyEntity` itself ([`JsonDecoder`],
//! made where the type is known), so that each take inlines into the field that reads it. A
//! point read ([`decode_point_read`]), typed or not, is read the same way, its keys (still
//! borrowed) compared with those asked for once the object is read and checked, before any
//! value is decoded.
//!
//! Values are read in the service's literal forms only: an `Edm.DateTime` (and `Timestamp`) as
//! `parse_datetime` reads it and within 1601-01-01 to 9999-12-31, an `Edm.Guid` hyphenated.
//!
//! Invariants: decoding never panics, whatever the bytes; every malformed input (nested
//! objects or arrays, a bad Int64/Guid/DateTime/Binary text, an unknown `Edm.*` type, a member
//! that appears twice, be it `PartitionKey`, `RowKey`, `Timestamp`, `odata.etag`, a property,
//! even one whose value is `null`, or a type annotation, an empty ETag or one with a control
//! character, trailing garbage) is an [`ErrorKind::Decode`] error: with a repeated member,
//! no reading of the body is more right than another. Bodies are read
//! straight from the bytes with serde visitors, without an intermediate `serde_json::Value`.

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::ops::RangeInclusive;
use std::sync::LazyLock;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use chrono::{DateTime, Utc};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use table_core::datetime::{format_datetime, max_datetime, min_datetime, parse_datetime};
use table_core::typed::{
    Decoder, EntityReader, PropertyBag, PropertyList, PropertySlots, ReadEntity, TableEntity,
};
use table_core::{
    ETag, EdmType, Entity, EntityKey, MAX_ENTITY_SIZE, MAX_PROPERTIES, MAX_PROPERTY_NAME_LEN,
    RESERVED_PROPERTY_NAMES, Result, SYSTEM_PROPERTIES, Value, Violation, parse_guid,
};

use super::error::ErrorMember;
use super::etag::check_received_etag;

/// Suffix of a property name that makes it a type annotation.
const TYPE_ANNOTATION: &str = "@odata.type";

/// The most bytes one entity can honestly take in a JSON answer, derived from the service's
/// 1 MiB limit on an entity as `table_core::entity_size` counts it:
///
/// - every counted byte of a key, property name or string value prints as at most 3 bytes (a
///   UTF-16 unit counts 2 and prints as at most `\uXXXX`, 6 bytes), and binary as 4/3 of
///   its counted bytes (base64);
/// - each property (at most `MAX_PROPERTIES`) may print its name a second time in its type
///   annotation, at most 12 bytes per character (a character outside the BMP escaped as two
///   `\uXXXX`), and at most 128 bytes of fixed text: `@odata.type`, the type name, quotes,
///   colons, the comma, and the text of a number, DateTime or GUID beyond 3 times its counted
///   size (a DateTime counts 8 and prints as 30);
/// - each entity adds at most 4 KiB of control members (`odata.etag`, `odata.metadata`,
///   `Timestamp`, braces).
///
/// That is 3 MiB + 255 × 3188 B + 4 KiB, about 3.8 MiB: every answer about a single entity
/// (a point read, an insert echo) is read up to this size and no further.
pub(crate) const MAX_ENTITY_JSON: usize =
    3 * MAX_ENTITY_SIZE + MAX_PROPERTIES * (12 * MAX_PROPERTY_NAME_LEN + 128) + 4096;

/// The most properties besides `PartitionKey`, `RowKey` and `Timestamp` an entity has; more
/// are refused while reading, before they take memory.
const MAX_CUSTOM_PROPERTIES: usize = MAX_PROPERTIES - SYSTEM_PROPERTIES;

/// The page-level text of a query or table list answer (`odata.metadata`, braces).
const PAGE_TEXT: usize = 4096;

/// The most bytes of one table list entry: a name (at most 255 characters, Cosmos DB's
/// limit, each at most 12 bytes escaped) and the entry's control members.
const MAX_TABLE_ENTRY_JSON: usize = 8192;

/// The largest body a query page of at most `entities` entities can honestly have.
pub(crate) fn query_page_body_limit(entities: usize) -> usize {
    entities.saturating_mul(MAX_ENTITY_JSON).saturating_add(PAGE_TEXT)
}

/// The largest body a table list page of at most `tables` names can honestly have.
pub(crate) fn table_list_body_limit(tables: usize) -> usize {
    tables.saturating_mul(MAX_TABLE_ENTRY_JSON).saturating_add(PAGE_TEXT)
}

/// Most entities (or table names) the service returns in one page; public as
/// [`MAX_PAGE_SIZE`](crate::MAX_PAGE_SIZE). Defined here, at the bottom of the import graph,
/// because the wire format, the backend and queries all bound pages by it.
pub(crate) const MAX_PAGE_SIZE: u32 = 1000;

/// The most entities (or table names) one page holds: the service's page size.
const MAX_PAGE_ITEMS: usize = MAX_PAGE_SIZE as usize;

/// The request body of an insert, update, merge or upsert of `entity`.
pub fn encode_entity(entity: &Entity) -> String {
    // Sized for a typical body up front, so that writing it does not grow the buffer by
    // doubling (each step a copy): the keys, and for each property its name twice (with its
    // annotation) and a value.
    let names: usize = entity.properties.keys().map(String::len).sum();
    let estimate =
        64 + entity.partition_key.len() + entity.row_key.len() + 2 * names + 48 * entity.properties.len();
    let mut body = Vec::with_capacity(estimate);
    // Serialising a map of strings and scalars cannot fail: every key is a string and every
    // f64 we pass is finite; and serde_json writes UTF-8 only.
    match serde_json::to_writer(&mut body, &EntityBody(entity)) {
        Ok(()) => String::from_utf8(body).unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// The request body of Create Table: `{"TableName":"<name>"}`.
pub fn encode_create_table(name: &str) -> String {
    serde_json::json!({ "TableName": name }).to_string()
}

/// Reads one entity (a point read or an insert echo).
///
/// `etag_header` is the response's `ETag` header. The entity's ETag is taken from the body's
/// `odata.etag` when present, else from `etag_header`, else rebuilt from the `Timestamp` text
/// exactly as received (as the Python SDK does for `nometadata`), so it stays byte-identical
/// to what the service would send.
pub fn decode_entity(body: &[u8], etag_header: Option<&str>) -> Result<Entity> {
    read_entity(body, etag_header, &PropertySlots::NONE).map(ReadEntity::into_entity)
}

/// [`decode_entity`], stopping at the entity as read ([`ReadEntity`]), borrowing from
/// `body`, its properties laid out by `slots` (the slots of the type it is read for, or
/// `PropertySlots::NONE`), for a typed decoder (`TableEntity::from_parts`) or
/// [`into_entity`](ReadEntity::into_entity). Every rule of this module is checked.
pub fn read_entity<'b>(
    body: &'b [u8],
    etag_header: Option<&str>,
    slots: &'static PropertySlots,
) -> Result<ReadEntity<'b>> {
    let scratch = SlotScratch::default();
    from_slice(body, EntitySeed { etag_header, slots, scratch: &scratch, request: None }, "entity")
}

/// Reads the answer to a point read of the entity (`partition_key`, `row_key`) into what
/// `decode` makes of it, as [`decode_entity_as`] reads an entity: every rule of this module is
/// checked, then an answer about another entity is refused (it cannot be trusted), before any
/// of its values is decoded.
pub fn decode_point_read<T>(
    body: &[u8],
    etag_header: Option<&str>,
    partition_key: &str,
    row_key: &str,
    decode: JsonDecoder<T>,
) -> Result<T> {
    let scratch = SlotScratch::default();
    let requested = RequestedKeys { partition_key, row_key };
    from_slice(body, DecodeSeed { etag_header, decode, scratch: &scratch, requested }, "entity")?
}

/// The error of a point read answered about another entity than the one asked for.
fn another_entity() -> table_core::Error {
    crate::error::decode("the service answered a point read with another entity's keys").with_status(200)
}

/// Reads the body of an insert, update, merge or upsert request (for a server): the entity,
/// and whether it names both keys as strings (a missing or `null` key reads as empty, which
/// Insert Entity must refuse with `PropertiesNeedValue` while updates take the keys from the
/// URL). Every rule of [`decode_entity`] applies, except that an entity with more properties
/// than the service allows is the service's [`Violation::TooManyProperties`], with its true
/// count (the properties past the limit are counted, not kept), as the service answers it.
#[doc(hidden)]
pub fn decode_request_entity(body: &[u8]) -> Result<(Entity, bool)> {
    let scratch = SlotScratch::default();
    let request = RequestFacts::default();
    let seed = EntitySeed {
        etag_header: None,
        slots: &PropertySlots::NONE,
        scratch: &scratch,
        request: Some(&request),
    };
    let read = from_slice(body, seed, "entity");
    if let Some((key, count)) = request.too_many.take() {
        return Err(Violation::TooManyProperties { key, count, max: MAX_PROPERTIES }.into());
    }
    Ok((read?.into_entity(), request.keys_given.get()))
}

/// [`decode_entity`] straight into `T`: the same value and the same error as
/// `T::from_entity(decode_entity(body, etag_header)?)`, read through `T`'s property slots.
pub fn decode_entity_as<T: TableEntity>(body: &[u8], etag_header: Option<&str>) -> Result<T> {
    let scratch = SlotScratch::default();
    let seed =
        DecodeSeed { etag_header, decode: JsonDecoder::<T>::of(), scratch: &scratch, requested: AnyKeys };
    from_slice(body, seed, "entity")?
}

/// Reads the entities of one query page: `{"value":[{entity}, ...]}`.
///
/// A page of more than 1000 entities ([`MAX_PAGE_SIZE`](crate::MAX_PAGE_SIZE), the service's page size) is refused
/// as soon as the 1001st starts, before it is read.
pub fn decode_query_page(body: &[u8]) -> Result<Vec<Entity>> {
    Ok(read_query_page(body, &PropertySlots::NONE)?.into_iter().map(ReadEntity::into_entity).collect())
}

/// [`decode_query_page`], stopping at the entities as read, laid out by `slots` (see
/// [`read_entity`]).
pub fn read_query_page<'b>(body: &'b [u8], slots: &'static PropertySlots) -> Result<Vec<ReadEntity<'b>>> {
    let scratch = SlotScratch::default();
    decode_page(
        body,
        EntitySeed { etag_header: None, slots, scratch: &scratch, request: None },
        0,
        "query page",
    )
}

/// [`decode_query_page`] straight into `T`s: the same values and the same error as decoding
/// the page, then each entity with `T::from_entity`, read through `T`'s property slots. A
/// malformed page fails as a whole before any entity's decoding error is reported.
pub fn decode_query_page_as<T: TableEntity>(body: &[u8]) -> Result<Vec<T>> {
    decode_query_page_each(body, JsonDecoder::<T>::of(), 0)?.into_iter().collect()
}

/// The page's entities, each handed to `decode` as soon as it is read (while it is in
/// cache), its properties laid out by `decode`'s slots. An entity's decoding error waits in
/// its place: the page's own faults fail the call, and the caller's checks of the page can
/// still come before any entity's error.
///
/// `page_size` is the page size asked for: the list is allocated for that many entities at
/// once (at most 1000) instead of growing as they are read. It only sizes the list; a longer
/// page is still read (up to 1000 entities), for the caller's page-size check to refuse.
pub fn decode_query_page_each<T>(
    body: &[u8],
    decode: JsonDecoder<T>,
    page_size: usize,
) -> Result<Vec<Result<T>>> {
    let scratch = SlotScratch::default();
    let seed = DecodeSeed { etag_header: None, decode, scratch: &scratch, requested: AnyKeys };
    decode_page(body, seed, page_size, "query page")
}

/// Reads the table names of a Query Tables page: `{"value":[{"TableName":"t1"}, ...]}`.
///
/// Like [`decode_query_page`], refuses more than 1000 names.
pub fn decode_table_list(body: &[u8]) -> Result<Vec<String>> {
    let list = decode_page(body, PhantomData::<TableEntry>, 0, "table list")?;
    Ok(list.into_iter().map(|t| t.name).collect())
}

/// Reads the table name of a Create Table echo: `{"TableName":"t1", ...}`.
pub fn decode_table(body: &[u8]) -> Result<String> {
    let entry: TableEntry = from_slice(body, PhantomData, "table")?;
    Ok(entry.name)
}

#[derive(Deserialize)]
struct TableEntry {
    #[serde(rename = "TableName")]
    name: String,
}

/// Reads a page with `item` for each element of its `value`, its list allocated for
/// `capacity` items (at most [`MAX_PAGE_ITEMS`]) and grown past that. A page that also carries
/// a service error (`odata.error` or `error`) is that error's [`ErrorKind::Decode`]: taking its
/// (often empty) list as the result would report an empty page for a failed query.
fn decode_page<'de, S: DeserializeSeed<'de> + Clone>(
    body: &'de [u8],
    item: S,
    capacity: usize,
    what: &str,
) -> Result<Vec<S::Value>> {
    let page = from_slice(body, PageSeed { item, capacity }, what)?;
    match (page.error, page.items) {
        (Some(error), _) => Err(error.into_contradiction(what)),
        (None, Some(items)) => Ok(items),
        (None, None) => Err(crate::error::decode(format!("invalid {what} JSON: no `value` array"))),
    }
}

/// Runs `seed` over the whole body, refusing trailing bytes.
///
/// JSON is UTF-8 text (RFC 8259), so the body is checked as text once, as a whole, and then
/// read as a `str`: one pass over the bytes, instead of serde_json checking each string it
/// reads from a byte slice (which profiles put at about 7% of a page's decode). A body with
/// invalid UTF-8 anywhere, even in a member that is skipped, is refused.
fn from_slice<'de, S: DeserializeSeed<'de>>(body: &'de [u8], seed: S, what: &str) -> Result<S::Value> {
    let invalid = || crate::error::decode(format!("invalid {what} JSON"));
    let text = std::str::from_utf8(body).map_err(|e| invalid().with_source(e))?;
    // serde_json stays the reader (issue 11, measured on the captured page): sonic-rs 0.5
    // took 4% off a typed page decode's instructions and reads `-0.0` as `0.0`; simd-json
    // 0.17 walks the page in 12% fewer instructions but needs a mutable copy of the body,
    // from which the entities could not borrow; a safe hand-written lexer was slower.
    let mut de = serde_json::Deserializer::from_str(text);
    seed.deserialize(&mut de).and_then(|v| de.end().map(|()| v)).map_err(|e| invalid().with_source(e))
}

struct EntityBody<'a>(&'a Entity);

impl Serialize for EntityBody<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let entity = self.0;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("PartitionKey", &entity.partition_key)?;
        map.serialize_entry("RowKey", &entity.row_key)?;
        for (name, value) in &entity.properties {
            // Validation refuses these names before a request is built; skipping them here
            // keeps the body free of duplicate keys even if validation was bypassed.
            if RESERVED_PROPERTY_NAMES.contains(&name.as_str()) {
                continue;
            }
            match value {
                Value::String(s) => map.serialize_entry(name, s)?,
                Value::Int32(i) => map.serialize_entry(name, i)?,
                Value::Boolean(b) => map.serialize_entry(name, b)?,
                Value::Int64(i) => annotated(&mut map, name, EdmType::Int64, &AsText(i))?,
                Value::Double(d) if d.is_finite() => annotated(&mut map, name, EdmType::Double, d)?,
                Value::Double(d) => annotated(&mut map, name, EdmType::Double, special_double_text(*d))?,
                Value::DateTime(t) => annotated(&mut map, name, EdmType::DateTime, &format_datetime(*t))?,
                Value::Guid(g) => annotated(&mut map, name, EdmType::Guid, &AsText(g.hyphenated()))?,
                Value::Binary(b) => annotated(&mut map, name, EdmType::Binary, &BASE64.encode(b))?,
            }
        }
        map.end()
    }
}

/// Writes `name@odata.type` then `name`.
fn annotated<M: SerializeMap, T: Serialize + ?Sized>(
    map: &mut M,
    name: &str,
    edm: EdmType,
    value: &T,
) -> std::result::Result<(), M::Error> {
    map.serialize_entry(&AsText(AnnotationName(name)), edm.as_str())?;
    map.serialize_entry(name, value)
}

/// A value serialized as the JSON string of its `Display` text, written straight into the
/// body (no `String` made for it first).
struct AsText<T>(T);

impl<T: fmt::Display> Serialize for AsText<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0)
    }
}

/// The name of a property's type annotation, `name@odata.type`.
struct AnnotationName<'a>(&'a str);

impl fmt::Display for AnnotationName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)?;
        f.write_str(TYPE_ANNOTATION)
    }
}

/// The wire text of a non-finite double.
fn special_double_text(d: f64) -> &'static str {
    if d.is_nan() {
        "NaN"
    } else if d > 0.0 {
        "Infinity"
    } else {
        "-Infinity"
    }
}

/// A JSON string, borrowed from the body when it holds no escapes.
struct Text<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> std::result::Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> std::result::Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        d.deserialize_str(TextVisitor)
    }
}

/// One JSON value of an entity object; objects and arrays are refused by the visitor.
enum Scalar<'de> {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(Cow<'de, str>),
}

impl<'de> Deserialize<'de> for Scalar<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct ScalarVisitor;
        impl<'de> Visitor<'de> for ScalarVisitor {
            type Value = Scalar<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string, number, boolean or null (nested objects and arrays are not allowed)")
            }
            fn visit_unit<E: de::Error>(self) -> std::result::Result<Scalar<'de>, E> {
                Ok(Scalar::Null)
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> std::result::Result<Scalar<'de>, E> {
                Ok(Scalar::Bool(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Scalar<'de>, E> {
                Ok(Scalar::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Scalar<'de>, E> {
                Ok(i64::try_from(v).map_or(Scalar::UInt(v), Scalar::Int))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<Scalar<'de>, E> {
                Ok(Scalar::Float(v))
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> std::result::Result<Scalar<'de>, E> {
                Ok(Scalar::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Scalar<'de>, E> {
                Ok(Scalar::Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> std::result::Result<Scalar<'de>, E> {
                Ok(Scalar::Str(Cow::Owned(v)))
            }
        }
        d.deserialize_any(ScalarVisitor)
    }
}

impl Scalar<'_> {
    fn describe(&self) -> &'static str {
        match self {
            Scalar::Null => "null",
            Scalar::Bool(_) => "a boolean",
            Scalar::Int(_) | Scalar::UInt(_) => "an integer",
            Scalar::Float(_) => "a number",
            Scalar::Str(_) => "a string",
        }
    }
}

/// Reads the value of the type annotation `key`: the EDM type it names. Read as bytes, matched
/// against the eight names (ASCII), so that it need not be checked to be UTF-8 first; not a
/// string or naming no type, it is refused.
struct AnnotationSeed<'k> {
    key: &'k str,
}

impl<'de> DeserializeSeed<'de> for AnnotationSeed<'_> {
    type Value = EdmType;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<EdmType, D::Error> {
        d.deserialize_bytes(self)
    }
}

impl<'de> Visitor<'de> for AnnotationSeed<'_> {
    type Value = EdmType;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "annotation {:?} to be a string naming an Edm type", self.key)
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> std::result::Result<EdmType, E> {
        EdmType::from_annotation_bytes(v).ok_or_else(|| {
            let text = String::from_utf8_lossy(v);
            E::custom(format!("annotation {:?} names the unknown type {text:?}", self.key))
        })
    }
}

/// Reads one entity object; `etag_header` is the fallback ETag, `slots` where the properties
/// of the type read for go.
#[derive(Clone, Copy)]
struct EntitySeed<'h, 'de> {
    etag_header: Option<&'h str>,
    slots: &'static PropertySlots,
    scratch: &'h SlotScratch<'de>,
    /// A request's entity: told what [`decode_request_entity`] reports beside the entity.
    request: Option<&'h RequestFacts>,
}

/// What a request's entity object tells its reader beside the entity.
#[derive(Default)]
struct RequestFacts {
    /// Whether the object names both keys as strings.
    keys_given: Cell<bool>,
    /// Set when the object has more properties than an entity can: its keys as text and its
    /// property count, system properties included.
    too_many: Cell<Option<(String, usize)>>,
}

/// The buffers each entity of a page reads into in turn, so that a typed read allocates them
/// once per page, not once per entity. Each is taken out while an entity is read (entities do
/// not nest) and put back once it is read (the slotted values: once they are decoded).
#[derive(Default)]
struct SlotScratch<'de> {
    /// The members met for each slot.
    members: Cell<Vec<SlotMembers<'de>>>,
    /// The typed value of each slot, as the entity's `PropertyList` holds them.
    values: Cell<Vec<Option<Value>>>,
}

impl<'de> DeserializeSeed<'de> for EntitySeed<'_, 'de> {
    type Value = ReadEntity<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Self::Value, D::Error> {
        ObjectSeed(self).deserialize(d).map(BodyEntity::into_read_entity)
    }
}

/// [`EntitySeed`], stopping at the entity as read from the body ([`BodyEntity`]).
struct ObjectSeed<'h, 'de>(EntitySeed<'h, 'de>);

impl<'de> DeserializeSeed<'de> for ObjectSeed<'_, 'de> {
    type Value = BodyEntity<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ObjectSeed<'_, 'de> {
    type Value = BodyEntity<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an entity object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Self::Value, A::Error> {
        let ObjectSeed(seed) = self;
        let mut slotted = seed.scratch.members.take();
        let mut raw = RawEntity::new(seed.slots, &mut slotted, seed.scratch.values.take());
        if seed.request.is_some() {
            raw.past_limit = Some(PastLimit::default());
        }
        while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
            let accepted = if key.ends_with(TYPE_ANNOTATION) {
                let edm = map.next_value_seed(AnnotationSeed { key: &key })?;
                raw.annotate(key, edm)
            } else {
                raw.accept(key, map.next_value::<Scalar<'de>>()?)
            };
            accepted.map_err(de::Error::custom)?;
        }
        if let Some(request) = seed.request {
            request
                .keys_given
                .set(matches!((&raw.partition_key, &raw.row_key), (Some(Some(_)), Some(Some(_)))));
            if let Some(past) = raw.past_limit.as_ref().filter(|past| past.properties > 0) {
                let key_text =
                    |key: &Option<Option<Cow<'de, str>>>| key.clone().flatten().unwrap_or_default();
                let key = EntityKey::new(key_text(&raw.partition_key), key_text(&raw.row_key)).to_string();
                let count = MAX_PROPERTIES + past.properties;
                request.too_many.set(Some((key, count)));
                return Err(de::Error::custom(format!("the entity has {count} properties")));
            }
            if raw.past_limit.as_ref().is_some_and(|past| past.annotations) {
                return Err(de::Error::custom(too_many_annotations()));
            }
        }
        let read = raw.finish(seed.etag_header).map_err(de::Error::custom);
        seed.scratch.members.set(slotted);
        read
    }
}

/// A type's decoder as this module reads it: table-core's [`Decoder`] (which the engine reads
/// by, and parts handed over, e.g. a decrypted entity's, are decoded by) and, for a type that
/// reads through a reader, `TableEntity::read_through` compiled for this module's reader
/// (`BodyEntity`, which table-core cannot name), so that its takes inline into the type's field
/// reads, as the engine's row reader's do. Plain data, `Copy` whatever it decodes into.
pub struct JsonDecoder<T> {
    decoder: Decoder<T>,
    /// `read_through` compiled for the JSON reader; `None` asks for parts.
    read_body: Option<ReadBody<T>>,
}

/// A decoder through the JSON reader.
type ReadBody<T> = for<'de> fn(&mut BodyEntity<'de>) -> Result<T>;

impl<T> JsonDecoder<T> {
    /// A decoder from parts alone (see [`Decoder::new`]).
    pub const fn new(
        slots: &'static PropertySlots,
        from_parts: for<'a> fn(ReadEntity<'a>) -> Result<T>,
    ) -> Self {
        JsonDecoder { decoder: Decoder::new(slots, from_parts), read_body: None }
    }

    /// table-core's decoder: for the engine, and for an entity handed over as parts.
    pub fn decoder(&self) -> Decoder<T> {
        self.decoder
    }
}

impl<T: TableEntity> JsonDecoder<T> {
    /// `T`'s own decoder: straight through the JSON reader or the engine's row, else through
    /// `T`'s property slots.
    pub const fn of() -> Self {
        JsonDecoder { decoder: Decoder::of(), read_body: Some(read_body::<T>) }
    }
}

impl JsonDecoder<Entity> {
    /// The generic decoder (see [`Decoder::ENTITY`]).
    pub const ENTITY: Self = JsonDecoder { decoder: Decoder::ENTITY, read_body: None };
}

/// `T::read_through` as a function of the JSON reader of any lifetime, which
/// `T::read_through::<BodyEntity<'de>>` cannot be (it fixes the lifetime).
fn read_body<T: TableEntity>(entity: &mut BodyEntity<'_>) -> Result<T> {
    T::read_through(entity)
}

// Derived, they would demand `T: Clone`.
impl<T> Clone for JsonDecoder<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for JsonDecoder<T> {}

impl<T> fmt::Debug for JsonDecoder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsonDecoder").field("decoder", &self.decoder).finish_non_exhaustive()
    }
}

/// Reads one entity object through the decoder's property slots and decodes it at once,
/// while it is fresh in the cache. A decoding error (or, for a point read, the entity's keys
/// not being those asked for) is this seed's value, not its failure: it waits while the rest
/// of the page is read, so that the page's own faults are reported first.
struct DecodeSeed<'h, 'de, T, K> {
    etag_header: Option<&'h str>,
    decode: JsonDecoder<T>,
    scratch: &'h SlotScratch<'de>,
    /// The entities it reads: any ([`AnyKeys`], a page's), or a point read's, whose keys are
    /// compared once the object is read, before it is decoded.
    requested: K,
}

/// The entities a read takes, told by their keys.
trait KeyFilter: Copy {
    /// Whether `entity` is one of them.
    fn accepts(&self, entity: &BodyEntity<'_>) -> bool;
}

/// Any entity: a page's, or one read without naming it. A type of its own, not an `Option`
/// of [`RequestedKeys`], so that a page's reads compile to no check at all (4 instructions per
/// entity otherwise, of a typed page row's 16,260).
#[derive(Clone, Copy)]
struct AnyKeys;

impl KeyFilter for AnyKeys {
    fn accepts(&self, _: &BodyEntity<'_>) -> bool {
        true
    }
}

/// The keys a point read asked for.
#[derive(Clone, Copy)]
struct RequestedKeys<'h> {
    partition_key: &'h str,
    row_key: &'h str,
}

impl KeyFilter for RequestedKeys<'_> {
    fn accepts(&self, entity: &BodyEntity<'_>) -> bool {
        *entity.partition_key == *self.partition_key && *entity.row_key == *self.row_key
    }
}

// Derived, they would demand `T: Clone`.
impl<T, K: Copy> Clone for DecodeSeed<'_, '_, T, K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T, K: Copy> Copy for DecodeSeed<'_, '_, T, K> {}

impl<'de, T, K: KeyFilter> DeserializeSeed<'de> for DecodeSeed<'_, 'de, T, K> {
    type Value = Result<T>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Self::Value, D::Error> {
        let JsonDecoder { decoder, read_body } = self.decode;
        let read = EntitySeed {
            etag_header: self.etag_header,
            slots: decoder.slots(),
            scratch: self.scratch,
            request: None,
        };
        let mut entity = ObjectSeed(read).deserialize(d)?;
        // A point read names its entity: an answer about another one cannot be trusted.
        if !self.requested.accepts(&entity) {
            return Ok(Err(another_entity()));
        }
        // A decoder that reads through a reader reads the entity where it lies: keys, ETag and
        // names borrowed from the body, so a type that keeps none of them copies none.
        let Some(read_body) = read_body else {
            return Ok(decoder.decode(entity.into_read_entity()));
        };
        let value = read_body(&mut entity);
        self.scratch.values.set(entity.properties.into_slot_buffer());
        Ok(value)
    }
}

/// An entity object as read and checked (every rule of the module), before it is handed
/// over: keys, ETag and unslotted names still borrowed from the body where they hold no
/// escapes. [`into_read_entity`](Self::into_read_entity) hands it over as parts; a decoder
/// with a reader reads it in place ([`EntityReader`]), taking only what its type keeps.
#[derive(Default)]
struct BodyEntity<'de> {
    partition_key: Cow<'de, str>,
    row_key: Cow<'de, str>,
    timestamp: Option<DateTime<Utc>>,
    /// Checked by [`check_received_etag`]; made an [`ETag`] only when taken.
    etag: Option<Cow<'de, str>>,
    properties: PropertyList<'de>,
}

impl<'de> BodyEntity<'de> {
    /// The entity as parts, keys and ETag owned.
    fn into_read_entity(self) -> ReadEntity<'de> {
        let BodyEntity { partition_key, row_key, timestamp, etag, properties } = self;
        ReadEntity {
            partition_key: partition_key.into_owned(),
            row_key: row_key.into_owned(),
            timestamp,
            etag: etag.map(|e| ETag::new(e.into_owned())),
            properties,
        }
    }
}

impl EntityReader for BodyEntity<'_> {
    fn partition_key(&self) -> &str {
        &self.partition_key
    }

    fn row_key(&self) -> &str {
        &self.row_key
    }

    fn timestamp(&self) -> Option<DateTime<Utc>> {
        self.timestamp
    }

    fn take_etag(&mut self) -> Option<ETag> {
        self.etag.take().map(|e| ETag::new(e.into_owned()))
    }

    fn take(&mut self, name: &str) -> Option<Value> {
        PropertyBag::take(&mut self.properties, name)
    }

    // Inlined, with the list's take by slot, into a derived decoder compiled for this reader
    // (`JsonDecoder::of`, in the type's crate): a call per field otherwise, whose answer the
    // field must match again (callgrind: about 100 instructions of a typed page row's 16,354).
    #[inline]
    fn take_slot(&mut self, slots: &PropertySlots, slot: usize, name: &str) -> Option<Value> {
        self.properties.take_slot(slots, slot, name)
    }

    fn take_partition_key(&mut self) -> Cow<'_, str> {
        std::mem::take(&mut self.partition_key)
    }

    fn take_row_key(&mut self) -> Cow<'_, str> {
        std::mem::take(&mut self.row_key)
    }

    fn peek(&self, name: &str) -> Option<Value> {
        self.properties.peek(name).cloned()
    }

    fn take_entity(&mut self) -> Entity {
        std::mem::take(self).into_read_entity().into_entity()
    }
}

/// The members of an entity object as read, before annotations are applied. A member that
/// may appear once is an `Option` that is `Some` once seen (holding `None` for a `null`).
struct RawEntity<'s, 'de> {
    partition_key: Option<Option<Cow<'de, str>>>,
    row_key: Option<Option<Cow<'de, str>>>,
    timestamp: Option<Option<Cow<'de, str>>>,
    /// The `odata.etag` member, checked.
    etag: Option<Cow<'de, str>>,
    /// Where the properties of the type read for go.
    slots: &'static PropertySlots,
    /// One per slot of `slots` (a page's [`SlotScratch`]).
    slotted: &'s mut Vec<SlotMembers<'de>>,
    /// Where the typed values of the slots go once read (a page's [`SlotScratch`]).
    slot_values: Vec<Option<Value>>,
    /// The properties without a slot, as met.
    values: Vec<(Cow<'de, str>, Scalar<'de>)>,
    /// The annotations of names without a slot, as met.
    annotations: Vec<(Cow<'de, str>, EdmType)>,
    /// Properties met, slotted or not (the limit counts them all).
    value_count: usize,
    /// Type annotations met, slotted or not.
    annotation_count: usize,
    /// Whether a slot's value or annotation was met twice.
    slot_repeated: bool,
    /// For a request's entity, what lies past the limits (counted to the end of the object, so
    /// that the error can give the true count); otherwise `None`: the first member past a
    /// limit fails the read.
    past_limit: Option<PastLimit>,
}

/// The members of a request's entity past the limits: not kept, so memory stays bounded.
#[derive(Default)]
struct PastLimit {
    /// Custom properties past [`MAX_CUSTOM_PROPERTIES`].
    properties: usize,
    /// Whether there are type annotations past [`MAX_PROPERTIES`]: an error only if the
    /// properties are within their limit (else they may annotate the properties past it).
    annotations: bool,
}

/// The error of an entity object with more type annotations than an entity can have.
fn too_many_annotations() -> String {
    format!("the entity has more than {MAX_PROPERTIES} type annotations")
}

/// The members met for one slot's property.
#[derive(Default)]
struct SlotMembers<'de> {
    value: Option<Scalar<'de>>,
    annotation: Option<EdmType>,
    value_repeated: bool,
    annotation_repeated: bool,
}

/// A fault found once the object is read: the property it concerns, and the message.
type Fault = (String, String);

/// Properties without a slot, typed, in name order (as `PropertyList` takes them).
type Listed<'de> = Vec<(Cow<'de, str>, Option<Value>)>;

impl<'s, 'de> RawEntity<'s, 'de> {
    /// An entity about to be read, its slots' members in `slotted` (emptied first), their
    /// typed values to go in `slot_values` (emptied first).
    fn new(
        slots: &'static PropertySlots,
        slotted: &'s mut Vec<SlotMembers<'de>>,
        mut slot_values: Vec<Option<Value>>,
    ) -> Self {
        slotted.clear();
        slotted.resize_with(slots.names.len(), SlotMembers::default);
        slot_values.clear();
        RawEntity {
            partition_key: None,
            row_key: None,
            timestamp: None,
            etag: None,
            slots,
            slotted,
            slot_values,
            // Sized for a typical untyped entity, so that reading one does not grow the lists
            // member by member; a typed read rarely meets a property without a slot.
            values: Vec::with_capacity(if slots.names.is_empty() { 16 } else { 0 }),
            annotations: Vec::with_capacity(if slots.names.is_empty() { 8 } else { 0 }),
            value_count: 0,
            annotation_count: 0,
            slot_repeated: false,
            past_limit: None,
        }
    }

    /// The members met so far for `name`'s slot, if it has one.
    fn slot(&mut self, name: &str) -> Option<&mut SlotMembers<'de>> {
        // Untyped reads have no slots: they skip the lookup.
        if self.slotted.is_empty() {
            return None;
        }
        (self.slots.slot)(name).and_then(|i| self.slotted.get_mut(i))
    }

    /// Takes the type annotation `key` (a name ending in [`TYPE_ANNOTATION`]) naming `edm`.
    fn annotate(&mut self, key: Cow<'de, str>, edm: EdmType) -> std::result::Result<(), String> {
        if self.annotation_count == MAX_PROPERTIES {
            return match &mut self.past_limit {
                Some(past) => {
                    past.annotations = true;
                    Ok(())
                }
                None => Err(too_many_annotations()),
            };
        }
        self.annotation_count += 1;
        let base_len = key.len() - TYPE_ANNOTATION.len();
        if let Some(slot) = self.slot(&key[..base_len]) {
            slot.annotation_repeated |= slot.annotation.replace(edm).is_some();
            self.slot_repeated |= slot.annotation_repeated;
            return Ok(());
        }
        // Kept also for the system properties, whose types are fixed, so that a repeated
        // annotation is found for every name.
        let base = match key {
            Cow::Borrowed(k) => Cow::Borrowed(&k[..base_len]),
            Cow::Owned(mut k) => {
                k.truncate(base_len);
                Cow::Owned(k)
            }
        };
        self.annotations.push((base, edm));
        Ok(())
    }

    /// Takes the member `key` (not a type annotation) of value `value`.
    fn accept(&mut self, key: Cow<'de, str>, value: Scalar<'de>) -> std::result::Result<(), String> {
        match &*key {
            "PartitionKey" => {
                return once(&mut self.partition_key, key_text("PartitionKey", value)?, "PartitionKey");
            }
            "RowKey" => return once(&mut self.row_key, key_text("RowKey", value)?, "RowKey"),
            "Timestamp" => {
                let text = match value {
                    Scalar::Null => None,
                    Scalar::Str(t) => Some(t),
                    other => return Err(format!("Timestamp is {}, not a string", other.describe())),
                };
                return once(&mut self.timestamp, text, "Timestamp");
            }
            "odata.etag" => {
                return match value {
                    Scalar::Str(t) => {
                        check_received_etag(&t).map_err(|e| format!("odata.etag: {}", e.message()))?;
                        once(&mut self.etag, t, "odata.etag")
                    }
                    other => Err(format!("odata.etag is {}, not a string", other.describe())),
                };
            }
            // An error answered as a success would otherwise read as an entity without keys.
            "odata.error" => return Err("the entity object carries a service error (odata.error)".to_owned()),
            _ => {}
        }
        // A slot's name is a property name, an identifier (see `PropertySlots`), so none of the
        // members above or below: the type's own properties go to their slots at once.
        if let Some(slot) = self.slot(&key) {
            // A repeat is reported once the object is read, in name order with the others.
            slot.value_repeated |= slot.value.replace(value).is_some();
            self.slot_repeated |= slot.value_repeated;
            return self.count_property().map(drop);
        }
        // Control information (`odata.metadata`, `odata.id`, ...) and annotations other than
        // the type describe the response, not the entity.
        // (Looking for `@` first spares most names the substring search.)
        if key.starts_with("odata.") || (key.as_bytes().contains(&b'@') && key.contains("@odata.")) {
            return Ok(());
        }
        if self.count_property()? {
            self.values.push((key, value));
        }
        Ok(())
    }

    /// Counts one more custom property: whether to keep it. Past the most an entity can have,
    /// a request's property is counted and not kept (see `past_limit`); any other is refused.
    fn count_property(&mut self) -> std::result::Result<bool, String> {
        if self.value_count < MAX_CUSTOM_PROPERTIES {
            self.value_count += 1;
            return Ok(true);
        }
        match &mut self.past_limit {
            Some(past) => {
                past.properties += 1;
                Ok(false)
            }
            None => Err(format!("the entity has more than {MAX_CUSTOM_PROPERTIES} properties")),
        }
    }

    /// Applies the annotations: the entity as read, for [`ReadEntity::into_entity`] or a typed
    /// decoder.
    ///
    /// Faults are checked in this order, each reporting the smallest property name at fault
    /// (in a slot or not, so that slots never change the error): a repeated annotation, a
    /// repeated property, a value its annotation or JSON type refuses, then `Timestamp` and
    /// the ETag header.
    fn finish(mut self, etag_header: Option<&str>) -> std::result::Result<BodyEntity<'de>, String> {
        self.annotations.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let slot_fault = |repeated: fn(&SlotMembers<'_>) -> bool, what: &str| {
            // Most objects repeat nothing: their slots need no second look.
            if !self.slot_repeated {
                return None;
            }
            let at = self.slotted.iter().position(repeated)?;
            let name = self.slots.names.get(at)?;
            Some(((*name).to_owned(), format!("property {name:?} {what}")))
        };
        let annotated_twice = slot_fault(|s| s.annotation_repeated, "is annotated twice");
        if let Some(message) = first_fault(repeated(&self.annotations, "is annotated twice"), annotated_twice)
        {
            return Err(message);
        }
        // Sorted first, so a repeated name is found even when one of its values is `null`, and
        // the list below is sorted, as `PropertyList` requires.
        self.values.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let appears_twice = slot_fault(|s| s.value_repeated, "appears twice");
        if let Some(message) = first_fault(repeated(&self.values, "appears twice"), appears_twice) {
            return Err(message);
        }
        let (entries, listed_fault) = listed_values(self.values, &self.annotations);
        let mut slotted = std::mem::take(&mut self.slot_values);
        let slotted_fault = slotted_values(self.slots, self.slotted.drain(..), &mut slotted);
        if let Some(message) = first_fault(listed_fault, slotted_fault) {
            return Err(message);
        }
        let timestamp_text = self.timestamp.flatten();
        let timestamp = match &timestamp_text {
            Some(text) => Some(edm_datetime(text).map_err(|e| format!("Timestamp: {e}"))?),
            None => None,
        };
        let etag = match (self.etag, etag_header, &timestamp_text) {
            (Some(e), _, _) => Some(e),
            (None, Some(h), _) => {
                check_received_etag(h).map_err(|e| format!("ETag header: {}", e.message()))?;
                Some(Cow::Owned(h.to_owned()))
            }
            (None, None, Some(t)) => Some(Cow::Owned(format!("W/\"datetime'{}'\"", t.replace(':', "%3A")))),
            (None, None, None) => None,
        };
        Ok(BodyEntity {
            partition_key: self.partition_key.flatten().unwrap_or_default(),
            row_key: self.row_key.flatten().unwrap_or_default(),
            timestamp,
            etag,
            properties: PropertyList::from_slots(self.slots, slotted, entries)
                .ok_or_else(|| "properties out of order after sorting".to_owned())?,
        })
    }
}

/// The fault of a name that appears twice in `sorted` (the smallest such name).
fn repeated<T>(sorted: &[(Cow<'_, str>, T)], what: &str) -> Option<Fault> {
    let w = sorted.windows(2).find(|w| w[0].0 == w[1].0)?;
    Some((w[0].0.to_string(), format!("property {:?} {what}", w[0].0)))
}

/// The message of the fault with the smaller property name, in the list or in a slot.
fn first_fault(listed: Option<Fault>, slotted: Option<Fault>) -> Option<String> {
    match (listed, slotted) {
        (Some((a, first)), Some((b, second))) => Some(if a < b { first } else { second }),
        (Some((_, message)), None) | (None, Some((_, message))) => Some(message),
        (None, None) => None,
    }
}

/// The typed values of the properties without a slot, given sorted by name with their
/// annotations (also sorted); `null`s are left out. Stops at the first fault.
fn listed_values<'de>(
    values: Vec<(Cow<'de, str>, Scalar<'de>)>,
    annotations: &[(Cow<'de, str>, EdmType)],
) -> (Listed<'de>, Option<Fault>) {
    // Both sorted by name: each value's annotation is found by walking the two together, one
    // search for both lists instead of one per property.
    let mut next = 0;
    let mut entries = Vec::with_capacity(values.len());
    for (name, scalar) in values {
        // Annotations of names without a value (system properties) are passed over.
        while annotations.get(next).is_some_and(|(n, _)| *n < name) {
            next += 1;
        }
        let annotation = annotations.get(next).filter(|(n, _)| *n == name).map(|(_, t)| *t);
        match property_value(&name, scalar, annotation) {
            Ok(Some(value)) => entries.push((name, Some(value))),
            Ok(None) => {}
            Err(message) => return (entries, Some((name.into_owned(), message))),
        }
    }
    (entries, None)
}

/// Pushes onto `values` the typed value of each slot's property (`None` when absent or
/// `null`), in slot order, which is name order. Stops at the first fault.
fn slotted_values<'de>(
    slots: &PropertySlots,
    members: impl ExactSizeIterator<Item = SlotMembers<'de>>,
    values: &mut Vec<Option<Value>>,
) -> Option<Fault> {
    values.reserve(members.len());
    for (name, slot) in slots.names.iter().zip(members) {
        let value = match slot.value {
            Some(scalar) => property_value(name, scalar, slot.annotation),
            None => Ok(None),
        };
        match value {
            Ok(value) => values.push(value),
            Err(message) => return Some(((*name).to_owned(), message)),
        }
    }
    None
}

/// Stores the value of a member that may appear only once in an entity object.
fn once<T>(slot: &mut Option<T>, value: T, name: &str) -> std::result::Result<(), String> {
    if slot.is_some() {
        return Err(format!("{name} appears twice"));
    }
    *slot = Some(value);
    Ok(())
}

/// The instants an `Edm.DateTime` may hold, built once: every entity read checks its
/// `Timestamp` against them, and building them costs a calendar conversion each.
static EDM_DATETIME_RANGE: LazyLock<RangeInclusive<DateTime<Utc>>> =
    LazyLock::new(|| min_datetime()..=max_datetime());

/// An `Edm.DateTime` text (a property or `Timestamp`): the service's form and range only.
fn edm_datetime(text: &str) -> std::result::Result<DateTime<Utc>, String> {
    let t = parse_datetime(text).map_err(|e| e.to_string())?;
    if !EDM_DATETIME_RANGE.contains(&t) {
        return Err(format!("{text:?} is outside the Edm.DateTime range 1601-01-01 to 9999-12-31"));
    }
    Ok(t)
}

/// A key member: a string, or absent when `null` (not selected).
fn key_text<'de>(name: &str, value: Scalar<'de>) -> std::result::Result<Option<Cow<'de, str>>, String> {
    match value {
        Scalar::Null => Ok(None),
        Scalar::Str(s) => Ok(Some(s)),
        other => Err(format!("{name} is {}, not a string", other.describe())),
    }
}

/// The typed value of one property; `None` for `null` (absent).
fn property_value(
    name: &str,
    scalar: Scalar<'_>,
    annotation: Option<EdmType>,
) -> std::result::Result<Option<Value>, String> {
    let mismatch = |s: &Scalar<'_>, t: EdmType| format!("property {name:?}: {t} cannot be {}", s.describe());
    let value = match (annotation, scalar) {
        (_, Scalar::Null) => return Ok(None),
        (None | Some(EdmType::String), Scalar::Str(s)) => Value::String(s.into_owned()),
        (None | Some(EdmType::Boolean), Scalar::Bool(b)) => Value::Boolean(b),
        (None, Scalar::Int(i)) => i32::try_from(i).map_or(Value::Int64(i), Value::Int32),
        (None | Some(EdmType::Double), Scalar::Float(f)) => Value::Double(f),
        (Some(EdmType::Int32), Scalar::Int(i)) => Value::Int32(
            i32::try_from(i).map_err(|_| format!("property {name:?}: {i} is outside Edm.Int32"))?,
        ),
        (Some(EdmType::Int64), Scalar::Int(i)) => Value::Int64(i),
        (Some(EdmType::Int64), Scalar::Str(s)) => {
            Value::Int64(s.parse().map_err(|_| format!("property {name:?}: {s:?} is not an Edm.Int64"))?)
        }
        // i64 -> f64 may round, as any JSON reader does for a large double without a fraction.
        (Some(EdmType::Double), Scalar::Int(i)) => Value::Double(i as f64),
        (Some(EdmType::Double), Scalar::UInt(u)) => Value::Double(u as f64),
        (Some(EdmType::Double), Scalar::Str(s)) => Value::Double(match &*s {
            "NaN" => f64::NAN,
            "Infinity" => f64::INFINITY,
            "-Infinity" => f64::NEG_INFINITY,
            _ => return Err(format!("property {name:?}: {s:?} is not an Edm.Double")),
        }),
        (Some(EdmType::DateTime), Scalar::Str(s)) => {
            Value::DateTime(edm_datetime(&s).map_err(|e| format!("property {name:?}: {e}"))?)
        }
        (Some(EdmType::Guid), Scalar::Str(s)) => Value::Guid(
            parse_guid(&s).ok_or_else(|| format!("property {name:?}: {s:?} is not a hyphenated Edm.Guid"))?,
        ),
        (Some(EdmType::Binary), Scalar::Str(s)) => Value::Binary(
            BASE64
                .decode(s.as_bytes())
                .map_err(|_| format!("property {name:?}: {s:?} is not base64 for Edm.Binary"))?,
        ),
        (None, Scalar::UInt(u)) => {
            return Err(format!("property {name:?}: {u} is outside Edm.Int64"));
        }
        (Some(t), s) => return Err(mismatch(&s, t)),
    };
    Ok(Some(value))
}

/// Reads `{"value":[...], ...}`, keeping a service error member and ignoring the others;
/// each element of `value` is read with a copy of the seed, into a list allocated for
/// `capacity` elements (see [`ItemList`]).
struct PageSeed<S> {
    item: S,
    capacity: usize,
}

/// The members of a page object that matter.
struct PageBody<T> {
    items: Option<Vec<T>>,
    error: Option<ErrorMember>,
}

impl<'de, S: DeserializeSeed<'de> + Clone> DeserializeSeed<'de> for PageSeed<S> {
    type Value = PageBody<S::Value>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, S: DeserializeSeed<'de> + Clone> Visitor<'de> for PageSeed<S> {
    type Value = PageBody<S::Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a result object with a `value` array")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Self::Value, A::Error> {
        let mut page = PageBody { items: None, error: None };
        while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
            match &*key {
                "value" if page.items.is_some() => return Err(de::Error::duplicate_field("value")),
                "value" => {
                    let list = ItemList { item: self.item.clone(), capacity: self.capacity };
                    page.items = Some(map.next_value_seed(list)?);
                }
                "odata.error" | "error" if page.error.is_some() => {
                    return Err(de::Error::duplicate_field("error"));
                }
                "odata.error" | "error" => page.error = Some(map.next_value()?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(page)
    }
}

/// Reads the `value` array of a page, at most [`MAX_PAGE_ITEMS`] elements, into a list
/// allocated for `capacity` of them (the page size asked for, when the reader knows it), so a
/// full page of large items is not moved through every doubling of its list.
struct ItemList<S> {
    item: S,
    capacity: usize,
}

impl<'de, S: DeserializeSeed<'de> + Clone> DeserializeSeed<'de> for ItemList<S> {
    type Value = Vec<S::Value>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, S: DeserializeSeed<'de> + Clone> Visitor<'de> for ItemList<S> {
    type Value = Vec<S::Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of at most 1000 items")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Self::Value, A::Error> {
        // A hint from the body is capped so a hostile one cannot reserve gigabytes.
        let capacity = seq.size_hint().unwrap_or(0).max(self.capacity).min(MAX_PAGE_ITEMS);
        let mut items = Vec::with_capacity(capacity);
        while let Some(item) = seq.next_element_seed(self.item.clone())? {
            // Checked before another element is read: a page of millions of `{}` stops here.
            if items.len() == MAX_PAGE_ITEMS {
                return Err(de::Error::custom(format!("the page holds more than {MAX_PAGE_ITEMS} items")));
            }
            items.push(item);
        }
        Ok(items)
    }
}

#[cfg(test)]
mod tests {
    use table_core::ErrorKind;

    use super::*;

    /// Reads `body` as one entity object, stopping where a typed decoder reads it.
    fn read_in_place<'b>(body: &'b str, scratch: &SlotScratch<'b>) -> BodyEntity<'b> {
        let seed = EntitySeed { etag_header: None, slots: &PropertySlots::NONE, scratch, request: None };
        from_slice(body.as_bytes(), ObjectSeed(seed), "entity").unwrap()
    }

    /// An entity object of keys `p`/`r` with `count` Int64 properties (each annotated), and
    /// `stray` more annotations of names it does not have.
    fn wide_body(count: usize, stray: usize) -> String {
        let properties = (0..count).map(|i| format!(r#","n{i}":"{i}","n{i}@odata.type":"Edm.Int64""#));
        let strays = (0..stray).map(|i| format!(r#","s{i}@odata.type":"Edm.Int64""#));
        format!(r#"{{"PartitionKey":"p","RowKey":"r"{}}}"#, properties.chain(strays).collect::<String>())
    }

    #[test]
    fn a_request_past_the_property_limit_is_too_many_properties_with_its_true_count() {
        let (entity, keys_given) = decode_request_entity(wide_body(252, 0).as_bytes()).unwrap();
        assert_eq!((entity.properties.len(), keys_given), (252, true));
        for (custom, count) in [(253, 256), (300, 303), (2000, 2003)] {
            let error = decode_request_entity(wide_body(custom, 0).as_bytes()).unwrap_err();
            match error.violation() {
                Some(Violation::TooManyProperties { key, count: told, max: MAX_PROPERTIES }) => {
                    assert_eq!((key.as_str(), *told), (EntityKey::new("p", "r").to_string().as_str(), count));
                }
                other => panic!("{custom} properties: {other:?} ({error})"),
            }
            // A response is not a request: its reader stops at the first property too many.
            let error = decode_entity(wide_body(custom, 0).as_bytes(), None).unwrap_err();
            assert_eq!(error.kind(), ErrorKind::Decode, "{error}");
        }
    }

    #[test]
    fn a_request_with_annotations_past_their_limit_is_refused_as_a_response_is() {
        // 252 properties, within their limit, and 256 annotations, past theirs.
        let body = wide_body(252, 4);
        for error in [
            decode_request_entity(body.as_bytes()).unwrap_err(),
            decode_entity(body.as_bytes(), None).unwrap_err(),
        ] {
            assert_eq!(error.kind(), ErrorKind::Decode, "{error}");
            let why = std::error::Error::source(&error).map(ToString::to_string).unwrap_or_default();
            assert!(why.contains("type annotations"), "{why}");
        }
    }

    /// A type whose decoder answers the type of the reader it was compiled for.
    #[derive(Debug, PartialEq)]
    struct ReaderType(&'static str);

    impl TableEntity for ReaderType {
        fn to_entity(&self) -> Result<Entity> {
            Ok(Entity::new("p", "r"))
        }

        fn from_entity(_: Entity) -> Result<Self> {
            Ok(ReaderType("Entity"))
        }

        fn read_through<R: EntityReader + ?Sized>(_: &mut R) -> Result<Self> {
            Ok(ReaderType(std::any::type_name::<R>()))
        }

        fn partition_key(&self) -> Result<String> {
            Ok("p".to_owned())
        }

        fn row_key(&self) -> Result<String> {
            Ok("r".to_owned())
        }
    }

    #[test]
    fn a_typed_read_of_a_body_runs_the_decoder_compiled_for_the_json_reader() {
        // Not `from_parts` (keys copied to hand the parts over), nor a decoder compiled for
        // another reader type (a call per take).
        let expected = ReaderType(std::any::type_name::<BodyEntity<'_>>());
        let entity = br#"{"PartitionKey":"p","RowKey":"r"}"#;
        assert_eq!(decode_entity_as::<ReaderType>(entity, None).unwrap(), expected);
        let point_read = decode_point_read(entity, None, "p", "r", JsonDecoder::<ReaderType>::of());
        assert_eq!(point_read.unwrap(), expected);
        let page = br#"{"value":[{"PartitionKey":"p","RowKey":"r"}]}"#;
        assert_eq!(decode_query_page_as::<ReaderType>(page).unwrap(), [expected]);
    }

    #[test]
    fn an_entity_read_in_place_lends_its_keys_and_etag_from_the_body() {
        let body = r#"{"odata.etag":"W/'x'","PartitionKey":"p","RowKey":"r","Name":"n"}"#;
        let scratch = SlotScratch::default();
        let mut read = read_in_place(body, &scratch);
        assert!(matches!(read.partition_key, Cow::Borrowed("p")), "the PartitionKey is copied");
        assert!(matches!(read.row_key, Cow::Borrowed("r")), "the RowKey is copied");
        assert!(matches!(read.etag, Some(Cow::Borrowed("W/'x'"))), "the ETag is copied");
        // Taken, the ETag is made whole; the keys are handed over as they are.
        assert_eq!(read.take_etag().map(|e| e.as_str().to_owned()).as_deref(), Some("W/'x'"));
        assert!(matches!(read.take_partition_key(), Cow::Borrowed("p")));
        // Escaped text cannot be lent (the service's ETags escape their quotes): it is
        // unescaped into a string of its own.
        let read =
            read_in_place(r#"{"odata.etag":"W/\"x\"","PartitionKey":"p\u0041","RowKey":"r"}"#, &scratch);
        assert_eq!((read.partition_key.as_ref(), read.etag.as_deref()), ("pA", Some("W/\"x\"")));
    }
}
