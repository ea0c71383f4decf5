//! Typed key helpers in queries, on both backends: partitions built from field values for
//! composite partition keys, keys and key prefixes that cannot match the type's template
//! refused before any request, and filter columns of key-only fields that are their whole key.

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use conformance::scenario;
use conformance::target::Target;
use table_client::typed::PARTITION_KEY;
use table_client::{ErrorKind, TableEntity, Violation};

/// Sales of one store: the partition is region and store, so `.partition("eu")` can never match.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(partition_key = "{region}_{store:04}", row_key = "sale_{id:06}", rename_all = "PascalCase")]
struct Sale {
    #[table(key_only)]
    region: String,
    #[table(key_only)]
    store: u32,
    #[table(key_only)]
    id: u32,
    amount: i64,
}

/// A site per region and id: both keys are one key-only field, so both have filter columns.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(partition_key = "{region}", row_key = "{id:06}", rename_all = "PascalCase")]
struct Site {
    #[table(key_only)]
    region: String,
    #[table(key_only)]
    id: u32,
    name: String,
}

scenario!(composite_partitions_are_built_from_field_values, whole_key_fields_filter_on_their_key);

/// The violation of a key that cannot match its template.
fn assert_key_mismatch(err: &table_client::Error, value: &str, template: &str) {
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    match err.violation() {
        Some(Violation::QueryKeyMismatch { value: v, template: t, .. }) => {
            assert_eq!((v.as_str(), t.as_str()), (value, template), "{err}");
        }
        other => panic!("expected a key mismatch, got {other:?}: {err}"),
    }
}

async fn composite_partitions_are_built_from_field_values(t: Target) {
    let sales = t.fresh_table().await.typed::<Sale>();
    for (region, store, id) in [("eu", 7, 1), ("eu", 7, 2), ("eu", 8, 3), ("us", 7, 4)] {
        sales.insert(&Sale { region: region.into(), store, id, amount: i64::from(id) * 10 }).await.unwrap();
    }
    let eu7 = Sale::partition_key_for("eu", 7).unwrap();
    assert_eq!(eu7, "eu_0007");
    let found = sales.query().partition(&eu7).collect().await.unwrap();
    assert_eq!(found.iter().map(|s| s.id).collect::<Vec<_>>(), [1, 2]);

    // A value that no partition of the template can equal would silently match nothing.
    let calls = t.engine.as_ref().map(|e| e.faults().calls());
    let err = sales.query().partition("eu").collect().await.unwrap_err();
    assert_key_mismatch(&err, "eu", "{region}_{store:04}");
    let err = sales.query().filter(PARTITION_KEY.eq("eu_7")).collect().await.unwrap_err();
    assert_key_mismatch(&err, "eu_7", "{region}_{store:04}");
    let err = sales.query().partition(&eu7).filter_str("RowKey eq '1'").collect().await.unwrap_err();
    assert_key_mismatch(&err, "1", "sale_{id:06}");
    let err = sales.query_range_in("eu", &Sale::row_key_range(1, 2).unwrap()).collect().await.unwrap_err();
    assert_key_mismatch(&err, "eu", "{region}_{store:04}");
    // A prefix no key can start with: the row keys are `sale_` and six digits.
    let err = sales.query().partition(&eu7).row_key_prefix("order_").collect().await.unwrap_err();
    assert_key_mismatch(&err, "order_", "sale_{id:06}");
    let err = sales.query().partition(&eu7).row_key_prefix("sale_1x").collect().await.unwrap_err();
    assert_key_mismatch(&err, "sale_1x", "sale_{id:06}");
    assert_eq!(t.engine.as_ref().map(|e| e.faults().calls()), calls, "nothing was sent");

    // Prefixes that keys can start with, and the same ranges built from field values, read
    // what they name.
    let prefixed = sales.query().partition(&eu7).row_key_prefix("sale_00000").collect().await.unwrap();
    assert_eq!(prefixed.len(), 2);
    let ids = sales.query_range_in(&eu7, &Sale::row_key_range(2, 3).unwrap()).collect().await.unwrap();
    assert_eq!(ids.iter().map(|s| s.id).collect::<Vec<_>>(), [2]);
    let regions = sales.query_range(&Sale::partition_key_prefix("eu").unwrap()).collect().await.unwrap();
    assert_eq!(regions.iter().map(|s| s.id).collect::<Vec<_>>(), [1, 2, 3]);
}

async fn whole_key_fields_filter_on_their_key(t: Target) {
    let sites = t.fresh_table().await.typed::<Site>();
    for (region, id) in [("Sales", 9), ("Sales", 98), ("Sales", 100), ("Sales", 101), ("Support", 100)] {
        sites.insert(&Site { region: region.into(), id, name: format!("{region}{id}") }).await.unwrap();
    }
    let ids = |found: Vec<Site>| found.iter().map(|s| (s.region.clone(), s.id)).collect::<Vec<_>>();
    let sales = Site::REGION.eq("Sales");
    assert_eq!(sales.to_string(), "PartitionKey eq 'Sales'");

    // Zero padding keeps numeric order: 9 < 98 < 100 as keys too.
    let over_98 = sites.query().filter(sales.clone().and(Site::ID.gt(98))).collect().await.unwrap();
    assert_eq!(ids(over_98), [("Sales".into(), 100), ("Sales".into(), 101)]);
    let one = sites.query().filter(sales.clone().and(Site::ID.eq(9))).collect().await.unwrap();
    assert_eq!(ids(one), [("Sales".into(), 9)]);
    // A value wider than the padding equals no id and lies above every one.
    let all = sites.query().filter(sales.clone().and(Site::ID.lt(1_000_000))).collect().await.unwrap();
    assert_eq!(all.len(), 4);
    let none = sites.query().filter(sales.clone().and(Site::ID.ge(1_000_000))).collect().await.unwrap();
    assert!(none.is_empty());
    // String order across partitions: a partition range from the region column.
    let from_s = Site::REGION.ge("Sales").and(Site::REGION.lt("Sz")).and(Site::ID.eq(100));
    let found = sites.query().filter(from_s).collect().await.unwrap();
    assert_eq!(ids(found), [("Sales".into(), 100), ("Support".into(), 100)]);
}
