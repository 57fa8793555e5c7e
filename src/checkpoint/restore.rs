//! Putting the workspace's files back as a checkpoint had them.

use super::store::{CheckpointStore, Entry};
use super::written::under;
use super::{CheckpointError, CheckpointId};

/// What a restore did, or would have done.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Restored {
    /// Files that differ from the checkpoint and are not what squad last wrote: the user's
    /// work. Unless forced, nothing was written when there are any.
    pub conflicts: Vec<String>,
    /// Files written back to their content at the checkpoint.
    pub written: Vec<String>,
    /// Files made since the checkpoint, removed.
    pub removed: Vec<String>,
    /// The checkpoint of the files just before the restore, to take it back.
    pub undo: Option<CheckpointId>,
}

impl Restored {
    /// Whether the files were left as they were because of conflicts.
    pub fn refused(&self) -> bool {
        !self.conflicts.is_empty() && self.written.is_empty() && self.removed.is_empty()
    }
}

impl CheckpointStore {
    /// Puts every file the checkpoint `id` knows back as it was and removes the files made
    /// since (ignored files are never touched). A file the user changed (it is not what
    /// squad last wrote) is a conflict: with conflicts and no `force`, nothing is written.
    pub fn restore(&self, id: &CheckpointId, force: bool) -> Result<Restored, CheckpointError> {
        let _one = self.guard();
        let target = self.verify(id)?;
        let now = self.commit_now(&format!("before restoring {}", short(&id.0)))?;
        let entries = self.diff(&target, &now.0)?;
        let written = self.written();
        let mut record = written.load();
        let conflicts: Vec<String> = entries
            .iter()
            .filter(|e| record.get(&e.path) != Some(&e.now))
            .map(|e| e.path.clone())
            .collect();
        let mut done = Restored {
            conflicts,
            undo: Some(now),
            ..Restored::default()
        };
        if !done.conflicts.is_empty() && !force {
            return Ok(done);
        }
        let (back, gone): (Vec<&Entry>, Vec<&Entry>) =
            entries.iter().partition(|e| e.then.is_some());
        for e in &gone {
            self.remove(&e.path)?;
            done.removed.push(e.path.clone());
        }
        if !back.is_empty() {
            let input: Vec<u8> = back
                .iter()
                .flat_map(|e| e.path.bytes().chain([0]))
                .collect();
            let args = [
                "--literal-pathspecs",
                "checkout",
                target.as_str(),
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
            ];
            self.git().run_with_input(&args, Some(&input))?;
        }
        for e in &entries {
            record.insert(e.path.clone(), e.then.clone());
        }
        written.save(&record)?;
        done.written = back.iter().map(|e| e.path.clone()).collect();
        Ok(done)
    }

    /// Removes a file made since the checkpoint, and the folders it leaves empty.
    fn remove(&self, rel: &str) -> Result<(), CheckpointError> {
        let path = under(self.work_tree(), rel);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(CheckpointError::Io {
                    what: format!("removing {}", path.display()),
                    source,
                });
            }
        }
        let mut dir = path.parent();
        while let Some(d) = dir.filter(|d| *d != self.work_tree()) {
            if std::fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
        Ok(())
    }
}

fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}
