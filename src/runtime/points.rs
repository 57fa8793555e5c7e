//! What a layer is shown and what it may answer at each point of an agent's life (the
//! points themselves are [`super::cx::Layer`]'s methods). An answer either lets the walk go
//! on to the next layer (`Go`, `Kept`, `Pass`, `Rest`) or ends it and is what the loop hears.

use super::approval::HookApproval;
use super::policies::loop_guard::guard::{CallKind, Verdict};
use crate::protocol::ApprovalAction;
use crate::tools::{Reach, Reports};
use serde_json::Value;

/// An answer at a point where a layer may decide.
pub trait Decision {
    /// Whether the next layer is asked.
    fn goes_on(&self) -> bool;
}

/// Before a task starts (a worker's first message or a follow-up; the user's message to
/// the persona).
#[derive(Debug, PartialEq, Eq)]
pub enum Admit {
    Go,
    /// The user's message never reaches the model, for this reason (a hook withheld it).
    Withhold(String),
}

/// Before a model call.
#[derive(Debug, PartialEq, Eq)]
pub enum Gate {
    Go,
    /// Pass the gates again (the team was paused meanwhile).
    Hold,
    /// The turn ends with this reason.
    Stop(String),
    /// The turn was cancelled while held.
    Interrupted,
}

/// Before a tool call.
#[derive(Debug, PartialEq)]
pub enum ToolGate {
    Go,
    /// The call does not run; the model reads this as its result.
    Block(String),
    /// Go, with the approval as a user's hook said (`permissionDecision`); the layers after
    /// it are still asked, and the first approval said stands.
    Approval(HookApproval),
    /// Go with these arguments instead (a hook's `updatedInput`, in squad's names), and the
    /// approval as the hook said, if it did. The caller checks them and asks the layers
    /// after this one about the changed call.
    Amend(Value, Option<HookApproval>),
}

/// A request after the layers shaped it.
#[derive(Debug, PartialEq, Eq)]
pub enum Shape {
    Kept,
    /// Its history was shortened by a model call of its own (whose usage is counted).
    Changed,
    /// The turn ends with this reason.
    Stop(String),
    Interrupted,
}

/// At the end of a turn.
#[derive(Debug, PartialEq, Eq)]
pub enum AfterTurn {
    Rest,
    /// Go on with this as the user's next message.
    Continue(String),
    /// Go on toward the user's goal with this message: the user asked for these turns, so
    /// they are bounded by the goal's budget, not by the layers' continues in a row.
    Pursue(String),
}

impl Decision for Admit {
    fn goes_on(&self) -> bool {
        *self == Admit::Go
    }
}

impl Decision for Gate {
    fn goes_on(&self) -> bool {
        *self == Gate::Go
    }
}

impl Decision for Shape {
    fn goes_on(&self) -> bool {
        *self == Shape::Kept
    }
}

impl Decision for AfterTurn {
    fn goes_on(&self) -> bool {
        *self == AfterTurn::Rest
    }
}

impl Decision for Verdict {
    fn goes_on(&self) -> bool {
        *self == Verdict::Pass
    }
}

/// What an agent is waiting on.
pub enum Waiting<'a> {
    ModelCall,
    Tool(&'a ToolUse<'a>),
}

/// One tool call as layers see it.
pub struct ToolUse<'a> {
    pub call_id: &'a str,
    pub name: &'a str,
    pub args: &'a Value,
    /// What its handler says this call reaches (from its arguments).
    pub reach: Reach,
    /// What its output reports (a test run's pass or fail…).
    pub reports: Reports,
    /// The paths it writes, when its handler can tell that is all it does.
    pub writes: Option<&'a [String]>,
    /// What the user approves (a file change names its path); `None` before the call is
    /// described, and for calls nobody approves.
    pub action: Option<&'a ApprovalAction>,
}

impl ToolUse<'_> {
    pub fn changes_files(&self) -> bool {
        self.reach == Reach::ChangesFiles
    }
}

/// A finished tool call.
pub struct ToolDone<'a> {
    pub output: &'a str,
    pub is_error: bool,
}

/// One result of a call that ran, as the loop guard and the answer layer see it.
pub struct Reviewed<'a> {
    pub name: &'a str,
    /// The arguments as the model wrote them (compared as JSON).
    pub arguments: &'a str,
    pub kind: CallKind,
    /// What the output reports, as the call's handler says.
    pub reports: Reports,
    pub output: &'a str,
    pub is_error: bool,
}
