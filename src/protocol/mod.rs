//! The one vocabulary the core and the front ends share: `Op` in, `Event` out, and the
//! history item model used for requests, the session log and rendering alike.

mod approval;
mod batch;
mod budget;
mod checkpoint;
mod event;
mod goal;
mod ids;
mod item;
mod merge;
mod metrics;
mod notice;
mod op;
mod plan;
mod question;
mod quote;
mod result;
mod review;
mod spawn;
pub(crate) mod spend;
mod task;
mod team_news;
mod verdict;

pub use approval::{ApprovalAction, ApprovalDecision, ApprovalPolicy, Unanswered};
pub use batch::{
    BatchLedger, BatchProgress, BatchSpec, BatchStep, BatchUpdate, DEFAULT_ATTEMPTS, RowRecord,
    RowState, duration_text,
};
pub use budget::{Budget, BudgetMeasure, BudgetReached, BudgetScope, dollars, thousands};
pub use checkpoint::{ChangedFile, CheckpointSummary, FileChangeKind};
pub use event::{AgentSummary, Event, EventKind, McpServerState, SessionTotals, TurnEnd};
pub use goal::{DEFAULT_GOAL_TURNS, GOAL_REFUSED, Goal, GoalCheck, GoalEnd, GoalTrack};
pub use ids::AgentId;
pub use item::{HistoryItem, Reasoning, ToolCall};
pub use merge::{
    ConflictFile, ConflictHunk, DiffStat, LineRange, MERGE_REFUSED, MergeRecord, MergeReport,
    MergeState, stale_worktrees_message,
};
pub use metrics::{TaskMetrics, TaskRates, TaskTally};
pub use notice::{MessageKind, Priority};
pub use op::Op;
pub use plan::{PlanDecision, PlanState, PlanSubmitted};
pub use question::Declined;
pub use quote::{Quote, QuoteVsActual, WasteKind, WasteLine, WasteReport, WastedBy, WorkerQuote};
pub use result::{AgentResult, AgentStatus, Artifact, ChangeType, ResultStatus};
pub use review::{DroppedFinding, ReviewFinding, ReviewSeverity, ReviewTarget};
pub use spawn::{FarSide, SpawnOptions, worker_name};
pub use spend::{SpendTally, Spent};
pub use task::{StuckTask, Task, TaskList, TaskStatus, deadlocked};
pub use team_news::{TeamNews, TeamNewsFold, first_line};
pub use verdict::{Finding, Severity, Verdict};
