//! The official JavaScript SDK (`@azure/data-tables`) and Python SDK (`azure-data-tables`) run
//! the same scenarios (`tests/js/scenarios.cjs`, `tests/python/scenarios.py`): every EDM type,
//! batches (committing and failing), paging with small pages, ETags and upserts, table SAS,
//! error codes, table listing. Each SDK checks the answers through its own view of them, so
//! two independent clients vouch for the endpoint. One test per scenario, SDK and mode:
//! - `<scenario>::javascript` and `<scenario>::python`, on Azurite, where the scenarios accept
//!   its documented deviations and nothing else (`Rules::Azurite`);
//! - `<scenario>::server::*` on an in-process table-server over HTTP with SharedKey (a fresh
//!   account per test), where the service's rules hold strictly (`Rules::Strict`: SAS key
//!   ranges enforced, the service's error codes);
//! - `<scenario>::server::https::*`, the same over HTTPS, each SDK trusting the harness's
//!   private CA only (Node: `NODE_EXTRA_CA_CERTS`; Python: `connection_verify`);
//! - `<scenario>::server::bearer::*`, over HTTPS with a bearer token credential (a class in
//!   each script returning the token the harness minted) and no account key. `sas` is left out
//!   of this mode: signing a SAS needs the account key, which a token client does not hold (the
//!   service's user delegation SAS is not a Table feature). `errors` also checks that an
//!   expired token is refused with 403 `AuthenticationFailed`.
//!
//! Where Node.js or Python cannot run, the harness prints a loud banner and the tests return
//! (`REQUIRE_AZURITE=1` / `REQUIRE_PYTHON=1` turn that into a failure).

use conformance::azurite::azurite;
use conformance::javascript::javascript;
use conformance::python::python;
use conformance::script::{Rules, Target};
use conformance::server;

/// One module per scenario with a test per SDK and mode, and the list of the scenario names.
/// A scenario marked `bearer` also runs with a bearer token credential.
macro_rules! sdk_scenarios {
    ($($name:ident $(: $bearer:ident)?),* $(,)?) => {
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
                        super::super::javascript_on(stringify!($name), super::super::http_target());
                    }

                    #[test]
                    fn python() {
                        super::super::python_on(stringify!($name), super::super::http_target());
                    }

                    mod https {
                        #[test]
                        fn javascript() {
                            super::super::super::javascript_on(stringify!($name), conformance::server::https_target());
                        }

                        #[test]
                        fn python() {
                            super::super::super::python_on(stringify!($name), conformance::server::https_target());
                        }
                    }

                    $(bearer_tests!($name, $bearer);)?
                }
            }
        )*

        /// The scenarios this file runs.
        const NAMES: &[&str] = &[$(stringify!($name)),*];
    };
}

/// `<scenario>::server::bearer::{javascript,python}`.
macro_rules! bearer_tests {
    ($name:ident, bearer) => {
        mod bearer {
            #[test]
            fn javascript() {
                super::super::super::javascript_on(stringify!($name), conformance::server::bearer_target());
            }

            #[test]
            fn python() {
                super::super::super::python_on(stringify!($name), conformance::server::bearer_target());
            }
        }
    };
}

sdk_scenarios!(
    edm_types: bearer,
    batches: bearer,
    paging: bearer,
    etags: bearer,
    sas,
    errors: bearer,
    tables: bearer,
);

fn javascript_on_azurite(name: &str) {
    let (Some(js), Some(azurite)) = (javascript(), azurite()) else {
        return;
    };
    if let Err(e) = js.scenario(name, &Target::shared_key(&azurite.connection_string), Rules::Azurite) {
        panic!("the JavaScript SDK scenario `{name}` failed on Azurite:\n{e}");
    }
}

fn python_on_azurite(name: &str) {
    let (Some(python), Some(azurite)) = (python(), azurite()) else {
        return;
    };
    if let Err(e) = python.scenario(name, &Target::shared_key(&azurite.connection_string), Rules::Azurite) {
        panic!("the Python SDK scenario `{name}` failed on Azurite:\n{e}");
    }
}

/// A new account on the HTTP table-server, reached with its key.
fn http_target() -> Target {
    Target::shared_key(server::connection_string())
}

/// Runs scenario `name` of the JavaScript SDK strictly against `target` on table-server.
fn javascript_on(name: &str, target: Target) {
    let Some(js) = javascript() else { return };
    if let Err(e) = js.scenario(name, &target, Rules::Strict) {
        panic!("the JavaScript SDK scenario `{name}` failed on table-server ({}):\n{e}", mode(&target));
    }
}

/// Runs scenario `name` of the Python SDK strictly against `target` on table-server.
fn python_on(name: &str, target: Target) {
    let Some(python) = python() else { return };
    if let Err(e) = python.scenario(name, &target, Rules::Strict) {
        panic!("the Python SDK scenario `{name}` failed on table-server ({}):\n{e}", mode(&target));
    }
}

/// How `target` is reached, for failure messages.
fn mode(target: &Target) -> &'static str {
    match (&target.ca_file, &target.bearer) {
        (_, Some(_)) => "HTTPS, bearer token",
        (Some(_), None) => "HTTPS, SharedKey",
        (None, None) => "HTTP, SharedKey",
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
