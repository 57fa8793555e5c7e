use super::{
    AgentId, AgentResult, AgentStatus, ApprovalAction, ApprovalDecision, ApprovalPolicy, Budget,
    BudgetMeasure, BudgetScope, CheckpointSummary, ConflictFile, Declined, DiffStat,
    DroppedFinding, FarSide, Goal, GoalCheck, GoalEnd, HistoryItem, MergeRecord, MergeReport,
    MessageKind, PlanDecision, PlanSubmitted, Quote, QuoteVsActual, ReviewFinding, ReviewTarget,
    SpawnOptions, StuckTask, Task, TaskMetrics, TaskRates, Unanswered, Verdict, WasteReport,
};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// One thing that happened, to one agent. The TUI, `exec --json` and the session log all
/// consume this same stream; it serializes flat:
/// `{"seq":1,"ts":1767225600000,"agent_id":"…","type":"…",…}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub seq: u64,
    /// When it was made: milliseconds since the Unix epoch, UTC, so task times, lifespans
    /// and the timeline can be rebuilt from a log. 0 in logs written before events had it.
    #[serde(default)]
    pub ts: u64,
    pub agent_id: AgentId,
    #[serde(flatten)]
    pub kind: EventKind,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// First event of a session (and of each resumed run of it).
    SessionStarted {
        session_id: String,
        workspace: PathBuf,
        model: String,
        role: String,
        approval: ApprovalPolicy,
        #[serde(default)]
        resumed: bool,
        /// Every role loaded, for `/role` completion.
        #[serde(default)]
        roles: Vec<String>,
    },
    /// An agent came into being. The root persona has `parent_id: None`.
    AgentSpawned {
        parent_id: Option<AgentId>,
        role: String,
        model: String,
        task: String,
        #[serde(default)]
        depth: u32,
    },
    /// The worker's budget, right after its `agent_spawned` (only when it has one).
    /// Resume restores it.
    AgentBudget {
        budget: Budget,
    },
    /// The sandbox the agent's commands run in (`workspace-write`, `read-only +net`, `off`,
    /// `unavailable`), when it starts and when a handoff changes the persona. Live only:
    /// it follows from the config and the roles, and is told again on resume.
    AgentSandbox {
        sandbox: String,
    },
    /// What the spawn asked beyond the worker's role (kept, instructions, narrowed tools),
    /// right after its `agent_spawned` (only when it asked any). Resume restores it.
    AgentOptions(SpawnOptions),
    FarSide(FarSide),
    AgentStatus {
        parent_id: Option<AgentId>,
        status: AgentStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    TurnStarted,
    TurnFinished {
        end: TurnEnd,
    },
    /// A durable entry of the agent's history. Resume rebuilds conversations from these.
    ItemAdded {
        item: HistoryItem,
    },
    /// Live assistant text while the model streams; superseded by the `item_added` after.
    TextDelta {
        delta: String,
    },
    /// A tool call (named in the `item_added` of the assistant message) started running.
    /// Live only: the call itself and its result are `item_added` items.
    ToolCallBegin {
        call_id: String,
    },
    /// A tool call finished after `duration_ms`; its result is the `item_added` that follows.
    /// Live only, like the begin.
    ToolCallEnd {
        call_id: String,
        duration_ms: u64,
    },
    ApprovalRequested {
        request_id: u64,
        role: String,
        tool: String,
        action: ApprovalAction,
    },
    ApprovalResolved {
        request_id: u64,
        decision: ApprovalDecision,
    },
    /// A call refused without asking, because nobody can answer (`exec`): `exec` counts
    /// them, so a run that could change nothing says so and how to allow them.
    ApprovalUnanswered {
        tool: String,
        why: Unanswered,
    },
    /// An agent asks the user (`ask_user`). A front end that can answer shows it, in
    /// turn with approvals, and replies with `Op::Answer`.
    QuestionAsked {
        request_id: u64,
        role: String,
        question: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        options: Vec<String>,
    },
    /// The question is settled: `answer` (typed or chosen), or why there is none.
    QuestionAnswered {
        request_id: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answer: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        declined: Option<Declined>,
    },
    /// Token usage of one model call, with its cost where the model's price is known,
    /// and how full the agent's context is after it (`context_tokens` of
    /// `context_window`; both 0 for a call outside the conversation, e.g. a summary).
    Usage {
        model: String,
        prompt_tokens: u64,
        completion_tokens: u64,
        cost_usd: f64,
        #[serde(default)]
        context_tokens: u64,
        #[serde(default)]
        context_window: u64,
        /// Of the prompt tokens, those the server took from its prompt cache.
        #[serde(default)]
        cached_tokens: u64,
    },
    /// The agent's older items were replaced by a summary. `history` is the whole
    /// conversation from now on (resume restores it); the tokens are estimates of the
    /// next request before and after.
    Compacted {
        tokens_before: u64,
        tokens_after: u64,
        context_window: u64,
        /// Items the summary replaced.
        replaced: u64,
        history: Vec<HistoryItem>,
    },
    /// The project's `AGENTS.md` files were read and are given to every agent.
    InstructionsLoaded {
        files: Vec<PathBuf>,
        bytes: u64,
        /// Longer than `context.max_instructions_bytes`: the rest was left out.
        cut: bool,
    },
    /// A model call failed in a way worth another try; `delay_ms` until it happens.
    Retrying {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        reason: String,
    },
    /// The agent's model call has streamed nothing, or its tool call has not ended, for
    /// `since_s` seconds (`[guards] stall_after_s`); `on` says which (`model call`, `tool
    /// call read_file src/main.rs`). A mark for the user, who may cancel the agent: the
    /// model call's idle timeout stays the hard limit.
    Stalled {
        on: String,
        since_s: u64,
    },
    /// The stalled call made progress again, or ended.
    Unstalled,
    /// Something went wrong that the user should see; the session goes on.
    Error {
        message: String,
    },
    /// Something the user should know that is not a failure (e.g. `/compact` found nothing
    /// to compact).
    Notice {
        message: String,
    },
    /// A user hook ran (`[[hooks]]`): which, on what, how it ended and how long it took.
    HookRan {
        /// Its command, cut short.
        hook: String,
        /// squad's name of the event (`pre_tool_use`, `stop`, …).
        event: String,
        /// `None`: it did not exit by itself (timed out, or could not start).
        exit: Option<i32>,
        #[serde(default)]
        timed_out: bool,
        ms: u64,
        /// What it did beyond letting things go on: the reason it blocked, or the warning.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outcome: Option<String>,
    },
    /// A worker's result as it returned it. Its verdict is the `verification` event just
    /// before (never repeated here), its merge the `merge_report` after; front ends and
    /// replay put them together.
    ResultReturned {
        parent_id: Option<AgentId>,
        result: AgentResult,
    },
    /// What became of an isolated worker's change when its result (or answer) went up, as
    /// its supervisor reads it in the result's `merge`.
    MergeReport(MergeReport),
    /// A worker's `return_results` was checked against the workspace. Not passed and
    /// corrections left: the worker gets a correction and the result waits.
    Verification(Verdict),
    /// The worker's latest outcome (result, failure or last message) was given to its
    /// supervisor. Resume reads this to know which outcomes are still owed.
    ResultDelivered {
        parent_id: AgentId,
    },
    Despawned {
        parent_id: Option<AgentId>,
    },
    /// A temporary worker was released, `[team] release_after_s` after its outcome
    /// reached its supervisor: it takes no more messages and no longer counts against
    /// `max_live_agents`. Its history stays in the log (and on screen) for reading.
    Released,
    /// A worker's role and prompt were saved as a role file (`Op::SaveRole`); it loads
    /// with the next session.
    RoleSaved {
        name: String,
        path: PathBuf,
    },
    /// A worker (`agent_id`) wrote to its supervisor with `message_supervisor`, without
    /// ending its turn. The supervisor reads it with its next notice batch; a `question`
    /// wakes it if it waits for its workers. Resume reads these for messages still owed.
    SupervisorMessage {
        supervisor_id: AgentId,
        kind: MessageKind,
        text: String,
    },
    /// The notices waiting in this agent's inbox were handed to it in one batch. Resume
    /// reads this: messages before it are not owed any more.
    InboxDelivered {
        notices: u32,
    },
    /// An MCP server changed state (live only). Its tools appear when it is `ready`; a
    /// failure worth telling the user also comes as an `error` event, once.
    McpServer {
        server: String,
        state: McpServerState,
        /// The command line or URL it is reached at.
        #[serde(default)]
        transport: String,
        /// Its tools as the model sees them (`NAME__TOOL`).
        #[serde(default)]
        tools: Vec<String>,
        /// Why it is `failed`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A task of the board was planned or changed (status, assignee, notes, result); the
    /// latest event per task id is the board, which resume rebuilds from them.
    TaskUpdated {
        task: Task,
    },
    /// An agent (`agent_id`) messaged a teammate with `message_agent`: queued for `to`,
    /// which reads it at its next model call. Resume reads these for messages still owed.
    AgentMessage {
        to: AgentId,
        message_id: u64,
        text: String,
    },
    /// Teammates' messages reached this agent at a model call: `item` (a user item
    /// marked with each sender) joined its history. The one record of both, so a
    /// message is delivered once, also across a crash.
    AgentMessagesDelivered {
        message_ids: Vec<u64>,
        item: HistoryItem,
    },
    /// A `plan_first` worker's (`agent_id`) plan, submitted or decided (`plan.rs`).
    PlanSubmitted(PlanSubmitted),
    PlanDecided(PlanDecision),
    /// The user's `/lead`: the persona (`agent_id`) has no writing tools while `on`.
    CoordinateOnly {
        on: bool,
    },
    /// A message for an agent in the middle of a turn: it is taken up (an `item_added`
    /// user item) at the turn's next model call.
    MessageQueued {
        text: String,
    },
    /// The team was paused (`agent_id`: the root), by the user or by the session's
    /// budget: no model or tool call starts.
    Paused,
    /// The team goes on after a pause.
    Resumed,
    /// The user stopped the team: `cancelled` workers were cancelled and the persona's
    /// turn ended.
    Stopped {
        cancelled: usize,
    },
    /// The task board deadlocked (nothing running or ready, tasks unfinished): `tasks` are
    /// held, each with why. Sent once per deadlock; the supervisor gets a critical notice.
    DeadlockDetected {
        tasks: Vec<StuckTask>,
    },
    /// A budget was reached. `agent`: this worker's own; it stops before its next model
    /// call, `failed` with a `budget: …` reason. `session` (on the root): the session's
    /// cost limit; the team is paused until the user raises it (`Op::SetSessionBudget`)
    /// or stops. `spent` and `limit` are in the measure's unit (tokens, dollars, seconds).
    BudgetReached {
        scope: BudgetScope,
        measure: BudgetMeasure,
        spent: f64,
        limit: f64,
    },
    /// The user set the session's cost limit (`None`: no limit); resume keeps it.
    SessionBudgetSet {
        limit_usd: Option<f64>,
    },
    /// At start: the worktrees of squad sessions that no longer run were removed (their
    /// folders and `squad/…` branches). `kept_branches`: those whose worker had left an
    /// unmerged change, committed there and kept so nothing is lost.
    StaleWorktreesRemoved {
        worktrees: Vec<PathBuf>,
        #[serde(default)]
        kept_branches: Vec<String>,
    },
    /// A writing worker got its own git worktree: its tools work in `path` (on `branch`),
    /// and its change reaches the workspace by a merge when its result is accepted.
    WorktreeCreated {
        path: PathBuf,
        branch: String,
    },
    /// The size of an isolated worker's change, after one of its mutating calls or a redo.
    DiffStat(DiffStat),
    /// The worker's change is in the workspace now: `files` were written or deleted.
    Merged {
        files: Vec<String>,
        /// What `Op::UndoMerge` needs to take it back; none in logs from before undo.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        record: Option<MergeRecord>,
    },
    /// `Op::UndoMerge` took the worker's merged change back out: `files` written or deleted.
    MergeUndone {
        files: Vec<String>,
    },
    /// `Op::UndoMerge` changed nothing: these files were changed since where the worker's
    /// change is (`force` takes them back to before the merge all the same).
    UndoRefused {
        conflicts: Vec<ConflictFile>,
    },
    /// The worker's change conflicts with the workspace, which was left as it was; each
    /// file with its hunks.
    MergeConflict {
        conflicts: Vec<ConflictFile>,
    },
    /// The worker's worktree is gone: its change was merged, `discarded` (logs from before
    /// changes were kept), or `kept` unmerged on `branch` for the user to merge on purpose
    /// (`Op::MergeWorker`); otherwise the branch is gone too.
    WorktreeRemoved {
        branch: String,
        discarded: bool,
        #[serde(default)]
        kept: bool,
    },
    /// The answer to `Op::ShowDiff` (live only): the worker's change as a unified diff.
    Diff {
        text: String,
    },
    /// The whole tree is idle: nothing runs until the user speaks again.
    Idle,
    /// Last event of a run: per-agent figures, totals, quote against actual, waste.
    Summary {
        agents: Vec<AgentSummary>,
        totals: SessionTotals,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        quotes: Vec<QuoteVsActual>,
        #[serde(default)]
        waste: WasteReport,
    },
    /// A spawn's projected spend, on its supervisor before the approval (`runtime/quote`).
    Quote(Quote),
    /// Before the user's `message`th message to the persona: the conversation's checkpoint.
    CheckpointStarted {
        message: u32,
        history_len: usize,
        /// What `/rewind` lists for a checkpoint that is no user message: the state just
        /// before a rewind, so the rewind can be taken back.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
    },
    /// The files' checkpoint for `message` in the workspace's shadow repository, or why none.
    CheckpointTaken {
        message: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        checkpoint: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        millis: u64,
    },
    /// Rewound to before `message`; a rewound conversation replaces the persona's history.
    Rewound {
        message: u32,
        #[serde(default)]
        files: Vec<String>,
        #[serde(default)]
        removed: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        history: Option<Vec<HistoryItem>>,
    },
    /// The answer to `Op::ListCheckpoints` (live only): the user's messages that have a
    /// checkpoint, oldest first, with what changed in the files since each.
    Checkpoints {
        list: Vec<CheckpointSummary>,
    },
    /// `Op::Rewind` changed nothing: files the user changed since are named (`force`
    /// writes them all the same).
    RewindRefused {
        message: u32,
        conflicts: Vec<String>,
    },
    /// The answer to `Op::ListFiles` (live only): the workspace's files, for `@` completion.
    Files {
        paths: Vec<String>,
    },
    /// The answer to `Op::ListModels` (live only): the models the server lists, or why
    /// it could not be asked.
    Models {
        models: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The user chose the persona's model for the rest of the session (`/model`).
    ModelSet {
        model: String,
    },
    /// The user chose every agent's approval policy for the rest of the session.
    ApprovalSet {
        approval: ApprovalPolicy,
    },
    /// `Op::Review` began: the reviewer workers started, one per focus (none when the
    /// change is empty).
    ReviewStarted {
        target: ReviewTarget,
        reviewers: Vec<AgentId>,
    },
    /// The review's findings, each checked against the code and de-duplicated, most
    /// severe first; `dropped` holds the ones that did not pass the check, with why.
    ReviewFinished {
        target: ReviewTarget,
        findings: Vec<ReviewFinding>,
        dropped: Vec<DroppedFinding>,
        /// Why the review did not happen: no reviewer could answer (the first one's
        /// error). `None` when one did, or when none was needed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        unanswered: Option<String>,
    },
    /// The user set a goal (`spent_usd`: the session's spend then); replay resumes it.
    GoalSet {
        goal: Goal,
        #[serde(default)]
        spent_usd: f64,
    },
    /// The goal's check ran after a persona's turn.
    GoalChecked(GoalCheck),
    /// The goal ended: met, its budget spent, or stopped by the user.
    GoalEnded {
        reason: GoalEnd,
    },
    /// A step of a batch (`spawn_batch`, `exec --batch`): it began, a row's worker
    /// started or its row settled, it ended. Durable: `--continue` reads the rows' states.
    Batch(super::BatchUpdate),
}

impl EventKind {
    /// Events that only matter while the session runs (streamed text, call timing): the
    /// session log leaves them out, because the `item_added` records tell the same story.
    /// One line telling of a `hook_ran`, the same in every front end.
    pub fn hook_summary(&self) -> Option<String> {
        let Self::HookRan {
            hook,
            event,
            exit,
            timed_out,
            ms,
            outcome,
        } = self
        else {
            return None;
        };
        let how = match (exit, timed_out) {
            (_, true) => "timed out and was killed".to_string(),
            (Some(code), _) => format!("exit {code}"),
            (None, false) => "did not start".to_string(),
        };
        let mut line = format!("hook {event} `{hook}`: {how}, {ms} ms");
        if let Some(o) = outcome {
            line.push_str(" — ");
            line.push_str(o);
        }
        Some(line)
    }

    pub fn is_live_only(&self) -> bool {
        matches!(
            self,
            Self::TextDelta { .. }
                | Self::ToolCallBegin { .. }
                | Self::ToolCallEnd { .. }
                | Self::McpServer { .. }
                | Self::AgentSandbox { .. }
                | Self::Diff { .. }
                | Self::Files { .. }
                | Self::Models { .. }
        )
    }
}

/// Where an MCP server is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpServerState {
    /// `enabled = false` in the config.
    Disabled,
    Starting,
    Ready,
    /// Did not start or went away; the next call of one of its tools starts it again.
    Failed,
    /// The session ended.
    Stopped,
}

impl McpServerState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Disabled => "disabled",
            Self::Starting => "starting",
            Self::Ready => "ready",
            Self::Failed => "failed",
            Self::Stopped => "stopped",
        }
    }
}

/// Why a turn ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnEnd {
    /// The model answered without tool calls.
    Completed,
    /// The model's answer was cut off at its output limit (`finish_reason: length`) with
    /// no tool call to go on with: an answer, but maybe not the whole of it.
    MaxTokens,
    /// The agent called `return_results`.
    Returned,
    MaxIterations,
    Interrupted,
    Cancelled,
    Error,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentSummary {
    pub agent_id: AgentId,
    pub parent_id: Option<AgentId>,
    pub role: String,
    pub status: AgentStatus,
    pub model: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_usd: f64,
    pub model_calls: u64,
    pub tool_calls: u64,
    pub errors: u64,
    pub wall_ms: u64,
    /// Tasks taken on, finished, failed and corrected (workers only).
    #[serde(default)]
    pub tasks: TaskMetrics,
    /// The figures derived from `tasks` (success rate, verification score, lifespan, …).
    #[serde(default)]
    pub rates: TaskRates,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionTotals {
    pub agents: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_usd: f64,
    pub model_calls: u64,
    pub tool_calls: u64,
    pub errors: u64,
    pub wall_ms: u64,
    #[serde(default)]
    pub tasks: TaskMetrics,
    #[serde(default)]
    pub rates: TaskRates,
}
