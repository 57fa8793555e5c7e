//! `apply_patch` (OpenAI's V4A patch format) against real temp directories: the corpus
//! under `tests/fixtures/apply_patch/`, the cases a fixture cannot hold (a write failing
//! half-way, CRLF files, file modes, the approval's diff), and a worker's patch in its git
//! worktree merged back into the workspace by the real binary.
//!
//! A corpus case is a folder: `patch.txt`; `input/`, the workspace before (optional);
//! `expected/`, the whole workspace after (optional: absent means unchanged for a refusal,
//! empty otherwise); `error.txt`, lines the refusal must contain (the case must fail);
//! `result.txt`, the exact result of a success.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use ::squad::protocol::{AgentId, ApprovalAction};
use ::squad::tools::{ApplyPatch, ToolContext, ToolError, ToolHandler, ToolSettings};
use ::squad::workspace::Workspace;
use common::agents::*;
use common::*;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

fn context(root: &Path) -> ToolContext {
    ToolContext {
        agent_id: AgentId::new(),
        workspace: Arc::new(Workspace::new(root).unwrap()),
        settings: Arc::new(ToolSettings::default()),
        cancel: CancellationToken::new(),
        sandbox: None,
        editor: None,
    }
}

async fn apply(root: &Path, patch: &str) -> Result<String, ToolError> {
    ApplyPatch
        .call(&context(root), json!({ "patch": patch }))
        .await
}

/// Every file under `dir` by its relative path, with its content.
fn tree(dir: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.insert(rel, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn copy_tree(from: &Path, to: &Path) {
    for (rel, text) in tree(from) {
        let dest = to.join(rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::write(dest, text).unwrap();
    }
}

/// Runs one corpus case; `Err` says what went wrong.
async fn run_case(case: &Path) -> Result<(), String> {
    let ws = tempfile::tempdir().unwrap();
    copy_tree(&case.join("input"), ws.path());
    let patch = std::fs::read_to_string(case.join("patch.txt")).unwrap();
    let error = std::fs::read_to_string(case.join("error.txt")).ok();
    let expected = if case.join("expected").is_dir() || error.is_none() {
        tree(&case.join("expected"))
    } else {
        tree(&case.join("input"))
    };
    let out = apply(ws.path(), &patch).await;
    match (&error, &out) {
        (Some(_), Ok(out)) => return Err(format!("should be refused, gave: {out}")),
        (None, Err(e)) => return Err(format!("failed: {e}")),
        (Some(want), Err(e)) => {
            let got = e.to_string();
            for line in want.lines().filter(|l| !l.is_empty()) {
                if !got.contains(line) {
                    return Err(format!("the error lacks {line:?}:\n{got}"));
                }
            }
        }
        (None, Ok(out)) => {
            if let Ok(want) = std::fs::read_to_string(case.join("result.txt"))
                && out.trim_end() != want.trim_end()
            {
                return Err(format!("result:\n{out}\nexpected:\n{want}"));
            }
        }
    }
    let got = tree(ws.path());
    if got != expected {
        return Err(format!(
            "the workspace after:\n{got:#?}\nexpected:\n{expected:#?}"
        ));
    }
    Ok(())
}

#[tokio::test]
async fn the_corpus() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/apply_patch");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert!(cases.len() >= 20, "the corpus is at {}", root.display());
    let mut failed = Vec::new();
    for case in &cases {
        if let Err(why) = run_case(case).await {
            failed.push(format!(
                "{}: {why}",
                case.file_name().unwrap().to_string_lossy()
            ));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} cases failed:\n\n{}",
        failed.len(),
        cases.len(),
        failed.join("\n\n")
    );
}

/// A write that fails half-way (`x` is written as a file, then `x/y` needs it to be a
/// folder): what was written before is put back, so nothing of the patch stays.
#[tokio::test]
async fn a_write_failing_half_way_puts_back_what_was_written() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "a\n").unwrap();
    std::fs::write(ws.path().join("gone.txt"), "still here\n").unwrap();
    let before = tree(ws.path());
    let patch = "*** Begin Patch\n\
                 *** Update File: a.txt\n@@\n-a\n+A\n\
                 *** Delete File: gone.txt\n\
                 *** Add File: new/x\n+file\n\
                 *** Add File: new/x/y\n+under a file\n\
                 *** End Patch";
    let err = apply(ws.path(), patch).await.unwrap_err().to_string();
    assert!(err.contains("cannot write 'new/x/y'"), "{err}");
    assert!(
        err.contains("nothing of the patch was written") || err.contains("put back"),
        "{err}"
    );
    assert_eq!(tree(ws.path()), before);
    assert!(
        !ws.path().join("new").exists(),
        "the folder it made is gone"
    );
}

#[tokio::test]
async fn crlf_files_keep_their_line_ends_and_a_moved_script_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("win.txt"), "one\r\ntwo\r\nthree\r\n").unwrap();
    let script = ws.path().join("run.sh");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let patch = "*** Begin Patch\n\
                 *** Update File: win.txt\n@@\n one\n-two\n+2\n+2.5\n\
                 *** Update File: run.sh\n*** Move to: bin/run.sh\n@@\n-echo hi\n+echo hello\n\
                 *** End Patch";
    let out = apply(ws.path(), patch).await.unwrap();
    assert_eq!(
        out,
        "applied the patch (2 operations):\nM win.txt\nR run.sh -> bin/run.sh"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("win.txt")).unwrap(),
        "one\r\n2\r\n2.5\r\nthree\r\n"
    );
    let moved = ws.path().join("bin/run.sh");
    assert_eq!(
        std::fs::read_to_string(&moved).unwrap(),
        "#!/bin/sh\necho hello\n"
    );
    assert_eq!(
        std::fs::metadata(&moved).unwrap().permissions().mode() & 0o777,
        0o755
    );
    assert!(!script.exists());
}

/// What the user approves: every file the patch changes (both ends of a move) and the
/// diff of each; a patch that cannot apply is refused before anyone is asked.
#[tokio::test]
async fn the_approval_shows_every_file_and_its_diff() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("keep.txt"), "a\nb\nc\n").unwrap();
    std::fs::write(ws.path().join("old.txt"), "moved\n").unwrap();
    std::fs::write(ws.path().join("gone.txt"), "bye\n").unwrap();
    let ctx = context(ws.path());
    let patch = "*** Begin Patch\n\
                 *** Add File: src/new.rs\n+fn main() {}\n\
                 *** Update File: keep.txt\n@@\n a\n-b\n+B\n\
                 *** Update File: old.txt\n*** Move to: dir/new.txt\n\
                 *** Delete File: gone.txt\n\
                 *** End Patch";
    let action = ApplyPatch
        .describe(&ctx, &json!({ "patch": patch }))
        .await
        .unwrap();
    let Some(ApprovalAction::Patch { paths, diff }) = action else {
        panic!("a patch action: {action:?}");
    };
    assert_eq!(
        paths,
        [
            "src/new.rs",
            "keep.txt",
            "old.txt",
            "dir/new.txt",
            "gone.txt"
        ]
    );
    for want in [
        "--- /dev/null\n+++ b/src/new.rs\n",
        "+fn main() {}\n",
        "--- a/keep.txt\n+++ b/keep.txt\n",
        "-b\n+B\n",
        "rename old.txt → dir/new.txt\n",
        "--- a/gone.txt\n+++ /dev/null\n",
        "-bye\n",
    ] {
        assert!(diff.contains(want), "the diff lacks {want:?}:\n{diff}");
    }
    // Nothing was written by describing it.
    assert!(!ws.path().join("src").exists());

    let bad = "*** Begin Patch\n*** Update File: keep.txt\n@@\n-zzz\n+y\n*** End Patch";
    let err = ApplyPatch
        .describe(&ctx, &json!({ "patch": bad }))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("'keep.txt', hunk 1 (@@)"), "{err}");
    let err = ApplyPatch.describe(&ctx, &json!({})).await.unwrap_err();
    assert!(
        err.to_string().contains("missing required field `patch`"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------
// A worker's patch in its worktree, merged back (the real binary against the mock)

const WORKER_PATCH: &str = "*** Begin Patch
*** Update File: app.py
@@ def greet(name):
-    return \"hi \" + name
+    return f\"hello, {name}\"
*** Add File: docs/usage.md
+Call greet(name).
*** Update File: old/util.py
*** Move to: lib/util.py
@@
-VERSION = 1
+VERSION = 2
*** Delete File: obsolete.txt
*** End Patch";

#[tokio::test(flavor = "multi_thread")]
async fn a_workers_patch_in_its_worktree_merges_back_into_the_workspace() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    git(sb.ws(), &["init", "-q"]);
    sb.write("app.py", "def greet(name):\n    return \"hi \" + name\n");
    sb.write("old/util.py", "VERSION = 1\n");
    sb.write("obsolete.txt", "unused\n");
    sb.write("README.md", "readme\n");
    git(sb.ws(), &["add", "-A"]);
    git(sb.ws(), &["commit", "-qm", "start"]);
    // The user's own uncommitted and untracked work, which the merge must leave alone.
    sb.write("README.md", "readme, edited by the user\n");
    sb.write("notes.md", "the user's notes\n");
    let head = git(sb.ws(), &["rev-parse", "HEAD"]);

    mock.set_responder(|body| {
        if !is_worker(body) {
            return match tool_count(body) {
                0 => spawn("implementer", "greet with hello, document it, move util"),
                1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
                _ => MockResponse::text("done"),
            };
        }
        match tool_count(body) {
            0 => MockResponse::tool_call(
                "p",
                "apply_patch",
                &json!({ "patch": WORKER_PATCH }).to_string(),
            ),
            _ => {
                let artifact = |path: &str, kind: &str| {
                    json!({"file_path": path, "description": "the change", "change_type": kind})
                };
                MockResponse::tool_call(
                    "r",
                    "return_results",
                    &json!({"result": {"status": "success", "summary": "patched",
                        "artifacts": [
                            artifact("app.py", "modified"),
                            artifact("docs/usage.md", "created"),
                            artifact("lib/util.py", "created"),
                            artifact("old/util.py", "deleted"),
                            artifact("obsolete.txt", "deleted"),
                        ],
                        "known_issues": []}})
                    .to_string(),
                )
            }
        }
    });
    let run = sb.exec(&mock, &["--approval", "auto", "patch it"]).await;
    run.assert_ok();

    // The patch ran in the worker's worktree, not in the workspace.
    let patched = mock
        .requests()
        .into_iter()
        .find(|r| is_worker(&r.body) && tool_count(&r.body) == 1)
        .expect("the worker patched");
    let result = tool_messages(&patched.body)
        .into_iter()
        .map(|(_, text)| text)
        .next()
        .unwrap();
    assert_eq!(
        result,
        "applied the patch (4 operations):\nM app.py\nA docs/usage.md\nR old/util.py -> lib/util.py\nD obsolete.txt"
    );
    let worktree = root_of(&sb.data_dir(), sb.ws(), &patched.body);
    assert!(
        worktree.starts_with(sb.data_dir().join("worktrees")),
        "the worker has a worktree of its own under the data dir, not {}",
        worktree.display()
    );

    // Merged back like any other change, one line for it.
    let merges: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("⇄ [implementer ") && l.contains("] merged into the workspace: "))
        .collect();
    assert_eq!(merges.len(), 1, "{}", run.stderr);
    for file in ["app.py", "docs/usage.md", "lib/util.py", "obsolete.txt"] {
        assert!(merges[0].contains(file), "{file} in {}", merges[0]);
    }
    assert_eq!(
        sb.read("app.py"),
        "def greet(name):\n    return f\"hello, {name}\"\n"
    );
    assert_eq!(sb.read("docs/usage.md"), "Call greet(name).\n");
    assert_eq!(sb.read("lib/util.py"), "VERSION = 2\n");
    assert!(!sb.ws().join("old/util.py").exists());
    assert!(!sb.ws().join("obsolete.txt").exists());
    // The user's work, HEAD and the branches are as they were.
    assert_eq!(sb.read("README.md"), "readme, edited by the user\n");
    assert_eq!(sb.read("notes.md"), "the user's notes\n");
    assert_eq!(git(sb.ws(), &["rev-parse", "HEAD"]), head);
    assert_eq!(git(sb.ws(), &["branch", "--list", "squad/*"]), "");
}

/// Outside git, workers share the workspace: a patch touching a file another running
/// worker wrote is refused whole, naming the holder, and writes nothing (not even its
/// files nobody holds).
#[tokio::test(flavor = "multi_thread")]
async fn outside_git_a_patch_touching_a_held_file_is_refused_whole() {
    use ::squad::protocol::{ApprovalPolicy, EventKind, HistoryItem};
    use common::engine::*;
    use std::time::Duration;
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("shared.txt", "before\n");
    let patch = "*** Begin Patch\n*** Add File: free.txt\n+mine\n\
                 *** Update File: shared.txt\n@@\n-the holder's\n+the other's\n*** End Patch";
    mock.set_responder(move |body| {
        if !is_worker(body) {
            return match tool_count(body) {
                0 => MockResponse::tool_calls(vec![
                    call(
                        "s0",
                        "spawn_agent",
                        json!({"role_name": "implementer", "task_prompt": "holder"}),
                    ),
                    call(
                        "s1",
                        "spawn_agent",
                        json!({"role_name": "implementer", "task_prompt": "other"}),
                    ),
                ]),
                2 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
                _ => MockResponse::text("done"),
            };
        }
        let task = transcript(body)
            .into_iter()
            .find(|(role, _)| role == "user")
            .map(|(_, text)| text)
            .unwrap_or_default();
        let finish =
            MockResponse::tool_call("r", "return_results", &good_result("done").to_string());
        match (task.starts_with("holder"), tool_count(body)) {
            (true, 0) => MockResponse::tool_call(
                "w",
                "write_file",
                &json!({"path": "shared.txt", "content": "the holder's\n"}).to_string(),
            ),
            // Holds the file a while before its result goes up.
            (true, _) => finish.with_delay(Duration::from_millis(2500)),
            // Comes second.
            (false, 0) => {
                MockResponse::tool_call("p", "apply_patch", &json!({ "patch": patch }).to_string())
                    .with_delay(Duration::from_millis(800))
            }
            (false, _) => finish,
        }
    });
    let mut h = start_engine_with_data(&mock, &sb, ApprovalPolicy::Auto, |_| {}).await;
    let mut seen = Vec::new();
    say(&h, "both change shared.txt");
    wait_event(&mut h, &mut seen, Duration::from_secs(40), |e| {
        matches!(e.kind, EventKind::Idle)
    })
    .await
    .expect("the team comes to rest");

    let refused = seen
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ItemAdded {
                item:
                    HistoryItem::ToolResult {
                        name,
                        output,
                        is_error: true,
                        ..
                    },
            } if name == "apply_patch" => Some(output.clone()),
            _ => None,
        })
        .expect("the patch is refused");
    assert!(
        refused.contains("shared.txt is being changed by worker implementer"),
        "{refused}"
    );
    assert_eq!(sb.read("shared.txt"), "the holder's\n");
    assert!(
        !sb.ws().join("free.txt").exists(),
        "nothing of the patch was written"
    );
}

// ---------------------------------------------------------------------------------------
// Offered to the models trained on it

/// The tool names a recorded request offers, on either wire.
fn offered(body: &serde_json::Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().or(t["function"]["name"].as_str()))
        .map(str::to_string)
        .collect()
}

/// A `-codex` model under the default persona is offered `apply_patch` (in place of
/// `write_file` and `edit_file`) on both wires, within copilot's 8 KB first request, and its
/// patch adding a file over an existing one replaces it, as Codex does.
#[tokio::test(flavor = "multi_thread")]
async fn a_codex_model_under_the_default_persona_gets_apply_patch_on_both_wires() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("notes.txt", "old notes\n");
    for wire in ["chat", "responses"] {
        let patch =
            format!("*** Begin Patch\n*** Add File: notes.txt\n+{wire} notes\n*** End Patch");
        mock.push_all([
            MockResponse::tool_call("p", "apply_patch", &json!({ "patch": patch }).to_string()),
            MockResponse::text("done"),
        ]);
        let run = sb
            .exec(
                &mock,
                &[
                    "--model",
                    "gpt-5-codex",
                    "--wire-api",
                    wire,
                    "--approval",
                    "auto",
                    "rewrite notes",
                ],
            )
            .await;
        run.assert_ok();
        assert_eq!(
            std::fs::read_to_string(sb.ws().join("notes.txt")).unwrap(),
            format!("{wire} notes\n")
        );
    }
    let reqs = mock.requests();
    let firsts = [&reqs[0], &reqs[2]];
    assert!(firsts[1].is_responses());
    for req in firsts {
        let tools = offered(&req.body);
        assert!(tools.contains(&"apply_patch".to_string()), "{tools:?}");
        assert!(
            !tools.iter().any(|t| t == "write_file" || t == "edit_file"),
            "{tools:?}"
        );
        let size = serde_json::to_string(&req.body).unwrap().len();
        assert!(size <= 8 * 1024, "{size} B");
    }
}

/// On the Responses wire `apply_patch` is a freeform tool, as Codex offers it (the patch as
/// plain text in the format's Lark grammar), its call passed back as a `custom_tool_call`;
/// a server that refuses `custom` tools (a 400 naming the type) gets it as a function, in
/// the same turn, and from then on.
#[tokio::test(flavor = "multi_thread")]
async fn apply_patch_is_freeform_on_responses_and_a_function_where_the_server_refuses_it() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let args = [
        "--model",
        "gpt-5-codex",
        "--wire-api",
        "responses",
        "--approval",
        "auto",
    ];
    let patch =
        |text: &str| format!("*** Begin Patch\n*** Add File: notes.txt\n+{text}\n*** End Patch\n");
    mock.push_all([
        MockResponse::tool_call(
            "p1",
            "apply_patch",
            &json!({ "patch": patch("freeform") }).to_string(),
        ),
        MockResponse::text("done"),
    ]);
    let mut run_args = args.to_vec();
    run_args.push("write notes");
    sb.exec(&mock, &run_args).await.assert_ok();
    assert_eq!(sb.read("notes.txt"), "freeform\n");
    let reqs = mock.requests();
    let tool = reqs[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "apply_patch")
        .unwrap()
        .clone();
    assert_eq!(tool["type"], "custom", "{tool}");
    assert_eq!(tool["format"]["type"], "grammar");
    assert_eq!(tool["format"]["syntax"], "lark");
    assert!(
        tool["format"]["definition"]
            .as_str()
            .unwrap()
            .contains("*** Begin Patch")
    );
    let input = reqs[1].body["input"].as_array().unwrap();
    let call = input
        .iter()
        .find(|i| i["type"] == "custom_tool_call")
        .expect("the call passed back as freeform");
    assert_eq!(call["input"], patch("freeform"));
    let output = input
        .iter()
        .find(|i| i["type"] == "custom_tool_call_output")
        .expect("its output too");
    assert_eq!(output["call_id"], call["call_id"]);

    mock.refuse_custom_tools();
    mock.push_all([
        MockResponse::tool_call(
            "p2",
            "apply_patch",
            &json!({ "patch": patch("function") }).to_string(),
        ),
        MockResponse::text("done"),
    ]);
    let mut run_args = args.to_vec();
    run_args.push("rewrite notes");
    let run = sb.exec(&mock, &run_args).await;
    run.assert_ok();
    assert_eq!(sb.read("notes.txt"), "function\n");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 5, "refused once, then as a function, then done");
    let kind = |i: usize| {
        reqs[i].body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "apply_patch")
            .unwrap()["type"]
            .clone()
    };
    assert_eq!(kind(2), "custom");
    assert_eq!(kind(3), "function");
    assert_eq!(kind(4), "function", "and from then on");
    let passed_back = reqs[4].body["input"].to_string();
    assert!(
        passed_back.contains("\"function_call\"") && !passed_back.contains("custom_tool_call"),
        "{passed_back}"
    );
}

/// An editor with unsaved buffers: what it holds, and every write it was given.
#[derive(Default)]
struct Buffers {
    held: std::sync::Mutex<BTreeMap<PathBuf, String>>,
    writes: std::sync::Mutex<Vec<(PathBuf, String)>>,
}

#[async_trait::async_trait]
impl ::squad::tools::EditorFiles for Buffers {
    async fn read(&self, path: &Path) -> Option<Result<String, String>> {
        self.held.lock().unwrap().get(path).cloned().map(Ok)
    }

    async fn write(&self, path: &Path, text: &str) -> Option<Result<(), String>> {
        self.writes
            .lock()
            .unwrap()
            .push((path.to_path_buf(), text.to_string()));
        self.held
            .lock()
            .unwrap()
            .insert(path.to_path_buf(), text.to_string());
        Some(Ok(()))
    }
}

/// The three tools that change files take one path: each sees the editor's unsaved
/// buffer, not the disk, and writes through the editor, leaving the disk to it.
#[tokio::test]
async fn write_edit_and_patch_all_change_the_editors_buffer() {
    use ::squad::tools::{EditFile, WriteFile};
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path().canonicalize().unwrap();
    for name in ["w.txt", "e.txt", "p.txt"] {
        std::fs::write(root.join(name), "on disk\n").unwrap();
    }
    let buffers = Arc::new(Buffers::default());
    for name in ["w.txt", "e.txt", "p.txt"] {
        buffers
            .held
            .lock()
            .unwrap()
            .insert(root.join(name), "unsaved\n".to_string());
    }
    let ctx = ToolContext {
        editor: Some(buffers.clone()),
        ..context(&root)
    };
    let same = WriteFile
        .call(&ctx, json!({"path": "w.txt", "content": "unsaved\n"}))
        .await
        .unwrap();
    assert!(same.contains("already has exactly this content"), "{same}");
    WriteFile
        .call(&ctx, json!({"path": "w.txt", "content": "written\n"}))
        .await
        .unwrap();
    EditFile
        .call(
            &ctx,
            json!({"path": "e.txt", "old_text": "unsaved", "new_text": "edited"}),
        )
        .await
        .unwrap();
    ApplyPatch
        .call(
            &ctx,
            json!({"patch": "*** Begin Patch\n*** Update File: p.txt\n@@\n-unsaved\n+patched\n*** End Patch"}),
        )
        .await
        .unwrap();
    let writes = buffers.writes.lock().unwrap().clone();
    assert_eq!(
        writes,
        [
            (root.join("w.txt"), "written\n".to_string()),
            (root.join("e.txt"), "edited\n".to_string()),
            (root.join("p.txt"), "patched\n".to_string()),
        ]
    );
    for name in ["w.txt", "e.txt", "p.txt"] {
        assert_eq!(
            std::fs::read_to_string(root.join(name)).unwrap(),
            "on disk\n",
            "the disk is the editor's to save"
        );
    }
    // A path out of the workspace is refused by all three alike.
    for (tool, args) in [
        (
            &WriteFile as &dyn ToolHandler,
            json!({"path": "../x", "content": "x"}),
        ),
        (
            &EditFile,
            json!({"path": "../x", "old_text": "a", "new_text": "b"}),
        ),
        (
            &ApplyPatch,
            json!({"patch": "*** Begin Patch\n*** Add File: ../x\n+x\n*** End Patch"}),
        ),
    ] {
        let err = tool.call(&ctx, args).await.unwrap_err().to_string();
        assert!(err.contains("is outside the workspace"), "{err}");
    }
}
