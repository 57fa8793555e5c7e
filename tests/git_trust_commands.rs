//! Every git command squad runs on a worker's worktree, on a worktree armed every way a
//! worker's sandbox allows at once (issue 40): its gitdir's `commondir` and the `.git`
//! file pointing at armed copies of the repository's git folder, an armed
//! `config.worktree` in a repository with `extensions.worktreeConfig`, hooks in its
//! gitdir, and a `.gitattributes` naming the armed diff and filter drivers. The worker's
//! scripts leave a marker when run. squad's runs of git there (the change's figures and
//! text, the merge, the redo, the removal, the reviewer's diff, the clean-up of an ended
//! session) are refused naming what changed and run none of them; the user's workspace
//! stays as it was; with the metadata put back, the same commands run for real, still
//! running none of the scripts left in the worktree.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::squad::git;

use squad::isolation::{Repo, Worktrees, remove_stale};
use squad::protocol::AgentId;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The worker's scripts, each leaving `<markers>/<its name>` when run.
const SCRIPTS: &[&str] = &[
    "pre-commit",
    "post-commit",
    "post-checkout",
    "post-merge",
    "post-index-change",
    "reference-transaction",
    "pre-auto-gc",
    "fsmonitor",
    "external-diff",
    "textconv",
    "clean",
    "smudge",
    "pager",
];

fn arm_scripts(dir: &Path, markers: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let body = format!(
        "#!/bin/sh\nmkdir -p '{m}'; echo ran >> '{m}/'\"$(basename \"$0\")\"\n[ -t 0 ] || cat\nexit 0\n",
        m = markers.display()
    );
    for name in SCRIPTS {
        let file = dir.join(name);
        std::fs::write(&file, &body).unwrap();
        let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
        std::fs::set_permissions(&file, mode).unwrap();
    }
}

/// Writes the armed configuration into the config file `file`.
fn arm_config(file: &Path, hooks: &Path) {
    let h = |n: &str| hooks.join(n).display().to_string();
    for (key, value) in [
        ("core.hooksPath", hooks.display().to_string()),
        ("core.fsmonitor", h("fsmonitor")),
        ("diff.external", h("external-diff")),
        ("diff.evil.textconv", h("textconv")),
        ("filter.evil.clean", h("clean")),
        ("filter.evil.smudge", h("smudge")),
        ("core.pager", h("pager")),
    ] {
        let ok = Command::new("git")
            .args(["config", "-f"])
            .arg(file)
            .args([key, &value])
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }
}

fn markers_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn every_git_command_squad_runs_in_an_armed_worktree_runs_none_of_the_workers_scripts() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    let data = tmp.path().join("data");
    let markers = tmp.path().join("ran");
    std::fs::create_dir_all(&ws).unwrap();
    git(&ws, &["init", "-q"]);
    git(&ws, &["config", "extensions.worktreeConfig", "true"]);
    std::fs::write(ws.join("a.txt"), "a\n").unwrap();
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-qm", "start"]);
    let user = || {
        (
            git(&ws, &["rev-parse", "HEAD"]),
            git(&ws, &["ls-files", "-s"]),
            std::fs::read_to_string(ws.join("a.txt")).unwrap(),
            std::fs::read_to_string(ws.join(".git/config")).unwrap(),
        )
    };
    let before = user();

    let w = Worktrees::open(Repo::discover(&ws).unwrap(), &data, "s1").unwrap();
    let agent = AgentId::new();
    let root = w.create(agent).await.unwrap();
    let gd = PathBuf::from(git(&root, &["rev-parse", "--absolute-git-dir"]).trim());
    let cd = ws.join(".git").canonicalize().unwrap();

    // What the worker may write: its worktree and its gitdir.
    let hooks = root.join(".evil/hooks");
    arm_scripts(&hooks, &markers);
    arm_scripts(&gd.join("hooks"), &markers);
    std::fs::write(root.join(".gitattributes"), "* diff=evil filter=evil\n").unwrap();
    std::fs::write(root.join("a.txt"), "changed by the worker\n").unwrap();
    let evil_git = root.join(".evilgit");
    let ok = Command::new("cp")
        .arg("-r")
        .arg(&cd)
        .arg(&evil_git)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    arm_config(&evil_git.join("config"), &hooks);
    let evil_wt = root.join(".evilwt");
    let ok = Command::new("cp")
        .arg("-r")
        .arg(&gd)
        .arg(&evil_wt)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    std::fs::write(
        evil_wt.join("commondir"),
        format!("{}\n", evil_git.display()),
    )
    .unwrap();
    arm_config(&gd.join("config.worktree"), &hooks);
    let files = [
        (
            root.join(".git"),
            format!("gitdir: {}\n", evil_wt.display()),
        ),
        (gd.join("commondir"), format!("{}\n", evil_git.display())),
    ];
    let kept: Vec<Vec<u8>> = files
        .iter()
        .map(|(f, _)| std::fs::read(f).unwrap())
        .collect();
    for (file, text) in &files {
        std::fs::write(file, text).unwrap();
    }
    // The armed worktree does run the scripts for a git that trusts it.
    let out = Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(!markers_in(&markers).is_empty(), "the scripts are armed");
    std::fs::remove_dir_all(&markers).unwrap();

    // Every command squad runs there: refused, naming what changed, and nothing runs.
    let refused = |what: &str, e: String| {
        assert!(
            e.contains("refused") && e.contains("is not what squad wrote"),
            "{what}: {e}"
        );
        assert_eq!(markers_in(&markers), Vec::<String>::new(), "{what}");
    };
    refused("figures", w.diff(agent).await.unwrap_err().to_string());
    refused("text", w.diff_text(agent).await.unwrap_err().to_string());
    refused("merge", w.merge(agent).await.unwrap_err().to_string());
    refused("redo", w.redo(agent).await.unwrap_err().to_string());
    let seal = w.seal(agent).unwrap();
    assert!(squad::isolation::diff_head(&root, Some(&seal), "a.txt").is_none());
    refused(
        "the reviewer's diff",
        "refused: is not what squad wrote".into(),
    );
    refused("removal", w.remove(agent).await.unwrap_err().to_string());
    assert_eq!(user(), before);

    // Put back: the same commands run for real, and still none of the scripts left in
    // the worktree and its gitdir (hooks, attributes naming undefined drivers) runs.
    for ((file, _), bytes) in files.iter().zip(&kept) {
        std::fs::write(file, bytes).unwrap();
    }
    std::fs::remove_file(gd.join("config.worktree")).unwrap();
    std::fs::remove_dir_all(&evil_git).unwrap();
    std::fs::remove_dir_all(&evil_wt).unwrap();
    let reviewed = squad::isolation::diff_head(&root, Some(&seal), "a.txt").unwrap();
    assert!(reviewed.contains("+changed by the worker"), "{reviewed}");
    let d = w.diff(agent).await.unwrap();
    assert!(d.files.iter().any(|f| f.path == "a.txt"), "{d:?}");
    assert!(
        w.diff_text(agent)
            .await
            .unwrap()
            .contains("+changed by the worker")
    );
    w.redo(agent).await.unwrap();
    w.merge(agent).await.unwrap();
    assert_eq!(markers_in(&markers), Vec::<String>::new());
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "changed by the worker\n"
    );

    // Armed again, left for an ended session's clean-up: kept for the user, nothing runs.
    arm_config(&gd.join("config.worktree"), &hooks);
    std::fs::write(root.join("b.txt"), "more\n").unwrap();
    drop(w);
    let mut removed = Vec::new();
    for _ in 0..100 {
        removed = remove_stale(&data);
        if !removed.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(removed.len(), 1, "{removed:?}");
    let problem = removed[0].problem.clone().unwrap_or_default();
    assert!(problem.contains("`config.worktree` was added"), "{problem}");
    assert!(root.join("b.txt").exists(), "the worker's files stay");
    assert_eq!(markers_in(&markers), Vec::<String>::new());
}
