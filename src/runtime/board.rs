//! The session's task board (seed 003): tasks with dependencies, a plan refused as a
//! whole when it has a cycle, statuses that follow from the dependencies, and deadlock
//! detection. Pure bookkeeping: the agent tools and the agent loop call it, and it says
//! what changed so they can tell the supervisor and the front ends.

use crate::protocol::{AgentId, Task, TaskStatus};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};

/// A task as the supervisor plans it.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct PlannedTask {
    pub id: String,
    pub title: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub role: Option<String>,
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// The paths (globs) it will change (`board/claim.rs`).
    #[serde(default)]
    pub paths: Vec<String>,
    /// An overlapping claim waits instead of being refused.
    #[serde(default)]
    pub wait: bool,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum BoardError {
    #[error("the plan has a dependency cycle: {}; nothing was added. Break the cycle and plan again", .0.join(" → "))]
    Cycle(Vec<String>),
    #[error(
        "task {task} depends on {dependency}, which is neither on the board nor in this plan; nothing was added"
    )]
    UnknownDependency { task: String, dependency: String },
    #[error("task {0} appears twice in the plan; nothing was added")]
    Duplicate(String),
    #[error(
        "task {id} is {status} and cannot be replaced; only pending, ready or blocked tasks can"
    )]
    NotReplaceable { id: String, status: &'static str },
    #[error("no task {0} on the board; get_tasks lists them")]
    UnknownTask(String),
    #[error("task {id} is {status}: it waits for {}; spawn workers for those first", .waiting.join(", "))]
    NotReady {
        id: String,
        status: &'static str,
        waiting: Vec<String>,
    },
    #[error("task {id} is {status}; only a ready task can be assigned")]
    NotAssignable { id: String, status: &'static str },
    #[error("task id must not be empty")]
    EmptyId,
}

/// What a change to the board did, for the notices and events it causes.
#[derive(Debug, Default, PartialEq)]
pub struct Changes {
    /// Tasks whose status (or content) changed, in board order.
    pub updated: Vec<String>,
    /// Tasks that just became ready.
    pub ready: Vec<String>,
}

/// A task that cannot go on, and why.
pub type Stuck = crate::protocol::StuckTask;

#[derive(Clone, Default)]
pub struct Board {
    /// In the order tasks were first planned.
    order: Vec<String>,
    tasks: HashMap<String, Task>,
}

impl Board {
    pub fn get(&self, id: &str) -> Option<&Task> {
        self.tasks.get(id)
    }

    /// Every task in plan order.
    pub fn tasks(&self) -> Vec<&Task> {
        self.order
            .iter()
            .filter_map(|id| self.tasks.get(id))
            .collect()
    }

    /// Adds tasks, or replaces open ones with the same id. Refused as a whole when an id
    /// repeats, a dependency is unknown, a running or finished task would be replaced, or
    /// the result would have a cycle.
    pub fn plan(&mut self, planned: Vec<PlannedTask>) -> Result<Changes, BoardError> {
        let incoming = self.incoming(&planned)?;
        self.check_dependencies(&planned, &incoming)?;
        let mut changes = self.put(planned);
        let settled = self.settle();
        changes.merge(settled);
        // A task planned ready counts as ready news too.
        Ok(changes)
    }

    /// The plan's tasks by id, refused when an id is empty or repeats, or would replace a
    /// task that is running or finished.
    fn incoming<'a>(
        &self,
        planned: &'a [PlannedTask],
    ) -> Result<BTreeMap<&'a str, &'a PlannedTask>, BoardError> {
        let mut incoming: BTreeMap<&str, &PlannedTask> = BTreeMap::new();
        for t in planned {
            let id = t.id.trim();
            if id.is_empty() {
                return Err(BoardError::EmptyId);
            }
            if incoming.insert(id, t).is_some() {
                return Err(BoardError::Duplicate(id.to_string()));
            }
            if let Some(old) = self.tasks.get(id)
                && !old.status.is_open()
            {
                return Err(BoardError::NotReplaceable {
                    id: id.to_string(),
                    status: old.status.as_str(),
                });
            }
        }
        Ok(incoming)
    }

    /// Refuses a plan with a dependency that is neither on the board nor in the plan, or
    /// one that would leave the board with a cycle.
    fn check_dependencies(
        &self,
        planned: &[PlannedTask],
        incoming: &BTreeMap<&str, &PlannedTask>,
    ) -> Result<(), BoardError> {
        // The plan's own dependencies for its tasks, the board's for the rest.
        let deps_of = |id: &str| -> Vec<String> {
            match incoming.get(id) {
                Some(t) => t.depends_on.iter().map(|d| d.trim().to_string()).collect(),
                None => self
                    .tasks
                    .get(id)
                    .map(|t| t.depends_on.clone())
                    .unwrap_or_default(),
            }
        };
        for t in planned {
            for dep in deps_of(t.id.trim()) {
                if !incoming.contains_key(dep.as_str()) && !self.tasks.contains_key(&dep) {
                    return Err(BoardError::UnknownDependency {
                        task: t.id.trim().to_string(),
                        dependency: dep,
                    });
                }
            }
        }
        let mut ids: Vec<String> = self.order.clone();
        for t in planned {
            if !self.tasks.contains_key(t.id.trim()) {
                ids.push(t.id.trim().to_string());
            }
        }
        match find_cycle(&ids, &deps_of) {
            Some(cycle) => Err(BoardError::Cycle(cycle)),
            None => Ok(()),
        }
    }

    /// Puts a checked plan on the board, each task pending until settled.
    fn put(&mut self, planned: Vec<PlannedTask>) -> Changes {
        let mut changes = Changes::default();
        for t in planned {
            let id = t.id.trim().to_string();
            if !self.tasks.contains_key(&id) {
                self.order.push(id.clone());
            }
            self.tasks.insert(
                id.clone(),
                Task {
                    id: id.clone(),
                    title: t.title,
                    description: t.description,
                    role: t.role,
                    depends_on: t.depends_on.iter().map(|d| d.trim().to_string()).collect(),
                    status: TaskStatus::Pending,
                    assignee: None,
                    notes: Vec::new(),
                    result: None,
                    paths: t.paths.iter().map(|p| p.trim().to_string()).collect(),
                    wait: t.wait,
                    claimed: false,
                },
            );
            changes.updated.push(id);
        }
        changes
    }

    /// Puts back tasks read from a log, in their order there.
    pub fn restore(&mut self, tasks: Vec<Task>) {
        for t in tasks {
            if !self.tasks.contains_key(&t.id) {
                self.order.push(t.id.clone());
            }
            self.tasks.insert(t.id.clone(), t);
        }
    }

    /// Hands a ready task to a worker.
    pub fn assign(&mut self, id: &str, agent: AgentId) -> Result<Changes, BoardError> {
        let task = self
            .tasks
            .get(id)
            .ok_or_else(|| BoardError::UnknownTask(id.to_string()))?;
        match task.status {
            TaskStatus::Ready => {}
            TaskStatus::Pending | TaskStatus::Blocked => {
                let waiting = task
                    .depends_on
                    .iter()
                    .filter(|d| {
                        self.tasks
                            .get(*d)
                            .is_none_or(|t| t.status != TaskStatus::Done)
                    })
                    .map(|d| {
                        let status = self.tasks.get(d).map_or("missing", |t| t.status.as_str());
                        format!("{d} ({status})")
                    })
                    .collect();
                return Err(BoardError::NotReady {
                    id: id.to_string(),
                    status: task.status.as_str(),
                    waiting,
                });
            }
            other => {
                return Err(BoardError::NotAssignable {
                    id: id.to_string(),
                    status: other.as_str(),
                });
            }
        }
        if let Some(t) = self.tasks.get_mut(id) {
            t.status = TaskStatus::Running;
            t.assignee = Some(agent);
        }
        Ok(Changes {
            updated: vec![id.to_string()],
            ready: Vec::new(),
        })
    }

    /// The task a worker runs, if any.
    pub fn task_of(&self, agent: AgentId) -> Option<&Task> {
        self.tasks
            .values()
            .find(|t| t.assignee == Some(agent) && t.status == TaskStatus::Running)
    }

    /// A worker finished its task: done or failed, with its result's summary.
    pub fn finish(&mut self, agent: AgentId, ok: bool, summary: Option<String>) -> Changes {
        let Some(id) = self.task_of(agent).map(|t| t.id.clone()) else {
            return Changes::default();
        };
        if let Some(t) = self.tasks.get_mut(&id) {
            t.status = if ok {
                TaskStatus::Done
            } else {
                TaskStatus::Failed
            };
            t.result = summary;
        }
        let mut changes = Changes {
            updated: vec![id],
            ready: Vec::new(),
        };
        changes.merge(self.settle());
        changes
    }

    /// The supervisor's own change: cancel a task, reopen a failed, cancelled or blocked
    /// one, or only add a note.
    pub fn update(
        &mut self,
        id: &str,
        status: Option<ManualStatus>,
        note: Option<String>,
    ) -> Result<Changes, BoardError> {
        let task = self
            .tasks
            .get_mut(id)
            .ok_or_else(|| BoardError::UnknownTask(id.to_string()))?;
        if let Some(note) = note.filter(|n| !n.trim().is_empty()) {
            task.notes.push(note);
        }
        match status {
            Some(ManualStatus::Cancelled) => task.status = TaskStatus::Cancelled,
            // A running task stays with its worker; anything finished or blocked reopens.
            Some(ManualStatus::Reopen) if task.status != TaskStatus::Running => {
                task.status = TaskStatus::Pending;
                task.assignee = None;
                task.result = None;
            }
            Some(ManualStatus::Reopen) => {}
            None => {}
        }
        let mut changes = Changes {
            updated: vec![id.to_string()],
            ready: Vec::new(),
        };
        changes.merge(self.settle());
        Ok(changes)
    }

    /// Works out pending, ready and blocked from the dependencies (in dependency order, so
    /// a block travels down a chain in one pass); returns what changed.
    fn settle(&mut self) -> Changes {
        let mut changes = Changes::default();
        let order = topological(&self.order, &|id: &str| {
            self.tasks
                .get(id)
                .map(|t| t.depends_on.clone())
                .unwrap_or_default()
        });
        for id in order {
            let Some(task) = self.tasks.get(&id) else {
                continue;
            };
            if !task.status.is_open() {
                continue;
            }
            let deps: Vec<TaskStatus> = task
                .depends_on
                .iter()
                .filter_map(|d| self.tasks.get(d).map(|t| t.status))
                .collect();
            let next = if deps.iter().any(|s| {
                matches!(
                    s,
                    TaskStatus::Failed | TaskStatus::Cancelled | TaskStatus::Blocked
                )
            }) {
                TaskStatus::Blocked
            } else if deps.iter().all(|s| *s == TaskStatus::Done) {
                TaskStatus::Ready
            } else {
                TaskStatus::Pending
            };
            if next != task.status {
                if next == TaskStatus::Ready {
                    changes.ready.push(id.clone());
                }
                changes.updated.push(id.clone());
                if let Some(t) = self.tasks.get_mut(&id) {
                    t.status = next;
                }
            }
        }
        changes
    }

    /// Unfinished tasks that can never run on their own: when nothing is running or ready
    /// and tasks remain, each of them with what it waits for.
    pub fn deadlock(&self) -> Option<Vec<Stuck>> {
        let tasks = self.tasks();
        if !crate::protocol::deadlocked(tasks.iter().copied()) {
            return None;
        }
        let stuck: Vec<Stuck> = tasks
            .iter()
            .filter(|t| !t.status.is_final())
            .map(|t| {
                let waits: Vec<String> = t
                    .depends_on
                    .iter()
                    .filter_map(|d| self.tasks.get(d))
                    .filter(|d| d.status != TaskStatus::Done)
                    .map(|d| format!("{} ({})", d.id, d.status.as_str()))
                    .collect();
                Stuck {
                    id: t.id.clone(),
                    why: format!("{} waits for {}", t.status.as_str(), waits.join(", ")),
                }
            })
            .collect();
        (!stuck.is_empty()).then_some(stuck)
    }
}

impl Changes {
    fn merge(&mut self, other: Changes) {
        for id in other.updated {
            if !self.updated.contains(&id) {
                self.updated.push(id);
            }
        }
        self.ready.extend(other.ready);
    }
}

/// What the supervisor may set by hand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ManualStatus {
    Cancelled,
    /// Back to pending (then ready or blocked as its dependencies say).
    Reopen,
}

/// The first dependency cycle among `ids`, as a path that ends where it starts
/// (`T2 → T4 → T2`), or `None`.
fn find_cycle(ids: &[String], deps: &dyn Fn(&str) -> Vec<String>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Visiting,
        Done,
    }
    let mut marks: HashMap<String, Mark> = HashMap::new();
    for start in ids {
        if marks.contains_key(start) {
            continue;
        }
        // Iterative depth-first search; `path` is the chain being explored.
        let mut path: Vec<(String, Vec<String>)> = vec![(start.clone(), deps(start))];
        marks.insert(start.clone(), Mark::Visiting);
        while let Some((node, pending)) = path.last_mut() {
            match pending.pop() {
                Some(next) => match marks.get(&next) {
                    Some(Mark::Visiting) => {
                        let from = path.iter().position(|(n, _)| *n == next).unwrap_or(0);
                        let mut cycle: Vec<String> =
                            path[from..].iter().map(|(n, _)| n.clone()).collect();
                        cycle.push(next);
                        return Some(cycle);
                    }
                    Some(Mark::Done) => {}
                    None => {
                        marks.insert(next.clone(), Mark::Visiting);
                        let d = deps(&next);
                        path.push((next, d));
                    }
                },
                None => {
                    marks.insert(node.clone(), Mark::Done);
                    path.pop();
                }
            }
        }
    }
    None
}

/// `ids` with every task after its dependencies (the graph has no cycle).
fn topological(ids: &[String], deps: &dyn Fn(&str) -> Vec<String>) -> Vec<String> {
    let mut out = Vec::with_capacity(ids.len());
    let mut seen = std::collections::HashSet::new();
    for start in ids {
        let mut stack = vec![(start.clone(), false)];
        while let Some((id, expanded)) = stack.pop() {
            if expanded {
                out.push(id);
                continue;
            }
            if !seen.insert(id.clone()) {
                continue;
            }
            stack.push((id.clone(), true));
            for d in deps(&id) {
                if !seen.contains(&d) {
                    stack.push((d, false));
                }
            }
        }
    }
    out.retain(|id| ids.contains(id));
    out
}

mod claim;
pub use claim::{ClaimRefused, covers};

#[cfg(test)]
mod tests;
