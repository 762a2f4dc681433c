//! Unsupported (algorithm, types, formats, ranks) combinations do not compile; supported
//! ones do. The `.stderr` files hold the expected trait-bound errors.

#[test]
fn support_table_is_enforced_by_the_type_system() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass_*.rs");
    t.compile_fail("tests/ui/fail_*.rs");
}
