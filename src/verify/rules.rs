//! The built-in rules that need no command: what the result claims about files against
//! what is on disk, and the result's own consistency.

use super::snapshot::{Snapshot, Stamp, relative};
use crate::protocol::{AgentResult, ChangeType, Finding, ResultStatus, Severity};
use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

/// What a result is checked against.
pub struct Evidence<'a> {
    pub root: &'a Path,
    /// The workspace when the worker started its task.
    pub start: &'a Snapshot,
    /// Files changed since then by this worker (on disk, and touched by its own calls).
    pub own_changes: &'a BTreeSet<String>,
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

/// Findings of the artifact, unlisted-change and known-issue rules.
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
        let now = Stamp::of(&ev.root.join(&rel));
        let before = ev.start.get(&rel);
        // Its own change of an earlier task, still as it left it.
        let left_so = now.is_some()
            && ev
                .earlier
                .get(&rel)
                .is_some_and(|m| m.is_some() && *m == content_mark(&ev.root.join(&rel)));
        let problem = match kind {
            ChangeType::Created => match (before, now) {
                (_, None) => Some((
                    "the file does not exist",
                    format!("create {rel}, or drop it from artifacts"),
                )),
                (Some(_), Some(_)) if left_so => None,
                (Some(_), Some(_)) => Some((
                    "the file existed before you started",
                    "list it as `modified` if you changed it".into(),
                )),
                (None, Some(_)) => None,
            },
            ChangeType::Modified => match (before, now) {
                (_, None) => Some((
                    "the file does not exist",
                    format!("make your change to {rel}, or drop it from artifacts"),
                )),
                (Some(b), Some(n)) if b == n && !left_so => Some((
                    "the file is unchanged since you started",
                    format!(
                        "make the change to {rel} the task asks for, or drop it from artifacts"
                    ),
                )),
                _ => None,
            },
            ChangeType::Deleted => now.is_some().then(|| {
                (
                    "the file still exists",
                    format!("delete {rel}, or drop it from artifacts"),
                )
            }),
            ChangeType::Referenced => now.is_none().then(|| {
                (
                    "the file does not exist",
                    format!("reference an existing file instead of {rel}"),
                )
            }),
        };
        if let Some((what, fix)) = problem {
            out.push(error(
                &format!("artifact_{}", kind.as_str()),
                format!("{shown}: {what}"),
                fix,
            ));
        }
    }
    let unlisted: Vec<&String> = ev.own_changes.difference(&listed).collect();
    if !unlisted.is_empty() {
        let names = unlisted
            .iter()
            .take(10)
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let more = unlisted.len().saturating_sub(10);
        out.push(Finding {
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
        });
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
