//! The coding tools on real temp directories and real processes.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use squad::protocol::{AgentId, ApprovalAction};
use squad::tools::{ToolContext, ToolError, ToolHandler, ToolSettings, coding_tools};
use squad::workspace::Workspace;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

struct Env {
    root: tempfile::TempDir,
    outside: tempfile::TempDir,
    ctx: ToolContext,
}

impl Env {
    fn new() -> Self {
        Self::with(ToolSettings::default())
    }

    fn with(settings: ToolSettings) -> Self {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "top secret\n").unwrap();
        let ctx = ToolContext {
            agent_id: AgentId::new(),
            workspace: Arc::new(Workspace::new(root.path()).unwrap()),
            settings: Arc::new(settings),
            cancel: CancellationToken::new(),
            sandbox: None,
            editor: None,
        };
        Self { root, outside, ctx }
    }

    fn path(&self, rel: &str) -> std::path::PathBuf {
        self.root.path().join(rel)
    }

    fn write(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    async fn call(&self, tool: &str, args: Value) -> Result<String, ToolError> {
        tool_named(tool).call(&self.ctx, args).await
    }

    async fn ok(&self, tool: &str, args: Value) -> String {
        match self.call(tool, args.clone()).await {
            Ok(out) => out,
            Err(e) => panic!("{tool}({args}) failed: {e}"),
        }
    }

    async fn err(&self, tool: &str, args: Value) -> ToolError {
        match self.call(tool, args.clone()).await {
            Ok(out) => panic!("{tool}({args}) should fail, returned: {out}"),
            Err(e) => e,
        }
    }

    async fn describe(&self, tool: &str, args: Value) -> Result<Option<ApprovalAction>, ToolError> {
        tool_named(tool).describe(&self.ctx, &args).await
    }
}

fn tool_named(name: &str) -> Arc<dyn ToolHandler> {
    coding_tools()
        .into_iter()
        .find(|t| t.spec().name == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

fn diff_of(action: Option<ApprovalAction>) -> (String, String) {
    match action {
        Some(ApprovalAction::FileChange { path, diff }) => (path, diff),
        other => panic!("expected a file change, got {other:?}"),
    }
}

// ------------------------------------------------------------------------------- specs

#[test]
fn every_tool_has_a_schema_and_description() {
    let names: Vec<String> = coding_tools().iter().map(|t| t.spec().name).collect();
    assert_eq!(
        names,
        [
            "read_file",
            "list_files",
            "search_files",
            "write_file",
            "edit_file",
            "apply_patch",
            "run_command",
            "run_tests"
        ]
    );
    for tool in coding_tools() {
        let spec = tool.spec();
        assert!(spec.description.len() > 40, "{}", spec.name);
        assert_eq!(spec.parameters["type"], "object", "{}", spec.name);
    }
}

// ------------------------------------------------------------------------------- read_file

#[tokio::test]
async fn read_file_returns_text_and_line_ranges() {
    let env = Env::new();
    env.write("src/a.txt", "one\ntwo\nthree\nfour\n");
    assert_eq!(
        env.ok("read_file", json!({"path": "src/a.txt"})).await,
        "one\ntwo\nthree\nfour\n"
    );
    assert_eq!(
        env.ok(
            "read_file",
            json!({"path": "src/a.txt", "start_line": 2, "end_line": 3})
        )
        .await,
        "two\nthree\n[lines 2-3 of 4]"
    );
    assert_eq!(
        env.ok(
            "read_file",
            json!({"path": "./src/../src/a.txt", "start_line": 4})
        )
        .await,
        "four\n[lines 4-4 of 4]"
    );
    let past = env
        .err("read_file", json!({"path": "src/a.txt", "start_line": 9}))
        .await;
    assert!(past.to_string().contains("has 4 lines"), "{past}");
    let backwards = env
        .err(
            "read_file",
            json!({"path": "src/a.txt", "start_line": 3, "end_line": 2}),
        )
        .await;
    assert!(
        matches!(backwards, ToolError::InvalidArguments(_)),
        "{backwards}"
    );
}

#[tokio::test]
async fn read_file_cuts_at_the_cap_and_says_where_to_continue() {
    let env = Env::with(ToolSettings {
        read_max_bytes: 50,
        ..ToolSettings::default()
    });
    let text: String = (1..=100).map(|i| format!("line {i:03}\n")).collect();
    env.write("big.txt", &text);
    let out = env.ok("read_file", json!({"path": "big.txt"})).await;
    // 9 bytes per line: five whole lines fit in 50 bytes.
    assert!(out.starts_with("line 001\nline 002\n"), "{out}");
    assert!(out.contains("line 005\n["), "{out}");
    assert!(!out.contains("line 006"), "{out}");
    assert!(out.contains("showed lines 1-5 of 100"), "{out}");
    assert!(out.contains("start_line=6"), "{out}");
    let next = env
        .ok("read_file", json!({"path": "big.txt", "start_line": 6}))
        .await;
    assert!(next.starts_with("line 006\n"), "{next}");

    env.write("long.txt", &"x".repeat(200));
    let out = env.ok("read_file", json!({"path": "long.txt"})).await;
    assert!(out.starts_with(&"x".repeat(50)), "{out}");
    assert!(out.contains("longer than the read limit"), "{out}");
}

#[tokio::test]
async fn read_file_errors_are_clear() {
    let env = Env::new();
    let missing = env.err("read_file", json!({"path": "nope.rs"})).await;
    let msg = missing.to_string();
    assert!(
        msg.contains("nope.rs") && msg.contains("list_files"),
        "{msg}"
    );

    std::fs::write(env.path("blob.bin"), [0u8, 159, 146, 150, 1, 2]).unwrap();
    let bin = env.err("read_file", json!({"path": "blob.bin"})).await;
    assert!(bin.to_string().contains("not a UTF-8 text file"), "{bin}");
    std::fs::write(env.path("latin1.txt"), b"caf\xe9\n").unwrap();
    let latin = env.err("read_file", json!({"path": "latin1.txt"})).await;
    assert!(
        latin.to_string().contains("not a UTF-8 text file"),
        "{latin}"
    );

    std::fs::create_dir(env.path("dir")).unwrap();
    let dir = env.err("read_file", json!({"path": "dir"})).await;
    assert!(dir.to_string().contains("is a directory"), "{dir}");

    let empty = env.err("read_file", json!({})).await;
    assert!(
        matches!(&empty, ToolError::InvalidArguments(m) if m.contains("`path`")),
        "{empty}"
    );
    let wrong = env
        .err("read_file", json!({"path": "a", "start_line": "2"}))
        .await;
    assert!(
        matches!(&wrong, ToolError::InvalidArguments(m) if m.contains("`start_line`") && m.contains("integer")),
        "{wrong}"
    );

    env.write("empty.txt", "");
    assert_eq!(
        env.ok("read_file", json!({"path": "empty.txt"})).await,
        "[empty.txt is empty]"
    );
}

#[tokio::test]
async fn read_file_stays_inside_the_workspace() {
    let env = Env::new();
    let up = env
        .err("read_file", json!({"path": "../../etc/passwd"}))
        .await;
    assert!(matches!(up, ToolError::Path(_)), "{up}");
    assert!(
        up.to_string().contains("relative to the workspace root"),
        "{up}"
    );

    let abs = env.err("read_file", json!({"path": "/etc/passwd"})).await;
    assert!(matches!(abs, ToolError::Path(_)), "{abs}");

    let secret = env.outside.path().join("secret.txt");
    symlink(&secret, env.path("link.txt")).unwrap();
    let link = env.err("read_file", json!({"path": "link.txt"})).await;
    assert!(matches!(link, ToolError::Path(_)), "{link}");
    assert!(!link.to_string().contains("top secret"));

    symlink(env.outside.path(), env.path("outdir")).unwrap();
    let via_dir = env
        .err("read_file", json!({"path": "outdir/secret.txt"}))
        .await;
    assert!(matches!(via_dir, ToolError::Path(_)), "{via_dir}");

    env.write("real/inner.txt", "inside\n");
    symlink(env.path("real"), env.path("alias")).unwrap();
    assert_eq!(
        env.ok("read_file", json!({"path": "alias/inner.txt"}))
            .await,
        "inside\n"
    );
}

// ------------------------------------------------------------------------------- write_file

#[tokio::test]
async fn write_file_creates_with_parents_and_describes_a_diff() {
    let env = Env::new();
    let args = json!({"path": "new/deep/file.txt", "content": "alpha\nbeta\n"});
    let (path, diff) = diff_of(env.describe("write_file", args.clone()).await.unwrap());
    assert_eq!(path, "new/deep/file.txt");
    assert!(diff.contains("--- /dev/null"), "{diff}");
    assert!(diff.contains("+++ b/new/deep/file.txt"), "{diff}");
    assert!(diff.contains("+alpha\n+beta\n"), "{diff}");
    assert!(!env.path("new").exists(), "describe must not write");

    let out = env.ok("write_file", args).await;
    assert_eq!(out, "created 'new/deep/file.txt' (2 lines, 11 bytes)");
    assert_eq!(env.read("new/deep/file.txt"), "alpha\nbeta\n");

    let args = json!({"path": "new/deep/file.txt", "content": "alpha\ngamma\n"});
    let (_, diff) = diff_of(env.describe("write_file", args.clone()).await.unwrap());
    assert!(diff.contains("--- a/new/deep/file.txt"), "{diff}");
    assert!(diff.contains(" alpha\n-beta\n+gamma\n"), "{diff}");
    let out = env.ok("write_file", args).await;
    assert!(out.starts_with("overwrote 'new/deep/file.txt'"), "{out}");
    assert_eq!(env.read("new/deep/file.txt"), "alpha\ngamma\n");
}

#[tokio::test]
async fn write_file_refuses_paths_outside() {
    let env = Env::new();
    let up = env
        .err(
            "write_file",
            json!({"path": "../escape.txt", "content": "x"}),
        )
        .await;
    assert!(matches!(up, ToolError::Path(_)), "{up}");
    assert!(
        !env.root
            .path()
            .parent()
            .unwrap()
            .join("escape.txt")
            .exists()
    );

    let abs_target = env.outside.path().join("abs.txt");
    let abs = env
        .err(
            "write_file",
            json!({"path": abs_target.to_str().unwrap(), "content": "x"}),
        )
        .await;
    assert!(matches!(abs, ToolError::Path(_)), "{abs}");
    assert!(!abs_target.exists());

    symlink(env.outside.path(), env.path("outdir")).unwrap();
    let via_dir = env
        .err(
            "write_file",
            json!({"path": "outdir/new.txt", "content": "x"}),
        )
        .await;
    assert!(matches!(via_dir, ToolError::Path(_)), "{via_dir}");
    let described = env
        .describe(
            "write_file",
            json!({"path": "outdir/new.txt", "content": "x"}),
        )
        .await;
    assert!(matches!(described, Err(ToolError::Path(_))));
    assert!(!env.outside.path().join("new.txt").exists());

    symlink(
        env.outside.path().join("secret.txt"),
        env.path("secret_link"),
    )
    .unwrap();
    env.err(
        "write_file",
        json!({"path": "secret_link", "content": "pwned"}),
    )
    .await;
    symlink(env.outside.path().join("ghost.txt"), env.path("dangling")).unwrap();
    env.err(
        "write_file",
        json!({"path": "dangling", "content": "pwned"}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(env.outside.path().join("secret.txt")).unwrap(),
        "top secret\n"
    );
    assert!(!env.outside.path().join("ghost.txt").exists());

    let dir = env
        .err("write_file", json!({"path": ".", "content": "x"}))
        .await;
    assert!(dir.to_string().contains("is a directory"), "{dir}");
}

#[tokio::test]
async fn write_file_through_an_inside_symlink_writes_the_target() {
    let env = Env::new();
    env.write("real/a.txt", "old\n");
    symlink(env.path("real"), env.path("alias")).unwrap();
    env.ok(
        "write_file",
        json!({"path": "alias/a.txt", "content": "new\n"}),
    )
    .await;
    assert_eq!(env.read("real/a.txt"), "new\n");
}

// ------------------------------------------------------------------------------- edit_file

#[tokio::test]
async fn edit_file_replaces_exactly_one_match() {
    let env = Env::new();
    env.write("src/lib.rs", "fn a() {\n    1\n}\n\nfn b() {\n    2\n}\n");
    let args = json!({"path": "src/lib.rs", "old_text": "fn b() {\n    2", "new_text": "fn b() {\n    20\n    + 1"});
    let (path, diff) = diff_of(env.describe("edit_file", args.clone()).await.unwrap());
    assert_eq!(path, "src/lib.rs");
    assert!(diff.contains("-    2\n+    20\n+    + 1\n"), "{diff}");
    assert_eq!(
        env.read("src/lib.rs"),
        "fn a() {\n    1\n}\n\nfn b() {\n    2\n}\n"
    );

    let out = env.ok("edit_file", args).await;
    assert_eq!(
        out,
        "edited 'src/lib.rs': replaced 2 lines at line 5 with 3 lines"
    );
    assert_eq!(
        env.read("src/lib.rs"),
        "fn a() {\n    1\n}\n\nfn b() {\n    20\n    + 1\n}\n"
    );
}

#[tokio::test]
async fn edit_file_refuses_zero_or_several_matches() {
    let env = Env::new();
    let original = "x = 1\ny = 2\nx = 1\n";
    env.write("a.py", original);

    let none = env
        .err(
            "edit_file",
            json!({"path": "a.py", "old_text": "z = 3", "new_text": "z = 4"}),
        )
        .await;
    let msg = none.to_string();
    assert!(
        msg.contains("not found") && msg.contains("whitespace"),
        "{msg}"
    );
    assert!(msg.contains("read_file"), "{msg}");

    let two = env
        .err(
            "edit_file",
            json!({"path": "a.py", "old_text": "x = 1", "new_text": "x = 5"}),
        )
        .await;
    let msg = two.to_string();
    assert!(msg.contains("matches 2 times"), "{msg}");
    assert!(msg.contains("lines 1, 3"), "{msg}");
    assert!(msg.contains("more surrounding lines"), "{msg}");
    let described = env
        .describe(
            "edit_file",
            json!({"path": "a.py", "old_text": "x = 1", "new_text": "x = 5"}),
        )
        .await;
    assert!(described.is_err());

    let empty = env
        .err(
            "edit_file",
            json!({"path": "a.py", "old_text": "", "new_text": "q"}),
        )
        .await;
    assert!(matches!(empty, ToolError::InvalidArguments(_)), "{empty}");

    let missing = env
        .err(
            "edit_file",
            json!({"path": "b.py", "old_text": "a", "new_text": "b"}),
        )
        .await;
    assert!(missing.to_string().contains("write_file"), "{missing}");

    let no_new = env
        .err("edit_file", json!({"path": "a.py", "old_text": "y = 2"}))
        .await;
    assert!(
        matches!(&no_new, ToolError::InvalidArguments(m) if m.contains("`new_text`")),
        "{no_new}"
    );
    assert_eq!(env.read("a.py"), original);

    // Overlapping occurrences count: "aa" occurs twice in "aaa".
    env.write("o.txt", "aaa\n");
    let overlap = env
        .err(
            "edit_file",
            json!({"path": "o.txt", "old_text": "aa", "new_text": "b"}),
        )
        .await;
    assert!(overlap.to_string().contains("matches 2 times"), "{overlap}");
}

#[tokio::test]
async fn edit_file_matches_crlf_files_with_lf_text() {
    let env = Env::new();
    env.write("w.txt", "one\r\ntwo\r\nthree\r\n");
    env.ok(
        "edit_file",
        json!({"path": "w.txt", "old_text": "one\ntwo", "new_text": "1\n2"}),
    )
    .await;
    assert_eq!(env.read("w.txt"), "1\r\n2\r\nthree\r\n");
}

#[tokio::test]
async fn edit_file_refuses_symlinks_out() {
    let env = Env::new();
    symlink(env.outside.path().join("secret.txt"), env.path("s.txt")).unwrap();
    let err = env
        .err(
            "edit_file",
            json!({"path": "s.txt", "old_text": "top", "new_text": "no"}),
        )
        .await;
    assert!(matches!(err, ToolError::Path(_)), "{err}");
    assert_eq!(
        std::fs::read_to_string(env.outside.path().join("secret.txt")).unwrap(),
        "top secret\n"
    );
}

// ------------------------------------------------------------------------------- list_files

fn layout(env: &Env) {
    env.write(".gitignore", "target/\n*.log\n");
    env.write("Cargo.toml", "[package]\n");
    env.write("src/main.rs", "fn main() {}\n");
    env.write("src/util/mod.rs", "// util\n");
    env.write("src/util/deep/x.rs", "// deep\n");
    env.write("src/debug.log", "log line needle\n");
    env.write("target/out.txt", "build output needle\n");
    env.write(".git/HEAD", "ref: refs/heads/main\n");
    env.write(".github/ci.yml", "on: push\n");
}

#[tokio::test]
async fn list_files_is_sorted_gitignore_aware_and_marks_directories() {
    let env = Env::new();
    layout(&env);
    let out = env.ok("list_files", json!({})).await;
    assert_eq!(
        out,
        [
            ".github/",
            ".github/ci.yml",
            ".gitignore",
            "Cargo.toml",
            "src/",
            "src/main.rs",
            "src/util/",
            "[directories 2 levels down are not expanded; list one of them, or pass a larger depth]",
        ]
        .join("\n")
    );

    let sub = env
        .ok("list_files", json!({"path": "src", "depth": 5}))
        .await;
    assert_eq!(
        sub,
        "src/main.rs\nsrc/util/\nsrc/util/deep/\nsrc/util/deep/x.rs\nsrc/util/mod.rs"
    );
    let one = env
        .ok("list_files", json!({"path": "src/util", "depth": 1}))
        .await;
    assert!(one.starts_with("src/util/deep/\nsrc/util/mod.rs"), "{one}");

    // A gitignored directory asked for by name is shown, with a note.
    let ignored = env.ok("list_files", json!({"path": "target"})).await;
    assert!(ignored.contains("ignored by .gitignore"), "{ignored}");
    assert!(ignored.contains("target/out.txt"), "{ignored}");

    let missing = env.err("list_files", json!({"path": "nope"})).await;
    assert!(missing.to_string().contains("not found"), "{missing}");
    let up = env.err("list_files", json!({"path": ".."})).await;
    assert!(matches!(up, ToolError::Path(_)), "{up}");
    let bad = env.err("list_files", json!({"depth": 0})).await;
    assert!(matches!(bad, ToolError::InvalidArguments(_)), "{bad}");
}

#[tokio::test]
async fn list_files_does_not_follow_symlinks_out() {
    let env = Env::new();
    env.write("a.txt", "a\n");
    symlink(env.outside.path(), env.path("outdir")).unwrap();
    let out = env.ok("list_files", json!({"depth": 3})).await;
    assert!(out.contains("outdir -> "), "{out}");
    assert!(!out.contains("secret.txt"), "{out}");
    let err = env.err("list_files", json!({"path": "outdir"})).await;
    assert!(matches!(err, ToolError::Path(_)), "{err}");
}

#[tokio::test]
async fn list_files_caps_the_number_of_entries() {
    let env = Env::new();
    for i in 0..600 {
        env.write(&format!("f{i:04}.txt"), "");
    }
    let out = env.ok("list_files", json!({})).await;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 501, "{}", lines.len());
    assert_eq!(lines[0], "f0000.txt");
    assert_eq!(lines[499], "f0499.txt");
    assert!(
        lines[500].contains("stopped at 500 entries"),
        "{}",
        lines[500]
    );
}

// ------------------------------------------------------------------------------- search_files

#[tokio::test]
async fn search_files_finds_lines_and_skips_ignored_files() {
    let env = Env::new();
    layout(&env);
    env.write("src/main.rs", "fn main() {\n    let needle = 1;\n}\n");
    env.write("notes.md", "a needle here\nnothing\nNEEDLE upper\n");
    let out = env.ok("search_files", json!({"pattern": "needle"})).await;
    assert_eq!(
        out,
        "notes.md:1: a needle here\nsrc/main.rs:2:     let needle = 1;"
    );
    let ci = env
        .ok(
            "search_files",
            json!({"pattern": "(?i)needle", "path": "notes.md"}),
        )
        .await;
    assert_eq!(ci, "notes.md:1: a needle here\nnotes.md:3: NEEDLE upper");
    let sub = env
        .ok("search_files", json!({"pattern": "ne+dle", "path": "src"}))
        .await;
    assert_eq!(sub, "src/main.rs:2:     let needle = 1;");

    assert_eq!(
        env.ok("search_files", json!({"pattern": "no such thing"}))
            .await,
        "no matches"
    );
    let bad = env
        .err("search_files", json!({"pattern": "fn (main"}))
        .await;
    let msg = bad.to_string();
    assert!(matches!(bad, ToolError::InvalidArguments(_)), "{msg}");
    assert!(
        msg.contains("fn (main") && msg.contains("unclosed group"),
        "{msg}"
    );
    let missing = env
        .err("search_files", json!({"pattern": "x", "path": "nope"}))
        .await;
    assert!(missing.to_string().contains("not found"), "{missing}");
}

#[tokio::test]
async fn search_files_does_not_follow_symlinks_out_and_skips_binaries() {
    let env = Env::new();
    env.write("in.txt", "secret inside\n");
    symlink(env.outside.path(), env.path("outdir")).unwrap();
    symlink(env.outside.path().join("secret.txt"), env.path("s.txt")).unwrap();
    std::fs::write(env.path("blob.bin"), b"secret\0binary").unwrap();
    let out = env.ok("search_files", json!({"pattern": "secret"})).await;
    assert_eq!(out, "in.txt:1: secret inside");
    let err = env
        .err(
            "search_files",
            json!({"pattern": "secret", "path": "outdir"}),
        )
        .await;
    assert!(matches!(err, ToolError::Path(_)), "{err}");
}

#[tokio::test]
async fn search_files_caps_matches() {
    let env = Env::new();
    let text: String = (0..500).map(|i| format!("hit {i}\n")).collect();
    env.write("many.txt", &text);
    let out = env.ok("search_files", json!({"pattern": "hit"})).await;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 201);
    assert_eq!(lines[199], "many.txt:200: hit 199");
    assert!(
        lines[200].contains("stopped after 200 matches"),
        "{}",
        lines[200]
    );

    let small = Env::with(ToolSettings {
        max_output_bytes: 100,
        ..ToolSettings::default()
    });
    small.write("many.txt", &text);
    let out = small.ok("search_files", json!({"pattern": "hit"})).await;
    assert!(out.contains("output limit (100 bytes)"), "{out}");
    assert!(out.len() < 300, "{out}");
}

// ------------------------------------------------------------------------------- run_command

#[tokio::test]
async fn run_command_reports_exit_code_and_combined_output() {
    let env = Env::new();
    let out = env
        .ok(
            "run_command",
            json!({"command": "echo out; echo err >&2; echo out2; exit 3"}),
        )
        .await;
    let mut lines = out.lines();
    assert!(lines.next().unwrap().starts_with("exit code: 3 ("), "{out}");
    assert_eq!(lines.collect::<Vec<_>>(), ["out", "err", "out2"], "{out}");

    let pwd = env.ok("run_command", json!({"command": "pwd -P"})).await;
    assert!(pwd.starts_with("exit code: 0"), "{pwd}");
    assert!(
        pwd.contains(&format!("\n{}\n", env.ctx.workspace.root().display())),
        "{pwd}"
    );

    let quiet = env.ok("run_command", json!({"command": "true"})).await;
    assert!(quiet.ends_with("\n(no output)"), "{quiet}");

    let stdin = env
        .ok("run_command", json!({"command": "cat; echo done"}))
        .await;
    assert!(stdin.contains("\ndone"), "stdin must be closed: {stdin}");

    let action = env
        .describe("run_command", json!({"command": "ls -la"}))
        .await
        .unwrap();
    assert_eq!(
        action,
        Some(ApprovalAction::Command {
            command: "ls -la".to_string()
        })
    );
    let bad = env
        .err("run_command", json!({"command": "ls", "timeout_s": 0}))
        .await;
    assert!(matches!(bad, ToolError::InvalidArguments(_)), "{bad}");
    let none = env.err("run_command", json!({"command": "  "})).await;
    assert!(matches!(none, ToolError::InvalidArguments(_)), "{none}");
}

fn process_alive(pid: &str) -> bool {
    Path::new(&format!("/proc/{}", pid.trim())).exists()
}

#[tokio::test]
async fn run_command_timeout_kills_the_process_group() {
    let env = Env::new();
    let started = Instant::now();
    let out = env
        .ok(
            "run_command",
            json!({"command": "sleep 30 & echo $! > bg.pid; echo started; sleep 30", "timeout_s": 1}),
        )
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(out.starts_with("timed out after 1s"), "{out}");
    assert!(
        out.contains("started"),
        "output before the kill is kept: {out}"
    );
    let pid = env.read("bg.pid");
    let deadline = Instant::now() + Duration::from_secs(3);
    while process_alive(&pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!process_alive(&pid), "background sleep {pid} survived");
}

#[tokio::test]
async fn run_command_uses_the_configured_default_timeout() {
    let env = Env::with(ToolSettings {
        command_timeout: Duration::from_millis(300),
        ..ToolSettings::default()
    });
    let started = Instant::now();
    let out = env.ok("run_command", json!({"command": "sleep 20"})).await;
    assert!(started.elapsed() < Duration::from_secs(4));
    assert!(out.starts_with("timed out"), "{out}");
}

#[tokio::test]
async fn run_command_does_not_wait_for_background_processes() {
    let env = Env::new();
    let started = Instant::now();
    let out = env
        .ok("run_command", json!({"command": "sleep 8 & echo launched"}))
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(out.starts_with("exit code: 0"), "{out}");
    assert!(out.contains("launched"), "{out}");
    assert!(out.contains("background processes"), "{out}");
}

#[tokio::test]
async fn run_command_caps_output_keeping_head_and_tail() {
    let env = Env::with(ToolSettings {
        max_output_bytes: 1000,
        ..ToolSettings::default()
    });
    let out = env
        .ok("run_command", json!({"command": "seq 1 100000"}))
        .await;
    assert!(out.starts_with("exit code: 0"), "{}", &out[..100]);
    assert!(out.contains("\n1\n2\n3\n"), "{}", &out[..100]);
    assert!(
        out.ends_with("99999\n100000\n"),
        "{}",
        &out[out.len() - 100..]
    );
    assert!(out.contains("bytes of output omitted"), "{out}");
    assert!(out.len() < 1300, "{}", out.len());
}

#[tokio::test]
async fn run_command_honours_cancellation() {
    let env = Env::new();
    let cancel = env.ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let err = env
        .err(
            "run_command",
            json!({"command": "echo $$ > sh.pid; sleep 30"}),
        )
        .await;
    assert!(matches!(err, ToolError::Cancelled), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let pid = env.read("sh.pid");
    let deadline = Instant::now() + Duration::from_secs(3);
    while process_alive(&pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!process_alive(&pid), "shell {pid} survived cancellation");
}

#[tokio::test]
async fn run_command_dropped_mid_run_kills_the_process_group() {
    let env = Env::new();
    let call = env.call(
        "run_command",
        json!({"command": "sleep 30 & echo $! > bg.pid; sleep 30"}),
    );
    // Drop the call once the background process is known to be running.
    let started = async {
        while !env.path("bg.pid").exists() || env.read("bg.pid").is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::select! {
        out = call => panic!("returned before the drop: {out:?}"),
        _ = started => {}
    }
    let pid = env.read("bg.pid");
    let deadline = Instant::now() + Duration::from_secs(3);
    while process_alive(&pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !process_alive(&pid),
        "background sleep {pid} survived the drop"
    );
}

// ------------------------------------------------------------------------------- run_tests

fn with_tests(cmd: Option<&str>) -> Env {
    Env::with(ToolSettings {
        test_command: cmd.map(str::to_string),
        ..ToolSettings::default()
    })
}

#[tokio::test]
async fn run_tests_reports_pass_and_failure() {
    let pass = with_tests(Some("echo 'test result: ok. 3 passed'"));
    let out = pass.ok("run_tests", json!({})).await;
    assert!(out.starts_with("tests passed ("), "{out}");
    assert!(out.contains("3 passed"), "{out}");
    // A pass says what happened, not what to do next: a green run is no evidence that
    // the work is done (a capable model runs the tests between steps).
    assert!(!out.contains("finish now"), "{out}");
    assert_eq!(
        pass.describe("run_tests", Value::Null).await.unwrap(),
        Some(ApprovalAction::Command {
            command: "echo 'test result: ok. 3 passed'".to_string()
        })
    );

    let fail = with_tests(Some("echo 'assertion failed' >&2; exit 101"));
    let out = fail.ok("run_tests", Value::Null).await;
    assert!(out.starts_with("tests FAILED (exit code 101"), "{out}");
    assert!(out.contains("assertion failed"), "{out}");
    assert!(!out.contains("The tests pass"), "{out}");
}

#[tokio::test]
async fn run_tests_without_a_command_says_how_to_configure_one() {
    let env = with_tests(None);
    let err = env.err("run_tests", json!({})).await;
    let msg = err.to_string();
    assert!(
        msg.contains("test_command") && msg.contains(".squad/config.toml"),
        "{msg}"
    );
    assert!(env.describe("run_tests", json!({})).await.is_err());
}
