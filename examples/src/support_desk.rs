//! A newcomer's application, written from the README and the API docs: a support desk.
//!
//! - Composite keys: one partition per tenant and project (`"{tenant}_{project}"`), built from
//!   field values with `Ticket::partition_key_for(..)`, never by hand.
//! - A log tail: each ticket's events sort newest first (`{at:inverted_ticks}`), so "the
//!   latest events" read only the first rows of a key prefix.
//! - An index: an index entity per assignee lists their tickets (`lookup(...)`), read through
//!   the typed handle `Ticket::BY_ASSIGNEE`.
//! - A typed transaction: a ticket, its first event and the project's summary are written
//!   together, with the assignee's index entity, all or nothing.
//! - A typed stream and a resumed query: the open tickets streamed; the same listing read one
//!   page at a time, resuming from a continuation token as a web page would.
//! - An offline unit test (at the bottom): the desk's rules checked on the embedded engine.
//!
//! Tickets, events and the summary share the project's partition, so each typed query names the
//! row key prefix of its type.

use chrono::{DateTime, Duration, Utc};
use futures::StreamExt;
use table_client::{ETag, IfMatch, PropertyValue, Query, Result, TableClient, TableEntity, TypedTransaction};

/// How urgent a ticket is, stored as its name.
#[derive(Debug, Clone, Copy, PartialEq, PropertyValue)]
enum Severity {
    Low,
    High,
}

/// A ticket: numbered per project, listed per assignee by an index entity.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(partition_key = "{tenant}_{project}", row_key = "ticket_{number:06}", rename_all = "PascalCase")]
#[table(entity_type = "Ticket", version = 1)]
#[table(lookup(name = "by_assignee", row_key = "assignee_{assignee}"))]
struct Ticket {
    #[table(key_only)]
    tenant: String,
    #[table(key_only)]
    project: String,
    #[table(key_only)]
    number: u32,
    title: String,
    assignee: String,
    severity: Severity,
    open: bool,
}

/// Something that happened to a ticket; a ticket's events sort newest first.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(partition_key = "{tenant}_{project}", row_key = "event_{number:06}_{at:inverted_ticks}")]
#[table(entity_type = "TicketEvent", rename_all = "PascalCase")]
struct TicketEvent {
    #[table(key_only)]
    tenant: String,
    #[table(key_only)]
    project: String,
    #[table(key_only)]
    number: u32,
    #[table(key_only)]
    at: DateTime<Utc>,
    text: String,
}

/// The project's counters, beside its tickets so that they change in the same transaction.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(partition_key = "{tenant}_{project}", row_key = "summary", rename_all = "PascalCase")]
#[table(entity_type = "ProjectSummary")]
struct ProjectSummary {
    #[table(key_only)]
    tenant: String,
    #[table(key_only)]
    project: String,
    open_tickets: i32,
    /// The version read, to write the next count only over it.
    #[table(etag)]
    etag: Option<ETag>,
}

/// The desk of one tenant's project.
struct Desk {
    table: TableClient,
    tenant: String,
    project: String,
}

impl Desk {
    fn partition_key(&self) -> Result<String> {
        Ticket::partition_key_for(&self.tenant, &self.project)
    }

    fn event(&self, number: u32, at: DateTime<Utc>, text: &str) -> TicketEvent {
        let (tenant, project) = (self.tenant.clone(), self.project.clone());
        TicketEvent { tenant, project, number, at, text: text.into() }
    }

    /// The summary as stored (with its ETag), or a new one (without).
    async fn summary(&self) -> Result<ProjectSummary> {
        let key = ProjectSummary::key(&self.tenant, &self.project)?;
        let stored = self.table.typed::<ProjectSummary>().get_if_exists(&key).await?;
        let (tenant, project) = (self.tenant.clone(), self.project.clone());
        Ok(stored.unwrap_or(ProjectSummary { tenant, project, open_tickets: 0, etag: None }))
    }

    /// Adds `summary`, with `change` applied, to `transaction`: over the version read, so a
    /// concurrent change fails the whole transaction instead of losing a count.
    async fn count(&self, transaction: TypedTransaction, change: i32) -> Result<TypedTransaction> {
        let mut summary = self.summary().await?;
        summary.open_tickets += change;
        Ok(match summary.etag.take() {
            Some(etag) => transaction.replace(&summary, IfMatch::ETag(etag)),
            None => transaction.insert(&summary),
        })
    }

    /// Opens a ticket: the ticket, its first event and the summary in one transaction (the
    /// assignee's index entity joins it), so the count never disagrees with the tickets.
    async fn open(&self, number: u32, title: &str, assignee: &str, at: DateTime<Utc>) -> Result<Ticket> {
        let ticket = Ticket {
            tenant: self.tenant.clone(),
            project: self.project.clone(),
            number,
            title: title.into(),
            assignee: assignee.into(),
            severity: if title.contains("down") { Severity::High } else { Severity::Low },
            open: true,
        };
        let transaction =
            self.table.typed_transaction().insert(&ticket).insert(&self.event(number, at, "opened"));
        self.count(transaction, 1).await?.submit().await?;
        Ok(ticket)
    }

    /// Closes a ticket, with an event and the summary, in one transaction.
    async fn close(&self, number: u32, at: DateTime<Utc>) -> Result<()> {
        let tickets = self.table.typed::<Ticket>();
        let mut ticket = tickets.get(&Ticket::key(&self.tenant, &self.project, number)?).await?;
        ticket.open = false;
        let transaction = self
            .table
            .typed_transaction()
            .replace(&ticket, IfMatch::Any)
            .insert(&self.event(number, at, "closed"));
        self.count(transaction, -1).await?.submit().await?;
        Ok(())
    }

    /// A ticket's newest `n` events: the first rows of its key prefix (the log tail).
    async fn latest_events(&self, number: u32, n: usize) -> Result<Vec<TicketEvent>> {
        let events = self.table.typed::<TicketEvent>();
        let prefix = TicketEvent::row_key_prefix(number)?;
        events.query().partition(&self.partition_key()?).filter(prefix.to_filter()).top(n).collect().await
    }

    /// The query of the project's tickets.
    fn tickets(&self) -> Result<Query<Ticket>> {
        let tickets = self.table.typed::<Ticket>();
        let all = Ticket::row_key_prefix()?;
        Ok(tickets.query().partition(&self.partition_key()?).filter(all.to_filter()))
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let service = examples::service()?;
    let table = examples::create_table(&service, "SupportDesk").await?;
    let desk = Desk { table: table.clone(), tenant: "contoso".into(), project: "web".into() };
    let start = Utc::now();

    let titles = ["login page down", "typo on pricing", "slow search", "checkout down", "dark mode"];
    for (number, title) in (1..).zip(titles) {
        let assignee = if number % 2 == 1 { "ann" } else { "raj" };
        desk.open(number, title, assignee, start + Duration::minutes(number.into())).await?;
    }
    desk.close(2, start + Duration::hours(1)).await?;
    println!("opened {} tickets, closed #2", titles.len());

    // The log tail: ticket 2's events, newest first.
    let events = desk.latest_events(2, 10).await?;
    let texts: Vec<&str> = events.iter().map(|e| e.text.as_str()).collect();
    println!("ticket #2 events, newest first: {texts:?}");
    examples::check(texts == ["closed", "opened"], "ticket #2's events newest first")?;

    // The index: Ann's tickets, read through the typed handle.
    let tickets = table.typed::<Ticket>();
    let ann = Ticket::BY_ASSIGNEE.key(&desk.tenant, &desk.project, "ann")?;
    let mut anns: Vec<u32> = Vec::new();
    let mut listed = tickets.lookup(Ticket::BY_ASSIGNEE, &ann, 4);
    while let Some(ticket) = listed.next().await {
        anns.push(ticket?.number);
    }
    anns.sort_unstable();
    println!("ann's tickets: {anns:?}");
    examples::check(anns == [1, 3, 5], "ann's tickets 1, 3 and 5")?;

    // A typed stream of the open, urgent tickets (no pinning needed).
    let mut urgent =
        desk.tickets()?.filter(Ticket::OPEN.eq(true).and(Ticket::SEVERITY.eq(Severity::High))).stream();
    let mut urgent_titles = Vec::new();
    while let Some(ticket) = urgent.next().await {
        urgent_titles.push(ticket?.title);
    }
    println!("open and urgent: {urgent_titles:?}");
    examples::check(urgent_titles == ["login page down", "checkout down"], "two urgent tickets")?;

    // A resumed query: two tickets per page, the token kept between "requests" as text.
    let mut token: Option<String> = None;
    let mut pages = 0;
    let mut seen = Vec::new();
    loop {
        let query = desk.tickets()?.max_per_page(2);
        let query = match &token {
            Some(token) => query.resume(token),
            None => query,
        };
        let Some(page) = query.pages().next().await else { break };
        let page = page?;
        pages += 1;
        seen.extend(page.items.iter().map(|t| t.number));
        match page.continuation {
            Some(next) => token = Some(next.to_string()),
            None => break,
        }
    }
    println!("listed tickets {seen:?} over {pages} resumed pages");
    examples::check(seen == [1, 2, 3, 4, 5] && pages == 3, "five tickets over three pages")?;

    let summary =
        table.typed::<ProjectSummary>().get(&ProjectSummary::key(&desk.tenant, &desk.project)?).await?;
    println!("summary: {} open tickets", summary.open_tickets);
    examples::check(summary.open_tickets == 4, "four open tickets")?;
    let report = tickets.verify_indexes().await?;
    examples::check(report.is_consistent(), "the assignee index consistent")?;

    examples::delete_tables(&service, &[&table]).await
}

/// The desk's rules, checked offline: a unit test on the embedded engine needs no server and
/// runs in milliseconds.
#[cfg(test)]
mod tests {
    use table_client::TableServiceClient;
    use table_client::engine::Engine;

    use super::*;

    #[tokio::test]
    async fn closing_a_ticket_counts_it_and_keeps_the_assignee_index() -> Result<()> {
        let service = TableServiceClient::embedded(Engine::new());
        let table = service.create_table("Desk").await?;
        let desk = Desk { table: table.clone(), tenant: "t".into(), project: "p".into() };
        let now = Utc::now();
        desk.open(1, "printer down", "ann", now).await?;
        desk.open(2, "new laptop", "ann", now).await?;
        desk.close(1, now + Duration::seconds(1)).await?;

        let summary = table.typed::<ProjectSummary>().get(&ProjectSummary::key("t", "p")?).await?;
        assert_eq!(summary.open_tickets, 1);
        let events = desk.latest_events(1, 1).await?;
        assert_eq!(events[0].text, "closed");
        assert!(table.typed::<Ticket>().verify_indexes().await?.is_consistent());
        // A partition value that no tenant and project can build is refused before any request.
        let wrong = table.typed::<Ticket>().query().partition("contoso").collect().await;
        assert_eq!(wrong.unwrap_err().kind(), table_client::ErrorKind::InvalidInput);
        Ok(())
    }
}
