//! Query streams are `Unpin`: every listing is polled in place with
//! `while let Some(x) = stream.next().await`, no pinning, and stays lazy (a page is fetched
//! only when the previous one has been consumed). Streaming and collecting a query give the
//! same rows, and a failed page ends both.

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use std::num::NonZeroU64;

use futures::StreamExt;
use table_client::engine::{Engine, FaultSpec};
use table_client::{Entity, RetryPolicy, TableClient, TableEntity, TableServiceClient};

#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(rename_all = "PascalCase")]
#[table(partition_key = "{department}", row_key = "{id:06}")]
struct Employee {
    department: String,
    #[table(key_only)]
    id: u32,
    age: i32,
}

/// A table on a fresh embedded engine (returned so requests can be counted) with `rows`
/// employees in partition `Sales`.
async fn seeded(rows: u32) -> (Engine, TableClient) {
    let engine = Engine::new();
    let service = TableServiceClient::builder().engine(engine.clone()).build().unwrap();
    let (table, _) = service.create_table_if_not_exists("streams").await.unwrap();
    let employees = table.typed::<Employee>();
    for id in 0..rows {
        employees
            .insert(&Employee { department: "Sales".into(), id, age: 20 + (id % 40) as i32 })
            .await
            .unwrap();
    }
    (engine, table)
}

#[tokio::test]
async fn an_untyped_stream_is_polled_in_place_and_fetches_only_the_pages_consumed() {
    let (engine, table) = seeded(1000).await;
    let before = engine.faults().calls();
    let mut rows = table.query().partition("Sales").max_per_page(100).stream();
    assert_eq!(engine.faults().calls(), before, "nothing is requested before the first poll");
    let mut seen: Vec<Entity> = Vec::new();
    while let Some(row) = rows.next().await {
        seen.push(row.unwrap());
        if seen.len() == 150 {
            break;
        }
    }
    assert_eq!(seen.last().unwrap().row_key, "000149");
    assert_eq!(engine.faults().calls() - before, 2, "150 rows of 100-row pages need exactly 2 requests");
}

#[tokio::test]
async fn a_typed_stream_is_polled_in_place() {
    let (_, table) = seeded(250).await;
    let employees = table.typed::<Employee>();
    let mut over_50 =
        employees.query().partition("Sales").filter(Employee::AGE.gt(50)).max_per_page(10).stream();
    let mut ids = Vec::new();
    while let Some(employee) = over_50.next().await {
        let employee = employee.unwrap();
        assert!(employee.age > 50);
        ids.push(employee.id);
    }
    let want: Vec<u32> = (0..250).filter(|id| 20 + (id % 40) > 50).collect();
    assert_eq!(ids, want);
}

#[tokio::test]
async fn pages_and_table_listings_are_polled_in_place() {
    let (_, table) = seeded(25).await;
    let mut pages = table.query().max_per_page(10).pages();
    let mut sizes = Vec::new();
    while let Some(page) = pages.next().await {
        sizes.push(page.unwrap().items.len());
    }
    assert_eq!(sizes, [10, 10, 5]);

    let service = TableServiceClient::builder().engine(Engine::new()).build().unwrap();
    for name in ["alpha", "beta"] {
        service.create_table(name).await.unwrap();
    }
    let mut names = service.list_tables();
    let mut listed = Vec::new();
    while let Some(name) = names.next().await {
        listed.push(name.unwrap());
    }
    assert_eq!(listed, ["alpha", "beta"]);
}

#[tokio::test]
async fn a_stream_moves_into_a_spawned_task() {
    let (_, table) = seeded(30).await;
    let mut rows = table.query().max_per_page(7).stream();
    let count = tokio::spawn(async move {
        let mut n = 0;
        while let Some(row) = rows.next().await {
            row.unwrap();
            n += 1;
        }
        n
    });
    assert_eq!(count.await.unwrap(), 30);
}

/// A service client on `engine` that never retries, so an injected fault is the answer.
fn without_retries(engine: &Engine) -> TableServiceClient {
    TableServiceClient::builder().engine(engine.clone()).retry(RetryPolicy::none()).build().unwrap()
}

#[tokio::test]
async fn a_typed_query_streams_and_collects_every_page_in_order_and_stops_at_a_failed_page() {
    let (engine, _) = seeded(45).await;
    let employees = without_retries(&engine).table("streams").typed::<Employee>();
    let query = || employees.query().partition("Sales").max_per_page(10);
    let collected = query().collect().await.unwrap();
    assert_eq!(collected.iter().map(|e| e.id).collect::<Vec<_>>(), (0..45).collect::<Vec<_>>());
    let streamed: Vec<Employee> = query().stream().map(Result::unwrap).collect().await;
    assert_eq!(streamed, collected);

    // The third page fails: the stream yields the two pages before it, then the error, then
    // ends; collecting fails with that error.
    engine.faults().fail_call(NonZeroU64::new(3).unwrap(), FaultSpec::server_busy());
    let mut stream = query().stream();
    let mut before_failure = 0;
    let failure = loop {
        match stream.next().await.unwrap() {
            Ok(_) => before_failure += 1,
            Err(e) => break e,
        }
    };
    assert_eq!((before_failure, failure.status()), (20, Some(503)));
    assert!(stream.next().await.is_none(), "a stream ends after its error");
    engine.faults().fail_call(NonZeroU64::new(3).unwrap(), FaultSpec::server_busy());
    assert_eq!(query().collect().await.unwrap_err().status(), Some(503));
}
