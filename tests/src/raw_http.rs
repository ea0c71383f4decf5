//! Raw HTTP as tests send and read it: for tests that send exact bytes (headers no client
//! sends, requests the server must refuse) and check the answer as the server wrote it.

use table_client::auth::{Credential, http_date};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::azurite::{ACCOUNT_KEY, ACCOUNT_NAME, Azurite};
use crate::service_error::{self, ServiceError};

/// An HTTP backend's account: where it is, and how to sign for it.
#[derive(Debug)]
pub struct Account {
    /// `http://127.0.0.1:PORT/ACCOUNT`.
    pub endpoint: String,
    /// The account name.
    pub name: String,
    /// The account key, base64.
    pub key: String,
}

impl Account {
    /// A new account on the process's table-server, over a fresh engine.
    pub fn table_server() -> Account {
        let (name, endpoint) = crate::server::new_account();
        Account { endpoint, name, key: table_server::DEV_KEY.to_owned() }
    }

    /// Azurite's development account.
    pub fn azurite(azurite: &Azurite) -> Account {
        Account {
            endpoint: azurite.endpoint.clone(),
            name: ACCOUNT_NAME.to_owned(),
            key: ACCOUNT_KEY.to_owned(),
        }
    }

    /// Sends `method` to `path` (below the account) with `headers` and `body`, over a
    /// connection of its own; signed with the account key (SharedKey, over the `Content-Type`
    /// among `headers`) when `signed`.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
        signed: bool,
    ) -> Reply {
        let (host, account_path) = self
            .endpoint
            .strip_prefix("http://")
            .and_then(|rest| rest.split_once('/'))
            .expect("an http endpoint with the account's path");
        let path = format!("/{account_path}/{path}");
        let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
        if signed {
            let content_type = headers.iter().find(|(n, _)| *n == "Content-Type").map_or("", |(_, v)| v);
            let credential = Credential::shared_key(&self.name, &self.key).expect("a valid account key");
            let signed = credential
                .authorize(method, &path, content_type, &http_date(chrono::Utc::now()))
                .expect("a request that can be signed");
            for (name, value) in &signed.headers {
                request.push_str(&format!("{name}: {value}\r\n"));
            }
        }
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        let mut stream = TcpStream::connect(host).await.expect("the backend listens");
        stream.write_all(request.as_bytes()).await.expect("the request is sent");
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.expect("the answer is read");
        let text = String::from_utf8(raw).expect("an answer in UTF-8");
        Reply::parse(&text).unwrap_or_else(|| panic!("not an HTTP answer: {text:?}"))
    }
}

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
