//! Raw HTTP answers as tests read them: for tests that send exact bytes (headers no client
//! sends, requests the server must refuse) and check the answer as the server wrote it.

use crate::service_error::{self, ServiceError};

/// An answer as received, read until the server closed the connection (`Connection: close`).
#[derive(Debug)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// The headers in the order received, names lower-cased, values trimmed.
    pub headers: Vec<(String, String)>,
    /// The body, as sent.
    pub body: String,
}

impl Reply {
    /// Reads a whole answer, head and body; `None` when `text` has no status line and head.
    pub fn parse(text: &str) -> Option<Reply> {
        let (head, body) = text.split_once("\r\n\r\n")?;
        let mut lines = head.split("\r\n");
        let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
        let headers = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
            .collect();
        Some(Reply { status, headers, body: body.to_owned() })
    }

    /// The first value of header `name`, named in any case.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The body as JSON; panics (the test's verdict) when it is not JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }

    /// The code and message of an error answer, in the form its `Content-Type` names; panics
    /// when the body is not an error in that form.
    pub fn error(&self) -> ServiceError {
        let content_type = self.header("Content-Type").unwrap_or_default();
        service_error::read(content_type, self.body.as_bytes()).unwrap_or_else(|e| panic!("{e}: {self:?}"))
    }

    /// The code of an error answer ([`Reply::error`]).
    pub fn code(&self) -> String {
        self.error().code
    }
}
