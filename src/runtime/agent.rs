//! An agent's life: wait for input, run a turn, settle its status, hand it a notice batch
//! (workers' results, their messages, board news) when its workers finish or something
//! urgent comes. One tokio task per agent.

use super::agent_tools::Host;
use super::approval::{ApprovalRequest, Denied};
use super::checks::Checked;
use super::compaction::{CompactError, Trigger};
use super::engine::Engine;
use super::layers::AfterTurn;
use super::persona::switch_persona;
use super::report::notice_batch;
use super::team::{AgentInput, FanIn, NewAgent};
use super::turn::{TurnOutcome, run_turn};
use super::verification;
use crate::config::Config;
use crate::protocol::{AgentId, AgentResult, AgentStatus, EventKind, HistoryItem, TurnEnd};
use crate::roles::{Role, RoleSet};
use crate::tools::ToolError;
use async_trait::async_trait;
use std::sync::Arc;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

/// Registers the agent, announces it, and starts its task.
pub fn start_agent(engine: &Arc<Engine>, new: NewAgent) -> AgentId {
    let id = new.id;
    let (inbox, cancel) = engine.team.add(new);
    engine.announce_sandbox(id);
    let engine = engine.clone();
    let tasks = engine.agent_tasks.clone();
    tasks.spawn(async move { agent_main(engine, id, inbox, cancel).await });
    id
}

/// The agent tools reach the runtime through this; starting a worker from a tool call is
/// the one recursion of the runtime (agent → turn → spawn_agent → agent).
#[async_trait]
impl Host for Arc<Engine> {
    fn config(&self) -> &Config {
        &self.config
    }

    fn roles(&self) -> &RoleSet {
        &self.roles
    }

    fn tasks(&self) -> &super::tasks::TaskBoard {
        &self.tasks
    }

    fn questions(&self) -> &super::questions::Questions {
        &self.questions
    }

    fn tools_for(
        &self,
        role: &Role,
        is_worker: bool,
        ceiling: Option<&[String]>,
        model: &str,
    ) -> Vec<String> {
        self.tools.tools_for_model(role, is_worker, ceiling, model)
    }

    async fn approve(
        &self,
        req: ApprovalRequest<'_>,
        cancel: &CancellationToken,
    ) -> Result<(), Denied> {
        Engine::approve(self, req, cancel).await
    }

    async fn notify(
        &self,
        agent: AgentId,
        kind: &'static str,
        message: &str,
        cancel: &CancellationToken,
    ) {
        let place = self.place(agent);
        let cx = place.scope(&self.team, agent, cancel);
        self.layers.notification(&cx, kind, message).await;
    }

    async fn read_for_prompt(
        &self,
        caller: AgentId,
        path: &str,
        cancel: &CancellationToken,
    ) -> Result<String, ToolError> {
        let role = self.team.role(caller).unwrap_or_default();
        let ctx = self.tool_context(caller, &role, cancel);
        crate::tools::read_for_prompt(&ctx, path).await
    }

    fn choose_isolation(&self, agent: AgentId, mode: crate::config::IsolationMode) {
        self.isolation.choose(agent, mode);
    }

    async fn base_for_spawn(
        &self,
        caller: AgentId,
        role: &str,
        mode: Option<crate::config::IsolationMode>,
    ) -> Option<Arc<crate::isolation::Base>> {
        self.isolation
            .base_for_spawn(&self.team, caller, role, mode)
            .await
    }

    fn give_base(&self, agent: AgentId, base: Arc<crate::isolation::Base>) {
        self.isolation.give_base(agent, base);
    }

    fn start_agent(&self, new: NewAgent) -> AgentId {
        start_agent(self, new)
    }

    fn tool_context(
        &self,
        agent: AgentId,
        role: &str,
        cancel: &CancellationToken,
    ) -> crate::tools::ToolContext {
        Engine::tool_context(self, agent, role, cancel)
    }

    async fn check_result(
        &self,
        caller: AgentId,
        result: &AgentResult,
        cancel: &CancellationToken,
    ) -> Checked {
        let start = |new: NewAgent| start_agent(self, new);
        verification::check(self, &start, caller, result, cancel).await
    }
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

async fn agent_main(
    engine: Arc<Engine>,
    id: AgentId,
    mut inbox: mpsc::UnboundedReceiver<AgentInput>,
    cancel: CancellationToken,
) {
    let team = &engine.team;
    let mut changes = team.subscribe();
    // What the agent rests as between turns (it waits only while workers owe results).
    let mut rest = team.status(id).filter(|s| s.is_idle()).unwrap_or_default();
    loop {
        let next = match next_work(&engine, id, &cancel, &mut inbox, &mut changes, rest).await {
            Wake::Input(next) => next,
            Wake::Changed => continue,
            Wake::Stop => break,
        };
        let took_input = matches!(next, Next::Input(_));
        let reply = match take_up(&engine, id, &cancel, next, &mut rest).await {
            Step::Turn(reply) => reply,
            Step::Handled => continue,
            Step::Stop => break,
        };
        let Some(turn_cancel) = team.begin_turn(id, took_input) else {
            break;
        };
        // Boxed: a turn's state (model stream, tool calls) is large, and an idle agent
        // should not carry room for it.
        let outcome = Box::pin(run_turns(&engine, id, &turn_cancel)).await;
        team.end_turn(id);
        if cancel.is_cancelled() {
            if let Some(r) = reply {
                let _ = r.send(Err("the agent was cancelled".to_string()));
            }
            break;
        }
        rest = Box::pin(after_turns(&engine, id, &cancel, &outcome)).await;
        if let Some(r) = reply {
            let answer = match (&outcome.error, outcome.end) {
                (Some(e), _) => Err(e.clone()),
                _ => Ok(outcome.final_text.clone()),
            };
            let _ = r.send(answer);
        }
    }
    // Despawned or cancelled (not the session ending): its worktree and leases go.
    let place = engine.place(id);
    engine.layers.gone(&place.scope(team, id, &cancel)).await;
}

/// What the agent does next: its workers' results when all are in, else the next input
/// (waiting meanwhile, as `waiting` while workers owe results, else resting as `rest`).
async fn next_work(
    engine: &Engine,
    id: AgentId,
    cancel: &CancellationToken,
    inbox: &mut mpsc::UnboundedReceiver<AgentInput>,
    changes: &mut watch::Receiver<u64>,
    rest: AgentStatus,
) -> Wake<Next> {
    let team = &engine.team;
    let state = if team.is_held(id) {
        FanIn::Nothing
    } else {
        team.owed_results(id)
    };
    match state {
        FanIn::Ready { done, running } => {
            let news = engine.tasks.take_news();
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
async fn take_up(
    engine: &Arc<Engine>,
    id: AgentId,
    cancel: &CancellationToken,
    next: Next,
    rest: &mut AgentStatus,
) -> Step {
    let team = &engine.team;
    match next {
        Next::Results(report) => team.push_item(id, HistoryItem::notice(report)),
        Next::Input(AgentInput::SwitchPersona(role)) => {
            team.take_input(id);
            let _ = switch_persona(engine, &role, "switched by the user", "");
            // The status does not change; re-check idleness.
            team.announce_if_idle();
            return Step::Handled;
        }
        Next::Input(AgentInput::Compact) => return compact_now(engine, id).await,
        Next::Input(AgentInput::Continue) => {
            if team.status(id) != Some(AgentStatus::Interrupted) {
                team.take_input(id);
                return Step::Handled;
            }
            team.release_hold(id);
            if !team.awaits_model(id) {
                // Its turn had ended: it goes back to resting (or to waiting for the
                // workers it started, once they are continued too).
                *rest = AgentStatus::Inactive;
                team.take_input(id);
                team.set_status(id, *rest, None);
                return Step::Handled;
            }
        }
        Next::Input(AgentInput::Message { mut text, reply }) => {
            // Results held back (after a resume or an interrupt) and notices still in
            // its inbox (a held persona's questions from workers) come first, then what
            // it was just told.
            let held = match team.release_hold(id).then(|| team.owed_results(id)) {
                Some(FanIn::Ready { done, running }) => (done, running, engine.tasks.take_news()),
                _ => Default::default(),
            };
            let (done, running, news) = held;
            if let Some(batch) = notice_batch(team, id, &done, &running, news) {
                team.push_item(id, HistoryItem::notice(batch));
            }
            // A task starts here: a worker whose result went up is moved onto the
            // workspace's current state, and what its result is checked against is
            // taken (the layers).
            if let Some(why) = Box::pin(before_task(engine, id, cancel, &mut text)).await {
                team.take_input(id);
                team.emit(
                    id,
                    EventKind::Error {
                        message: format!(
                            "your message was not sent: a user_prompt_submit hook withheld it: {why}"
                        ),
                    },
                );
                team.announce_if_idle();
                if let Some(r) = reply {
                    let _ = r.send(Err(format!("withheld by a user_prompt_submit hook: {why}")));
                }
                return Step::Handled;
            }
            team.push_item(id, HistoryItem::user(text));
            return Step::Turn(reply);
        }
    }
    Step::Turn(None)
}

/// `/compact`: not a turn. The status stays (a worker's settled outcome must not look
/// new), but the input counts until done, so the tree is not idle meanwhile, and Esc
/// stops it like a turn.
async fn compact_now(engine: &Engine, id: AgentId) -> Step {
    let team = &engine.team;
    let Some(token) = team.renew_turn_token(id) else {
        return Step::Stop;
    };
    let place = engine.place(id);
    engine
        .layers
        .before_compact(&place.scope(team, id, &token), true)
        .await;
    let result = match engine.request_for(id) {
        Some(setup) => {
            let done = engine
                .compactor
                .compact(team, id, setup, Trigger::User, &token)
                .await;
            engine.after_usage(id);
            done
        }
        None => Err(CompactError::Gone),
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
async fn after_turns(
    engine: &Engine,
    id: AgentId,
    cancel: &CancellationToken,
    outcome: &TurnOutcome,
) -> AgentStatus {
    let team = &engine.team;
    let is_worker = id != engine.root();
    let status = match outcome.end {
        TurnEnd::Returned => AgentStatus::Completed,
        TurnEnd::Error if is_worker => AgentStatus::Failed,
        TurnEnd::Cancelled => AgentStatus::Cancelled,
        _ => AgentStatus::Inactive,
    };
    // Its change is merged (or not) before its supervisor hears of the result.
    let place = engine.place(id);
    engine
        .layers
        .settle(&place.scope(team, id, cancel), outcome.end)
        .await;
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
        worker_finished(engine, id, cancel, status, outcome).await;
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
async fn worker_finished(
    engine: &Engine,
    id: AgentId,
    cancel: &CancellationToken,
    status: AgentStatus,
    outcome: &TurnOutcome,
) {
    let team = &engine.team;
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
    let finished = engine.tasks.worker_finished(team, id, ok, summary);
    let returned = result.filter(|_| status == AgentStatus::Completed);
    let place = engine.place(id);
    let cx = place.scope(team, id, cancel);
    if let Some(result) = &returned {
        engine.layers.result_returned(&cx, result).await;
    }
    for task in &finished {
        engine.layers.task_completed(&cx, task).await;
    }
}

/// A message starts a task: the layers may add to it, or withhold the user's message to
/// the persona (`Some(why)`: it is not sent).
async fn before_task(
    engine: &Engine,
    id: AgentId,
    cancel: &CancellationToken,
    text: &mut String,
) -> Option<String> {
    let place = engine.place(id);
    let cx = place.scope(&engine.team, id, cancel);
    if !cx.is_worker()
        && let Some(why) = engine.layers.before_prompt(&cx, text).await
    {
        return Some(why);
    }
    engine.layers.before_task(&cx, text).await;
    None
}

/// Most turns in a row a layer may add by asking the agent to go on (a `stop` hook that
/// keeps blocking).
const MAX_CONTINUES: u32 = 3;

/// A turn, and the turns the layers ask for after it ended (each with their message as
/// the user's).
async fn run_turns(engine: &Arc<Engine>, id: AgentId, cancel: &CancellationToken) -> TurnOutcome {
    let mut continues = 0;
    loop {
        let outcome = run_turn(engine, id, cancel.clone()).await;
        if cancel.is_cancelled() || continues == MAX_CONTINUES {
            return outcome;
        }
        let place = engine.place(id);
        let cx = place.scope(&engine.team, id, cancel);
        match engine
            .layers
            .turn_end(&cx, outcome.end, &outcome.final_text)
            .await
        {
            AfterTurn::Rest => return outcome,
            AfterTurn::Continue(text) => {
                continues += 1;
                engine.team.push_item(id, HistoryItem::user(text));
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
