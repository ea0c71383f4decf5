//! The official JavaScript SDK (`@azure/data-tables`) against Azurite: the scenarios of
//! `tests/js/scenarios.cjs`, each checked by the SDK's own view of the answers, one test each.
//! On Azurite they accept its documented deviations only (`Rules::Azurite`); the same
//! scenarios run strictly against a server that follows the service's rules.
//!
//! Where Node.js cannot run, the harness prints a loud banner and the tests return
//! (`REQUIRE_AZURITE=1` turns that into a failure).

use conformance::azurite::azurite;
use conformance::javascript::{Rules, javascript};

/// One test per scenario, and the list of their names.
macro_rules! js_scenarios {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                on_azurite(stringify!($name));
            }
        )*

        /// The scenarios this file runs.
        const NAMES: &[&str] = &[$(stringify!($name)),*];
    };
}

js_scenarios!(edm_types, batches, paging, etags, sas, errors, tables);

fn on_azurite(name: &str) {
    let (Some(js), Some(azurite)) = (javascript(), azurite()) else {
        return;
    };
    if let Err(e) = js.scenario(name, &azurite.connection_string, Rules::Azurite) {
        panic!("the JavaScript SDK scenario `{name}` failed on Azurite:\n{e}");
    }
}

/// A scenario added to the script cannot go unrun.
#[test]
fn every_scenario_of_the_script_has_a_test() {
    let Some(js) = javascript() else {
        return;
    };
    let names = js.scenario_names().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(names, NAMES, "tests/js/scenarios.cjs and tests/tests/js_sdk.rs list different scenarios");
}
