//! The rule that keeps tool facts on the handlers: no tool's name is written as a string
//! literal outside `src/tools` and the agent tools' own files (tests apart). Code that
//! needs to know what a call does asks its handler (`ToolFacts`), so a renamed or new tool
//! cannot be forgotten in a list somewhere else.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Every tool name squad defines: the `name:` of each spec under `src/tools` and
/// `src/runtime/agent_tools`, and the constants named after a tool.
fn tool_names(src: &Path) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for dir in ["tools", "runtime/agent_tools"] {
        for file in rust_files(&src.join(dir)) {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            for line in text.lines() {
                let line = line.trim();
                // A spec's `name: "…"`, or a constant named after its tool
                // (`pub const USE_SKILL: &str = "use_skill";`).
                let spec = line.strip_prefix("name: \"");
                let constant = line.strip_prefix("pub const ").and_then(|rest| {
                    let (constant, value) = rest.split_once(": &str = \"")?;
                    value
                        .strip_suffix("\";")
                        .filter(|v| v.to_uppercase() == constant)
                });
                let name = spec.and_then(|r| r.split('"').next()).or(constant);
                if let Some(name) = name
                    && !name.is_empty()
                    && name.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                {
                    names.insert(name.to_string());
                }
            }
        }
    }
    names
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// `text` without its `#[cfg(test)]` items (each skipped to its matching brace or
/// semicolon) and without comment lines.
fn code_outside_tests(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            let mut depth = 0i32;
            let mut opened = false;
            for (_, skipped) in lines.by_ref() {
                for c in skipped.chars() {
                    match c {
                        '{' => {
                            depth += 1;
                            opened = true;
                        }
                        '}' => depth -= 1,
                        _ => {}
                    }
                }
                if (opened && depth <= 0) || (!opened && skipped.trim_end().ends_with(';')) {
                    break;
                }
            }
            continue;
        }
        if trimmed.starts_with("//") {
            continue;
        }
        out.push((n + 1, line));
    }
    out
}

/// The files their parent declares under `#[cfg(test)]` (`#[cfg(test)] mod testing;`):
/// test code, whatever their name.
fn declared_for_tests(
    files: &[std::path::PathBuf],
) -> std::collections::HashSet<std::path::PathBuf> {
    let mut out = std::collections::HashSet::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let Some(dir) = file.parent() else { continue };
        // A child of `mod.rs`/`lib.rs` lives beside it; of `foo.rs`, in `foo/`.
        let dir = if matches!(stem, "mod" | "lib" | "main") {
            dir.to_path_buf()
        } else {
            dir.join(stem)
        };
        for pair in lines.windows(2) {
            let declared = pair[1]
                .trim_start_matches("pub ")
                .strip_prefix("mod ")
                .and_then(|rest| rest.strip_suffix(';'));
            if let (true, Some(name)) = (pair[0] == "#[cfg(test)]", declared) {
                out.insert(dir.join(format!("{name}.rs")));
                out.insert(dir.join(name).join("mod.rs"));
            }
        }
    }
    out
}

/// Each `"name"` literal of a tool outside the places allowed to name tools.
pub(crate) fn literals_outside_tools(src: &Path) -> Vec<String> {
    let names = tool_names(src);
    // The demo model plays a model: its script of calls names tools the way a model's
    // reply does, like a test's transcript; it looks up nothing by name.
    let allowed = |rel: &str| {
        rel.starts_with("tools/")
            || (rel.starts_with("runtime/agent_tools/") && rel != "runtime/agent_tools/mod.rs")
            || rel == "model/demo.rs"
            // The spend fold sits below the toolbox (protocol cannot ask a handler) and
            // sees calls only by name: its list of reporting and talking tools is checked
            // against the handlers by `spend`'s own test instead.
            || rel == "protocol/spend.rs"
    };
    let files = rust_files(src);
    let test_only = declared_for_tests(&files);
    let mut found = Vec::new();
    for file in files {
        let Ok(rel) = file.strip_prefix(src) else {
            continue;
        };
        let rel = rel.to_string_lossy().replace('\\', "/");
        let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        if allowed(&rel) || stem == "tests" || stem.ends_with("_tests") || test_only.contains(&file)
        {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for (n, line) in code_outside_tests(&text) {
            for name in &names {
                if line.contains(&format!("\"{name}\"")) {
                    found.push(format!("src/{rel}:{n}: {name}"));
                }
            }
        }
    }
    found
}

#[test]
fn no_tool_name_literal_outside_the_tools() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let names = tool_names(&src);
    for expected in [
        "read_file",
        "run_tests",
        "spawn_agent",
        "speak_to_agent",
        "use_skill",
        "apply_patch",
        "get_tasks",
    ] {
        assert!(names.contains(expected), "{expected} not found: {names:?}");
    }
    let found = literals_outside_tools(&src);
    assert!(
        found.is_empty(),
        "{} tool-name literals outside src/tools (ask the handler's facts instead):\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn the_check_sees_a_literal_and_skips_test_code() {
    let text = "fn a() { f(\"read_file\") }\n#[cfg(test)]\nmod tests {\n  fn b() { g(\"read_file\") }\n}\n// \"run_tests\"\nfn c() {}\n";
    let code: Vec<&str> = code_outside_tests(text)
        .into_iter()
        .map(|(_, l)| l)
        .collect();
    assert_eq!(code, ["fn a() { f(\"read_file\") }", "fn c() {}"]);
}
