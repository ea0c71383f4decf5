//! `table-server`: the embedded engine ([`table_core::engine::Engine`]) served over the Azure
//! Table REST API, so that any language's SDK can test against the real service's rules
//! without Node.js or Azurite.
//!
//! URLs are path style, like Azurite: `http://127.0.0.1:10002/devstoreaccount1/Tables`, so a
//! `UseDevelopmentStorage=true` connection string works unchanged. Each account is served by
//! its own engine ([`Accounts`]); requests are authorized with SharedKey or SharedKeyLite
//! signatures of either of the account's keys, a table or account SAS, or (over HTTPS,
//! [`Tls`]) a bearer token whose audience, issuer and lifetime are checked but not its
//! signature, unless [`Config::auth`] is off.
//!
//! Deliberate differences from Azurite: the engine's rules where Azurite is lax (key and
//! property limits, value formats, filter semantics, the one-partition rule of batches), the
//! real service's answers where they differ (`Tables('name')` answers that table, error codes
//! such as `OutOfRangeInput`, or `InvalidInput` for a JSON body without a `Content-Type`), a
//! signature dated more than 15 minutes ago refused, SAS fields checked as the service checks
//! them, versions answered as the service answers them (a SAS request served at its `api-version`, else its `sv`, an
//! `x-ms-version` or `sv` the Table service does not know refused, bearer tokens from
//! 2017-11-09 only), and `$select` answered as the real service
//! answers it (only the listed properties, system properties included, and a listed property
//! an entity lacks as `null`, where Azurite leaves it out).
//!
//! The account's CORS rules (set through Set Table Service Properties) are acted on as the
//! service acts on them: an `OPTIONS` preflight on any path of the account is answered,
//! without authorization, by the first rule that allows its origin and method, if it allows
//! the headers too (403 `CorsPreflightFailure` otherwise), and any other request with an
//! `Origin` that a rule allows gets `Access-Control-Allow-Origin` and `-Expose-Headers` (error
//! answers too; reads get `Vary: Origin`), so a browser page using an SDK works against
//! table-server as against the service.
//!
//! Persistence is optional ([`DataDir`], the binary's `--data-dir`): each account's engine
//! logs every change to a write-ahead log before applying it and is snapshotted from time to
//! time, so the data outlives the process, and a kill -9 at any moment loses no answered write.
//! The storage format is serde with postcard (a compact, documented binary format) in frames
//! checked by CRC-32 (crc32fast), rather than an embedded database: the engine keeps all data
//! in memory anyway and only needs an append-only log and a whole-state snapshot, which a
//! key-value store would duplicate without making recovery simpler.
//!
//! The wire code shared with the client (entity JSON reading, multipart splitting, SharedKey
//! strings to sign) is the client's own, through its doc-hidden `wire` and `auth` items, so the
//! two cannot drift apart.
//!
//! Module map, from the socket inward: `server` (listening, TLS, connections, graceful
//! shutdown), `service` (one request: body limits, account, authorization, dispatch), `cors`
//! (preflights and the CORS headers of browser requests, from the account's rules), `auth`
//! (SharedKey verification), `bearer` (bearer tokens, signature unchecked), `sas` (table and
//! account SAS verification and the grant each gives), `version` (the service versions the
//! service knows, and where its answers change), `route` (the resource a path names and
//! the query parameters), `request` (one request as the operations see it), `operations`
//! (table and entity operations against the engine), `batch` (`$batch` multipart requests and
//! responses), `answer` (responses, service error bodies, common headers), `json` (entities
//! and pages in the three metadata levels), `accounts` (accounts, keys and engines),
//! `persist` (`--data-dir`: each account's engine kept across restarts in a write-ahead log
//! plus snapshots).

#![deny(missing_docs)]

mod accounts;
mod answer;
mod auth;
mod batch;
mod bearer;
mod cors;
mod json;
mod operations;
mod persist;
mod request;
mod route;
mod sas;
mod server;
mod service;
mod version;

pub use accounts::{Accounts, DEV_ACCOUNT, DEV_KEY};
pub use persist::{DEFAULT_CHECKPOINT_BYTES, DataDir, DataDirBuilder};
pub use server::{Config, Server, Tls};
