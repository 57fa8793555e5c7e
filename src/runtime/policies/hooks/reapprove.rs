//! A workspace hook whose approval no longer holds (its config entry, or a file its
//! command runs, changed since the user approved it: an agent may have edited it, as its
//! sandbox lets it) is put to the user again where someone can answer, through the
//! approval gate, showing the files it runs as they are now. A yes is kept as the user's
//! approval of it (as `squad hooks trust` would); a no holds for the session. Where nobody
//! can answer (`exec`), it is not run and the warning says how to approve it.

use super::service::{Caller, Hooks};
use crate::hooks::listing::approved;
use crate::hooks::{HookEvent, HookSpec, approval_key, pinned_files};
use crate::protocol::{AgentStatus, ApprovalAction, ApprovalPolicy};
use crate::runtime::approval::{ApprovalRequest, HookApproval};

/// The most bytes of a hook's file shown in the question.
const PREVIEW_BYTES: usize = 4000;

impl Hooks {
    /// Whether `hook` may run now: the user's own always; a workspace's while its approval
    /// holds, or once the user approves it again.
    pub(super) async fn may_run(&self, cx: &Caller<'_>, event: HookEvent, hook: &HookSpec) -> bool {
        if !hook.source.workspace {
            return true;
        }
        let Some(trust) = &self.trust else {
            return false;
        };
        if approved(hook, trust, &self.project) {
            return true;
        }
        // At the session's end the front end may be gone: nobody to answer.
        if !self.gate.can_ask() || event == HookEvent::SessionEnd {
            return false;
        }
        // One question at a time, and one per hook as it is now.
        let mut answered = self.answered.lock().await;
        let key = approval_key(&hook.source.digest, &hook.command, &self.project);
        if let Some(yes) = answered.get(&key) {
            return *yes;
        }
        let action = ApprovalAction::Hook {
            command: hook.command.clone(),
            source: hook.source.file.display().to_string(),
            files: self.previews(&hook.command),
        };
        let req = ApprovalRequest {
            agent_id: cx.agent,
            role: &cx.role,
            // The user's rights are the user's call, whatever the session's policy.
            policy: ApprovalPolicy::Ask,
            tool: "hook",
            action: &action,
            hook: Some(HookApproval::Ask),
        };
        let before = cx.team.status(cx.agent);
        cx.team.set_status(cx.agent, AgentStatus::Waiting, None);
        let said_yes = self
            .gate
            .check(req, cx.team.events(), cx.cancel)
            .await
            .is_ok();
        if let Some(status) = before {
            cx.team.set_status(cx.agent, status, None);
        }
        // What was shown is what is approved: a file changed while the user read it is not.
        let yes = said_yes
            && approval_key(&hook.source.digest, &hook.command, &self.project) == key
            && trust.trust(&key, &hook.source.file).is_ok();
        answered.insert(key, yes);
        yes
    }

    /// The workspace files `command` runs, each with its text now (clipped).
    fn previews(&self, command: &str) -> Vec<(String, String)> {
        pinned_files(command, &self.project)
            .into_iter()
            .map(|path| {
                let rel = path
                    .strip_prefix(&self.project)
                    .unwrap_or(&path)
                    .display()
                    .to_string();
                let text = match std::fs::read(&path) {
                    Ok(bytes) => crate::text::clip(&String::from_utf8_lossy(&bytes), PREVIEW_BYTES),
                    Err(_) => "(missing)".to_string(),
                };
                (rel, text)
            })
            .collect()
    }
}
