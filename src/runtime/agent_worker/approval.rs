//! An agent worker's permission requests (`session/request_permission`) through squad's
//! approval gate, as the worker's own: the request carries the worker's id and role, so
//! the user sees and answers it like any worker's approval (`exec` applies its approval
//! policy). What it asks to do is shown as squad shows its own calls: an edit as its diff,
//! a command as the command line, anything else by the agent's title and input.

use super::conversation::{Known, KnownCall};
use crate::acp_client::{Decision, PermissionAsk, Permissions, ToolDetail};
use crate::protocol::ApprovalAction;
use crate::runtime::approval::ApprovalRequest;
use crate::runtime::cx::AgentCx;
use crate::runtime::policies::ask::approve;
use serde_json::Value;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Who is asked: the worker's current turn (its token, so a cancelled turn asks no one).
#[derive(Clone, Default)]
pub(super) struct Asking {
    turn: Arc<Mutex<Option<AgentCx>>>,
    known: Known,
}

impl Asking {
    pub fn new(known: Known) -> Self {
        Self {
            turn: Arc::default(),
            known,
        }
    }

    /// The turn from now on.
    pub fn set(&self, cx: &AgentCx) {
        *crate::sync::lock(&self.turn) = Some(cx.clone());
    }

    /// The agent's permission requests, answered through the gate; `root`: its folder.
    pub fn permissions(&self, root: &Path) -> Permissions {
        let (asking, root) = (self.clone(), root.to_path_buf());
        Arc::new(move |ask| {
            let (asking, root) = (asking.clone(), root.clone());
            Box::pin(async move { asking.decide(ask, &root).await })
        })
    }

    async fn decide(&self, ask: PermissionAsk, root: &Path) -> Decision {
        let Some(cx) = crate::sync::lock(&self.turn).clone() else {
            return Decision::Cancel;
        };
        if cx.cancel().is_cancelled() {
            return Decision::Cancel;
        }
        let (team, id) = (cx.team(), cx.id());
        let Some(card) = team.card(id) else {
            return Decision::Cancel;
        };
        let known = crate::sync::lock(&self.known)
            .get(&ask.tool_call_id)
            .cloned();
        let (tool, action) = action_of(&ask, known, root);
        let req = ApprovalRequest {
            agent_id: id,
            role: &card.role,
            policy: card.policy,
            tool: &tool,
            action: &action,
            hook: None,
        };
        match approve(&cx, req).await {
            Ok(()) => Decision::AllowOnce,
            Err(_) if cx.cancel().is_cancelled() => Decision::Cancel,
            Err(_) => Decision::RejectOnce,
        }
    }
}

/// The tool name and action the user is shown for `ask` (with what the agent said of the
/// call before), paths relative to the worker's folder.
pub(super) fn action_of(
    ask: &PermissionAsk,
    known: Option<KnownCall>,
    root: &Path,
) -> (String, ApprovalAction) {
    let known = known.unwrap_or_default();
    let mut detail: ToolDetail = known.detail;
    detail.merge(ask.detail.clone());
    let kind = (ask.kind.clone())
        .filter(|k| !k.is_empty())
        .or(Some(known.kind).filter(|k| !k.is_empty()))
        .unwrap_or_else(|| "other".into());
    let title = (ask.title.clone())
        .or(Some(known.title).filter(|t| !t.is_empty()))
        .unwrap_or_else(|| ask.tool_call_id.clone());
    let rel = |p: &Path| {
        let shown = p.strip_prefix(root).unwrap_or(p);
        shown.to_string_lossy().into_owned()
    };
    let tool = format!("acp {kind}");
    if !detail.diffs.is_empty() {
        let paths: Vec<String> = detail.diffs.iter().map(|d| rel(&d.path)).collect();
        let diff: String = (detail.diffs.iter().zip(&paths))
            .map(|(d, p)| unified_diff(p, d.old_text.as_deref(), &d.new_text))
            .collect();
        let action = match paths.as_slice() {
            [one] => ApprovalAction::FileChange {
                path: one.clone(),
                diff,
            },
            _ => ApprovalAction::Patch { paths, diff },
        };
        return (tool, action);
    }
    let input = detail.raw_input.as_ref();
    if kind == "execute" {
        let command = input.and_then(command_of).unwrap_or(title);
        return (tool, ApprovalAction::Command { command });
    }
    let arguments = match (input, &detail.text) {
        (Some(v), _) => serde_json::to_string_pretty(v).unwrap_or_default(),
        (None, Some(text)) => text.clone(),
        (None, None) => (detail.locations.iter())
            .map(|p| rel(p))
            .collect::<Vec<_>>()
            .join("\n"),
    };
    let action = ApprovalAction::McpTool {
        server: "acp".into(),
        tool: title,
        arguments,
    };
    (
        format!("{tool}: {}", crate::text::clip(&tool_key(&action), 60)),
        action,
    )
}

/// A unified diff of an edit, a new file against `/dev/null` (as squad's own edits show).
fn unified_diff(rel: &str, old: Option<&str>, new: &str) -> String {
    let old_name = match old {
        Some(_) => format!("a/{rel}"),
        None => "/dev/null".to_string(),
    };
    similar::TextDiff::from_lines(old.unwrap_or(""), new)
        .unified_diff()
        .context_radius(3)
        .header(&old_name, &format!("b/{rel}"))
        .to_string()
}

/// The command a call's input names (`command` as a string or a list of words).
fn command_of(input: &Value) -> Option<String> {
    match input.get("command")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(words) => Some(
            words
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    }
}

/// What "approve for this session" covers for an action without a path: its title.
fn tool_key(action: &ApprovalAction) -> String {
    match action {
        ApprovalAction::McpTool { tool, .. } => tool.clone(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acp_client::FileDiff;
    use serde_json::json;

    fn ask(kind: &str, detail: ToolDetail) -> PermissionAsk {
        PermissionAsk {
            tool_call_id: "c1".into(),
            title: Some("Do it".into()),
            kind: Some(kind.into()),
            detail,
            offered: vec!["allow_once".into(), "reject_once".into()],
        }
    }

    #[test]
    fn an_edit_is_its_diff_a_command_its_line_and_the_rest_its_title_and_input() {
        let root = Path::new("/w/tree");
        let known = KnownCall {
            title: "write b.txt".into(),
            kind: "edit".into(),
            detail: ToolDetail {
                diffs: vec![FileDiff {
                    path: root.join("b.txt"),
                    old_text: Some("old\n".into()),
                    new_text: "new\n".into(),
                }],
                ..ToolDetail::default()
            },
        };
        let (tool, action) = action_of(&ask("edit", ToolDetail::default()), Some(known), root);
        assert_eq!(tool, "acp edit");
        let ApprovalAction::FileChange { path, diff } = action else {
            panic!("{action:?}")
        };
        assert_eq!(path, "b.txt");
        assert!(diff.contains("-old\n+new\n"), "{diff}");

        let run = ToolDetail {
            raw_input: Some(json!({"command": ["cargo", "test"]})),
            ..ToolDetail::default()
        };
        let (tool, action) = action_of(&ask("execute", run), None, root);
        assert_eq!(tool, "acp execute");
        assert_eq!(
            action,
            ApprovalAction::Command {
                command: "cargo test".into()
            }
        );

        let fetch = ToolDetail {
            raw_input: Some(json!({"url": "https://example.org"})),
            ..ToolDetail::default()
        };
        let (tool, action) = action_of(&ask("fetch", fetch), None, root);
        assert_eq!(tool, "acp fetch: Do it");
        let ApprovalAction::McpTool {
            tool, arguments, ..
        } = action
        else {
            panic!("{action:?}")
        };
        assert_eq!(tool, "Do it");
        assert!(arguments.contains("example.org"), "{arguments}");
    }
}
