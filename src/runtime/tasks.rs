//! The session's task board as the runtime shares it: changed by the supervisors' tools
//! and by workers finishing; every change is a `task_updated` event; news a supervisor
//! should act on (tasks that became ready, a deadlock) travels with the outcomes that
//! caused it, in the supervisor's next notice batch (a deadlock is critical).

use super::board::{Board, BoardError, Changes, ClaimRefused, ManualStatus, PlannedTask};
use super::inbox::Notice;
use super::team::Team;
use crate::protocol::{AgentId, EventKind, Priority, Task};
use crate::sync::lock;
use claims::offer_next;
use serde_json::{Value, json};
use std::sync::Mutex;

#[derive(Default)]
pub struct TaskBoard {
    inner: Mutex<Inner>,
}

mod claims;
mod leases;
#[cfg(test)]
mod restart_props;

#[derive(Default)]
struct Inner {
    board: Board,
    /// Workers that claimed a task (`claim_task`): kept ones are offered the next.
    claimers: Vec<AgentId>,
    news: Vec<Notice>,
    /// The last deadlock reported, so one is told once.
    last_deadlock: Option<String>,
}

impl TaskBoard {
    /// Adds or replaces tasks; the answer lists the board and what is ready.
    pub fn plan(
        &self,
        team: &Team,
        by: AgentId,
        tasks: Vec<PlannedTask>,
    ) -> Result<Value, BoardError> {
        let mut inner = lock(&self.inner);
        let changes = inner.board.plan(tasks)?;
        let ready = changes.ready.clone();
        publish(&mut inner, team, by, changes, false);
        offer_next(&inner, team);
        Ok(json!({"ready": ready, "tasks": view(&inner.board)}))
    }

    /// Gives a ready task to a worker (a supervisor's spawn), its lease checked as a
    /// claim's is.
    pub fn assign(
        &self,
        team: &Team,
        by: AgentId,
        id: &str,
        agent: AgentId,
    ) -> Result<(), ClaimRefused> {
        let mut inner = lock(&self.inner);
        let changes = inner.board.assign_leased(id, agent)?;
        publish(&mut inner, team, by, changes, false);
        Ok(())
    }

    /// Checks that a task can be assigned, without assigning it (before a spawn is
    /// approved): ready, and its lease free.
    pub fn check_assignable(&self, id: &str) -> Result<(), ClaimRefused> {
        let mut trial = lock(&self.inner).board.clone();
        trial.assign_leased(id, AgentId::new()).map(|_| ())
    }

    pub fn update(
        &self,
        team: &Team,
        by: AgentId,
        id: &str,
        status: Option<ManualStatus>,
        note: Option<String>,
    ) -> Result<Value, BoardError> {
        let mut inner = lock(&self.inner);
        let changes = inner.board.update(id, status, note)?;
        let ready = changes.ready.clone();
        publish(&mut inner, team, by, changes, false);
        let task = inner.board.get(id).cloned();
        Ok(json!({"task": task, "ready": ready}))
    }

    /// A worker came to rest: its task (if it had one) is done or failed.
    /// Returns the tasks this completed.
    pub fn worker_finished(
        &self,
        team: &Team,
        agent: AgentId,
        ok: bool,
        summary: Option<String>,
    ) -> Vec<Task> {
        // A claimed task whose worker ended without a result (an error) is ready again.
        if !ok && team.result(agent).is_none() {
            let why = summary.as_deref().unwrap_or("it ended without a result");
            if self.give_back(team, agent, why) {
                return Vec::new();
            }
        }
        let mut inner = lock(&self.inner);
        let changes = inner.board.finish(agent, ok, summary);
        let done = changes
            .updated
            .iter()
            .filter_map(|id| inner.board.get(id))
            .filter(|t| t.status == crate::protocol::TaskStatus::Done)
            .cloned()
            .collect();
        if !changes.updated.is_empty() {
            publish(&mut inner, team, agent, changes, true);
        }
        offer_next(&inner, team);
        done
    }

    /// What a worker given task `id` reads in its first message: the task's title, what
    /// done means (its description), and the results of the tasks it depends on.
    pub fn brief(&self, id: &str) -> Option<String> {
        let inner = lock(&self.inner);
        let task = inner.board.get(id)?;
        let mut out = format!("# Your task on the board: {} — {}", task.id, task.title);
        if let Some(d) = task.description.as_deref().filter(|d| !d.trim().is_empty()) {
            out.push_str(&format!("\nDone when: {}", d.trim()));
        }
        let deps: Vec<String> = task
            .depends_on
            .iter()
            .filter_map(|d| inner.board.get(d))
            .map(|d| {
                let result = d.result.as_deref().unwrap_or("(no result recorded)");
                format!("- {} ({}): {}", d.id, d.title, result.trim())
            })
            .collect();
        if !deps.is_empty() {
            out.push_str("\n\n## Results of the tasks it builds on\n");
            out.push_str(&deps.join("\n"));
        }
        Some(out)
    }

    /// Whether nothing was ever planned.
    pub fn is_empty(&self) -> bool {
        lock(&self.inner).board.tasks().is_empty()
    }

    /// Whether a task waits to be taken up or is being worked on.
    pub fn has_work(&self) -> bool {
        lock(&self.inner).board.tasks().iter().any(|t| {
            matches!(
                t.status,
                crate::protocol::TaskStatus::Ready | crate::protocol::TaskStatus::Running
            )
        })
    }

    /// The board as `get_tasks` shows it.
    pub fn board(&self) -> Value {
        json!({"tasks": view(&lock(&self.inner).board)})
    }

    /// News for the supervisor since it was last told, for its next notice batch.
    pub fn take_news(&self) -> Vec<Notice> {
        std::mem::take(&mut lock(&self.inner).news)
    }

    /// On resume: the board as the log's last `task_updated` events left it.
    pub fn restore(&self, tasks: Vec<Task>) {
        lock(&self.inner).board.restore(tasks);
    }
}

/// Emits an event per changed task; with `tell`, records what became ready and any new
/// deadlock for the supervisor.
fn publish(inner: &mut Inner, team: &Team, by: AgentId, changes: Changes, tell: bool) {
    for id in &changes.updated {
        if let Some(task) = inner.board.get(id) {
            team.emit(by, EventKind::TaskUpdated { task: task.clone() });
        }
    }
    if tell && !changes.ready.is_empty() {
        let names: Vec<String> = changes
            .ready
            .iter()
            .filter_map(|id| inner.board.get(id))
            .map(|t| format!("{} ({})", t.id, t.title))
            .collect();
        inner.news.push(Notice::new(
            Priority::Normal,
            format!(
                "Task board: now ready: {}. Spawn workers for them with task_id.",
                names.join(", ")
            ),
        ));
    }
    match inner.board.deadlock() {
        Some(stuck) => {
            let text = format!(
                "CRITICAL — task board deadlock: nothing is running or ready, and these tasks cannot go on: {}. Reopen or cancel them with update_task, or plan_tasks again.",
                stuck
                    .iter()
                    .map(|s| format!("{} ({})", s.id, s.why))
                    .collect::<Vec<_>>()
                    .join("; ")
            );
            if inner.last_deadlock.as_ref() != Some(&text) {
                inner.last_deadlock = Some(text.clone());
                inner.news.push(Notice::new(Priority::Critical, text));
                team.emit(by, EventKind::DeadlockDetected { tasks: stuck });
            }
        }
        None => inner.last_deadlock = None,
    }
}

fn view(board: &Board) -> Vec<Value> {
    board
        .tasks()
        .into_iter()
        .map(|t| {
            let mut v = json!({
                "id": t.id,
                "title": t.title,
                "status": t.status.as_str(),
                "depends_on": t.depends_on,
            });
            if let Some(a) = t.assignee {
                v["assignee"] = json!(a.to_string());
            }
            if let Some(r) = &t.role {
                v["role"] = json!(r);
            }
            if !t.paths.is_empty() {
                v["paths"] = json!(t.paths);
            }
            if !t.notes.is_empty() {
                v["notes"] = json!(t.notes);
            }
            if let Some(r) = &t.result {
                v["result"] = json!(crate::text::clip(r, 300));
            }
            v
        })
        .collect()
}
