//! The service's error bodies as tests read them: the JSON `odata.error` or the OData XML
//! error, whichever the answer's `Content-Type` names (the service picks the form from the
//! request's `Accept`). A body in another form than its type says, or one missing its code or
//! message, is refused, so a check through [`read`] is as strict as a parse of either form.

/// The namespace of the OData XML error's elements.
const METADATA_NAMESPACE: &str = "http://schemas.microsoft.com/ado/2007/08/dataservices/metadata";

/// An error answer's code and message value, both non-empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceError {
    /// The error code (`TableNotFound`).
    pub code: String,
    /// The message value, `RequestId:` and `Time:` lines included.
    pub message: String,
}

/// Reads the error body `body` of an answer typed `content_type`: JSON (`application/json`
/// with any parameters) or XML (`application/xml`); an error saying what is wrong otherwise.
pub fn read(content_type: &str, body: &[u8]) -> Result<ServiceError, String> {
    let media_type = content_type.split(';').next().unwrap_or_default().trim();
    let (code, message) = if media_type.eq_ignore_ascii_case("application/json") {
        let json: serde_json::Value =
            serde_json::from_slice(body).map_err(|e| format!("the error body is not JSON: {e}"))?;
        let error = &json["odata.error"];
        let text = |value: &serde_json::Value| value.as_str().map(str::to_owned);
        (text(&error["code"]), text(&error["message"]["value"]))
    } else if media_type.eq_ignore_ascii_case("application/xml") {
        let text = std::str::from_utf8(body).map_err(|e| format!("the XML error body is not UTF-8: {e}"))?;
        read_xml(text)?
    } else {
        return Err(format!("an error answer of type {content_type:?}"));
    };
    match (code.filter(|c| !c.is_empty()), message.filter(|m| !m.is_empty())) {
        (Some(code), Some(message)) => Ok(ServiceError { code, message }),
        _ => Err(format!("the error body lacks its code or message: {}", String::from_utf8_lossy(body))),
    }
}

/// The code and message of the OData XML error, in the one layout the service writes: the
/// declaration, `<m:error>` in the metadata namespace, `<m:code>`, `<m:message xml:lang=..>`.
fn read_xml(text: &str) -> Result<(Option<String>, Option<String>), String> {
    let open = format!(r#"<?xml version="1.0" encoding="utf-8"?><m:error xmlns:m="{METADATA_NAMESPACE}">"#);
    let inner = text
        .strip_prefix(open.as_str())
        .and_then(|rest| rest.strip_suffix("</m:error>"))
        .ok_or_else(|| format!("not the OData XML error: {text}"))?;
    let element = |rest: &str, open: &str, close: &str| -> Option<(String, usize)> {
        let content = rest.strip_prefix(open)?;
        let end = content.find(close)?;
        Some((unescape(&content[..end])?, open.len() + end + close.len()))
    };
    let (code, code_end) = element(inner, "<m:code>", "</m:code>").ok_or("no <m:code> first")?;
    let after_code = &inner[code_end..];
    let (message, message_end) = element(after_code, r#"<m:message xml:lang="en-US">"#, "</m:message>")
        .ok_or("no <m:message xml:lang=\"en-US\"> after the code")?;
    let rest = &after_code[message_end..];
    if !rest.is_empty() {
        return Err(format!("more after the message: {rest}"));
    }
    Ok((Some(code), Some(message)))
}

/// XML character data decoded: the three escapes the service writes, and no markup left.
fn unescape(text: &str) -> Option<String> {
    if text.contains('<') {
        return None;
    }
    Some(text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn either_form_reads_as_its_type_says() {
        let json = br#"{"odata.error":{"code":"TableNotFound","message":{"lang":"en-US","value":"a\nb"}}}"#;
        let expected = ServiceError { code: "TableNotFound".to_owned(), message: "a\nb".to_owned() };
        assert_eq!(read("application/json;odata=minimalmetadata", json), Ok(expected.clone()));
        let xml = format!(
            r#"<?xml version="1.0" encoding="utf-8"?><m:error xmlns:m="{METADATA_NAMESPACE}"><m:code>TableNotFound</m:code><m:message xml:lang="en-US">a
b</m:message></m:error>"#
        );
        assert_eq!(read("application/xml", xml.as_bytes()), Ok(expected));
        assert!(read("application/xml", json).is_err(), "JSON typed as XML");
        assert!(read("application/json", xml.as_bytes()).is_err(), "XML typed as JSON");
        assert!(read("text/plain", json).is_err());
        let empty = xml.replace("TableNotFound", "");
        assert!(read("application/xml", empty.as_bytes()).is_err(), "no code");
        let escaped = xml.replace("a\nb", "&lt;x&gt; &amp;");
        assert_eq!(read("application/xml", escaped.as_bytes()).map(|e| e.message), Ok("<x> &".to_owned()));
    }
}
