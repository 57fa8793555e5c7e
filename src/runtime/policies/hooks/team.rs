//! The user's team hooks, with Claude Code's names and decisions (issue 54 part 5):
//! `task_created` before a plan puts its tasks on the board (a block refuses the plan),
//! `task_completed` before a worker's board task is done (a block keeps it open and its
//! reason goes back to the worker, whose result waits), `teammate_idle` when a kept
//! worker comes to rest (a block keeps it working with the reason, at most
//! [`MAX_IDLE_BLOCKS`] times in a row). Exit 2 or `decision: "block"` blocks.

use super::layer::caller;
use super::service::{Caller, Hooks};
use crate::hooks::{HookEvent, Payload};
use crate::protocol::{AgentId, AgentResult, ResultStatus, Task, TaskStatus};
use crate::runtime::agent_tools::Checked;
use crate::runtime::board::PlannedTask;
use crate::runtime::cx::AgentCx;
use crate::runtime::team::AgentInput;
use serde_json::json;

/// Most times in a row a `teammate_idle` hook may keep one worker working.
pub const MAX_IDLE_BLOCKS: u32 = 3;

impl Hooks {
    /// `task_created` for each task of a plan, in order: the first block's task and
    /// reason (the plan is then refused whole).
    pub async fn task_created(
        &self,
        cx: &Caller<'_>,
        tasks: &[PlannedTask],
    ) -> Option<(String, String)> {
        for t in tasks {
            let task = json!({"id": t.id, "title": t.title, "description": t.description,
                "role": t.role, "depends_on": t.depends_on, "paths": t.paths});
            let d = self
                .run(cx, HookEvent::TaskCreated, &[], |p| {
                    p.task = Some(task.clone());
                    self.fill(p, cx, &t.id, &t.title, t.description.as_deref());
                })
                .await;
            if let Some(why) = d.block {
                return Some((t.id.clone(), why));
            }
        }
        None
    }

    /// `task_completed` for the task a worker is about to finish (`task` as it will be,
    /// done with the result's summary): the reason, when a hook keeps it open.
    pub async fn task_completed(&self, cx: &Caller<'_>, task: &Task) -> Option<String> {
        let value = serde_json::to_value(task).ok();
        let d = self
            .run(cx, HookEvent::TaskCompleted, &[], |p| {
                p.task = value.clone();
                self.fill(p, cx, &task.id, &task.title, task.description.as_deref());
            })
            .await;
        d.block
    }

    /// `teammate_idle` for a kept worker coming to rest: the reason, when a hook keeps it
    /// working (and has not done so [`MAX_IDLE_BLOCKS`] times in a row).
    pub async fn teammate_idle(&self, cx: &Caller<'_>) -> Option<String> {
        let d = self
            .run(cx, HookEvent::TeammateIdle, &[], |p| {
                p.teammate_name = Some(teammate(cx));
                p.team_name = Some(self.session.session_id.clone());
            })
            .await;
        let mut blocks = crate::sync::lock(&self.idle_blocks);
        let so_far = blocks.entry(cx.agent).or_default();
        match d.block.filter(|_| d.stop.is_none()) {
            Some(why) if *so_far < MAX_IDLE_BLOCKS => {
                *so_far += 1;
                Some(why)
            }
            _ => {
                blocks.remove(&cx.agent);
                None
            }
        }
    }
}

impl Hooks {
    /// Claude Code's fields of a task hook.
    fn fill(
        &self,
        p: &mut Payload<'_>,
        cx: &Caller<'_>,
        id: &str,
        title: &str,
        description: Option<&str>,
    ) {
        p.task_id = Some(id.to_string());
        p.task_subject = Some(title.to_string());
        p.task_description = description.map(str::to_string);
        p.teammate_name = Some(teammate(cx));
        p.team_name = Some(self.session.session_id.clone());
    }
}

/// How a hook names the worker: its spawn name, else its short id.
fn teammate(cx: &Caller<'_>) -> String {
    let named = (cx.team.directory().into_iter()).find(|m| m.id == cx.agent);
    named
        .and_then(|m| m.name)
        .unwrap_or_else(|| cx.agent.short())
}

/// The user's hooks of `cx`'s session, where it has them.
fn hooks_of(cx: &AgentCx) -> Option<&Hooks> {
    (cx.policies().get::<super::layer::HooksPolicy>()).map(|p| &*p.0)
}

/// A worker's result as checked (`checked`), held back when it would finish its board task
/// and a `task_completed` hook keeps the task open: the worker reads the hook's reason
/// as a correction and goes on, its task still its own.
pub async fn before_task_done(cx: &AgentCx, result: &AgentResult, checked: Checked) -> Checked {
    let passes = match &checked {
        Checked::Unchecked => true,
        Checked::Deliver(v) => v.passed,
        Checked::Correct { .. } | Checked::Kept(_) => false,
    };
    if !passes || result.status != ResultStatus::Success {
        return checked;
    }
    let (Some(hooks), Some(mut task)) = (hooks_of(cx), cx.session().tasks.running_task(cx.id()))
    else {
        return checked;
    };
    task.status = TaskStatus::Done;
    task.result = Some(result.summary.clone());
    match hooks.task_completed(&caller(cx), &task).await {
        Some(why) => Checked::Kept(format!(
            "A task_completed hook keeps task {} open: {why}\nGo on with the task, then call \
             return_results again.",
            task.id
        )),
        None => checked,
    }
}

/// A plan refused by a `task_created` hook: why, for the supervisor.
pub async fn refuses_plan(cx: &AgentCx, tasks: &[PlannedTask]) -> Option<String> {
    let (id, why) = hooks_of(cx)?.task_created(&caller(cx), tasks).await?;
    Some(format!(
        "nothing was added: a task_created hook refused task {id}: {why}"
    ))
}

/// A kept worker comes to rest (nothing queued for it): a `teammate_idle` hook may keep it
/// working, its reason the worker's next message.
pub async fn on_rest(cx: &AgentCx) {
    let (team, id): (_, AgentId) = (cx.team(), cx.id());
    if !cx.is_worker() || !team.rests_kept(id) {
        return;
    }
    let Some(hooks) = hooks_of(cx) else {
        return;
    };
    if let Some(why) = hooks.teammate_idle(&caller(cx)).await {
        let text = format!("A teammate_idle hook keeps you working: {why}");
        team.deliver(id, AgentInput::Message { text, reply: None });
    }
}
