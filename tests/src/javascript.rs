//! The official JavaScript SDK (`@azure/data-tables` from npm) as a second independent client.
//!
//! [`javascript()`] installs the pinned SDK once per cache folder (`JS_SDK_CACHE_DIR`, default
//! `<target>/js-sdk-cache`, lock-guarded like Azurite's) and runs the scenarios of
//! `tests/js/scenarios.cjs` with Node.js. Node.js is Azurite's requirement too, so the same
//! switch governs a missing `node`/`npm`: a loud banner and `None`, or a panic under
//! `REQUIRE_AZURITE=1` (set by `.ci/run`). A failing npm install always panics with its output.
//!
//! Each scenario checks every answer itself (`node:assert`) and exits non-zero with the failed
//! expectation; [`JavaScript::scenario`] turns that into a [`ScriptError`] carrying its output.
//! A scenario runs in strict mode (the service's rules) or, on Azurite, accepting exactly its
//! documented deviations (protocol doc, section 10): see [`Rules`]. The Python SDK runs the
//! same scenarios (`tests/python/scenarios.py`, [`crate::python::Python::scenario`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use crate::script::{Rules, ScriptError};
use crate::tooling;

/// The `@azure/data-tables` version the scenarios are pinned to.
pub const AZURE_DATA_TABLES_JS_VERSION: &str = "13.3.2";

/// Node.js with the SDK installed, able to run the scenarios.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JavaScript {
    /// The `node_modules` folder holding the SDK (given to node as `NODE_PATH`).
    modules: PathBuf,
    script: PathBuf,
}

impl JavaScript {
    /// The names of the scenarios `tests/js/scenarios.cjs` defines, in its order.
    pub fn scenario_names(&self) -> Result<Vec<String>, ScriptError> {
        let mut command = Command::new("node");
        command.arg(&self.script).arg("--list").env("NODE_PATH", &self.modules).stdin(Stdio::null());
        let stdout = crate::script::run(&mut command, format!("node {} --list", self.script.display()))?;
        Ok(stdout.lines().map(str::to_owned).collect())
    }

    /// Runs scenario `name` against the account of `connection_string` (which must name
    /// `AccountName`, `AccountKey` and `TableEndpoint`). Blocks until the scenario ends.
    pub fn scenario(&self, name: &str, connection_string: &str, rules: Rules) -> Result<(), ScriptError> {
        let mut command = Command::new("node");
        command
            .arg(&self.script)
            .arg(name)
            .env("NODE_PATH", &self.modules)
            .envs(crate::script::scenario_env(connection_string, rules))
            .stdin(Stdio::null());
        let shown = format!("node {} {name}", self.script.display());
        let stdout = crate::script::run(&mut command, shown.clone())?;
        crate::script::expect_ok(name, shown, stdout)
    }
}

/// The JavaScript SDK of this test process, installed on first use; `None` when Node.js or
/// npm is missing and `REQUIRE_AZURITE` is not set (a banner on stderr says so).
///
/// # Panics
/// When `REQUIRE_AZURITE=1` and Node.js or npm is missing, and whenever the npm install fails
/// (the message carries npm's output). Every later call panics the same way.
pub fn javascript() -> Option<&'static JavaScript> {
    static SDK: OnceLock<Result<Option<JavaScript>, String>> = OnceLock::new();
    match SDK.get_or_init(resolve) {
        Ok(sdk) => sdk.as_ref(),
        Err(message) => panic!("{message}"),
    }
}

/// Finds Node.js and npm and makes sure the pinned SDK is installed.
fn resolve() -> Result<Option<JavaScript>, String> {
    let (node, npm) = (tooling::tool_version("node"), tooling::tool_version("npm"));
    if node.is_none() || npm.is_none() {
        let found = format!(
            "node: {}, npm: {}",
            node.as_deref().unwrap_or("NOT FOUND"),
            npm.as_deref().unwrap_or("NOT FOUND")
        );
        return tooling::skip_or_fail(
            "JAVASCRIPT SDK SCENARIOS SKIPPED: node/npm not found",
            &[&found, "Install Node.js and npm (e.g. `apt-get install -y nodejs npm`)."],
            "REQUIRE_AZURITE",
        );
    }
    let cache = tooling::cache_dir("JS_SDK_CACHE_DIR", "js-sdk-cache");
    let prefix = cache.join(AZURE_DATA_TABLES_JS_VERSION);
    let modules = prefix.join("node_modules");
    let marker = format!("data-tables-{AZURE_DATA_TABLES_JS_VERSION}.installed");
    tooling::install_once(&cache, &marker, || {
        tooling::run_checked(
            Command::new("npm")
                .arg("install")
                .arg("--prefix")
                .arg(&prefix)
                .args(["--no-audit", "--no-fund", "--no-update-notifier", "--loglevel=warn"])
                .arg(format!("@azure/data-tables@{AZURE_DATA_TABLES_JS_VERSION}")),
        )
        .map(drop)
    })
    .and_then(|()| {
        tooling::check_installed(
            &cache,
            &marker,
            &modules.join("@azure").join("data-tables").join("package.json"),
        )
    })
    .map_err(|e| format!("installing @azure/data-tables into {} failed: {e}", cache.display()))?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("js").join("scenarios.cjs");
    Ok(Some(JavaScript { modules, script }))
}
