//! What a layer is shown and what it may answer (the points themselves are
//! [`super::cx::Layer`]'s methods). A model call and a tool call are requests that pass
//! down the agent's layers ([`ModelCall`], [`super::tool_call::ToolReq`]); the other points
//! are asked in order, and an answer either lets the next layer be asked (`Go`, `Pass`,
//! `Rest`) or decides ([`Decision`]).

use crate::model::{ChatResponse, Overflow};
use crate::protocol::TurnEnd;
use crate::tools::{Reach, Reports, ToolFacts};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::request::RequestSetup;

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

/// What the loop guard (or another layer) makes of one result the model is about to read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    /// Append this to the result: the model is repeating itself.
    Note(String),
    /// Stop the turn: the agent fails with this reason (`loop: …`).
    Stop(String),
}

/// What every layer hears and none answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moment {
    /// A turn begins (per-turn state starts afresh).
    TurnStart,
    /// A worker's turns for one message are over (not cancelled), as they ended.
    Settled(TurnEnd),
    /// The agent's life is over (despawned, cancelled, released, the session ending),
    /// heard once before its worktree is let go.
    Gone,
}

impl Decision for Admit {
    fn goes_on(&self) -> bool {
        *self == Admit::Go
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

/// What a model call is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// The agent's next step: streamed to the front ends, its usage fills the context.
    Turn,
    /// A summary of the agent's own conversation (compaction): not streamed, and its
    /// usage is no measure of the context.
    Summary,
}

/// One model call as it passes down the layers.
pub struct ModelCall {
    pub setup: RequestSetup,
    pub purpose: Purpose,
    /// Beaten by the stream as it makes progress (the stall layer watches it).
    pub pulse: Arc<Pulse>,
}

impl ModelCall {
    pub fn new(setup: RequestSetup, purpose: Purpose) -> Self {
        Self {
            setup,
            purpose,
            pulse: Arc::new(Pulse::unarmed()),
        }
    }
}

/// How a model call ended, as the layers and then the turn hear it.
pub enum Called {
    Answer(ChatResponse),
    Interrupted,
    /// The call failed for good, with the reason the user reads (the turn tells it).
    Failed(String),
    /// A layer ended the turn and told why itself.
    Stopped(String),
    /// A layer held the call (the team was paused, or its budget pauses it): the request
    /// is built again, with what came meanwhile, and passes the layers again.
    Again,
    /// The server refused the request as too long (a layer may make it fit and send it
    /// again; otherwise the turn fails with `message`).
    Overflow {
        message: String,
        said: Overflow,
    },
}

/// What a call can do to the world, as far as repeats go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallKind {
    /// Reads only (coding tools that read, MCP tools marked read-only): the same call
    /// with nothing changed gives the same answer.
    Read,
    /// May change files or run things (writes, edits, commands, other MCP tools).
    Change,
    /// Acts on the team or the user (spawn, wait, speak, ask…), or is unknown: it changes
    /// no file; the same call answered the same with nothing changed since is a repeat
    /// like a read (a wait that brought news, or a spawn, answers differently each time).
    Other,
}

impl CallKind {
    /// What one call can do, as its handler says (a `run_command` that only lists reads).
    pub fn of(facts: &ToolFacts) -> Self {
        match facts.reach {
            Reach::Reads => Self::Read,
            Reach::ChangesFiles => Self::Change,
            Reach::Team => Self::Other,
        }
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
    pub action: Option<&'a crate::protocol::ApprovalAction>,
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

/// When a call last made progress: milliseconds since it started, one relaxed store a beat.
/// A model call's is armed once the call is sent: waiting for a model slot is no stall.
pub struct Pulse {
    start: Instant,
    last_ms: AtomicU64,
    armed: AtomicBool,
}

impl Default for Pulse {
    fn default() -> Self {
        Self {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
            armed: AtomicBool::new(true),
        }
    }
}

impl Pulse {
    /// Quiet until [`Pulse::arm`].
    pub fn unarmed() -> Self {
        Self {
            armed: AtomicBool::new(false),
            ..Self::default()
        }
    }

    /// The call is on its way: quiet from now on counts.
    pub fn arm(&self) {
        self.beat();
        self.armed.store(true, Ordering::Relaxed);
    }

    /// The call made progress (bytes arrived, a retry began).
    pub fn beat(&self) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    pub fn last(&self) -> u64 {
        self.last_ms.load(Ordering::Relaxed)
    }

    /// Time since the last beat (or the start); none before it is armed.
    pub fn quiet_for(&self) -> Duration {
        if !self.armed.load(Ordering::Relaxed) {
            return Duration::ZERO;
        }
        self.start
            .elapsed()
            .saturating_sub(Duration::from_millis(self.last()))
    }
}
