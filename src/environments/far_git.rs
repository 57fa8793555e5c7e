//! The far side's part in carrying a worker's work (issue 52 part 3): its base comes as a
//! git bundle into a store that lasts across workers (`Haves` says what it already
//! holds, so the next bundle leaves that out), the worker's root is a worktree of that
//! store, and its change goes back as a bundle of the commits since its base. The git
//! runs are the tool server's own, outside the worker's sandbox; nothing here is a tool
//! the model calls.

use super::protocol::{COLLECTED_REF, Collected, Outcome, Request, WireError, base_ref};
use crate::isolation::Git;
use crate::tools::ToolError;
use base64::Engine;
use std::path::{Path, PathBuf};

/// `git --version` here, or `None` when git does not run here.
pub fn version() -> Option<String> {
    let out = std::process::Command::new("git")
        .arg("--version")
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Answers one of the carrying requests for the worker whose root is `root`.
pub async fn answer(root: &Path, request: Request) -> Outcome {
    let root = root.to_path_buf();
    let done = tokio::task::spawn_blocking(move || match request {
        Request::Haves { store, .. } => haves(Path::new(&store)),
        Request::Receive {
            store,
            commit,
            bundle,
            ..
        } => receive(Path::new(&store), &root, &commit, bundle.as_deref()),
        Request::Collect { base, message, .. } => collect(&root, &base, &message),
        Request::Release { store, .. } => release(Path::new(&store), &root),
        Request::Holds { base, store, .. } => holds(&root, &base, store.is_some()),
        _ => Err("not a carrying request".to_string()),
    })
    .await
    .unwrap_or_else(|e| Err(format!("the git run stopped: {e}")));
    match done {
        Ok(output) => Outcome::Output(output),
        Err(why) => Outcome::Error(WireError::from(ToolError::Failed(why))),
    }
}

fn git_err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn is_store(store: &Path) -> bool {
    store.join("HEAD").is_file() && store.join("objects").is_dir()
}

fn haves(store: &Path) -> Result<String, String> {
    if !is_store(store) {
        return Ok("[]".into());
    }
    let out = Git::new(store)
        .text(&["for-each-ref", "--format=%(objectname)", "refs/squad/have/"])
        .map_err(git_err)?;
    let ids: Vec<&str> = out.lines().filter(|l| !l.is_empty()).collect();
    serde_json::to_string(&ids).map_err(git_err)
}

fn receive(
    store: &Path,
    root: &Path,
    commit: &str,
    bundle: Option<&str>,
) -> Result<String, String> {
    if !is_store(store) {
        std::fs::create_dir_all(store)
            .map_err(|e| format!("cannot make the store {}: {e}", store.display()))?;
        Git::new(store)
            .run(&["init", "-q", "--bare", "."])
            .map_err(git_err)?;
    }
    let git = Git::new(store);
    if let Some(b64) = bundle {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| format!("the base bundle is not base64: {e}"))?;
        let file = temp_in(store, "base", "bundle");
        std::fs::write(&file, bytes).map_err(git_err)?;
        let target = format!("+{}:refs/squad/have/{commit}", base_ref(commit));
        let fetched = git.run(&["fetch", "-q", &file.display().to_string(), &target]);
        let _ = std::fs::remove_file(&file);
        fetched.map_err(git_err)?;
    }
    let spec = format!("{commit}^{{commit}}");
    if git.run(&["cat-file", "-e", &spec]).is_err() {
        return Err(format!(
            "the store {} does not hold the base {commit} and no bundle came",
            store.display()
        ));
    }
    // The root is empty (the tool server made it); git takes an empty folder. A root of
    // the same name that went away is still registered: forgotten first.
    let root_s = root.display().to_string();
    let _ = git.run(&["worktree", "prune"]);
    git.run(&["worktree", "add", "-q", "--detach", &root_s, commit])
        .map_err(git_err)?;
    Ok(commit.to_string())
}

fn collect(root: &Path, base: &str, message: &str) -> Result<String, String> {
    let git = Git::new(root);
    git.run(&["add", "-A"]).map_err(git_err)?;
    let staged = git
        .output(&["diff", "--cached", "--quiet"], None)
        .map_err(git_err)?;
    if staged.code != 0 {
        git.run(&["commit", "-q", "--no-verify", "-m", message])
            .map_err(git_err)?;
    }
    let head = git.text(&["rev-parse", "HEAD"]).map_err(git_err)?;
    if head == base {
        return serde_json::to_string(&Collected {
            commit: head,
            reference: String::new(),
            bundle: None,
        })
        .map_err(git_err);
    }
    // One ref per root: workers of one store collect at the same time.
    let name = root.file_name().map(|n| n.to_string_lossy().into_owned());
    let reference = format!("{COLLECTED_REF}/{}", name.unwrap_or_default());
    git.run(&["update-ref", &reference, &head])
        .map_err(git_err)?;
    let common = git
        .text(&["rev-parse", "--git-common-dir"])
        .map_err(git_err)?;
    let file = temp_in(&root.join(&common), "collected", "bundle");
    let file_s = file.display().to_string();
    let made = git.run(&[
        "bundle",
        "create",
        "-q",
        &file_s,
        &reference,
        &format!("^{base}"),
    ]);
    let bytes = made
        .map_err(git_err)
        .and_then(|_| std::fs::read(&file).map_err(git_err));
    let _ = std::fs::remove_file(&file);
    serde_json::to_string(&Collected {
        commit: head,
        reference,
        bundle: Some(base64::engine::general_purpose::STANDARD.encode(bytes?)),
    })
    .map_err(git_err)
}

/// Whether `root` still holds a worker's work: a worktree whose commits hold `base`
/// (`by_git`), else a folder with files in it.
fn holds(root: &Path, base: &str, by_git: bool) -> Result<String, String> {
    let has_files = std::fs::read_dir(root).is_ok_and(|mut d| d.next().is_some());
    if !has_files {
        return Err(format!("{} is empty or gone", root.display()));
    }
    if !by_git {
        return Ok("yes".into());
    }
    let git = Git::new(root);
    let spec = format!("{base}^{{commit}}");
    let ours = root.join(".git").exists()
        && git.run(&["cat-file", "-e", &spec]).is_ok()
        && git
            .output(&["merge-base", "--is-ancestor", base, "HEAD"], None)
            .is_ok_and(|r| r.code == 0);
    if !ours {
        return Err(format!(
            "{} is not a worktree on the worker's base {base}",
            root.display()
        ));
    }
    Ok("yes".into())
}

fn release(store: &Path, root: &Path) -> Result<String, String> {
    if is_store(store) {
        let root_s = root.display().to_string();
        let _ = Git::new(store).run(&["worktree", "remove", "--force", &root_s]);
        let _ = Git::new(store).run(&["worktree", "prune"]);
    }
    if root.exists() {
        let _ = std::fs::remove_dir_all(root);
    }
    Ok(String::new())
}

fn temp_in(dir: &Path, what: &str, ext: &str) -> PathBuf {
    let tag = uuid::Uuid::new_v4().simple().to_string();
    dir.join(format!("squad-{what}-{}.{ext}", &tag[..12]))
}
