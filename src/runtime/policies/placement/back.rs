//! A placed worker's change comes back: collected there as a commit on its base, fetched
//! (or made here from the engine's archive), and applied to its worktree here as a patch
//! from what came back before, so its worktree holds its change uncommitted, as a local
//! worker's would; verification measures it and the merge queue merges it. A change that
//! does not apply stays under `refs/squad/returned/ID` here, and the error names it.

use super::PlacedWorker;
use crate::environments::carry::{self, RETURNED_PREFIX};
use crate::runtime::cx::AgentCx;
use crate::runtime::policies::isolation::IsolationPolicy;

impl PlacedWorker {
    /// Brings its change there into its worktree here.
    pub(super) async fn bring_back(&self, cx: &AgentCx) -> Result<(), String> {
        let _one = self.bringing.lock().await;
        let name = cx.id().short();
        let message = format!(
            "squad: worker {name}'s change in environment '{}'",
            self.env
        );
        let collected = carry::collect(&self.remote, &self.repo, &self.carried, &name, &message)
            .await
            .map_err(|e| e.to_string())?;
        let from = crate::sync::lock(&self.applied).clone();
        let Some(commit) = collected.filter(|c| *c != from) else {
            return Ok(());
        };
        let iso = cx
            .policies()
            .get::<IsolationPolicy>()
            .map(|p| p.isolation.clone())
            .ok_or("no isolation in this session: a placed worker's change has nowhere to land")?;
        let (team, agent) = (cx.team(), cx.id());
        iso.before_change(team, agent, None).await;
        iso.wait_for_files(team, agent).await;
        let seal = iso.seal(team, agent).ok_or_else(|| {
            format!(
                "its change came back (commit {commit}, kept as {RETURNED_PREFIX}/{name}) but it \
                 has no worktree here to land in"
            )
        })?;
        let (repo, to) = (self.repo.clone(), commit.clone());
        let from_c = from.clone();
        let applied = tokio::task::spawn_blocking(move || carry::apply(&repo, &seal, &from_c, &to))
            .await
            .unwrap_or_else(|e| Err(e.to_string()));
        if let Err(e) = applied {
            return Err(format!(
                "environment '{}': its change (commit {commit}, kept as {RETURNED_PREFIX}/{name}) \
                 does not apply to its worktree here: {e}",
                self.env
            ));
        }
        *crate::sync::lock(&self.applied) = commit;
        // What came back is in the log, so a resume goes on from it.
        team.emit(agent, crate::protocol::EventKind::FarSide(self.far_side()));
        iso.after_mutation(team, agent).await;
        Ok(())
    }

    /// Why a worker whose connection was lost ends failed, and what of its work is here.
    pub(super) fn lost_reason(&self, why: &str) -> String {
        let applied = crate::sync::lock(&self.applied).clone();
        let here = if applied == self.carried.base {
            "none of its change had come back".to_string()
        } else {
            format!("its change up to commit {applied} came back and is in its worktree here")
        };
        let there = match &self.carried.way {
            carry::Way::Git { .. } => format!(
                "; what it did after that is in {} there, if the host still has it",
                self.carried.root
            ),
            carry::Way::Archive => String::new(),
        };
        format!("{why} ({here}{there})")
    }
}
