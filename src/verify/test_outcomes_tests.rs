//! Over real output of each runner (`tests/fixtures/test_outputs`, see its README).

use super::*;

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/test_outputs/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn names(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn pytest_names_failed_tests_and_files_that_could_not_be_collected() {
    let want = names(&[
        "tests/test_calc.py::TestCalc::test_boom",
        "tests/test_calc.py::TestCalc::test_sub",
        "tests/test_param.py::test_even[1]",
    ]);
    assert_eq!(failed_tests(&fixture("pytest.txt")), want);
    assert_eq!(failed_tests(&fixture("pytest-v.txt")), want);
    assert_eq!(
        failed_tests(&fixture("pytest-collection-error.txt")),
        names(&["tests/test_broken_import.py"])
    );
}

#[test]
fn unittest_names_failures_and_errors_quiet_or_verbose() {
    let want = names(&[
        "tests.test_calc.TestCalc.test_boom",
        "tests.test_calc.TestCalc.test_sub",
    ]);
    assert_eq!(failed_tests(&fixture("unittest.txt")), want);
    assert_eq!(failed_tests(&fixture("unittest-v.txt")), want);
    // Before Python 3.11 the parentheses hold the class only (its documented format).
    let old = "FAIL: test_sub (tests.test_calc.TestCalc)\n\
               test_boom (tests.test_calc.TestCalc) ... ERROR\n\
               FAILED (failures=1, errors=1)\n";
    assert_eq!(failed_tests(old), want);
}

#[test]
fn cargo_test_names_failed_tests_of_every_target() {
    assert_eq!(
        failed_tests(&fixture("cargo-test.txt")),
        names(&["tests::subtracts", "api_breaks"])
    );
}

#[test]
fn go_test_names_tests_by_package_and_a_package_that_did_not_build() {
    let want = names(&[
        "example.com/bt/broken",
        "example.com/bt/calc.TestSub",
        "example.com/bt/calc.TestTable",
        "example.com/bt/calc.TestTable/two",
    ]);
    assert_eq!(failed_tests(&fixture("go-test.txt")), want);
    assert_eq!(failed_tests(&fixture("go-test-v.txt")), want);
}

#[test]
fn jest_names_tests_by_file_and_a_file_that_failed_to_run() {
    let want = names(&[
        "src/calc.test.js › calc › subtracts",
        "src/calc.test.js › top level fails",
        "src/broken.test.js",
    ]);
    assert_eq!(failed_tests(&fixture("jest.txt")), want);
    assert_eq!(failed_tests(&fixture("jest-verbose.txt")), want);
}

#[test]
fn vitest_names_failed_tests_and_a_file_that_failed_to_load() {
    assert_eq!(
        failed_tests(&fixture("vitest.txt")),
        names(&[
            "calc.test.mjs > calc > subtracts",
            "calc.test.mjs > top level fails",
            "broken.test.mjs [ broken.test.mjs ]",
        ])
    );
}

#[test]
fn output_that_names_no_test_names_none() {
    for text in [
        "",
        "cat status.txt\nbroken\n",
        "error[E0425]: cannot find value `x` in this scope\nerror: could not compile `bt-rs`\n",
        "FAILED (failures=1)\nFAIL\nPASS src/ok.test.js\nok  \texample.com/ok\t0.01s\n",
        "test result: FAILED. 1 passed; 1 failed; 0 ignored\n",
    ] {
        assert_eq!(failed_tests(text), BTreeSet::new(), "{text:?}");
    }
}
