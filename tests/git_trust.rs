//! squad's git trusts nothing a worker can write (issue 40). The real `squad exec` against
//! the mock server on real git repositories, with the OS sandbox on: a worker whose
//! `run_command` (inside its sandbox) arms its worktree's git metadata with scripts of its
//! own (hooks, fsmonitor, external diff, textconv, clean/smudge filters, pager) and points
//! git at them, through its gitdir's `commondir`, through the worktree's `.git` file, or
//! through `config.worktree` (in a repository with `extensions.worktreeConfig`, as
//! `git sparse-checkout` sets it). Each armed script, if anything outside the sandbox ran
//! it, would leave a marker in a folder the sandbox may not write. After each run: no
//! marker, the supervisor told why the result was refused (naming the file), the user's
//! workspace and git as they were, and the worker's change kept in its worktree.
#![cfg(target_os = "linux")]
// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// How the worker points git at its scripts.
#[derive(Clone, Copy, Debug)]
enum Attack {
    /// Its gitdir's `commondir` names a copy of the repository's git folder, armed.
    CommonDir,
    /// The worktree's `.git` file names a copy of its gitdir whose `commondir` names an
    /// armed copy of the repository's git folder.
    DotGit,
    /// Its gitdir's `config.worktree`, read because the repository has
    /// `extensions.worktreeConfig` (the worker also tries to set that itself).
    WorktreeConfig,
}

/// The shell line that writes the armed scripts in the worktree (`$WT/.evil/hooks/<name>`,
/// each leaving `<markers>/<name>` when run, and passing its input on, so a filter or a
/// textconv still "works"), and the configuration that names them, into `$CFG`.
fn arm(markers: &Path) -> String {
    let m = markers.display();
    format!(
        r#"set -e
WT=$PWD
GD=$(git rev-parse --absolute-git-dir)
CD=$(git rev-parse --path-format=absolute --git-common-dir)
mkdir -p "$WT/.evil/hooks"
cat > "$WT/.evil/arm.sh" <<'EOF'
#!/bin/sh
mkdir -p "{m}" 2>/dev/null; echo ran >> "{m}/$(basename "$0")" 2>/dev/null
[ -t 0 ] || cat
exit 0
EOF
chmod +x "$WT/.evil/arm.sh"
for h in pre-commit post-commit pre-merge-commit post-checkout post-merge post-rewrite \
         post-index-change reference-transaction pre-auto-gc fsmonitor external-diff \
         textconv clean smudge pager; do
  cp "$WT/.evil/arm.sh" "$WT/.evil/hooks/$h"
done
armed() {{
  git config -f "$1" core.hooksPath "$WT/.evil/hooks"
  git config -f "$1" core.fsmonitor "$WT/.evil/hooks/fsmonitor"
  git config -f "$1" diff.external "$WT/.evil/hooks/external-diff"
  git config -f "$1" diff.evil.textconv "$WT/.evil/hooks/textconv"
  git config -f "$1" filter.evil.clean "$WT/.evil/hooks/clean"
  git config -f "$1" filter.evil.smudge "$WT/.evil/hooks/smudge"
  git config -f "$1" core.pager "$WT/.evil/hooks/pager"
}}
printf '* diff=evil filter=evil\n' > "$WT/.gitattributes"
echo 'changed by the worker' > "$WT/a.txt"
"#
    )
}

/// The rest of the worker's command for each attack.
fn redirect(attack: Attack) -> &'static str {
    match attack {
        Attack::CommonDir => {
            r#"cp -r "$CD" "$WT/.evilgit"
armed "$WT/.evilgit/config"
printf '%s\n' "$WT/.evilgit" > "$GD/commondir"
echo ARMED
"#
        }
        Attack::DotGit => {
            r#"cp -r "$CD" "$WT/.evilgit"
armed "$WT/.evilgit/config"
cp -r "$GD" "$WT/.evilwt"
printf '%s\n' "$WT/.evilgit" > "$WT/.evilwt/commondir"
printf 'gitdir: %s\n' "$WT/.evilwt" > "$WT/.git"
echo ARMED
"#
        }
        Attack::WorktreeConfig => {
            r#"git config extensions.worktreeConfig true 2>/dev/null && echo SET-EXTENSION || echo EXTENSION-DENIED
armed "$GD/config.worktree"
echo ARMED
"#
        }
    }
}

/// The file the refusal must name.
fn named(attack: Attack) -> &'static str {
    match attack {
        Attack::CommonDir => "`commondir` was changed",
        Attack::DotGit => "`.git` was changed",
        Attack::WorktreeConfig => "`config.worktree` was added",
    }
}

fn repo(worktree_config: bool) -> Sandbox {
    let sb = Sandbox::new();
    sb.workspace_config("[verify]\nenabled = false\n");
    git(sb.ws(), &["init", "-q"]);
    if worktree_config {
        // What `git sparse-checkout init` does to a user's repository.
        git(sb.ws(), &["config", "extensions.worktreeConfig", "true"]);
    }
    sb.write("a.txt", "a\n");
    git(sb.ws(), &["add", "-A"]);
    git(sb.ws(), &["commit", "-qm", "start"]);
    // The user's uncommitted edit: it must stay as it is.
    sb.write("a.txt", "a, edited by the user\n");
    sb
}

/// Everything of the user's that must not change: HEAD, the index, status, files, config.
fn users_state(ws: &Path) -> (String, String, String, String, String) {
    (
        git(ws, &["rev-parse", "HEAD"]),
        git(ws, &["ls-files", "-s"]),
        git(ws, &["status", "--porcelain", "--untracked-files=all"]),
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        std::fs::read_to_string(ws.join(".git/config")).unwrap(),
    )
}

fn last_result(body: &Value) -> String {
    tool_messages(body)
        .last()
        .map(|(_, c)| c.clone())
        .unwrap_or_default()
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

async fn attack(attack: Attack) {
    let mock = MockServer::start().await;
    let sb = repo(matches!(attack, Attack::WorktreeConfig));
    let markers: PathBuf = sb.home.path().join("ran");
    let before = users_state(sb.ws());
    let script = format!("{}{}", arm(&markers), redirect(attack));
    mock.set_responder(move |body| {
        if is_worker(body) {
            return match tool_count(body) {
                0 => MockResponse::tool_call(
                    "c",
                    "run_command",
                    &json!({ "command": script }).to_string(),
                ),
                _ => MockResponse::tool_call(
                    "r",
                    "return_results",
                    &json!({"result": {"status": "success", "summary": "changed a.txt",
                        "artifacts": [{"file_path": "a.txt", "description": "it",
                            "change_type": "modified"}],
                        "known_issues": []}})
                    .to_string(),
                ),
            };
        }
        match tool_count(body) {
            0 => spawn("implementer", "change a.txt"),
            1 => MockResponse::tool_call("wait", "wait_for_agents", "{}"),
            _ => MockResponse::text("done"),
        }
    });
    sb.exec(&mock, &["--approval", "auto", "change a.txt"])
        .await
        .assert_ok();
    let ran = mock
        .requests()
        .iter()
        .map(|r| &r.body)
        .find(|b| is_worker(b) && tool_count(b) == 1)
        .map(last_result)
        .expect("the worker's command ran");
    assert!(ran.contains("ARMED"), "{attack:?}: {ran}");
    if let Attack::WorktreeConfig = attack {
        assert!(ran.contains("EXTENSION-DENIED"), "{ran}");
    }
    let waited = mock
        .requests()
        .iter()
        .rev()
        .map(|r| &r.body)
        .filter(|b| !is_worker(b))
        .find(|b| tool_count(b) == 2)
        .map(last_result)
        .expect("the persona waited");

    // Nothing of the worker's ran outside its sandbox.
    assert_eq!(markers_in(&markers), Vec::<String>::new(), "{attack:?}");
    // The supervisor was told, naming what the worker changed.
    assert!(
        waited.contains(r#""state": "pending""#),
        "{attack:?}: {waited}"
    );
    assert!(waited.contains("refused"), "{attack:?}: {waited}");
    assert!(waited.contains(named(attack)), "{attack:?}: {waited}");
    // The user's workspace and git are as they were.
    assert_eq!(users_state(sb.ws()), before, "{attack:?}");
    assert!(!sb.ws().join(".gitattributes").exists());
    // The worker's change is kept in its worktree for the user.
    let kept: Vec<PathBuf> = std::fs::read_dir(sb.data_dir().join("worktrees"))
        .unwrap()
        .flatten()
        .flat_map(|s| std::fs::read_dir(s.path()).unwrap().flatten())
        .map(|e| e.path().join("a.txt"))
        .filter(|p| p.is_file())
        .collect();
    assert_eq!(kept.len(), 1, "{attack:?}: {kept:?}");
    assert_eq!(
        std::fs::read_to_string(&kept[0]).unwrap(),
        "changed by the worker\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_pointing_its_commondir_at_an_armed_copy_is_refused_and_runs_nothing() {
    attack(Attack::CommonDir).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_pointing_its_dot_git_file_at_an_armed_copy_is_refused_and_runs_nothing() {
    attack(Attack::DotGit).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_arming_its_config_worktree_is_refused_and_runs_nothing() {
    attack(Attack::WorktreeConfig).await;
}
