//! `.ci/house-rules` checked on small trees made to break its rules on events and docs,
//! so a rule that stopped finding what it names would fail here, not pass CI in silence. Needs `python3`, as CI
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
/// compile until each front end, the replay and the metrics say what it means; and its
/// docs name files that are there.
#[test]
fn the_crate_has_no_catch_all_arm_over_events_and_its_docs_name_real_files() {
    let Some((_, out)) = house_rules(Path::new(env!("CARGO_MANIFEST_DIR"))) else {
        return;
    };
    assert!(!out.contains("catch-all arm over events:"), "{out}");
    assert!(out.contains("0 catch-all arm(s) over events"), "{out}");
    assert!(out.contains("0 fold(s) not exhaustive"), "{out}");
    assert!(!out.contains("doc names what is not there:"), "{out}");
    assert!(out.contains("0 doc path(s) not there"), "{out}");
    assert!(out.contains("0 layer point name(s) not true"), "{out}");
}

const LIB: (&str, &str) = ("src/lib.rs", "pub mod run;\npub mod tools;\n");
const RUN: (&str, &str) = ("src/run/mod.rs", "pub mod turn;\n");
const TURN: (&str, &str) = ("src/run/turn.rs", "pub fn turn() {}\n");
const TOOLS: (&str, &str) = ("src/tools.rs", "pub fn tools() {}\n");

#[test]
fn a_doc_naming_a_missing_source_path_fails_and_one_naming_real_ones_passes() {
    let readme = "The turn is `src/run/turn.rs`; tools in src/tools.rs, tests in `tests/`.\n";
    let doc = "See `run/turn.rs` and `turn.rs`.\n";
    let good = tree(&[
        LIB,
        RUN,
        TURN,
        TOOLS,
        ("tests/a.rs", ""),
        ("README.md", readme),
        ("docs/a.md", doc),
    ]);
    let Some((passed, out)) = house_rules(good.path()) else {
        return;
    };
    assert!(passed, "{out}");
    assert!(out.contains("0 doc path(s) not there"), "{out}");

    // The turn moved; both docs still name it where it was.
    let bad = tree(&[
        LIB,
        ("src/run/mod.rs", "pub mod loops;\n"),
        ("src/run/loops.rs", ""),
        TOOLS,
        ("tests/a.rs", ""),
        ("README.md", readme),
        ("docs/a.md", doc),
    ]);
    let (passed, out) = house_rules(bad.path()).unwrap();
    assert!(!passed, "{out}");
    for line in [
        "doc names what is not there: README.md:1: `src/run/turn.rs` does not exist",
        "doc names what is not there: docs/a.md:1: `run/turn.rs` is not a file of the crate",
        "doc names what is not there: docs/a.md:1: `turn.rs` is no file under src/",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }
    assert!(out.contains("3 doc path(s) not there"), "{out}");
}

#[test]
fn a_table_of_a_folder_has_one_true_row_per_file_and_a_layout_names_every_folder() {
    let doc = "<!-- paths under src/run -->\n| file | owns |\n|---|---|\n| `turn.rs` | the turn (`turn/helper.rs`) |\n| `turn.rs` | again |\n| `gone.rs` | moved away |\n\n<!-- layout of src/ -->\n```\nsrc/run/   the runtime\n```\n";
    let dir = tree(&[
        LIB,
        ("src/run/mod.rs", "pub mod turn;\npub mod calls;\n"),
        TURN,
        ("src/run/calls.rs", ""),
        ("src/run/turn/helper.rs", ""),
        ("src/util/mod.rs", ""),
        ("docs/architecture.md", doc),
    ]);
    let Some((passed, out)) = house_rules(dir.path()) else {
        return;
    };
    assert!(!passed, "{out}");
    for line in [
        "docs/architecture.md:5: `turn.rs` has a row already (line 4)",
        "docs/architecture.md:6: `gone.rs` is not in src/run/",
        "docs/architecture.md:4: the table of src/run/ has no row for `calls.rs`",
        "docs/architecture.md:9: the layout leaves out `src/util/`",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }
    // The row's own folder holds `turn/helper.rs`; `mod.rs` needs no row.
    assert!(out.contains("4 doc path(s) not there"), "{out}");
}

#[test]
fn an_example_and_a_placeholder_are_not_checked() {
    let doc = "A new policy is a folder `src/run/policies/NAME/`.\n\n<!-- example -->\n```\nsrc/sum.rs:3  high  off by one\n```\n\nFiles changed: `src/main.rs` <!-- example -->\nbut `src/nowhere.rs` is checked.\n";
    let dir = tree(&[LIB, RUN, TURN, TOOLS, ("docs/usage.md", doc)]);
    let Some((passed, out)) = house_rules(dir.path()) else {
        return;
    };
    assert!(!passed, "{out}");
    assert!(
        out.contains("docs/usage.md:9: `src/nowhere.rs` does not exist"),
        "{out}"
    );
    assert!(out.contains("1 doc path(s) not there"), "{out}");
}

#[test]
fn a_catch_all_in_a_tuple_over_events_fails_and_a_wildcard_beside_a_kind_passes() {
    // `(_, 2)` and `_` catch every kind; the `_` beside a named kind, and a guarded arm,
    // do not.
    let fold = r#"pub fn ended(k: &EventKind, n: u8) -> u8 {
    match (k, n) {
        (EventKind::Started, _) => 1,
        (EventKind::Said { .. }, m) if m > 2 => 2,
        (_, 2) => 3,
        _ => 0,
    }
}"#;
    let dir = tree(&[("src/lib.rs", &lib_with(fold))]);
    let Some((passed, out)) = house_rules(dir.path()) else {
        return;
    };
    assert!(!passed, "{out}");
    assert!(out.contains("src/lib.rs:7: `(_, 2) =>`"), "{out}");
    assert!(out.contains("src/lib.rs:8: `_ =>`"), "{out}");
    assert!(out.contains("2 catch-all arm(s) over events"), "{out}");
}

/// The five folds, each a match naming every kind of a three-kind `EventKind`.
fn folds(except: &str) -> Vec<(&'static str, String)> {
    let full = "use crate::protocol::event::EventKind as K;\npub fn fold(k: &K) -> u8 {\n    match k {\n        K::Started => 1,\n        K::Said { .. } | K::Idle => 0,\n    }\n}\n";
    [
        "src/tui/state/fold.rs",
        "src/exec/progress.rs",
        "src/session/replay.rs",
        "src/acp/updates/fold.rs",
        "src/protocol/metrics.rs",
    ]
    .into_iter()
    .filter(|p| *p != except)
    .map(|p| (p, full.to_string()))
    .collect()
}

#[test]
fn each_fold_keeps_a_match_that_names_every_kind() {
    let events = (
        "src/protocol/event.rs",
        "#[derive(Debug)]\npub enum EventKind {\n    /// begun\n    Started,\n    #[serde(rename = \"said\")]\n    Said { text: String },\n    Idle,\n}\n".to_string(),
    );
    let write = |files: Vec<(&str, String)>| {
        let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
        tree(&files)
    };
    let mut good = folds("");
    good.push(events.clone());
    let dir = write(good);
    let Some((passed, out)) = house_rules(dir.path()) else {
        return;
    };
    assert!(passed, "{out}");
    assert!(out.contains("0 fold(s) not exhaustive"), "{out}");

    // exec's progress turned into a selector, the replay moved away, ACP's match leaves
    // `Idle` to an `if let`; the metrics keep a full match after an `if let`.
    let mut bad = folds("src/session/replay.rs");
    bad.retain(|(p, _)| {
        ![
            "src/exec/progress.rs",
            "src/protocol/metrics.rs",
            "src/acp/updates/fold.rs",
        ]
        .contains(p)
    });
    bad.push(events);
    bad.push((
        "src/exec/progress.rs",
        "use crate::protocol::event::EventKind;\npub fn show(k: &EventKind) -> bool {\n    matches!(k, EventKind::Said { .. })\n}\n".into(),
    ));
    bad.push((
        "src/protocol/metrics.rs",
        "use super::event::EventKind as K;\npub fn count(k: &K) -> u8 {\n    if let K::Idle = k { return 0; }\n    match k {\n        K::Started => 1,\n        K::Said { .. } => 2,\n        K::Idle => 0,\n    }\n}\npub fn said(k: &K) -> u8 {\n    match k {\n        K::Said { .. } => 1,\n        K::Started => 0,\n        K::Idle => 0,\n    }\n}\n".into(),
    ));
    bad.push((
        "src/acp/updates/fold.rs",
        "use crate::protocol::event::EventKind as K;\npub fn fold(k: &K) -> u8 {\n    if let K::Idle = k {\n        return 0;\n    }\n    match k {\n        K::Started => 1,\n        K::Said { .. } => 2,\n    }\n}\n".into(),
    ));
    bad.push((
        "src/session/replay2.rs",
        "pub fn fold(k: &crate::protocol::event::EventKind) -> u8 {\n    match k {\n        crate::protocol::event::EventKind::Idle => 0,\n    }\n}\n".into(),
    ));
    let dir = write(bad);
    let (passed, out) = house_rules(dir.path()).unwrap();
    assert!(!passed, "{out}");
    for line in [
        "fold over events not exhaustive: src/exec/progress.rs has no match over events",
        "fold over events not exhaustive: src/session/replay.rs is gone",
        "fold over events not exhaustive: src/acp/updates/fold.rs has no match naming every kind (missing: Idle)",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }
    // The metrics still have a match naming all three: an `if let` before it is fine.
    assert!(!out.contains("src/protocol/metrics.rs"), "{out}");
    assert!(out.contains("3 fold(s) not exhaustive"), "{out}");
}

/// A runtime with a three-point layer trait and one policy whose layer overrides one.
const CX: (&str, &str) = (
    "src/runtime/cx.rs",
    "pub trait Layer {\n    fn before_task(&self) {\n        fn helper() {}\n    }\n    async fn tool_call(&self) {}\n    fn hear(&self) {}\n}\n",
);
const PAUSE: (&str, &str) = (
    "src/runtime/policies/pause/mod.rs",
    "pub struct Gate;\nimpl super::super::cx::Layer for Gate {\n    async fn tool_call(&self) {}\n}\n",
);

#[test]
fn docs_name_the_layer_points_there_are_and_a_policy_row_its_own() {
    let good_doc = "The `Layer` trait has three points.\n\n| point | may |\n|---|---|\n| `before_task` | add a note |\n| `tool_call` | refuse |\n| `hear` | listen |\n\n<!-- paths under src/runtime/policies -->\n| order | policy | points |\n|---|---|---|\n| 1 | `pause/`: the gate | tool_call |\n\n<!-- every layer point -->\n```\nmessage ─► before_task ─► tool_call ─► hear(TurnStart)\n```\n";
    let dir = tree(&[CX, PAUSE, ("docs/architecture.md", good_doc)]);
    let Some((passed, out)) = house_rules(dir.path()) else {
        return;
    };
    assert!(passed, "{out}");
    assert!(out.contains("0 layer point name(s) not true"), "{out}");

    // The trait's `hear` became `settle`'s old name in one place, the docs kept the old
    // names: a point that is gone, a row missing, the count, the policy's row, the block.
    let stale = good_doc
        .replace("| `hear` | listen |", "| `settle` | listen |")
        .replace("three points", "four points")
        .replace("| tool_call |", "| tool_call, before_tool |")
        .replace("─► hear(TurnStart)", "─► settle");
    let dir = tree(&[CX, PAUSE, ("docs/architecture.md", &stale)]);
    let (passed, out) = house_rules(dir.path()).unwrap();
    assert!(!passed, "{out}");
    for line in [
        "docs/architecture.md:1: `four points`: the Layer trait has 3",
        "docs/architecture.md:7: `settle` is no point of the Layer trait",
        "docs/architecture.md:3: the table of points has no row for `hear`",
        "docs/architecture.md:12: `before_tool` is no point of the Layer trait",
        "docs/architecture.md:12: `pause/`'s layer has tool_call, the row names tool_call, before_tool",
        "docs/architecture.md:14: the block after it names no `hear`",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }
    assert!(out.contains("6 layer point name(s) not true"), "{out}");
}

#[test]
fn a_row_of_a_folder_table_names_what_its_file_imports_from_the_folder() {
    // turn.rs imports its sibling calls.rs; calls.rs imports nothing of run/.
    let files = |doc: &str| {
        tree(&[
            LIB,
            (
                "src/run/mod.rs",
                "pub mod turn;\npub mod calls;\npub mod start;\n",
            ),
            (
                "src/run/turn.rs",
                "use super::calls::call;\npub fn turn() { call(); }\n",
            ),
            ("src/run/calls.rs", "pub fn call() {}\n"),
            (
                "src/run/start.rs",
                "pub fn start() { super::turn::turn(); }\n",
            ),
            TOOLS,
            ("docs/architecture.md", doc),
        ])
    };
    let good = "<!-- paths under src/run -->\n| file | owns | imports |\n|---|---|---|\n| `turn.rs` | the turn | calls (`call`) |\n| `calls.rs` | the calls | nothing |\n| `start.rs` | the start | everything below |\n";
    let dir = files(good);
    let Some((passed, out)) = house_rules(dir.path()) else {
        return;
    };
    assert!(passed, "{out}");

    let stale = good
        .replace("| calls (`call`) |", "| nothing |")
        .replace("| the calls | nothing |", "| the calls | turn |");
    let dir = files(&stale);
    let (passed, out) = house_rules(dir.path()).unwrap();
    assert!(!passed, "{out}");
    for line in [
        "docs/architecture.md:4: `turn.rs` imports `calls`, its row does not say so",
        "docs/architecture.md:5: `calls.rs` imports no `turn`, its row says it does",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }
    assert!(out.contains("2 doc path(s) not there"), "{out}");
}
