//! The built-in rules that need no command: what the result claims about files against
//! the worker's own change (its diff against its base), and the result's own consistency.

use super::snapshot::{Changes, relative};
use crate::protocol::{AgentResult, ChangeType, Finding, ResultStatus, Severity};
use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

/// What a result is checked against.
pub struct Evidence<'a> {
    /// The worker's view: its worktree, or the workspace for a worker without one.
    pub root: &'a Path,
    /// What the worker changed since it took its task: for a worker in its own worktree,
    /// git's diff of the worktree against its base (what its commands changed included);
    /// else what its own calls that ran changed on disk since its start. A refused write
    /// is in neither.
    pub changes: &'a Changes,
    /// Files this worker changed in earlier tasks of its life (a result it already
    /// delivered), with their content as it left them (`None`: it deleted the file). A
    /// follow-up's report of such a change is true while the file is still as it left it.
    pub earlier: &'a Earlier,
}

/// Files a worker changed in the tasks it finished, by a mark of their content (not the
/// stamp: moving a worktree onto the workspace's state rewrites files it does not change).
pub type Earlier = std::collections::BTreeMap<String, Option<u64>>;

/// A mark of the file's content, `None` when there is no file.
pub fn content_mark(path: &Path) -> Option<u64> {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let bytes = std::fs::read(path).ok()?;
    let mut h = DefaultHasher::new();
    bytes.hash(&mut h);
    Some(h.finish())
}

/// Whether a result claims any change of a file (what can be checked against a diff).
pub fn claims_a_change(result: &AgentResult) -> bool {
    result
        .artifacts
        .iter()
        .any(|a| a.change_type != ChangeType::Referenced)
}

/// Findings of the artifact, unlisted-change and known-issue rules. Each claimed change is
/// looked up in the worker's own change, file by file (a rename is its two halves: the old
/// path `deleted`, the new one `created`); a change it did not list is a warning.
pub fn check_result(result: &AgentResult, ev: &Evidence<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut listed = BTreeSet::new();
    for artifact in &result.artifacts {
        let kind = artifact.change_type;
        let shown = format!("artifact {} ({})", artifact.file_path, kind.as_str());
        let Some(rel) = inside(ev.root, &artifact.file_path) else {
            out.push(error(
                "artifact_path",
                format!("{shown}: the path is outside the workspace"),
                "list files by their path inside the workspace".into(),
            ));
            continue;
        };
        if rel.is_empty() {
            // The workspace itself: it exists, so a reference stands; nothing else does.
            if kind != ChangeType::Referenced {
                out.push(error(
                    "artifact_path",
                    format!("{shown}: that is the workspace itself, not a file"),
                    "list each file you changed by its path inside the workspace".into(),
                ));
            }
            continue;
        }
        listed.insert(rel.clone());
        if let Some((what, fix)) = problem(ev, kind, &rel) {
            out.push(error(
                &format!("artifact_{}", kind.as_str()),
                format!("{shown}: {what}"),
                fix,
            ));
        }
    }
    let unlisted: Vec<String> = ev.changes.paths().difference(&listed).cloned().collect();
    if !unlisted.is_empty() {
        out.push(unlisted_warning(&unlisted));
    }
    if result.status == ResultStatus::Success && !result.known_issues.is_empty() {
        out.push(Finding {
            rule: "success_with_known_issues".into(),
            severity: Severity::Warning,
            message: format!(
                "status is success but known_issues lists {} issue(s)",
                result.known_issues.len()
            ),
            fix: "fix the known issues, or report status partial".into(),
        });
    }
    out
}

/// What is wrong with the claim that `rel` was changed as `kind` says (`None`: it is
/// true): what is in the worker's change decides, the disk only says why it is not there.
fn problem(ev: &Evidence<'_>, kind: ChangeType, rel: &str) -> Option<(&'static str, String)> {
    let c = ev.changes;
    let (created, modified, deleted) = (
        c.created.contains(rel),
        c.modified.contains(rel),
        c.deleted.contains(rel),
    );
    let path = ev.root.join(rel);
    let exists = path.is_file();
    // Its own change of an earlier task, still as it left it.
    let left = ev.earlier.get(rel);
    let left_so = left.is_some_and(|m| *m == content_mark(&path));
    match kind {
        ChangeType::Created if created || (exists && left_so) => None,
        ChangeType::Created if modified => Some((
            "the file existed before you started",
            "list it as `modified`".into(),
        )),
        ChangeType::Created if !exists => Some((
            "the file does not exist",
            format!("create {rel}, or drop it from artifacts"),
        )),
        ChangeType::Created => Some((
            "the file is not among the files you changed (it existed before you started, or git ignores it)",
            format!("list it as `modified` only if you changed it; else drop {rel} from artifacts"),
        )),
        ChangeType::Modified if created || modified || (exists && left_so) => None,
        ChangeType::Modified if !exists => Some((
            "the file does not exist",
            format!("make your change to {rel}, or drop it from artifacts"),
        )),
        ChangeType::Modified => Some((
            "the file is unchanged since you started",
            format!("make the change to {rel} the task asks for, or drop it from artifacts"),
        )),
        ChangeType::Deleted if deleted || (!exists && left_so) => None,
        ChangeType::Deleted if exists => Some((
            "the file still exists",
            format!("delete {rel}, or drop it from artifacts"),
        )),
        ChangeType::Deleted => Some((
            "the file was not there when you started, so you did not delete it",
            format!("drop {rel} from artifacts"),
        )),
        ChangeType::Referenced if exists => None,
        ChangeType::Referenced => Some((
            "the file does not exist",
            format!("reference an existing file instead of {rel}"),
        )),
    }
}

/// The warning for changes the result does not list (at most ten named).
fn unlisted_warning(unlisted: &[String]) -> Finding {
    let names = unlisted
        .iter()
        .take(10)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    let more = unlisted.len().saturating_sub(10);
    Finding {
        rule: "unlisted_changes".into(),
        severity: Severity::Warning,
        message: format!(
            "you changed files your result does not list: {names}{}",
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ),
        fix: "list every file you created, modified or deleted in artifacts".into(),
    }
}

fn error(rule: &str, message: String, fix: String) -> Finding {
    Finding {
        rule: rule.to_string(),
        severity: Severity::Error,
        message,
        fix,
    }
}

/// `path` as a workspace-relative path (`./a/../b` → `b`; absolute paths under the root
/// are accepted; the root itself is `""`), `None` when it leaves the workspace.
pub fn inside(root: &Path, path: &str) -> Option<String> {
    let p = Path::new(path.trim());
    let rel = if p.is_absolute() {
        p.strip_prefix(root).ok()?.to_path_buf()
    } else {
        p.to_path_buf()
    };
    let mut clean = PathBuf::new();
    for c in rel.components() {
        match c {
            Component::Normal(n) => clean.push(n),
            Component::CurDir => {}
            Component::ParentDir => {
                if !clean.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(relative(&clean))
}

#[cfg(test)]
mod tests;
