//! Table and entity operations (protocol doc sections 5 and 6): each reads its request, calls
//! the engine once, and writes the service's answer. The engine decides every rule, in the
//! service's order; what is checked here is only the request's shape (a readable body, the
//! keys an insert needs, well-formed query parameters and headers).

use hyper::header::{ACCEPT, HeaderValue};
use table_client::wire::url::{entity_path, table_path};
use table_core::{
    Continuation, Entity, EntityKey, ErrorCode, Filter, IfMatch, Operation, QueryRequest, TableQuery,
    WriteOutcome,
};

use crate::answer::{
    ALLOW, Answer, CONTENT_TYPE, DATA_SERVICE_ID, ETAG, Failure, LOCATION, NEXT_PARTITION_KEY, NEXT_ROW_KEY,
    NEXT_TABLE_NAME, PREFERENCE_APPLIED,
};
use crate::json;
use crate::request::{Call, Refused, Verb, body_entity, missing_if_match};
use crate::route::{Query, Resource, SECONDARY_SUFFIX, invalid_uri};
use crate::sas::TableOperation;

/// Runs the operation `resource` and the method name.
pub(crate) fn dispatch(call: &Call<'_>, resource: &Resource) -> Result<Answer, Refused> {
    if let Some(grant) = call.grant {
        let operation = match (resource, call.method) {
            (Resource::Tables | Resource::Table(_), Verb::Get) => Some(TableOperation::List),
            (Resource::Tables, Verb::Post) => Some(TableOperation::Create),
            (Resource::Table(_), Verb::Delete) => Some(TableOperation::Delete),
            (Resource::Account, Verb::Get) => Some(TableOperation::ServiceRead),
            (Resource::Account, _) => Some(TableOperation::ServiceWrite),
            _ => None,
        };
        if let Some(operation) = operation {
            grant.check_tables(operation)?;
        }
    }
    // A `comp` parameter takes the request out of the table and entity operations: the
    // service answers it as a table's ACL (`comp=acl`, any case, on a table's own path) or
    // refuses it (the storage emulator's protocol layer, decompiled).
    match (resource, call.query.get("comp")) {
        (Resource::Entities(table), Some(comp)) if comp.eq_ignore_ascii_case("acl") => {
            return table_acl(call, table);
        }
        (Resource::Account, _) => return service_settings(call),
        (_, Some(comp)) => return Err(invalid_comp(comp).into()),
        (_, None) => {}
    }
    // The `$batch` request itself is not held to them; each of its parts is.
    if *resource != Resource::Batch {
        call.check_media_types(
            call.headers.get(CONTENT_TYPE).map(HeaderValue::as_bytes),
            call.query.get("$format"),
            call.headers.get(ACCEPT).map(HeaderValue::as_bytes),
        )?;
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
        _ => Err(method_not_allowed().into()),
    }
}

/// The largest Set Table Service Properties body (the service's limit).
const MAX_PROPERTIES_BODY: usize = 51_200;

/// The account's own resources, named by `comp` (compared without regard to case) with
/// `restype=service`: Get and Set Table Service Properties (`comp=properties`) and Get Table
/// Service Stats (`comp=stats`, on the secondary location only), in the client's own XML
/// codec. Refused as the service refuses them: no `comp` is 400 `InvalidUri`, another `comp`
/// (or no `restype=service`, or stats asked of the primary) 400 `InvalidQueryParameterValue`,
/// another verb 405 `UnsupportedHttpVerb`, a set without a body 400 `InvalidHeaderValue`
/// (its `Content-Length`) and one over [`MAX_PROPERTIES_BODY`] bytes 413
/// `RequestBodyTooLarge`.
fn service_settings(call: &Call<'_>) -> Result<Answer, Refused> {
    let xml = |body: table_core::Result<String>| -> Result<Answer, Refused> {
        let body = body.map_err(|e| Failure::invalid_input(e.message().to_owned()))?;
        Ok(Answer::empty(200).header(CONTENT_TYPE, "application/xml").with_body(body))
    };
    let Some(comp) = call.query.get("comp") else {
        return Err(invalid_uri("the account needs a comp").into());
    };
    let service = call.query.get("restype") == Some("service");
    match (service, comp.to_ascii_lowercase().as_str(), call.method) {
        (true, "properties", Verb::Get) => {
            xml(table_client::wire::encode_service_properties(&call.engine.get_service_properties()?))
        }
        (true, "properties", Verb::Put) => {
            if call.body.is_empty() {
                return Err(Failure::invalid_header_value("Content-Length is 0").into());
            }
            if call.body.len() > MAX_PROPERTIES_BODY {
                return Err(Failure::service(ErrorCode::RequestBodyTooLarge).into());
            }
            let change = table_client::wire::decode_service_properties(call.body).map_err(|e| {
                Failure::invalid_input(format!("the body is not service properties: {}", e.message()))
            })?;
            call.engine.set_service_properties(&change)?;
            Ok(Answer::empty(202))
        }
        (true, "properties", _) => Err(unsupported_verb(READ_WRITE)),
        (true, "stats", Verb::Get) if call.account.ends_with(SECONDARY_SUFFIX) => {
            xml(table_client::wire::encode_service_statistics(&call.engine.get_service_statistics()?))
        }
        // Only the secondary location keeps statistics.
        (true, "stats", Verb::Get) => Err(invalid_comp(comp).into()),
        (true, "stats", _) => Err(unsupported_verb(&["GET"])),
        _ => Err(invalid_comp(comp).into()),
    }
}

/// The methods a read-write resource of the account or a table's ACL allows (the `Allow`
/// header of its 405).
const READ_WRITE: &[&str] = &["GET", "HEAD", "PUT"];

/// 400 `InvalidQueryParameterValue`: a `comp` that names nothing on the resource.
fn invalid_comp(comp: &str) -> Failure {
    Failure::invalid_query_parameter_value(format_args!("comp={comp:?} names nothing on this resource"))
}

/// 405 `UnsupportedHttpVerb`, with the methods the resource `allows` in `Allow` headers: a
/// verb an account resource or a table's ACL does not take (table and entity URLs answer
/// `MethodNotAllowed` instead, as the service's data-service layer does).
fn unsupported_verb(allows: &'static [&'static str]) -> Refused {
    let failure = Failure::new(
        405,
        ErrorCode::Other("UnsupportedHttpVerb".into()),
        format!("The resource doesn't support specified Http Verb. (it allows {})", allows.join(", ")),
    );
    Refused::Failure(allows.iter().fold(failure, |failure, allowed| failure.header(ALLOW, allowed)))
}

/// The largest Set Table ACL body (the service's limit: five policies take far less).
const MAX_ACL_BODY: usize = 10_000;

/// Get and Set Table ACL (`?comp=acl`): the table's stored access policies, in the client's
/// own XML codec. A table SAS cannot reach them. Refused as the service refuses them: a verb
/// other than GET and PUT, media types other than XML, a body over [`MAX_ACL_BODY`] bytes
/// (413 `RequestBodyTooLarge`).
fn table_acl(call: &Call<'_>, table: &str) -> Result<Answer, Refused> {
    if let Some(grant) = call.grant {
        grant.check_tables(TableOperation::Acl)?;
    }
    match call.method {
        Verb::Get => {
            call.check_xml_media_types(false)?;
            let policies = call.engine.get_access_policies(table)?;
            let xml = table_client::wire::encode_signed_identifiers(&policies)
                .map_err(|e| Failure::invalid_input(e.message().to_owned()))?;
            Ok(Answer::empty(200).header(CONTENT_TYPE, "application/xml").with_body(xml))
        }
        Verb::Put => {
            call.check_xml_media_types(true)?;
            if call.body.len() > MAX_ACL_BODY {
                return Err(Failure::service(ErrorCode::RequestBodyTooLarge).into());
            }
            let policies = table_client::wire::decode_signed_identifiers(call.body)
                .map_err(|e| Failure::invalid_input(format!("the body is not an ACL: {}", e.message())))?;
            call.engine.set_access_policies(table, &policies)?;
            Ok(Answer::empty(204))
        }
        _ => Err(unsupported_verb(READ_WRITE)),
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
    let name = table_client::wire::decode_table(call.json_body()?)
        .map_err(|e| Failure::invalid_input(format!("the body is not a table: {}", e.message())))?;
    call.engine.create_table(&name)?;
    let location = format!("{}/{}", call.base, table_path(&name));
    let answer = if call.no_content() {
        Answer::empty(204).header(PREFERENCE_APPLIED, "return-no-content")
    } else {
        Answer::json(201, metadata, json::table(call.links(metadata), &name))
            .header(PREFERENCE_APPLIED, "return-content")
    };
    Ok(answer.header(LOCATION, location.clone()).header(DATA_SERVICE_ID, location))
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
        Some(next) => answer.header(NEXT_TABLE_NAME, next),
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
    // Written straight from the stored rows into the answer's one buffer.
    let selection = request.select.as_deref().map(json::Selection::new);
    let mut page = json::Page::new(call.links(metadata), table, selection.as_ref());
    let continuation = call.engine.query_rows(table, &request, |row| {
        // Only the SAS's key range is visible; a page may come out short, or empty with a
        // continuation, as the service's pages may.
        if call.grant.is_none_or(|grant| grant.contains(row.partition_key(), row.row_key())) {
            page.push(json::row_fields(&row));
        }
    })?;
    let mut answer = Answer::json(200, metadata, page.finish());
    if let Some(next) = continuation {
        answer = answer.header(NEXT_PARTITION_KEY, next.next_partition_key);
        if let Some(row_key) = next.next_row_key {
            answer = answer.header(NEXT_ROW_KEY, row_key);
        }
    }
    Ok(answer)
}

/// `$filter`, parsed (its errors are the engine's: 400 `InvalidInput`, 501 `NotImplemented`).
fn filter(query: &Query<'_>) -> Result<Option<Filter>, Failure> {
    query.get("$filter").map(Filter::parse).transpose().map_err(Failure::from)
}

/// `$select`, split at commas.
fn select(query: &Query<'_>) -> Option<Vec<String>> {
    query.get("$select").map(|s| s.split(',').map(|name| name.trim().to_owned()).collect())
}

/// `$top`, a decimal number (its range is the engine's to check).
fn top(query: &Query<'_>) -> Result<Option<u32>, Failure> {
    let Some(text) = query.get("$top") else {
        return Ok(None);
    };
    let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    let value = digits.then(|| text.parse::<u32>().unwrap_or(u32::MAX));
    value.map(Some).ok_or_else(|| Failure::invalid_input(format!("$top={text} is not a number")))
}

fn insert(call: &Call<'_>, table: &str) -> Result<Answer, Refused> {
    let metadata = call.metadata()?;
    let operation = Operation::Insert(body_entity(call.json_body()?, true)?);
    call.check_write(table, &operation)?;
    let location =
        [call.base, "/", &entity_path(table, operation.partition_key(), operation.row_key())].concat();
    let outcome = call.engine.execute(table, &operation)?;
    let answer = match operation.entity() {
        Some(sent) if !call.no_content() => {
            // The echo is the entity as stored: the properties sent, the timestamp the write got.
            let fields = json::stored_fields(sent, outcome.etag.as_ref());
            let body = json::entity(call.links(metadata), table, fields, None);
            Answer::json(201, metadata, body).header(PREFERENCE_APPLIED, "return-content")
        }
        _ => Answer::empty(204).header(PREFERENCE_APPLIED, "return-no-content"),
    };
    Ok(with_etag(answer, &outcome).header(LOCATION, location.clone()).header(DATA_SERVICE_ID, location))
}

/// The operations on one entity's URL.
fn entity(call: &Call<'_>, table: &str, key: EntityKey, verb: Verb) -> Result<Answer, Refused> {
    let write = |make: fn(Entity, Option<IfMatch>) -> Operation| -> Result<Answer, Refused> {
        let mut entity = body_entity(call.json_body()?, false)?;
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
            let selection = selected.as_deref().map(json::Selection::new);
            // Written straight from the stored row.
            let (body, etag) =
                call.engine.get_row(table, &key.partition_key, &key.row_key, selected.as_deref(), |row| {
                    let fields = json::row_fields(&row);
                    (
                        json::entity(call.links(metadata), table, fields, selection.as_ref()),
                        row.etag().to_owned(),
                    )
                })?;
            Ok(Answer::json(200, metadata, body).header(ETAG, etag))
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

fn with_etag(answer: Answer, outcome: &WriteOutcome) -> Answer {
    match &outcome.etag {
        Some(etag) => answer.header(ETAG, etag.as_str().to_owned()),
        None => answer,
    }
}
