//! `Op::MergeWorker`: the user merges a worker's change on purpose (`/merge`, `squad
//! merge`, ACP's `/merge`), typically one kept unmerged on its branch because it did not
//! pass its checks. The worker is named as the user types it: its id, a unique prefix of
//! it (the tree shows eight characters), its branch `squad/<id>`, or its role when one
//! worker alone has it. What comes of it is told as any merge is (`merged`,
//! `merge_conflict`); a refusal is an `error` on the persona starting `merge:`.

use super::IsolationPolicy;
use super::error::MergeRefused;
use crate::protocol::{AgentId, EventKind, MERGE_REFUSED};
use crate::runtime::session::Session;
use crate::runtime::team::Team;
use std::sync::Arc;

/// Merges the change of the worker `name` names, off the ops loop.
pub fn serve(session: &Arc<Session>, p: &IsolationPolicy, name: &str) {
    let (session, p, name) = (session.clone(), p.clone(), name.to_string());
    tokio::spawn(async move {
        if let Err(e) = merge(&session, &p, &name).await {
            let message = format!("{MERGE_REFUSED} {e}");
            session
                .team
                .emit(session.root(), EventKind::Error { message });
        }
    });
}

async fn merge(session: &Session, p: &IsolationPolicy, name: &str) -> Result<(), MergeRefused> {
    let team = &session.team;
    let agent = resolve(session, p, name).await?;
    if !team.status(agent).is_some_and(|s| s.is_idle()) {
        return Err(MergeRefused::AtWork(agent.short()));
    }
    let merged = p.isolation.merge_on_purpose(team, agent).await?;
    // Merged files are squad's writes: a rewind takes them back without asking.
    if let Some(checkpoints) = p.checkpoints.as_ref() {
        checkpoints
            .note_written(session.workspace.root(), &merged)
            .await;
    }
    Ok(())
}

/// The worker `name` names.
async fn resolve(
    session: &Session,
    p: &IsolationPolicy,
    name: &str,
) -> Result<AgentId, MergeRefused> {
    let team = &session.team;
    let name = name.trim();
    let name = name.strip_prefix("squad/").unwrap_or(name);
    let workers: Vec<AgentId> = team.subtree(session.root()).into_iter().skip(1).collect();
    if name.is_empty() {
        let unmerged = unmerged(session, p, &workers).await;
        return Err(MergeRefused::Unnamed { unmerged });
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
            let unmerged = unmerged(session, p, &workers).await;
            let name = name.to_string();
            Err(MergeRefused::NoSuch { name, unmerged })
        }
        many => Err(MergeRefused::Ambiguous {
            name: name.to_string(),
            count: many.len(),
            listed: listed(team, many),
        }),
    }
}

/// The workers whose change is not in the workspace, as a sentence.
async fn unmerged(session: &Session, p: &IsolationPolicy, workers: &[AgentId]) -> String {
    let mut list = Vec::new();
    for id in workers {
        if p.isolation.holds_unmerged(*id).await {
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
