//! Every example binary runs to completion (exit 0) on the embedded engine, and on Azurite
//! through `AZURE_STORAGE_CONNECTION_STRING`, as a user would run it. The token credential
//! example runs against the harness's HTTPS Azurite with `--oauth basic`: this test passes it
//! the endpoint, a minted token and the CA file through the variables a user would set.

use std::process::Command;

const CONNECTION_STRING_VAR: &str = "AZURE_STORAGE_CONNECTION_STRING";

/// Every pattern example (the quickstart is checked by its own author).
const EXAMPLES: [(&str, &str); 12] = [
    ("archiving", env!("CARGO_BIN_EXE_archiving")),
    ("department_summary", env!("CARGO_BIN_EXE_department_summary")),
    ("employee_reviews", env!("CARGO_BIN_EXE_employee_reviews")),
    ("encryption", env!("CARGO_BIN_EXE_encryption")),
    ("expense_claims", env!("CARGO_BIN_EXE_expense_claims")),
    ("hourly_counters", env!("CARGO_BIN_EXE_hourly_counters")),
    ("index_entities", env!("CARGO_BIN_EXE_index_entities")),
    ("intra_partition_index", env!("CARGO_BIN_EXE_intra_partition_index")),
    ("large_entities", env!("CARGO_BIN_EXE_large_entities")),
    ("login_attempts", env!("CARGO_BIN_EXE_login_attempts")),
    ("support_desk", env!("CARGO_BIN_EXE_support_desk")),
    ("wide_entities", env!("CARGO_BIN_EXE_wide_entities")),
];

/// Runs every example with `connection_string` (or none) and checks each exits 0 having
/// announced the expected backend and printed what it did.
fn run_all(connection_string: Option<&str>, backend_line: &str) {
    for (name, path) in EXAMPLES {
        let mut command = Command::new(path);
        match connection_string {
            Some(cs) => command.env(CONNECTION_STRING_VAR, cs),
            None => command.env_remove(CONNECTION_STRING_VAR),
        };
        let output = command.output().expect("the example binary starts");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{name} failed ({}):\n{stdout}\n{stderr}", output.status);
        assert!(stdout.starts_with(backend_line), "{name} ran on another backend:\n{stdout}");
        assert!(stdout.lines().count() >= 3, "{name} says too little:\n{stdout}");
    }
}

#[test]
fn every_example_runs_on_the_embedded_engine() {
    run_all(None, "backend: embedded engine");
}

#[test]
fn every_example_runs_on_azurite() {
    // Skips loudly (the harness prints a banner) where Azurite cannot run.
    if let Some(azurite) = conformance::azurite::azurite() {
        run_all(Some(&azurite.connection_string), "backend: from AZURE_STORAGE_CONNECTION_STRING");
    }
}

#[test]
fn the_quickstart_prints_the_employees_over_30() {
    let output = Command::new(env!("CARGO_BIN_EXE_quickstart"))
        .env_remove(CONNECTION_STRING_VAR)
        .output()
        .expect("the quickstart starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(stdout, "Ann (empid 000001) is 34\nCy (empid 000003) is 41\n");
}

/// The token credential example's variables.
const TOKEN_EXAMPLE_VARS: [&str; 3] =
    ["AZURE_TABLES_ENDPOINT", "AZURE_TABLES_ACCESS_TOKEN", "AZURE_TABLES_CA_FILE"];

#[test]
fn the_token_credential_example_runs_on_the_https_azurite() {
    // Skips loudly (the harness prints a banner) where Azurite cannot run.
    let Some(azurite) = conformance::azurite::azurite_oauth() else { return };
    let token = conformance::token::mint_token(chrono::TimeDelta::hours(1));
    let output = Command::new(env!("CARGO_BIN_EXE_token_credential"))
        .env(TOKEN_EXAMPLE_VARS[0], &azurite.endpoint)
        .env(TOKEN_EXAMPLE_VARS[1], &token)
        .env(TOKEN_EXAMPLE_VARS[2], &azurite.ca_file)
        .output()
        .expect("the example binary starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "token_credential failed ({}):\n{stdout}\n{stderr}", output.status);
    assert!(stdout.starts_with(&format!("backend: {} with a bearer token", azurite.endpoint)), "{stdout}");
    assert_eq!(stdout.matches("with Entra ID").count(), 2, "{stdout}");
    assert!(!stdout.contains(&token) && !stderr.contains(&token), "the example printed its token");
}

#[test]
fn the_token_credential_example_says_loudly_that_it_skipped_without_its_variables() {
    let mut command = Command::new(env!("CARGO_BIN_EXE_token_credential"));
    for var in TOKEN_EXAMPLE_VARS {
        command.env_remove(var);
    }
    let output = command.output().expect("the example binary starts");
    assert!(output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("TOKEN CREDENTIAL EXAMPLE SKIPPED"));
}
