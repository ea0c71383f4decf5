//! Key rotation: re-wrapping the content keys of a table's encrypted rows under a new
//! key-encryption key, without touching any property ciphertext.
//!
//! Invariants: a row is written only by a merge of `_ClientEncryptionMetadata1` alone,
//! conditioned on the ETag it was read with, so a concurrent writer's change is never
//! overwritten (a lost race re-reads the row and starts over). Only the envelope's
//! `WrappedContentKey` changes; the format, the entity IV, the library fields and every
//! encrypted value stay byte for byte as they were. Rows already under the new key are left
//! alone, so running a rotation again, or resuming it, is idempotent.

use std::fmt;
use std::sync::Arc;

use futures::StreamExt;
use table_core::{Continuation, ETag, Entity, Error, ErrorKind, Filter, IfMatch, Operation, Result, Value};

use super::key::KeyEncryptionKey;
use super::metadata::{METADATA, Metadata, PROPERTY_LIST};
use super::policy::EncryptionPolicy;
use crate::backend::Write;
use crate::contention::retry_races;
use crate::error::{crypto, decode, invalid_input};
use crate::outcome::is_entity_missing;
use crate::query::Query;
use crate::table::TableClient;

/// How far a rotation has gone, handed to [`KeyRotation::on_progress`] after each page of
/// rows: the counts so far, and where to resume.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RotationProgress {
    /// The counts of the rows done so far.
    pub done: RotationReport,
    /// Where the rows not yet visited start: give `to_string()` of it to
    /// [`KeyRotation::resume`] to carry on later; `None` after the last page.
    pub continuation: Option<Continuation>,
}

/// What a rotation did, by row (the counts of a finished [`KeyRotation::run`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RotationReport {
    /// Rows whose content key was re-wrapped under the new key.
    pub rewrapped: u64,
    /// Encrypted rows already under the new key (rotated earlier, or written since with it).
    pub current: u64,
    /// Rows without encryption metadata, left as they are.
    pub not_encrypted: u64,
    /// Rows deleted by another writer between being listed and being re-wrapped.
    pub gone: u64,
    /// Conditional writes that lost to a concurrent writer and were redone over a fresh read
    /// (each counted once per lost race; the row itself is counted by what the redo found).
    pub retried: u64,
}

/// What one row came to.
enum Outcome {
    Rewrapped,
    Current,
    NotEncrypted,
    Gone,
}

/// The callback of [`KeyRotation::on_progress`].
type ProgressReport = dyn FnMut(&RotationProgress) + Send;

/// A key rotation of one table, from [`TableClient::rotate_encryption_key`]: configure it,
/// then [`run`](Self::run) it.
#[must_use = "a rotation does nothing until `run` is awaited"]
pub struct KeyRotation {
    table: TableClient,
    policy: Option<Arc<EncryptionPolicy>>,
    new_key: Arc<dyn KeyEncryptionKey>,
    query: Query<Entity>,
    on_progress: Option<Box<ProgressReport>>,
}

impl fmt::Debug for KeyRotation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyRotation")
            .field("table", &self.table.name())
            .field("new_key", &self.new_key.key_id())
            .field("query", &self.query)
            .finish_non_exhaustive()
    }
}

impl TableClient {
    /// A rotation of this table's encrypted rows to `new_key`: each row's content key is
    /// unwrapped with the client's [`EncryptionPolicy`] (its key resolver must know the old
    /// keys) and wrapped again under `new_key`; only `_ClientEncryptionMetadata1` is written,
    /// so no encrypted value changes. Works on rows of both formats.
    ///
    /// Each row is written by a merge of that one property, conditioned on the ETag it was read
    /// with: when another writer changed the row in between, the row is read again and done
    /// again (a row that writer already wrapped under `new_key` is then left alone), so no
    /// concurrent write is lost. Rows already under `new_key` are skipped, so a rotation can be
    /// run again, or [resumed](KeyRotation::resume) from the continuation of its last
    /// [progress](KeyRotation::on_progress), without harm.
    ///
    /// After it, switch the policy's own key to `new_key`; keep the old key in the resolver
    /// until every rotation that may still be running has finished.
    ///
    /// ```
    /// use table_client::encryption::{AesKeyWrap, EncryptionPolicy, KeyRing};
    /// use table_client::engine::Engine;
    /// use table_client::{Entity, TableServiceClient};
    ///
    /// # #[tokio::main]
    /// # async fn main() -> table_client::Result<()> {
    /// let engine = Engine::new();
    /// let secret = |_: &str, _: &str, name: &str| name == "Ssn";
    /// let old = EncryptionPolicy::new(AesKeyWrap::new("kek-2024", [1; 32])).encrypt_properties(secret);
    /// let service = TableServiceClient::builder().engine(engine.clone()).encryption(old).build()?;
    /// let table = service.create_table("People").await?;
    /// table.insert(Entity::new("p", "ann").with("Ssn", "123-45-6789")).await?;
    ///
    /// // A client whose resolver knows the old key and the new one rotates.
    /// let ring = KeyRing::new().with(AesKeyWrap::new("kek-2024", [1; 32]));
    /// let both = EncryptionPolicy::new(AesKeyWrap::new("kek-2025", [2; 32])).key_resolver(ring);
    /// let service = TableServiceClient::builder().engine(engine.clone()).encryption(both).build()?;
    /// let report = service
    ///     .table("People")
    ///     .rotate_encryption_key(AesKeyWrap::new("kek-2025", [2; 32]))
    ///     .on_progress(|p| println!("{} re-wrapped so far", p.done.rewrapped))
    ///     .run()
    ///     .await?;
    /// assert_eq!(report.rewrapped, 1);
    ///
    /// // The new key alone reads the row now.
    /// let new = EncryptionPolicy::new(AesKeyWrap::new("kek-2025", [2; 32]));
    /// let service = TableServiceClient::builder().engine(engine).encryption(new).build()?;
    /// assert_eq!(service.table("People").get("p", "ann").await?.get("Ssn"), Some(&"123-45-6789".into()));
    /// # Ok(())
    /// # }
    /// ```
    pub fn rotate_encryption_key(&self, new_key: impl KeyEncryptionKey + 'static) -> KeyRotation {
        // The rows are read as stored: the rotation never decrypts a value.
        let raw = TableClient::new(self.backend().clone(), self.name());
        KeyRotation {
            query: raw.query().select([METADATA, PROPERTY_LIST]),
            table: raw,
            policy: self.encryption().cloned(),
            new_key: Arc::new(new_key),
            on_progress: None,
        }
    }
}

impl KeyRotation {
    /// Only the rows matching `condition` (added with `and` to earlier ones). Default: every
    /// row of the table.
    pub fn filter(mut self, condition: Filter) -> Self {
        self.query = self.query.filter(condition);
        self
    }

    /// Only the rows of this partition.
    pub fn partition(mut self, partition_key: &str) -> Self {
        self.query = self.query.partition(partition_key);
        self
    }

    /// At most `n` rows per page, so progress is reported (and a continuation handed out) at
    /// least every `n` rows (1..=1000; default: the service's 1000).
    pub fn max_per_page(mut self, n: u32) -> Self {
        self.query = self.query.max_per_page(n);
        self
    }

    /// Starts where an earlier rotation with the same filter stopped: `token` is the
    /// `to_string()` of a [`RotationProgress::continuation`].
    pub fn resume(mut self, token: &str) -> Self {
        self.query = self.query.resume(token);
        self
    }

    /// Calls `report` after each page of rows with the counts so far and the continuation.
    /// It runs on the rotation's task: keep it short.
    pub fn on_progress(mut self, report: impl FnMut(&RotationProgress) + Send + 'static) -> Self {
        self.on_progress = Some(Box::new(report));
        self
    }

    /// Re-wraps every row the rotation covers, page by page, and returns the counts.
    ///
    /// Errors, checked in this order: [`ErrorKind::InvalidInput`] when the client has no
    /// encryption policy (nothing could unwrap the old keys); then, stopping at the first row
    /// that fails, with the table and the row's keys in the message:
    /// [`ErrorKind::Crypto`] for incomplete or unreadable metadata, an old key the policy
    /// does not know or that fails to unwrap, or a new key that fails to wrap;
    /// [`ErrorKind::Contention`] when concurrent writers changed a row on every attempt; and
    /// the errors of the query and of the write. Rows done before the failure stay done, and
    /// the last progress report's continuation resumes after them.
    pub async fn run(self) -> Result<RotationReport> {
        let KeyRotation { table, policy, new_key, query, mut on_progress } = self;
        let policy = policy.ok_or_else(|| {
            invalid_input(format!(
                "key rotation of table {}: the client has no encryption policy, whose key resolver \
                 must unwrap the old keys (set one with `TableServiceClientBuilder::encryption`)",
                table.name()
            ))
        })?;
        let rotation = Rotation { table: &table, policy: &policy, new_key: new_key.as_ref() };
        let mut done = RotationReport::default();
        let mut pages = query.pages();
        while let Some(page) = pages.next().await {
            let page = page?;
            for row in page.items {
                match rotation.row(row, &mut done.retried).await? {
                    Outcome::Rewrapped => done.rewrapped += 1,
                    Outcome::Current => done.current += 1,
                    Outcome::NotEncrypted => done.not_encrypted += 1,
                    Outcome::Gone => done.gone += 1,
                }
            }
            if let Some(report) = on_progress.as_mut() {
                report(&RotationProgress { done, continuation: page.continuation });
            }
        }
        Ok(done)
    }
}

/// The state one rotation shares across its rows.
struct Rotation<'a> {
    table: &'a TableClient,
    policy: &'a EncryptionPolicy,
    new_key: &'a dyn KeyEncryptionKey,
}

impl Rotation<'_> {
    /// Re-wraps one listed row, reading it again and redoing it after each lost race (counted
    /// in `retried`), within the contention budget.
    async fn row(&self, listed: Entity, retried: &mut u64) -> Result<Outcome> {
        let subject = format!("key rotation of entity {} in table {}", listed.key(), self.table.name());
        let (partition_key, row_key) = (listed.partition_key.clone(), listed.row_key.clone());
        let mut first = Some(listed);
        let mut attempts: u64 = 0;
        let outcome = retry_races(&subject, is_lost_race, || {
            attempts += 1;
            // The listed row on the first attempt; a fresh read after a lost race.
            let listed = first.take();
            let (partition_key, row_key) = (&partition_key, &row_key);
            async move {
                let row = match listed {
                    Some(row) => row,
                    None => {
                        let select = [METADATA.to_owned(), PROPERTY_LIST.to_owned()];
                        match self.table.get_with_select(partition_key, row_key, Some(&select)).await {
                            Ok(row) => row,
                            Err(e) if is_entity_missing(&e) => return Ok(Outcome::Gone),
                            Err(e) => return Err(e),
                        }
                    }
                };
                match self.attempt(row).await {
                    // Deleted since it was read: nothing is left to re-wrap.
                    Err(e) if is_entity_missing(&e) => Ok(Outcome::Gone),
                    outcome => outcome,
                }
            }
        })
        .await;
        *retried += attempts.saturating_sub(1);
        outcome
    }

    /// One attempt at `row` as read: skipped, or re-wrapped by a merge conditioned on its ETag.
    async fn attempt(&self, row: Entity) -> Result<Outcome> {
        let at = || format!("key rotation of entity {} in table {}", row.key(), self.table.name());
        let text = match (row.get(METADATA), row.get(PROPERTY_LIST)) {
            (None, None) => return Ok(Outcome::NotEncrypted),
            (Some(Value::String(text)), Some(Value::Binary(_))) => text,
            (metadata, list) => {
                return Err(crypto(format!(
                    "{}: the encryption metadata is incomplete ({METADATA} is {}, {PROPERTY_LIST} is {})",
                    at(),
                    metadata.map_or("missing".to_owned(), |v| v.edm_type().to_string()),
                    list.map_or("missing".to_owned(), |v| v.edm_type().to_string()),
                )));
            }
        };
        let metadata = Metadata::parse(text).map_err(|e| crypto(format!("{}: {e}", at())))?;
        if metadata.key_id == self.new_key.key_id() {
            return Ok(Outcome::Current);
        }
        let content_key = self.policy.unwrap(&at, &metadata).await?;
        let wrapped = self.new_key.wrap_key(&content_key).await.map_err(|e| {
            crypto(format!(
                "{}: the new key-encryption key `{}` could not wrap the content key",
                at(),
                self.new_key.key_id()
            ))
            .with_source(e)
        })?;
        let envelope = Metadata::rewrap(text, self.new_key.key_id(), self.new_key.algorithm(), &wrapped)
            .map_err(|e| crypto(format!("{}: {e}", at())))?;
        let etag: ETag =
            row.etag.clone().ok_or_else(|| decode(format!("{}: the row was read without an ETag", at())))?;
        // Straight to the backend: this write changes no ciphertext, so the policy's refusal
        // of merges of encrypted rows (which protects the name list) does not apply.
        let merge = Operation::Merge {
            entity: Entity::new(&row.partition_key, &row.row_key).with(METADATA, envelope),
            if_match: IfMatch::ETag(etag),
        };
        self.table
            .backend()
            .execute(self.table.name(), Write::Unchecked(merge))
            .await
            .map(|_| Outcome::Rewrapped)
    }
}

/// A conditional write that lost to a concurrent writer: the row changed (412).
fn is_lost_race(e: &Error) -> bool {
    e.kind() == ErrorKind::PreconditionFailed
}
