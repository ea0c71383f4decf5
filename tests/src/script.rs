//! Running one helper script of an external SDK (`tests/python/`, `tests/js/`) and keeping
//! everything it printed for the error message; and what the SDK scenario scripts
//! (`tests/python/scenarios.py`, `tests/js/scenarios.cjs`) have in common: the same scenario
//! names, the endpoint, its CA, the credentials and the rules passed through the environment
//! ([`Target`]), and `ok <scenario>` as the last word of a scenario that ran every check.

use std::path::PathBuf;
use std::process::{Command, ExitStatus};

/// Why a helper script did not give a usable answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScriptError {
    /// The interpreter could not be started.
    #[error("cannot start `{command}`")]
    Spawn {
        /// The command line.
        command: String,
        /// Why the start failed.
        #[source]
        source: std::io::Error,
    },
    /// The script exited unsuccessfully; its output is kept (the SDK's traceback is in `stderr`).
    #[error("`{command}` failed ({status})\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}")]
    Failed {
        /// The command line.
        command: String,
        /// The exit status.
        status: ExitStatus,
        /// Everything the script printed on stdout.
        stdout: String,
        /// Everything the script printed on stderr.
        stderr: String,
    },
    /// The script succeeded but printed something other than what the caller expects.
    #[error("`{command}` printed unexpected output: {reason}\n--- stdout ---\n{stdout}")]
    Output {
        /// The command line.
        command: String,
        /// What is wrong with the output.
        reason: String,
        /// Everything the script printed on stdout.
        stdout: String,
    },
}

/// Runs `command` (shown as `shown` in errors) to completion; returns its stdout (UTF-8) when
/// it exits successfully.
pub(crate) fn run(command: &mut Command, shown: String) -> Result<String, ScriptError> {
    let output = command.output().map_err(|source| ScriptError::Spawn { command: shown.clone(), source })?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() {
        return Err(ScriptError::Failed {
            command: shown,
            status: output.status,
            stdout,
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    String::from_utf8(output.stdout).map_err(|e| ScriptError::Output {
        command: shown,
        reason: format!("not UTF-8: {e}"),
        stdout,
    })
}

/// Which rules the endpoint under test of an SDK scenario follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rules {
    /// The service's rules (our engine served over HTTP).
    Strict,
    /// Azurite's: its documented deviations are accepted, and their checks skipped.
    Azurite,
}

/// Where an SDK scenario runs and how it authenticates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `AccountName` and `TableEndpoint`, and `AccountKey` unless [`Self::bearer`] is set.
    pub connection_string: String,
    /// For an HTTPS endpoint: a PEM file of the CA to trust (the SDKs trust nothing else).
    pub ca_file: Option<PathBuf>,
    /// Bearer tokens to authenticate with instead of the account key.
    pub bearer: Option<BearerTokens>,
}

/// The tokens of a bearer-token scenario run, minted by the harness
/// ([`crate::token::mint_token`]); the scripts' credential classes return them as they are.
#[derive(Clone, PartialEq, Eq)]
pub struct BearerTokens {
    /// A token the endpoint accepts while the run lasts.
    pub valid: String,
    /// An expired one, which the endpoint must refuse (403 `AuthenticationFailed`).
    pub expired: String,
}

impl std::fmt::Debug for BearerTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerTokens(<redacted>)")
    }
}

impl Target {
    /// The account of `connection_string` (with `AccountKey`) over plain HTTP.
    pub fn shared_key(connection_string: impl Into<String>) -> Target {
        Target { connection_string: connection_string.into(), ca_file: None, bearer: None }
    }
}

/// The environment of one scenario run. The connection string and tokens travel there, not on
/// the command line: they are secrets, and the command line is shown in every error.
pub(crate) fn scenario_env(target: &Target, rules: Rules) -> Vec<(&'static str, String)> {
    let strict = if rules == Rules::Strict { "1" } else { "0" };
    let mut env = vec![
        ("SCENARIO_CONNECTION_STRING", target.connection_string.clone()),
        ("SCENARIO_STRICT", strict.to_owned()),
    ];
    if let Some(ca_file) = &target.ca_file {
        env.push(("SCENARIO_CA_FILE", ca_file.display().to_string()));
    }
    if let Some(tokens) = &target.bearer {
        env.push(("SCENARIO_BEARER_TOKEN", tokens.valid.clone()));
        env.push(("SCENARIO_EXPIRED_BEARER_TOKEN", tokens.expired.clone()));
    }
    env
}

/// A scenario that exited successfully without printing `ok <name>` did not run its checks,
/// and must not pass.
pub(crate) fn expect_ok(name: &str, command: String, stdout: String) -> Result<(), ScriptError> {
    if stdout.lines().any(|line| line == format!("ok {name}")) {
        Ok(())
    } else {
        Err(ScriptError::Output { command, reason: format!("no `ok {name}` line"), stdout })
    }
}
