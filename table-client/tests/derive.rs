//! `#[derive(TableEntity)]` through the facade: generated code names `::table_client::__private`
//! with no `crate = "..."` override, and users need no other dependency.

use table_client::typed::{IndexKind, PARTITION_KEY};
use table_client::{Entity, EntityKey, TableEntity};

#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(rename_all = "PascalCase")]
#[table(partition_key = "{department}", row_key = "empid_{id:06}")]
#[table(entity_type = "Employee")]
#[table(index(name = "by_email", row_key = "email_{email}"))]
struct Employee {
    department: String,
    #[table(key_only)]
    id: u32,
    last_name: String,
    age: i32,
    email: String,
}

#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(partition_key = "{department}", row_key = "dept", entity_type = "Department")]
struct Department {
    department: String,
}

#[derive(Debug, Clone, PartialEq, TableEntity)]
enum Row {
    Employee(Employee),
    Department(Department),
}

fn don() -> Employee {
    Employee {
        department: "Sales".into(),
        id: 223,
        last_name: "Hall".into(),
        age: 34,
        email: "donh@contoso.com".into(),
    }
}

#[test]
fn derives_through_the_facade() {
    let entity = don().to_entity().unwrap();
    assert_eq!(entity.key(), EntityKey::new("Sales", "empid_000223"));
    assert_eq!(Employee::from_entity(entity.clone()).unwrap(), don());
    assert!(matches!(Row::from_entity(entity).unwrap(), Row::Employee(e) if e == don()));
    let dept = Department { department: "Sales".into() };
    assert!(matches!(
        Row::from_entity(dept.to_entity().unwrap()).unwrap(),
        Row::Department(d) if d == dept
    ));
    assert!(Row::from_entity(Entity::new("Sales", "x").with("EntityType", "Robot")).is_err());
}

#[test]
fn design_guide_filters_through_the_facade() {
    let ids = Employee::row_key_range(100, 199).unwrap();
    assert_eq!(
        ids.in_partition(Employee::partition_key_for("Sales").unwrap()).to_string(),
        "PartitionKey eq 'Sales' and RowKey ge 'empid_000100' and RowKey le 'empid_000199'"
    );
    assert_eq!(
        PARTITION_KEY.eq("Sales").and(Employee::LAST_NAME.eq("Smith")).to_string(),
        "PartitionKey eq 'Sales' and LastName eq 'Smith'"
    );
    assert_eq!(Employee::AGE.gt(30).to_string(), "Age gt 30");
    assert_eq!(Employee::indexes()[0].kind, IndexKind::Secondary);
    assert_eq!(don().index_key("by_email").unwrap(), Some(EntityKey::new("Sales", "email_donh@contoso.com")));
}
