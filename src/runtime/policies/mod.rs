//! The session's policies, one folder each holding all of it: its layer (what it does at
//! the points of each agent's life, `runtime/cx.rs`), its state, its pure logic, and the
//! front end's ops it owns (`Policy::on_op`). A new policy is one folder and one line in
//! [`in_order`] (docs/adding-a-policy.md).

pub mod answer;
pub mod ask;
pub mod budget;
pub mod checkpoint;
pub mod compaction;
pub mod goal;
pub mod hooks;
pub mod isolation;
pub mod loop_guard;
pub mod pause;
pub mod placement;
pub mod progress;
pub mod result_due;
pub mod shown;
pub mod stall;
pub mod verification;

use super::cx::{Policies, Policy};
use super::policies::verification::checks::Checks;
use super::tasks::TaskBoard;
use std::sync::Arc;

/// What the session's policies are made from, once at start.
pub struct Parts {
    pub pause: Arc<pause::gate::PauseGate>,
    pub session: budget::SessionLimits,
    pub compactor: Arc<compaction::compactor::Compactor>,
    pub guards: crate::config::GuardsConfig,
    /// `[limits] max_turn_calls`.
    pub max_turn_calls: u32,
    pub hooks: Arc<hooks::service::Hooks>,
    pub isolation: Arc<isolation::worker::WorkerIsolation>,
    pub checks: Arc<Checks>,
    pub board: Arc<TaskBoard>,
    /// Whether a model gets squad's help for weak models.
    pub assist: answer::AssistFor,
    /// The workspace's checkpoints; `None` without a data dir.
    pub checkpoints: Option<Arc<checkpoint::Checkpoints>>,
    /// The user's goal.
    pub goals: Arc<goal::Goals>,
    /// Workers placed in environments (issue 52).
    pub placements: Arc<placement::Placements>,
}

/// The session's policies, in the order their layers run: a model call and a tool call
/// pass down them in this order (and what a layer does after the call comes back up in
/// the reverse), and the other points ask them in this order. The pause gate first (a
/// paused team holds before anything is decided), then what the front ends see of a tool
/// call (a held call has not begun), the budgets, the team's progress, the persona's
/// answer once it repeats itself with all done, a worker's result when its turn ended in
/// words, compaction (a request is made to fit once it may be sent, and again when the
/// server refused it), the loop guard, the checkpoint (a call waits for its turn's
/// checkpoint before any hook runs), the user's hooks (a hook sees only calls squad itself
/// would let through), placement (a placed worker's coding tools go to its far side, and
/// its change comes back before isolation merges it), then isolation (the worktree and the leases, once no hook refused
/// or changed the call; the merge once a worker's turns are over) and verification (it
/// measures the call in the root isolation gave it, and begins a task on the worktree as
/// isolation left it), the approval ask (the user is asked only about what would run), the
/// stall watch (around the send or the run itself), and the user's goal last: a turn the
/// answer layer or a `stop` hook keeps going is not over, so its check waits until they
/// rest.
pub fn in_order(p: Parts) -> Policies {
    // A merge conflict names the board's leases on its files.
    let _ = p.isolation.board.set(p.board.clone());
    let list: Vec<Box<dyn Policy>> = vec![
        Box::new(pause::layer::PausePolicy(p.pause.clone())),
        Box::new(shown::ShownPolicy),
        Box::new(budget::layer::BudgetPolicy(p.session)),
        Box::new(progress::ProgressPolicy::new(p.max_turn_calls)),
        Box::new(answer::AnswerPolicy::new(p.board, p.assist.clone())),
        Box::new(result_due::ResultDuePolicy(p.assist)),
        Box::new(compaction::CompactionPolicy {
            compactor: p.compactor,
            hooks: p.hooks.clone(),
        }),
        Box::new(loop_guard::layer::LoopGuardPolicy::new(p.guards)),
        Box::new(checkpoint::CheckpointPolicy {
            checkpoints: p.checkpoints.clone(),
            pause: p.pause,
        }),
        Box::new(hooks::layer::HooksPolicy(p.hooks)),
        Box::new(placement::PlacementPolicy(p.placements)),
        Box::new(isolation::IsolationPolicy {
            isolation: p.isolation.clone(),
            checks: p.checks.clone(),
            checkpoints: p.checkpoints,
        }),
        Box::new(verification::layer::VerificationPolicy {
            checks: p.checks,
            isolation: p.isolation,
        }),
        Box::new(ask::layer::AskPolicy),
        Box::new(stall::layer::StallPolicy(p.guards.stall_after())),
        Box::new(goal::layer::GoalPolicy(p.goals)),
    ];
    Policies::new(list)
}
#[cfg(test)]
mod policy_tests;
#[cfg(test)]
mod tests;
