//! Table and entity operations (protocol doc sections 5 and 6): each reads its request, calls
//! the engine once, and writes the service's answer. The engine decides every rule, in the
//! service's order; what is checked here is only the request's shape (a readable body, the
//! keys an insert needs, well-formed query parameters and headers).

use bytes::Bytes;
use hyper::Method;
use hyper::header::HeaderMap;
use table_client::wire::decode_request_entity;
use table_client::wire::url::{entity_path, table_path};
use table_core::engine::Engine;
use table_core::{
    Continuation, ETag, Entity, EntityKey, Error, ErrorCode, Filter, IfMatch, Operation, QueryRequest,
    TableQuery, WriteOutcome,
};

use crate::answer::{Answer, Failure, Metadata};
use crate::json::{self, Links};
use crate::route::{Query, Resource};
use crate::sas::{Grant, TableOperation};
use crate::service::text_header;

/// Why a request gets no success answer.
#[derive(Debug)]
pub(crate) enum Refused {
    /// The service's error answer.
    Failure(Failure),
    /// No answer at all: the connection is closed (an injected fault that loses the answer).
    Dropped,
}

impl From<Failure> for Refused {
    fn from(failure: Failure) -> Refused {
        Refused::Failure(failure)
    }
}

impl From<Error> for Refused {
    /// An engine error without a status is an injected timeout: its answer is lost.
    fn from(error: Error) -> Refused {
        match error.status() {
            Some(_) => Refused::Failure(Failure::from(error)),
            None => Refused::Dropped,
        }
    }
}

/// The HTTP methods of the Table service, `MERGE` and `PATCH` being one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verb {
    Get,
    Post,
    Put,
    Merge,
    Delete,
    Other,
}

/// The verb of a request: its method, or for a `POST` the `X-HTTP-Method` it carries (how
/// older clients send `MERGE`, `PUT` and `DELETE` through proxies that only pass `POST`).
pub(crate) fn method(method: &Method, headers: &HeaderMap) -> Result<Verb, Failure> {
    let tunnelled = headers.get_all("x-http-method").iter().collect::<Vec<_>>();
    let verb = match tunnelled.as_slice() {
        [] => method.as_str(),
        [_] if method != Method::POST => {
            return Err(Failure::new(
                400,
                ErrorCode::Other("XMethodNotUsingPost".into()),
                "The request uses X-HTTP-Method with an HTTP verb other than POST.",
            ));
        }
        [value] => match value.to_str() {
            Ok(v @ ("MERGE" | "PUT" | "DELETE" | "PATCH")) => v,
            _ => {
                return Err(Failure::new(
                    400,
                    ErrorCode::Other("XMethodIncorrectValue".into()),
                    "The specified X-HTTP-Method is invalid.",
                ));
            }
        },
        _ => {
            return Err(Failure::new(
                400,
                ErrorCode::Other("XMethodIncorrectCount".into()),
                "More than one X-HTTP-Method is specified.",
            ));
        }
    };
    Ok(verb_of(verb))
}

/// The verb named `text` (the request line of a `$batch` part, too).
pub(crate) fn verb_of(text: &str) -> Verb {
    match text {
        "GET" => Verb::Get,
        "POST" => Verb::Post,
        "PUT" => Verb::Put,
        "MERGE" | "PATCH" => Verb::Merge,
        "DELETE" => Verb::Delete,
        _ => Verb::Other,
    }
}

/// One request as the operations need it.
#[derive(Debug)]
pub(crate) struct Call<'a> {
    pub(crate) engine: &'a Engine,
    pub(crate) account: &'a str,
    /// `http://{host}/{account}`: the base of `Location` and the `odata.*` links.
    pub(crate) base: &'a str,
    pub(crate) method: Verb,
    pub(crate) headers: &'a HeaderMap,
    pub(crate) query: &'a Query,
    pub(crate) body: &'a Bytes,
    pub(crate) request_id: &'a str,
    /// What the request's table SAS allows; `None`: the account key's full rights.
    pub(crate) grant: Option<&'a Grant>,
}

impl Call<'_> {
    /// The metadata level the answer is written in: `$format`, else `Accept`. Refused with
    /// 415 `AtomFormatNotSupported` when neither asks for JSON (the service no longer writes
    /// Atom).
    fn metadata(&self) -> Result<Metadata, Failure> {
        let asked = self.query.get("$format").or_else(|| text_header(self.headers, "accept")).unwrap_or("");
        Metadata::from_accept(asked).ok_or_else(|| {
            Failure::new(
                415,
                ErrorCode::Other("AtomFormatNotSupported".into()),
                "Atom format is not supported.",
            )
        })
    }

    fn links(&self, metadata: Metadata) -> Links<'_> {
        Links { base: self.base, account: self.account, metadata }
    }

    /// `Prefer: return-no-content` (else the default, `return-content`).
    fn no_content(&self) -> bool {
        text_header(self.headers, "prefer")
            .is_some_and(|p| p.trim().eq_ignore_ascii_case("return-no-content"))
    }

    /// A write under a table SAS needs its permission and a key in range.
    pub(crate) fn check_write(&self, table: &str, operation: &Operation) -> Result<(), Failure> {
        self.grant.map_or(Ok(()), |grant| grant.check_write(table, operation))
    }

    /// The `If-Match` condition, if any.
    fn if_match(&self) -> Result<Option<IfMatch>, Failure> {
        let Some(value) = self.headers.get("if-match") else {
            return Ok(None);
        };
        let text = value.to_str().map_err(|_| Failure::invalid_input("If-Match is not visible ASCII"))?;
        Ok(Some(if text == "*" { IfMatch::Any } else { IfMatch::ETag(ETag::new(text)) }))
    }
}

/// Runs the operation `resource` and the method name.
pub(crate) fn dispatch(call: &Call<'_>, resource: &Resource) -> Result<Answer, Refused> {
    if let Some(grant) = call.grant {
        let operation = match (resource, call.method) {
            (Resource::Tables | Resource::Table(_), Verb::Get) => Some(TableOperation::List),
            (Resource::Tables, Verb::Post) => Some(TableOperation::Create),
            (Resource::Table(_), Verb::Delete) => Some(TableOperation::Delete),
            (Resource::Account, _) => Some(TableOperation::Service),
            _ => None,
        };
        if let Some(operation) = operation {
            grant.check_tables(operation)?;
        }
    }
    if let (Resource::Entities(table), Some("acl")) = (resource, call.query.get("comp")) {
        return table_acl(call, table);
    }
    match (resource, call.method) {
        (Resource::Tables, Verb::Get) => query_tables(call),
        (Resource::Tables, Verb::Post) => create_table(call),
        (Resource::Table(name), Verb::Get) => get_table(call, name),
        (Resource::Table(name), Verb::Delete) => {
            call.engine.delete_table(name)?;
            Ok(Answer::empty(204))
        }
        (Resource::Entities(table), Verb::Get) => query_entities(call, table),
        (Resource::Entities(table), Verb::Post) => insert(call, table),
        (Resource::Entity { table, partition_key, row_key }, verb) => {
            entity(call, table, EntityKey::new(partition_key, row_key), verb)
        }
        (Resource::Batch, Verb::Post) => crate::batch::submit(call),
        (Resource::Account, _) => Err(Failure::service(ErrorCode::NotImplemented).into()),
        _ => Err(method_not_allowed().into()),
    }
}

/// Get and Set Table ACL (`?comp=acl`): the table's stored access policies, in the client's
/// own XML codec. A table SAS cannot reach them.
fn table_acl(call: &Call<'_>, table: &str) -> Result<Answer, Refused> {
    if let Some(grant) = call.grant {
        grant.check_tables(TableOperation::Acl)?;
    }
    match call.method {
        Verb::Get => {
            let policies = call.engine.get_access_policies(table)?;
            let xml = table_client::wire::encode_signed_identifiers(&policies)
                .map_err(|e| Failure::invalid_input(e.message().to_owned()))?;
            Ok(Answer::empty(200).header("Content-Type", "application/xml").with_body(xml))
        }
        Verb::Put => {
            let policies = table_client::wire::decode_signed_identifiers(call.body)
                .map_err(|e| Failure::invalid_input(format!("the body is not an ACL: {}", e.message())))?;
            call.engine.set_access_policies(table, &policies)?;
            Ok(Answer::empty(204))
        }
        _ => Err(method_not_allowed().into()),
    }
}

fn method_not_allowed() -> Failure {
    Failure::new(
        405,
        ErrorCode::Other("MethodNotAllowed".into()),
        "The requested method is not allowed on the specified resource.",
    )
}

fn create_table(call: &Call<'_>) -> Result<Answer, Refused> {
    let metadata = call.metadata()?;
    let name = table_client::wire::decode_table(call.body)
        .map_err(|e| Failure::invalid_input(format!("the body is not a table: {}", e.message())))?;
    call.engine.create_table(&name)?;
    let location = format!("{}/{}", call.base, table_path(&name));
    let answer = if call.no_content() {
        Answer::empty(204).header("Preference-Applied", "return-no-content")
    } else {
        Answer::json(201, metadata, json::table(call.links(metadata), &name))
            .header("Preference-Applied", "return-content")
    };
    Ok(answer.header("Location", location.clone()).header("DataServiceId", location))
}

fn query_tables(call: &Call<'_>) -> Result<Answer, Refused> {
    let metadata = call.metadata()?;
    let query = TableQuery {
        filter: filter(call.query)?,
        top: top(call.query)?,
        next_table_name: call.query.get("NextTableName").map(str::to_owned),
    };
    let page = call.engine.query_tables(&query)?;
    let answer = Answer::json(200, metadata, json::tables(call.links(metadata), &page.tables));
    Ok(match page.next_table_name {
        Some(next) => answer.header("x-ms-continuation-NextTableName", next),
        None => answer,
    })
}

/// `GET Tables('name')`: that one table, as the service answers (Azurite lists nothing).
fn get_table(call: &Call<'_>, name: &str) -> Result<Answer, Refused> {
    let metadata = call.metadata()?;
    let query =
        TableQuery { filter: Some(Filter::eq("TableName", name)), top: Some(1), next_table_name: None };
    let page = call.engine.query_tables(&query)?;
    let found = page.tables.first().ok_or_else(|| Failure::service(ErrorCode::ResourceNotFound))?;
    Ok(Answer::json(200, metadata, json::table(call.links(metadata), found)))
}

fn query_entities(call: &Call<'_>, table: &str) -> Result<Answer, Refused> {
    let metadata = call.metadata()?;
    if let Some(grant) = call.grant {
        grant.check_read(table)?;
    }
    let next_partition_key = call.query.get("NextPartitionKey");
    let next_row_key = call.query.get("NextRowKey");
    let continuation = match (next_partition_key, next_row_key) {
        (Some(pk), rk) => {
            Some(Continuation { next_partition_key: pk.to_owned(), next_row_key: rk.map(str::to_owned) })
        }
        (None, None) => None,
        (None, Some(_)) => return Err(Failure::invalid_input("NextRowKey without NextPartitionKey").into()),
    };
    let request = QueryRequest {
        filter: filter(call.query)?,
        select: select(call.query),
        top: top(call.query)?,
        continuation,
    };
    let mut page = call.engine.query(table, &request)?;
    if let Some(grant) = call.grant {
        // Only the SAS's key range is visible; a page may come out short, or empty with a
        // continuation, as the service's pages may.
        page.entities.retain(|e| grant.contains(&e.partition_key, &e.row_key));
    }
    let body = json::page(call.links(metadata), table, &page.entities, request.select.as_deref());
    let mut answer = Answer::json(200, metadata, body);
    if let Some(next) = page.continuation {
        answer = answer.header("x-ms-continuation-NextPartitionKey", next.next_partition_key);
        if let Some(row_key) = next.next_row_key {
            answer = answer.header("x-ms-continuation-NextRowKey", row_key);
        }
    }
    Ok(answer)
}

/// `$filter`, parsed (its errors are the engine's: 400 `InvalidInput`, 501 `NotImplemented`).
fn filter(query: &Query) -> Result<Option<Filter>, Failure> {
    query.get("$filter").map(Filter::parse).transpose().map_err(Failure::from)
}

/// `$select`, split at commas.
fn select(query: &Query) -> Option<Vec<String>> {
    query.get("$select").map(|s| s.split(',').map(|name| name.trim().to_owned()).collect())
}

/// `$top`, a decimal number (its range is the engine's to check).
fn top(query: &Query) -> Result<Option<u32>, Failure> {
    let Some(text) = query.get("$top") else {
        return Ok(None);
    };
    let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    let value = digits.then(|| text.parse::<u32>().unwrap_or(u32::MAX));
    value.map(Some).ok_or_else(|| Failure::invalid_input(format!("$top={text} is not a number")))
}

/// The entity of a write's body. `keys_needed`: an insert, which names its keys in the body.
pub(crate) fn body_entity(body: &[u8], keys_needed: bool) -> Result<Entity, Failure> {
    let (entity, keys_given) = decode_request_entity(body)
        .map_err(|e| Failure::invalid_input(format!("the body is not an entity: {}", e.message())))?;
    if keys_needed && !keys_given {
        return Err(Failure::service(ErrorCode::PropertiesNeedValue));
    }
    Ok(entity)
}

fn insert(call: &Call<'_>, table: &str) -> Result<Answer, Refused> {
    let metadata = call.metadata()?;
    let operation = Operation::Insert(body_entity(call.body, true)?);
    call.check_write(table, &operation)?;
    let location =
        format!("{}/{}", call.base, entity_path(table, operation.partition_key(), operation.row_key()));
    let outcome = call.engine.execute(table, &operation)?;
    let answer = match operation.entity() {
        Some(sent) if !call.no_content() => {
            // The echo is the entity as stored: the properties sent, the timestamp the write got.
            let mut entity = sent.clone();
            entity.timestamp = outcome.etag.as_ref().and_then(ETag::timestamp);
            entity.etag.clone_from(&outcome.etag);
            Answer::json(201, metadata, json::entity(call.links(metadata), table, &entity, None))
                .header("Preference-Applied", "return-content")
        }
        _ => Answer::empty(204).header("Preference-Applied", "return-no-content"),
    };
    Ok(with_etag(answer, &outcome).header("Location", location.clone()).header("DataServiceId", location))
}

/// The operations on one entity's URL.
fn entity(call: &Call<'_>, table: &str, key: EntityKey, verb: Verb) -> Result<Answer, Refused> {
    let write = |make: fn(Entity, Option<IfMatch>) -> Operation| -> Result<Answer, Refused> {
        let mut entity = body_entity(call.body, false)?;
        // The URL's keys win over the body's.
        entity.partition_key.clone_from(&key.partition_key);
        entity.row_key.clone_from(&key.row_key);
        let operation = make(entity, call.if_match()?);
        call.check_write(table, &operation)?;
        let outcome = call.engine.execute(table, operation)?;
        Ok(with_etag(Answer::empty(204), &outcome))
    };
    match verb {
        Verb::Get => {
            let metadata = call.metadata()?;
            if let Some(grant) = call.grant {
                grant.check_read(table)?;
                grant.check_key(&key.partition_key, &key.row_key)?;
            }
            let selected = select(call.query);
            let found = call.engine.get(table, &key.partition_key, &key.row_key, selected.as_deref())?;
            let body = json::entity(call.links(metadata), table, &found, selected.as_deref());
            let answer = Answer::json(200, metadata, body);
            Ok(match &found.etag {
                Some(etag) => answer.header("ETag", etag.as_str()),
                None => answer,
            })
        }
        Verb::Put => write(|entity, if_match| match if_match {
            Some(if_match) => Operation::Replace { entity, if_match },
            None => Operation::InsertOrReplace(entity),
        }),
        Verb::Merge => write(|entity, if_match| match if_match {
            Some(if_match) => Operation::Merge { entity, if_match },
            None => Operation::InsertOrMerge(entity),
        }),
        Verb::Delete => {
            let if_match = call.if_match()?.ok_or_else(missing_if_match)?;
            let operation = Operation::Delete { key, if_match };
            call.check_write(table, &operation)?;
            call.engine.execute(table, operation)?;
            Ok(Answer::empty(204))
        }
        Verb::Post | Verb::Other => Err(method_not_allowed().into()),
    }
}

/// A delete names the version it deletes, or `*`.
pub(crate) fn missing_if_match() -> Failure {
    Failure::new(
        400,
        ErrorCode::Other("MissingRequiredHeader".into()),
        "An HTTP header that's mandatory for this request is not specified. (If-Match)",
    )
}

fn with_etag(answer: Answer, outcome: &WriteOutcome) -> Answer {
    match &outcome.etag {
        Some(etag) => answer.header("ETag", etag.as_str()),
        None => answer,
    }
}
