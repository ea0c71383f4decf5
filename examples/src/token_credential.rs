//! Microsoft Entra ID: a client whose requests carry OAuth bearer tokens instead of an account
//! key, for accounts that allow only Entra ID.
//!
//! Runs against the endpoint in `AZURE_TABLES_ENDPOINT` with the access token in
//! `AZURE_TABLES_ACCESS_TOKEN` (e.g. `az account get-access-token --resource
//! https://storage.azure.com --query accessToken -o tsv`), trusting the PEM CA in
//! `AZURE_TABLES_CA_FILE` when set (a private CA, or a local emulator's own). Without them it
//! says loudly that it skipped. `examples/tests/run_examples.rs` runs it against an HTTPS
//! Azurite started with `--oauth basic`.
//!
//! In production, enable table-client's `azure-identity` feature and let `azure_identity` get
//! and renew the tokens (managed identity here):
//!
//! ```text
//! let identity = azure_identity::ManagedIdentityCredential::new(None)?;
//! let service = TableServiceClient::with_token_credential(
//!     "https://myaccount.table.core.windows.net",
//!     table_client::auth::AzureIdentityCredential::new(identity),
//! )?;
//! ```

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use examples::{check, unique_name};
use futures::StreamExt;
use table_client::auth::{AccessToken, TokenCredential, TokenError, TokenFuture};
use table_client::{Entity, TableServiceClient};

/// The variables this example reads.
const ENDPOINT_VAR: &str = "AZURE_TABLES_ENDPOINT";
const TOKEN_VAR: &str = "AZURE_TABLES_ACCESS_TOKEN";
const CA_FILE_VAR: &str = "AZURE_TABLES_CA_FILE";

/// A token credential over an access token that something else keeps in an environment
/// variable: read again at each call, its expiry taken from the token's own `exp` claim.
#[derive(Debug)]
struct TokenFromEnvironment;

impl TokenCredential for TokenFromEnvironment {
    fn get_token<'a>(&'a self, _scopes: &'a [&'a str]) -> TokenFuture<'a> {
        Box::pin(async {
            let token = std::env::var(TOKEN_VAR).map_err(|_| format!("{TOKEN_VAR} is not set"))?;
            let expires_on = jwt_expiry(&token)?;
            Ok(AccessToken::new(token, expires_on))
        })
    }
}

/// The `exp` claim (seconds since the epoch) of a JWT: its second, base64url part.
fn jwt_expiry(token: &str) -> Result<DateTime<Utc>, TokenError> {
    let claims = token.split('.').nth(1).ok_or("the access token is not a JWT")?;
    let claims: serde_json::Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims)?)?;
    let exp = claims["exp"].as_i64().ok_or("the access token has no `exp` claim")?;
    Ok(DateTime::from_timestamp(exp, 0).ok_or("the access token's `exp` is out of range")?)
}

#[tokio::main]
async fn main() -> table_client::Result<()> {
    let (Ok(endpoint), Ok(_)) = (std::env::var(ENDPOINT_VAR), std::env::var(TOKEN_VAR)) else {
        eprintln!("==========================================================================");
        eprintln!("TOKEN CREDENTIAL EXAMPLE SKIPPED: set {ENDPOINT_VAR} and {TOKEN_VAR}");
        eprintln!("(and {CA_FILE_VAR} for a private CA) to run it against a real endpoint.");
        eprintln!("==========================================================================");
        return Ok(());
    };
    let mut builder =
        TableServiceClient::builder().endpoint(&endpoint).token_credential(TokenFromEnvironment);
    if let Ok(ca_file) = std::env::var(CA_FILE_VAR) {
        let pem = std::fs::read(&ca_file)
            .map_err(|e| table_client::Error::other(format!("cannot read {ca_file}: {e}")))?;
        builder = builder.root_certificate_pem(&pem);
    }
    let service = builder.build()?;
    println!("backend: {endpoint} with a bearer token");

    let table = service.create_table(&unique_name("entra")).await?;
    table.insert(Entity::new("reports", "2026-11").with("Pages", 12)).await?;
    table.insert(Entity::new("reports", "2026-12").with("Pages", 7)).await?;
    let mut reports = table.query().partition("reports").stream();
    let mut count = 0;
    while let Some(report) = reports.next().await {
        let report = report?;
        println!("read {} / {} with Entra ID", report.partition_key, report.row_key);
        count += 1;
    }
    check(count == 2, "both reports read back")?;
    service.delete_table(table.name()).await?;
    println!("deleted table {}", table.name());
    Ok(())
}
