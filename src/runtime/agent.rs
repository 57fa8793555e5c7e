//! An agent's life: wait for input, run a turn, settle its status, hand it a notice batch
//! (workers' results, their messages, board news) when its workers finish or something
//! urgent comes. One tokio task per agent.

use super::agent_tools::Checked;
use super::agent_tools::Host;
use super::agent_worker::AgentWorker;
use super::approval::{ApprovalRequest, Denied};
use super::cx::{AgentCx, Policies};
use super::persona::switch_persona;
use super::points::{Admit, AfterTurn, Moment};
use super::policies::ask::approve;
use super::policies::compaction::CompactionPolicy;
use super::policies::compaction::compactor::{CompactError, Trigger};
use super::policies::compaction::fit::{ViaStack, compact};
use super::policies::hooks::layer::{HooksPolicy, caller};
use super::policies::hooks::service::Hooks;
use super::policies::hooks::team as team_hooks;
use super::policies::isolation::IsolationPolicy;
use super::policies::isolation::worker::WorkerIsolation;
use super::policies::verification::{self, layer::VerificationPolicy};
use super::report::notice_batch;
use super::session::Session;
use super::team::{AgentInput, FanIn, NewAgent};
use super::turn::{TurnOutcome, run_turn};
use crate::protocol::{AgentId, AgentResult, AgentStatus, EventKind, HistoryItem, TurnEnd};
use crate::roles::Role;
use async_trait::async_trait;
use std::sync::Arc;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

/// Registers the agent, announces it, and starts its task on a context of its own.
pub fn start_agent(session: &Arc<Session>, policies: &Arc<Policies>, new: NewAgent) -> AgentId {
    let id = new.id;
    let (inbox, cancel) = session.team.add(new);
    session.announce_sandbox(id);
    let cx = AgentCx::new(session.clone(), policies.clone(), id, cancel);
    session.agent_tasks.spawn(agent_main(cx, inbox));
    id
}

/// The agent tools reach the runtime through this; starting a worker from a tool call is
/// the one recursion of the runtime (agent → turn → spawn_agent → agent).
#[async_trait]
impl Host for AgentCx {
    fn tools_for(
        &self,
        role: &Role,
        is_worker: bool,
        ceiling: Option<&[String]>,
        model: &str,
    ) -> Vec<String> {
        (self.session().tools).tools_for_model(role, is_worker, ceiling, model)
    }

    async fn approve(&self, req: ApprovalRequest<'_>) -> Result<(), Denied> {
        approve(self, req).await
    }

    async fn notify(&self, kind: &'static str, message: &str) {
        if let Some(hooks) = hooks(self) {
            hooks.notification(&caller(self), kind, message).await;
        }
    }

    async fn base_for_spawn(
        &self,
        role: &str,
        mode: Option<crate::config::IsolationMode>,
    ) -> Option<Arc<crate::isolation::Base>> {
        let iso = isolation(self)?;
        iso.base_for_spawn(self.team(), self.id(), role, mode).await
    }

    fn isolate(
        &self,
        agent: AgentId,
        mode: Option<crate::config::IsolationMode>,
        base: Option<Arc<crate::isolation::Base>>,
    ) {
        let Some(iso) = isolation(self) else {
            return;
        };
        if let Some(mode) = mode {
            iso.choose(agent, mode);
        }
        if let Some(base) = base {
            iso.give_base(agent, base);
        }
    }

    fn start_agent(&self, new: NewAgent) -> AgentId {
        start_agent(self.session(), self.policies(), new)
    }

    fn tool_context(&self) -> crate::tools::ToolContext {
        AgentCx::tool_context(self)
    }

    async fn check_result(&self, result: &AgentResult) -> Checked {
        let Some(v) = self.policies().get::<VerificationPolicy>() else {
            return team_hooks::before_task_done(self, result, Checked::Unchecked).await;
        };
        let start = |new: NewAgent| start_agent(self.session(), self.policies(), new);
        let checked = verification::check(v, self, &start, self.id(), result, self.cancel()).await;
        // Its change merges at the end of its turn only after a verdict that passed.
        v.isolation.note_checked(self.id(), &checked);
        team_hooks::before_task_done(self, result, checked).await
    }

    async fn refuses_plan(&self, tasks: &[super::board::PlannedTask]) -> Option<String> {
        team_hooks::refuses_plan(self, tasks).await
    }

    fn first_request(&self, draft: &super::quote::Draft<'_>) -> super::quote::FirstRequest {
        super::quote::first_request(self.session(), self.id(), draft)
    }

    fn placements(&self) -> Option<Arc<super::policies::placement::Placements>> {
        let p = self
            .policies()
            .get::<super::policies::placement::PlacementPolicy>()?;
        Some(p.0.clone())
    }
}

/// The user's hooks (`policies/hooks`), where the session has the policy.
fn hooks(cx: &AgentCx) -> Option<&Hooks> {
    cx.policies().get::<HooksPolicy>().map(|p| &*p.0)
}

/// The workers' worktrees (`policies/isolation`), where the session has the policy.
fn isolation(cx: &AgentCx) -> Option<&WorkerIsolation> {
    cx.policies()
        .get::<IsolationPolicy>()
        .map(|p| &*p.isolation)
}

enum Next {
    Input(AgentInput),
    Results(String),
}

/// Who waits for the answer of a message's turn.
type Reply = Option<tokio::sync::oneshot::Sender<Result<String, String>>>;

/// What came of taking up an input.
enum Step {
    /// A turn runs next; its answer goes to `Reply`.
    Turn(Reply),
    /// Handled without a turn.
    Handled,
    Stop,
}

async fn agent_main(cx: AgentCx, mut inbox: mpsc::UnboundedReceiver<AgentInput>) {
    let (team, id) = (cx.team(), cx.id());
    // A worker whose role is another agent: its turns are prompts to it (issue 53).
    let mut other = AgentWorker::for_agent(&cx);
    let mut changes = team.subscribe();
    // What the agent rests as between turns (it waits only while workers owe results).
    let mut rest = team.status(id).filter(|s| s.is_idle()).unwrap_or_default();
    loop {
        let next = match next_work(&cx, &mut inbox, &mut changes, rest).await {
            Wake::Input(next) => next,
            Wake::Changed => continue,
            Wake::Stop => break,
        };
        let took_input = matches!(next, Next::Input(_));
        let reply = match take_up(&cx, next, &mut rest).await {
            Step::Turn(reply) => reply,
            Step::Handled => continue,
            Step::Stop => break,
        };
        let Some(turn_cancel) = team.begin_turn(id, took_input) else {
            break;
        };
        // Boxed: a turn's state (model stream, tool calls) is large, and an idle agent
        // should not carry room for it.
        let turn_cx = cx.with_cancel(turn_cancel);
        let outcome = match other.as_mut() {
            Some(agent) => Box::pin(agent.run_turn(&turn_cx)).await,
            None => Box::pin(run_turns(&turn_cx)).await,
        };
        team.end_turn(id);
        if cx.cancel().is_cancelled() {
            if let Some(r) = reply {
                let _ = r.send(Err("the agent was cancelled".to_string()));
            }
            break;
        }
        rest = Box::pin(after_turns(&cx, &outcome)).await;
        if let Some(r) = reply {
            let answer = match (&outcome.error, outcome.end) {
                (Some(e), _) => Err(e.clone()),
                _ => Ok(outcome.final_text.clone()),
            };
            let _ = r.send(answer);
        }
    }
    if let Some(agent) = other {
        agent.close().await;
    }
    // Despawned or cancelled (not the session ending): its worktree and leases go, and
    // a task it claimed is ready again.
    if cx.team().status(cx.id()) == Some(AgentStatus::Cancelled) {
        (cx.session().tasks).give_back(cx.team(), cx.id(), "it was despawned");
    }
    // A placed worker's change there comes back first (`policies/placement`).
    cx.hear(Moment::Gone).await;
    if let Some(iso) = cx.policies().get::<IsolationPolicy>() {
        iso.gone(&cx).await;
    }
}

/// What the agent does next: its workers' results when all are in, else the next input
/// (waiting meanwhile, as `waiting` while workers owe results, else resting as `rest`).
async fn next_work(
    cx: &AgentCx,
    inbox: &mut mpsc::UnboundedReceiver<AgentInput>,
    changes: &mut watch::Receiver<u64>,
    rest: AgentStatus,
) -> Wake<Next> {
    let (team, id, cancel) = (cx.team(), cx.id(), cx.cancel());
    let state = if team.is_held(id) {
        FanIn::Nothing
    } else {
        team.owed_results(id)
    };
    match state {
        FanIn::Ready { done, running } => {
            let news = cx.session().tasks.take_news();
            match notice_batch(team, id, &done, &running, news) {
                Some(batch) => Wake::Input(Next::Results(batch)),
                None => Wake::Changed,
            }
        }
        FanIn::Waiting => {
            team.set_status(id, AgentStatus::Waiting, None);
            wake(cancel, inbox, Some(changes)).await.map(Next::Input)
        }
        FanIn::Nothing => {
            // Workers it waited for may have been cancelled: nothing is owed any more.
            team.set_status(id, rest, None);
            wake(cancel, inbox, None).await.map(Next::Input)
        }
    }
}

/// Takes up an input: results and messages go into the history for a turn; a persona
/// switch, `/compact` and a continue of a finished turn are handled here.
async fn take_up(cx: &AgentCx, next: Next, rest: &mut AgentStatus) -> Step {
    let (session, team, id) = (cx.session(), cx.team(), cx.id());
    match next {
        Next::Results(report) => team.push_item(id, HistoryItem::notice(report)),
        Next::Input(AgentInput::SwitchPersona(role)) => {
            team.take_input(id);
            let _ = switch_persona(session, &role, "switched by the user", "");
            // The status does not change; re-check idleness.
            team.announce_if_idle();
            return Step::Handled;
        }
        Next::Input(AgentInput::Compact) => return compact_now(cx).await,
        Next::Input(AgentInput::Continue) => {
            if team.status(id) != Some(AgentStatus::Interrupted) {
                team.take_input(id);
                return Step::Handled;
            }
            team.release_hold(id);
            if team.awaits_model(id) {
                resume_checks(cx).await;
            }
            if !team.awaits_model(id) {
                // Its turn had ended: it goes back to resting (or to waiting for the
                // workers it started, once they are continued too).
                *rest = AgentStatus::Inactive;
                team.take_input(id);
                team.set_status(id, *rest, None);
                team.wake_for_mail(id);
                return Step::Handled;
            }
        }
        Next::Input(AgentInput::Message { text, reply }) => {
            return Box::pin(take_message(cx, text, reply)).await;
        }
        Next::Input(AgentInput::Mail) => return Box::pin(take_mail(cx)).await,
    }
    Step::Turn(None)
}

/// A worker continued after a resume goes on with its task: its result is checked as any
/// (issue 48), against what its view holds now (see `Checks::resume`).
async fn resume_checks(cx: &AgentCx) {
    let Some(v) = cx.policies().get::<VerificationPolicy>() else {
        return;
    };
    if cx.is_worker() && v.checks.enabled_for(cx.id(), &cx.role()) {
        let so_far = v.isolation.changed_so_far(cx.id()).await;
        v.checks.resume(cx.id(), cx.root().root(), &so_far).await;
    }
}

/// A message for a turn: results held back (after a resume or an interrupt) and notices
/// still in its inbox (a held persona's questions from workers) come first, then what it
/// was just told. A task starts here (the layers: a worker whose result went up is moved
/// onto the workspace's current state, what its result is checked against is taken; the
/// user's hooks may withhold the user's message).
async fn take_message(cx: &AgentCx, mut text: String, reply: Reply) -> Step {
    let (session, team, id) = (cx.session(), cx.team(), cx.id());
    let held = match team.release_hold(id).then(|| team.owed_results(id)) {
        Some(FanIn::Ready { done, running }) => (done, running, session.tasks.take_news()),
        _ => Default::default(),
    };
    let (done, running, news) = held;
    if let Some(batch) = notice_batch(team, id, &done, &running, news) {
        team.push_item(id, HistoryItem::notice(batch));
    }
    let from_user = !cx.is_worker();
    let Admit::Withhold(why) = cx.before_task(&mut text, from_user).await else {
        team.push_item(id, HistoryItem::user(text));
        return Step::Turn(reply);
    };
    team.take_input(id);
    let message =
        format!("your message was not sent: a user_prompt_submit hook withheld it: {why}");
    team.emit(id, EventKind::Error { message });
    team.announce_if_idle();
    if let Some(r) = reply {
        let _ = r.send(Err(format!("withheld by a user_prompt_submit hook: {why}")));
    }
    Step::Handled
}

/// Teammates' messages for an agent between turns: a task starts for them as for any
/// message (a worker's view and checks move on), and its first model call hands them
/// over (`turn.rs`). Nothing left (taken by a turn meanwhile) or held: nothing starts.
async fn take_mail(cx: &AgentCx) -> Step {
    let (team, id) = (cx.team(), cx.id());
    if !team.has_mail(id) || team.is_held(id) {
        team.take_input(id);
        team.announce_if_idle();
        return Step::Handled;
    }
    let mut note = String::new();
    let _ = cx.before_task(&mut note, false).await;
    if !note.trim().is_empty() {
        team.push_item(id, HistoryItem::notice(note.trim()));
    }
    Step::Turn(None)
}

/// `/compact`: not a turn. The status stays (a worker's settled outcome must not look
/// new), but the input counts until done, so the tree is not idle meanwhile, and Esc
/// stops it like a turn.
async fn compact_now(cx: &AgentCx) -> Step {
    let (session, team, id) = (cx.session(), cx.team(), cx.id());
    let Some(token) = team.renew_turn_token(id) else {
        return Step::Stop;
    };
    let cx = cx.with_cancel(token);
    // The summary request goes down the agent's whole stack, as its model calls do.
    let policy = cx.policies().get::<CompactionPolicy>();
    let result = match (session.request_for(id), policy) {
        (Some(mut setup), Some(p)) => {
            compact(p, &cx, &mut setup, (Trigger::User, 1.0), &ViaStack(&cx)).await
        }
        (None, _) => Err(CompactError::Gone),
        (_, None) => Err(CompactError::Off),
    };
    team.take_input(id);
    team.announce_if_idle();
    match result {
        Ok(_) | Err(CompactError::Cancelled) => {}
        Err(e @ CompactError::NothingToCompact) => team.emit(
            id,
            EventKind::Notice {
                message: format!("/compact: {e}"),
            },
        ),
        Err(e) => team.emit(
            id,
            EventKind::Error {
                message: format!("/compact: {e}"),
            },
        ),
    }
    Step::Handled
}

/// After an input's turns: the agent's new status, its outcome settled by the layers, its
/// own workers stopped once it is done, its board task finished. Returns what it rests as.
async fn after_turns(cx: &AgentCx, outcome: &TurnOutcome) -> AgentStatus {
    let (team, id) = (cx.team(), cx.id());
    let is_worker = cx.is_worker();
    let status = match outcome.end {
        TurnEnd::Returned => AgentStatus::Completed,
        TurnEnd::Error if is_worker => AgentStatus::Failed,
        TurnEnd::Cancelled => AgentStatus::Cancelled,
        _ => AgentStatus::Inactive,
    };
    // Its change is merged (or not) before its supervisor hears of the result.
    cx.hear(Moment::Settled(outcome.end)).await;
    let finished = matches!(status, AgentStatus::Failed | AgentStatus::Completed);
    if finished {
        // A worker that failed or returned its result is done: its own workers have
        // nobody left to report to. (A reviewer that already gave its findings is left
        // as it ended.)
        let why = match status {
            AgentStatus::Failed => "its supervisor failed",
            _ => "its supervisor already returned its result",
        };
        for child in team.subtree(id).into_iter().skip(1) {
            if !team.is_settled(child) {
                team.cancel_subtree(child, why);
            }
        }
    }
    if is_worker && finished {
        worker_finished(cx, status, outcome).await;
    }
    // Before it rests: a hook that keeps it working queues its message first, so the
    // team is never idle in between.
    if status != AgentStatus::Failed {
        team_hooks::on_rest(cx).await;
    }
    if status == AgentStatus::Failed {
        let why = outcome
            .error
            .clone()
            .unwrap_or_else(|| "unknown error".to_string());
        team.fail(id, why);
    } else if status == AgentStatus::Completed || team.owed_results(id) == FanIn::Nothing {
        team.set_status(id, status, None);
    } else {
        // Workers still owe results: wait for them instead of resting.
        team.set_status(id, AgentStatus::Waiting, None);
    }
    status
}

/// A worker is done: its board task (if any) is done or failed before its supervisor
/// hears of it, and the layers hear of its result and the tasks it finished.
async fn worker_finished(cx: &AgentCx, status: AgentStatus, outcome: &TurnOutcome) {
    let (session, team, id) = (cx.session(), cx.team(), cx.id());
    let result = team.result(id);
    let ok = status == AgentStatus::Completed
        && result.as_ref().is_none_or(|r| {
            r.status == crate::protocol::ResultStatus::Success
                && r.verification.as_ref().is_none_or(|v| v.passed)
        });
    let summary = result
        .as_ref()
        .map(|r| r.summary.clone())
        .or_else(|| outcome.error.clone());
    // Its `task_completed` hooks ran before (`Host::check_result`): one could keep it open.
    session.tasks.worker_finished(team, id, ok, summary);
    let returned = result.filter(|_| status == AgentStatus::Completed);
    let (at, Some(hooks)) = (caller(cx), hooks(cx)) else {
        return;
    };
    if let Some(result) = &returned {
        hooks.result_returned(&at, result).await;
    }
}

/// Most turns in a row a layer may add by asking the agent to go on (a `stop` hook that
/// keeps blocking); a goal's turns (`Pursue`) have the goal's own budget.
const MAX_CONTINUES: u32 = 3;

/// A turn, and the turns the layers ask for after it ended (each with their message as
/// the user's).
async fn run_turns(cx: &AgentCx) -> TurnOutcome {
    let mut continues = 0;
    loop {
        let outcome = run_turn(cx).await;
        if cx.cancel().is_cancelled() {
            return outcome;
        }
        let may_continue = continues < MAX_CONTINUES;
        match (cx.turn_end(outcome.end, &outcome.final_text, may_continue)).await {
            AfterTurn::Rest => return outcome,
            AfterTurn::Continue(text) => {
                continues += 1;
                cx.team().push_item(cx.id(), HistoryItem::user(text));
            }
            AfterTurn::Pursue(text) => {
                continues = 0;
                cx.team().push_item(cx.id(), HistoryItem::user(text));
            }
        }
    }
}

enum Wake<T = AgentInput> {
    Input(T),
    /// Some agent's status changed (only when watching `changes`).
    Changed,
    Stop,
}

impl<T> Wake<T> {
    fn map<U>(self, f: impl FnOnce(T) -> U) -> Wake<U> {
        match self {
            Wake::Input(t) => Wake::Input(f(t)),
            Wake::Changed => Wake::Changed,
            Wake::Stop => Wake::Stop,
        }
    }
}

/// Sleeps until there is input, the agent is cancelled, or (when given) the tree changes.
async fn wake(
    cancel: &CancellationToken,
    inbox: &mut mpsc::UnboundedReceiver<AgentInput>,
    changes: Option<&mut watch::Receiver<u64>>,
) -> Wake {
    let changed = async {
        match changes {
            Some(rx) => rx.changed().await.is_ok(),
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Wake::Stop,
        msg = inbox.recv() => msg.map_or(Wake::Stop, Wake::Input),
        ok = changed => if ok { Wake::Changed } else { Wake::Stop },
    }
}
