//! `#[derive(TableEntity)]` behaviour: mapping, keys, typed helpers, indexes, dispatch.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use table_core::datetime::parse_datetime;
use table_core::typed::{IndexKind, PARTITION_KEY, TableEntity};
use table_core::{ETag, EdmType, Entity, EntityKey, ErrorKind, Value, Violation};
use table_derive::{PropertyValue, TableEntity};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
struct Address {
    street: String,
    city: String,
}

#[derive(Debug, Clone, PartialEq, PropertyValue)]
#[table(crate = "table_core", rename_all = "kebab-case")]
enum Contract {
    FullTime,
    PartTime,
    #[table(rename = "temp")]
    Temporary,
}

#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(crate = "table_core", rename_all = "PascalCase")]
#[table(partition_key = "{department}", row_key = "empid_{id:06}")]
#[table(entity_type = "Employee", version = 1)]
#[table(index(name = "by_email", row_key = "email_{email}", project(first_name, email)))]
#[table(index(name = "by_email_global", partition_key = "email_{department}", row_key = "{email}"))]
#[table(lookup(name = "by_last_name", row_key = "lastname_{last_name}"))]
struct Employee {
    department: String,
    id: u32,
    #[table(rename = "FirstName")]
    first_name: String,
    last_name: String,
    age: i32,
    email: String,
    contract: Contract,
    #[table(json)]
    address: Address,
    #[table(skip)]
    cache: Option<String>,
    #[table(timestamp)]
    updated: Option<DateTime<Utc>>,
    #[table(etag)]
    etag: Option<ETag>,
}

fn employee() -> Employee {
    Employee {
        department: "Sales".into(),
        id: 223,
        first_name: "Don".into(),
        last_name: "Hall".into(),
        age: 34,
        email: "donh@contoso.com".into(),
        contract: Contract::PartTime,
        address: Address { street: "1 Main St".into(), city: "Redmond".into() },
        cache: Some("not stored".into()),
        updated: None,
        etag: None,
    }
}

fn at(s: &str) -> DateTime<Utc> {
    parse_datetime(s).expect("test instant parses")
}

#[test]
fn maps_fields_to_properties_and_back() {
    let e = employee();
    let entity = e.to_entity().unwrap();
    assert_eq!(entity.partition_key, "Sales");
    assert_eq!(entity.row_key, "empid_000223");
    let expected = Entity::new("Sales", "empid_000223")
        .with("EntityType", "Employee")
        .with("EntityVersion", 1)
        .with("Department", "Sales")
        .with("Id", Value::Int64(223))
        .with("FirstName", "Don")
        .with("LastName", "Hall")
        .with("Age", 34)
        .with("Email", "donh@contoso.com")
        .with("Contract", "part-time")
        .with("Address", r#"{"street":"1 Main St","city":"Redmond"}"#);
    assert_eq!(entity, expected);

    let mut stored = entity;
    stored.timestamp = Some(at("2024-01-02T03:04:05.1234567Z"));
    stored.etag = Some(ETag::new("W/\"x\""));
    let back = Employee::from_entity(stored).unwrap();
    assert_eq!(
        back,
        Employee {
            cache: None,
            updated: Some(at("2024-01-02T03:04:05.1234567Z")),
            etag: Some(ETag::new("W/\"x\"")),
            ..e
        }
    );
}

#[test]
fn select_lists_exactly_the_stored_properties() {
    assert_eq!(
        Employee::select().unwrap(),
        [
            "PartitionKey",
            "RowKey",
            "Timestamp",
            "EntityType",
            "EntityVersion",
            "Department",
            "Id",
            "FirstName",
            "LastName",
            "Age",
            "Email",
            "Contract",
            "Address"
        ]
    );
    assert_eq!(Employee::ENTITY_TYPE, Some("Employee"));
    assert_eq!(Employee::VERSION, Some(1));
}

#[test]
fn typed_keys_and_the_design_guide_filters() {
    assert_eq!(Employee::key("Sales", 223).unwrap(), EntityKey::new("Sales", "empid_000223"));
    assert_eq!(employee().entity_key().unwrap(), Employee::key("Sales", 223).unwrap());
    let range = Employee::row_key_range(100, 199).unwrap();
    assert_eq!(range.to_filter().to_string(), "RowKey ge 'empid_000100' and RowKey le 'empid_000199'");
    assert!(range.contains("empid_000150") && !range.contains("empid_000200"));
    let in_sales = range.in_partition(Employee::partition_key_for("Sales").unwrap());
    assert_eq!(
        in_sales.to_string(),
        "PartitionKey eq 'Sales' and RowKey ge 'empid_000100' and RowKey le 'empid_000199'"
    );
    assert_eq!(
        Employee::row_key_prefix().unwrap().to_filter().to_string(),
        "RowKey ge 'empid_' and RowKey lt 'empid`'"
    );
    assert_eq!(
        PARTITION_KEY.eq("Sales").and(Employee::LAST_NAME.eq("Smith")).to_string(),
        "PartitionKey eq 'Sales' and LastName eq 'Smith'"
    );
}

#[test]
fn typed_columns_print_the_literal_of_the_stored_type() {
    assert_eq!(Employee::AGE.gt(30).to_string(), "Age gt 30");
    assert_eq!(Employee::ID.ge(100u32).to_string(), "Id ge 100L");
    assert_eq!(Employee::CONTRACT.eq(Contract::Temporary).to_string(), "Contract eq 'temp'");
    assert_eq!(
        Employee::UPDATED.ge(at("2024-01-01T00:00:00Z")).or(Employee::FIRST_NAME.ne("O'Neil")).to_string(),
        "Timestamp ge datetime'2024-01-01T00:00:00.0000000Z' or FirstName ne 'O''Neil'"
    );
}

#[test]
fn index_metadata_and_keys() {
    let indexes = Employee::indexes();
    let names: Vec<_> = indexes.iter().map(|i| (i.name, i.kind, i.same_partition)).collect();
    assert_eq!(
        names,
        [
            ("by_email", IndexKind::Secondary, true),
            ("by_email_global", IndexKind::Secondary, false),
            ("by_last_name", IndexKind::Lookup, true),
        ]
    );
    assert_eq!(indexes[0].projection, Some(&["FirstName", "Email"][..]));
    assert_eq!(indexes[1].projection, None);
    assert_eq!(indexes[1].partition_key.text, "email_{department}");
    let e = employee();
    assert_eq!(e.index_key("by_email").unwrap(), Some(EntityKey::new("Sales", "email_donh@contoso.com")));
    assert_eq!(
        e.index_key("by_email_global").unwrap(),
        Some(EntityKey::new("email_Sales", "donh@contoso.com"))
    );
    assert_eq!(e.index_key("by_last_name").unwrap(), Some(EntityKey::new("Sales", "lastname_Hall")));
    assert_eq!(e.index_key("nope").unwrap(), None);
    let bad = Employee { email: "a/b".into(), ..employee() };
    let err = bad.index_key("by_email").unwrap_err();
    assert!(
        matches!(err.violation(), Some(Violation::Value { property, .. }) if property == "email"),
        "{err}"
    );
}

#[test]
fn index_handles_build_their_keys_from_field_values() {
    use table_core::typed::{Index, LookupIndex, SecondaryIndex};
    fn def<I: Index<Entity = Employee>>(index: I) -> &'static table_core::typed::IndexDef {
        index.def()
    }
    fn secondary<I: SecondaryIndex>(_: I) {}
    fn lookup<I: LookupIndex>(_: I) {}
    secondary(Employee::BY_EMAIL);
    secondary(Employee::BY_EMAIL_GLOBAL);
    lookup(Employee::BY_LAST_NAME);
    assert_eq!(def(Employee::BY_EMAIL), &Employee::indexes()[0]);
    assert_eq!(def(Employee::BY_LAST_NAME).name, "by_last_name");

    // Fields in template order, partition key first, as for the primary `key()`.
    assert_eq!(
        Employee::BY_LAST_NAME.key("Sales", "Hall").unwrap(),
        EntityKey::new("Sales", "lastname_Hall")
    );
    assert_eq!(
        employee().index_key("by_last_name").unwrap(),
        Some(Employee::BY_LAST_NAME.key("Sales", "Hall").unwrap())
    );
    assert_eq!(
        Employee::BY_EMAIL_GLOBAL.key("Sales", "donh@contoso.com").unwrap(),
        EntityKey::new("email_Sales", "donh@contoso.com")
    );
    assert_eq!(Employee::BY_EMAIL_GLOBAL.partition_key_for("Sales").unwrap(), "email_Sales");
    assert_eq!(Employee::BY_EMAIL.row_key_for("a@b").unwrap(), "email_a@b");
    assert_eq!(
        Employee::BY_LAST_NAME.row_key_prefix().unwrap().in_partition("Sales").to_string(),
        "PartitionKey eq 'Sales' and RowKey ge 'lastname_' and RowKey lt 'lastname`'"
    );
    assert_eq!(
        Employee::BY_LAST_NAME.row_key_range("H", "J").unwrap().to_filter().to_string(),
        "RowKey ge 'lastname_H' and RowKey le 'lastname_J'"
    );
    assert_eq!(
        Employee::BY_EMAIL_GLOBAL.partition_key_prefix().unwrap().to_filter().to_string(),
        "PartitionKey ge 'email_' and PartitionKey lt 'email`'"
    );
    // Key values are checked as the primary keys' are, naming the field.
    let err = Employee::BY_EMAIL.key("Sales", "a/b").unwrap_err();
    assert_eq!(value_error_property(&err), "email");
}

/// Key-only fields of every kind of key: whole keys in order-keeping specs, whole keys in
/// other specs, and fields sharing their key.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(crate = "table_core", partition_key = "{region}", row_key = "{id:06}")]
struct Site {
    #[table(key_only)]
    region: String,
    #[table(key_only)]
    id: u32,
}

#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(crate = "table_core", partition_key = "{n:ordered}", row_key = "{at:inverted_ticks}")]
struct Tick {
    #[table(key_only)]
    n: i64,
    #[table(key_only)]
    at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(crate = "table_core", partition_key = "{at:ticks}", row_key = "{seq}")]
struct Sample {
    #[table(key_only)]
    at: DateTime<Utc>,
    #[table(key_only)]
    seq: u32,
}

/// Small integers in keys, with the integer specs, and as filtered properties.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(crate = "table_core", partition_key = "{shard:05}", row_key = "{slot:ordered}")]
struct Slot {
    #[table(key_only)]
    shard: u16,
    #[table(key_only)]
    slot: i8,
    level: u8,
    ratio: f32,
}

#[test]
fn small_integer_keys_and_columns() {
    let slot = Slot { shard: u16::MAX, slot: i8::MIN, level: 200, ratio: 0.5 };
    let entity = slot.to_entity().unwrap();
    assert_eq!((entity.partition_key.as_str(), entity.row_key.as_str()), ("65535", "09223372036854775680"));
    assert_eq!(Slot::from_entity(entity).unwrap(), slot);
    assert_eq!(Slot::key(7, -1).unwrap().partition_key, "00007");
    assert_eq!(Slot::SHARD.gt(7).to_string(), "PartitionKey gt '00007'");
    assert_eq!(Slot::SLOT.lt(0).to_string(), "RowKey lt '09223372036854775808'");
    assert_eq!(Slot::LEVEL.ge(200).to_string(), "level ge 200");
    assert_eq!(Slot::RATIO.lt(0.5).to_string(), "ratio lt 0.5");
    // A key out of the field's range is an error naming the field, not a wrapped value.
    let wide = Entity::new("65536", "09223372036854775808").with("level", 1).with("ratio", 0.5);
    let err = Slot::from_entity(wide).unwrap_err();
    assert!(err.to_string().contains("shard"), "{err}");
}

#[test]
fn whole_key_fields_filter_on_their_key() {
    assert_eq!(Site::REGION.eq("Sales").to_string(), "PartitionKey eq 'Sales'");
    let region = "N".to_owned();
    assert_eq!(Site::REGION.ge(&region).to_string(), "PartitionKey ge 'N'");
    assert_eq!(Site::REGION.lt(region).to_string(), "PartitionKey lt 'N'");
    assert_eq!(Site::ID.gt(100).to_string(), "RowKey gt '000100'");
    assert_eq!(Site::ID.ne(7).to_string(), "RowKey ne '000007'");
    // A value the spec cannot write equals no key, and sorts after every key.
    assert_eq!(Site::ID.lt(1_234_567).to_string(), "RowKey lt ':'");
    assert_eq!(Site::ID.eq(1_234_567).to_string(), "RowKey eq ''");
    assert_eq!(Tick::N.ge(-1).to_string(), "PartitionKey ge '09223372036854775807'");
    let at = parse_datetime("2014-08-22T00:50:32Z").unwrap();
    assert_eq!(Tick::AT.eq(at).to_string(), "RowKey eq '2519936321679999999'");
    assert_eq!(Sample::AT.le(at).to_string(), "PartitionKey le '0635442654320000000'");
    let before_ticks = parse_datetime("0001-01-01T00:00:00Z").unwrap() - chrono::Duration::days(1);
    assert_eq!(Sample::AT.gt(before_ticks).to_string(), "PartitionKey gt ''");
    assert_eq!(Sample::SEQ.eq(5).to_string(), "RowKey eq '5'");

    // Each filter selects exactly what comparing the field would.
    let sites: Vec<Site> = (98..=102).map(|id| Site { region: "Sales".into(), id }).collect();
    let over_100: Vec<u32> =
        sites.iter().filter(|s| Site::ID.gt(100).matches(&s.to_entity().unwrap())).map(|s| s.id).collect();
    assert_eq!(over_100, [101, 102]);
}

fn value_error_property(err: &table_core::Error) -> String {
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    match err.violation() {
        Some(Violation::Value { property, .. }) => property.clone(),
        other => panic!("expected a value violation, got {other:?}"),
    }
}

#[test]
fn wrong_or_missing_properties_are_errors_naming_the_property() {
    let entity = employee().to_entity().unwrap();

    let mut wrong = entity.clone();
    wrong.insert("Age", "thirty");
    let err = Employee::from_entity(wrong).unwrap_err();
    assert_eq!(value_error_property(&err), "Age");
    assert!(err.to_string().contains("expected Edm.Int32, found Edm.String"), "{err}");

    let mut missing = entity.clone();
    missing.properties.remove("LastName");
    assert_eq!(value_error_property(&Employee::from_entity(missing).unwrap_err()), "LastName");

    let mut bad_json = entity.clone();
    bad_json.insert("Address", "{");
    assert_eq!(value_error_property(&Employee::from_entity(bad_json).unwrap_err()), "Address");

    let mut bad_enum = entity.clone();
    bad_enum.insert("Contract", "intern");
    assert_eq!(value_error_property(&Employee::from_entity(bad_enum).unwrap_err()), "Contract");

    let mut other_type = entity.clone();
    other_type.insert("EntityType", "Department");
    assert_eq!(value_error_property(&Employee::from_entity(other_type).unwrap_err()), "EntityType");

    let mut wrong_version_type = entity.clone();
    wrong_version_type.insert("EntityVersion", 1i64);
    assert_eq!(
        value_error_property(&Employee::from_entity(wrong_version_type).unwrap_err()),
        "EntityVersion"
    );

    let mut other_version = entity;
    other_version.insert("EntityVersion", 2);
    assert!(matches!(
        Employee::from_entity(other_version).unwrap_err().violation(),
        Some(Violation::NewerEntityVersion { found: 2, current: 1, .. })
    ));
}

#[test]
fn key_values_are_checked_against_the_key_rules_naming_the_field() {
    let bad = Employee { department: "Sales/EU".into(), ..employee() };
    let err = bad.to_entity().unwrap_err();
    assert_eq!(value_error_property(&err), "department");
    assert!(err.to_string().contains("forbidden"), "{err}");
    let wide = Employee { id: 1_234_567, ..employee() };
    assert_eq!(value_error_property(&wide.to_entity().unwrap_err()), "id");
    let long = Employee { department: "d".repeat(1025), ..employee() };
    let err = long.to_entity().unwrap_err();
    assert_eq!(value_error_property(&err), "department");
    assert!(err.to_string().contains("1025 UTF-16 code units"), "{err}");
    let max = Employee { department: "d".repeat(1024), ..employee() };
    assert_eq!(max.to_entity().unwrap().partition_key.len(), 1024);
}

/// The log-tail pattern: newest first, with fields stored only in the keys.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(crate = "table_core")]
#[table(partition_key = "{device}_{day:%Y%m%d}", row_key = "{at:inverted_ticks}_{seq:ordered}")]
struct Reading {
    #[table(key_only)]
    device: String,
    #[table(key_only)]
    day: DateTime<Utc>,
    #[table(key_only)]
    at: DateTime<Utc>,
    #[table(key_only)]
    seq: i64,
    value: f64,
}

#[test]
fn key_only_fields_are_read_back_from_the_keys() {
    let r = Reading {
        device: "dev-1".into(),
        day: at("2014-08-22T00:00:00Z"),
        at: at("2014-08-22T00:50:32Z"),
        seq: -5,
        value: 1.5,
    };
    let entity = r.to_entity().unwrap();
    assert_eq!(entity.partition_key, "dev-1_20140822");
    assert_eq!(entity.row_key, "2519936321679999999_09223372036854775803");
    assert_eq!(entity.properties.keys().collect::<Vec<_>>(), ["value"]);
    assert_eq!(Reading::from_entity(entity).unwrap(), r);
    assert_eq!(Reading::select().unwrap(), ["PartitionKey", "RowKey", "value"]);

    // A device name holding the separator could not be read back, so it is refused.
    let ambiguous = Reading { device: "dev_1".into(), ..r.clone() };
    assert_eq!(value_error_property(&ambiguous.to_entity().unwrap_err()), "device");

    let mut mismatched = r.to_entity().unwrap();
    mismatched.row_key = "latest".into();
    assert_eq!(value_error_property(&Reading::from_entity(mismatched).unwrap_err()), "RowKey");
    let mut bad_day = r.to_entity().unwrap();
    bad_day.partition_key = "dev-1_2014x822".into();
    assert_eq!(value_error_property(&Reading::from_entity(bad_day).unwrap_err()), "day");
}

/// A key-only field ahead of stored fields that may hold the literals of the key.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(crate = "table_core", partition_key = "orders", row_key = "{customer}_{note}-{n:04}")]
struct Order {
    #[table(key_only)]
    customer: String,
    note: String,
    n: u32,
}

#[test]
fn stored_fields_after_a_key_only_one_may_hold_the_key_literals() {
    // `note` is stored, so it may hold `-`: the first `-` of the key does not end it, and the
    // row must still read back.
    for note in ["a-b", "-", "x-0001-"] {
        let order = Order { customer: "ann".into(), note: note.into(), n: 7 };
        let entity = order.to_entity().unwrap();
        assert_eq!(entity.row_key, format!("ann_{note}-0007"));
        assert_eq!(Order::from_entity(entity).unwrap(), order, "{note:?}");
    }
    // The key-only field itself still may not hold its literal.
    let ambiguous = Order { customer: "a_b".into(), note: "x".into(), n: 7 };
    assert_eq!(value_error_property(&ambiguous.to_entity().unwrap_err()), "customer");
}

#[test]
fn log_tail_ranges_and_prefixes() {
    let range = Reading::row_key_range(at("2014-08-22T00:50:32Z"), -1, 1).unwrap();
    assert_eq!(
        range.to_filter().to_string(),
        "RowKey ge '2519936321679999999_09223372036854775807' and RowKey le '2519936321679999999_09223372036854775809'"
    );
    assert_eq!(
        Reading::partition_key_prefix("dev-1").unwrap().to_filter().to_string(),
        "PartitionKey ge 'dev-1_' and PartitionKey lt 'dev-1`'"
    );
    let latest = Reading::key("dev-1", at("2014-08-22T00:00:00Z"), at("2014-08-22T00:50:32Z"), 0).unwrap();
    assert_eq!(latest.partition_key, "dev-1_20140822");
}

#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(crate = "table_core", partition_key = "{department}", row_key = "dept")]
#[table(entity_type = "Department")]
struct Department {
    department: String,
    manager: String,
}

#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(crate = "table_core")]
enum Row {
    Employee(Employee),
    Department(Department),
}

#[test]
fn enums_dispatch_on_the_discriminator() {
    let d = Department { department: "Sales".into(), manager: "Ann".into() };
    let rows = [d.to_entity().unwrap(), employee().to_entity().unwrap()];
    let read: Vec<Row> = rows.into_iter().map(|e| Row::from_entity(e).unwrap()).collect();
    assert!(matches!(&read[0], Row::Department(x) if *x == d));
    assert!(matches!(&read[1], Row::Employee(x) if x.id == 223));
    assert_eq!(Row::Department(d.clone()).to_entity().unwrap(), d.to_entity().unwrap());
    assert_eq!(Row::Department(d.clone()).row_key().unwrap(), "dept");

    let unknown = Entity::new("Sales", "x").with("EntityType", "Robot");
    let err = Row::from_entity(unknown).unwrap_err();
    assert_eq!(value_error_property(&err), "EntityType");
    assert!(err.to_string().contains("\"Robot\""), "{err}");
    let untyped = Entity::new("Sales", "x");
    assert_eq!(value_error_property(&Row::from_entity(untyped).unwrap_err()), "EntityType");
    assert_eq!(Row::select(), None);
}

/// A projection of `Employee`: reads from a query that selects only its properties.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(crate = "table_core", rename_all = "PascalCase")]
#[table(partition_key = "{department}", row_key = "empid_{id:06}")]
struct EmployeeEmail {
    #[table(key_only)]
    department: String,
    #[table(key_only)]
    id: u32,
    email: String,
}

#[test]
fn projections_select_and_read_a_subset() {
    assert_eq!(EmployeeEmail::select().unwrap(), ["PartitionKey", "RowKey", "Email"]);
    let full = employee().to_entity().unwrap();
    let mut projected = Entity::new(full.partition_key.clone(), full.row_key.clone());
    for name in EmployeeEmail::select().unwrap() {
        if let Some(v) = full.get(name) {
            projected.insert(*name, v.clone());
        }
    }
    assert_eq!(
        EmployeeEmail::from_entity(projected).unwrap(),
        EmployeeEmail { department: "Sales".into(), id: 223, email: "donh@contoso.com".into() }
    );
}

#[test]
fn derived_enums_are_property_values_and_key_values() {
    use table_core::keys::KeySpec;
    use table_core::typed::{KeyValue, PropertyValue};
    assert_eq!(Contract::EDM_TYPE, EdmType::String);
    assert_eq!(Contract::FullTime.to_value(), Value::from("full-time"));
    assert_eq!(Contract::from_value(Value::from("temp")), Ok(Contract::Temporary));
    assert!(Contract::from_value(Value::Int32(1)).is_err());
    assert_eq!(Contract::PartTime.encode_key(&KeySpec::Plain).unwrap(), "part-time");
    assert_eq!(Contract::decode_key("temp", &KeySpec::Plain), Ok(Contract::Temporary));
    assert!(Contract::decode_key("x", &KeySpec::Plain).is_err());
    assert!(Contract::PartTime.encode_key(&KeySpec::Ticks).is_err());
}

#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(crate = "table_core", partition_key = "p", row_key = "{id}")]
struct Tagged<T: table_core::typed::PropertyValue> {
    id: u32,
    tag: T,
}

#[test]
fn generic_structs_derive() {
    let t = Tagged { id: 7, tag: 1.5f64 };
    assert_eq!(Tagged::<f64>::from_entity(t.to_entity().unwrap()).unwrap(), t);
    assert_eq!(Tagged::<f64>::TAG.lt(2.0).to_string(), "tag lt 2.0");
}

/// Implements nothing: a parameter used only where no trait is needed may be this.
#[derive(Debug, Clone, PartialEq)]
struct Opaque;

/// Bounds are inferred per field, for the traits each field's role uses: `K: KeyValue` for the
/// key, `Option<V>: Property` for the stored option, and `PhantomData<M>: Default` (always
/// true) for the skipped marker, so `M` need implement nothing.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(crate = "table_core", partition_key = "{owner}", row_key = "{id:04}", entity_type = "Generic")]
#[table(lookup(name = "by_owner", partition_key = "owners", row_key = "{owner}"))]
struct Generic<K, V, M> {
    #[table(key_only)]
    owner: K,
    #[table(key_only)]
    id: u32,
    note: Option<V>,
    #[table(json)]
    tags: Vec<V>,
    #[table(skip)]
    kind: std::marker::PhantomData<M>,
}

#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(crate = "table_core")]
enum GenericRow<M> {
    Generic(Generic<String, f64, M>),
    Department(Department),
}

#[test]
fn generic_entities_get_bounds_per_field_not_per_parameter() {
    type G = Generic<String, f64, Opaque>;
    let g: G = Generic {
        owner: "ann".into(),
        id: 7,
        note: Some(1.5),
        tags: vec![2.5],
        kind: std::marker::PhantomData,
    };
    let entity = g.to_entity().unwrap();
    assert_eq!(entity.key(), G::key(&"ann".to_owned(), 7).unwrap());
    assert_eq!(entity.get("tags"), Some(&Value::from("[2.5]")));
    assert_eq!(G::from_entity(entity.clone()).unwrap(), g);
    assert_eq!(G::NOTE.lt(2.0).to_string(), "note lt 2.0");
    assert_eq!(G::BY_OWNER.key(&"ann".to_owned()).unwrap(), EntityKey::new("owners", "ann"));
    assert_eq!(G::OWNER.eq("ann".to_owned()).to_string(), "PartitionKey eq 'ann'");
    assert!(matches!(GenericRow::<Opaque>::from_entity(entity).unwrap(), GenericRow::Generic(x) if x == g));
}

#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(crate = "table_core", partition_key = "p", row_key = "{id}")]
struct Tags {
    id: u32,
    #[table(json)]
    list: Vec<String>,
    #[table(json)]
    scores: std::collections::BTreeMap<String, i32>,
}

#[test]
fn json_fields_take_collections() {
    let t = Tags { id: 1, list: vec!["a".into()], scores: [("x".to_owned(), 2)].into() };
    let entity = t.to_entity().unwrap();
    assert_eq!(entity.get("list"), Some(&Value::from(r#"["a"]"#)));
    assert_eq!(Tags::from_entity(entity).unwrap(), t);
}

/// Fields cut out of a key by width alone: the derive accepts `{at:ticks}{back:..}..` as
/// readable because table-core's `KeySpec::fixed_width` says so, and the codecs must write
/// exactly those widths for the fields to come back.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(crate = "table_core", partition_key = "p")]
#[table(row_key = "{at:ticks}{back:inverted_ticks}{n:ordered}{id:04}{rest}")]
struct Packed {
    #[table(key_only)]
    at: DateTime<Utc>,
    #[table(key_only)]
    back: DateTime<Utc>,
    #[table(key_only)]
    n: i64,
    #[table(key_only)]
    id: u32,
    #[table(key_only)]
    rest: String,
}

#[test]
fn fixed_width_specs_agree_with_the_key_codecs() {
    use table_core::keys;
    let p = Packed {
        at: at("2014-08-22T00:50:32Z"),
        back: at("0001-01-01T00:00:00Z"),
        n: -3,
        id: 42,
        rest: "tail".into(),
    };
    let parts = [
        keys::ticks(p.at).unwrap(),
        keys::inverted_ticks(p.back).unwrap(),
        keys::ordered(i128::from(p.n)).unwrap(),
        keys::zero_pad(i128::from(p.id), 4).unwrap(),
    ];
    let widths: Vec<usize> = parts.iter().map(String::len).collect();
    assert_eq!(widths, [keys::TICKS_DIGITS, keys::TICKS_DIGITS, keys::ORDERED_DIGITS, 4]);
    let entity = p.to_entity().unwrap();
    assert_eq!(entity.row_key, parts.concat() + "tail");
    assert_eq!(Packed::from_entity(entity).unwrap(), p);
}

/// A stored field ahead of a key-only one in the same template.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(crate = "table_core")]
#[table(partition_key = "p", row_key = "{name}-{tag}")]
struct Labelled {
    name: String,
    #[table(key_only)]
    tag: String,
}

#[test]
fn a_stored_field_may_not_move_the_cut_of_a_key_only_one() {
    let plain = Labelled { name: "ann".into(), tag: "x".into() };
    assert_eq!(Labelled::from_entity(plain.to_entity().unwrap()).unwrap(), plain);
    // "a-b-x" would read back as name "a", tag "b-x": refused rather than written.
    let holding = Labelled { name: "a-b".into(), tag: "x".into() };
    assert_eq!(value_error_property(&holding.to_entity().unwrap_err()), "name");
}
