//! JSON answers (protocol doc sections 4.1 and 4.3): entities, query pages and table lists in
//! the three metadata levels.
//!
//! These are the service's response forms, which the client only reads; its request form
//! (`table_client::wire::encode_entity`) annotates every type that is not String, Int32 or
//! Boolean, while an answer annotates only what JSON cannot carry: Int64, DateTime, Guid,
//! Binary and the non-finite Doubles, and nothing at all in `nometadata`. A finite Double is a
//! JSON number with a fraction (`3.0`), so readers type it Double without an annotation.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use table_client::wire::url::{entity_path, table_path};
use table_core::datetime::format_datetime;
use table_core::{EdmType, Entity, Value};

use crate::answer::Metadata;

/// Where the answer's resources live: `<base>` of the `odata.*` links is
/// `http://{host}/{account}`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Links<'a> {
    pub(crate) base: &'a str,
    pub(crate) account: &'a str,
    pub(crate) metadata: Metadata,
}

/// The `$select` list of a read, or `None`: everything. The engine's projection keeps the keys
/// and `Timestamp` (a decoder needs them), while the service answers a `$select` with only the
/// properties it lists, system properties included (protocol doc section 6.3).
pub(crate) type Selected<'a> = Option<&'a [String]>;

/// One entity of `table`, alone (a point read, an insert echo) or in a page.
pub(crate) fn entity(links: Links<'_>, table: &str, entity: &Entity, selected: Selected<'_>) -> String {
    to_string(&EntityJson { links, table, entity, selected, element: true })
}

/// A query page of `table`.
pub(crate) fn page(links: Links<'_>, table: &str, entities: &[Entity], selected: Selected<'_>) -> String {
    to_string(&PageJson { links, what: table, items: Items::Entities(table, entities, selected) })
}

/// A Query Tables page.
pub(crate) fn tables(links: Links<'_>, names: &[String]) -> String {
    to_string(&PageJson { links, what: "Tables", items: Items::Tables(names) })
}

/// The Create Table echo.
pub(crate) fn table(links: Links<'_>, name: &str) -> String {
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
            map.serialize_entry("odata.metadata", &format!("{base}/$metadata#{}/@Element", self.table))?;
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
        for (name, value) in &e.properties {
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
            map.serialize_entry("odata.metadata", &format!("{}/$metadata#{}", self.links.base, self.what))?;
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

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use table_client::wire::{decode_entity, decode_query_page, decode_table, decode_table_list};
    use table_core::ETag;
    use uuid::Uuid;

    use super::*;

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

    #[test]
    fn minimal_metadata_annotates_what_json_cannot_carry() {
        let text = entity(links(Metadata::Minimal), "tbl", &sample(), None);
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
        let none = parsed(&entity(links(Metadata::None), "tbl", &sample(), None));
        let names: Vec<&String> = none.as_object().map(|o| o.keys().collect()).unwrap_or_default();
        assert!(names.iter().all(|n| !n.contains("odata")), "{names:?}");
        assert_eq!(none["l"], "1099511627776");

        let full = parsed(&entity(links(Metadata::Full), "tbl", &sample(), None));
        assert_eq!(full["odata.type"], "devstoreaccount1.tbl");
        assert_eq!(full["odata.id"], format!("{BASE}/tbl(PartitionKey='p',RowKey='r%27%271')"));
        assert_eq!(full["odata.editLink"], "tbl(PartitionKey='p',RowKey='r%27%271')");
        assert_eq!(full["Timestamp@odata.type"], "Edm.DateTime");
    }

    #[test]
    fn pages_and_tables_read_back() {
        let text = page(links(Metadata::Minimal), "tbl", &[sample(), Entity::new("p", "r2")], None);
        assert_eq!(parsed(&text)["odata.metadata"], format!("{BASE}/$metadata#tbl"));
        assert_eq!(decode_query_page(text.as_bytes()).map(|p| p.len()).ok(), Some(2));
        let names = ["t1".to_owned(), "t2".to_owned()];
        for level in [Metadata::None, Metadata::Minimal, Metadata::Full] {
            let list = tables(links(level), &names);
            assert_eq!(decode_table_list(list.as_bytes()).ok().as_deref(), Some(&names[..]));
            assert_eq!(decode_table(table(links(level), "t1").as_bytes()).ok().as_deref(), Some("t1"));
        }
        let full = parsed(&tables(links(Metadata::Full), &names));
        assert_eq!(full["value"][0]["odata.id"], format!("{BASE}/Tables('t1')"));
        assert_eq!(full["value"][0]["odata.type"], "devstoreaccount1.Tables");
    }

    #[test]
    fn a_select_shows_only_the_system_properties_it_lists() {
        let listed = ["s".to_owned(), "RowKey".to_owned()];
        let v = parsed(&entity(links(Metadata::Minimal), "tbl", &sample(), Some(&listed)));
        assert!(v.get("PartitionKey").is_none() && v.get("Timestamp").is_none(), "{v}");
        assert_eq!((&v["RowKey"], &v["s"]), (&serde_json::json!("r'1"), &serde_json::json!("x")));
        assert!(v.get("odata.etag").is_some(), "minimal metadata keeps the ETag");
        let page = parsed(&page(links(Metadata::None), "tbl", &[sample()], Some(&listed[..1])));
        assert!(page["value"][0].get("RowKey").is_none(), "{page}");
    }
}
