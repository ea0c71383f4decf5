//! `table-server`: the embedded engine ([`table_core::engine::Engine`]) served over the Azure
//! Table REST API, so that any language's SDK can test against the real service's rules
//! without Node.js or Azurite.
//!
//! URLs are path style, like Azurite: `http://127.0.0.1:10002/devstoreaccount1/Tables`, so a
//! `UseDevelopmentStorage=true` connection string works unchanged. Each account is served by
//! its own engine ([`Accounts`]); requests are authorized with SharedKey or SharedKeyLite
//! signatures of the account's key, unless [`Config::auth`] is off.
//!
//! Module map: `server` (listening, connections, graceful shutdown), `service` (one request:
//! body limits, account, authorization, dispatch), `route` (the resource a path names and the
//! query parameters), `operations` (table and entity operations against the engine), `batch`
//! (`$batch` multipart requests and responses), `answer` (responses, service error bodies,
//! common headers), `json` (entities and pages in the three metadata levels), `auth`
//! (SharedKey verification).

#![deny(missing_docs)]

mod accounts;
mod answer;
mod auth;
mod batch;
mod json;
mod operations;
mod route;
mod server;
mod service;

pub use accounts::{Accounts, DEV_ACCOUNT, DEV_KEY};
pub use server::{Config, Server};
