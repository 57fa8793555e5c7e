//! Workers claiming from the board (`claim_task`), pure: one owner per task, one running
//! task per worker, and a task's declared paths (globs) as its lease while it runs, so
//! two claims whose paths overlap do not run at once. A task given back (its worker
//! ended without finishing it) is ready again with a note of what was left.

use super::{Board, BoardError, Changes};
use crate::protocol::{AgentId, Task, TaskStatus};

/// Why a claim was refused.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ClaimRefused {
    #[error("you hold task {id} ({title}): finish it (return_results) before you claim another")]
    Holds { id: String, title: String },
    #[error("no ready task for you to claim; {board}")]
    NoneReady { board: String },
    #[error("task {id} is for role `{role}`, not yours")]
    OtherRole { id: String, role: String },
    #[error(
        "task {id}'s paths ({mine}) overlap task {held} ({theirs}), which worker {} holds; claim another, or wait until it is done",
        holder.short()
    )]
    Overlap {
        id: String,
        held: String,
        holder: AgentId,
        mine: String,
        theirs: String,
        /// The task says to wait rather than be refused.
        wait: bool,
    },
    #[error(transparent)]
    Board(#[from] BoardError),
}

impl Board {
    /// Gives `agent` (of `role`) the ready task `id`, or the first ready one it may take,
    /// atomically (the caller holds the board's lock): refused while it holds one, or
    /// when the task's paths overlap a running task's.
    pub fn claim(
        &mut self,
        agent: AgentId,
        role: &str,
        id: Option<&str>,
    ) -> Result<(String, Changes), ClaimRefused> {
        if let Some(t) = self.task_of(agent) {
            return Err(ClaimRefused::Holds {
                id: t.id.clone(),
                title: t.title.clone(),
            });
        }
        let id = match id {
            Some(id) => {
                let task = self
                    .tasks
                    .get(id)
                    .ok_or_else(|| BoardError::UnknownTask(id.into()))?;
                if let Some(r) = task.role.as_deref().filter(|r| *r != role) {
                    return Err(ClaimRefused::OtherRole {
                        id: id.into(),
                        role: r.into(),
                    });
                }
                self.lease_free(task)?;
                id.to_string()
            }
            None => self.first_claimable(role)?,
        };
        let mut changes = self.assign(&id, agent)?;
        if let Some(t) = self.tasks.get_mut(&id) {
            t.claimed = true;
        }
        changes.updated.dedup();
        Ok((id, changes))
    }

    /// The first ready task of `role` (or of none) whose lease is free; else why none.
    fn first_claimable(&self, role: &str) -> Result<String, ClaimRefused> {
        let mut blocked = None;
        for t in self.tasks() {
            if t.status != TaskStatus::Ready || t.role.as_deref().is_some_and(|r| r != role) {
                continue;
            }
            match self.lease_free(t) {
                Ok(()) => return Ok(t.id.clone()),
                Err(e) => {
                    blocked.get_or_insert(e);
                }
            }
        }
        Err(blocked.unwrap_or_else(|| ClaimRefused::NoneReady {
            board: self.summary(),
        }))
    }

    /// The ready tasks `role` may claim now (their leases free), in plan order.
    pub fn claimable(&self, role: &str) -> Vec<&Task> {
        (self.tasks().into_iter())
            .filter(|t| t.status == TaskStatus::Ready)
            .filter(|t| t.role.as_deref().is_none_or(|r| r == role))
            .filter(|t| self.lease_free(t).is_ok())
            .collect()
    }

    /// Hands the ready task `id` to `agent` as a supervisor's spawn does (`spawn_agent`
    /// with `task_id`), checking its lease like a claim: refused while a running task's
    /// paths overlap its own, naming the holder.
    pub fn assign_leased(&mut self, id: &str, agent: AgentId) -> Result<Changes, ClaimRefused> {
        let task = self
            .tasks
            .get(id)
            .ok_or_else(|| BoardError::UnknownTask(id.into()))?;
        self.lease_free(task)?;
        Ok(self.assign(id, agent)?)
    }

    /// Refuses `task` while a running task's paths overlap its own.
    fn lease_free(&self, task: &Task) -> Result<(), ClaimRefused> {
        if task.paths.is_empty() {
            return Ok(());
        }
        for held in self.tasks.values() {
            if held.status != TaskStatus::Running || held.id == task.id {
                continue;
            }
            if let (Some(holder), true) = (held.assignee, overlaps(&task.paths, &held.paths)) {
                return Err(ClaimRefused::Overlap {
                    id: task.id.clone(),
                    held: held.id.clone(),
                    holder,
                    mine: task.paths.join(", "),
                    theirs: held.paths.join(", "),
                    wait: task.wait,
                });
            }
        }
        Ok(())
    }

    /// `agent`'s running task, given back: ready again (or pending, as its dependencies
    /// say), with a note of why and what was left. Nothing when it holds none.
    pub fn give_back(&mut self, agent: AgentId, note: &str) -> Changes {
        let Some(id) = self.task_of(agent).map(|t| t.id.clone()) else {
            return Changes::default();
        };
        if let Some(t) = self.tasks.get_mut(&id) {
            t.status = TaskStatus::Pending;
            t.assignee = None;
            t.notes.push(note.to_string());
        }
        let mut changes = Changes {
            updated: vec![id],
            ready: Vec::new(),
        };
        changes.merge(self.settle());
        changes
    }

    /// The board in a line: counts by status, and who runs what.
    pub fn summary(&self) -> String {
        let tasks = self.tasks();
        let count = |s: TaskStatus| tasks.iter().filter(|t| t.status == s).count();
        let running: Vec<String> = (tasks.iter())
            .filter(|t| t.status == TaskStatus::Running)
            .map(|t| match t.assignee {
                Some(a) => format!("{} by {}", t.id, a.short()),
                None => t.id.clone(),
            })
            .collect();
        format!(
            "the board has {} done, {} running{}, {} waiting for dependencies, {} ready",
            count(TaskStatus::Done),
            running.len(),
            if running.is_empty() {
                String::new()
            } else {
                format!(" ({})", running.join(", "))
            },
            count(TaskStatus::Pending) + count(TaskStatus::Blocked),
            count(TaskStatus::Ready),
        )
    }
}

/// Whether two sets of path globs may name a common file. Two plain paths overlap when
/// equal; a glob and a path when the glob matches it; two globs when the literal part
/// before the first wildcard of one is a prefix of the other's (on the safe side).
pub fn overlaps(a: &[String], b: &[String]) -> bool {
    a.iter().any(|x| b.iter().any(|y| pair_overlaps(x, y)))
}

/// The first path of `paths` (globs) that `path` is outside of all, or none.
pub fn covers(paths: &[String], path: &str) -> bool {
    let path = clean(path);
    paths.iter().any(|p| {
        let p = clean(p);
        if !is_glob(p) {
            return p == path || path.starts_with(&format!("{}/", p.trim_end_matches('/')));
        }
        globset::Glob::new(p).is_ok_and(|g| g.compile_matcher().is_match(path))
    })
}

fn pair_overlaps(a: &str, b: &str) -> bool {
    let (a, b) = (clean(a), clean(b));
    match (is_glob(a), is_glob(b)) {
        (false, false) => {
            a == b
                || a.starts_with(&format!("{}/", b.trim_end_matches('/')))
                || b.starts_with(&format!("{}/", a.trim_end_matches('/')))
        }
        (true, false) => covers(&[a.to_string()], b),
        (false, true) => covers(&[b.to_string()], a),
        (true, true) => {
            let (pa, pb) = (literal_prefix(a), literal_prefix(b));
            pa.starts_with(pb) || pb.starts_with(pa)
        }
    }
}

fn clean(p: &str) -> &str {
    p.trim().trim_start_matches("./")
}

fn is_glob(p: &str) -> bool {
    p.contains(['*', '?', '[', '{'])
}

fn literal_prefix(p: &str) -> &str {
    p.find(['*', '?', '[', '{']).map_or(p, |i| &p[..i])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::board::PlannedTask;

    fn v(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|x| x.to_string()).collect()
    }

    fn task(id: &str, paths: &[&str], wait: bool) -> PlannedTask {
        PlannedTask {
            id: id.into(),
            title: format!("task {id}"),
            description: None,
            role: None,
            depends_on: Vec::new(),
            paths: v(paths),
            wait,
        }
    }

    #[test]
    fn paths_overlap_when_they_may_name_a_common_file() {
        assert!(overlaps(&v(&["src/a.rs"]), &v(&["./src/a.rs"])));
        assert!(overlaps(&v(&["src/**"]), &v(&["src/parser/mod.rs"])));
        assert!(overlaps(&v(&["src/parser/**"]), &v(&["src/**/*.rs"])));
        assert!(overlaps(&v(&["src"]), &v(&["src/a.rs"])));
        assert!(!overlaps(&v(&["src/lexer/**"]), &v(&["src/parser/**"])));
        assert!(!overlaps(&v(&["docs/*.md"]), &v(&["src/a.rs"])));
        assert!(covers(&v(&["src/lexer/**"]), "src/lexer/token.rs"));
        assert!(!covers(&v(&["src/lexer/**"]), "src/parser.rs"));
    }

    #[test]
    fn one_owner_per_task_one_task_per_worker_and_leases_keep_writers_apart() {
        let mut b = Board::default();
        b.plan(vec![
            task("T1", &["src/lexer/**"], false),
            task("T2", &["src/parser/**"], false),
            task("T3", &["src/lexer/token.rs"], true),
        ])
        .unwrap();
        let (w1, w2, w3) = (AgentId::new(), AgentId::new(), AgentId::new());
        assert_eq!(b.claim(w1, "coder", None).unwrap().0, "T1");
        // One task per worker.
        assert!(
            matches!(b.claim(w1, "coder", None), Err(ClaimRefused::Holds { id, .. }) if id == "T1")
        );
        // T3 overlaps T1, so the next free one is T2.
        assert_eq!(b.claim(w2, "coder", None).unwrap().0, "T2");
        // T1 is taken: no second owner.
        assert!(b.claim(w3, "coder", Some("T1")).is_err());
        match b.claim(w3, "coder", None) {
            Err(ClaimRefused::Overlap {
                held, holder, wait, ..
            }) => {
                assert_eq!((held.as_str(), holder, wait), ("T1", w1, true));
            }
            other => panic!("{other:?}"),
        }
        b.finish(w1, true, Some("lexer done".into()));
        assert_eq!(b.claim(w3, "coder", None).unwrap().0, "T3");
    }

    #[test]
    fn a_task_given_back_is_ready_again_with_a_note() {
        let mut b = Board::default();
        b.plan(vec![task("T1", &[], false)]).unwrap();
        let w = AgentId::new();
        b.claim(w, "coder", None).unwrap();
        let changes = b.give_back(w, "left by worker w: it failed");
        assert_eq!(changes.ready, ["T1"]);
        let t = b.get("T1").unwrap();
        assert_eq!((t.status, t.assignee), (TaskStatus::Ready, None));
        assert_eq!(t.notes, ["left by worker w: it failed"]);
        assert!(b.give_back(w, "again").updated.is_empty());
    }
}
