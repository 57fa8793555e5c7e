//! The user's hooks in an agent's life: `agent_start` and the user's message before a
//! task, `pre_tool_use` and `post_tool_use` around each call, `stop` when the persona's
//! turn ends (at most `MAX_STOP_BLOCKS` times in a row it keeps it working). The session's
//! other hook points (a notification, a compaction, a result, the end) are the service's
//! own calls (`service.rs`).

use super::service::{Caller, Hooks};
use crate::hooks::HookEvent;
use crate::protocol::{Priority, TurnEnd};
use crate::runtime::approval::HookApproval;
use crate::runtime::cx::{AgentCx, Layer, Policy, Starting, ToolNext};
use crate::runtime::points::{Admit, AfterTurn, ToolDone};
use crate::runtime::tool_call::{ToolOut, ToolReq};
use crate::text::clip;
use async_trait::async_trait;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// Most times in a row a `stop` hook may keep the persona working.
pub const MAX_STOP_BLOCKS: u32 = 3;

/// Gives every agent the session's hooks.
pub struct HooksPolicy(pub Arc<Hooks>);

impl Policy for HooksPolicy {
    /// None when the session has no hooks: nothing is asked of them at every call.
    fn layer_for(&self, _agent: &Starting) -> Option<Box<dyn Layer>> {
        if self.0.is_empty() {
            return None;
        }
        Some(Box::new(HookLayer {
            hooks: self.0.clone(),
            stop_blocks: AtomicU32::new(0),
        }))
    }
}

pub struct HookLayer {
    hooks: Arc<Hooks>,
    /// `stop` blocks in a row.
    stop_blocks: AtomicU32,
}

/// The hooks' view of `cx`'s agent now.
pub fn caller(cx: &AgentCx) -> Caller<'_> {
    Caller {
        team: cx.team(),
        agent: cx.id(),
        role: cx.role(),
        root: cx.root(),
        cancel: cx.cancel(),
    }
}

impl HookLayer {
    /// `pre_tool_use`: `Err` is why the call does not run.
    async fn before_tool(&self, cx: &AgentCx, req: &mut ToolReq<'_>) -> Result<(), String> {
        let (d, amended) = (self.hooks)
            .for_tool(&caller(cx), HookEvent::PreToolUse, &req.view(), None)
            .await;
        match (d.block, d.stop) {
            (Some(why), _) => {
                return Err(format!(
                    "blocked by a pre_tool_use hook: {why}. Do not try the same call again; \
                     find another way or tell the user."
                ));
            }
            (None, Some(why)) => {
                return Err(format!(
                    "stopped by a pre_tool_use hook: {why}. Stop here and tell the user."
                ));
            }
            (None, None) => {}
        }
        let approval = match d.permission.as_deref() {
            Some("allow") => Some(HookApproval::Allow),
            Some("ask") => Some(HookApproval::Ask),
            _ => None,
        };
        req.hook_approval = req.hook_approval.or(approval);
        match amended {
            Some(Err(why)) => Err(format!(
                "not run: a pre_tool_use hook answered an `updatedInput` squad cannot apply to \
                 `{}`: {why}. This is the user's hook, not your call: tell the user, or do \
                 the work another way.",
                req.call.name
            )),
            Some(Ok(args)) if args != req.args => {
                let spec = cx.session().tools.spec(&req.call.name);
                req.amend(spec.as_ref().map(|s| &s.parameters), args)
            }
            _ => Ok(()),
        }
    }

    /// `post_tool_use`: what the hook has to say about the call (`additionalContext`, a
    /// `block`'s reason) reaches the model at its next call, as Claude Code feeds it back.
    async fn after_tool(&self, cx: &AgentCx, req: &ToolReq<'_>, done: &ToolDone<'_>) {
        let (d, _) = (self.hooks)
            .for_tool(&caller(cx), HookEvent::PostToolUse, &req.view(), Some(done))
            .await;
        if let Some(text) = d.context {
            let text = format!(
                "A post_tool_use hook about your `{}` call: {text}",
                req.call.name
            );
            let notice = crate::runtime::inbox::Notice::new(Priority::High, text);
            cx.team().post_notice(cx.id(), notice, None);
        }
    }
}

#[async_trait]
impl Layer for HookLayer {
    async fn before_task(&self, cx: &AgentCx, text: &mut String, from_user: bool) -> Admit {
        let at = caller(cx);
        if at.is_worker() {
            self.hooks.agent_start(&at).await;
        }
        if !from_user {
            return Admit::Go;
        }
        match self.hooks.before_prompt(&at, text).await {
            Some(why) => Admit::Withhold(why),
            None => Admit::Go,
        }
    }

    /// `pre_tool_use` before the call (it may refuse it, change it or say how it is
    /// approved), `post_tool_use` once it ran; the model learns its call ran as a hook
    /// changed it.
    async fn tool_call(&self, cx: &AgentCx, req: &mut ToolReq<'_>, next: ToolNext<'_>) -> ToolOut {
        if let Err(why) = self.before_tool(cx, req).await {
            return ToolOut::refused(why);
        }
        let mut out = next.run(cx, req).await;
        if !out.did_run() {
            return out;
        }
        if req.amended {
            let note = format!(
                "[a pre_tool_use hook changed this call's arguments to {}]\n",
                clip(&req.args.to_string(), 400)
            );
            out.output.insert_str(0, &note);
        }
        let done = ToolDone {
            output: &out.output,
            is_error: out.is_error,
        };
        self.after_tool(cx, req, &done).await;
        out
    }

    async fn turn_end(&self, cx: &AgentCx, end: TurnEnd, final_text: &str) -> AfterTurn {
        if cx.is_worker() || end != TurnEnd::Completed {
            return AfterTurn::Rest;
        }
        let blocks_so_far = self.stop_blocks.load(Ordering::Relaxed);
        let said = self
            .hooks
            .run(&caller(cx), HookEvent::Stop, &[], |p| {
                p.stop_hook_active = Some(blocks_so_far > 0);
                p.last_message = Some(final_text.to_string());
            })
            .await;
        match said.block.filter(|_| said.stop.is_none()) {
            Some(message) if blocks_so_far < MAX_STOP_BLOCKS => {
                self.stop_blocks.store(blocks_so_far + 1, Ordering::Relaxed);
                AfterTurn::Continue(message)
            }
            _ => {
                self.stop_blocks.store(0, Ordering::Relaxed);
                AfterTurn::Rest
            }
        }
    }
}
