//! The official Python SDK (`azure-data-tables` from PyPI) as an interop peer.
//!
//! [`python()`] creates, once per cache folder, a virtual environment with
//! `azure-data-tables==12.7.0` (`python3 -m venv`, then pip; the cache folder is
//! `PYTHON_VENV_DIR`, default `<target>/python-venv`, lock-guarded like Azurite's) and runs the
//! helper scripts of `tests/python/` with it. Where `python3` is missing it prints a loud
//! banner and returns `None`; `REQUIRE_PYTHON=1` (set by `.ci/run`) turns that into a panic.
//! A failing venv creation or pip install always panics with pip's output.
//!
//! [`python_cosmosdb_table()`] is the same over a second venv with `azure-cosmosdb-table`
//! 1.0.6, for `tests/python/encryption_interop.py` (client-side encryption format "1.0").
//!
//! `tests/python/interop.py` writes a corpus of every EDM type (extremes included) through the
//! SDK, or reads a partition back through it, and prints typed JSON; [`parse_interop`] turns
//! that JSON into `table_core` entities so tests compare values exactly, with no lossy step in
//! between (doubles travel as their shortest round-trip decimal text, Int64 as decimal text,
//! DateTime as the service's 7-digit string).
//!
//! What survives where (measured with Azurite 3.37.0): the whole corpus round-trips through
//! the SDK and Azurite unchanged, including NaN, the infinities, subnormals, Int64 extremes,
//! 7-digit DateTimes and empty Binary. The SDK's own `datetime` objects hold microseconds, so
//! it writes native datetimes with 6 digits and exposes the 7th digit it reads only as the
//! service string (`tables_service_value`), which the script reports. `-0.0` comes back from
//! Azurite as `0.0` (JavaScript's JSON drops the sign), so the corpus leaves it out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use base64::Engine as _;
use table_core::{ETag, Entity, Value};

use crate::script::{Rules, ScriptError, Target};
use crate::tooling;

/// The `azure-data-tables` version the suite is pinned to.
pub const AZURE_DATA_TABLES_VERSION: &str = "12.7.0";

/// The `azure-cosmosdb-table` version of the encryption interop: the last Python package
/// that encrypts table entities (client-side encryption format "1.0"). It lives in a venv of
/// its own: it shares the `azure` namespace with `azure-data-tables`.
pub const AZURE_COSMOSDB_TABLE_VERSION: &str = "1.0.6";

/// The environment variable through which `interop.py` gets the connection string.
pub const CONNECTION_STRING_VAR: &str = "INTEROP_CONNECTION_STRING";

/// A virtual environment with the Python SDK installed, able to run the helper scripts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Python {
    interpreter: PathBuf,
    scripts: PathBuf,
}

impl Python {
    /// The venv's interpreter.
    pub fn interpreter(&self) -> &Path {
        &self.interpreter
    }

    /// Runs `tests/python/<script>` with `args` and the extra environment `env`; returns its
    /// stdout (UTF-8) when it exits successfully. Blocks until the script ends.
    pub fn run(&self, script: &str, args: &[&str], env: &[(&str, &str)]) -> Result<String, ScriptError> {
        let mut command = Command::new(&self.interpreter);
        command
            .arg(self.scripts.join(script))
            .args(args)
            .envs(env.iter().copied())
            // The scripts print non-ASCII text; never let a locale pick another encoding.
            .env("PYTHONIOENCODING", "utf-8")
            .env("PYTHONUTF8", "1")
            .stdin(Stdio::null());
        let shown = format!("{} {script} {}", self.interpreter.display(), args.join(" "));
        crate::script::run(&mut command, shown)
    }

    /// Runs `scenarios.py <name>` against `target` (the same scenarios as the JavaScript
    /// SDK's, [`crate::javascript`]).
    pub fn scenario(&self, name: &str, target: &Target, rules: Rules) -> Result<(), ScriptError> {
        let env = crate::script::scenario_env(target, rules);
        let env: Vec<(&str, &str)> = env.iter().map(|(name, value)| (*name, value.as_str())).collect();
        let stdout = self.run("scenarios.py", &[name], &env)?;
        crate::script::expect_ok(name, format!("scenarios.py {name}"), stdout)
    }

    /// The names of the scenarios `scenarios.py` defines, in its order.
    pub fn scenario_names(&self) -> Result<Vec<String>, ScriptError> {
        Ok(self.run("scenarios.py", &["--list"], &[])?.lines().map(str::to_owned).collect())
    }

    /// `interop.py write`: the SDK creates `table` if needed and upserts its corpus of every
    /// EDM type into `partition`. Returns the entities as the SDK sent them (no timestamps;
    /// ETags from the responses), in RowKey order.
    pub fn interop_write(
        &self,
        connection_string: &str,
        table: &str,
        partition: &str,
    ) -> Result<Vec<Entity>, ScriptError> {
        self.interop("write", connection_string, table, partition)
    }

    /// `interop.py read`: every entity of `partition` as the SDK reads it, typed, with the
    /// service's Timestamp and ETag, in RowKey order.
    pub fn interop_read(
        &self,
        connection_string: &str,
        table: &str,
        partition: &str,
    ) -> Result<Vec<Entity>, ScriptError> {
        self.interop("read", connection_string, table, partition)
    }

    /// Runs one `interop.py` command and parses what it prints.
    fn interop(
        &self,
        verb: &str,
        connection_string: &str,
        table: &str,
        partition: &str,
    ) -> Result<Vec<Entity>, ScriptError> {
        let args = [verb, "--table", table, "--partition", partition];
        // Through the environment, not the command line: the connection string carries the
        // account key, and the command line is shown in every error.
        let stdout = self.run("interop.py", &args, &[(CONNECTION_STRING_VAR, connection_string)])?;
        parse_interop(&stdout).map_err(|reason| ScriptError::Output {
            command: format!("interop.py {}", args.join(" ")),
            reason,
            stdout,
        })
    }
}

/// Parses the JSON `interop.py` prints (format in its docstring) into entities.
pub fn parse_interop(json: &str) -> Result<Vec<Entity>, String> {
    #[derive(serde::Deserialize)]
    struct Document {
        entities: Vec<RawEntity>,
    }
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct RawEntity {
        #[serde(rename = "PartitionKey")]
        partition_key: String,
        #[serde(rename = "RowKey")]
        row_key: String,
        #[serde(rename = "Timestamp")]
        timestamp: Option<String>,
        etag: Option<String>,
        properties: BTreeMap<String, RawProperty>,
    }
    #[derive(serde::Deserialize)]
    struct RawProperty {
        #[serde(rename = "type")]
        edm_type: String,
        value: serde_json::Value,
    }

    let document: Document = serde_json::from_str(json).map_err(|e| format!("not interop JSON: {e}"))?;
    document
        .entities
        .into_iter()
        .map(|raw| {
            let mut entity = Entity::new(raw.partition_key, raw.row_key);
            entity.timestamp = raw
                .timestamp
                .map(|t| table_core::datetime::parse_datetime(&t).map_err(|e| e.to_string()))
                .transpose()?;
            entity.etag = raw.etag.map(ETag::new);
            for (name, property) in raw.properties {
                let value = typed_value(&property.edm_type, &property.value)
                    .map_err(|e| format!("property `{name}` of row `{}`: {e}", entity.row_key))?;
                entity.insert(name, value);
            }
            Ok(entity)
        })
        .collect()
}

/// One property value of the interop JSON, by its declared EDM type.
fn typed_value(edm_type: &str, value: &serde_json::Value) -> Result<Value, String> {
    let text = || value.as_str().ok_or_else(|| format!("{edm_type} value {value} is not a string"));
    Ok(match edm_type {
        "Edm.String" => Value::String(text()?.to_owned()),
        "Edm.Boolean" => Value::Boolean(value.as_bool().ok_or_else(|| format!("{value} is not a boolean"))?),
        "Edm.Int32" => Value::Int32(
            value
                .as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .ok_or_else(|| format!("{value} is not an Int32"))?,
        ),
        "Edm.Int64" => Value::Int64(text()?.parse().map_err(|e| format!("bad Int64: {e}"))?),
        "Edm.Double" => Value::Double(match text()? {
            "NaN" => f64::NAN,
            "Infinity" => f64::INFINITY,
            "-Infinity" => f64::NEG_INFINITY,
            other => other.parse().map_err(|e| format!("bad Double {other:?}: {e}"))?,
        }),
        "Edm.DateTime" => {
            Value::DateTime(table_core::datetime::parse_datetime(text()?).map_err(|e| e.to_string())?)
        }
        "Edm.Guid" => Value::Guid(uuid::Uuid::parse_str(text()?).map_err(|e| format!("bad Guid: {e}"))?),
        "Edm.Binary" => Value::Binary(
            base64::engine::general_purpose::STANDARD
                .decode(text()?)
                .map_err(|e| format!("bad base64: {e}"))?,
        ),
        other => return Err(format!("unknown EDM type {other:?}")),
    })
}

/// The Python SDK venv of this test process, created on first use; `None` when `python3` is
/// missing and `REQUIRE_PYTHON` is not set (a banner on stderr says so).
///
/// Blocking: the first call in a fresh cache folder creates the venv and pip-installs the SDK
/// (seconds to a minute); later calls return at once.
///
/// # Panics
/// When `REQUIRE_PYTHON=1` and `python3` is missing, and whenever creating the venv or the pip
/// install fails (the message carries their output). Every later call panics the same way.
pub fn python() -> Option<&'static Python> {
    static VENV: OnceLock<Result<Option<Python>, String>> = OnceLock::new();
    match VENV.get_or_init(|| resolve("azure-data-tables", AZURE_DATA_TABLES_VERSION)) {
        Ok(python) => python.as_ref(),
        Err(message) => panic!("{message}"),
    }
}

/// [`python()`] with `azure-cosmosdb-table` [`AZURE_COSMOSDB_TABLE_VERSION`] instead of the
/// current SDK, for `tests/python/encryption_interop.py`; same skipping and panics.
pub fn python_cosmosdb_table() -> Option<&'static Python> {
    static VENV: OnceLock<Result<Option<Python>, String>> = OnceLock::new();
    match VENV.get_or_init(|| resolve("azure-cosmosdb-table", AZURE_COSMOSDB_TABLE_VERSION)) {
        Ok(python) => python.as_ref(),
        Err(message) => panic!("{message}"),
    }
}

/// Finds `python3` and makes sure the venv of `package` at `version` exists.
fn resolve(package: &str, version: &str) -> Result<Option<Python>, String> {
    let Some(python) = tooling::tool_version("python3") else {
        return tooling::skip_or_fail(
            "PYTHON INTEROP TESTS SKIPPED: python3 not found",
            &[
                "The interop scenarios with the official Python SDK did not run.",
                "Install Python 3 with venv support (e.g. `apt-get install -y python3 python3-venv`).",
            ],
            "REQUIRE_PYTHON",
        );
    };
    let cache = tooling::cache_dir("PYTHON_VENV_DIR", "python-venv");
    let venv = cache.join(format!("{package}-{version}"));
    let interpreter = venv.join("bin").join("python");
    let marker = format!("{package}-{version}.installed");
    tooling::install_once(&cache, &marker, || {
        // `--clear`: a venv left half-made by an interrupted earlier attempt is rebuilt.
        tooling::run_checked(Command::new("python3").args(["-m", "venv", "--clear"]).arg(&venv))
            .map_err(|e| format!("{e}\n(on Debian, `apt-get install -y python3-venv` provides venv)"))?;
        tooling::run_checked(
            Command::new(&interpreter)
                .args(["-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--quiet"])
                .arg(format!("{package}=={version}")),
        )
        .map(drop)
    })
    .and_then(|()| tooling::check_installed(&cache, &marker, &interpreter))
    .map_err(|e| {
        format!("creating the venv of {package} {version} with {python} in {} failed: {e}", cache.display())
    })?;
    Ok(Some(Python { interpreter, scripts: Path::new(env!("CARGO_MANIFEST_DIR")).join("python") }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_edm_type_parses_exactly() {
        let json = r#"{"entities": [{"PartitionKey": "p", "RowKey": "r",
            "Timestamp": "2026-11-22T04:57:32.0744390Z", "etag": "W/\"x\"",
            "properties": {
              "s": {"type": "Edm.String", "value": "it's"},
              "b": {"type": "Edm.Boolean", "value": true},
              "i": {"type": "Edm.Int32", "value": -2147483648},
              "l": {"type": "Edm.Int64", "value": "-9223372036854775808"},
              "d": {"type": "Edm.Double", "value": "0.1"},
              "n": {"type": "Edm.Double", "value": "NaN"},
              "ninf": {"type": "Edm.Double", "value": "-Infinity"},
              "sub": {"type": "Edm.Double", "value": "5e-324"},
              "big": {"type": "Edm.Double", "value": "1.7976931348623157e+308"},
              "t": {"type": "Edm.DateTime", "value": "2020-01-02T03:04:05.1234567Z", "sdk_value": "ignored"},
              "g": {"type": "Edm.Guid", "value": "68260b3f-beab-45e2-b900-33e2b442e724"},
              "x": {"type": "Edm.Binary", "value": "AAH/"},
              "e": {"type": "Edm.Binary", "value": ""}
            }}]}"#;
        let entities = parse_interop(json).unwrap();
        assert_eq!(entities.len(), 1);
        let e = &entities[0];
        assert_eq!((e.partition_key.as_str(), e.row_key.as_str()), ("p", "r"));
        assert_eq!(e.etag.as_ref().unwrap().as_str(), "W/\"x\"");
        let ticks = table_core::datetime::to_ticks(e.timestamp.unwrap()).unwrap();
        assert_eq!(ticks % 10_000_000, 744_390);
        let t = table_core::datetime::parse_datetime("2020-01-02T03:04:05.1234567Z").unwrap();
        let expected: Vec<(&str, Value)> = vec![
            ("b", Value::Boolean(true)),
            ("big", Value::Double(f64::MAX)),
            ("d", Value::Double(0.1)),
            ("e", Value::Binary(vec![])),
            ("g", Value::Guid(uuid::Uuid::parse_str("68260b3f-beab-45e2-b900-33e2b442e724").unwrap())),
            ("i", Value::Int32(i32::MIN)),
            ("l", Value::Int64(i64::MIN)),
            ("n", Value::Double(f64::NAN)),
            ("ninf", Value::Double(f64::NEG_INFINITY)),
            ("s", Value::String("it's".into())),
            ("sub", Value::Double(5e-324)),
            ("t", Value::DateTime(t)),
            ("x", Value::Binary(vec![0, 1, 255])),
        ];
        let got: Vec<(&str, Value)> = e.properties.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        assert_eq!(got, expected);
        match e.get("sub") {
            Some(Value::Double(d)) => assert_eq!(d.to_bits(), 1),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn mistyped_values_are_errors_naming_the_property() {
        for (edm, value) in [
            ("Edm.Int32", "2147483648"),
            ("Edm.Int64", "\"1.5\""),
            ("Edm.Double", "0.1"),
            ("Edm.Guid", "\"nope\""),
            ("Edm.Binary", "\"!!\""),
            ("Edm.DateTime", "\"yesterday\""),
            ("Edm.Foo", "1"),
        ] {
            let json = format!(
                r#"{{"entities": [{{"PartitionKey": "p", "RowKey": "r", "Timestamp": null, "etag": null,
                   "properties": {{"bad": {{"type": "{edm}", "value": {value}}}}}}}]}}"#
            );
            let err = parse_interop(&json).unwrap_err();
            assert!(err.contains("`bad`"), "{edm}: {err}");
        }
    }
}
