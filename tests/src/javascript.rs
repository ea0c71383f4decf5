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

use crate::script::{Rules, ScriptError, Target};
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

    /// Runs scenario `name` against `target`. Blocks until the scenario ends.
    pub fn scenario(&self, name: &str, target: &Target, rules: Rules) -> Result<(), ScriptError> {
        let mut command = Command::new("node");
        command
            .arg(&self.script)
            .arg(name)
            .env("NODE_PATH", &self.modules)
            .envs(crate::script::scenario_env(target, rules))
            .stdin(Stdio::null());
        // Node reads its extra trusted CAs when it starts, from this variable only.
        match &target.ca_file {
            Some(ca_file) => command.env("NODE_EXTRA_CA_CERTS", ca_file),
            None => command.env_remove("NODE_EXTRA_CA_CERTS"),
        };
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
    let headline = "JAVASCRIPT SDK SCENARIOS SKIPPED: node/npm not found";
    if !tooling::node_and_npm_found(
        headline,
        &["Install Node.js and npm (e.g. `apt-get install -y nodejs npm`)."],
    )? {
        return Ok(None);
    }
    let cache = tooling::cache_dir("JS_SDK_CACHE_DIR", "js-sdk-cache");
    let sdk = Path::new("node_modules").join("@azure").join("data-tables").join("package.json");
    let prefix = tooling::npm_install_once(&cache, "@azure/data-tables", AZURE_DATA_TABLES_JS_VERSION, &sdk)?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("js").join("scenarios.cjs");
    Ok(Some(JavaScript { modules: prefix.join("node_modules"), script }))
}
