//! The one gate every mutating action passes. Policy and "approved for this session"
//! caching live here and nowhere else.

use super::events::EventSink;
use crate::protocol::{
    AgentId, ApprovalAction, ApprovalDecision, ApprovalPolicy, EventKind, Unanswered,
};
use crate::sync::lock;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

pub struct ApprovalGate {
    /// Whether a front end can answer; `exec` cannot, so there `ask` denies.
    can_ask: bool,
    /// (tool, key) pairs approved for the rest of the session.
    cache: Mutex<HashSet<(String, String)>>,
    pending: Mutex<HashMap<u64, oneshot::Sender<ApprovalDecision>>>,
    next_id: AtomicU64,
}

/// Why an action may not run; goes back to the model as the tool result.
#[derive(Debug, Clone, PartialEq)]
pub struct Denied(pub String);

/// Everything the gate needs to know about one request.
pub struct ApprovalRequest<'a> {
    pub agent_id: AgentId,
    pub role: &'a str,
    pub policy: ApprovalPolicy,
    pub tool: &'a str,
    pub action: &'a ApprovalAction,
    /// What a user's `pre_tool_use` hook said of this call (`permissionDecision`).
    pub hook: Option<HookApproval>,
}

/// A user's hook on the approval of one call (Claude Code's `permissionDecision`): its
/// `allow` skips squad's prompt (never the sandbox, a read-only session, nor leaving the
/// sandbox: the command runs as confined as ever); its `ask` puts the call to the user
/// whatever the policy or an earlier "approve for this session" would do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookApproval {
    Allow,
    Ask,
}

impl ApprovalGate {
    pub fn new(can_ask: bool) -> Self {
        Self {
            can_ask,
            cache: Mutex::new(HashSet::new()),
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
        }
    }

    /// Whether a front end can answer at all.
    pub fn can_ask(&self) -> bool {
        self.can_ask
    }

    /// Whether an agent under `policy` could be asked anything at all.
    pub fn may_ask(&self, policy: ApprovalPolicy) -> bool {
        policy == ApprovalPolicy::Ask && self.can_ask
    }

    /// Whether `check` would put the question to the user (so the agent waits on them).
    pub fn will_ask(&self, req: &ApprovalRequest<'_>) -> bool {
        let escalation = matches!(req.action, ApprovalAction::Escalation { .. });
        match req.hook {
            Some(HookApproval::Ask) => {
                return self.can_ask && req.policy != ApprovalPolicy::ReadOnly;
            }
            Some(HookApproval::Allow) if !escalation => return false,
            _ => {}
        }
        let asked = match req.action {
            ApprovalAction::SandboxedCommand { .. } => false,
            ApprovalAction::Escalation { .. } => req.policy != ApprovalPolicy::ReadOnly,
            _ => req.policy == ApprovalPolicy::Ask,
        };
        asked && self.can_ask && !self.is_cached(req.tool, req.action)
    }

    /// Decides, asking the user through the event stream when the policy says so.
    pub async fn check(
        &self,
        req: ApprovalRequest<'_>,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> Result<(), Denied> {
        if let Some(settled) = self.settled(&req) {
            return settled;
        }
        if let Some((denied, why)) = self.headless(&req) {
            events.emit(
                req.agent_id,
                EventKind::ApprovalUnanswered {
                    tool: req.tool.to_string(),
                    why,
                },
            );
            return Err(denied);
        }
        let decision = self.ask(&req, events, cancel).await;
        self.answered(&req, decision)
    }

    /// The decision the policy, the user's hook or an earlier "approve for this session"
    /// make without the user; `None` when it is the user's.
    fn settled(&self, req: &ApprovalRequest<'_>) -> Option<Result<(), Denied>> {
        // A spawn changes nothing on disk and the worker inherits its parent's policy, so
        // it cannot do more than its parent: only an `ask` session with someone to answer
        // is asked about it.
        let is_spawn = matches!(req.action, ApprovalAction::Spawn { .. });
        let hook_asks = req.hook == Some(HookApproval::Ask);
        if is_spawn && !self.may_ask(req.policy) && !hook_asks {
            return Some(Ok(()));
        }
        let escalation = matches!(req.action, ApprovalAction::Escalation { .. });
        match req.policy {
            ApprovalPolicy::ReadOnly => {
                return Some(Err(Denied(format!(
                    "`{}` was denied: the session is read-only (approval policy `read-only`). \
                     Do not retry it; describe the change you would make instead.",
                    req.tool
                ))));
            }
            // The user's hook allowed it: no prompt (leaving the sandbox still asks).
            _ if req.hook == Some(HookApproval::Allow) && !escalation => return Some(Ok(())),
            // The user's hook wants them asked, whatever else would let it through.
            _ if hook_asks => {}
            // The sandbox bounds it: nothing to ask.
            _ if matches!(req.action, ApprovalAction::SandboxedCommand { .. }) => {
                return Some(Ok(()));
            }
            // Leaving the sandbox is always the user's call, under `auto` too.
            ApprovalPolicy::Auto if !escalation => return Some(Ok(())),
            ApprovalPolicy::Auto | ApprovalPolicy::Ask => {}
        }
        if !hook_asks && self.is_cached(req.tool, req.action) {
            return Some(Ok(()));
        }
        None
    }

    /// Why a question for the user is refused when nobody can answer (`exec`).
    fn headless(&self, req: &ApprovalRequest<'_>) -> Option<(Denied, Unanswered)> {
        if self.can_ask {
            return None;
        }
        if req.hook == Some(HookApproval::Ask) {
            return Some((
                Denied(format!(
                    "`{}` was not run: a pre_tool_use hook asks for the user's approval of \
                     this call, and nobody can answer in this headless run. Do not retry it; \
                     tell the user what you wanted to do.",
                    req.tool
                )),
                Unanswered::Hook,
            ));
        }
        if matches!(req.action, ApprovalAction::Escalation { .. }) {
            return Some((
                Denied(
                    "running this command outside the sandbox needs the user's approval, and \
                     nobody can answer in this headless run. Do not retry it: do the work \
                     within the sandbox, or tell the user which command to run themselves \
                     and why."
                        .to_string(),
                ),
                Unanswered::Escalation,
            ));
        }
        Some((
            Denied(format!(
                "`{}` was denied: approval policy is `ask` but nobody can answer in this \
                 headless run (use `--approval auto` to allow changes). Do not retry it.",
                req.tool
            )),
            Unanswered::Policy,
        ))
    }

    /// Puts the question to the user through the event stream and waits for the answer;
    /// an interrupted wait is a refusal.
    async fn ask(
        &self,
        req: &ApprovalRequest<'_>,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> ApprovalDecision {
        let request_id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(request_id, tx);
        events.emit(
            req.agent_id,
            EventKind::ApprovalRequested {
                request_id,
                role: req.role.to_string(),
                tool: req.tool.to_string(),
                action: req.action.clone(),
            },
        );
        let decision = tokio::select! {
            d = rx => d.unwrap_or(ApprovalDecision::Deny),
            _ = cancel.cancelled() => {
                lock(&self.pending).remove(&request_id);
                ApprovalDecision::Deny
            }
        };
        events.emit(
            req.agent_id,
            EventKind::ApprovalResolved {
                request_id,
                decision,
            },
        );
        decision
    }

    /// The user's decision as the call's outcome; approving for the session caches the
    /// action's kind.
    fn answered(
        &self,
        req: &ApprovalRequest<'_>,
        decision: ApprovalDecision,
    ) -> Result<(), Denied> {
        match decision {
            ApprovalDecision::Approve => Ok(()),
            ApprovalDecision::ApproveForSession => {
                let mut cache = lock(&self.cache);
                for key in cache_keys(req.action) {
                    cache.insert((req.tool.to_string(), key));
                }
                Ok(())
            }
            ApprovalDecision::Deny => Err(Denied(format!(
                "the user refused `{}`. Do not retry the same action; ask the user what they \
                 want instead or take another approach.",
                req.tool
            ))),
        }
    }

    /// The user's answer. Unknown ids (already answered, or cancelled) are ignored.
    pub fn resolve(&self, request_id: u64, decision: ApprovalDecision) -> bool {
        match lock(&self.pending).remove(&request_id) {
            Some(tx) => tx.send(decision).is_ok(),
            None => false,
        }
    }

    /// Every key of the action is covered (a patch: each of its folders).
    fn is_cached(&self, tool: &str, action: &ApprovalAction) -> bool {
        let keys = cache_keys(action);
        let cache = lock(&self.cache);
        !keys.is_empty()
            && keys.iter().all(|key| {
                cache
                    .iter()
                    .any(|(t, k)| t == tool && covers(k, key, action))
            })
    }
}

/// Commands are cached by their first two words (`cargo test`), file changes by their
/// folder, spawns by role: approving one approves its kind, not everything. A command
/// with shell syntax (`;`, `&&`, pipes, substitutions, redirections) is cached whole and
/// covers only itself: `cargo test && rm -rf src` is not "`cargo test`". A patch has a
/// key per folder it changes, and is covered only when all of them are.
fn cache_keys(action: &ApprovalAction) -> Vec<String> {
    let one = match action {
        ApprovalAction::Command { command } if has_shell_syntax(command) => {
            format!("={}", command.trim())
        }
        ApprovalAction::Command { command } => command
            .split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" "),
        // Leaving the sandbox is approved for the very command only.
        ApprovalAction::Escalation { command, .. } => format!("!{}", command.trim()),
        ApprovalAction::SandboxedCommand { .. } => String::new(),
        ApprovalAction::FileChange { path, .. } => folder_of(path),
        ApprovalAction::Patch { paths, .. } => {
            let mut folders: Vec<String> = paths.iter().map(|p| folder_of(p)).collect();
            folders.sort();
            folders.dedup();
            return folders;
        }
        ApprovalAction::Spawn { role, .. } => role.clone(),
        // The tool's name already says which server and tool: approving one approves it.
        ApprovalAction::McpTool { .. } => String::new(),
        // An approval of a hook is kept as the user's trust of it, not for the session.
        ApprovalAction::Hook { command, .. } => format!("hook {command}"),
    };
    vec![one]
}

fn covers(cached: &str, key: &str, action: &ApprovalAction) -> bool {
    match action {
        ApprovalAction::Command { command } if has_shell_syntax(command) => key == cached,
        ApprovalAction::Command { .. } => {
            !cached.starts_with('=') && (key == cached || key.starts_with(&format!("{cached} ")))
        }
        // The same folder only: approving `README.md` is not approving `src/`.
        ApprovalAction::FileChange { .. }
        | ApprovalAction::Patch { .. }
        | ApprovalAction::Escalation { .. }
        | ApprovalAction::SandboxedCommand { .. }
        | ApprovalAction::Spawn { .. }
        | ApprovalAction::Hook { .. }
        | ApprovalAction::McpTool { .. } => key == cached,
    }
}

fn has_shell_syntax(command: &str) -> bool {
    command.chars().any(|c| {
        matches!(
            c,
            ';' | '&' | '|' | '`' | '$' | '>' | '<' | '\n' | '(' | ')'
        )
    })
}

/// `src/` for `src/main.rs`, `./` for a file at the root.
fn folder_of(path: &str) -> String {
    let path = path.trim_start_matches("./");
    match path.rfind('/') {
        Some(i) => path[..=i].to_string(),
        None => "./".to_string(),
    }
}

#[cfg(test)]
mod tests;
