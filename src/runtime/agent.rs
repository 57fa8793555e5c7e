//! An agent's life: wait for input, run a turn, settle its status, deliver workers'
//! results to it when they arrive. One tokio task per agent.

use super::Shared;
use super::agent_tools::fan_in_report;
use super::registry::{AgentEntry, AgentInput, AgentStats};
use super::turn::run_turn;
use crate::protocol::{AgentId, AgentStatus, ApprovalPolicy, EventKind, HistoryItem, TurnEnd};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Everything needed to bring an agent into the session.
pub struct NewAgent {
    pub id: AgentId,
    pub parent: Option<AgentId>,
    pub role: String,
    pub model: String,
    pub depth: u32,
    pub task: String,
    pub policy: ApprovalPolicy,
    pub tools: Vec<String>,
    /// Earlier history (resume) or the worker's starting context.
    pub history: Vec<HistoryItem>,
    pub status: AgentStatus,
    pub stats: AgentStats,
    /// Starts a turn at once with this message.
    pub first_message: Option<String>,
    /// Whether to announce it. A resumed agent was announced in the log already; it also
    /// waits for someone to speak before it acts on results owed to it.
    pub announce: bool,
}

/// Registers the agent, announces it, and starts its task.
pub fn spawn_agent_task(shared: &Arc<Shared>, new: NewAgent) -> AgentId {
    let (tx, rx) = mpsc::unbounded_channel();
    let cancel = match new
        .parent
        .and_then(|p| shared.registry.with(p, |a| a.cancel.clone()))
    {
        Some(parent_cancel) => parent_cancel.child_token(),
        None => CancellationToken::new(),
    };
    let id = new.id;
    let entry = AgentEntry {
        id,
        parent: new.parent,
        children: Vec::new(),
        role: new.role.clone(),
        model: new.model.clone(),
        depth: new.depth,
        task: new.task.clone(),
        status: new.status,
        policy: new.policy,
        tools: new.tools,
        history: Vec::new(),
        result: None,
        failure: None,
        delivered: true,
        stats: new.stats,
        created: Instant::now(),
        finished: None,
        cancel: cancel.clone(),
        turn_cancel: cancel.child_token(),
        inbox: tx,
        queued: 0,
        // A resumed agent acts on results owed to it only when someone speaks to it.
        hold: !new.announce,
    };
    shared.registry.insert(entry);
    if new.announce {
        shared.events.emit(
            id,
            EventKind::AgentSpawned {
                parent_id: new.parent,
                role: new.role,
                model: new.model,
                task: new.task,
                depth: new.depth,
            },
        );
    }
    for item in new.history {
        if new.announce {
            shared.push_item(id, item);
        } else {
            shared.registry.with(id, |a| a.history.push(item));
        }
    }
    if let Some(text) = new.first_message {
        shared
            .registry
            .deliver(id, AgentInput::Message { text, reply: None });
    }
    let shared = shared.clone();
    tokio::spawn(async move { agent_main(shared, id, rx, cancel).await });
    id
}

enum Next {
    Input(AgentInput),
    Results(String),
}

async fn agent_main(
    shared: Arc<Shared>,
    id: AgentId,
    mut inbox: mpsc::UnboundedReceiver<AgentInput>,
    cancel: CancellationToken,
) {
    let mut changes = shared.registry.subscribe();
    // What the agent rests as between turns (it waits only while workers owe results).
    let mut rest = shared
        .registry
        .with(id, |a| a.status)
        .filter(|s| s.is_idle())
        .unwrap_or_default();
    loop {
        let held = shared.registry.with(id, |a| a.hold).unwrap_or(false);
        let state = if held {
            FanIn::Nothing
        } else {
            fan_in_state(&shared, id)
        };
        let next = match state {
            FanIn::Ready(done) => Next::Results(fan_in_report(&shared, &done, &[])),
            FanIn::Waiting => {
                shared.registry.set_status(
                    id,
                    AgentStatus::Waiting,
                    None,
                    &shared.events,
                    shared.root,
                );
                match wake(&cancel, &mut inbox, Some(&mut changes)).await {
                    Wake::Input(m) => Next::Input(m),
                    Wake::Changed => continue,
                    Wake::Stop => break,
                }
            }
            FanIn::Nothing => {
                // Workers it waited for may have been cancelled: nothing is owed any more.
                shared
                    .registry
                    .set_status(id, rest, None, &shared.events, shared.root);
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
            Next::Results(report) => shared.push_item(id, HistoryItem::notice(report)),
            Next::Input(AgentInput::SwitchPersona(role)) => {
                shared
                    .registry
                    .with(id, |a| a.queued = a.queued.saturating_sub(1));
                let _ = super::session::switch_persona(&shared, &role, "switched by the user", "");
                settle_idle(&shared);
                continue;
            }
            Next::Input(AgentInput::Message { text, reply: r }) => {
                reply = r;
                // Results held back (after a resume or an interrupt) come first, then what
                // it was just told.
                let held = shared
                    .registry
                    .with(id, |a| std::mem::take(&mut a.hold))
                    .unwrap_or(false);
                if held && let FanIn::Ready(done) = fan_in_state(&shared, id) {
                    shared.push_item(id, HistoryItem::notice(fan_in_report(&shared, &done, &[])));
                }
                shared.push_item(id, HistoryItem::user(text));
            }
        }

        // The turn's token first, so an interrupt from now on reaches this turn; then
        // running; then the input counts as taken: never a moment that looks idle.
        let turn_cancel = cancel.child_token();
        shared
            .registry
            .with(id, |a| a.turn_cancel = turn_cancel.clone());
        shared
            .registry
            .set_status(id, AgentStatus::Running, None, &shared.events, shared.root);
        if took_input {
            shared
                .registry
                .with(id, |a| a.queued = a.queued.saturating_sub(1));
        }
        let outcome = run_turn(&shared, id, turn_cancel).await;

        if cancel.is_cancelled() {
            if let Some(r) = reply {
                let _ = r.send(Err("the agent was cancelled".to_string()));
            }
            break;
        }
        let is_worker = id != shared.root;
        let status = match outcome.end {
            TurnEnd::Returned => AgentStatus::Completed,
            TurnEnd::Error if is_worker => AgentStatus::Failed,
            TurnEnd::Cancelled => AgentStatus::Cancelled,
            _ => AgentStatus::Inactive,
        };
        rest = status;
        if matches!(status, AgentStatus::Failed | AgentStatus::Completed) {
            // A worker that failed or returned its result is done: its own workers have
            // nobody left to report to.
            let why = match status {
                AgentStatus::Failed => "its supervisor failed",
                _ => "its supervisor already returned its result",
            };
            for child in shared.registry.subtree(id).into_iter().skip(1) {
                super::agent_tools::cancel_agent(&shared, child, why);
            }
        }
        if status == AgentStatus::Failed {
            let why = outcome
                .error
                .clone()
                .unwrap_or_else(|| "unknown error".to_string());
            shared.registry.with(id, |a| a.failure = Some(why.clone()));
            shared
                .registry
                .set_status(id, status, Some(why), &shared.events, shared.root);
        } else if status == AgentStatus::Completed
            || matches!(fan_in_state(&shared, id), FanIn::Nothing)
        {
            shared
                .registry
                .set_status(id, status, None, &shared.events, shared.root);
        } else {
            // Workers still owe results: wait for them instead of resting.
            shared
                .registry
                .set_status(id, AgentStatus::Waiting, None, &shared.events, shared.root);
        }
        if let Some(r) = reply {
            let answer = match (&outcome.error, outcome.end) {
                (Some(e), _) => Err(e.clone()),
                _ => Ok(outcome.final_text.clone()),
            };
            let _ = r.send(answer);
        }
    }
}

/// After a persona switch between turns the status does not change; re-check idleness.
fn settle_idle(shared: &Arc<Shared>) {
    shared
        .registry
        .announce_if_idle(&shared.events, shared.root);
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
    changes: Option<&mut tokio::sync::watch::Receiver<u64>>,
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

enum FanIn {
    /// Every worker has finished and these have results not yet given to the agent.
    Ready(Vec<AgentId>),
    /// Workers are still running.
    Waiting,
    Nothing,
}

/// Where the agent's workers stand. Only looks: results are marked delivered when the
/// report is built, right before it is given to the agent.
fn fan_in_state(shared: &Arc<Shared>, id: AgentId) -> FanIn {
    let (running, undelivered) = {
        let agents = shared.registry.lock();
        let Some(me) = agents.get(&id) else {
            return FanIn::Nothing;
        };
        let mut running = false;
        let mut undelivered = Vec::new();
        for child in &me.children {
            if let Some(c) = agents.get(child) {
                if c.is_busy() {
                    running = true;
                } else if !c.delivered && c.status != AgentStatus::Cancelled {
                    undelivered.push(*child);
                }
            }
        }
        (running, undelivered)
    };
    if running {
        FanIn::Waiting
    } else if undelivered.is_empty() {
        FanIn::Nothing
    } else {
        FanIn::Ready(undelivered)
    }
}
