use super::*;
use crate::protocol::Artifact;
use crate::verify::snapshot::Changes;

fn result(status: ResultStatus, artifacts: &[(&str, ChangeType)], issues: &[&str]) -> AgentResult {
    AgentResult {
        completed_at: None,
        status,
        summary: "did it".into(),
        artifacts: artifacts
            .iter()
            .map(|(p, c)| Artifact {
                file_path: p.to_string(),
                description: "d".into(),
                change_type: *c,
            })
            .collect(),
        known_issues: issues.iter().map(|s| s.to_string()).collect(),
        verification: None,
        merge: None,
    }
}

fn rules_of(findings: &[Finding]) -> Vec<(&str, Severity)> {
    findings
        .iter()
        .map(|f| (f.rule.as_str(), f.severity))
        .collect()
}

fn set(paths: &[&str]) -> BTreeSet<String> {
    paths.iter().map(|s| s.to_string()).collect()
}

fn changes(created: &[&str], modified: &[&str], deleted: &[&str]) -> Changes {
    Changes {
        created: set(created),
        modified: set(modified),
        deleted: set(deleted),
    }
}

#[test]
fn artifacts_are_checked_against_the_workers_own_change() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("old.md"), "changed text").unwrap();
    std::fs::write(root.join("same.md"), "same").unwrap();
    std::fs::write(root.join("doomed.md"), "x").unwrap();
    std::fs::write(root.join("new.md"), "new").unwrap();
    let own = changes(&["new.md"], &["old.md"], &["gone.md"]);
    let ev = Evidence {
        root,
        changes: &own,
        earlier: &Earlier::new(),
    };
    use ChangeType::*;
    // Every claim true: no findings.
    let good = result(
        ResultStatus::Success,
        &[
            ("./new.md", Created),
            ("old.md", Modified),
            ("gone.md", Deleted),
            ("same.md", Referenced),
            (".", Referenced),
        ],
        &[],
    );
    assert_eq!(check_result(&good, &ev), vec![]);
    let root_changed = result(ResultStatus::Success, &[("./", Modified)], &[]);
    let findings = check_result(&root_changed, &ev);
    assert_eq!(rules_of(&findings)[0], ("artifact_path", Severity::Error));
    assert!(findings[0].message.contains("the workspace itself"));
    // Every claim false.
    let bad = result(
        ResultStatus::Success,
        &[
            ("notes.md", Created),
            ("same.md", Created),
            ("same.md", Modified),
            ("doomed.md", Deleted),
            ("missing.md", Referenced),
            ("../etc/passwd", Referenced),
        ],
        &["flaky test"],
    );
    let findings = check_result(&bad, &ev);
    assert_eq!(
        rules_of(&findings),
        vec![
            ("artifact_created", Severity::Error),
            ("artifact_created", Severity::Error),
            ("artifact_modified", Severity::Error),
            ("artifact_deleted", Severity::Error),
            ("artifact_referenced", Severity::Error),
            ("artifact_path", Severity::Error),
            ("unlisted_changes", Severity::Warning),
            ("success_with_known_issues", Severity::Warning),
        ]
    );
    assert!(
        findings[0].message.contains("notes.md") && findings[0].message.contains("does not exist")
    );
    assert!(findings[2].message.contains("unchanged since you started"));
    assert!(
        findings[6].message.contains("new.md")
            && findings[6].message.contains("old.md")
            && findings[6].message.contains("gone.md")
    );
}

/// The disk alone proves nothing: a file that differs from the start only because the
/// worker's view moved (workspace to worktree) is not its change; a deletion of a file that
/// never was is not one either; a created file is a true `modified` too.
#[test]
fn only_the_change_counts_not_the_state_of_the_disk() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("hello.txt"), "edited").unwrap();
    std::fs::write(root.join("other.txt"), "untouched").unwrap();
    std::fs::write(root.join("made.txt"), "new").unwrap();
    let own = changes(&["made.txt"], &["hello.txt"], &[]);
    let ev = Evidence {
        root,
        changes: &own,
        earlier: &Earlier::new(),
    };
    use ChangeType::*;
    let claims = result(
        ResultStatus::Success,
        &[
            ("hello.txt", Modified),
            ("other.txt", Modified),
            ("made.txt", Modified),
            ("never.txt", Deleted),
            ("hello.txt", Created),
        ],
        &[],
    );
    let findings = check_result(&claims, &ev);
    assert_eq!(
        rules_of(&findings),
        vec![
            ("artifact_modified", Severity::Error),
            ("artifact_deleted", Severity::Error),
            ("artifact_created", Severity::Error),
        ]
    );
    assert!(findings[0].message.contains("other.txt"), "{findings:?}");
    assert!(findings[1].message.contains("not there when you started"));
    assert!(findings[2].message.contains("existed before you started"));
    // Nothing changed at all: every claimed change fails, each naming its file.
    let none = Changes::default();
    let ev = Evidence {
        changes: &none,
        ..ev
    };
    let claims = result(ResultStatus::Success, &[("hello.txt", Modified)], &[]);
    let findings = check_result(&claims, &ev);
    assert_eq!(
        rules_of(&findings),
        vec![("artifact_modified", Severity::Error)]
    );
    assert!(findings[0].message.contains("hello.txt"));
}

#[test]
fn paths_are_normalised_and_escapes_refused() {
    let root = Path::new("/ws");
    assert_eq!(inside(root, "./a/../b.md").as_deref(), Some("b.md"));
    assert_eq!(inside(root, "/ws/src/x.rs").as_deref(), Some("src/x.rs"));
    assert_eq!(inside(root, "../x"), None);
    assert_eq!(inside(root, "/etc/passwd"), None);
    assert_eq!(inside(root, ".").as_deref(), Some(""));
    assert_eq!(inside(root, "/ws").as_deref(), Some(""));
}

#[test]
fn a_follow_up_may_report_what_the_worker_changed_earlier_while_it_is_as_it_left_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // Its first task wrote notes.md; that result was delivered.
    std::fs::write(root.join("notes.md"), "hi\n").unwrap();
    std::fs::write(root.join("other.md"), "x\n").unwrap();
    let earlier: Earlier = [("notes.md".to_string(), content_mark(&root.join("notes.md")))]
        .into_iter()
        .collect();
    // A follow-up that changed nothing reports it again.
    let none = Changes::default();
    let ev = Evidence {
        root,
        changes: &none,
        earlier: &earlier,
    };
    use ChangeType::*;
    let again = result(
        ResultStatus::Success,
        &[("notes.md", Created), ("notes.md", Modified)],
        &[],
    );
    assert_eq!(check_result(&again, &ev), vec![]);
    // A file it never changed is still a false claim.
    let other = result(ResultStatus::Success, &[("other.md", Modified)], &[]);
    assert_eq!(
        rules_of(&check_result(&other, &ev)),
        vec![("artifact_modified", Severity::Error)]
    );
    // Rewritten with the same content (a worktree moved onto the workspace): still its.
    std::fs::write(root.join("notes.md"), "hi\n").unwrap();
    assert_eq!(check_result(&again, &ev), vec![]);
    // Once somebody else changed notes.md, it is no longer as the worker left it.
    std::fs::write(root.join("notes.md"), "changed by another hand\n").unwrap();
    assert_eq!(
        rules_of(&check_result(&again, &ev)),
        vec![
            ("artifact_created", Severity::Error),
            ("artifact_modified", Severity::Error)
        ]
    );
}
