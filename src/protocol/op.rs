use super::{AgentId, ApprovalDecision, ApprovalPolicy, Goal, ReviewTarget};
use serde::{Deserialize, Serialize};

/// Everything a front end can ask of the core.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Op {
    /// A message from the user. `to: None` goes to the active persona; a worker's id
    /// sends it to that worker the way `speak_to_agent` does.
    UserMessage {
        #[serde(default)]
        to: Option<AgentId>,
        text: String,
    },
    /// The user's answer to an `approval_requested` event.
    Approval {
        request_id: u64,
        decision: ApprovalDecision,
    },
    /// The user's reply to a `question_asked` event; `None` declines.
    Answer {
        request_id: u64,
        #[serde(default)]
        answer: Option<String>,
    },
    /// Stop the running turn of one agent; its pending tool calls get "interrupted" results.
    Interrupt { agent_id: AgentId },
    /// Cancel a worker and its descendants.
    Despawn { agent_id: AgentId },
    /// Compact the agent's conversation now (`/compact`): its older items are replaced by
    /// a summary. Waits for a running turn to end.
    Compact { agent_id: AgentId },
    /// The user hands the session to another persona (`/role NAME`).
    SwitchPersona { role: String },
    /// Hold the whole team: no model or tool call starts anywhere until `Resume`; calls
    /// in flight finish.
    Pause,
    /// Go on after `Pause`.
    Resume,
    /// Stop the team's work: every worker is cancelled, the persona's turn ends, the
    /// session stays open for the next message. Lifts a pause.
    Stop,
    /// Set the session's cost limit in US dollars (`/budget 5`; `None` lifts it). It must
    /// be above what the session has spent; a team paused by its budget goes on.
    SetSessionBudget {
        #[serde(default)]
        limit_usd: Option<f64>,
    },
    /// Go on with agents read back `interrupted` from the log: the one given, or all.
    Continue {
        #[serde(default)]
        agent_id: Option<AgentId>,
    },
    /// Save a worker's role and prompt (its spawn's instructions and tools included) as
    /// the role file `.squad/roles/NAME.toml`; answered by `role_saved` or an `error`.
    SaveRole { agent_id: AgentId, name: String },
    /// Show a worker's change (`d` in the tree): answered by a `diff` event.
    ShowDiff { agent_id: AgentId },
    /// Finish: cancel all work and close the log.
    Shutdown,
    /// The workspace's files for `@path` completion (ignored files left out): answered by
    /// a `files` event.
    ListFiles,
    /// Run a shell command the user typed (`!cmd`) in the persona's sandbox; its output
    /// joins the persona's conversation (an `item_added`) without starting a turn.
    RunCommand { command: String },
    /// The persona's model for the rest of the session (`/model NAME`): `model_set`.
    SetModel { model: String },
    /// The models the server serves (`/model` with no name, to pick one): answered by a
    /// `models` event.
    ListModels,
    /// Every agent's approval policy for the rest of the session (`/approval`):
    /// `approval_set`.
    SetApproval { approval: ApprovalPolicy },
    /// The user's messages that can be rewound to: answered by a `checkpoints` event.
    ListCheckpoints,
    /// Back to before the user's `message`th message (`/rewind`): the files, the persona's
    /// conversation, or both. The team is stopped first. Files the user changed since are
    /// only overwritten with `force` (else `rewind_refused` names them).
    Rewind {
        message: u32,
        #[serde(default = "yes")]
        files: bool,
        #[serde(default = "yes")]
        conversation: bool,
        #[serde(default)]
        force: bool,
    },
    /// Take a worker's merged change back out of the workspace (`/undo`), keeping what
    /// changed since; where the user changed the same lines, only with `force` (else
    /// `undo_refused`). Answered by `merge_undone`.
    UndoMerge {
        agent_id: AgentId,
        #[serde(default)]
        force: bool,
    },
    /// Merge a worker's change on purpose (`/merge`, `squad merge`, ACP's `/merge`): one
    /// kept unmerged because it did not pass its checks (or any change still in its
    /// worktree). `worker` is its id, a unique prefix of it, or its role when only one
    /// worker has it. Answered by `merged` or `merge_conflict` on the worker, or an
    /// `error` on the persona starting `merge:`.
    MergeWorker { worker: String },
    /// Review a change read-only (`/review`, `squad review`): reviewer workers, one per
    /// focus, in parallel; answered by `review_started`, then `review_finished` (or an
    /// `error` when there is nothing to review with).
    Review {
        #[serde(default)]
        target: ReviewTarget,
    },
    /// Run a worker per row (`squad exec --batch`): told by `batch` events, the last one
    /// `finished`, or an `error` on the persona when it cannot start. Rows an earlier run
    /// of the same batch (its output file) settled are not run again.
    Batch { spec: Box<super::BatchSpec> },
    /// Keep the persona working across turns until the goal's check passes or its budget
    /// is spent (`goal_set`); `None` stops the active goal (`goal_ended`, `stopped`). It
    /// starts no turn: the front end sends the message that does.
    SetGoal {
        #[serde(default)]
        goal: Option<Goal>,
    },
    /// The user's decision on a worker's plan awaiting approval (`plan_submitted`):
    /// approved, or rejected with `reason`, which the worker reads.
    DecidePlan {
        agent_id: AgentId,
        approve: bool,
        #[serde(default)]
        reason: String,
    },
    /// The persona coordinates only (`/lead`): no writing tools for it while `on`.
    SetCoordinateOnly { on: bool },
}

fn yes() -> bool {
    true
}
