//! A task of the session's board as events carry it (the board itself is
//! `runtime/board.rs`), the deadlock rule both sides apply, and the list front ends fold
//! from `task_updated` events.

use super::AgentId;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Waiting for dependencies.
    Pending,
    /// Every dependency is done: a worker may take it.
    Ready,
    Running,
    Done,
    Failed,
    /// A dependency failed or was cancelled: it cannot start unless that one is reopened.
    Blocked,
    Cancelled,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Ready => "ready",
            Self::Running => "running",
            Self::Done => "done",
            Self::Failed => "failed",
            Self::Blocked => "blocked",
            Self::Cancelled => "cancelled",
        }
    }

    /// Finished one way or the other.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Done | Self::Failed | Self::Cancelled)
    }

    /// Still to run: the statuses the board works out from dependencies.
    pub fn is_open(self) -> bool {
        matches!(self, Self::Pending | Self::Ready | Self::Blocked)
    }
}

/// A task on the board, as the tools and the front ends see it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Task {
    pub id: String,
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default)]
    pub depends_on: Vec<String>,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee: Option<AgentId>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The worker's result summary, once it finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// The paths (globs) it will change: its lease while it runs. A claim of a task whose
    /// paths overlap a running one's is refused, naming the holder.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// An overlapping claim waits for the holder to finish instead of being refused.
    #[serde(default, skip_serializing_if = "is_false")]
    pub wait: bool,
    /// Taken with `claim_task`: given back as ready if its worker ends without finishing.
    #[serde(default, skip_serializing_if = "is_false")]
    pub claimed: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A task a deadlock holds, and why it cannot go on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StuckTask {
    pub id: String,
    pub why: String,
}

/// The board's deadlock rule, shared by the runtime (which tells the supervisor) and the
/// front ends (which mark the stuck tasks): nothing is running or ready, yet tasks remain
/// unfinished. Those can then never start on their own.
pub fn deadlocked<'a>(tasks: impl IntoIterator<Item = &'a Task>) -> bool {
    let mut unfinished = false;
    for t in tasks {
        match t.status {
            TaskStatus::Running | TaskStatus::Ready => return false,
            s if !s.is_final() => unfinished = true,
            _ => {}
        }
    }
    unfinished
}

/// The board as a front end folds it from `task_updated` events: the latest version of
/// each task, in the order tasks were first seen (the plan's order).
#[derive(Clone, Debug, Default)]
pub struct TaskList {
    tasks: Vec<Task>,
    index: HashMap<String, usize>,
}

/// The order statuses are counted in: what is moving first, what is finished last.
const COUNT_ORDER: [TaskStatus; 7] = [
    TaskStatus::Running,
    TaskStatus::Ready,
    TaskStatus::Pending,
    TaskStatus::Blocked,
    TaskStatus::Done,
    TaskStatus::Failed,
    TaskStatus::Cancelled,
];

impl TaskList {
    /// Takes in a task's latest version; false when nothing about it changed.
    pub fn update(&mut self, task: &Task) -> bool {
        match self.index.get(&task.id) {
            Some(&i) if self.tasks[i] == *task => false,
            Some(&i) => {
                self.tasks[i] = task.clone();
                true
            }
            None => {
                self.index.insert(task.id.clone(), self.tasks.len());
                self.tasks.push(task.clone());
                true
            }
        }
    }

    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    pub fn get(&self, id: &str) -> Option<&Task> {
        self.index.get(id).map(|&i| &self.tasks[i])
    }

    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    pub fn deadlocked(&self) -> bool {
        deadlocked(&self.tasks)
    }

    /// How many tasks have each status, running first; statuses nobody has are left out.
    pub fn counts(&self) -> Vec<(TaskStatus, usize)> {
        COUNT_ORDER
            .iter()
            .map(|&s| (s, self.tasks.iter().filter(|t| t.status == s).count()))
            .filter(|(_, n)| *n > 0)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, status: TaskStatus, deps: &[&str]) -> Task {
        Task {
            id: id.into(),
            title: format!("task {id}"),
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
    fn deadlock_is_nothing_moving_with_work_left() {
        use TaskStatus::*;
        let board = |s: &[TaskStatus]| -> Vec<Task> {
            s.iter()
                .enumerate()
                .map(|(i, s)| task(&format!("T{i}"), *s, &[]))
                .collect()
        };
        assert!(!deadlocked(&board(&[])));
        assert!(!deadlocked(&board(&[Done, Failed, Cancelled])));
        assert!(deadlocked(&board(&[Failed, Blocked])));
        assert!(deadlocked(&board(&[Done, Pending])));
        assert!(!deadlocked(&board(&[Failed, Blocked, Running])));
        assert!(!deadlocked(&board(&[Failed, Blocked, Ready])));
    }

    #[test]
    fn the_list_keeps_plan_order_and_the_latest_version() {
        let mut list = TaskList::default();
        assert!(list.update(&task("T1", TaskStatus::Ready, &[])));
        assert!(list.update(&task("T2", TaskStatus::Pending, &["T1"])));
        assert!(!list.update(&task("T1", TaskStatus::Ready, &[])));
        assert!(list.update(&task("T1", TaskStatus::Failed, &[])));
        assert!(list.update(&task("T2", TaskStatus::Blocked, &["T1"])));
        let ids: Vec<&str> = list.tasks().iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["T1", "T2"]);
        assert_eq!(list.get("T1").map(|t| t.status), Some(TaskStatus::Failed));
        assert!(list.deadlocked());
        assert_eq!(
            list.counts(),
            [(TaskStatus::Blocked, 1), (TaskStatus::Failed, 1)]
        );
    }
}
