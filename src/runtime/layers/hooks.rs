//! User hooks as a layer: the `[[hooks]]` of the config run at the points of an agent's
//! life they name (`crate::hooks` knows how to run one). Each run is a `hook_ran` event.
//! Exit 0 lets things go on; exit 2 blocks a tool call (`pre_tool_use`, stderr is the
//! model's reason) or keeps the persona working (`stop`, stderr is the user's next
//! message, at most `MAX_STOP_BLOCKS` times in a row); any other exit, or a hook that
//! times out (killed with its process group), is a warning and things go on.

use super::{AfterTurn, Layer, Scope, ToolDone, ToolGate, ToolUse};
use crate::hooks::{HookEvent, HookRun, HookSpec, Payload, run_hook};
use crate::protocol::{AgentId, AgentResult, EventKind, Task, TurnEnd};
use crate::runtime::confinement::Confinement;
use async_trait::async_trait;
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Most times in a row a `stop` hook may keep the persona working.
pub const MAX_STOP_BLOCKS: u32 = 3;

pub struct HookLayer {
    hooks: Vec<HookSpec>,
    session_id: String,
    /// Hooks run in the sandbox of the agent they run for.
    confinement: Arc<Confinement>,
    /// `stop` blocks in a row, per agent.
    stop_blocks: Mutex<HashMap<AgentId, u32>>,
}

/// What the hooks of one point said.
enum Said {
    GoOn,
    /// A hook exited 2 with this (its stderr, or a plain reason if it said nothing).
    Blocked(String),
}

impl HookLayer {
    pub fn new(hooks: Vec<HookSpec>, session_id: String, confinement: Arc<Confinement>) -> Self {
        Self {
            hooks,
            session_id,
            confinement,
            stop_blocks: Mutex::new(HashMap::new()),
        }
    }

    /// Runs the hooks of `event` that match, in order, until one blocks.
    async fn run(
        &self,
        cx: &Scope<'_>,
        event: HookEvent,
        tool: Option<&str>,
        fill: impl Fn(&mut Payload<'_>),
    ) -> Said {
        let matching: Vec<&HookSpec> = self
            .hooks
            .iter()
            .filter(|h| h.matches(event, tool, cx.role))
            .collect();
        if !matching.is_empty() {
            // A hook reads the agent's root as a command would: not half written.
            self.confinement.wait_for_files(cx.team, cx.agent).await;
        }
        for hook in matching {
            let mut payload = Payload::new(
                event,
                &self.session_id,
                cx.root(),
                cx.agent.to_string(),
                cx.role,
            );
            fill(&mut payload);
            let sandbox = self.confinement.for_agent(cx.team, cx.agent, cx.root());
            let ran = run_hook(
                &hook.command,
                cx.root(),
                &payload.to_json(),
                Duration::from_secs(hook.timeout_s),
                sandbox.as_deref(),
            )
            .await;
            let (said, outcome) = judge(event, hook, &ran);
            cx.team.emit(
                cx.agent,
                EventKind::HookRan {
                    hook: hook.label(),
                    event: event.name().to_string(),
                    exit: ran.exit,
                    timed_out: ran.timed_out,
                    ms: ran.ms,
                    outcome,
                },
            );
            if let Said::Blocked(_) = said {
                return said;
            }
        }
        Said::GoOn
    }
}

/// What a run means, and what the user is told beyond "it ran".
fn judge(event: HookEvent, hook: &HookSpec, ran: &HookRun) -> (Said, Option<String>) {
    let stderr = ran.stderr.trim();
    if let Some(why) = &ran.failed_to_start {
        return (Said::GoOn, Some(format!("warning: {why}")));
    }
    if ran.timed_out {
        return (
            Said::GoOn,
            Some(format!(
                "warning: killed after {} s (timeout_s); going on",
                hook.timeout_s
            )),
        );
    }
    let blocks = matches!(event, HookEvent::PreToolUse | HookEvent::Stop);
    match ran.exit {
        Some(0) => (Said::GoOn, None),
        Some(2) if blocks => {
            let reason = if stderr.is_empty() {
                format!("the hook `{}` said no", hook.label())
            } else {
                stderr.to_string()
            };
            let told = match event {
                HookEvent::Stop => format!("keeps the agent working: {reason}"),
                _ => format!("blocked the call: {reason}"),
            };
            (Said::Blocked(reason), Some(told))
        }
        _ => {
            let detail = if stderr.is_empty() {
                String::new()
            } else {
                format!(": {}", crate::text::clip(stderr, 300))
            };
            (Said::GoOn, Some(format!("warning{detail}; going on")))
        }
    }
}

#[async_trait]
impl Layer for HookLayer {
    async fn before_task(&self, cx: &Scope<'_>, _text: &mut String) {
        if cx.agent != cx.team.root() {
            self.run(cx, HookEvent::AgentStart, None, |_| {}).await;
        }
    }

    async fn before_tool(&self, cx: &Scope<'_>, tool: &ToolUse<'_>) -> ToolGate {
        let said = self
            .run(cx, HookEvent::PreToolUse, Some(tool.name), |p| {
                p.tool_name = Some(tool.name.to_string());
                p.tool_input = Some(tool.args.clone());
            })
            .await;
        match said {
            Said::GoOn => ToolGate::Go,
            Said::Blocked(why) => ToolGate::Block(format!(
                "blocked by a pre_tool_use hook: {why}. Do not try the same call again; \
                 find another way or tell the user."
            )),
        }
    }

    async fn after_tool(&self, cx: &Scope<'_>, tool: &ToolUse<'_>, done: &ToolDone<'_>) {
        self.run(cx, HookEvent::PostToolUse, Some(tool.name), |p| {
            p.tool_name = Some(tool.name.to_string());
            p.tool_input = Some(tool.args.clone());
            p.tool_response = Some(json!({"output": done.output, "is_error": done.is_error}));
        })
        .await;
    }

    async fn result_returned(&self, cx: &Scope<'_>, result: &AgentResult) {
        let result = serde_json::to_value(result).ok();
        self.run(cx, HookEvent::AgentStop, None, |p| {
            p.result = result.clone()
        })
        .await;
    }

    async fn task_completed(&self, cx: &Scope<'_>, task: &Task) {
        let task = serde_json::to_value(task).ok();
        self.run(cx, HookEvent::TaskCompleted, None, |p| {
            p.task = task.clone()
        })
        .await;
    }

    async fn turn_end(&self, cx: &Scope<'_>, end: TurnEnd, final_text: &str) -> AfterTurn {
        if cx.agent != cx.team.root() || end != TurnEnd::Completed {
            return AfterTurn::Rest;
        }
        let blocks_so_far = crate::sync::lock(&self.stop_blocks)
            .get(&cx.agent)
            .copied()
            .unwrap_or(0);
        let said = self
            .run(cx, HookEvent::Stop, None, |p| {
                p.stop_hook_active = Some(blocks_so_far > 0);
                p.last_message = Some(final_text.to_string());
            })
            .await;
        let mut blocks = crate::sync::lock(&self.stop_blocks);
        match said {
            Said::Blocked(message) if blocks_so_far < MAX_STOP_BLOCKS => {
                blocks.insert(cx.agent, blocks_so_far + 1);
                AfterTurn::Continue(message)
            }
            _ => {
                blocks.remove(&cx.agent);
                AfterTurn::Rest
            }
        }
    }
}
