//! The metadata an encrypted entity carries, shared by both formats: the names of the two
//! properties, and the JSON envelope of `_ClientEncryptionMetadata1` (the wrapped content key,
//! its key id and algorithm, the format's protocol and cipher, and for "1.0" the entity IV).
//!
//! Invariants: parsing never guesses: a missing field, bad base64, an IV that is not 16 bytes
//! or an unknown protocol or cipher is an error naming what is wrong.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The JSON envelope (a string property): how the content key is wrapped, and the format.
pub(crate) const METADATA: &str = "_ClientEncryptionMetadata1";

/// The encrypted list of encrypted property names (a binary property).
pub(crate) const PROPERTY_LIST: &str = "_ClientEncryptionMetadata2";

/// The protocol of the format the older .NET, Java and Python libraries write.
pub(crate) const PROTOCOL_V1: &str = "1.0";
/// The cipher of [`PROTOCOL_V1`].
pub(crate) const CIPHER_V1: &str = "AES_CBC_256";
/// The protocol of this crate's authenticated format.
pub(crate) const PROTOCOL_GCM: &str = "rs-gcm-1";
/// The cipher of [`PROTOCOL_GCM`].
pub(crate) const CIPHER_GCM: &str = "AES_GCM_256";

/// The library name "1.0" envelopes carry (`KeyWrappingMetadata.EncryptionLibrary`).
const LIBRARY: &str = concat!("Rust table-client ", env!("CARGO_PKG_VERSION"));

/// The envelope, field order as the older libraries write it (the Java one requires it). Its
/// strings borrow from the text read, or from the metadata written, unless JSON escapes them.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Envelope<'a> {
    #[serde(borrow)]
    wrapped_content_key: WrappedContentKey<'a>,
    #[serde(borrow)]
    encryption_agent: EncryptionAgent<'a>,
    #[serde(rename = "ContentEncryptionIV", default, skip_serializing_if = "Option::is_none", borrow)]
    content_encryption_iv: Option<Cow<'a, str>>,
    /// Kept as written: a rewrite puts it back byte for byte, and a read parses it only for
    /// the "1.0" format, whose variant it tells ([`KeyWrapping`]).
    #[serde(default, skip_serializing_if = "Option::is_none", borrow)]
    key_wrapping_metadata: Option<&'a RawValue>,
}

/// What a read takes from `KeyWrappingMetadata`: the library that wrote the row.
#[derive(Debug, Deserialize)]
struct KeyWrapping<'a> {
    #[serde(rename = "EncryptionLibrary", default, borrow)]
    library: Option<Cow<'a, str>>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct WrappedContentKey<'a> {
    #[serde(borrow)]
    key_id: Cow<'a, str>,
    #[serde(borrow)]
    encrypted_key: Cow<'a, str>,
    #[serde(borrow)]
    algorithm: Cow<'a, str>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct EncryptionAgent<'a> {
    #[serde(borrow)]
    protocol: Cow<'a, str>,
    #[serde(borrow)]
    encryption_algorithm: Cow<'a, str>,
}

/// Which format an entity is in, with what that format needs beyond the content key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scheme {
    /// "1.0": AES-256-CBC; property IVs derived from `entity_iv`. `java_v1` marks the Java
    /// library's first variant (PartitionKey before RowKey in the IV, a bracketed name list).
    V1 { entity_iv: [u8; 16], java_v1: bool },
    /// The authenticated format (AES-256-GCM).
    Gcm,
}

/// The parsed envelope; its strings borrow from the text parsed, unless JSON escapes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Metadata<'a> {
    pub(crate) scheme: Scheme,
    pub(crate) key_id: Cow<'a, str>,
    pub(crate) algorithm: Cow<'a, str>,
    pub(crate) wrapped_key: Vec<u8>,
}

impl<'a> Metadata<'a> {
    /// The envelope's JSON text, as serde would write [`Envelope`] (a test pins that), but
    /// written straight into one buffer: it is on every encrypted write.
    pub(crate) fn json(scheme: Scheme, key_id: &str, algorithm: &str, wrapped_key: &[u8]) -> String {
        let mut out = String::with_capacity(320 + key_id.len() + algorithm.len() + wrapped_key.len() * 4 / 3);
        out.push_str(r#"{"WrappedContentKey":{"KeyId":"#);
        push_json_string(&mut out, key_id);
        out.push_str(r#","EncryptedKey":""#);
        STANDARD.encode_string(wrapped_key, &mut out);
        out.push_str(r#"","Algorithm":"#);
        push_json_string(&mut out, algorithm);
        out.push_str(r#"},"EncryptionAgent":{"Protocol":""#);
        // "1.0" names its library, never "Java" (readers take a Java library's rows for its
        // first variant), since readers decide the variant by it. The authenticated format
        // carries only fields it uses, so that any change to the envelope fails the read.
        match scheme {
            Scheme::V1 { entity_iv, .. } => {
                out.push_str(PROTOCOL_V1);
                out.push_str(r#"","EncryptionAlgorithm":""#);
                out.push_str(CIPHER_V1);
                out.push_str(r#""},"ContentEncryptionIV":""#);
                STANDARD.encode_string(entity_iv, &mut out);
                out.push_str(r#"","KeyWrappingMetadata":{"EncryptionLibrary":""#);
                out.push_str(LIBRARY);
                out.push_str(r#""}}"#);
            }
            Scheme::Gcm => {
                out.push_str(PROTOCOL_GCM);
                out.push_str(r#"","EncryptionAlgorithm":""#);
                out.push_str(CIPHER_GCM);
                out.push_str(r#""}}"#);
            }
        }
        out
    }

    /// The envelope `text` with its wrapped content key replaced by `wrapped_key`, wrapped by
    /// `key_id` with `algorithm` (a key rotation): every other field stays as it was, the
    /// entity IV and the library name included (by which readers tell the Java variant).
    pub(crate) fn rewrap(
        text: &str,
        key_id: &str,
        algorithm: &str,
        wrapped_key: &[u8],
    ) -> Result<String, String> {
        let mut envelope: Envelope<'_> = serde_json::from_str(text)
            .map_err(|e| format!("{METADATA} is not the expected JSON envelope: {e}"))?;
        if let Some(field) = unknown_field(text) {
            return Err(format!(
                "{METADATA} has a field `{field}` this library does not write back; not re-wrapped, so that it is not lost"
            ));
        }
        envelope.wrapped_content_key = WrappedContentKey {
            key_id: Cow::Borrowed(key_id),
            encrypted_key: STANDARD.encode(wrapped_key).into(),
            algorithm: Cow::Borrowed(algorithm),
        };
        serde_json::to_string(&envelope).map_err(|e| format!("{METADATA} could not be written again: {e}"))
    }

    /// Parses the envelope; the error says what is missing or wrong.
    pub(crate) fn parse(text: &'a str) -> Result<Metadata<'a>, String> {
        // Envelopes this crate wrote take the short way, which costs a fraction of serde's on
        // every read; any other text (another library's spacing or field order, an escape, a
        // damaged envelope) goes through serde, whose errors say what is wrong.
        match Self::parse_written(text) {
            Some(metadata) => Ok(metadata),
            None => Self::parse_any(text),
        }
    }

    /// The envelope exactly as [`json`](Self::json) writes it, with strings free of escapes;
    /// `None` for any other text. What it accepts, it reads as [`parse_any`](Self::parse_any)
    /// does (a test pins that).
    fn parse_written(text: &'a str) -> Option<Metadata<'a>> {
        let mut json = Scanner(text);
        json.literal(r#"{"WrappedContentKey":{"KeyId":"#)?;
        let key_id = json.string()?;
        json.literal(r#","EncryptedKey":"#)?;
        let wrapped_key = STANDARD.decode(json.string()?).ok()?;
        json.literal(r#","Algorithm":"#)?;
        let algorithm = json.string()?;
        json.literal(r#"},"EncryptionAgent":{"Protocol":"#)?;
        let protocol = json.string()?;
        json.literal(r#","EncryptionAlgorithm":"#)?;
        let cipher = json.string()?;
        json.literal("}")?;
        let scheme = match (protocol, cipher) {
            (PROTOCOL_GCM, CIPHER_GCM) => Scheme::Gcm,
            (PROTOCOL_V1, CIPHER_V1) => {
                json.literal(r#","ContentEncryptionIV":"#)?;
                let entity_iv = decode_iv(json.string()?)?;
                json.literal(r#","KeyWrappingMetadata":{"EncryptionLibrary":"#)?;
                let java_v1 = json.string()?.contains("Java");
                json.literal("}")?;
                Scheme::V1 { entity_iv, java_v1 }
            }
            _ => return None,
        };
        json.literal("}")?;
        json.end()?;
        Some(Metadata { scheme, key_id: key_id.into(), algorithm: algorithm.into(), wrapped_key })
    }

    /// Parses any envelope, through serde.
    fn parse_any(text: &'a str) -> Result<Metadata<'a>, String> {
        let envelope: Envelope<'_> = serde_json::from_str(text)
            .map_err(|e| format!("{METADATA} is not the expected JSON envelope: {e}"))?;
        let agent = &envelope.encryption_agent;
        let scheme = match (agent.protocol.as_ref(), agent.encryption_algorithm.as_ref()) {
            (PROTOCOL_V1, CIPHER_V1) => {
                let iv = envelope
                    .content_encryption_iv
                    .as_deref()
                    .ok_or_else(|| format!("{METADATA} of protocol 1.0 has no ContentEncryptionIV"))?;
                let entity_iv = decode_iv(iv).ok_or_else(|| {
                    format!("{METADATA} has a ContentEncryptionIV that is not 16 bytes of base64")
                })?;
                // As the older libraries decide it: no wrapping metadata, or a Java library's.
                let java_v1 = match envelope.key_wrapping_metadata {
                    None => true,
                    Some(raw) => serde_json::from_str::<KeyWrapping<'_>>(raw.get())
                        .map_err(|e| {
                            format!("{METADATA} has a KeyWrappingMetadata that is not an object: {e}")
                        })?
                        .library
                        .is_some_and(|library| library.contains("Java")),
                };
                Scheme::V1 { entity_iv, java_v1 }
            }
            (PROTOCOL_GCM, CIPHER_GCM) => Scheme::Gcm,
            (protocol, cipher) => {
                return Err(format!(
                    "encryption protocol {protocol:?} with cipher {cipher:?} is not supported (known: \
                     {PROTOCOL_V1:?} with {CIPHER_V1}, {PROTOCOL_GCM:?} with {CIPHER_GCM})"
                ));
            }
        };
        let key = envelope.wrapped_content_key;
        let wrapped_key = STANDARD
            .decode(key.encrypted_key.as_bytes())
            .map_err(|_| format!("{METADATA} has a WrappedContentKey.EncryptedKey that is not base64"))?;
        Ok(Metadata { scheme, key_id: key.key_id, algorithm: key.algorithm, wrapped_key })
    }
}

/// The encrypted names from the decrypted name list, a JSON array of strings; they borrow
/// from `list` unless JSON escapes them.
pub(crate) fn names(list: &str) -> Option<Vec<Cow<'_, str>>> {
    /// Borrows each name (a bare `Vec<Cow<str>>` would copy every one).
    #[derive(Deserialize)]
    struct Names<'a>(#[serde(borrow)] Vec<Cow<'a, str>>);
    // As for the envelope: the list as this crate writes it (no spaces, no escapes) the short
    // way, any other through serde.
    written_names(list).or_else(|| serde_json::from_str::<Names<'_>>(list).ok().map(|names| names.0))
}

/// The name list as this crate writes it (`["A","B"]`), or `None`.
fn written_names(list: &str) -> Option<Vec<Cow<'_, str>>> {
    let mut json = Scanner(list);
    json.literal("[")?;
    let mut names = Vec::new();
    if json.literal("]").is_none() {
        loop {
            names.push(Cow::Borrowed(json.string()?));
            if json.literal("]").is_some() {
                break;
            }
            json.literal(",")?;
        }
    }
    json.end()?;
    Some(names)
}

/// A cursor over JSON text that expects a fixed layout: it takes exact literals, and strings
/// free of escapes (as their content, borrowed). Any other text is `None`, for serde to read.
struct Scanner<'a>(&'a str);

impl<'a> Scanner<'a> {
    /// Takes `expected`, exactly.
    fn literal(&mut self, expected: &str) -> Option<()> {
        self.0 = self.0.strip_prefix(expected)?;
        Some(())
    }

    /// Takes a JSON string with no escape and no control character, and returns its content.
    fn string(&mut self) -> Option<&'a str> {
        let rest = self.0.strip_prefix('"')?;
        let end = rest.bytes().position(|b| b == b'"' || b == b'\\' || b < 0x20)?;
        // Stopped at an escape or a control character: serde's to read (or refuse).
        if rest.as_bytes()[end] != b'"' {
            return None;
        }
        self.0 = &rest[end + 1..];
        Some(&rest[..end])
    }

    /// `Some` at the end of the text.
    fn end(&self) -> Option<()> {
        self.0.is_empty().then_some(())
    }
}

/// A 16-byte IV from its base64, or `None` if it is not that (decoded on the stack: the
/// decoder wants room for its estimate, 18 bytes for 24 characters).
fn decode_iv(text: &str) -> Option<[u8; 16]> {
    let mut buffer = [0; 18];
    let len = STANDARD.decode_slice(text.as_bytes(), &mut buffer).ok()?;
    buffer[..len].try_into().ok()
}

/// Appends `text` as a JSON string: quoted, with `"`, `\` and control characters escaped
/// as serde_json escapes them (ids and algorithm names rarely have any).
pub(crate) fn push_json_string(out: &mut String, text: &str) {
    if text.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
        // Serializing a string cannot fail.
        out.push_str(&serde_json::to_string(text).unwrap_or_default());
    } else {
        out.push('"');
        out.push_str(text);
        out.push('"');
    }
}

/// The first field of the envelope `text` (at its top, or in `WrappedContentKey` or
/// `EncryptionAgent`) that [`Envelope`] does not model, so a rewrite would drop it.
/// `KeyWrappingMetadata` is kept whole, whatever it holds.
fn unknown_field(text: &str) -> Option<String> {
    const TOP: [&str; 4] =
        ["WrappedContentKey", "EncryptionAgent", "ContentEncryptionIV", "KeyWrappingMetadata"];
    const NESTED: [(&str, &[&str]); 2] = [
        ("WrappedContentKey", &["KeyId", "EncryptedKey", "Algorithm"]),
        ("EncryptionAgent", &["Protocol", "EncryptionAlgorithm"]),
    ];
    let envelope: serde_json::Map<String, serde_json::Value> = serde_json::from_str(text).ok()?;
    let top = envelope.keys().find(|name| !TOP.contains(&name.as_str())).cloned();
    top.or_else(|| {
        NESTED.iter().find_map(|(object, known)| {
            let fields = envelope.get(*object)?.as_object()?;
            fields.keys().find(|name| !known.contains(&name.as_str())).map(|name| format!("{object}.{name}"))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_round_trip_in_both_formats() {
        for scheme in [Scheme::V1 { entity_iv: [9; 16], java_v1: false }, Scheme::Gcm] {
            let m = Metadata {
                scheme,
                key_id: "k1".into(),
                algorithm: "A256KW".into(),
                wrapped_key: vec![1; 40],
            };
            assert_eq!(
                Metadata::parse(&Metadata::json(m.scheme, &m.key_id, &m.algorithm, &m.wrapped_key)),
                Ok(m)
            );
        }
    }

    #[test]
    fn the_written_envelope_is_what_serde_writes() {
        let schemes = [Scheme::V1 { entity_iv: [9; 16], java_v1: false }, Scheme::Gcm];
        for (scheme, key_id) in schemes.into_iter().zip(["plain-key", "q\"b\\s\n\u{1}\u{7f}é🦀"]) {
            let library =
                serde_json::value::to_raw_value(&serde_json::json!({ "EncryptionLibrary": LIBRARY }))
                    .expect("a JSON value serializes");
            let expected = Envelope {
                wrapped_content_key: WrappedContentKey {
                    key_id: key_id.into(),
                    encrypted_key: STANDARD.encode([1; 40]).into(),
                    algorithm: "A256KW".into(),
                },
                encryption_agent: match scheme {
                    Scheme::V1 { .. } => EncryptionAgent {
                        protocol: PROTOCOL_V1.into(),
                        encryption_algorithm: CIPHER_V1.into(),
                    },
                    Scheme::Gcm => EncryptionAgent {
                        protocol: PROTOCOL_GCM.into(),
                        encryption_algorithm: CIPHER_GCM.into(),
                    },
                },
                content_encryption_iv: matches!(scheme, Scheme::V1 { .. })
                    .then(|| STANDARD.encode([9; 16]).into()),
                key_wrapping_metadata: matches!(scheme, Scheme::V1 { .. }).then_some(&*library),
            };
            let written = Metadata::json(scheme, key_id, "A256KW", &[1; 40]);
            assert_eq!(serde_json::to_string(&expected).ok(), Some(written));
        }
    }

    #[test]
    fn the_short_way_reads_what_is_written_and_only_what_serde_reads_the_same() {
        let ids = ["k1", "q\"b\\s", "é🦀 \u{7f}", "", "ctl\u{1}"];
        let schemes = [
            Scheme::Gcm,
            Scheme::V1 { entity_iv: [9; 16], java_v1: false },
            Scheme::V1 { entity_iv: [7; 16], java_v1: true },
        ];
        let mut texts = Vec::new();
        for (scheme, id) in schemes.iter().flat_map(|s| ids.iter().map(move |id| (*s, *id))) {
            let written = Metadata::json(scheme, id, "A256KW", &[3; 40]);
            // What this crate writes takes the short way, unless a string needs an escape.
            let plain = !id.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20);
            assert_eq!(Metadata::parse_written(&written).is_some(), plain, "{written}");
            texts.push(written.replace("Rust table-client", "Java 8"));
            texts.push(written.replace(':', ": "));
            texts.push(written.replace("}}", "}} "));
            texts.push(written.replace(r#""Algorithm":"A256KW""#, r#""Algorithm":"A256KW","Algorithm":"X""#));
            texts.push(written[..written.len() - 1].to_owned());
            texts.push(written.replace("AwMD", "AwM*"));
            texts.push(written.replace(r#""EncryptionLibrary""#, r#""Library""#));
            texts.push(written);
        }
        for text in &texts {
            if let Some(short) = Metadata::parse_written(text) {
                assert_eq!(Metadata::parse_any(text).ok(), Some(short), "{text}");
            }
        }
    }

    #[test]
    fn name_lists_read_the_same_either_way() {
        for list in [
            r#"[]"#,
            r#"["A"]"#,
            r#"["A","B é"]"#,
            r#"["A", "B"]"#,
            r#"["A\"B"]"#,
            r#"["A",]"#,
            "[",
            r#"["A"] "#,
        ] {
            let serde = serde_json::from_str::<Vec<String>>(list).ok();
            let read = names(list).map(|names| names.into_iter().map(Cow::into_owned).collect::<Vec<_>>());
            assert_eq!(read, serde, "{list}");
            if let Some(short) = written_names(list) {
                assert_eq!(Some(short.into_iter().map(Cow::into_owned).collect()), serde, "{list}");
            }
        }
        assert!(written_names(r#"["A","B"]"#).is_some());
    }

    #[test]
    fn a_rewrap_changes_only_the_wrapped_key() {
        // A Java library's first variant, recognised by having no wrapping metadata.
        let iv = STANDARD.encode([4u8; 16]);
        let text = format!(
            r#"{{"WrappedContentKey":{{"KeyId":"old","EncryptedKey":"AAAA","Algorithm":"RSA-OAEP"}},"EncryptionAgent":{{"Protocol":"1.0","EncryptionAlgorithm":"AES_CBC_256"}},"ContentEncryptionIV":"{iv}"}}"#
        );
        let rewrapped = Metadata::rewrap(&text, "new", "A256KW", &[1; 40]).unwrap_or_default();
        let expected = Metadata {
            scheme: Scheme::V1 { entity_iv: [4; 16], java_v1: true },
            key_id: "new".into(),
            algorithm: "A256KW".into(),
            wrapped_key: vec![1; 40],
        };
        assert_eq!(Metadata::parse(&rewrapped), Ok(expected));
        assert!(!rewrapped.contains("KeyWrappingMetadata"), "{rewrapped}");
    }

    #[test]
    fn a_rewrap_keeps_the_key_wrapping_metadata_as_written() {
        let iv = STANDARD.encode([4u8; 16]);
        let wrapping = r#"{"Zeta": [1, 2], "EncryptionLibrary": "Java 5.3.0"}"#;
        let text = format!(
            r#"{{"WrappedContentKey":{{"KeyId":"old","EncryptedKey":"AAAA","Algorithm":"A256KW"}},"EncryptionAgent":{{"Protocol":"1.0","EncryptionAlgorithm":"AES_CBC_256"}},"ContentEncryptionIV":"{iv}","KeyWrappingMetadata":{wrapping}}}"#
        );
        let rewrapped = Metadata::rewrap(&text, "new", "A256KW", &[1; 40]).unwrap_or_default();
        assert!(rewrapped.ends_with(&format!(r#","KeyWrappingMetadata":{wrapping}}}"#)), "{rewrapped}");
        let parsed = Metadata::parse(&rewrapped).map(|m| m.scheme);
        assert_eq!(parsed, Ok(Scheme::V1 { entity_iv: [4; 16], java_v1: true }));
    }

    #[test]
    fn a_rewrap_refuses_an_envelope_with_fields_it_would_drop() {
        let key = r#""WrappedContentKey":{"KeyId":"old","EncryptedKey":"AAAA","Algorithm":"A256KW""#;
        let agent = r#""EncryptionAgent":{"Protocol":"rs-gcm-1","EncryptionAlgorithm":"AES_GCM_256""#;
        let plain = format!("{{{key}}},{agent}}}}}");
        assert!(Metadata::rewrap(&plain, "new", "A256KW", &[1; 40]).is_ok(), "{plain}");
        for text in [
            format!(r#"{{{key}}},{agent}}},"Extra":1}}"#),
            format!(r#"{{{key},"Extra":1}},{agent}}}}}"#),
            format!(r#"{{{key}}},{agent},"Extra":1}}}}"#),
        ] {
            let error = Metadata::rewrap(&text, "new", "A256KW", &[1; 40]).expect_err(&text);
            assert!(error.contains("Extra") && error.contains("not lost"), "{error}");
        }
    }

    #[test]
    fn v1_field_order_is_the_older_libraries_one() {
        let m = Metadata {
            scheme: Scheme::V1 { entity_iv: [0; 16], java_v1: false },
            key_id: "k".into(),
            algorithm: "A256KW".into(),
            wrapped_key: vec![0; 40],
        };
        let json = Metadata::json(m.scheme, &m.key_id, &m.algorithm, &m.wrapped_key);
        let at = |s: &str| json.find(s).unwrap_or(usize::MAX);
        assert!(at("WrappedContentKey") < at("EncryptionAgent"), "{json}");
        assert!(at("EncryptionAgent") < at("ContentEncryptionIV"), "{json}");
        assert!(at("ContentEncryptionIV") < at("KeyWrappingMetadata"), "{json}");
    }

    #[test]
    fn java_v1_is_recognised_by_its_metadata() {
        let iv = STANDARD.encode([0u8; 16]);
        let agent = r#""EncryptionAgent":{"Protocol":"1.0","EncryptionAlgorithm":"AES_CBC_256"}"#;
        let key = r#""WrappedContentKey":{"KeyId":"k","EncryptedKey":"AAAA","Algorithm":"A256KW"}"#;
        let without = format!(r#"{{{key},{agent},"ContentEncryptionIV":"{iv}"}}"#);
        let java = format!(
            r#"{{{key},{agent},"ContentEncryptionIV":"{iv}","KeyWrappingMetadata":{{"EncryptionLibrary":"Java 5.3.0"}}}}"#
        );
        let python = java.replace("Java 5.3.0", "Python 1.0.6");
        let java_v1 = |text: &str| {
            matches!(Metadata::parse(text).map(|m| m.scheme), Ok(Scheme::V1 { java_v1: true, .. }))
        };
        assert!(java_v1(&without) && java_v1(&java) && !java_v1(&python));
    }

    #[test]
    fn broken_envelopes_say_what_is_wrong() {
        let iv = STANDARD.encode([0u8; 16]);
        let agent = r#""EncryptionAgent":{"Protocol":"1.0","EncryptionAlgorithm":"AES_CBC_256"}"#;
        let key = r#""WrappedContentKey":{"KeyId":"k","EncryptedKey":"AAAA","Algorithm":"A256KW"}"#;
        let cases = [
            ("not json".to_owned(), "not the expected JSON"),
            (format!("{{{key},{agent}}}"), "no ContentEncryptionIV"),
            (format!(r#"{{{key},{agent},"ContentEncryptionIV":"AAAA"}}"#), "not 16 bytes"),
            (format!(r#"{{{key},{}}}"#, agent.replace("1.0", "2.0")), "not supported"),
            (
                format!(r#"{{{key},{agent},"ContentEncryptionIV":"{iv}","KeyWrappingMetadata":"Java"}}"#),
                "KeyWrappingMetadata that is not an object",
            ),
        ];
        for (text, says) in cases {
            let e = Metadata::parse(&text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
