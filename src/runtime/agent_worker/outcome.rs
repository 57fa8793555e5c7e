//! What an agent worker's prompts come to: the text of the next prompt (the messages the
//! worker took up), its change measured after each, its budget, and its result: the last
//! message of a prompt, checked as a returned result is (a correction goes back to the
//! agent as the next prompt), then stored and told like any worker's.

use super::super::agent_tools::{Checked, Host};
use super::super::cx::AgentCx;
use super::super::policies::budget::{Gate, before_call, layer::BudgetPolicy};
use super::super::policies::isolation::IsolationPolicy;
use super::super::policies::pause::layer::PausePolicy;
use super::super::turn::TurnOutcome;
use crate::acp_client::StopReason;
use crate::protocol::{AgentResult, EventKind, HistoryItem, ResultStatus, TurnEnd};

/// The next prompt: the messages at the end of the worker's history (its task, a
/// message, the notices that came with it), after its spawn's instructions on the first.
pub(super) fn prompt_text(cx: &AgentCx, first: bool) -> String {
    let Some(view) = cx.team().request_view(cx.id()) else {
        return String::new();
    };
    let mut said: Vec<&str> = view
        .history
        .iter()
        .rev()
        .map_while(|item| match item {
            HistoryItem::User { text }
            | HistoryItem::Notice { text }
            | HistoryItem::Summary { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    said.reverse();
    let mut text = said.join("\n\n");
    if first
        && let Some(extra) = view
            .instructions
            .as_deref()
            .filter(|i| !i.trim().is_empty())
    {
        text = format!("# Instructions for this task, from your supervisor\n{extra}\n\n{text}");
    }
    text
}

/// Before a prompt: the pause gate (`/pause`, a session budget spent), as before a native
/// worker's model call; false when the worker's turn was cancelled while it waited.
pub(super) async fn pass_pause(cx: &AgentCx) -> bool {
    match cx.policies().get::<PausePolicy>() {
        Some(p) => p.0.pass(cx.team(), cx.id(), cx.cancel()).await,
        None => true,
    }
}

/// After a prompt: the size of the worker's change, for its card (and its merge).
pub(super) async fn after_prompt(cx: &AgentCx) {
    if let Some(iso) = cx.policies().get::<IsolationPolicy>() {
        iso.isolation.after_mutation(cx.team(), cx.id()).await;
    }
}

/// Why the worker must stop: its budget (tokens or dollars its agent reported, its wall
/// time) is spent, or it took more prompts in one task than its role's iterations.
pub(super) fn over_budget(cx: &AgentCx, prompts: u32) -> Option<String> {
    if let Some(p) = cx.policies().get::<BudgetPolicy>()
        && let Gate::Stop(why) = before_call(cx.team(), cx.id(), &p.0)
    {
        return Some(why);
    }
    let session = cx.session();
    let max = session
        .role(&cx.role())
        .and_then(|r| r.max_iterations)
        .unwrap_or(session.config.limits.max_iterations)
        .max(1);
    (prompts > max).then(|| {
        format!("budget: {prompts} prompts in one task, more than its {max} (max_iterations)")
    })
}

/// What is left of the worker's wall-time budget, where it has one.
pub(super) fn wall_left(cx: &AgentCx) -> Option<std::time::Duration> {
    let (budget, spend) = cx.team().budget_and_spend(cx.id())?;
    let wall = std::time::Duration::from_secs(budget.wall_s?);
    Some(wall.saturating_sub(spend.wall))
}

/// Why a worker whose prompt outlasted its wall-time budget stops.
pub(super) fn wall_spent(cx: &AgentCx) -> String {
    over_budget(cx, 0).unwrap_or_else(|| {
        let wall = cx
            .team()
            .budget_and_spend(cx.id())
            .and_then(|(b, _)| b.wall_s);
        format!(
            "budget: its wall time of {} s ran out while the agent worked",
            wall.unwrap_or_default()
        )
    })
}

/// How the agent's last prompt ended.
pub(super) enum Settled {
    /// The worker's turns are over, with this outcome.
    Done(TurnOutcome),
    /// Its result did not pass its checks: this correction is its next prompt.
    Correct(String),
}

/// The prompt's last message as the worker's result, checked and stored.
pub(super) async fn settle(cx: &AgentCx, end: StopReason, said: String) -> Settled {
    let (team, id) = (cx.team(), cx.id());
    let (status, known_issues) = match end {
        StopReason::EndTurn => (ResultStatus::Success, Vec::new()),
        StopReason::Refusal => (
            ResultStatus::Failure,
            vec!["the agent refused to go on".to_string()],
        ),
        other => (
            ResultStatus::Partial,
            vec![format!(
                "the agent's turn ended early ({})",
                stop_name(other)
            )],
        ),
    };
    let summary = match said.trim() {
        "" => format!(
            "(the agent ended its turn, {}, without a message)",
            stop_name(end)
        ),
        s => s.to_string(),
    };
    let mut result = AgentResult {
        status,
        summary,
        artifacts: Vec::new(),
        known_issues,
        verification: None,
        merge: None,
        completed_at: None,
    };
    match cx.check_result(&result).await {
        Checked::Unchecked => {}
        Checked::Deliver(verdict) => {
            team.emit(id, EventKind::Verification(verdict.clone()));
            result.verification = Some(verdict);
        }
        Checked::Correct { verdict, message } => {
            team.emit(id, EventKind::Verification(verdict));
            return Settled::Correct(message);
        }
        Checked::Kept(message) => return Settled::Correct(message),
    }
    let parent = team.set_result(id, result.clone());
    // Each fact once: the verdict was its own event just before.
    result.verification = None;
    team.emit(
        id,
        EventKind::ResultReturned {
            parent_id: parent,
            result,
        },
    );
    Settled::Done(TurnOutcome {
        end: TurnEnd::Returned,
        final_text: said,
        error: None,
    })
}

fn stop_name(end: StopReason) -> String {
    serde_json::to_value(end)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The worker's turn was cancelled (Esc, `/stop`, despawn).
pub(super) fn cancelled(said: String) -> TurnOutcome {
    TurnOutcome {
        end: TurnEnd::Cancelled,
        final_text: said,
        error: None,
    }
}

/// The worker stops for `why` (its budget, or a fault: `faults.rs`): it ends failed.
pub(super) fn stopped(cx: &AgentCx, why: String, said: String) -> TurnOutcome {
    cx.team().count_error(cx.id());
    cx.team().emit(
        cx.id(),
        EventKind::Error {
            message: why.clone(),
        },
    );
    TurnOutcome {
        end: TurnEnd::Error,
        final_text: said,
        error: Some(why),
    }
}
