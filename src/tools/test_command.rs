//! The project's test command when none is configured, read from the files at the
//! workspace root. A 1.5B model told "no test command is configured; run the tests with
//! run_command" ran `cargo test` in a Python project, was blocked by the sandbox, and
//! handed the session round its personas; the files say plainly which runner a project
//! uses, so `run_tests` asks them first.

use std::path::Path;

/// The command the root's build files name, or `None` when they name none.
pub fn detect(root: &Path) -> Option<&'static str> {
    let has = |name: &str| root.join(name).is_file();
    if has("Cargo.toml") {
        return Some("cargo test");
    }
    if has("go.mod") {
        return Some("go test ./...");
    }
    if has("package.json") && npm_has_tests(root) {
        return Some("npm test");
    }
    if [
        "pytest.ini",
        "pyproject.toml",
        "setup.cfg",
        "tox.ini",
        "conftest.py",
    ]
    .iter()
    .any(|f| has(f))
        || has_python_tests(root)
        || has_python_tests(&root.join("tests"))
    {
        return Some("python3 -m pytest -q");
    }
    if make_has_test(root) {
        return Some("make test");
    }
    None
}

/// `package.json` has a test script other than npm's placeholder.
fn npm_has_tests(root: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(root.join("package.json")) else {
        return false;
    };
    let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) else {
        return false;
    };
    json["scripts"]["test"]
        .as_str()
        .is_some_and(|t| !t.contains("no test specified"))
}

/// `test_*.py` or `*_test.py` directly in `dir`.
fn has_python_tests(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let name = e.file_name();
        let name = name.to_string_lossy();
        name.ends_with(".py") && (name.starts_with("test_") || name.ends_with("_test.py"))
    })
}

fn make_has_test(root: &Path) -> bool {
    std::fs::read_to_string(root.join("Makefile"))
        .is_ok_and(|m| m.lines().any(|l| l.starts_with("test:")))
}

#[cfg(test)]
mod tests {
    use super::detect;
    use std::fs;

    fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        for (name, text) in files {
            let path = dir.path().join(name);
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent).expect("parent");
            }
            fs::write(path, text).expect("write");
        }
        dir
    }

    /// A project's files, and the runner they name.
    type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>);

    #[test]
    fn each_kind_of_project_names_its_runner() {
        let cases: &[Case] = &[
            (&[("Cargo.toml", "[package]")], Some("cargo test")),
            (&[("go.mod", "module x")], Some("go test ./...")),
            (
                &[("package.json", r#"{"scripts":{"test":"jest"}}"#)],
                Some("npm test"),
            ),
            (
                &[(
                    "package.json",
                    r#"{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}"#,
                )],
                None,
            ),
            (
                &[("calc.py", ""), ("test_calc.py", "")],
                Some("python3 -m pytest -q"),
            ),
            (&[("tests/calc_test.py", "")], Some("python3 -m pytest -q")),
            (&[("pyproject.toml", "")], Some("python3 -m pytest -q")),
            (
                &[("Makefile", "all:\n\ntest:\n\tsh t.sh\n")],
                Some("make test"),
            ),
            (&[("README.md", "")], None),
        ];
        for (files, want) in cases {
            let dir = dir_with(files);
            assert_eq!(detect(dir.path()), *want, "{files:?}");
        }
    }
}
