//! `wait_for_agents`: fan-in, until the workers finish, something urgent comes (a worker
//! of the caller failed, a question from a worker), or the timeout.

use super::{AgentTool, Call, Done, Failure, parse, resolve_child};
use crate::model::ToolSpec;
use crate::protocol::{AgentId, AgentStatus};
use crate::roles::Audience;
use crate::runtime::report::notice_batch;
use crate::tools::{Reach, Reports, ToolFacts, ToolKind};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::Duration;

pub struct WaitForAgents;

#[derive(Deserialize)]
struct Args {
    #[serde(default)]
    agent_ids: Option<Vec<Value>>,
    #[serde(default)]
    timeout_s: Option<f64>,
}

/// Longest a `wait_for_agents` call may block when the model gives no timeout.
const DEFAULT_WAIT: Duration = Duration::from_secs(600);

#[async_trait]
impl AgentTool for WaitForAgents {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "wait_for_agents".into(),
            description: "Wait until workers (default: all of yours not yet reported) finish; \
                returns their results. Ends early on a failure, a question or the timeout."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "agent_ids": {"type": "array", "items": {"type": "string"}},
                    "timeout_s": {"type": "number"}
                }
            }),
            freeform: None,
        }
    }

    fn audience(&self) -> Audience {
        Audience::Supervisors
    }

    /// Its output is the workers' results, which an answer reports.
    fn facts(&self, _args: &Value) -> ToolFacts {
        ToolFacts::new(ToolKind::Other, Reach::Team).reports(Reports::Results)
    }

    async fn call(&self, cx: &Call<'_>, args: Value) -> Result<Done, Failure> {
        let args: Args = parse(&self.spec(), args)?;
        let (ids, unknown_ids) = targets(cx, args.agent_ids)?;
        if ids.is_empty() {
            return Ok(Done::output(
                json!({"results": [], "still_running": [], "note": "no workers to wait for"})
                    .to_string(),
            ));
        }
        let timeout = timeout(args.timeout_s)?;
        let mut failures = wait(cx, &ids, timeout).await?;
        let team = cx.team;
        let (mut done, running) = team.partition_busy(&ids);
        failures.retain(|f| !done.contains(f));
        done.extend(failures);
        let news = cx.shared.tasks.take_news();
        let batch = notice_batch(team, cx.caller, &done, &running, news).unwrap_or_default();
        Ok(Done::output(match unknown_ids {
            Some(note) => format!("[squad] {note}.\n{batch}"),
            None => batch,
        }))
    }
}

/// The workers to wait for, and a note when the ids named none of the caller's.
fn targets(
    cx: &Call<'_>,
    agent_ids: Option<Vec<Value>>,
) -> Result<(Vec<AgentId>, Option<&'static str>), Failure> {
    let Some(list) = agent_ids else {
        return Ok((cx.team.unfinished_children(cx.caller), None));
    };
    let mut ids = Vec::with_capacity(list.len());
    let mut first_error = None;
    for v in list {
        let raw = v
            .as_str()
            .ok_or_else(|| format!("`agent_ids` must hold strings, got {v}"))?;
        match resolve_child(cx.team, cx.caller, raw) {
            Ok(id) => ids.push(id),
            Err(e) => first_error = first_error.or(Some(e)),
        }
    }
    match (first_error, ids.is_empty()) {
        (None, _) => Ok((ids, None)),
        (Some(e), false) => Err(e),
        // Ids none of which is a worker of the caller's (a 1.5B model waited for
        // `<agent-id-1>` over and over) mean "my workers": it waits for all of them, told so.
        (Some(e), true) => {
            let all = cx.team.unfinished_children(cx.caller);
            if all.is_empty() {
                return Err(e);
            }
            let note = "none of those ids is one of your workers, so this waited for all \
                        of them (the agent_id spawn_agent returned names one)";
            Ok((all, Some(note)))
        }
    }
}

/// The longest the call blocks: `timeout_s` (at most an hour) or [`DEFAULT_WAIT`].
fn timeout(timeout_s: Option<f64>) -> Result<Duration, Failure> {
    match timeout_s {
        None => Ok(DEFAULT_WAIT),
        Some(s) if s >= 0.0 && s.is_finite() => Ok(Duration::from_secs_f64(s.min(3600.0))),
        Some(s) => Err(Failure::Fixable(format!(
            "`timeout_s` must be a non-negative number of seconds, got {s}"
        ))),
    }
}

/// Blocks, marked waiting, until `ids` are finished, something urgent comes, or the
/// timeout; returns the caller's failed workers when a failure ended the wait.
async fn wait(cx: &Call<'_>, ids: &[AgentId], timeout: Duration) -> Result<Vec<AgentId>, Failure> {
    let team = cx.team;
    team.set_status(cx.caller, AgentStatus::Waiting, None);
    let mut changes = team.subscribe();
    let deadline = tokio::time::Instant::now() + timeout;
    // A worker that finished stays finished while its supervisor waits (only the
    // supervisor could speak to it again), so the walk resumes where it stopped.
    let mut done = 0;
    // Failed workers of the caller's, told even if not waited for: a failure is critical.
    let mut failures = Vec::new();
    loop {
        done += team.finished_prefix(&ids[done..]);
        if done == ids.len()
            || team.has_urgent_notice(cx.caller)
            || team.has_steering(cx.caller)
            || team.has_mail(cx.caller)
        {
            break;
        }
        if team.take_alarm(cx.caller) {
            failures = team.owed_failures(cx.caller);
            if !failures.is_empty() {
                break;
            }
        }
        tokio::select! {
            r = changes.changed() => if r.is_err() { break },
            _ = tokio::time::sleep_until(deadline) => break,
            _ = cx.cancel.cancelled() => {
                team.set_status(cx.caller, AgentStatus::Running, None);
                return Err(Failure::Fixable("interrupted while waiting for workers".to_string()));
            }
        }
    }
    team.set_status(cx.caller, AgentStatus::Running, None);
    Ok(failures)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeout_is_the_default_capped_or_refused() {
        assert_eq!(timeout(None).ok(), Some(DEFAULT_WAIT));
        assert_eq!(timeout(Some(2.5)).ok(), Some(Duration::from_millis(2500)));
        assert_eq!(timeout(Some(1e9)).ok(), Some(Duration::from_secs(3600)));
        assert!(timeout(Some(-1.0)).is_err());
        assert!(timeout(Some(f64::NAN)).is_err());
    }
}
