//! Log tail: expense claims are keyed by inverted ticks, so each employee's newest claim is
//! the first row of their partition and "the latest three" reads exactly three rows, no sort.

use chrono::{DateTime, Duration, Utc};
use table_client::{Result, TableEntity};

/// An expense claim; the RowKey sorts newest first.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(partition_key = "{employee}", row_key = "{submitted:inverted_ticks}", rename_all = "PascalCase")]
struct ExpenseClaim {
    #[table(key_only)]
    employee: String,
    #[table(key_only)]
    submitted: DateTime<Utc>,
    amount: f64,
    description: String,
}

#[tokio::main]
async fn main() -> Result<()> {
    let service = examples::service()?;
    let table = examples::create_table(&service, "ExpenseClaims").await?;
    let claims = table.typed::<ExpenseClaim>();
    let start = Utc::now() - Duration::days(30);
    for day in 0..10 {
        let claim = ExpenseClaim {
            employee: "empid_000001".into(),
            submitted: start + Duration::days(day),
            amount: 10.0 * (day + 1) as f64,
            description: format!("taxi, day {day}"),
        };
        println!("claim {:>5.1} -> RowKey {}", claim.amount, claim.row_key()?);
        claims.insert(&claim).await?;
    }

    println!("latest three claims:");
    for claim in claims.latest("empid_000001", 3).await? {
        println!("  {} {:>5.1} {}", claim.submitted.date_naive(), claim.amount, claim.description);
    }

    examples::delete_tables(&service, &[&table]).await
}
