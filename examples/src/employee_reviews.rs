//! Compound keys: reviews live in the department partition under
//! `review_<employee id>_<date ticks>`, so "every review of employee 2" is a RowKey prefix and
//! "employee 2's reviews this year" a RowKey range: ordered scans of a contiguous slice.

use chrono::{DateTime, Utc};
use table_client::{Result, TableEntity};

/// A performance review.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(
    partition_key = "{department}",
    row_key = "review_{employee_id:06}_{reviewed:ticks}",
    rename_all = "PascalCase"
)]
struct Review {
    #[table(key_only)]
    department: String,
    #[table(key_only)]
    employee_id: u32,
    #[table(key_only)]
    reviewed: DateTime<Utc>,
    rating: i32,
    reviewer: String,
}

fn date(s: &str) -> Result<DateTime<Utc>> {
    s.parse().map_err(|e| table_client::Error::other(format!("{s:?} is not a date")).with_source(e))
}

#[tokio::main]
async fn main() -> Result<()> {
    let service = examples::service()?;
    let table = examples::create_table(&service, "Reviews").await?;
    let reviews = table.typed::<Review>();
    for (employee_id, reviewed, rating) in [
        (2, "2024-06-30T00:00:00Z", 3),
        (2, "2025-06-30T00:00:00Z", 4),
        (2, "2025-12-31T00:00:00Z", 5),
        (1, "2025-06-30T00:00:00Z", 4),
        (20, "2025-06-30T00:00:00Z", 2),
    ] {
        let review = Review {
            department: "Sales".into(),
            employee_id,
            reviewed: date(reviewed)?,
            rating,
            reviewer: "Don Hall".into(),
        };
        reviews.insert(&review).await?;
    }

    let every = Review::row_key_prefix(2)?;
    println!("filter: {}", every.in_partition("Sales"));
    for r in reviews.query_range_in("Sales", &every).collect().await? {
        println!("  employee {} on {}: {}", r.employee_id, r.reviewed.date_naive(), r.rating);
    }

    let in_2025 = Review::row_key_range(2, date("2025-01-01T00:00:00Z")?, date("2025-12-31T23:59:59Z")?)?;
    let found = reviews.query_range_in("Sales", &in_2025).collect().await?;
    println!("employee 2's reviews in 2025: {}", found.len());

    examples::delete_tables(&service, &[&table]).await
}
