//! A task's declared paths as its lease beyond the claim (`board/claim.rs` keeps claims
//! apart): a worker that writes outside its task's paths is told so in the write's
//! result (the write stands), and a merge conflict names the leases on its files, so the
//! supervisor sees which task and worker held what.

use super::TaskBoard;
use crate::protocol::{AgentId, Task, TaskStatus};
use crate::runtime::board::covers;
use crate::sync::lock;

impl TaskBoard {
    /// What the worker `agent` reads after writing `written` (paths relative to its root)
    /// when some lie outside its task's declared paths; `None` otherwise.
    ///
    /// Trigger (the only one): the worker runs a board task that declared paths (a state
    /// its supervisor set with `plan_tasks`), and a write, edit or patch of it changed a
    /// file none of them covers. A worker whose task declared no paths, or one writing
    /// inside them, hears nothing
    /// (`tests/capable_models.rs::two_workers_coordinate_through_messages_and_hear_nothing_else`).
    pub fn outside_lease(&self, agent: AgentId, written: &[String]) -> Option<String> {
        let (id, paths) = self.lease_of(agent)?;
        let outside: Vec<&str> = (written.iter())
            .filter(|p| !covers(&paths, p))
            .map(String::as_str)
            .collect();
        if outside.is_empty() {
            return None;
        }
        Some(format!(
            "[squad] {} outside task {id}'s declared paths ({}): the write was made, but \
             another task may hold it; keep to your paths, or tell your supervisor why you \
             need more.",
            outside.join(", "),
            paths.join(", ")
        ))
    }

    /// The leases a merge conflict of `agent`'s change met, in a line for its supervisor:
    /// for each conflicting file, the tasks whose declared paths cover it and who holds
    /// (or held) them, and whether it was outside `agent`'s own task's paths. `None` when
    /// no task declared paths on any of them.
    pub fn leases_on(&self, agent: AgentId, files: &[String]) -> Option<String> {
        let inner = lock(&self.inner);
        let tasks = inner.board.tasks();
        let own = tasks
            .iter()
            .find(|t| is_of(t, agent) && !t.paths.is_empty());
        let mut said = Vec::new();
        for file in files {
            let holders: Vec<String> = (tasks.iter())
                .filter(|t| !is_of(t, agent) && t.assignee.is_some())
                .filter(|t| covers(&t.paths, file))
                .map(|t| held_by(t))
                .collect();
            let mut line = match holders.is_empty() {
                true => String::new(),
                false => format!("{file} is in {}", holders.join(" and ")),
            };
            if let Some(t) = own.filter(|t| !covers(&t.paths, file)) {
                let sep = if line.is_empty() { file.as_str() } else { ";" };
                line = format!(
                    "{line}{sep} outside this worker's task {} ({})",
                    t.id,
                    t.paths.join(", ")
                );
            }
            if !line.is_empty() {
                said.push(line);
            }
        }
        (!said.is_empty()).then(|| format!("Leases: {}.", said.join("; ")))
    }
}

/// `agent`'s own task: the one it runs, or ran to the end.
fn is_of(t: &Task, agent: AgentId) -> bool {
    t.assignee == Some(agent)
}

/// `task T1 (paths src/**) of worker 1a2b3c4d, done`.
fn held_by(t: &Task) -> String {
    let who = t.assignee.map(|a| a.short()).unwrap_or_default();
    let state = match t.status {
        TaskStatus::Running => "holding it now".to_string(),
        s => s.as_str().to_string(),
    };
    format!(
        "task {} ({}) of worker {who}, {state}",
        t.id,
        t.paths.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::board::PlannedTask;
    use crate::runtime::events::EventSink;
    use crate::runtime::team::Team;

    fn planned(id: &str, paths: &[&str]) -> PlannedTask {
        PlannedTask {
            id: id.into(),
            title: format!("task {id}"),
            description: None,
            role: None,
            depends_on: Vec::new(),
            paths: paths.iter().map(|p| p.to_string()).collect(),
            wait: false,
        }
    }

    fn team() -> Team {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        Team::new(EventSink::new(None, 0, tx), AgentId::new())
    }

    #[test]
    fn a_write_outside_the_tasks_paths_is_named_with_the_globs_and_inside_is_quiet() {
        let (team, board) = (team(), TaskBoard::default());
        let tasks = vec![
            planned("T1", &["src/lexer/**", "docs/lexer.md"]),
            planned("T2", &[]),
        ];
        board.plan(&team, team.root(), tasks).unwrap();
        let (w1, w2) = (AgentId::new(), AgentId::new());
        board.claim(&team, w1, "coder", Some("T1")).unwrap();
        board.claim(&team, w2, "coder", Some("T2")).unwrap();
        let inside = [
            "src/lexer/token.rs".to_string(),
            "docs/lexer.md".to_string(),
        ];
        assert_eq!(board.outside_lease(w1, &inside), None);
        let note = board
            .outside_lease(w1, &["src/parser.rs".into(), "src/lexer/a.rs".into()])
            .unwrap();
        assert!(note.starts_with("[squad] src/parser.rs outside task T1's declared paths (src/lexer/**, docs/lexer.md)"), "{note}");
        // An undeclared task, and a worker with no task, behave as today.
        assert_eq!(board.outside_lease(w2, &["anything".into()]), None);
        assert_eq!(board.outside_lease(AgentId::new(), &["x".into()]), None);
    }

    #[test]
    fn a_conflict_names_the_task_and_worker_whose_lease_covers_the_file() {
        let (team, board) = (team(), TaskBoard::default());
        let tasks = vec![planned("T1", &["src/**"]), planned("T2", &["docs/**"])];
        board.plan(&team, team.root(), tasks).unwrap();
        let (w1, w2) = (AgentId::new(), AgentId::new());
        board.claim(&team, w1, "coder", Some("T1")).unwrap();
        board.claim(&team, w2, "coder", Some("T2")).unwrap();
        board.worker_finished(&team, w1, true, Some("done".into()));
        let named = board.leases_on(w2, &["src/a.rs".into()]).unwrap();
        assert_eq!(
            named,
            format!(
                "Leases: src/a.rs is in task T1 (src/**) of worker {}, done; outside this \
                 worker's task T2 (docs/**).",
                w1.short()
            )
        );
        assert_eq!(board.leases_on(w2, &["docs/b.md".into()]), None);
    }
}
