//! HTTPS (rustls, `Server::bind_tls`) and bearer tokens: our client with a token credential
//! over HTTPS, a private CA's certificate trusted; tokens of the wrong audience, issuer or
//! lifetime refused with 403 `AuthenticationFailed`, and SharedKey still served over HTTPS.

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{TimeDelta, Utc};
use table_client::auth::{AccessToken, TokenCredential, TokenFuture};
use table_client::{Entity, TableServiceClient};
use table_server::{Accounts, Config, DEV_ACCOUNT, DEV_KEY, Server, Tls};

/// A private CA's PEM and a server certificate and key it signed for 127.0.0.1.
fn certificates() -> (String, String, String) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair, KeyUsagePurpose};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let server = CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap().signed_by(&key, &ca).unwrap();
    (ca.pem(), server.pem(), key.serialize_pem())
}

/// A JWT with these claims and an unchecked signature.
fn jwt(aud: &str, iss: &str, lifetime: TimeDelta) -> String {
    let now = Utc::now().timestamp();
    let claims = serde_json::json!({
        "aud": aud, "iss": iss, "nbf": now - 60, "exp": now + lifetime.num_seconds(),
    });
    let part = |v: &serde_json::Value| URL_SAFE_NO_PAD.encode(v.to_string());
    format!("{}.{}.c2ln", part(&serde_json::json!({"alg": "HS256"})), part(&claims))
}

#[derive(Debug)]
struct Fixed(String);

impl TokenCredential for Fixed {
    fn get_token<'a>(&'a self, _scopes: &'a [&'a str]) -> TokenFuture<'a> {
        Box::pin(async { Ok(AccessToken::new(self.0.clone(), Utc::now() + TimeDelta::hours(1))) })
    }
}

const ISSUER: &str = "https://sts.windows.net/72f988bf-86f1-41af-91ab-2d7cd011db47/";

#[tokio::test]
async fn bearer_tokens_are_checked_over_https() {
    let (ca, cert, key) = certificates();
    let tls = Tls::from_pem(cert.as_bytes(), key.as_bytes()).unwrap();
    let config = Config {
        address: SocketAddr::from(([127, 0, 0, 1], 0)),
        accounts: Accounts::development(table_core::engine::Engine::new()),
        auth: true,
    };
    let server = Server::bind_tls(config, tls).await.unwrap();
    let endpoint = format!("https://{}/{DEV_ACCOUNT}", server.local_addr());
    let client = |token: String| {
        TableServiceClient::builder()
            .endpoint(&endpoint)
            .token_credential(Fixed(token))
            .root_certificate_pem(ca.as_bytes())
            .build()
            .unwrap()
    };
    let good = client(jwt("https://storage.azure.com", ISSUER, TimeDelta::hours(1)));
    let table = good.create_table("Tokens").await.unwrap();
    table.insert(Entity::new("p", "r")).await.unwrap();
    let v2 = "https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0";
    let own_audience = format!("https://{DEV_ACCOUNT}.table.core.windows.net");
    assert!(client(jwt(&own_audience, v2, TimeDelta::hours(1))).table("Tokens").get("p", "r").await.is_ok());
    for token in [
        jwt("https://vault.azure.net", ISSUER, TimeDelta::hours(1)),
        jwt("https://storage.azure.com", "https://example.com/", TimeDelta::hours(1)),
        jwt("https://storage.azure.com", ISSUER, TimeDelta::hours(-1)),
        "not-a-jwt".to_owned(),
    ] {
        let error = client(token).table("Tokens").get("p", "r").await.unwrap_err();
        assert_eq!(error.status(), Some(403), "{error}");
        assert_eq!(error.code().map(ToString::to_string).as_deref(), Some("AuthenticationFailed"));
    }
    // The account key still signs requests over HTTPS.
    let keyed = TableServiceClient::builder()
        .connection_string(&format!(
            "AccountName={DEV_ACCOUNT};AccountKey={DEV_KEY};TableEndpoint={endpoint}"
        ))
        .root_certificate_pem(ca.as_bytes())
        .build()
        .unwrap();
    assert!(keyed.table("Tokens").get("p", "r").await.is_ok());
    server.shutdown().await;
}

#[test]
fn unreadable_pem_is_an_error() {
    let (_, cert, key) = certificates();
    assert!(Tls::from_pem(b"", key.as_bytes()).is_err());
    assert!(Tls::from_pem(cert.as_bytes(), b"junk").is_err());
    assert!(Tls::from_pem(key.as_bytes(), cert.as_bytes()).is_err());
}
