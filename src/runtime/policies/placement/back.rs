//! A placed worker's change comes back: collected there as a commit on its base, fetched
//! (or made here from the engine's archive), and applied to its worktree here as a patch
//! from what came back before, so its worktree holds its change uncommitted, as a local
//! worker's would; verification measures it and the merge queue merges it. A change that
//! does not apply stays under `refs/squad/returned/SESSION/ID` here, and the error names it.
//!
//! Nothing is applied twice: the commit being applied is in the log, on disk, before it
//! is, so after a kill between the apply and its record the next bring-back looks whether
//! the worktree holds it ([`PlacedWorker::settle`]). When the worker goes (despawned,
//! cancelled, the session ending) its change there comes back first ([`PlacedWorker::going`])
//! and isolation keeps it as it keeps a local worker's; what cannot come back is named.

use super::PlacedWorker;
use crate::environments::carry;
use crate::isolation::{Git, Seal};
use crate::protocol::EventKind;
use crate::runtime::cx::AgentCx;
use crate::runtime::policies::isolation::IsolationPolicy;
use std::path::Path;
use std::sync::atomic::Ordering;

/// Why a change did not come back: its far side could not give it (`There`), or it came
/// back and is kept here but not in its worktree (`Here`).
pub(super) enum Failed {
    There(String),
    Here(String),
}

impl Failed {
    fn why(self) -> String {
        match self {
            Failed::There(why) | Failed::Here(why) => why,
        }
    }
}

impl PlacedWorker {
    /// Brings its change there into its worktree here.
    pub(super) async fn bring_back(&self, cx: &AgentCx) -> Result<(), String> {
        self.bring(cx).await.map_err(Failed::why)
    }

    async fn bring(&self, cx: &AgentCx) -> Result<(), Failed> {
        let _one = self.bringing.lock().await;
        // A call that runs there from now on is after what this collects.
        self.dirty.store(false, Ordering::SeqCst);
        let name = cx.id().short();
        let message = format!(
            "squad: worker {name}'s change in environment '{}'",
            self.env
        );
        let collected = carry::collect(&self.remote, &self.repo, &self.carried, &name, &message)
            .await
            .map_err(|e| {
                self.dirty.store(true, Ordering::SeqCst);
                Failed::There(e.to_string())
            })?;
        let from = crate::sync::lock(&self.applied).clone();
        let Some(commit) = collected.filter(|c| *c != from) else {
            return Ok(());
        };
        // The same files again (an archive taken anew): nothing to apply, nothing changed.
        if self.applying_is_none() && same_tree(&self.repo, &from, &commit) {
            *crate::sync::lock(&self.applied) = commit;
            return Ok(());
        }
        let iso = cx
            .policies()
            .get::<IsolationPolicy>()
            .map(|p| p.isolation.clone())
            .ok_or(Failed::Here(
                "no isolation in this session: a placed worker's change has nowhere to land".into(),
            ))?;
        let (team, agent) = (cx.team(), cx.id());
        iso.before_change(team, agent, None).await;
        iso.wait_for_files(team, agent).await;
        let kept = carry::returned_ref(&name);
        let seal = iso.seal(team, agent).ok_or_else(|| {
            Failed::Here(format!(
                "its change came back (commit {commit}, kept as {kept}) but it \
                 has no worktree here to land in"
            ))
        })?;
        let from = self.settle(cx, &seal, from).await;
        if commit == from {
            return Ok(());
        }
        self.land(cx, seal, &from, commit).await?;
        iso.after_mutation(team, agent).await;
        Ok(())
    }

    /// Applies `from`..`commit` to its worktree here (`seal`), told in the log, on disk,
    /// before it is: a kill between the apply and the record after it leaves a log that
    /// names it, and the next bring-back looks ([`PlacedWorker::settle`]).
    async fn land(
        &self,
        cx: &AgentCx,
        seal: Seal,
        from: &str,
        commit: String,
    ) -> Result<(), Failed> {
        let (team, agent) = (cx.team(), cx.id());
        *crate::sync::lock(&self.applying) = Some(commit.clone());
        team.emit(agent, EventKind::FarSide(self.far_side()));
        team.events().on_disk().await;
        let (repo, to, from_c) = (self.repo.clone(), commit.clone(), from.to_string());
        let applied = tokio::task::spawn_blocking(move || carry::apply(&repo, &seal, &from_c, &to))
            .await
            .unwrap_or_else(|e| Err(e.to_string()));
        if let Err(e) = applied {
            *crate::sync::lock(&self.applying) = None;
            return Err(Failed::Here(format!(
                "environment '{}': its change (commit {commit}, kept as {}) \
                 does not apply to its worktree here: {e}",
                self.env,
                carry::returned_ref(&agent.short())
            )));
        }
        *crate::sync::lock(&self.applied) = commit;
        *crate::sync::lock(&self.applying) = None;
        // What came back is in the log, so a resume goes on from it.
        team.emit(agent, EventKind::FarSide(self.far_side()));
        Ok(())
    }

    fn applying_is_none(&self) -> bool {
        crate::sync::lock(&self.applying).is_none()
    }

    /// The commit a killed run was applying (the log named it, not what came of it): its
    /// worktree here holds it when the reverse of its change applies there (git applies a
    /// patch whole or not at all). Returns the commit the worktree holds.
    async fn settle(&self, cx: &AgentCx, seal: &Seal, from: String) -> String {
        let Some(pending) = crate::sync::lock(&self.applying).take() else {
            return from;
        };
        let (repo, seal, from_c, to) = (
            self.repo.clone(),
            seal.clone(),
            from.clone(),
            pending.clone(),
        );
        let holds = tokio::task::spawn_blocking(move || holds(&repo, &seal, &from_c, &to))
            .await
            .unwrap_or(false);
        if !holds {
            return from;
        }
        tracing::info!(
            "environment '{}': commit {pending} was applied before the kill",
            self.env
        );
        *crate::sync::lock(&self.applied) = pending.clone();
        cx.team().emit(cx.id(), EventKind::FarSide(self.far_side()));
        pending
    }

    /// It is going (despawned, cancelled, released, the session ending): its change there
    /// comes back into its worktree here first, where isolation keeps it as it keeps a
    /// local worker's (on its branch; in its worktree for a resume). What cannot come back
    /// is named, with where it is; a root over ssh that holds it then stays.
    pub(super) async fn going(&self, cx: &AgentCx) {
        let why = match self.remote.lost() {
            Some(lost) => lost,
            // Nothing ran there since its change last came back.
            None if !self.dirty.load(Ordering::SeqCst) => return,
            None => match self.bring(cx).await {
                Ok(()) => return,
                Err(Failed::Here(why)) => {
                    cx.team().emit(cx.id(), EventKind::Error { message: why });
                    return;
                }
                Err(Failed::There(why)) => why,
            },
        };
        self.keep_there.store(true, Ordering::Relaxed);
        let message = format!(
            "worker {} went before its work in environment '{}' could come back ({why}): {}",
            cx.id().short(),
            self.env,
            self.left_there(),
        );
        cx.team().emit(cx.id(), EventKind::Error { message });
    }

    /// What of its work is here, and where the rest is (or that it is lost).
    fn left_there(&self) -> String {
        let here = self.here();
        match (self.remote.container(), &self.carried.way) {
            (Some(id), _) => format!(
                "{here}; what it did after that is lost with its container {id}, which goes with it"
            ),
            (None, carry::Way::Git { .. }) => format!(
                "{here}; what it did after that stays in {} there, if the host still has it",
                self.carried.root
            ),
            (None, carry::Way::Archive) => format!("{here}; what it did after that is lost"),
        }
    }

    /// What of its change is in its worktree here.
    fn here(&self) -> String {
        let applied = crate::sync::lock(&self.applied).clone();
        if applied == self.carried.base {
            "none of its change had come back".to_string()
        } else {
            format!("its change up to commit {applied} came back and is in its worktree here")
        }
    }

    /// Why a worker whose connection was lost ends failed, and what of its work is here.
    pub(super) fn lost_reason(&self, why: &str) -> String {
        let here = self.here();
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

/// Whether commits `a` and `b` of `repo` hold the same files.
fn same_tree(repo: &Path, a: &str, b: &str) -> bool {
    let git = Git::new(repo);
    let tree = |c: &str| git.text(&["rev-parse", &format!("{c}^{{tree}}")]).ok();
    tree(a).is_some_and(|t| Some(t) == tree(b))
}

/// Whether the worktree `seal` names holds the change `from`..`to`: its reverse applies.
fn holds(repo: &Path, seal: &Seal, from: &str, to: &str) -> bool {
    match carry::patch(repo, from, to) {
        Ok(p) if p.is_empty() => true,
        Ok(p) => Git::worktree(seal)
            .run_with_input(&["apply", "--reverse", "--check", "-"], Some(&p))
            .is_ok(),
        Err(_) => false,
    }
}
