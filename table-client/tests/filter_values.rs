//! Filters and `$select` lists the service cannot take are refused locally with a typed
//! violation, before any request, on both backends: comparisons with NaN or an infinity (no
//! portable literal), filters nested deeper than the parser reads, and `$select` entries that
//! are not property names (`"a,RowKey"` would select two properties).

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use futures::StreamExt;
use table_client::auth::Credential;
use table_client::engine::Engine;
use table_client::typed::Column;
use table_client::{
    Entity, Error, ErrorCode, Filter, MAX_FILTER_NESTING, TableClient, TableServiceClient, Violation,
};
use wiremock::MockServer;

const ACCOUNT: &str = "devstoreaccount1";
const KEY: &str = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

const SCORE: Column<f64> = Column::new("Score");

/// Every way in that must fail locally, each with the violation expected.
async fn refusals(table: &TableClient) -> Vec<(String, Error)> {
    let mut errors = Vec::new();
    for d in [f64::INFINITY, f64::NEG_INFINITY, f64::NAN] {
        for filter in [SCORE.gt(d), Filter::eq("Score", d).or(Filter::eq("A", 1))] {
            let err = table.query().filter(filter.clone()).collect().await.unwrap_err();
            errors.push((format!("{filter}"), err));
        }
    }
    let err = table.query().filter_str("Score lt INF").collect().await.unwrap_err();
    errors.push(("Score lt INF".into(), err));
    let deep = (0..=MAX_FILTER_NESTING).fold(Filter::property("a"), |f, _| !f);
    errors.push(("deep".into(), table.query().filter(deep).collect().await.unwrap_err()));
    let err = table.query().select(["Name", "a,RowKey"]).collect().await.unwrap_err();
    errors.push(("select".into(), err));
    let err = table.get_with_select("p", "r", Some(&["x y".to_owned()])).await.unwrap_err();
    errors.push(("get_with_select".into(), err));
    errors
}

fn check(errors: &[(String, Error)]) {
    for (what, err) in errors {
        assert_eq!(err.code(), Some(&ErrorCode::InvalidInput), "{what}: {err}");
        let expected = match what.as_str() {
            "deep" => matches!(err.violation(), Some(Violation::FilterSyntax { .. })),
            "select" => matches!(
                err.violation(),
                Some(Violation::SelectEntry { index: 1, entry, .. }) if entry == "a,RowKey"
            ),
            "get_with_select" => matches!(
                err.violation(),
                Some(Violation::SelectEntry { index: 0, entry, .. }) if entry == "x y"
            ),
            _ => matches!(
                err.violation(),
                Some(Violation::FilterNonFiniteDouble { property, value })
                    if property == "Score" && !value.is_finite()
            ),
        };
        assert!(expected, "{what}: {:?}", err.violation());
    }
}

#[tokio::test]
async fn the_embedded_engine_refuses_them() {
    let client = TableServiceClient::embedded(Engine::new());
    let table = client.create_table("values").await.unwrap();
    table.insert(Entity::new("p", "r").with("Score", 1.0)).await.unwrap();
    check(&refusals(&table).await);
    // A finite double at either end of the range is a filter like any other.
    let rows = table.query().filter(SCORE.lt(f64::MAX).and(SCORE.gt(-f64::MAX))).collect().await.unwrap();
    assert_eq!(rows.len(), 1);
}

#[tokio::test]
async fn the_http_backend_refuses_them_without_a_request() {
    let server = MockServer::start().await;
    let credential = Credential::shared_key(ACCOUNT, KEY).unwrap();
    let client = TableServiceClient::builder()
        .endpoint(&format!("{}/{ACCOUNT}", server.uri()))
        .credential(credential)
        .build()
        .unwrap();
    check(&refusals(&client.table("values")).await);
    let tables: Vec<_> = client.query_tables(Some(Filter::eq("Score", f64::INFINITY))).collect().await;
    assert!(matches!(
        tables[..],
        [Err(ref e)] if matches!(e.violation(), Some(Violation::FilterNonFiniteDouble { .. }))
    ));
    assert_eq!(server.received_requests().await.unwrap().len(), 0);
}
