//! Compile errors of the derive, one file per mistake (`TRYBUILD=overwrite` regenerates the
//! expected output; review every `.stderr` diff).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*/*.rs");
}
