//! The near side of carrying a placed worker's work (issue 52 part 3). Its base, the
//! snapshot tree it was spawned on, goes as a commit of that tree alone (no history: the
//! far side needs files, not the past): as a git bundle that leaves out what the far
//! side's store already holds, or, where git does not run there, as an archive the
//! container engine unpacks. Its change comes back as a commit on that base (fetched from
//! a bundle, or made here from the engine's archive of its root) and is applied to its
//! worktree here as a patch, so the merge queue and the checks take it as they take a
//! local worker's. A change that does not apply is kept under a ref here and named.

use super::EnvError;
use super::client::Remote;
use super::protocol::{Collected, Request, base_ref};
/// Where a placed worker's returned commit is kept here: never lost to a failed apply or
/// a gc; pruned once no live or resumable worker needs it ([`super::refs::prune`]).
pub use super::refs::returned_ref;
use crate::isolation::{Git, Seal};
use base64::Engine;
use std::path::{Path, PathBuf};

/// How a worker's work travels to and from its far side.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Way {
    /// git runs there: bundles, into the store at this path (its root is a worktree).
    Git { store: String },
    /// No git there: the engine's archive upload and download of the root.
    Archive,
}

/// What the far side holds of a worker: how it came, its root there, its base commit.
#[derive(Clone, Debug)]
pub struct Carried {
    pub way: Way,
    pub root: String,
    /// The base commit (its snapshot's tree, no parent), on both sides.
    pub base: String,
}

/// Sends the tree `tree` of the repository at `repo` to the worker's root there.
pub async fn send_base(
    remote: &Remote,
    repo: &Path,
    tree: &str,
    store: &str,
) -> Result<Carried, EnvError> {
    let env = remote.env().to_string();
    let fail = |why: String| EnvError::new(&env, why);
    let root = remote.hello().root.clone();
    let (repo_b, tree_b) = (repo.to_path_buf(), tree.to_string());
    let subject = super::refs::base_subject(&root);
    let base = blocking(move || base_commit(&repo_b, &tree_b, &subject))
        .await
        .map_err(|e| fail(format!("cannot make the worker's base here: {e}")))?;
    if remote.hello().git.is_some() {
        let store = store.to_string();
        let held = remote
            .carry(|id| Request::Haves {
                id,
                store: store.clone(),
            })
            .await
            .map_err(|e| fail(format!("cannot ask what the far side holds: {e}")))?;
        let held: Vec<String> = serde_json::from_str(&held).unwrap_or_default();
        let (repo_b, base_b) = (repo.to_path_buf(), base.clone());
        let bundle = blocking(move || bundle_of(&repo_b, &base_b, &held))
            .await
            .map_err(|e| fail(format!("cannot bundle the worker's base: {e}")))?;
        let commit = base.clone();
        let store_c = store.clone();
        remote
            .carry(move |id| Request::Receive {
                id,
                store: store_c,
                commit,
                bundle,
            })
            .await
            .map_err(|e| fail(format!("cannot check the base out there: {e}")))?;
        return Ok(Carried {
            way: Way::Git { store },
            root,
            base,
        });
    }
    let (repo_b, base_b) = (repo.to_path_buf(), base.clone());
    let tar = blocking(move || {
        Git::new(&repo_b)
            .run(&["archive", "--format=tar", &base_b])
            .map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| fail(format!("cannot archive the worker's base: {e}")))?;
    remote.upload(&root, tar).await.map_err(|e| {
        fail(format!(
            "git does not run there and the base cannot go as an archive ({e}): install git there"
        ))
    })?;
    Ok(Carried {
        way: Way::Archive,
        root,
        base,
    })
}

/// Brings the worker's work there back as a commit here on its base (kept under
/// [`super::refs::returned_ref`]); `None` when it changed nothing.
pub async fn collect(
    remote: &Remote,
    repo: &Path,
    carried: &Carried,
    name: &str,
    message: &str,
) -> Result<Option<String>, EnvError> {
    let fail = |why: String| EnvError::new(remote.env(), why);
    let keep = super::refs::returned_ref(name);
    let commit = match &carried.way {
        Way::Git { .. } => {
            let (base, message) = (carried.base.clone(), message.to_string());
            let out = remote
                .carry(move |id| Request::Collect { id, base, message })
                .await
                .map_err(|e| fail(format!("cannot collect the worker's change there: {e}")))?;
            let collected: Collected = serde_json::from_str(&out)
                .map_err(|e| fail(format!("the far side's change is unreadable: {e}")))?;
            let Some(b64) = collected.bundle else {
                return Ok(None);
            };
            let repo_b = repo.to_path_buf();
            blocking(move || fetch(&repo_b, &b64, &collected.reference, &keep))
                .await
                .map_err(|e| fail(format!("cannot fetch the worker's change: {e}")))?;
            collected.commit
        }
        Way::Archive => {
            let tar = remote.download(&carried.root).await.map_err(fail)?;
            let (repo_b, base) = (repo.to_path_buf(), carried.base.clone());
            let message = message.to_string();
            blocking(move || commit_archive(&repo_b, &tar, &base, &message, &keep))
                .await
                .map_err(|e| fail(format!("cannot take the worker's change in: {e}")))?
        }
    };
    Ok((commit != carried.base).then_some(commit))
}

/// Applies the change `from`..`to` (both in `repo`) to the worktree `seal` names, as
/// uncommitted changes: what a local worker's edits would have left there.
pub fn apply(repo: &Path, seal: &Seal, from: &str, to: &str) -> Result<(), String> {
    let patch = patch(repo, from, to)?;
    if patch.is_empty() {
        return Ok(());
    }
    Git::worktree(seal)
        .run_with_input(
            &["apply", "--index", "--whitespace=nowarn", "-"],
            Some(&patch),
        )
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// The change `from`..`to` (both in `repo`) as a binary patch `git apply` takes whole.
pub fn patch(repo: &Path, from: &str, to: &str) -> Result<Vec<u8>, String> {
    Git::new(repo)
        .run(&[
            "diff",
            "--binary",
            "--no-ext-diff",
            "--no-textconv",
            "--no-renames",
            from,
            to,
        ])
        .map_err(|e| e.to_string())
}

/// A commit of `tree` alone, kept under its own ref so no gc takes it while it travels;
/// `subject` names its session and worker, so the ref names its owner.
fn base_commit(repo: &Path, tree: &str, subject: &str) -> Result<String, String> {
    let git = Git::new(repo);
    let commit = git
        .text(&["commit-tree", tree, "-m", subject])
        .map_err(|e| e.to_string())?;
    git.run(&["update-ref", &base_ref(&commit), &commit])
        .map_err(|e| e.to_string())?;
    Ok(commit)
}

/// The bundle of `base` less what the far side holds (`held`, where known here); `None`
/// when it holds `base` itself.
fn bundle_of(repo: &Path, base: &str, held: &[String]) -> Result<Option<String>, String> {
    if held.iter().any(|h| h == base) {
        return Ok(None);
    }
    let git = Git::new(repo);
    let mut args = vec!["bundle".to_string(), "create".into(), "-q".into()];
    let file = temp_path(repo, "bundle")?;
    args.push(file.display().to_string());
    args.push(base_ref(base));
    for h in held {
        let known = git
            .output(&["cat-file", "-e", &format!("{h}^{{commit}}")], None)
            .is_ok_and(|r| r.code == 0);
        if known {
            args.push(format!("^{h}"));
        }
    }
    let made = git.run(&args).map_err(|e| e.to_string());
    let bytes = made.and_then(|_| std::fs::read(&file).map_err(|e| e.to_string()));
    let _ = std::fs::remove_file(&file);
    Ok(Some(
        base64::engine::general_purpose::STANDARD.encode(bytes?),
    ))
}

fn fetch(repo: &Path, b64: &str, reference: &str, keep: &str) -> Result<(), String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|e| e.to_string())?;
    let file = temp_path(repo, "bundle")?;
    std::fs::write(&file, bytes).map_err(|e| e.to_string())?;
    let spec = format!("+{reference}:{keep}");
    let fetched = Git::new(repo).run(&["fetch", "-q", &file.display().to_string(), &spec]);
    let _ = std::fs::remove_file(&file);
    fetched.map(|_| ()).map_err(|e| e.to_string())
}

/// A commit on `base` of the files in the archive `tar` (the root there, under its own
/// name), by git's ignore rules, through an index of its own.
fn commit_archive(
    repo: &Path,
    tar: &[u8],
    base: &str,
    message: &str,
    keep: &str,
) -> Result<String, String> {
    let dir = tempfile::Builder::new()
        .prefix("squad-returned-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    let file = dir.path().join("root.tar");
    std::fs::write(&file, tar).map_err(|e| e.to_string())?;
    let files = dir.path().join("files");
    std::fs::create_dir_all(&files).map_err(|e| e.to_string())?;
    let out = std::process::Command::new("tar")
        .args(["-x", "--strip-components=1", "--no-same-owner", "-f"])
        .arg(&file)
        .arg("-C")
        .arg(&files)
        .output()
        .map_err(|e| format!("cannot run tar: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "tar: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let git = Git::new(repo);
    let common = git
        .text(&["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .map_err(|e| e.to_string())?;
    let index = dir.path().join("index");
    let common = PathBuf::from(common);
    let shadow = Git::shadow(&common, &files).with_index(&index);
    shadow.run(&["add", "-A", "."]).map_err(|e| e.to_string())?;
    let tree = shadow.text(&["write-tree"]).map_err(|e| e.to_string())?;
    let commit = git
        .text(&["commit-tree", &tree, "-p", base, "-m", message])
        .map_err(|e| e.to_string())?;
    git.run(&["update-ref", keep, &commit])
        .map_err(|e| e.to_string())?;
    Ok(commit)
}

fn temp_path(repo: &Path, ext: &str) -> Result<PathBuf, String> {
    let tag = uuid::Uuid::new_v4().simple().to_string();
    Ok(std::env::temp_dir().join(format!(
        "squad-{}-{}.{ext}",
        repo.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        &tag[..12]
    )))
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(format!("stopped: {e}")))
}
