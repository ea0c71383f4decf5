//! The official JavaScript SDK (`@azure/data-tables`) and Python SDK (`azure-data-tables`) run
//! the same scenarios (`tests/js/scenarios.cjs`, `tests/python/scenarios.py`): every EDM type,
//! batches (committing and failing), paging with small pages, ETags and upserts, table SAS,
//! error codes, table listing. Each SDK checks the answers through its own view of them, so
//! two independent clients vouch for the endpoint. One test per scenario and SDK:
//! `<scenario>::javascript` and `<scenario>::python`, on Azurite, where the scenarios accept its
//! documented deviations and nothing else (`Rules::Azurite`), and `<scenario>::server::*` on an
//! in-process table-server (SharedKey on, a fresh account per test), where the service's rules
//! hold strictly (`Rules::Strict`: SAS key ranges enforced, the service's error codes).
//!
//! Where Node.js or Python cannot run, the harness prints a loud banner and the tests return
//! (`REQUIRE_AZURITE=1` / `REQUIRE_PYTHON=1` turn that into a failure).

use conformance::azurite::azurite;
use conformance::javascript::javascript;
use conformance::python::python;
use conformance::script::Rules;
use conformance::server;

/// One module per scenario with a test per SDK, and the list of the scenario names.
macro_rules! sdk_scenarios {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[test]
                fn javascript() {
                    super::javascript_on_azurite(stringify!($name));
                }

                #[test]
                fn python() {
                    super::python_on_azurite(stringify!($name));
                }

                mod server {
                    #[test]
                    fn javascript() {
                        super::super::javascript_on_server(stringify!($name));
                    }

                    #[test]
                    fn python() {
                        super::super::python_on_server(stringify!($name));
                    }
                }
            }
        )*

        /// The scenarios this file runs.
        const NAMES: &[&str] = &[$(stringify!($name)),*];
    };
}

sdk_scenarios!(edm_types, batches, paging, etags, sas, errors, tables);

fn javascript_on_azurite(name: &str) {
    let (Some(js), Some(azurite)) = (javascript(), azurite()) else {
        return;
    };
    if let Err(e) = js.scenario(name, &azurite.connection_string, Rules::Azurite) {
        panic!("the JavaScript SDK scenario `{name}` failed on Azurite:\n{e}");
    }
}

fn python_on_azurite(name: &str) {
    let (Some(python), Some(azurite)) = (python(), azurite()) else {
        return;
    };
    if let Err(e) = python.scenario(name, &azurite.connection_string, Rules::Azurite) {
        panic!("the Python SDK scenario `{name}` failed on Azurite:\n{e}");
    }
}

fn javascript_on_server(name: &str) {
    let Some(js) = javascript() else { return };
    if let Err(e) = js.scenario(name, &server::connection_string(), Rules::Strict) {
        panic!("the JavaScript SDK scenario `{name}` failed on table-server:\n{e}");
    }
}

fn python_on_server(name: &str) {
    let Some(python) = python() else { return };
    if let Err(e) = python.scenario(name, &server::connection_string(), Rules::Strict) {
        panic!("the Python SDK scenario `{name}` failed on table-server:\n{e}");
    }
}

/// A scenario added to either script cannot go unrun, and both SDKs run the same set.
#[test]
fn every_scenario_of_both_scripts_has_a_test() {
    if let Some(js) = javascript() {
        let names = js.scenario_names().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(names, NAMES, "tests/js/scenarios.cjs and this file list different scenarios");
    }
    if let Some(python) = python() {
        let names = python.scenario_names().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(names, NAMES, "tests/python/scenarios.py and this file list different scenarios");
    }
}
