//! Which tests a test command's output says failed, for the runners whose output names
//! them: pytest, python's unittest, cargo test, go test, jest and vitest. A worker is
//! charged only with the tests it broke (`test_judge.rs`), and that needs the names.
//!
//! Only failures are read: every one of these runners names a failing test, while most
//! name passing ones only when asked (`-v`). A name is as the runner prints it, so the
//! same test reads the same at the worker's base and in its view. Lines are read one at a
//! time and each format is told apart by its own marks; text that looks like none is
//! skipped, so an unknown runner's output simply names no test.

use std::collections::BTreeSet;

/// The tests a run's output names as failed (errors, a test file or package that could
/// not load, included).
pub fn failed_tests(output: &str) -> BTreeSet<String> {
    let mut failed = BTreeSet::new();
    let mut go = GoPackage::default();
    let mut jest_file: Option<&str> = None;
    for raw in output.lines() {
        let line = raw.trim_end();
        if let Some(name) = pytest(line)
            .or_else(|| unittest(line))
            .or_else(|| cargo(line))
            .or_else(|| vitest(line))
        {
            failed.insert(name);
            continue;
        }
        if let Some(file) = jest_file_line(line) {
            jest_file = Some(file);
            continue;
        }
        if let Some(title) = line.trim_start().strip_prefix("● ") {
            // jest names a failing test `● describe › test` under its file's `FAIL` line.
            let file = jest_file.unwrap_or("");
            failed.insert(if title == "Test suite failed to run" {
                file.to_string()
            } else {
                format!("{file} › {title}")
            });
            continue;
        }
        go.line(line, &mut failed);
    }
    failed
}

/// pytest's short summary: `FAILED path::test - message`, `ERROR path` (a file that could
/// not be collected). With `-v`, also `path::test FAILED   [ 50%]`.
fn pytest(line: &str) -> Option<String> {
    for mark in ["FAILED ", "ERROR "] {
        if let Some(rest) = line.strip_prefix(mark) {
            let name = rest.split(" - ").next().unwrap_or(rest).trim();
            // A test id (`path::test`) or a file that could not be collected; unittest's
            // `FAILED (failures=1)` is neither.
            if !name.contains(' ') && (name.contains("::") || name.ends_with(".py")) {
                return Some(name.to_string());
            }
        }
    }
    let (name, rest) = line.split_once(' ')?;
    let rest = rest.trim_start();
    (name.contains("::") && (rest.starts_with("FAILED") || rest.starts_with("ERROR")))
        .then(|| name.to_string())
}

/// unittest: `FAIL: test_x (pkg.mod.Class.test_x)` and `ERROR: …` headers, and with `-v`
/// `test_x (pkg.mod.Class.test_x) ... FAIL`. Before Python 3.11 the parentheses hold the
/// class only: the name is the class and the method then.
fn unittest(line: &str) -> Option<String> {
    if let Some(rest) = line
        .strip_prefix("FAIL: ")
        .or_else(|| line.strip_prefix("ERROR: "))
    {
        return unittest_name(rest);
    }
    let (test, verdict) = line.rsplit_once(" ... ")?;
    matches!(verdict, "FAIL" | "ERROR")
        .then(|| unittest_name(test))
        .flatten()
}

fn unittest_name(text: &str) -> Option<String> {
    let (method, rest) = text.split_once(" (")?;
    let (place, _) = rest.split_once(')')?;
    if method.contains(' ') || place.contains(' ') || place.is_empty() {
        return None;
    }
    Some(if place.ends_with(&format!(".{method}")) {
        place.to_string()
    } else {
        format!("{place}.{method}")
    })
}

/// cargo test (libtest): `test path::to::test ... FAILED`.
fn cargo(line: &str) -> Option<String> {
    let rest = line.strip_prefix("test ")?;
    let (name, verdict) = rest.rsplit_once(" ... ")?;
    (verdict == "FAILED").then(|| name.to_string())
}

/// vitest: ` FAIL  file > describe > test` for a failing test, ` FAIL  file [ file ]` for
/// a test file that could not load. jest's `FAIL file` lines carry neither.
fn vitest(line: &str) -> Option<String> {
    let rest = line.trim_start().strip_prefix("FAIL  ")?.trim();
    (rest.contains(" > ") || rest.ends_with(" ]")).then(|| rest.to_string())
}

/// jest's line for a test file: `FAIL src/a.test.js` (or `PASS …`); the failing tests
/// named after it are that file's.
fn jest_file_line(line: &str) -> Option<&str> {
    let rest = line
        .strip_prefix("FAIL ")
        .or_else(|| line.strip_prefix("PASS "))?;
    let file = rest.trim();
    (!file.is_empty() && !file.contains(' ')).then_some(file)
}

/// go test: `--- FAIL: TestName (0.00s)` (subtests indented, `TestName/sub`), then the
/// package's `FAIL\tpkg\t0.01s` line; a package that did not build is `FAIL\tpkg [build
/// failed]`. Tests are named `pkg.TestName` once their package line comes.
#[derive(Default)]
struct GoPackage {
    pending: Vec<String>,
}

impl GoPackage {
    fn line(&mut self, line: &str, failed: &mut BTreeSet<String>) {
        if let Some(rest) = line.trim_start().strip_prefix("--- FAIL: ") {
            let name = rest.split(" (").next().unwrap_or(rest).trim();
            if !name.is_empty() {
                self.pending.push(name.to_string());
            }
            return;
        }
        let Some(rest) = line
            .strip_prefix("FAIL\t")
            .or_else(|| line.strip_prefix("ok  \t"))
        else {
            return;
        };
        let package = rest.split(['\t', ' ']).next().unwrap_or(rest);
        let tests = std::mem::take(&mut self.pending);
        if line.starts_with("FAIL") && tests.is_empty() {
            // Failed with no failing test: it did not build, or it crashed or timed out.
            failed.insert(package.to_string());
        }
        failed.extend(tests.into_iter().map(|t| format!("{package}.{t}")));
    }
}

#[cfg(test)]
#[path = "test_outcomes_tests.rs"]
mod tests;
