//! JSON answers (protocol doc sections 4.1 and 4.3): entities, query pages and table lists in
//! the three metadata levels.
//!
//! These are the service's response forms, which the client only reads; its request form
//! (`table_client::wire::encode_entity`) annotates every type that is not String, Int32 or
//! Boolean, while an answer annotates only what JSON cannot carry: Int64, DateTime, Guid,
//! Binary and the non-finite Doubles, and nothing at all in `nometadata`. A finite Double is a
//! JSON number with a fraction (`3.0`), so readers type it Double without an annotation.
//!
//! Answers are written front to back into one buffer that becomes the response body: a query
//! page straight from the engine's stored rows ([`RowView`]), a single entity from an
//! [`Entity`], both through [`Fields`], so both forms follow the same code. String values and
//! numbers go through `serde_json`'s writer, so escaping and number forms are `serde_json`'s;
//! keys (constants and property names, which are identifiers) and the text of the annotated
//! types (digits, instants, GUIDs, base64) need no escaping and are written as they are.

use std::fmt::Display;
use std::io::Write as _;

use base64::display::Base64Display;
use base64::engine::general_purpose::STANDARD as BASE64;
use chrono::{DateTime, Utc};
use serde::{Serialize, Serializer};
use table_client::wire::url::{entity_path, table_path};
use table_core::datetime::format_datetime;
use table_core::engine::{RowView, ValueRef};
use table_core::{ETag, EdmType, Entity};

use crate::answer::Metadata;

/// Where the answer's resources live: `<base>` of the `odata.*` links is
/// `http://{host}/{account}`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Links<'a> {
    pub(crate) base: &'a str,
    pub(crate) account: &'a str,
    pub(crate) metadata: Metadata,
}

/// The `$select` of a read, or `None`: everything.
pub(crate) type Selected<'a> = Option<&'a Selection<'a>>;

/// A `$select` list as answers show it (protocol doc section 6.3). The engine's projection
/// keeps the keys and `Timestamp` (a decoder needs them), while the service answers with only
/// the properties listed, system properties included; and a listed custom property an entity
/// lacks comes back as `null` (Azurite leaves it out).
#[derive(Debug)]
pub(crate) struct Selection<'a> {
    /// Whether the list names `PartitionKey`, `RowKey` and `Timestamp`: worked out once per
    /// request, not per entity.
    partition_key: bool,
    row_key: bool,
    timestamp: bool,
    /// The listed custom properties, ascending by bytes (the order of a row's properties),
    /// each once: those an entity lacks are written as `null`.
    custom: Vec<&'a str>,
}

impl<'a> Selection<'a> {
    /// The selection of a `$select` list, as the request gave it.
    pub(crate) fn new(listed: &'a [String]) -> Self {
        let names = || listed.iter().map(String::as_str);
        let lists = |system: &str| names().any(|name| name == system);
        let mut custom: Vec<&str> = names().filter(|name| !SYSTEM.contains(name)).collect();
        custom.sort_unstable();
        custom.dedup();
        Selection {
            partition_key: lists("PartitionKey"),
            row_key: lists("RowKey"),
            timestamp: lists("Timestamp"),
            custom,
        }
    }
}

/// The system properties an answer may show.
const SYSTEM: [&str; 3] = ["PartitionKey", "RowKey", "Timestamp"];

/// An entity as an answer writes it: system properties and the custom properties in name
/// order, all borrowed (from a stored row or an [`Entity`]).
pub(crate) struct Fields<'a, P> {
    partition_key: &'a str,
    row_key: &'a str,
    timestamp: Option<DateTime<Utc>>,
    etag: Option<&'a str>,
    properties: P,
}

/// An entity's fields.
pub(crate) fn entity_fields(entity: &Entity) -> Fields<'_, impl Iterator<Item = (&str, ValueRef<'_>)>> {
    Fields {
        partition_key: &entity.partition_key,
        row_key: &entity.row_key,
        timestamp: entity.timestamp,
        etag: entity.etag.as_ref().map(|etag| etag.as_str()),
        properties: entity.properties.iter().map(|(name, value)| (name.as_str(), ValueRef::of(value))),
    }
}

/// The fields of `sent` as a write stored it: its keys and properties, the write's ETag and
/// the timestamp in it.
pub(crate) fn stored_fields<'a>(
    sent: &'a Entity,
    etag: Option<&'a ETag>,
) -> Fields<'a, impl Iterator<Item = (&'a str, ValueRef<'a>)>> {
    Fields { timestamp: etag.and_then(ETag::timestamp), etag: etag.map(ETag::as_str), ..entity_fields(sent) }
}

/// A stored row's fields (projected by the query's `$select`).
pub(crate) fn row_fields<'a>(row: &RowView<'a>) -> Fields<'a, impl Iterator<Item = (&'a str, ValueRef<'a>)>> {
    Fields {
        partition_key: row.partition_key(),
        row_key: row.row_key(),
        timestamp: row.timestamp(),
        etag: Some(row.etag()),
        properties: row.properties(),
    }
}

/// One entity of `table`, alone (a point read, an insert echo).
pub(crate) fn entity<'a>(
    links: Links<'_>,
    table: &str,
    fields: Fields<'a, impl Iterator<Item = (&'a str, ValueRef<'a>)>>,
    selected: Selected<'_>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(ENTITY_CAPACITY);
    write_entity(&mut out, links, table, fields, selected, true);
    out
}

/// Room first made for one entity: a typical entity's answer fits.
const ENTITY_CAPACITY: usize = 1024;

/// Room first made for a page: it grows by doubling from there.
const PAGE_CAPACITY: usize = 64 * 1024;

/// A query page of `table`, written entity by entity as the engine hands them over.
pub(crate) struct Page<'a> {
    out: Vec<u8>,
    links: Links<'a>,
    table: &'a str,
    selected: Selected<'a>,
    /// No entity written yet.
    empty: bool,
}

impl<'a> Page<'a> {
    /// A page with no entity yet.
    pub(crate) fn new(links: Links<'a>, table: &'a str, selected: Selected<'a>) -> Page<'a> {
        let mut out = Vec::with_capacity(PAGE_CAPACITY);
        start_page(&mut out, links, table);
        Page { out, links, table, selected, empty: true }
    }

    /// Adds the next entity.
    pub(crate) fn push<'f>(&mut self, fields: Fields<'f, impl Iterator<Item = (&'f str, ValueRef<'f>)>>) {
        if !std::mem::take(&mut self.empty) {
            self.out.push(b',');
        }
        write_entity(&mut self.out, self.links, self.table, fields, self.selected, false);
    }

    /// The page's JSON.
    pub(crate) fn finish(mut self) -> Vec<u8> {
        self.out.extend_from_slice(b"]}");
        self.out
    }
}

/// A Query Tables page.
pub(crate) fn tables(links: Links<'_>, names: &[String]) -> Vec<u8> {
    let mut out = Vec::with_capacity(ENTITY_CAPACITY);
    start_page(&mut out, links, "Tables");
    for (i, name) in names.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_table(&mut out, links, name, false);
    }
    out.extend_from_slice(b"]}");
    out
}

/// The Create Table echo.
pub(crate) fn table(links: Links<'_>, name: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(ENTITY_CAPACITY);
    write_table(&mut out, links, name, true);
    out
}

/// `{"odata.metadata":"<base>/$metadata#<what>","value":[`, the metadata left out in
/// `nometadata`.
fn start_page(out: &mut Vec<u8>, links: Links<'_>, what: &str) {
    let mut object = Object::start(out);
    if links.metadata != Metadata::None {
        object.joined("odata.metadata", &[links.base, "/$metadata#", what]);
    }
    object.key(&["value"]);
    object.out.push(b'[');
}

/// One entity as an object; `element`: alone, with its own `odata.metadata`.
fn write_entity<'a>(
    out: &mut Vec<u8>,
    links: Links<'_>,
    table: &str,
    fields: Fields<'a, impl Iterator<Item = (&'a str, ValueRef<'a>)>>,
    selected: Selected<'_>,
    element: bool,
) {
    let Links { base, account, metadata } = links;
    let annotate = metadata != Metadata::None;
    let mut object = Object::start(out);
    if annotate && element {
        object.joined("odata.metadata", &[base, "/$metadata#", table, "/@Element"]);
    }
    let path = || entity_path(table, fields.partition_key, fields.row_key);
    if metadata == Metadata::Full {
        object.joined("odata.type", &[account, ".", table]);
        object.joined("odata.id", &[base, "/", &path()]);
    }
    if let (true, Some(etag)) = (annotate, fields.etag) {
        object.text(&["odata.etag"], etag);
    }
    if metadata == Metadata::Full {
        object.text(&["odata.editLink"], &path());
    }
    let shown = |listed: fn(&Selection<'_>) -> bool| selected.is_none_or(listed);
    if shown(|s| s.partition_key) {
        object.text(&["PartitionKey"], fields.partition_key);
    }
    if shown(|s| s.row_key) {
        object.text(&["RowKey"], fields.row_key);
    }
    if let (true, Some(timestamp)) = (shown(|s| s.timestamp), fields.timestamp) {
        if metadata == Metadata::Full {
            object.text(&["Timestamp@odata.type"], EdmType::DateTime.as_str());
        }
        object.text(&["Timestamp"], &format_datetime(timestamp));
    }
    // Both in ascending name order: the listed names an entity lacks are met as its own are.
    let mut listed = selected.map_or(&[][..], |selection| &selection.custom[..]).iter().peekable();
    for (name, value) in fields.properties {
        while let Some(lacking) = listed.next_if(|listed| **listed < name) {
            object.entry(lacking, &());
        }
        listed.next_if(|listed| **listed == name);
        // The text of these types never needs escaping: digits, instants, GUIDs, base64, and
        // the names of the non-finite doubles.
        let mut typed = |edm: EdmType, text: &dyn Display| object.typed(annotate, name, edm, text);
        match value {
            ValueRef::Str(s) => object.text(&[name], s),
            ValueRef::Int32(i) => object.entry(name, &i),
            ValueRef::Boolean(b) => object.entry(name, &b),
            ValueRef::Double(d) if d.is_finite() => object.entry(name, &d),
            ValueRef::Double(d) if d.is_nan() => typed(EdmType::Double, &"NaN"),
            ValueRef::Double(d) if d > 0.0 => typed(EdmType::Double, &"Infinity"),
            ValueRef::Double(_) => typed(EdmType::Double, &"-Infinity"),
            ValueRef::Int64(i) => typed(EdmType::Int64, &i),
            ValueRef::DateTime(t) => typed(EdmType::DateTime, &format_datetime(t)),
            ValueRef::Guid(g) => typed(EdmType::Guid, &g.hyphenated()),
            ValueRef::Binary(b) => typed(EdmType::Binary, &Base64Display::new(b, &BASE64)),
        }
    }
    for lacking in listed {
        object.entry(lacking, &());
    }
    object.end();
}

/// One table as an object; `element`: alone, with its own `odata.metadata`.
fn write_table(out: &mut Vec<u8>, links: Links<'_>, name: &str, element: bool) {
    let Links { base, account, metadata } = links;
    let mut object = Object::start(out);
    if metadata != Metadata::None && element {
        object.joined("odata.metadata", &[base, "/$metadata#Tables/@Element"]);
    }
    if metadata == Metadata::Full {
        object.joined("odata.type", &[account, ".Tables"]);
        object.joined("odata.id", &[base, "/", &table_path(name)]);
        object.text(&["odata.editLink"], &table_path(name));
    }
    object.text(&["TableName"], name);
    object.end();
}

/// A JSON object being written: `{`, then `"key":value` entries separated by commas.
struct Object<'o> {
    out: &'o mut Vec<u8>,
    /// No entry written yet.
    empty: bool,
}

impl<'o> Object<'o> {
    fn start(out: &'o mut Vec<u8>) -> Object<'o> {
        out.push(b'{');
        Object { out, empty: true }
    }

    /// Starts an entry: the separator, then the concatenation of `key` as a string, then `:`.
    /// Keys are constants and property names, which are identifiers (the engine stores no
    /// other name and refuses any other in a `$select` before an answer is written), so they
    /// are copied as they are: they never need escaping.
    fn key(&mut self, key: &[&str]) {
        if !std::mem::take(&mut self.empty) {
            self.out.push(b',');
        }
        self.out.push(b'"');
        for part in key {
            debug_assert!(!part.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\'), "{part:?}");
            self.out.extend_from_slice(part.as_bytes());
        }
        self.out.extend_from_slice(b"\":");
    }

    /// An entry whose value is text.
    fn text(&mut self, key: &[&str], value: &str) {
        self.key(key);
        put(self.out, value);
    }

    /// A property of a type JSON cannot carry: its `@odata.type` annotation when `annotate`,
    /// then its value printed as a string that needs no escaping. Always inlined: called out
    /// of line, with its value behind `dyn Display`, it cost a page of 1000 rows about 44
    /// instructions a row.
    #[inline(always)]
    fn typed(&mut self, annotate: bool, name: &str, edm: EdmType, text: &dyn Display) {
        if annotate {
            self.text(&[name, "@odata.type"], edm.as_str());
        }
        self.printed(name, text);
    }

    /// An entry whose value is `value` printed as a string that needs no escaping.
    fn printed(&mut self, key: &str, value: &dyn Display) {
        self.key(&[key]);
        // Writing into a `Vec` cannot fail.
        let _ = write!(self.out, "\"{value}\"");
    }

    /// An entry whose value is the text of `parts` one after another (a link: the host, the
    /// account, a table name, constants), copied as it is when no part needs escaping, as is
    /// usual, else escaped by `serde_json`.
    fn joined(&mut self, key: &str, parts: &[&str]) {
        let plain = |part: &&str| !part.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\');
        if parts.iter().all(plain) {
            self.key(&[key]);
            self.out.push(b'"');
            for part in parts {
                self.out.extend_from_slice(part.as_bytes());
            }
            self.out.push(b'"');
        } else {
            self.entry(key, &Text(Joined(parts)));
        }
    }

    /// An entry whose value is any other JSON value.
    fn entry(&mut self, key: &str, value: &(impl Serialize + ?Sized)) {
        self.key(&[key]);
        put(self.out, value);
    }

    fn end(self) {
        self.out.push(b'}');
    }
}

/// Writes `value` as JSON. Writing strings, integers, booleans, finite doubles and `null` (the
/// only values written; non-finite doubles are written as text) into a `Vec` cannot fail.
fn put(out: &mut Vec<u8>, value: &(impl Serialize + ?Sized)) {
    let _ = serde_json::to_writer(out, value);
}

/// Anything printable, as a JSON string: written escaped as it is printed, with no
/// intermediate `String`.
struct Text<D>(D);

impl<D: Display> Serialize for Text<D> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0)
    }
}

/// Texts printed one after another.
struct Joined<'a>(&'a [&'a str]);

impl Display for Joined<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.iter().try_for_each(|part| f.write_str(part))
    }
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use table_client::wire::{decode_entity, decode_query_page, decode_table, decode_table_list};
    use table_core::{ETag, Value};
    use uuid::Uuid;

    use super::*;

    /// The serde-based encoder these answers were written with before they were written
    /// straight from stored rows: the specification the new writer must match byte for byte.
    mod reference {
        use base64::Engine as _;
        use base64::engine::general_purpose::STANDARD as BASE64;
        use serde::Serialize;
        use serde::ser::{SerializeMap, SerializeSeq, Serializer};
        use table_client::wire::url::{entity_path, table_path};
        use table_core::datetime::format_datetime;
        use table_core::{EdmType, Entity, Value};

        use super::super::{Links, SYSTEM};
        use crate::answer::Metadata;

        /// The `$select` list as the request gave it.
        type Selected<'a> = Option<&'a [String]>;

        /// One entity of `table`, alone (a point read, an insert echo) or in a page.
        pub(super) fn entity(
            links: Links<'_>,
            table: &str,
            entity: &Entity,
            selected: Selected<'_>,
        ) -> String {
            to_string(&EntityJson { links, table, entity, selected, element: true })
        }

        /// A query page of `table`.
        pub(super) fn page(
            links: Links<'_>,
            table: &str,
            entities: &[Entity],
            selected: Selected<'_>,
        ) -> String {
            to_string(&PageJson { links, what: table, items: Items::Entities(table, entities, selected) })
        }

        /// A Query Tables page.
        pub(super) fn tables(links: Links<'_>, names: &[String]) -> String {
            to_string(&PageJson { links, what: "Tables", items: Items::Tables(names) })
        }

        /// The Create Table echo.
        pub(super) fn table(links: Links<'_>, name: &str) -> String {
            to_string(&TableJson { links, name, element: true })
        }

        /// Serialising maps of strings and scalars into a `String` cannot fail (every non-finite
        /// double is written as text).
        fn to_string(value: &impl Serialize) -> String {
            serde_json::to_string(value).unwrap_or_default()
        }

        struct EntityJson<'a> {
            links: Links<'a>,
            table: &'a str,
            entity: &'a Entity,
            selected: Selected<'a>,
            /// Alone, with its own `odata.metadata`.
            element: bool,
        }

        impl Serialize for EntityJson<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let Links { base, account, metadata } = self.links;
                let e = self.entity;
                let annotate = metadata != Metadata::None;
                let mut map = serializer.serialize_map(None)?;
                if annotate && self.element {
                    map.serialize_entry(
                        "odata.metadata",
                        &format!("{base}/$metadata#{}/@Element", self.table),
                    )?;
                }
                let path = || entity_path(self.table, &e.partition_key, &e.row_key);
                if metadata == Metadata::Full {
                    map.serialize_entry("odata.type", &format!("{account}.{}", self.table))?;
                    map.serialize_entry("odata.id", &format!("{base}/{}", path()))?;
                }
                if let (true, Some(etag)) = (annotate, &e.etag) {
                    map.serialize_entry("odata.etag", etag.as_str())?;
                }
                if metadata == Metadata::Full {
                    map.serialize_entry("odata.editLink", &path())?;
                }
                let shown = |name: &str| self.selected.is_none_or(|listed| listed.iter().any(|n| n == name));
                if shown("PartitionKey") {
                    map.serialize_entry("PartitionKey", &e.partition_key)?;
                }
                if shown("RowKey") {
                    map.serialize_entry("RowKey", &e.row_key)?;
                }
                if let (true, Some(timestamp)) = (shown("Timestamp"), e.timestamp) {
                    if metadata == Metadata::Full {
                        map.serialize_entry("Timestamp@odata.type", EdmType::DateTime.as_str())?;
                    }
                    map.serialize_entry("Timestamp", &format_datetime(timestamp))?;
                }
                // With a `$select`, each listed custom property the entity lacks is `null`.
                let mut shown: std::collections::BTreeMap<&str, Option<&Value>> =
                    e.properties.iter().map(|(name, value)| (name.as_str(), Some(value))).collect();
                for name in self.selected.unwrap_or_default() {
                    if !SYSTEM.contains(&name.as_str()) {
                        shown.entry(name).or_insert(None);
                    }
                }
                for (name, value) in shown {
                    let Some(value) = value else {
                        map.serialize_entry(name, &())?;
                        continue;
                    };
                    let mut typed = |edm: EdmType, text: &str| {
                        if annotate {
                            map.serialize_entry(&format!("{name}@odata.type"), edm.as_str())?;
                        }
                        map.serialize_entry(name, text)
                    };
                    match value {
                        Value::String(s) => map.serialize_entry(name, s)?,
                        Value::Int32(i) => map.serialize_entry(name, i)?,
                        Value::Boolean(b) => map.serialize_entry(name, b)?,
                        Value::Double(d) if d.is_finite() => map.serialize_entry(name, d)?,
                        Value::Double(d) if d.is_nan() => typed(EdmType::Double, "NaN")?,
                        Value::Double(d) if *d > 0.0 => typed(EdmType::Double, "Infinity")?,
                        Value::Double(_) => typed(EdmType::Double, "-Infinity")?,
                        Value::Int64(i) => typed(EdmType::Int64, &i.to_string())?,
                        Value::DateTime(t) => typed(EdmType::DateTime, &format_datetime(*t))?,
                        Value::Guid(g) => typed(EdmType::Guid, &g.hyphenated().to_string())?,
                        Value::Binary(b) => typed(EdmType::Binary, &BASE64.encode(b))?,
                    }
                }
                map.end()
            }
        }

        struct TableJson<'a> {
            links: Links<'a>,
            name: &'a str,
            element: bool,
        }

        impl Serialize for TableJson<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let Links { base, account, metadata } = self.links;
                let mut map = serializer.serialize_map(None)?;
                if metadata != Metadata::None && self.element {
                    map.serialize_entry("odata.metadata", &format!("{base}/$metadata#Tables/@Element"))?;
                }
                if metadata == Metadata::Full {
                    map.serialize_entry("odata.type", &format!("{account}.Tables"))?;
                    map.serialize_entry("odata.id", &format!("{base}/{}", table_path(self.name)))?;
                    map.serialize_entry("odata.editLink", &table_path(self.name))?;
                }
                map.serialize_entry("TableName", self.name)?;
                map.end()
            }
        }

        enum Items<'a> {
            /// The entities of a table, and the `$select` that read them.
            Entities(&'a str, &'a [Entity], Selected<'a>),
            /// Table names.
            Tables(&'a [String]),
        }

        struct PageJson<'a> {
            links: Links<'a>,
            /// What `odata.metadata` names: the table, or `Tables`.
            what: &'a str,
            items: Items<'a>,
        }

        impl Serialize for PageJson<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut map = serializer.serialize_map(None)?;
                if self.links.metadata != Metadata::None {
                    map.serialize_entry(
                        "odata.metadata",
                        &format!("{}/$metadata#{}", self.links.base, self.what),
                    )?;
                }
                map.serialize_entry("value", &ItemsJson { links: self.links, items: &self.items })?;
                map.end()
            }
        }

        struct ItemsJson<'a> {
            links: Links<'a>,
            items: &'a Items<'a>,
        }

        impl Serialize for ItemsJson<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let links = self.links;
                match self.items {
                    Items::Entities(table, entities, selected) => {
                        let mut seq = serializer.serialize_seq(Some(entities.len()))?;
                        for entity in *entities {
                            seq.serialize_element(&EntityJson {
                                links,
                                table,
                                entity,
                                selected: *selected,
                                element: false,
                            })?;
                        }
                        seq.end()
                    }
                    Items::Tables(names) => {
                        let mut seq = serializer.serialize_seq(Some(names.len()))?;
                        for name in *names {
                            seq.serialize_element(&TableJson { links, name, element: false })?;
                        }
                        seq.end()
                    }
                }
            }
        }
    }

    const BASE: &str = "http://127.0.0.1:10002/devstoreaccount1";

    fn links(metadata: Metadata) -> Links<'static> {
        Links { base: BASE, account: "devstoreaccount1", metadata }
    }

    fn sample() -> Entity {
        let t = Utc.with_ymd_and_hms(2020, 1, 2, 3, 4, 5).single().unwrap_or_default();
        let mut e = Entity::new("p", "r'1")
            .with("s", "x")
            .with("i", 5)
            .with("b", true)
            .with("d", 3.0)
            .with("nan", f64::NAN)
            .with("l", 1_099_511_627_776_i64)
            .with("t", t)
            .with("g", Uuid::nil())
            .with("x", vec![1_u8, 2]);
        e.timestamp = Some(t);
        e.etag = Some(ETag::from_timestamp(t));
        e
    }

    fn parsed(text: &str) -> serde_json::Value {
        serde_json::from_str(text).unwrap_or_default()
    }

    /// [`entity`] of an [`Entity`], as text.
    fn entity_text(links: Links<'_>, table: &str, e: &Entity, selected: Selected<'_>) -> String {
        String::from_utf8(entity(links, table, entity_fields(e), selected)).unwrap_or_default()
    }

    /// A [`Page`] of [`Entity`]s, as text.
    fn page_text(links: Links<'_>, table: &str, entities: &[Entity], selected: Selected<'_>) -> String {
        let mut page = Page::new(links, table, selected);
        for e in entities {
            page.push(entity_fields(e));
        }
        String::from_utf8(page.finish()).unwrap_or_default()
    }

    #[test]
    fn minimal_metadata_annotates_what_json_cannot_carry() {
        let text = entity_text(links(Metadata::Minimal), "tbl", &sample(), None);
        let v = parsed(&text);
        assert_eq!(v["odata.metadata"], format!("{BASE}/$metadata#tbl/@Element"));
        assert_eq!(v["odata.etag"], "W/\"datetime'2020-01-02T03%3A04%3A05.0000000Z'\"");
        assert!(text.contains(r#""d":3.0"#), "{text}");
        for plain in ["s", "i", "b", "d", "Timestamp"] {
            assert!(v.get(format!("{plain}@odata.type")).is_none(), "{plain}");
        }
        for (name, edm) in
            [("nan", "Double"), ("l", "Int64"), ("t", "DateTime"), ("g", "Guid"), ("x", "Binary")]
        {
            assert_eq!(v[format!("{name}@odata.type")], format!("Edm.{edm}"));
        }
        assert!(v.get("odata.id").is_none());
        // The client reads back exactly the entity written.
        let back = decode_entity(text.as_bytes(), None).ok();
        let mut expected = sample();
        expected.properties.remove("nan");
        let back = back.map(|mut e| {
            assert!(e.properties.remove("nan").is_some_and(|v| matches!(v, Value::Double(d) if d.is_nan())));
            e
        });
        assert_eq!(back, Some(expected));
    }

    #[test]
    fn no_metadata_has_no_control_information_and_full_has_links() {
        let none = parsed(&entity_text(links(Metadata::None), "tbl", &sample(), None));
        let names: Vec<&String> = none.as_object().map(|o| o.keys().collect()).unwrap_or_default();
        assert!(names.iter().all(|n| !n.contains("odata")), "{names:?}");
        assert_eq!(none["l"], "1099511627776");

        let full = parsed(&entity_text(links(Metadata::Full), "tbl", &sample(), None));
        assert_eq!(full["odata.type"], "devstoreaccount1.tbl");
        assert_eq!(full["odata.id"], format!("{BASE}/tbl(PartitionKey='p',RowKey='r%27%271')"));
        assert_eq!(full["odata.editLink"], "tbl(PartitionKey='p',RowKey='r%27%271')");
        assert_eq!(full["Timestamp@odata.type"], "Edm.DateTime");
    }

    #[test]
    fn pages_and_tables_read_back() {
        let text = page_text(links(Metadata::Minimal), "tbl", &[sample(), Entity::new("p", "r2")], None);
        assert_eq!(parsed(&text)["odata.metadata"], format!("{BASE}/$metadata#tbl"));
        assert_eq!(decode_query_page(text.as_bytes()).map(|p| p.len()).ok(), Some(2));
        let names = ["t1".to_owned(), "t2".to_owned()];
        for level in [Metadata::None, Metadata::Minimal, Metadata::Full] {
            let list = tables(links(level), &names);
            assert_eq!(decode_table_list(&list).ok().as_deref(), Some(&names[..]));
            assert_eq!(decode_table(&table(links(level), "t1")).ok().as_deref(), Some("t1"));
        }
        let full: serde_json::Value =
            serde_json::from_slice(&tables(links(Metadata::Full), &names)).unwrap_or_default();
        assert_eq!(full["value"][0]["odata.id"], format!("{BASE}/Tables('t1')"));
        assert_eq!(full["value"][0]["odata.type"], "devstoreaccount1.Tables");
    }

    #[test]
    fn a_select_shows_only_the_system_properties_it_lists() {
        let listed = ["s".to_owned(), "RowKey".to_owned()];
        let selection = Selection::new(&listed);
        let v = parsed(&entity_text(links(Metadata::Minimal), "tbl", &sample(), Some(&selection)));
        assert!(v.get("PartitionKey").is_none() && v.get("Timestamp").is_none(), "{v}");
        assert_eq!((&v["RowKey"], &v["s"]), (&serde_json::json!("r'1"), &serde_json::json!("x")));
        assert!(v.get("odata.etag").is_some(), "minimal metadata keeps the ETag");
        let selection = Selection::new(&listed[..1]);
        let page = parsed(&page_text(links(Metadata::None), "tbl", &[sample()], Some(&selection)));
        assert!(page["value"][0].get("RowKey").is_none(), "{page}");
    }

    #[test]
    fn a_listed_property_an_entity_lacks_is_null_in_name_order() {
        let listed = ["z", "s", "Timestamp", "a", "z", "i"].map(str::to_owned);
        let selection = Selection::new(&listed);
        // Projected, as the engine hands it over.
        let mut projected = sample();
        projected.properties.retain(|name, _| listed.contains(name));
        let text = entity_text(links(Metadata::None), "tbl", &projected, Some(&selection));
        assert_eq!(text, r#"{"Timestamp":"2020-01-02T03:04:05.0000000Z","a":null,"i":5,"s":"x","z":null}"#);
        // The client reads a `null` as an absent property.
        let back = decode_entity(text.as_bytes(), None).map(|e| e.properties.into_keys().collect::<Vec<_>>());
        assert_eq!(back.ok(), Some(vec!["i".to_owned(), "s".to_owned()]));
        let page = page_text(links(Metadata::None), "tbl", &[Entity::new("p", "r")], Some(&selection));
        assert_eq!(
            parsed(&page)["value"][0],
            serde_json::json!({"a": null, "i": null, "s": null, "z": null})
        );
    }

    fn any_value() -> impl proptest::strategy::Strategy<Value = table_core::Value> {
        use proptest::prelude::*;
        prop_oneof![
            // Text that needs escaping: quotes, backslashes, control characters, non-ASCII.
            r#"[a-z"\\\x00-\x1fé€😀/<>&']{0,12}"#.prop_map(Value::String),
            any::<i32>().prop_map(Value::Int32),
            any::<i64>().prop_map(Value::Int64),
            any::<f64>().prop_map(Value::Double),
            Just(Value::Double(f64::NAN)),
            Just(Value::Double(f64::INFINITY)),
            Just(Value::Double(f64::NEG_INFINITY)),
            Just(Value::Double(-0.0)),
            any::<bool>().prop_map(Value::Boolean),
            (-11_644_473_600i64..253_402_300_800, 0u32..10_000_000).prop_map(|(s, t)| {
                Value::DateTime(chrono::DateTime::from_timestamp(s, t * 100).unwrap_or_default())
            }),
            any::<u128>().prop_map(|g| Value::Guid(Uuid::from_u128(g))),
            proptest::collection::vec(any::<u8>(), 0..12).prop_map(Value::Binary),
        ]
    }

    fn any_entity() -> impl proptest::strategy::Strategy<Value = Entity> {
        use proptest::prelude::*;
        (
            r#"[a-z'"\\%é ]{1,6}"#,
            r#"[a-z'"\\%é ]{1,6}"#,
            proptest::collection::btree_map("[A-Za-z_][A-Za-z0-9_é]{0,6}", any_value(), 0..8),
        )
            .prop_map(|(pk, rk, properties)| Entity {
                partition_key: pk,
                row_key: rk,
                timestamp: None,
                etag: None,
                properties,
            })
    }

    const LEVELS: [Metadata; 3] = [Metadata::None, Metadata::Minimal, Metadata::Full];

    /// Links whose parts need escaping (the host is the client's `Host` header, the account
    /// and table names are checked later or not at all) are escaped as the serde encoder
    /// escapes them, at every level and in every answer.
    #[test]
    fn links_are_escaped_when_they_need_it() {
        let e = Entity::new("p", "r'1").with("s", "x");
        let names = ["t\"1".to_owned()];
        for base in ["http://a\"b/acct", "http://a\\b/acct", "http://a\u{1}b/acct", BASE] {
            for metadata in LEVELS {
                let links = Links { base, account: "ac\"ct", metadata };
                for table in ["tbl", "t\\bl"] {
                    let expected = reference::entity(links, table, &e, None);
                    assert_eq!(entity_text(links, table, &e, None), expected);
                    let expected = reference::page(links, table, std::slice::from_ref(&e), None);
                    assert_eq!(page_text(links, table, std::slice::from_ref(&e), None), expected);
                }
                let listed = String::from_utf8(tables(links, &names)).unwrap_or_default();
                assert_eq!(listed, reference::tables(links, &names));
                let created = String::from_utf8(table(links, &names[0])).unwrap_or_default();
                assert_eq!(created, reference::table(links, &names[0]));
            }
        }
    }

    proptest::proptest! {
        /// A page written from the engine's stored rows, and an entity written from an
        /// `Entity`, are byte for byte what the serde encoder wrote from the same entities,
        /// at every metadata level, with and without a `$select` (system properties in it too).
        #[test]
        fn answers_are_what_the_serde_encoder_wrote(
            entities in proptest::collection::vec(any_entity(), 0..6),
            pick in proptest::prelude::any::<u16>(),
        ) {
            let engine = table_core::engine::Engine::new();
            engine.create_table("tbl").map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
            for e in &entities {
                // Two entities may share keys: the second insert is refused, as it should be.
                let _ = engine.insert("tbl", e.clone());
            }
            let names: Vec<String> = entities.iter().flat_map(|e| e.properties.keys().cloned()).collect();
            let select: Option<Vec<String>> = (pick & 1 == 1).then(|| {
                // A name no entity has is listed too: every entity shows it as `null`.
                let system = ["PartitionKey", "RowKey", "Timestamp", "Absent"].map(str::to_owned);
                names.iter().chain(&system).enumerate().filter(|(i, _)| pick & (2 << (i % 15)) != 0).map(|(_, n)| n.clone()).collect()
            }).filter(|listed: &Vec<String>| !listed.is_empty());
            let request = table_core::QueryRequest { select: select.clone(), ..Default::default() };
            let stored = engine.query("tbl", &request).map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
            let selection = select.as_deref().map(Selection::new);
            for level in LEVELS {
                let links = links(level);
                let mut page = Page::new(links, "tbl", selection.as_ref());
                engine
                    .query_rows("tbl", &request, |row| page.push(row_fields(&row)))
                    .map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
                let expected = reference::page(links, "tbl", &stored.entities, select.as_deref());
                proptest::prop_assert_eq!(String::from_utf8(page.finish()).unwrap_or_default(), expected);
                for e in &stored.entities {
                    let expected = reference::entity(links, "tbl", e, select.as_deref());
                    proptest::prop_assert_eq!(entity_text(links, "tbl", e, selection.as_ref()), expected);
                }
            }
        }

        /// Table lists and Create Table echoes are what the serde encoder wrote.
        #[test]
        fn table_answers_are_what_the_serde_encoder_wrote(names in proptest::collection::vec("[a-zA-Z0-9\"]{1,8}", 0..4)) {
            for level in LEVELS {
                let links = links(level);
                proptest::prop_assert_eq!(String::from_utf8(tables(links, &names)).unwrap_or_default(), reference::tables(links, &names));
                for name in &names {
                    proptest::prop_assert_eq!(String::from_utf8(table(links, name)).unwrap_or_default(), reference::table(links, name));
                }
            }
        }
    }
}
