//! An agent's life: wait for input, run a turn, settle its status, hand it a notice batch
//! (workers' results, their messages, board news) when its workers finish or something
//! urgent comes. One tokio task per agent.

use super::agent_tools::Host;
use super::approval::{ApprovalRequest, Denied};
use super::compaction::{self, CompactError, Trigger};
use super::engine::Engine;
use super::layers::AfterTurn;
use super::persona::switch_persona;
use super::report::notice_batch;
use super::team::{AgentInput, FanIn, NewAgent};
use super::turn::{TurnOutcome, run_turn};
use super::verification::{self, Checked};
use crate::config::Config;
use crate::protocol::{AgentId, AgentResult, AgentStatus, HistoryItem, TurnEnd};
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

    fn tools_for(&self, role: &Role, is_worker: bool, ceiling: Option<&[String]>) -> Vec<String> {
        self.tools.tools_for(role, is_worker, ceiling)
    }

    async fn approve(
        &self,
        req: ApprovalRequest<'_>,
        cancel: &CancellationToken,
    ) -> Result<(), Denied> {
        Engine::approve(self, req, cancel).await
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
        let state = if team.is_held(id) {
            FanIn::Nothing
        } else {
            team.owed_results(id)
        };
        let next = match state {
            FanIn::Ready { done, running } => {
                let news = engine.tasks.take_news();
                match notice_batch(team, id, &done, &running, news) {
                    Some(batch) => Next::Results(batch),
                    None => continue,
                }
            }
            FanIn::Waiting => {
                team.set_status(id, AgentStatus::Waiting, None);
                match wake(&cancel, &mut inbox, Some(&mut changes)).await {
                    Wake::Input(m) => Next::Input(m),
                    Wake::Changed => continue,
                    Wake::Stop => break,
                }
            }
            FanIn::Nothing => {
                // Workers it waited for may have been cancelled: nothing is owed any more.
                team.set_status(id, rest, None);
                match wake(&cancel, &mut inbox, None).await {
                    Wake::Input(m) => Next::Input(m),
                    Wake::Changed => continue,
                    Wake::Stop => break,
                }
            }
        };

        let mut reply = None;
        let took_input = matches!(next, Next::Input(_));
        match next {
            Next::Results(report) => team.push_item(id, HistoryItem::notice(report)),
            Next::Input(AgentInput::SwitchPersona(role)) => {
                team.take_input(id);
                let _ = switch_persona(&engine, &role, "switched by the user", "");
                // The status does not change; re-check idleness.
                team.announce_if_idle();
                continue;
            }
            Next::Input(AgentInput::Compact) => {
                // Not a turn: the status stays (a worker's settled outcome must not look
                // new), but the input counts until done, so the tree is not idle meanwhile,
                // and Esc stops it like a turn.
                let Some(token) = team.renew_turn_token(id) else {
                    break;
                };
                let result = compaction::compact(&engine, id, Trigger::User, &token).await;
                team.take_input(id);
                team.announce_if_idle();
                match result {
                    Ok(_) | Err(CompactError::Cancelled) => {}
                    Err(e @ CompactError::NothingToCompact) => team.emit(
                        id,
                        crate::protocol::EventKind::Notice {
                            message: format!("/compact: {e}"),
                        },
                    ),
                    Err(e) => team.emit(
                        id,
                        crate::protocol::EventKind::Error {
                            message: format!("/compact: {e}"),
                        },
                    ),
                }
                continue;
            }
            Next::Input(AgentInput::Continue) => {
                if team.status(id) != Some(AgentStatus::Interrupted) {
                    team.take_input(id);
                    continue;
                }
                team.release_hold(id);
                if !team.awaits_model(id) {
                    // Its turn had ended: it goes back to resting (or to waiting for the
                    // workers it started, once they are continued too).
                    rest = AgentStatus::Inactive;
                    team.take_input(id);
                    team.set_status(id, rest, None);
                    continue;
                }
            }
            Next::Input(AgentInput::Message { mut text, reply: r }) => {
                reply = r;
                // A worker whose result went up is moved onto the workspace's current state
                // first (its worktree, if any, is made at its first call that changes files).
                if id != engine.root()
                    && let Some(note) = super::isolation::before_task(&engine, id).await
                {
                    text.push_str("\n\n");
                    text.push_str(&note);
                }
                // Results held back (after a resume or an interrupt) and notices still in
                // its inbox (a held persona's questions from workers) come first, then what
                // it was just told.
                let held = match team.release_hold(id).then(|| team.owed_results(id)) {
                    Some(FanIn::Ready { done, running }) => {
                        (done, running, engine.tasks.take_news())
                    }
                    _ => Default::default(),
                };
                let (done, running, news) = held;
                if let Some(batch) = notice_batch(team, id, &done, &running, news) {
                    team.push_item(id, HistoryItem::notice(batch));
                }
                // A worker's task starts here (its first message, or a follow-up after
                // it returned): its result will be checked against the workspace as it
                // is now.
                if id != engine.root()
                    && engine.checks.starts_task(id)
                    && team
                        .role(id)
                        .is_some_and(|r| verification::enabled_for(&engine, id, &r))
                {
                    engine
                        .checks
                        .begin(id, &text, engine.workspace_for(id).root())
                        .await;
                }
                Box::pin(before_task(&engine, id, &cancel, &mut text)).await;
                team.push_item(id, HistoryItem::user(text));
            }
        }

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
        let is_worker = id != engine.root();
        let status = match outcome.end {
            TurnEnd::Returned => AgentStatus::Completed,
            TurnEnd::Error if is_worker => AgentStatus::Failed,
            TurnEnd::Cancelled => AgentStatus::Cancelled,
            _ => AgentStatus::Inactive,
        };
        rest = status;
        if is_worker && status != AgentStatus::Cancelled {
            // Its change is merged (or not) before its supervisor hears of the result.
            super::isolation::settle(&engine, id, outcome.end).await;
        }
        if matches!(status, AgentStatus::Failed | AgentStatus::Completed) {
            // A worker that failed or returned its result is done: its own workers have
            // nobody left to report to.
            let why = match status {
                AgentStatus::Failed => "its supervisor failed",
                _ => "its supervisor already returned its result",
            };
            // (A reviewer that already gave its findings is left as it ended.)
            for child in team.subtree(id).into_iter().skip(1) {
                if !team.is_settled(child) {
                    team.cancel_subtree(child, why);
                }
            }
        }
        if is_worker && matches!(status, AgentStatus::Failed | AgentStatus::Completed) {
            // Its board task (if any) is done or failed before its supervisor hears of it.
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
            // Boxed, like the turn: an idle agent's task carries no room for it.
            Box::pin(worker_done(&engine, id, &cancel, returned, finished)).await;
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
        if let Some(r) = reply {
            let answer = match (&outcome.error, outcome.end) {
                (Some(e), _) => Err(e.clone()),
                _ => Ok(outcome.final_text.clone()),
            };
            let _ = r.send(answer);
        }
    }
    // Despawned or cancelled (not the session ending): its worktree and leases go.
    if id != engine.root() && !engine.isolation.is_closing() {
        super::isolation::clean_up(&engine, id).await;
    }
}

/// A message starts a task: the layers may add to it.
async fn before_task(engine: &Engine, id: AgentId, cancel: &CancellationToken, text: &mut String) {
    let place = engine.place(id);
    engine
        .layers
        .before_task(&place.scope(&engine.team, id, cancel), text)
        .await;
}

/// A worker is done: the layers hear of its result and the board tasks it finished.
async fn worker_done(
    engine: &Engine,
    id: AgentId,
    cancel: &CancellationToken,
    returned: Option<AgentResult>,
    finished: Vec<crate::protocol::Task>,
) {
    let place = engine.place(id);
    let cx = place.scope(&engine.team, id, cancel);
    if let Some(result) = &returned {
        engine.layers.result_returned(&cx, result).await;
    }
    for task in &finished {
        engine.layers.task_completed(&cx, task).await;
    }
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

enum Wake {
    Input(AgentInput),
    /// Some agent's status changed (only when watching `changes`).
    Changed,
    Stop,
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
