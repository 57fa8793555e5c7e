//! One tool call as it passes down the agent's layers: its context, built once by the core
//! (the handler, the role and approval policy it is asked under, the arguments parsed, the
//! handler's facts of them), and what it came to ([`ToolOut`]). A layer may change the
//! call's arguments ([`ToolReq::amend`]: checked and described afresh, and what the layers
//! after it see and what runs) or answer instead of the rest of the stack.

use super::agent_tools::Effect;
use super::approval::HookApproval;
use super::points::ToolUse;
use super::toolbox::{CallHandler, Invocation, Ran};
use crate::protocol::{ApprovalAction, ApprovalPolicy, ToolCall};
use crate::tools::ToolFacts;
use serde_json::Value;
use std::sync::Arc;

/// The result of a call its turn was stopped before.
pub const STOPPED: &str = "not run: the turn was stopped before this call";

/// A call the agent may make, with its arguments parsed.
pub struct ToolReq<'a> {
    pub call: &'a ToolCall,
    /// The caller's role and approval policy.
    pub role: String,
    pub policy: ApprovalPolicy,
    pub handler: Arc<dyn CallHandler>,
    /// Its arguments (as a layer may have changed them).
    pub args: Value,
    /// What its handler says of it, from those arguments.
    pub facts: ToolFacts,
    /// The paths it writes, when that is all it does.
    pub writes: Option<Vec<String>>,
    /// The approval a user's hook said (`permissionDecision`); the first said stands.
    pub hook_approval: Option<HookApproval>,
    /// A layer changed its arguments.
    pub amended: bool,
    /// What the user approves, once described (`None` inside: not yet).
    action: Option<Option<ApprovalAction>>,
}

/// How far a call came.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reached {
    /// Its handler ran: the layers hear how it went.
    Ran,
    /// It was refused before its handler (a layer, the approval, bad arguments): the model
    /// reads why, and the layers' after parts pass it by.
    Refused,
    /// The turn was stopped before it: not even the model's repeats count it.
    Stopped,
}

/// What a call came to, as the layers pass it back up and the model then reads it.
pub struct ToolOut {
    pub output: String,
    pub is_error: bool,
    pub effect: Effect,
    /// The turn cannot go on (the calling agent is gone).
    pub fatal: bool,
    pub reached: Reached,
    /// What its handler says of the call as it ran (`None`: it never reached one).
    pub facts: Option<ToolFacts>,
}

impl ToolOut {
    /// A call refused before it ran, with the reason the model reads.
    pub fn refused(why: impl Into<String>) -> Self {
        Self {
            output: why.into(),
            is_error: true,
            effect: Effect::None,
            fatal: false,
            reached: Reached::Refused,
            facts: None,
        }
    }

    /// A call of a turn stopped before it.
    pub fn stopped(why: impl Into<String>) -> Self {
        Self {
            reached: Reached::Stopped,
            ..Self::refused(why)
        }
    }

    /// What the handler said.
    pub fn ran(ran: Ran) -> Self {
        let (output, is_error, effect, fatal) = match ran {
            Ran::Ok(output, effect) => (output, false, effect, false),
            Ran::Error(message) => (message, true, Effect::None, false),
            Ran::Fatal(message) => (message, true, Effect::None, true),
        };
        Self {
            output,
            is_error,
            effect,
            fatal,
            reached: Reached::Ran,
            facts: None,
        }
    }

    /// Whether its handler ran.
    pub fn did_run(&self) -> bool {
        self.reached == Reached::Ran
    }
}

impl<'a> ToolReq<'a> {
    pub fn new(
        call: &'a ToolCall,
        (role, policy): (String, ApprovalPolicy),
        handler: Arc<dyn CallHandler>,
        args: Value,
    ) -> Self {
        let facts = handler.facts(&args);
        let writes = handler.writes_only(&args);
        Self {
            call,
            role,
            policy,
            handler,
            args,
            facts,
            writes,
            hook_approval: None,
            amended: false,
            action: None,
        }
    }

    /// The call as layers read it (its action once described).
    pub fn view(&self) -> ToolUse<'_> {
        ToolUse {
            call_id: &self.call.id,
            name: &self.call.name,
            args: &self.args,
            reach: self.facts.reach,
            reports: self.facts.reports,
            writes: self.writes.as_deref(),
            action: self.action.as_ref().and_then(Option::as_ref),
        }
    }

    /// What the user approves, described once (in the root the call will run in: the
    /// layer that gives a worker its worktree comes before any that asks); an argument
    /// error found here is the call's result.
    pub async fn action(
        &mut self,
        inv: &Invocation<'_>,
    ) -> Result<Option<&ApprovalAction>, String> {
        if self.action.is_none() {
            let described = self.handler.describe(inv, &self.args).await;
            let described = match described {
                Err(why) if self.amended => return Err(amend_failed(self.call, &why)),
                other => other?,
            };
            self.action = Some(described);
        }
        Ok(self.action.as_ref().and_then(Option::as_ref))
    }

    /// Goes on with `args` instead (a user's hook's `updatedInput`), checked against the
    /// tool's schema (`parameters`, where it has one); the call is described afresh.
    pub fn amend(&mut self, parameters: Option<&Value>, args: Value) -> Result<(), String> {
        if let Some(parameters) = parameters {
            crate::tools::check_args(parameters, &args).map_err(|e| amend_failed(self.call, &e))?;
        }
        self.facts = self.handler.facts(&args);
        self.writes = self.handler.writes_only(&args);
        self.args = args;
        self.action = None;
        self.amended = true;
        Ok(())
    }
}

/// The error of a call a hook changed into one its tool refuses.
fn amend_failed(call: &ToolCall, why: &str) -> String {
    format!(
        "not run: a pre_tool_use hook changed this call's arguments (`updatedInput`) into \
         ones `{}` refuses: {why}. This is the user's hook, not your call: tell the user, \
         or do the work another way.",
        call.name
    )
}
