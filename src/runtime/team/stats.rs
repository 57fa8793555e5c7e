//! What each agent runs up (tokens, cost, calls, errors) and the summary built from it.

use super::Team;
use crate::protocol::{AgentId, AgentSummary, SessionTotals};
use std::time::Instant;

#[derive(Clone, Copy, Debug, Default)]
pub struct AgentStats {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_usd: f64,
    pub model_calls: u64,
    pub tool_calls: u64,
    pub errors: u64,
}

impl Team {
    pub fn count_model_call(&self, id: AgentId) {
        self.with(id, |a| a.stats.model_calls += 1);
    }

    /// A model call that answered took `took`.
    pub fn note_call_time(&self, took: std::time::Duration) {
        let ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
        self.slowest_call_ms
            .fetch_max(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// The longest model call of the session so far.
    pub fn slowest_call(&self) -> std::time::Duration {
        std::time::Duration::from_millis(
            self.slowest_call_ms
                .load(std::sync::atomic::Ordering::Relaxed),
        )
    }

    pub fn count_error(&self, id: AgentId) {
        self.with(id, |a| a.stats.errors += 1);
    }

    pub fn count_tool_result(&self, id: AgentId, is_error: bool) {
        self.with(id, |a| {
            a.stats.tool_calls += 1;
            if is_error {
                a.stats.errors += 1;
            }
        });
    }

    pub fn add_usage(&self, id: AgentId, prompt: u64, completion: u64, cost: f64) {
        let mut agents = self.lock();
        if let Some(a) = agents.get_mut(&id) {
            a.stats.prompt_tokens += prompt;
            a.stats.completion_tokens += completion;
            a.stats.cost_usd += cost;
            agents.cost_usd += cost;
            let d = super::carve::Amount {
                tokens: (prompt + completion) as f64,
                cost_usd: cost,
            };
            agents.carve.spend(id, d);
        }
    }

    /// Per-agent figures in spawn order, and the session's totals.
    pub fn summary(&self) -> (Vec<AgentSummary>, SessionTotals) {
        let agents = self.lock();
        let mut list: Vec<_> = agents.values().collect();
        list.sort_by_key(|a| a.created);
        let now = Instant::now();
        let mut rows: Vec<AgentSummary> = list
            .iter()
            .map(|a| AgentSummary {
                agent_id: a.id,
                parent_id: a.parent,
                role: a.role.clone(),
                status: a.status,
                model: a.model.clone(),
                prompt_tokens: a.stats.prompt_tokens,
                completion_tokens: a.stats.completion_tokens,
                cost_usd: a.stats.cost_usd,
                model_calls: a.stats.model_calls,
                tool_calls: a.stats.tool_calls,
                errors: a.stats.errors,
                wall_ms: a
                    .finished
                    .unwrap_or(now)
                    .duration_since(a.created)
                    .as_millis() as u64,
                tasks: Default::default(),
                rates: Default::default(),
            })
            .collect();
        drop(agents);
        for r in &mut rows {
            r.tasks = self.events().task_metrics(Some(r.agent_id));
            r.rates = r.tasks.rates();
        }
        let mut totals = SessionTotals {
            agents: rows.len() as u64,
            ..SessionTotals::default()
        };
        for r in &rows {
            totals.prompt_tokens += r.prompt_tokens;
            totals.completion_tokens += r.completion_tokens;
            totals.cost_usd += r.cost_usd;
            totals.model_calls += r.model_calls;
            totals.tool_calls += r.tool_calls;
            totals.errors += r.errors;
            totals.wall_ms = totals.wall_ms.max(r.wall_ms);
            totals.tasks.add(&r.tasks);
        }
        totals.rates = totals.tasks.rates();
        (rows, totals)
    }
}
