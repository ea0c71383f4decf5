//! Running one helper script of an external SDK (`tests/python/`, `tests/js/`) and keeping
//! everything it printed for the error message; and what the SDK scenario scripts
//! (`tests/python/scenarios.py`, `tests/js/scenarios.cjs`) have in common: the same scenario
//! names, the endpoint and rules passed through the environment, and `ok <scenario>` as the
//! last word of a scenario that ran every check.

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

/// The environment of one scenario run. The connection string travels there, not on the
/// command line: it carries the account key, and the command line is shown in every error.
pub(crate) fn scenario_env(connection_string: &str, rules: Rules) -> [(&'static str, &str); 2] {
    let strict = if rules == Rules::Strict { "1" } else { "0" };
    [("SCENARIO_CONNECTION_STRING", connection_string), ("SCENARIO_STRICT", strict)]
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
