//! The shadow repository: taking a checkpoint, and what changed since one.

use super::ignores::inherited;
use super::live::Live;
use super::unreadable::{Unreadable, unreadable};
use super::user_repo::{UserRepo, locate};
use super::{CheckpointError, CheckpointId, io};
use crate::isolation::{Git, fields, path_of};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// The ref that keeps every checkpoint reachable: each has the one before as its parent.
const LAST: &str = "refs/squad/checkpoints";

/// The store's `info/attributes`, which win over every `.gitattributes`: files are kept as
/// their bytes are, so a rewind puts back exactly what was there (CRLF endings, an LFS
/// file's content), and no filter program of the user's runs on squad's store.
pub(super) const RAW: &str = "* -text -crlf -eol -ident -filter -working-tree-encoding\n";

/// One workspace's checkpoints.
#[derive(Debug)]
pub struct CheckpointStore {
    git_dir: PathBuf,
    work_tree: PathBuf,
    /// One git run of the store at a time in this process: they share its index.
    lock: Mutex<()>,
    /// Says the store is in use, so no prune removes it (see `live`).
    live: Live,
    /// The files a checkpoint could not read, not yet told (each is told once).
    unreadable: Mutex<Unreadable>,
    /// The user's repository the workspace is in, if any: its ignore rules and what a new
    /// store borrows (`borrow`).
    user: Option<UserRepo>,
}

pub use crate::protocol::{ChangedFile as Change, FileChangeKind as ChangeKind};

/// One line of `diff-tree`: a path, its blob at the checkpoint and now (`None`: absent).
pub(super) struct Entry {
    pub path: String,
    pub then: Option<String>,
    pub now: Option<String>,
}

impl CheckpointStore {
    /// `<data>/checkpoints/<first 16 hex of sha256(workspace path)>`.
    pub fn dir_for(data: &Path, workspace: &Path) -> PathBuf {
        let hash = Sha256::digest(workspace.as_os_str().as_encoded_bytes());
        let hex: String = hash.iter().take(8).map(|b| format!("{b:02x}")).collect();
        data.join("checkpoints").join(hex)
    }

    /// The store of `workspace`, made on first use.
    pub fn open(data: &Path, workspace: &Path) -> Result<Self, CheckpointError> {
        let work_tree = workspace
            .canonicalize()
            .map_err(io(format!("reading {}", workspace.display())))?;
        let git_dir = Self::dir_for(data, &work_tree);
        let live = Live::claim_dir(&git_dir, &work_tree)?;
        if !git_dir.join("HEAD").is_file() {
            let dir = git_dir.to_string_lossy();
            Git::new(&git_dir).run(&["init", "--quiet", "--bare", "--template=", &dir])?;
        }
        let user = locate(&work_tree);
        let store = Self {
            git_dir,
            work_tree,
            lock: Mutex::new(()),
            live,
            unreadable: Mutex::default(),
            user,
        };
        store.keep_bytes()?;
        store.exclude_own_folders(data)?;
        Ok(store)
    }

    pub fn work_tree(&self) -> &Path {
        &self.work_tree
    }

    pub(super) fn git(&self) -> Git<'_> {
        Git::shadow(&self.git_dir, &self.work_tree)
    }

    pub(super) fn guard(&self) -> MutexGuard<'_, ()> {
        self.lock.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The shadow repository's folder.
    pub(super) fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    pub(super) fn user(&self) -> Option<&UserRepo> {
        self.user.as_ref()
    }

    /// Writes [`RAW`]. A store made before it may hold converted blobs in its index: that
    /// index goes, and the next checkpoint starts afresh (borrowing again).
    fn keep_bytes(&self) -> Result<(), CheckpointError> {
        let path = self.git_dir.join("info/attributes");
        if std::fs::read_to_string(&path).ok().as_deref() == Some(RAW) {
            return Ok(());
        }
        let info = self.git_dir.join("info");
        std::fs::create_dir_all(&info).map_err(io(format!("creating {}", info.display())))?;
        let index = self.git_dir.join("index");
        match std::fs::remove_file(&index) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(io(format!("removing {}", index.display()))(e));
            }
            _ => {}
        }
        std::fs::write(&path, RAW).map_err(io(format!("writing {}", path.display())))
    }

    /// The user's own excludes (`info/exclude`) and, for a workspace in a subfolder of a
    /// repository, the ignore rules of the folders above it apply too (`ignores`); squad's
    /// data dir is never checkpointed when it lies inside the workspace.
    fn exclude_own_folders(&self, data: &Path) -> Result<(), CheckpointError> {
        let mut text = match &self.user {
            Some(user) => inherited(&user.top, &user.prefix, Some(&user.exclude)),
            None => String::new(),
        };
        let data = data.canonicalize().unwrap_or_else(|_| data.to_path_buf());
        if let Ok(inside) = data.strip_prefix(&self.work_tree) {
            text.push_str(&format!("\n/{}/\n", inside.to_string_lossy()));
        }
        let info = self.git_dir.join("info");
        std::fs::create_dir_all(&info).map_err(io(format!("creating {}", info.display())))?;
        let path = info.join("exclude");
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            std::fs::write(&path, text).map_err(io(format!("writing {}", path.display())))?;
        }
        Ok(())
    }

    /// Records the workspace's files as they are now; `label` is the commit's message.
    pub fn checkpoint(&self, label: &str) -> Result<CheckpointId, CheckpointError> {
        let _one = self.guard();
        self.commit_now(label)
    }

    /// [`CheckpointStore::checkpoint`] with the store's lock already held.
    pub(super) fn commit_now(&self, label: &str) -> Result<CheckpointId, CheckpointError> {
        let git = self.git();
        let first = !self.git_dir.join("index").exists();
        if first {
            let _ = self.borrow();
        }
        self.add_all()?;
        self.live.touch();
        // The first tree over a borrowed index: its blobs are the user's git's, and checking
        // that each is there (git's default, no tree cache to skip it) took 200 ms of a
        // 20,000-file checkpoint's 400. Later ones check what changed.
        let tree = if first {
            git.text(&["write-tree", "--missing-ok"])?
        } else {
            git.text(&["write-tree"])?
        };
        let last = git.output(&["rev-parse", "--verify", "--quiet", LAST], None)?;
        let parent = String::from_utf8_lossy(&last.stdout).trim().to_string();
        let mut args = vec!["commit-tree", tree.as_str(), "-m", label];
        if last.code == 0 && !parent.is_empty() {
            args.extend(["-p", parent.as_str()]);
        }
        let commit = git.text(&args)?;
        git.run(&["update-ref", LAST, &commit])?;
        Ok(CheckpointId(commit))
    }

    /// Records every file it can read; one it cannot is left as the last checkpoint had it
    /// (or out) and kept to be told, rather than failing the checkpoint.
    fn add_all(&self) -> Result<(), CheckpointError> {
        let args = ["add", "--all", "--ignore-errors", "--", "."];
        let ran = self.git().output(&args, None)?;
        let skipped = unreadable(&ran.stderr);
        if ran.code != 0 && skipped.is_empty() {
            return Err(self.git().failed(&args, &ran).into());
        }
        crate::sync::lock(&self.unreadable).found(skipped);
        Ok(())
    }

    /// The files checkpoints could not read since this was last asked (each path once
    /// for the life of the store): rewind will not restore them.
    pub fn unreadable(&self) -> Vec<String> {
        crate::sync::lock(&self.unreadable).untold()
    }

    /// The checkpoint `id` names, if this store has it.
    pub(super) fn verify(&self, id: &CheckpointId) -> Result<String, CheckpointError> {
        let bad = id.0.is_empty() || !id.0.chars().all(|c| c.is_ascii_hexdigit());
        let spec = format!("{}^{{commit}}", id.0);
        let ran = self
            .git()
            .output(&["rev-parse", "--verify", "--quiet", &spec], None)?;
        if bad || ran.code != 0 {
            return Err(CheckpointError::Unknown(id.0.clone()));
        }
        Ok(String::from_utf8_lossy(&ran.stdout).trim().to_string())
    }

    /// What changed in the workspace since `id`.
    pub fn changes_since(&self, id: &CheckpointId) -> Result<Vec<Change>, CheckpointError> {
        let mut each = self.changes_since_each(std::slice::from_ref(id))?;
        each.pop().unwrap_or(Ok(Vec::new()))
    }

    /// What changed since each of `ids`, the workspace recorded once for all of them.
    pub fn changes_since_each(
        &self,
        ids: &[CheckpointId],
    ) -> Result<Vec<Result<Vec<Change>, CheckpointError>>, CheckpointError> {
        let _one = self.guard();
        let now = self.commit_now("now")?;
        let each = ids.iter().map(|id| {
            let then = self.verify(id)?;
            let entries = self.diff(&then, &now.0)?;
            Ok(entries.into_iter().map(Entry::change).collect())
        });
        Ok(each.collect())
    }

    /// Every file that differs between two commits of the store.
    pub(super) fn diff(&self, then: &str, now: &str) -> Result<Vec<Entry>, CheckpointError> {
        let args = ["diff-tree", "-r", "-z", "--no-renames", then, now];
        let out = self.git().run(&args)?;
        let mut parts = fields(&out);
        let mut entries = Vec::new();
        while let (Some(meta), Some(path)) = (parts.next(), parts.next()) {
            let meta = String::from_utf8_lossy(meta);
            let words: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
            let blob = |mode: Option<&&str>, oid: Option<&&str>| match (mode, oid) {
                (Some(m), Some(o)) if !m.chars().all(|c| c == '0') => Some(format!("{m} {o}")),
                _ => None,
            };
            entries.push(Entry {
                path: path_of(path),
                then: blob(words.first(), words.get(2)),
                now: blob(words.get(1), words.get(3)),
            });
        }
        Ok(entries)
    }
}

impl Entry {
    fn change(self) -> Change {
        let kind = match (&self.then, &self.now) {
            (None, _) => ChangeKind::Added,
            (_, None) => ChangeKind::Deleted,
            _ => ChangeKind::Modified,
        };
        Change {
            path: self.path,
            kind,
        }
    }
}
