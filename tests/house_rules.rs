//! `.ci/house-rules` checked on small trees made for each rule, so a rule that stopped
//! finding what it names would fail here, not pass CI in silence. Needs `python3`, as CI
//! does (`.ci/run` runs the rules first); without it each test says so and skips.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

/// Runs the rules on `root`: (passed, what they printed). `None` without python3.
fn house_rules(root: &Path) -> Option<(bool, String)> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/house-rules");
    let out = match Command::new("python3")
        .arg(script)
        .arg("--root")
        .arg(root)
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            eprintln!("skipped: python3 could not be run ({e}); CI runs the house rules with it");
            return None;
        }
    };
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    Some((out.status.success(), text))
}

/// A tree with `files` (path, text) written under a temporary root.
fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

const EVENTS: &str = "pub enum EventKind { Started, Said { text: String }, Idle }\n";

fn lib_with(fold: &str) -> String {
    format!("{EVENTS}\n{fold}\n")
}

#[test]
fn a_catch_all_arm_over_events_fails_and_names_where() {
    let fold = "pub fn fold(k: &EventKind) -> u8 {\n    match k {\n        EventKind::Started => 1,\n        _ => 0,\n    }\n}";
    let dir = tree(&[("src/lib.rs", &lib_with(fold))]);
    let Some((passed, out)) = house_rules(dir.path()) else {
        return;
    };
    assert!(!passed, "{out}");
    assert!(
        out.contains("catch-all arm over events: src/lib.rs:6: `_ =>`"),
        "{out}"
    );
    assert!(out.contains("house rules: FAILED"), "{out}");
}

#[test]
fn a_binding_arm_through_an_alias_is_a_catch_all_too() {
    let fold = "use EventKind as K;\npub fn fold(k: &EventKind) -> u8 {\n    match k {\n        K::Said { text } => text.len() as u8,\n        other => { let _ = other; 0 }\n    }\n}";
    let dir = tree(&[("src/lib.rs", &lib_with(fold))]);
    let Some((passed, out)) = house_rules(dir.path()) else {
        return;
    };
    assert!(!passed, "{out}");
    assert!(out.contains("src/lib.rs:7: `other =>`"), "{out}");
}

#[test]
fn named_kinds_predicates_tests_and_other_matches_pass() {
    // Every kind named (the ignored ones grouped), a guarded arm before its full one, a
    // predicate over one kind, a catch-all over something else, and one in test code.
    let fold = r#"pub fn fold(k: &EventKind, n: u8) -> u8 {
    match k {
        EventKind::Started if n > 1 => 2,
        EventKind::Started => 1,
        EventKind::Said { text } => match text.as_str() {
            "" => 0,
            _ => 3,
        },
        EventKind::Idle => 0,
    }
}
pub fn said(k: &EventKind) -> bool {
    if let EventKind::Said { .. } = k { return true; }
    matches!(k, EventKind::Idle)
}
pub fn small(n: u8) -> u8 {
    match n { 0 => 1, _ => 2 }
}
#[cfg(test)]
mod tests {
    fn pick(k: &super::EventKind) -> u8 {
        match k { super::EventKind::Idle => 1, _ => 0 }
    }
}"#;
    let dir = tree(&[("src/lib.rs", &lib_with(fold))]);
    let Some((passed, out)) = house_rules(dir.path()) else {
        return;
    };
    assert!(passed, "{out}");
    assert!(out.contains("house rules: passed"), "{out}");
    assert!(out.contains("0 catch-all arm(s) over events"), "{out}");
    // A passing run says so, and no rule reads as failing.
    assert!(!out.contains("fails"), "{out}");
}

/// The crate itself: every fold over events names each kind, so adding one does not
/// compile until each front end, the replay and the metrics say what it means.
#[test]
fn the_crate_has_no_catch_all_arm_over_events() {
    let Some((_, out)) = house_rules(Path::new(env!("CARGO_MANIFEST_DIR"))) else {
        return;
    };
    assert!(!out.contains("catch-all arm over events:"), "{out}");
    assert!(out.contains("0 catch-all arm(s) over events"), "{out}");
}
