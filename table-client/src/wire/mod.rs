//! The wire format of the Table service, without any I/O: JSON entity bodies, resource paths
//! and query strings, error answers, entity-group transaction (`$batch`) bodies, and the XML
//! bodies of access policies and service settings.
//!
//! Every function here takes and returns plain strings and bytes, so the HTTP backend adapts
//! them to its client library and the tests pin the byte layout the protocol reference
//! verified against Azurite and the service.
//!
//! Not API: the module is `#[doc(hidden)]`, public only so that this crate's wire tests
//! (`tests/wire_*.rs`) and benches (`benches/wire.rs`) can pin and time the encoding, and the
//! workspace's fuzzers can drive it.

mod batch;
mod error;
mod etag;
mod json;
pub mod url;
mod xml;

pub(crate) use batch::{ACCEPT, MAX_BATCH_RESPONSE_BODY};
pub use batch::{
    Lines, MAX_MULTIPART_LINES, MultipartLeaf, decode_batch_response, encode_batch, header_line,
    multipart_leaves,
};
pub(crate) use error::MAX_ERROR_BODY;
pub use error::{ERROR_CODE_HEADER, REQUEST_ID_HEADER, decode_error};
pub(crate) use etag::check_received_etag;
pub use json::{
    JsonDecoder, decode_entity, decode_entity_as, decode_point_read, decode_query_page, decode_query_page_as,
    decode_query_page_each, decode_request_entity, decode_table, decode_table_list, encode_create_table,
    encode_entity, read_entity, read_query_page,
};
pub(crate) use json::{MAX_ENTITY_JSON, MAX_PAGE_SIZE, query_page_body_limit, table_list_body_limit};
pub(crate) use xml::CONTENT_XML;
pub use xml::{
    decode_service_properties, decode_service_statistics, decode_signed_identifiers,
    encode_service_properties, encode_service_statistics, encode_signed_identifiers,
};
