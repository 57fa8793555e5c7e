//! The batch's loop: the batch approved once, then up to `max_concurrency` rows at work,
//! each row's outcome judged as its worker finishes, a failed attempt tried again while
//! attempts are left, every step a durable `batch` event, the output file rewritten
//! after each settled row.

use super::super::agent_tools::Call;
use super::super::approval::ApprovalRequest;
use super::host::RowHost;
use super::plan::{Plan, Where, prepare};
use super::row;
use crate::batch::eta::Pace;
use crate::protocol::{
    AgentId, AgentStatus, ApprovalAction, BatchProgress, BatchSpec, BatchStep, BatchUpdate,
    EventKind, Quote, RowRecord, RowState,
};
use crate::runtime::team::Outcome;
use std::collections::VecDeque;
use std::time::Instant;

/// Rows at work at once when the spec says nothing.
const DEFAULT_CONCURRENCY: u32 = 4;

/// Runs the batch to its end; the line that tells of it (the model's tool result), or why
/// it could not start.
pub async fn run(cx: &Call<'_>, spec: BatchSpec, whose: Where) -> Result<String, String> {
    let plan = prepare(cx, spec, whose)?;
    let quote = super::quoted::rows_left(cx, &plan)?;
    approve(cx, &plan, &quote).await?;
    let host = RowHost(cx.host);
    let rows_cx = Call {
        caller: cx.caller,
        team: cx.team,
        shared: cx.shared,
        host: &host,
        cancel: cx.cancel,
    };
    let before = cx.team.status(cx.caller).unwrap_or_default();
    cx.team.set_status(cx.caller, AgentStatus::Waiting, None);
    let mut run = Run::new(&plan, cx.shared.config.limits.max_live_agents);
    run.emit(cx, started(&plan, &quote));
    run.adopt(cx);
    let stopped = run.drive(&rows_cx).await;
    cx.team.set_status(cx.caller, before, None);
    Ok(run.finish(cx, stopped))
}

/// The batch as one approval: its rows, role, template and output (and the quote).
async fn approve(cx: &Call<'_>, plan: &Plan, quote: &Quote) -> Result<(), String> {
    let Some(me) = cx.team.card(cx.caller) else {
        return Err("agent no longer exists".into());
    };
    let spec = &plan.spec;
    let left = plan.rows.len() - plan.settled.len();
    let action = ApprovalAction::Spawn {
        role: spec.role.clone(),
        task: format!(
            "a worker per row: {left} of {} rows of {}, output {}\n{}",
            plan.rows.len(),
            spec.rows,
            spec.output,
            spec.template
        ),
        tools: Vec::new(),
        model: cx.team.model(cx.caller).unwrap_or_default(),
        budget: spec.budget,
        instructions: Some(plan.instructions.clone()),
        keep: false,
        name: Some(format!("batch of {left}")),
        environment: None,
        quote: Some(Box::new(quote.clone())),
    };
    let req = ApprovalRequest {
        agent_id: cx.caller,
        role: &me.role,
        policy: me.policy,
        tool: super::super::agent_tools::SPAWN_BATCH,
        action: &action,
        hook: None,
    };
    cx.host.approve(req).await.map_err(|d| d.0)
}

fn started(plan: &Plan, quote: &Quote) -> BatchStep {
    BatchStep::Started {
        spec: Box::new(plan.spec.clone()),
        skipped: plan.settled.len(),
        quote: Some(quote.lines().join("\n")),
    }
}

/// A row at work: its index, its attempt, its worker.
struct Working {
    index: usize,
    attempt: u32,
    agent: AgentId,
}

/// The batch's state as it runs.
struct Run<'p> {
    plan: &'p Plan,
    /// Each row's record once it has one (settled ones from an earlier run included).
    records: Vec<Option<RowRecord>>,
    /// Rows to start: index, attempt, why the last attempt did not count.
    queue: VecDeque<(usize, u32, Option<String>)>,
    working: Vec<Working>,
    concurrency: usize,
    pace: Pace,
    /// Rows settled that the output file does not show yet.
    unwritten: bool,
}

impl<'p> Run<'p> {
    fn new(plan: &'p Plan, max_live: u32) -> Self {
        let records: Vec<Option<RowRecord>> = (plan.rows.iter())
            .map(|r| plan.settled.get(&r.id).cloned())
            .collect();
        let queue = (records.iter().enumerate())
            .filter(|(_, r)| r.is_none())
            .map(|(i, _)| (i, 1, None))
            .collect();
        let asked = plan.spec.max_concurrency.unwrap_or(DEFAULT_CONCURRENCY);
        Self {
            plan,
            records,
            queue,
            working: Vec::new(),
            concurrency: asked.clamp(1, max_live.max(1)) as usize,
            pace: Pace::new(Instant::now()),
            unwritten: false,
        }
    }

    /// Until every row settled; `Some(why)` when it was stopped first.
    async fn drive(&mut self, cx: &Call<'_>) -> Option<String> {
        let mut changes = cx.team.subscribe();
        loop {
            self.fill(cx).await;
            self.flush(cx).await;
            if self.working.is_empty() && self.queue.is_empty() {
                return None;
            }
            if self.collect(cx) {
                self.flush(cx).await;
                continue;
            }
            tokio::select! {
                r = changes.changed() => if r.is_err() { return Some("the session ended".into()) },
                _ = cx.cancel.cancelled() => return Some("interrupted".into()),
            }
        }
    }

    /// The rows whose worker was at work when an earlier run ended: a worker that had
    /// returned its result before then counts as the row's attempt (the row does not run
    /// again); one cut off mid-task leaves its row to start afresh. Their outcomes are
    /// the batch's, never the caller's.
    fn adopt(&mut self, cx: &Call<'_>) {
        let agents: Vec<AgentId> = self.plan.stale.iter().filter_map(|r| r.agent).collect();
        let (outcomes, _) = cx.team.take_outcomes(&agents, &[]);
        // Completed: its result was checked and its change merged before the end.
        let finished = |o: &&Outcome| o.status == AgentStatus::Completed && o.result.is_some();
        for outcome in outcomes.iter().filter(finished) {
            let Some(stale) = self.plan.stale.iter().find(|r| r.agent == Some(outcome.id)) else {
                continue;
            };
            let Some(index) = self.plan.rows.iter().position(|r| r.id == stale.id) else {
                continue;
            };
            self.queue.retain(|(i, ..)| *i != index);
            self.records[index] = Some(stale.clone());
            self.spent(cx, index, outcome.id);
            self.judged(cx, index, stale.attempt, outcome);
        }
    }

    /// Starts queued rows while there is room.
    async fn fill(&mut self, cx: &Call<'_>) {
        while self.working.len() < self.concurrency
            && cx.team.live_count() < cx.shared.config.limits.max_live_agents as usize
        {
            let Some((index, attempt, why)) = self.queue.pop_front() else {
                return;
            };
            let row = &self.plan.rows[index];
            match row::start(cx, self.plan, row, why.as_deref()).await {
                Ok(agent) => {
                    self.working.push(Working {
                        index,
                        attempt,
                        agent,
                    });
                    let mut rec = self.record(index, attempt, RowState::Running);
                    rec.agent = Some(agent);
                    rec.error = why;
                    self.note(cx, index, rec);
                }
                Err(e) => self.attempt_failed(cx, index, attempt, e),
            }
        }
    }

    /// Judges the rows whose workers finished; whether any did.
    fn collect(&mut self, cx: &Call<'_>) -> bool {
        let ids: Vec<AgentId> = self.working.iter().map(|w| w.agent).collect();
        let (done, _) = cx.team.partition_busy(&ids);
        if done.is_empty() {
            return false;
        }
        let (outcomes, _) = cx.team.take_outcomes(&done, &[]);
        for outcome in outcomes {
            let Some(pos) = self.working.iter().position(|w| w.agent == outcome.id) else {
                continue;
            };
            let w = self.working.swap_remove(pos);
            self.spent(cx, w.index, w.agent);
            self.judged(cx, w.index, w.attempt, &outcome);
        }
        true
    }

    /// The row's attempt as its worker's outcome makes it: done, or failed.
    fn judged(&mut self, cx: &Call<'_>, index: usize, attempt: u32, outcome: &Outcome) {
        match row::judge(outcome, self.plan.spec.schema.as_ref()) {
            Ok(result) => {
                let mut rec = self.record(index, attempt, RowState::Done);
                rec.result = Some(result);
                rec.agent = Some(outcome.id);
                self.settle(cx, index, rec);
            }
            Err(e) => self.attempt_failed(cx, index, attempt, e),
        }
    }

    /// An attempt that did not count: the row goes again while attempts are left, else
    /// it fails for good.
    fn attempt_failed(&mut self, cx: &Call<'_>, index: usize, attempt: u32, why: String) {
        if attempt < self.plan.spec.attempts() {
            self.queue.push_front((index, attempt + 1, Some(why)));
            return;
        }
        let mut rec = self.record(index, attempt, RowState::Failed);
        rec.error = Some(why);
        self.settle(cx, index, rec);
    }

    /// Adds what the row's worker spent to the row's figures.
    fn spent(&mut self, cx: &Call<'_>, index: usize, agent: AgentId) {
        let Some((_, spend)) = cx.team.budget_and_spend(agent) else {
            return;
        };
        let mut rec = self.record(index, 1, RowState::Running);
        rec.tokens += spend.tokens;
        rec.cost_usd += spend.cost_usd;
        self.records[index] = Some(rec);
    }

    /// The row's record as it stands, at `state` and `attempt`.
    fn record(&self, index: usize, attempt: u32, state: RowState) -> RowRecord {
        let (tokens, cost_usd) =
            (self.records[index].as_ref()).map_or((0, 0.0), |r| (r.tokens, r.cost_usd));
        RowRecord {
            id: self.plan.rows[index].id.clone(),
            state,
            attempt,
            agent: None,
            result: None,
            error: None,
            tokens,
            cost_usd,
        }
    }

    fn settle(&mut self, cx: &Call<'_>, index: usize, rec: RowRecord) {
        self.pace.settle();
        self.note(cx, index, rec);
        self.unwritten = true;
    }

    /// Rows settled since the last write: the output file, once the log has them (a row
    /// the output shows is one the log knows settled, so `--continue` never runs it).
    async fn flush(&mut self, cx: &Call<'_>) {
        if std::mem::take(&mut self.unwritten) {
            cx.team.events().on_disk().await;
            self.write(cx);
        }
    }

    /// Keeps `rec`, in the ledger and the log.
    fn note(&mut self, cx: &Call<'_>, index: usize, rec: RowRecord) {
        self.records[index] = Some(rec.clone());
        self.emit(cx, BatchStep::Row(rec));
    }

    /// The output file as it stands: every settled row, in the rows file's order.
    fn write(&self, cx: &Call<'_>) {
        let settled: Vec<&RowRecord> = (self.records.iter().flatten())
            .filter(|r| r.state.is_settled())
            .collect();
        if let Err(e) = self.plan.output.write(&settled) {
            let message = format!("batch: {e}");
            cx.team.emit(cx.caller, EventKind::Error { message });
        }
    }

    fn progress(&self) -> BatchProgress {
        let count = |s: RowState| {
            self.records
                .iter()
                .flatten()
                .filter(|r| r.state == s)
                .count()
        };
        let (done, failed) = (count(RowState::Done), count(RowState::Failed));
        let total = self.plan.rows.len();
        BatchProgress {
            total,
            done,
            failed,
            running: self.working.len(),
            eta_s: self.pace.eta(total - done - failed, Instant::now()),
        }
    }

    fn emit(&self, cx: &Call<'_>, step: BatchStep) {
        let update = BatchUpdate {
            batch: self.plan.spec.key().to_string(),
            step,
            progress: self.progress(),
        };
        crate::sync::lock(cx.shared.batches).fold(&update);
        cx.team.emit(cx.caller, EventKind::Batch(update));
    }

    /// The last event and the caller's answer: what was done, what failed, what it cost.
    fn finish(&self, cx: &Call<'_>, stopped: Option<String>) -> String {
        self.write(cx);
        let rows = self.records.iter().flatten();
        let failed: Vec<String> = (rows.clone())
            .filter(|r| r.state == RowState::Failed)
            .map(|r| r.id.clone())
            .collect();
        let tokens = rows.clone().map(|r| r.tokens).sum();
        let cost_usd = rows.map(|r| r.cost_usd).sum();
        let step = BatchStep::Finished {
            failed,
            tokens,
            cost_usd,
            stopped,
        };
        let update = BatchUpdate {
            batch: self.plan.spec.key().to_string(),
            step,
            progress: self.progress(),
        };
        let line = update.line().unwrap_or_default();
        cx.team.emit(cx.caller, EventKind::Batch(update));
        line
    }
}
