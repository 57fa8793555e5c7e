//! The task board on `exec`'s stderr: the runtime sends one `task_updated` per changed
//! task, in a burst; they are gathered and printed as one compact block when the burst
//! ends (at the next other event), so a plan of ten tasks is one block, not ten boards.

use crate::protocol::{AgentId, Task, TaskList, TaskStatus};
use crate::text::{board_line, clip, task_mark};

#[derive(Default)]
pub struct BoardLines {
    board: TaskList,
    /// Tasks changed since the last block, in the order they changed.
    changed: Vec<String>,
}

impl BoardLines {
    pub fn update(&mut self, task: &Task) {
        if self.board.update(task) && !self.changed.contains(&task.id) {
            self.changed.push(task.id.clone());
        }
    }

    /// The block for the changes since the last one: the board's counts, then one line
    /// per changed task. `who` names an agent.
    pub fn block(&mut self, who: impl Fn(AgentId) -> String) -> Option<String> {
        if self.changed.is_empty() {
            return None;
        }
        let mut out = format!("▤ {}", board_line(&self.board));
        let deadlocked = self.board.deadlocked();
        for id in std::mem::take(&mut self.changed) {
            if let Some(t) = self.board.get(&id) {
                // In a deadlock every unfinished task is held by it.
                let stuck = deadlocked && !t.status.is_final();
                out.push_str("\n  ");
                out.push_str(&self.task_line(t, stuck, &who));
            }
        }
        Some(out)
    }

    /// `● T2 running: test the parser (agentic_coder 1a2b3c4d)`, or for a task that waits
    /// `○ T3 pending: document it · needs T2 ●`.
    fn task_line(&self, t: &Task, stuck: bool, who: &impl Fn(AgentId) -> String) -> String {
        let status = if stuck {
            format!("{} (deadlocked)", t.status.as_str())
        } else {
            t.status.as_str().to_string()
        };
        let mut line = format!(
            "{} {} {status}: {}",
            task_mark(t.status, stuck),
            t.id,
            clip(&crate::text::one_line(&t.title), 100)
        );
        if let Some(a) = t.assignee {
            line.push_str(&format!(" ({})", who(a)));
        }
        // What it waits for, while it waits.
        if matches!(t.status, TaskStatus::Pending | TaskStatus::Blocked) && !t.depends_on.is_empty()
        {
            let deps: Vec<String> = t
                .depends_on
                .iter()
                .map(|d| match self.board.get(d) {
                    Some(dep) => format!("{d} {}", task_mark(dep.status, false)),
                    None => d.clone(),
                })
                .collect();
            line.push_str(&format!(" · needs {}", deps.join(", ")));
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, status: TaskStatus, deps: &[&str]) -> Task {
        Task {
            id: id.into(),
            title: format!("step {id}"),
            description: None,
            role: None,
            depends_on: deps.iter().map(|d| d.to_string()).collect(),
            status,
            assignee: None,
            notes: Vec::new(),
            result: None,
            paths: Vec::new(),
            wait: false,
            claimed: false,
        }
    }

    #[test]
    fn a_burst_of_updates_is_one_block_and_repeats_are_not_news() {
        let mut b = BoardLines::default();
        assert_eq!(b.block(|a| a.short()), None);
        b.update(&task("T1", TaskStatus::Ready, &[]));
        b.update(&task("T2", TaskStatus::Pending, &["T1"]));
        assert_eq!(
            b.block(|a| a.short()).as_deref(),
            Some(
                "▤ tasks: 1 ready · 1 pending\n  ▷ T1 ready: step T1\n  ○ T2 pending: step T2 · needs T1 ▷"
            )
        );
        b.update(&task("T2", TaskStatus::Pending, &["T1"]));
        assert_eq!(b.block(|a| a.short()), None);
        let worker = AgentId::new();
        let mut running = task("T1", TaskStatus::Running, &[]);
        running.assignee = Some(worker);
        b.update(&running);
        assert_eq!(
            b.block(|_| "coder 1a2b3c4d".into()).as_deref(),
            Some("▤ tasks: 1 running · 1 pending\n  ● T1 running: step T1 (coder 1a2b3c4d)")
        );
    }

    #[test]
    fn a_deadlock_is_said_in_the_block() {
        let mut b = BoardLines::default();
        b.update(&task("T1", TaskStatus::Failed, &[]));
        b.update(&task("T2", TaskStatus::Blocked, &["T1"]));
        assert_eq!(
            b.block(|a| a.short()).as_deref(),
            Some(
                "▤ tasks: 1 blocked · 1 failed — deadlock: nothing can run\n  ✗ T1 failed: step T1\n  ⊗ T2 blocked (deadlocked): step T2 · needs T1 ✗"
            )
        );
    }
}
