//! The user's hooks, run for the session: the hooks of the config at the points of an
//! agent's life they name (`crate::hooks` knows how to run one and read its answer). Each run is a
//! `hook_ran` event. A tool hook hears the call as Claude Code would make it (`Bash`,
//! `Edit` with an absolute `file_path`, one call per file of a patch) and matches on either
//! name. What a hook decides (exit 2, or JSON on stdout: `permissionDecision: "deny"`,
//! `decision: "block"`, `continue: false`, `additionalContext`, `systemMessage`) blocks a
//! tool call, keeps the persona working after `stop` (at most `MAX_STOP_BLOCKS` times in a
//! row), withholds or adds to the user's message, or is shown; anything else (another exit,
//! a time-out, a workspace hook whose approval no longer holds) is a warning and things go on.

use crate::hooks::{Decision, HookEvent, HookRun, HookSpec, Payload, SessionFacts, TrustStore};
use crate::hooks::{decide, run_hook};
use crate::protocol::{AgentId, AgentResult, EventKind};
use crate::runtime::approval::ApprovalGate;
use crate::runtime::points::{ToolDone, ToolUse};
use crate::runtime::policies::isolation::confinement::Confinement;
use crate::runtime::team::Team;
use crate::tools::claude::{ClaudeCall, claude_calls, claude_name, claude_response};
use crate::tools::claude_input::squad_args;
use crate::workspace::Workspace;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Who the hooks run for: an agent of the team, its role and root now.
pub struct Caller<'a> {
    pub team: &'a Team,
    pub agent: AgentId,
    pub role: String,
    pub root: Arc<Workspace>,
    pub cancel: &'a CancellationToken,
}

impl Caller<'_> {
    pub fn root(&self) -> &Path {
        self.root.root()
    }

    pub fn is_worker(&self) -> bool {
        self.agent != self.team.root()
    }
}

pub struct Hooks {
    pub(super) hooks: Vec<HookSpec>,
    pub(super) session: SessionFacts,
    /// The workspace's root: where hooks run, and what their approvals pin.
    pub(super) project: PathBuf,
    /// The user's approvals of workspace hooks (`None`: none can be read, so none run).
    pub(super) trust: Option<TrustStore>,
    pub(super) confinement: Arc<Confinement>,
    /// `session_start` ran.
    pub(super) started: AtomicBool,
    /// Where workspace hooks that changed are put to the user again.
    pub(super) gate: Arc<ApprovalGate>,
    /// The user's answers this session about changed workspace hooks, by approval key.
    pub(super) answered: tokio::sync::Mutex<HashMap<String, bool>>,
    /// `teammate_idle` blocks in a row, by worker (`team.rs`).
    pub(super) idle_blocks: std::sync::Mutex<HashMap<AgentId, u32>>,
}

impl Hooks {
    pub fn new(
        hooks: Vec<HookSpec>,
        session: SessionFacts,
        project: PathBuf,
        trust: Option<TrustStore>,
        confinement: Arc<Confinement>,
        gate: Arc<ApprovalGate>,
    ) -> Self {
        Self {
            hooks,
            session,
            project,
            trust,
            confinement,
            started: AtomicBool::new(false),
            gate,
            answered: tokio::sync::Mutex::new(HashMap::new()),
            idle_blocks: std::sync::Mutex::new(HashMap::new()),
        }
    }

    /// Runs the hooks of `event` whose matcher takes one of `names`, in order, until one
    /// blocks or stops; what they decided, together.
    /// The session has no hooks at all.
    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    pub(super) async fn run(
        &self,
        cx: &Caller<'_>,
        event: HookEvent,
        names: &[&str],
        fill: impl Fn(&mut Payload<'_>),
    ) -> Decision {
        let matching: Vec<&HookSpec> = self
            .hooks
            .iter()
            .filter(|h| h.matches(event, names, &cx.role))
            .collect();
        if !matching.is_empty() {
            // A hook reads the agent's root as a command would: not half written.
            self.confinement.wait_for_files(cx.team, cx.agent).await;
        }
        let mut all = Decision::default();
        for hook in matching {
            if !self.may_run(cx, event, hook).await {
                self.tell(cx, event, hook, None, Some(NOT_APPROVED.to_string()));
                continue;
            }
            let mut payload = Payload::new(
                event,
                &self.session,
                cx.root(),
                cx.agent.to_string(),
                &cx.role,
            );
            fill(&mut payload);
            let ran = run_hook(
                &hook.command,
                &self.project,
                &payload.to_json(),
                Duration::from_secs(hook.timeout_s),
            )
            .await;
            let decision = decide(event, &ran, &hook.label());
            self.tell(
                cx,
                event,
                hook,
                Some(&ran),
                outcome(event, hook, &ran, &decision),
            );
            let done = decision.block.is_some() || decision.stop.is_some();
            merge(&mut all, decision);
            if done {
                break;
            }
        }
        all
    }

    fn tell(
        &self,
        cx: &Caller<'_>,
        event: HookEvent,
        hook: &HookSpec,
        ran: Option<&HookRun>,
        outcome: Option<String>,
    ) {
        cx.team.emit(
            cx.agent,
            EventKind::HookRan {
                hook: hook.label(),
                event: event.name().to_string(),
                exit: ran.and_then(|r| r.exit),
                timed_out: ran.is_some_and(|r| r.timed_out),
                ms: ran.map_or(0, |r| r.ms),
                outcome,
            },
        );
    }

    /// The hooks of `event` for one tool call, once per call as Claude Code would make it;
    /// with the first `updatedInput` a hook answered, as squad's arguments for the call.
    pub(super) async fn for_tool(
        &self,
        cx: &Caller<'_>,
        event: HookEvent,
        tool: &ToolUse<'_>,
        done: Option<&ToolDone<'_>>,
    ) -> (Decision, Option<Result<Value, String>>) {
        let mut calls = claude_calls(tool.name, tool.args, cx.root());
        if calls.is_empty() {
            calls.push(ClaudeCall {
                name: claude_name(tool.name),
                input: tool.args.clone(),
            });
        }
        let mut all = Decision::default();
        let mut amended = None;
        for call in calls {
            let mut d = self
                .run(cx, event, &[tool.name, &call.name], |p| {
                    p.tool_name = Some(call.name.clone());
                    p.tool_input = Some(call.input.clone());
                    p.squad_tool_name = Some(tool.name.to_string());
                    p.squad_tool_input = Some(tool.args.clone());
                    p.tool_response = done.map(|d| claude_response(&call, d.output, d.is_error));
                })
                .await;
            if let Some(updated) = d.updated_input.take()
                && amended.is_none()
            {
                amended = Some(squad_args(tool.name, tool.args, &call, &updated, cx.root()));
            }
            let done = d.block.is_some() || d.stop.is_some();
            merge(&mut all, d);
            if done {
                break;
            }
        }
        (all, amended)
    }
}

const NOT_APPROVED: &str = "warning: not run: this workspace hook, or a file its command \
    runs, is new or changed since you approved it; read them, then run `squad hooks trust`";

/// `into` with what `d` adds: the first block and stop, every context and message.
fn merge(into: &mut Decision, d: Decision) {
    let join = |a: &mut Option<String>, b: Option<String>| {
        *a = match (a.take(), b) {
            (Some(x), Some(y)) => Some(format!("{x}\n{y}")),
            (x, y) => x.or(y),
        }
    };
    into.block = into.block.take().or(d.block);
    into.stop = into.stop.take().or(d.stop);
    into.permission = into.permission.take().or(d.permission);
    into.updated_input = into.updated_input.take().or(d.updated_input);
    join(&mut into.context, d.context);
    join(&mut into.system_message, d.system_message);
}

/// What the user is told beyond "it ran": the warning, what it decided, its message.
fn outcome(event: HookEvent, hook: &HookSpec, ran: &HookRun, d: &Decision) -> Option<String> {
    if let Some(why) = &ran.failed_to_start {
        return Some(format!("warning: {why}"));
    }
    if ran.timed_out {
        return Some(format!(
            "warning: killed after {} s (timeout_s); going on",
            hook.timeout_s
        ));
    }
    let mut said = Vec::new();
    match ran.exit {
        Some(0) => {}
        Some(2) if crate::hooks::can_block(event) => {}
        _ => {
            let stderr = ran.stderr.trim();
            said.push(if stderr.is_empty() {
                "warning; going on".to_string()
            } else {
                format!("warning: {}; going on", crate::text::clip(stderr, 300))
            });
        }
    }
    if let Some(why) = &d.block {
        said.push(match event {
            HookEvent::Stop => format!("keeps the agent working: {why}"),
            HookEvent::UserPromptSubmit => format!("withheld the message: {why}"),
            HookEvent::TaskCreated => format!("kept the task off the board: {why}"),
            HookEvent::TaskCompleted => format!("kept the task open: {why}"),
            HookEvent::TeammateIdle => format!("keeps the worker working: {why}"),
            _ => format!("blocked the call: {why}"),
        });
    }
    if let Some(why) = &d.stop {
        said.push(format!("stopped the agent: {why}"));
    }
    if d.block.is_none() && d.stop.is_none() && event == HookEvent::PreToolUse {
        if d.updated_input.is_some() {
            said.push("changed the call's input".to_string());
        }
        match d.permission.as_deref() {
            Some("allow") => said.push("allowed the call without a prompt".to_string()),
            Some("ask") => said.push("asks the user to approve the call".to_string()),
            _ => {}
        }
    }
    if let Some(m) = &d.system_message {
        said.push(m.clone());
    }
    (!said.is_empty()).then(|| said.join("; "))
}

impl Hooks {
    /// A worker's task begins.
    pub async fn agent_start(&self, cx: &Caller<'_>) {
        self.run(cx, HookEvent::AgentStart, &[], |_| {}).await;
    }

    /// The user's message to the persona: what `session_start` and `user_prompt_submit`
    /// hooks add to it, or why one withheld it.
    pub async fn before_prompt(&self, cx: &Caller<'_>, text: &mut String) -> Option<String> {
        let mut added = Vec::new();
        if !self.started.swap(true, Ordering::SeqCst) {
            let d = self
                .run(cx, HookEvent::SessionStart, &["startup"], |p| {
                    p.source = Some("startup")
                })
                .await;
            added.extend(d.context);
        }
        let prompt = text.clone();
        let d = self
            .run(cx, HookEvent::UserPromptSubmit, &[], |p| {
                p.prompt = Some(prompt.clone())
            })
            .await;
        if let Some(why) = d.block.or(d.stop) {
            // Not sent: the model never reads it, the user reads why (the hook's event).
            return Some(why);
        }
        added.extend(d.context);
        for context in added {
            text.push_str("\n\n");
            text.push_str(&context);
        }
        None
    }

    pub async fn result_returned(&self, cx: &Caller<'_>, result: &AgentResult) {
        let result = serde_json::to_value(result).ok();
        self.run(cx, HookEvent::AgentStop, &[], |p| p.result = result.clone())
            .await;
    }

    pub async fn before_compact(&self, cx: &Caller<'_>, manual: bool) {
        let trigger = if manual { "manual" } else { "auto" };
        self.run(cx, HookEvent::PreCompact, &[trigger], |p| {
            p.trigger = Some(trigger);
            p.custom_instructions = Some("");
        })
        .await;
    }

    pub async fn notification(&self, cx: &Caller<'_>, kind: &'static str, message: &str) {
        self.run(cx, HookEvent::Notification, &[kind], |p| {
            p.message = Some(message.to_string());
            p.notification_type = Some(kind);
        })
        .await;
    }

    pub async fn session_end(&self, cx: &Caller<'_>) {
        self.run(cx, HookEvent::SessionEnd, &["other"], |p| {
            p.reason = Some("other")
        })
        .await;
    }
}
