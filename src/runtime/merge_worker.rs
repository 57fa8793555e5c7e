//! `Op::MergeWorker`: the user merges a worker's change on purpose (`/merge`, `squad
//! merge`, ACP's `/merge`), typically one kept unmerged on its branch because it did not
//! pass its checks. The worker is named as the user types it: its id, a unique prefix of
//! it (the tree shows eight characters), its branch `squad/<id>`, or its role when one
//! worker alone has it. What comes of it is told as any merge is (`merged`,
//! `merge_conflict`); a refusal is an `error` on the persona starting `merge:`.

use super::session::Session;
use super::team::Team;
use crate::protocol::{AgentId, EventKind, MERGE_REFUSED};
use std::sync::Arc;

/// Merges the change of the worker `name` names, off the ops loop.
pub fn serve(session: &Arc<Session>, name: String) {
    let session = session.clone();
    tokio::spawn(async move {
        if let Err(e) = merge(&session, &name).await {
            let message = format!("{MERGE_REFUSED} {e}");
            session
                .team
                .emit(session.root(), EventKind::Error { message });
        }
    });
}

async fn merge(session: &Session, name: &str) -> Result<(), String> {
    let team = &session.team;
    let agent = resolve(session, name).await?;
    if !team.status(agent).is_some_and(|s| s.is_idle()) {
        return Err(format!(
            "worker {} is at work: wait until its turn ends (or stop it), then merge",
            agent.short()
        ));
    }
    let merged = session.isolation.merge_on_purpose(team, agent).await?;
    // Merged files are squad's writes: a rewind takes them back without asking.
    if let Some(checkpoints) = session.checkpoints.as_ref() {
        checkpoints
            .note_written(session.workspace.root(), &merged)
            .await;
    }
    Ok(())
}

/// The worker `name` names.
async fn resolve(session: &Session, name: &str) -> Result<AgentId, String> {
    let team = &session.team;
    let name = name.trim();
    let name = name.strip_prefix("squad/").unwrap_or(name);
    let workers: Vec<AgentId> = team.subtree(session.root()).into_iter().skip(1).collect();
    if name.is_empty() {
        let list = unmerged(session, &workers).await;
        return Err(format!("name the worker to merge. {list}"));
    }
    let full = AgentId::parse(name);
    let by_id: Vec<AgentId> = (workers.iter().copied())
        .filter(|id| Some(*id) == full || id.short().starts_with(&name.to_lowercase()))
        .collect();
    let found: Vec<AgentId> = match by_id.as_slice() {
        [] => (workers.iter().copied())
            .filter(|id| team.role(*id).as_deref() == Some(name))
            .collect(),
        _ => by_id,
    };
    match found.as_slice() {
        [one] => Ok(*one),
        [] => {
            let list = unmerged(session, &workers).await;
            Err(format!("no worker `{name}` in this session. {list}"))
        }
        many => Err(format!(
            "`{name}` names {} workers ({}): give its id",
            many.len(),
            listed(team, many)
        )),
    }
}

/// The workers whose change is not in the workspace, as a sentence.
async fn unmerged(session: &Session, workers: &[AgentId]) -> String {
    let mut list = Vec::new();
    for id in workers {
        if session.isolation.holds_unmerged(*id).await {
            list.push(*id);
        }
    }
    match list.is_empty() {
        true => "No worker of this session has an unmerged change.".to_string(),
        false => format!("Unmerged: {}.", listed(&session.team, &list)),
    }
}

fn listed(team: &Team, ids: &[AgentId]) -> String {
    let each: Vec<String> = (ids.iter())
        .map(|id| format!("{} ({})", id.short(), team.role(*id).unwrap_or_default()))
        .collect();
    each.join(", ")
}
