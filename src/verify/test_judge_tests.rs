use super::*;

fn run(code: i32, output: &str, root: &str) -> TestRun {
    TestRun {
        status: RunStatus::Exited(code),
        output: output.to_string(),
        root: PathBuf::from(root),
    }
}

/// unittest's output with `failing` failed, as Python 3.11 prints it.
fn unittest(failing: &[&str], root: &str) -> TestRun {
    let mut out = String::new();
    for t in failing {
        out.push_str(&format!(
            "======\nFAIL: {t} (tests.test_app.T.{t})\n------\nTraceback:\n  File \"{root}/tests/test_app.py\", line 9\nAssertionError\n\n"
        ));
    }
    out.push_str(&format!("Ran 3 tests in 0.00{}s\n\n", failing.len()));
    if failing.is_empty() {
        out.push_str("OK\n");
        return run(0, &out, root);
    }
    out.push_str(&format!("FAILED (failures={})\n", failing.len()));
    run(1, &out, root)
}

#[test]
fn each_of_two_fixers_is_told_what_it_fixed_and_what_was_already_failing() {
    let base = unittest(&["test_a", "test_b"], "/base");
    let a = unittest(&["test_b"], "/wt/a");
    let f = judge("python3 -m unittest", Some(&base), &a).unwrap();
    assert_eq!(f.severity, Severity::Warning, "{f:?}");
    assert!(f.message.contains("you broke no test"), "{}", f.message);
    assert!(
        f.message.contains("You fixed: tests.test_app.T.test_a."),
        "{}",
        f.message
    );
    assert!(
        f.message
            .contains("Already failing before you started (not yours): tests.test_app.T.test_b."),
        "{}",
        f.message
    );
    // Without a base to compare with, the same run is the worker's failure, as before.
    assert_eq!(
        judge("python3 -m unittest", None, &a).unwrap().severity,
        Severity::Error
    );
}

#[test]
fn a_test_that_passed_at_the_base_and_fails_now_is_broken() {
    let base = unittest(&["test_b"], "/base");
    let now = unittest(&["test_b", "test_c"], "/wt/a");
    let f = judge("python3 -m unittest", Some(&base), &now).unwrap();
    assert_eq!(f.severity, Severity::Error);
    assert!(
        f.message.contains(
            "you broke 1 test that did not fail before you started: tests.test_app.T.test_c."
        ),
        "{}",
        f.message
    );
    assert!(f.message.contains("(not yours): tests.test_app.T.test_b"));
    assert!(f.fix.contains("make tests.test_app.T.test_c pass again"));
    // A base that passed: every failing test is broken.
    let f = judge("t", Some(&unittest(&[], "/base")), &now).unwrap();
    assert!(f.message.contains("you broke 2 tests"), "{}", f.message);
}

#[test]
fn a_passing_run_has_no_finding_whatever_the_base() {
    let now = unittest(&[], "/wt");
    assert_eq!(judge("t", Some(&unittest(&["test_a"], "/b")), &now), None);
    assert_eq!(judge("t", None, &now), None);
}

#[test]
fn without_test_names_a_base_that_failed_the_same_way_excuses_the_failure() {
    let base = run(1, "checking /base/data.txt\nbroken in 12 places\n", "/base");
    let same = run(1, "checking /wt/x/data.txt\nbroken in 3 places\n", "/wt/x");
    let f = judge("./check", Some(&base), &same).unwrap();
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.message.contains("the same way as at your starting point"));
    // Another output, another status, or a base that passed: the worker's.
    for (now, base) in [
        (run(1, "still broken\n", "/wt"), run(1, "broken\n", "/base")),
        (run(2, "broken\n", "/wt"), run(1, "broken\n", "/base")),
        (run(1, "broken\n", "/wt"), run(0, "fine\n", "/base")),
    ] {
        let f = judge("./check", Some(&base), &now).unwrap();
        assert_eq!(f.severity, Severity::Error, "{now:?} {base:?}");
        assert_eq!(f.rule, "tests");
    }
    let f = judge(
        "./check",
        Some(&run(1, "broken\n", "/base")),
        &run(2, "x\ny\nz\n", "/wt"),
    )
    .unwrap();
    assert!(
        f.message
            .ends_with("(At your starting point it exited 1, differently.)"),
        "{}",
        f.message
    );
}

#[test]
fn a_run_that_names_no_test_where_the_base_named_some_is_the_workers() {
    // The worker broke the build: no test ran, where at the base one failed.
    let base = unittest(&["test_b"], "/base");
    let now = run(1, "SyntaxError: invalid syntax\n", "/wt");
    assert_eq!(
        judge("t", Some(&base), &now).unwrap().severity,
        Severity::Error
    );
}

#[test]
fn long_lists_are_cut_with_a_count() {
    let names: Vec<String> = (0..12).map(|i| format!("t{i:02}")).collect();
    let refs: Vec<&String> = names.iter().collect();
    assert!(list(&refs).ends_with("t09 and 2 more"), "{}", list(&refs));
}
