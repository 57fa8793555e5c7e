//! Snapshot tests of the TUI: scripted event sequences folded into an `App`, drawn into
//! ratatui's `TestBackend`. The snapshots in `tests/snapshots/` are the visual spec.
//! Time is injected (every event and frame gets an explicit `Instant`), so elapsed
//! times in the snapshots are fixed.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Color;
use squad::protocol::{
    AgentId, AgentResult, AgentStatus, ApprovalAction, ApprovalDecision, ApprovalPolicy, Artifact,
    Budget, BudgetMeasure, BudgetScope, ChangeType, Event, EventKind, Finding, HistoryItem, Op,
    ResultStatus, Severity, SpawnOptions, Task, TaskStatus, ToolCall, TurnEnd, Verdict,
};
use squad::protocol::{DroppedFinding, ReviewFinding, ReviewSeverity, ReviewTarget};
use squad::tui::{Action, App, Focus, LeftPane, Overlay, SessionInfo, Theme};
use std::time::{Duration, Instant};
use uuid::Uuid;

fn id(n: u128) -> AgentId {
    AgentId(Uuid::from_u128(
        0x1a2b_3c4d_0000_0000_0000_0000_0000_0000 + (n << 96),
    ))
}

/// 2026-01-01T00:00:00Z in milliseconds since the epoch: the scripts' wall clock at `t0`.
const T0_MS: u64 = 1_767_225_600_000;

/// A scripted session: events are stamped with increasing seq numbers and a clock that
/// starts at `t0` (`ts` [`T0_MS`]) and moves only when the script says so.
struct Script {
    app: App,
    root: AgentId,
    t0: Instant,
    now: Instant,
    seq: u64,
}

impl Script {
    fn new() -> Self {
        Self::with_theme(Theme::default())
    }

    fn with_theme(theme: Theme) -> Self {
        Self::build(theme, 0)
    }

    /// A session resumed from a log whose events run up to `replayed_seq`.
    fn resumed(replayed_seq: u64) -> Self {
        Self::build(Theme::default(), replayed_seq)
    }

    fn build(theme: Theme, replayed_seq: u64) -> Self {
        let root = id(0);
        let info = SessionInfo {
            log_path: None,
            replayed_seq,
            prompts: Vec::new(),
            session_id: "20260101-demo".into(),
            workspace: "/srv/projects/demo".into(),
            model: "gpt-4.1".into(),
            approval: ApprovalPolicy::Ask,
            role: "copilot".into(),
            root_agent: root,
        };
        let mut app = App::new(&info, theme);
        app.set_home(None);
        let t0 = Instant::now();
        let mut s = Self {
            app,
            root,
            t0,
            now: t0,
            seq: 0,
        };
        s.ev(
            root,
            EventKind::SessionStarted {
                session_id: "20260101-demo".into(),
                workspace: "/srv/projects/demo".into(),
                model: "gpt-4.1".into(),
                role: "copilot".into(),
                approval: ApprovalPolicy::Ask,
                resumed: false,
                roles: vec!["architect".into(), "copilot".into(), "tester".into()],
            },
        );
        s.spawn(root, None, "copilot", "");
        s
    }

    fn ev(&mut self, agent_id: AgentId, kind: EventKind) {
        self.seq += 1;
        let ev = Event {
            seq: self.seq,
            ts: T0_MS + self.now.duration_since(self.t0).as_millis() as u64,
            agent_id,
            kind,
        };
        self.app.apply(&ev, self.now);
    }

    fn at(&mut self, secs: u64) -> &mut Self {
        self.now = self.t0 + Duration::from_secs(secs);
        self
    }

    fn spawn(&mut self, agent: AgentId, parent: Option<AgentId>, role: &str, task: &str) {
        self.ev(
            agent,
            EventKind::AgentSpawned {
                parent_id: parent,
                role: role.into(),
                model: "gpt-4.1-mini".into(),
                task: task.into(),
                depth: u32::from(parent.is_some()),
            },
        );
    }

    fn status(&mut self, agent: AgentId, status: AgentStatus) {
        self.ev(
            agent,
            EventKind::AgentStatus {
                parent_id: None,
                status,
                reason: None,
            },
        );
    }

    fn item(&mut self, agent: AgentId, item: HistoryItem) {
        self.ev(agent, EventKind::ItemAdded { item });
    }

    fn user(&mut self, agent: AgentId, text: &str) {
        self.item(agent, HistoryItem::user(text));
    }

    fn assistant(&mut self, agent: AgentId, text: &str, calls: &[(&str, &str, &str)]) {
        let tool_calls = calls
            .iter()
            .map(|(id, name, args)| ToolCall {
                id: (*id).into(),
                name: (*name).into(),
                arguments: (*args).into(),
            })
            .collect();
        self.item(
            agent,
            HistoryItem::Assistant {
                text: text.into(),
                tool_calls,
                reasoning: Vec::new(),
            },
        );
    }

    fn tool(&mut self, agent: AgentId, call: (&str, &str, &str), output: &str, ok: bool, ms: u64) {
        let (call_id, name, _arguments) = call;
        self.ev(
            agent,
            EventKind::ToolCallBegin {
                call_id: call_id.into(),
            },
        );
        self.ev(
            agent,
            EventKind::ToolCallEnd {
                call_id: call_id.into(),
                duration_ms: ms,
            },
        );
        self.item(
            agent,
            HistoryItem::ToolResult {
                call_id: call_id.into(),
                name: name.into(),
                output: output.into(),
                is_error: !ok,
            },
        );
    }

    fn usage(&mut self, agent: AgentId, prompt: u64, completion: u64, cost: f64) {
        self.ev(
            agent,
            EventKind::Usage {
                model: "gpt-4.1".into(),
                prompt_tokens: prompt,
                completion_tokens: completion,
                cost_usd: cost,
                context_tokens: 0,
                context_window: 0,
                cached_tokens: 0,
            },
        );
    }

    fn delta(&mut self, agent: AgentId, text: &str) {
        self.ev(agent, EventKind::TextDelta { delta: text.into() });
    }

    /// Types a slash command into the composer and sends it.
    fn command(&mut self, text: &str) {
        self.app.focus = Focus::Composer;
        for c in text.chars() {
            self.key(KeyCode::Char(c));
        }
        self.key(KeyCode::Enter);
    }

    fn task(&mut self, id: &str, title: &str, status: TaskStatus, deps: &[&str]) -> Task {
        Task {
            id: id.into(),
            title: title.into(),
            description: None,
            role: None,
            depends_on: deps.iter().map(|d| d.to_string()).collect(),
            status,
            assignee: None,
            notes: Vec::new(),
            result: None,
            paths: Vec::new(),
            wait: false,
            claimed: false,
        }
    }

    fn task_updated(&mut self, task: Task) {
        let root = self.root;
        self.ev(root, EventKind::TaskUpdated { task });
    }

    fn tool_begin(&mut self, agent: AgentId, call_id: &str) {
        let call_id = call_id.into();
        self.ev(agent, EventKind::ToolCallBegin { call_id });
    }

    fn tool_end(&mut self, agent: AgentId, call_id: &str) {
        let call_id = call_id.into();
        self.ev(
            agent,
            EventKind::ToolCallEnd {
                call_id,
                duration_ms: 0,
            },
        );
    }

    fn key(&mut self, code: KeyCode) {
        self.key_mod(code, KeyModifiers::NONE);
    }

    fn key_mod(&mut self, code: KeyCode, m: KeyModifiers) {
        let _ = self.app.on_key(KeyEvent::new(code, m), self.now);
    }

    fn draw(&mut self, w: u16, h: u16) -> Terminal<TestBackend> {
        let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
        let now = self.now;
        term.draw(|f| self.app.render(f, now)).unwrap();
        term
    }

    fn screen(&mut self, w: u16, h: u16) -> String {
        self.draw(w, h).backend().to_string()
    }
}

/// A supervisor (running) with three workers: running, completed, failed.
fn team() -> (Script, [AgentId; 3]) {
    let mut s = Script::new();
    let root = s.root;
    let (coder, tester, scout) = (id(1), id(2), id(3));
    s.user(
        root,
        "Add a --json flag to the CLI and make sure the tests pass.",
    );
    s.ev(root, EventKind::TurnStarted);
    s.status(root, AgentStatus::Running);
    s.usage(root, 5200, 310, 0.0123);
    s.assistant(
        root,
        "I'll split this: a **coder** for the flag, a **tester** for the suite, and a scout to check the docs.",
        &[],
    );
    s.at(2);
    s.spawn(
        coder,
        Some(root),
        "coder",
        "Add a --json flag to `squad exec` that prints events as JSONL",
    );
    s.spawn(
        tester,
        Some(root),
        "tester",
        "Run cargo test and report failures",
    );
    s.spawn(
        scout,
        Some(root),
        "researcher",
        "Find where the CLI flags are documented",
    );
    for w in [coder, tester, scout] {
        s.status(w, AgentStatus::Running);
    }
    s.usage(coder, 12_000, 800, 0.021);
    s.usage(tester, 3_100, 200, 0.004);
    s.usage(scout, 900, 40, 0.001);
    s.at(30);
    s.status(tester, AgentStatus::Completed);
    s.at(41);
    s.ev(
        scout,
        EventKind::Error {
            message: "model returned 500 three times".into(),
        },
    );
    s.status(scout, AgentStatus::Failed);
    s.status(root, AgentStatus::Waiting);
    s.at(75);
    (s, [coder, tester, scout])
}

#[test]
fn empty_session() {
    let mut s = Script::new();
    insta::assert_snapshot!("empty_session_80x24", s.screen(80, 24));
}

#[test]
fn streamed_answer_mid_stream() {
    let mut s = Script::new();
    let root = s.root;
    s.user(root, "Why does `cargo test` fail on CI but not locally?");
    s.ev(root, EventKind::TurnStarted);
    s.status(root, AgentStatus::Running);
    for d in [
        "## Likely cause\n\n",
        "The CI runner sets `TZ=UTC`, while your machine uses local time. ",
        "Two tests compare *formatted* dates:\n\n",
        "- `log::tests::rotates_daily`\n",
        "- `report::tests::",
    ] {
        s.delta(root, d);
    }
    s.at(12);
    insta::assert_snapshot!("streaming_80x24", s.screen(80, 24));
    // The committed item replaces the streamed text (no duplicate).
    s.assistant(root, "## Likely cause\n\nTime zones.", &[]);
    let screen = s.screen(80, 24);
    assert_eq!(screen.matches("Likely cause").count(), 1, "{screen}");
    assert!(!screen.contains("rotates_daily"), "{screen}");
}

#[test]
fn supervisor_with_three_workers() {
    let (mut s, _) = team();
    insta::assert_snapshot!("team_80x24", s.screen(80, 24));
    insta::assert_snapshot!("team_120x30", s.screen(120, 30));
}

/// How full each agent's context is: the tree's column and the details line, from the
/// `usage` event's `context_tokens` and `context_window` (every other snapshot has none).
#[test]
fn context_fill_shows_in_the_tree_and_the_details() {
    let (mut s, [coder, ..]) = team();
    s.ev(
        coder,
        EventKind::Usage {
            model: "qwen2.5-coder".into(),
            prompt_tokens: 6100,
            completion_tokens: 44,
            cost_usd: 0.0,
            context_tokens: 6144,
            context_window: 8192,
            cached_tokens: 0,
        },
    );
    insta::assert_snapshot!("context_fill_tree_80x24", s.screen(80, 24));
    s.app.focus = Focus::Tree;
    s.key(KeyCode::Down);
    s.key(KeyCode::Char('i'));
    let screen = s.screen(80, 30);
    assert!(screen.contains("75%"), "{screen}");
    insta::assert_snapshot!("context_fill_details_80x30", screen);
}

#[test]
fn narrow_terminal_uses_the_switcher() {
    let (mut s, [coder, ..]) = team();
    insta::assert_snapshot!("team_60x20", s.screen(60, 20));
    // In the switcher, arrows move between agents.
    s.app.focus = Focus::Tree;
    s.key(KeyCode::Down);
    assert_eq!(s.app.viewed(), coder);
    let screen = s.screen(60, 20);
    assert!(screen.contains("coder 1a2b3c4e"), "{screen}");
}

#[test]
fn collapsed_subtree_shows_totals() {
    let (mut s, _) = team();
    s.app.focus = Focus::Tree;
    s.key(KeyCode::Left);
    let screen = s.screen(80, 24);
    // 5200+310 + 12000+800 + 3100+200 + 900+40 = 22.6k tokens for the whole subtree.
    assert!(screen.contains("▸ ◐ copilot ★ +3"), "{screen}");
    assert!(screen.contains("22.6k"), "{screen}");
    assert!(
        screen.contains("4 agents"),
        "header still counts all agents: {screen}"
    );
}

#[test]
fn handoff_banner() {
    let mut s = Script::new();
    let root = s.root;
    s.user(
        root,
        "Let's redesign the plugin system before we write more code.",
    );
    s.assistant(
        root,
        "That is a design question; the architect is better placed.",
        &[],
    );
    s.item(
        root,
        HistoryItem::Handoff {
            from: "copilot".into(),
            to: "architect".into(),
            reason: "the user asks for a design, not a change".into(),
            context: "plugin system".into(),
        },
    );
    s.assistant(
        root,
        "Architect here. First question: must plugins run **out of process**?",
        &[],
    );
    insta::assert_snapshot!("handoff_80x24", s.screen(80, 24));
}

#[test]
fn tool_calls_collapsed_and_expanded() {
    let mut s = Script::new();
    let root = s.root;
    s.user(root, "Fix the typo in README");
    s.assistant(
        root,
        "Let me look.",
        &[("c1", "read_file", r#"{"path":"README.md"}"#)],
    );
    s.tool(
        root,
        ("c1", "read_file", r#"{"path":"README.md"}"#),
        "# squad\n\nA teh terminal assistant.\n",
        true,
        3,
    );
    let edit = r#"{"path":"README.md","old":"teh","new":"the"}"#;
    s.assistant(root, "", &[("c2", "edit_file", edit)]);
    s.tool(
        root,
        ("c2", "edit_file", edit),
        "replaced 1 occurrence",
        true,
        12,
    );
    let cmd = r#"{"command":"cargo test --quiet"}"#;
    s.assistant(root, "", &[("c3", "shell", cmd)]);
    s.tool(
        root,
        ("c3", "shell", cmd),
        "error: could not compile `squad`",
        false,
        1840,
    );
    s.assistant(
        root,
        "Fixed the typo; the build is broken for an unrelated reason.",
        &[],
    );
    insta::assert_snapshot!("tools_collapsed_80x24", s.screen(80, 24));
    // Select the first tool line from the conversation pane and expand it.
    s.app.focus = Focus::Conversation;
    s.key(KeyCode::Up);
    s.key(KeyCode::Up);
    s.key(KeyCode::Up);
    s.key(KeyCode::Enter);
    insta::assert_snapshot!("tool_expanded_80x24", s.screen(80, 24));
}

#[test]
fn results_card() {
    let (mut s, [coder, ..]) = team();
    s.user(
        coder,
        "Add a --json flag to `squad exec` that prints events as JSONL",
    );
    s.assistant(
        coder,
        "",
        &[("r1", "return_results", r#"{"status":"partial"}"#)],
    );
    s.tool(
        coder,
        ("r1", "return_results", r#"{"status":"partial"}"#),
        "ok",
        true,
        1,
    );
    s.ev(
        coder,
        EventKind::ResultReturned {
            parent_id: Some(s.root),
            result: AgentResult {
                completed_at: None,
                status: ResultStatus::Partial,
                summary: "Added `--json`; events print as one JSON object per line.".into(),
                artifacts: vec![
                    Artifact {
                        file_path: "src/exec/mod.rs".into(),
                        description: "JSONL printer".into(),
                        change_type: ChangeType::Modified,
                    },
                    Artifact {
                        file_path: "tests/exec_json.rs".into(),
                        description: String::new(),
                        change_type: ChangeType::Created,
                    },
                ],
                known_issues: vec!["summary event not printed on Ctrl+C".into()],
                verification: None,
                merge: None,
            },
        },
    );
    s.status(coder, AgentStatus::Completed);
    s.ev(
        coder,
        EventKind::TurnFinished {
            end: TurnEnd::Returned,
        },
    );
    s.app.focus = Focus::Tree;
    s.key(KeyCode::Down);
    insta::assert_snapshot!("results_card_80x24", s.screen(80, 24));
}

fn finding(rule: &str, severity: Severity, message: &str) -> Finding {
    Finding {
        rule: rule.into(),
        severity,
        message: message.into(),
        fix: String::new(),
    }
}

fn failed_verdict(attempt: u32) -> Verdict {
    Verdict::of(
        attempt,
        3,
        vec![
            finding(
                "artifact_modified",
                Severity::Error,
                "CHANGELOG.md (modified): the file is unchanged since the worker started",
            ),
            finding(
                "tests",
                Severity::Error,
                "`cargo test` exited 101 (test parse_args_handles_empty ... FAILED)",
            ),
            finding(
                "unlisted_change",
                Severity::Warning,
                "src/cli.rs was changed but is not among the artifacts",
            ),
        ],
    )
}

fn returned(s: &mut Script, agent: AgentId, status: ResultStatus, verdict: Verdict) {
    s.ev(agent, EventKind::Verification(verdict.clone()));
    s.ev(
        agent,
        EventKind::ResultReturned {
            parent_id: Some(s.root),
            result: AgentResult {
                completed_at: None,
                status,
                summary: "Added the CHANGELOG entry and a test for `parse_args`.".into(),
                artifacts: vec![Artifact {
                    file_path: "CHANGELOG.md".into(),
                    description: "entry for --json".into(),
                    change_type: ChangeType::Modified,
                }],
                known_issues: vec![],
                verification: Some(verdict),
                merge: None,
            },
        },
    );
    s.ev(
        agent,
        EventKind::TurnFinished {
            end: TurnEnd::Returned,
        },
    );
    s.status(agent, AgentStatus::Completed);
}

/// A worker in a correction round, then verified after it; another out of corrections.
#[test]
fn verified_results() {
    let (mut s, [coder, tester, _]) = team();
    s.user(coder, "Add a CHANGELOG entry and a test for parse_args");
    s.ev(coder, EventKind::Verification(failed_verdict(1)));
    s.item(
        coder,
        HistoryItem::notice("Your result for the task was checked against the workspace and not accepted (attempt 1 of 4). Fix only these and call return_results again: ..."),
    );
    s.app.focus = Focus::Tree;
    s.key(KeyCode::Down);
    insta::assert_snapshot!("correction_round_80x24", s.screen(80, 24));

    returned(
        &mut s,
        coder,
        ResultStatus::Success,
        Verdict::of(2, 3, vec![]),
    );
    insta::assert_snapshot!("verified_card_80x24", s.screen(80, 24));

    s.user(tester, "Run cargo test and report failures");
    s.status(tester, AgentStatus::Running);
    for attempt in 1..=3 {
        s.ev(tester, EventKind::Verification(failed_verdict(attempt)));
    }
    s.at(90);
    returned(&mut s, tester, ResultStatus::Success, failed_verdict(4));
    s.key(KeyCode::Down);
    insta::assert_snapshot!("failed_verification_card_80x24", s.screen(80, 24));

    s.key(KeyCode::Char('i'));
    insta::assert_snapshot!("details_attempts_80x30", s.screen(80, 30));
    s.key(KeyCode::Esc);
    s.app.focus = Focus::Composer;
    for c in "/stats".chars() {
        s.key(KeyCode::Char(c));
    }
    s.key(KeyCode::Enter);
    let screen = s.screen(100, 30);
    // coder: completed after one correction; tester: failed after three.
    assert!(screen.contains("1/0"), "{screen}");
    assert!(screen.contains("0/1"), "{screen}");
    assert!(
        screen.contains("first-pass 0%") && screen.contains("2 of 2 checked tasks needed a"),
        "{screen}"
    );
    // 1 of 2 finished tasks completed; 4 corrections of 6 checked results, 2 per task; in
    // plain words, no metric's name nor where it came from.
    assert!(screen.contains("success rate 50%"), "{screen}");
    assert!(
        screen.contains("6 results checked, 4 sent back to be fixed (67%)")
            && screen.contains("2.0 fixes per task"),
        "{screen}"
    );
    for jargon in ["QC", "catch rate", "retry rate", "seed"] {
        assert!(!screen.contains(jargon), "{jargon}: {screen}");
    }
    assert!(screen.contains("avg score 62/100"), "{screen}");
    insta::assert_snapshot!("stats_tasks_100x30", screen);
}

fn request(
    s: &mut Script,
    agent: AgentId,
    request_id: u64,
    role: &str,
    tool: &str,
    action: ApprovalAction,
) {
    s.ev(
        agent,
        EventKind::ApprovalRequested {
            request_id,
            role: role.into(),
            tool: tool.into(),
            action,
        },
    );
}

#[test]
fn approval_dialogs() {
    let (mut s, [coder, ..]) = team();
    let diff = "--- a/src/main.rs\n+++ b/src/main.rs\n@@ -1,4 +1,5 @@\n use clap::Parser;\n+use serde_json::json;\n \n fn main() {\n-    run();\n+    run_json();\n }\n";
    request(
        &mut s,
        coder,
        7,
        "coder",
        "edit_file",
        ApprovalAction::FileChange {
            path: "src/main.rs".into(),
            diff: diff.into(),
        },
    );
    request(
        &mut s,
        coder,
        8,
        "coder",
        "shell",
        ApprovalAction::Command {
            command: "cargo test --all-features -- --nocapture".into(),
        },
    );
    let root = s.root;
    request(
        &mut s,
        root,
        9,
        "copilot",
        "spawn_agent",
        ApprovalAction::Spawn {
            role: "reviewer".into(),
            task: "Review the --json change for edge cases: empty output, non-UTF-8 paths, Ctrl+C mid-stream.".into(),
            tools: vec!["read_file".into(), "search".into(), "return_results".into()],
            model: "gpt-4.1".into(),
            budget: Budget {
                tokens: Some(50_000),
                cost_usd: Some(0.5),
                wall_s: None,
            },
            instructions: None,
            keep: false,
            name: None,
            environment: None,
            quote: None,
        },
    );
    insta::assert_snapshot!("approval_diff_80x24", s.screen(80, 24));
    s.at(80);
    s.key(KeyCode::Char('y'));
    insta::assert_snapshot!("approval_command_80x24", s.screen(80, 24));
    s.at(85);
    s.key(KeyCode::Char('a'));
    insta::assert_snapshot!("approval_spawn_80x24", s.screen(80, 24));
    insta::assert_snapshot!("approval_spawn_60x20", s.screen(60, 20));
    s.at(90);
    s.key(KeyCode::Esc);
    assert!(s.app.state.approvals.is_empty());
}

/// An `apply_patch` approval: the files it changes in the title, one diff of them all.
#[test]
fn patch_approval_dialog() {
    let (mut s, [coder, ..]) = team();
    let diff = "--- a/src/cli.rs\n+++ b/src/cli.rs\n@@ -3,3 +3,4 @@\n struct Args {\n     verbose: bool,\n+    json: bool,\n }\n\
                --- /dev/null\n+++ b/src/json.rs\n@@ -0,0 +1 @@\n+pub fn print() {}\n\
                rename old.rs → src/legacy.rs\n--- a/notes.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n";
    request(
        &mut s,
        coder,
        7,
        "coder",
        "apply_patch",
        ApprovalAction::Patch {
            paths: vec![
                "src/cli.rs".into(),
                "src/json.rs".into(),
                "old.rs".into(),
                "src/legacy.rs".into(),
                "notes.txt".into(),
            ],
            diff: diff.into(),
        },
    );
    insta::assert_snapshot!("approval_patch_80x24", s.screen(80, 24));
}

#[test]
fn ask_user_dialog() {
    let (mut s, [coder, ..]) = team();
    s.status(coder, AgentStatus::Waiting);
    s.ev(
        coder,
        EventKind::QuestionAsked {
            request_id: 3,
            role: "coder".into(),
            question:
                "The CLI already has --format. Should --json replace it, or live beside it and be \
                documented as the preferred flag?"
                    .into(),
            options: vec![
                "Replace --format (breaking change)".into(),
                "Keep both; --json wins when both are given".into(),
                "Keep both and deprecate --format".into(),
            ],
        },
    );
    let root = s.root;
    request(
        &mut s,
        root,
        9,
        "copilot",
        "shell",
        ApprovalAction::Command {
            command: "cargo fmt".into(),
        },
    );
    insta::assert_snapshot!("ask_user_80x24", s.screen(80, 24));
    // The asker's own conversation says whom it waits for.
    s.app.tree.selected = Some(coder);
    let screen = s.screen(100, 40);
    assert!(screen.contains("waiting for your answer"), "{screen}");
    s.app.tree.selected = Some(root);
    s.at(80);
    s.key(KeyCode::Up);
    s.key(KeyCode::Up);
    insta::assert_snapshot!("ask_user_option_60x20", s.screen(60, 20));
    s.key(KeyCode::Down);
    s.key(KeyCode::Down);
    for c in "Keep both for now".chars() {
        s.key(KeyCode::Char(c));
    }
    insta::assert_snapshot!("ask_user_typed_80x24", s.screen(80, 24));
    s.key(KeyCode::Esc);
    assert!(s.app.state.questions.is_empty());
    assert_eq!(s.app.state.approvals.len(), 1, "the approval comes next");
}

#[test]
fn help_overlay() {
    let (mut s, _) = team();
    s.key(KeyCode::F(1));
    insta::assert_snapshot!("help_80x24", s.screen(80, 24));
    insta::assert_snapshot!("help_60x20", s.screen(60, 20));
}

#[test]
fn details_and_stats_overlays() {
    let (mut s, _) = team();
    s.app.focus = Focus::Tree;
    s.key(KeyCode::Down);
    s.key(KeyCode::Char('i'));
    insta::assert_snapshot!("details_80x24", s.screen(80, 24));
    s.key(KeyCode::Esc);
    s.app.focus = Focus::Composer;
    for c in "/stats".chars() {
        s.key(KeyCode::Char(c));
    }
    s.key(KeyCode::Enter);
    insta::assert_snapshot!("stats_80x24", s.screen(80, 24));
}

#[test]
fn command_completion_popup() {
    let (mut s, _) = team();
    s.key(KeyCode::Char('/'));
    s.key(KeyCode::Char('r'));
    insta::assert_snapshot!("completion_80x24", s.screen(80, 24));
}

#[test]
fn retry_and_error_lines() {
    let mut s = Script::new();
    let root = s.root;
    s.user(root, "hello");
    s.delta(root, "Hel");
    s.ev(
        root,
        EventKind::Retrying {
            attempt: 2,
            max_attempts: 4,
            delay_ms: 800,
            reason: "stream ended before [DONE]".into(),
        },
    );
    s.ev(
        root,
        EventKind::Error {
            message: "the model is unreachable: connection refused".into(),
        },
    );
    let screen = s.screen(80, 24);
    assert!(
        screen.contains("↻ retrying (2/4): stream ended before [DONE]"),
        "{screen}"
    );
    assert!(
        screen.contains("✗ error: the model is unreachable"),
        "{screen}"
    );
    assert!(
        !screen.contains("Hel▌"),
        "partial text dropped on retry: {screen}"
    );
}

#[test]
fn no_color_means_no_colour_anywhere() {
    let build = |theme| {
        let (team, _) = team();
        let mut s = Script::with_theme(theme);
        // Replay the same content under the given theme.
        s.app.state = team.app.state.clone();
        s.now = team.now;
        let diff = "@@ -1 +1 @@\n-a\n+b\n";
        let coder = id(1);
        request(
            &mut s,
            coder,
            1,
            "coder",
            "edit_file",
            ApprovalAction::FileChange {
                path: "a".into(),
                diff: diff.into(),
            },
        );
        s.draw(80, 24)
    };
    let colored = |term: &Terminal<TestBackend>| {
        term.backend()
            .buffer()
            .content()
            .iter()
            .filter(|c| c.fg != Color::Reset || c.bg != Color::Reset)
            .count()
    };
    assert!(colored(&build(Theme::default())) > 0);
    assert_eq!(colored(&build(Theme { color: false })), 0);
}

#[test]
fn long_history_scrolls_and_follows() {
    let mut s = Script::new();
    let root = s.root;
    for i in 0..500 {
        s.user(root, &format!("question {i}"));
        s.assistant(root, &format!("answer {i}"), &[]);
    }
    let screen = s.screen(80, 24);
    assert!(screen.contains("answer 499"), "{screen}");
    s.app.focus = Focus::Conversation;
    s.key(KeyCode::PageUp);
    let screen = s.screen(80, 24);
    assert!(!screen.contains("answer 499"), "{screen}");
    assert!(screen.contains("more below"), "{screen}");
    s.key(KeyCode::Home);
    assert!(s.screen(80, 24).contains("question 0"));
    s.key(KeyCode::End);
    assert!(s.screen(80, 24).contains("answer 499"));
}

/// Every screen at every size, tiny ones included, draws without panicking (no u16
/// underflow in layout arithmetic) and leaves the buffer's size alone.
#[test]
fn any_size_draws() {
    let sizes_w = [
        1, 2, 5, 9, 10, 12, 15, 20, 30, 45, 60, 69, 70, 71, 80, 100, 200,
    ];
    let sizes_h = [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 16, 24, 50];
    let setups: [fn(&mut Script); 10] = [
        |_| {},
        |s| {
            plan(s);
            s.key_mod(KeyCode::Char('t'), KeyModifiers::CONTROL);
        },
        |s| {
            plan(s);
            s.key_mod(KeyCode::Char('t'), KeyModifiers::CONTROL);
            s.key_mod(KeyCode::Char('t'), KeyModifiers::CONTROL);
            s.key(KeyCode::Down);
        },
        |s| {
            plan(s);
            s.command("/tasks");
        },
        |s| s.command("/timeline"),
        |s| s.key(KeyCode::F(1)),
        |s| {
            s.app.focus = Focus::Tree;
            s.key(KeyCode::Down);
            s.key(KeyCode::Char('i'));
        },
        |s| {
            s.app.focus = Focus::Tree;
            s.key(KeyCode::Down);
            s.key(KeyCode::Char('x'));
        },
        |s| {
            for c in "/".chars() {
                s.key(KeyCode::Char(c));
            }
        },
        |s| {
            let coder = id(1);
            request(
                s,
                coder,
                1,
                "coder",
                "edit_file",
                ApprovalAction::FileChange {
                    path: "a".into(),
                    diff: "@@ -1 +1 @@\n-a\n+b\n".repeat(40),
                },
            );
        },
    ];
    for setup in setups {
        let (mut s, _) = team();
        setup(&mut s);
        for w in sizes_w {
            for h in sizes_h {
                let term = s.draw(w, h);
                assert_eq!(term.backend().buffer().area.width, w);
            }
        }
    }
}

/// The team's board: T1 done (tester), T2 running (coder), T3 ready, T5 failed (scout),
/// so T4 and T6, which need it, are blocked.
fn plan(s: &mut Script) {
    let (coder, tester, scout) = (id(1), id(2), id(3));
    let mut t1 = s.task("T1", "Add the --json flag", TaskStatus::Done, &[]);
    t1.assignee = Some(tester);
    t1.result = Some("flag added".into());
    let mut t2 = s.task("T2", "Run the test suite", TaskStatus::Running, &["T1"]);
    t2.assignee = Some(coder);
    let mut t3 = s.task("T3", "Document the flag", TaskStatus::Ready, &["T1"]);
    t3.role = Some("documentation".into());
    let mut t5 = s.task("T5", "Profile the encoder", TaskStatus::Failed, &[]);
    t5.assignee = Some(scout);
    let t4 = s.task("T4", "Benchmark JSON output", TaskStatus::Blocked, &["T5"]);
    let t6 = s.task(
        "T6",
        "Publish the release",
        TaskStatus::Blocked,
        &["T2", "T4"],
    );
    for t in [t1, t2, t3, t4, t5, t6] {
        s.task_updated(t);
    }
}

#[test]
fn task_panel_beside_and_instead_of_the_tree() {
    let (mut s, [coder, tester, _]) = team();
    plan(&mut s);
    // `/tasks` puts the panel below the tree, focused on the first task, whose worker
    // is now in view.
    s.command("/tasks");
    assert_eq!(s.app.left, LeftPane::TreeAndTasks);
    assert_eq!(s.app.focus, Focus::Tasks);
    assert_eq!(s.app.viewed(), tester);
    // Selecting a task selects its worker.
    s.key(KeyCode::Down);
    assert_eq!(s.app.viewed(), coder);
    insta::assert_snapshot!("tasks_beside_tree_120x40", s.screen(120, 40));
    // A task nobody took leaves the view where it was.
    s.key(KeyCode::Down);
    assert_eq!(s.app.viewed(), coder);
    s.key(KeyCode::Up);
    // Ctrl+T: the panel instead of the tree, then back to the tree alone.
    s.key_mod(KeyCode::Char('t'), KeyModifiers::CONTROL);
    assert_eq!(s.app.left, LeftPane::Tasks);
    insta::assert_snapshot!("tasks_instead_of_tree_80x24", s.screen(80, 24));
    s.key_mod(KeyCode::Char('t'), KeyModifiers::CONTROL);
    assert_eq!(s.app.left, LeftPane::Tree);
    assert_eq!(s.app.focus, Focus::Tree, "focus leaves the hidden panel");
    // The status bar counts the board.
    assert!(s.screen(120, 30).contains("tasks 1/6"));
}

#[test]
fn task_panel_marks_a_deadlock() {
    let (mut s, [coder, ..]) = team();
    plan(&mut s);
    // T2 fails and T3 is cancelled: nothing can run, T4 and T6 are stuck for good.
    let mut t2 = s.task("T2", "Run the test suite", TaskStatus::Failed, &["T1"]);
    t2.assignee = Some(coder);
    s.task_updated(t2);
    let t3 = s.task("T3", "Document the flag", TaskStatus::Cancelled, &["T1"]);
    s.task_updated(t3);
    assert!(s.app.state.board.deadlocked());
    s.command("/tasks");
    s.key_mod(KeyCode::Char('t'), KeyModifiers::CONTROL);
    let screen = s.screen(80, 24);
    assert!(screen.contains("⊗ deadlock: 2 stuck"), "{screen}");
    assert!(screen.contains("deadlocked · needs T5✗"), "{screen}");
    assert!(screen.contains("tasks 1/6 deadlock"), "{screen}");
    insta::assert_snapshot!("tasks_deadlock_80x24", screen);
}

#[test]
fn task_panel_on_a_narrow_screen_is_full_screen() {
    let (mut s, [coder, ..]) = team();
    plan(&mut s);
    s.screen(60, 20);
    s.command("/tasks");
    assert_eq!(s.app.overlay, Some(Overlay::Tasks));
    s.key(KeyCode::Down);
    assert_eq!(s.app.viewed(), coder);
    let screen = s.screen(60, 20);
    assert!(screen.contains("T6 Publish the release"), "{screen}");
    // Enter opens the worker's conversation.
    s.key(KeyCode::Enter);
    assert_eq!(s.app.overlay, None);
    assert_eq!(s.app.focus, Focus::Conversation);
    assert!(s.screen(60, 20).contains("coder 1a2b3c4e"));
}

#[test]
fn a_resumed_board_comes_back_from_the_log() {
    // Events 1..=10 are the log read back; the board is folded from them all the same.
    let mut s = Script::resumed(10);
    plan(&mut s);
    assert_eq!(s.app.state.board.len(), 6);
    s.command("/tasks");
    let screen = s.screen(100, 30);
    assert!(screen.contains("T2 Run the test suite"), "{screen}");
}

/// A session resumed an hour after its last run: the timeline places the part read back
/// from the log by its events' `ts`, and leaves out the hour squad was not running.
#[test]
fn a_resumed_timeline_comes_from_the_logs_clock() {
    // Events 1..=7 are the log read back.
    let mut s = Script::resumed(7);
    let (root, coder) = (s.root, id(1));
    s.status(root, AgentStatus::Running);
    s.at(2)
        .spawn(coder, Some(root), "coder", "Add the --json flag");
    s.status(coder, AgentStatus::Running);
    s.at(20).status(coder, AgentStatus::Completed);
    s.at(30).status(root, AgentStatus::Inactive);
    assert_eq!(s.seq, 7);
    s.at(3600).ev(
        root,
        EventKind::SessionStarted {
            session_id: "20260101-demo".into(),
            workspace: "/srv/projects/demo".into(),
            model: "gpt-4.1".into(),
            role: "copilot".into(),
            approval: ApprovalPolicy::Ask,
            resumed: true,
            roles: vec![],
        },
    );
    s.at(3605).status(root, AgentStatus::Running);
    s.at(3615).status(root, AgentStatus::Inactive);
    s.at(3620).command("/timeline");
    let screen = s.screen(100, 20);
    // 0 s to 50 s: 30 s of the last run and 20 s of this one, not the hour between.
    assert!(screen.contains("50s"), "{screen}");
    assert!(screen.contains("left out"), "{screen}");
    insta::assert_snapshot!("timeline_resumed_100x20", screen);
}

/// The supervisor spawns three workers that run side by side: the coder calls tools and
/// waits for an approval, the tester runs a long tool call, the scout fails early, while
/// the supervisor waits for them all.
#[test]
fn timeline_of_three_agents_that_overlapped() {
    let mut s = Script::new();
    let root = s.root;
    let (coder, tester, scout) = (id(1), id(2), id(3));
    s.status(root, AgentStatus::Running);
    s.at(2);
    s.spawn(coder, Some(root), "coder", "Add the flag");
    s.spawn(tester, Some(root), "tester", "Run the tests");
    s.spawn(scout, Some(root), "researcher", "Find the docs");
    for w in [coder, tester, scout] {
        s.status(w, AgentStatus::Running);
    }
    s.tool_begin(root, "wait");
    s.status(root, AgentStatus::Waiting);
    s.at(4);
    s.tool_begin(tester, "t1");
    s.at(5);
    s.tool_begin(coder, "c1");
    s.at(6);
    s.ev(
        scout,
        EventKind::Error {
            message: "500".into(),
        },
    );
    s.status(scout, AgentStatus::Failed);
    s.at(9);
    s.tool_end(coder, "c1");
    s.at(12);
    s.status(coder, AgentStatus::Waiting);
    s.ev(
        coder,
        EventKind::ApprovalRequested {
            request_id: 1,
            role: "coder".into(),
            tool: "write_file".into(),
            action: ApprovalAction::FileChange {
                path: "src/cli.rs".into(),
                diff: String::new(),
            },
        },
    );
    s.at(14);
    s.tool_end(tester, "t1");
    s.at(15);
    s.status(tester, AgentStatus::Completed);
    s.at(16);
    s.ev(
        coder,
        EventKind::ApprovalResolved {
            request_id: 1,
            decision: ApprovalDecision::Approve,
        },
    );
    s.status(coder, AgentStatus::Running);
    s.at(20);
    s.status(coder, AgentStatus::Completed);
    s.tool_end(root, "wait");
    s.status(root, AgentStatus::Running);
    s.at(22);
    s.status(root, AgentStatus::Inactive);
    s.at(24);
    s.command("/timeline");
    assert_eq!(s.app.overlay, Some(Overlay::Timeline));
    insta::assert_snapshot!("timeline_100x20", s.screen(100, 20));
}

/// Issue 54 part 7: the timeline has a line, at its time, for each message between
/// teammates (sender → recipient, its first line), each claim and give-back, and each plan
/// submitted and decided.
#[test]
fn timeline_lines_for_messages_claims_and_plans() {
    use squad::protocol::{PlanDecision, PlanSubmitted};
    let mut s = Script::new();
    let root = s.root;
    let (coder, tester) = (id(1), id(2));
    s.status(root, AgentStatus::Running);
    s.at(1);
    s.spawn(coder, Some(root), "coder", "Claim from the board");
    s.spawn(tester, Some(root), "tester", "Plan the tests");
    for w in [coder, tester] {
        s.status(w, AgentStatus::Running);
    }
    s.at(3);
    let mut t1 = s.task("T1", "The lexer", TaskStatus::Running, &[]);
    t1.assignee = Some(coder);
    t1.claimed = true;
    t1.paths = vec!["src/lexer/**".into()];
    s.ev(coder, EventKind::TaskUpdated { task: t1.clone() });
    s.at(5);
    s.ev(
        tester,
        EventKind::PlanSubmitted(PlanSubmitted {
            plan_id: 1,
            plan: "Rewrite every test.\nThen the docs.".into(),
        }),
    );
    s.at(7);
    s.ev(
        tester,
        EventKind::PlanDecided(PlanDecision {
            plan_id: 1,
            approved: false,
            reason: "only the lexer tests".into(),
            by: Some(root),
        }),
    );
    s.at(9);
    s.ev(
        coder,
        EventKind::AgentMessage {
            to: tester,
            message_id: 1,
            text: "I renamed Token::Ident to Token::Name\nin token.rs".into(),
        },
    );
    s.at(12);
    t1.status = TaskStatus::Ready;
    t1.assignee = None;
    t1.notes = vec!["given back by worker 1a2b3c4e: it failed".into()];
    s.ev(coder, EventKind::TaskUpdated { task: t1 });
    s.status(coder, AgentStatus::Failed);
    s.at(14);
    s.status(tester, AgentStatus::Completed);
    s.status(root, AgentStatus::Inactive);
    s.at(16);
    s.command("/timeline");
    let screen = s.screen(100, 24);
    for needle in [
        "3s  ⚑ coder 1a2b3c4e claimed T1 The lexer · lease src/lexer/**",
        "5s  ▤ plan of tester 1a2b3c4f awaiting approval: Rewrite every test.…",
        "7s  ▤ plan of tester 1a2b3c4f rejected by copilot: only the lexer tests",
        "9s  ✉ coder 1a2b3c4e → tester 1a2b3c4f: I renamed Token::Ident to Token::Name…",
        "12s  ↩ coder 1a2b3c4e gave back T1 The lexer: given back by worker 1a2b3c4e: it failed",
    ] {
        assert!(screen.contains(needle), "{needle}\n{screen}");
    }
    insta::assert_snapshot!("timeline_team_news_100x24", screen);
}

#[test]
fn paused_team() {
    let (mut s, [coder, ..]) = team();
    let root = s.root;
    s.ev(root, EventKind::Paused);
    s.status(coder, AgentStatus::Paused);
    let screen = s.screen(80, 24);
    assert!(screen.contains("PAUSED"), "{screen}");
    insta::assert_snapshot!("paused_80x24", screen);
    s.ev(root, EventKind::Resumed);
    s.status(coder, AgentStatus::Running);
    let screen = s.screen(80, 24);
    assert!(!screen.contains("PAUSED"), "{screen}");
}

/// The team of [`team`] with budgets: the coder's tokens and dollars, the tester's wall
/// time; the researcher failed on its token budget.
fn team_with_budgets() -> (Script, [AgentId; 3]) {
    let (mut s, [coder, tester, scout]) = team();
    let budget = |tokens, cost_usd, wall_s| EventKind::AgentBudget {
        budget: Budget {
            tokens,
            cost_usd,
            wall_s,
        },
    };
    s.ev(coder, budget(Some(50_000), Some(0.5), None));
    s.ev(tester, budget(None, None, Some(600)));
    s.ev(scout, budget(Some(900), None, None));
    s.ev(
        scout,
        EventKind::BudgetReached {
            scope: BudgetScope::Agent,
            measure: BudgetMeasure::Tokens,
            spent: 940.0,
            limit: 900.0,
        },
    );
    (s, [coder, tester, scout])
}

#[test]
fn spend_against_budget_in_the_tree() {
    let (mut s, [_, _, scout]) = team_with_budgets();
    let screen = s.screen(120, 30);
    assert!(screen.contains("coder 1a2b3c4e Add a"), "{screen}");
    assert!(screen.contains("12.8k/50k"), "{screen}");
    assert!(screen.contains("940/900"), "{screen}");
    insta::assert_snapshot!("budgets_120x30", screen);
    // Narrow: spend against budget outlasts the other figures.
    let screen = s.screen(80, 24);
    assert!(screen.contains("12.8k/50k"), "{screen}");
    insta::assert_snapshot!("budgets_80x24", screen);
    // The worker that ran out says so in its conversation.
    s.app.focus = Focus::Tree;
    s.key(KeyCode::Down);
    s.key(KeyCode::Down);
    s.key(KeyCode::Down);
    assert_eq!(s.app.viewed(), scout);
    let screen = s.screen(100, 24);
    assert!(
        screen.contains("! budget: 940 of 900 tokens spent: stopped before its"),
        "{screen}"
    );
}

#[test]
fn session_budget_pauses_with_a_notice() {
    let (mut s, [coder, ..]) = team();
    let root = s.root;
    s.ev(
        root,
        EventKind::BudgetReached {
            scope: BudgetScope::Session,
            measure: BudgetMeasure::CostUsd,
            spent: 0.0381,
            limit: 0.03,
        },
    );
    s.ev(root, EventKind::Paused);
    s.status(coder, AgentStatus::Paused);
    let screen = s.screen(80, 24);
    assert!(screen.contains("BUDGET $0.038/$0.030"), "{screen}");
    assert!(screen.contains("/budget USD"), "{screen}");
    insta::assert_snapshot!("session_budget_80x24", screen);
    // Typed: a new limit for the runtime.
    for c in "/budget 5".chars() {
        s.key(KeyCode::Char(c));
    }
    let actions = s
        .app
        .on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE), s.now);
    assert_eq!(
        actions,
        [Action::Send(Op::SetSessionBudget {
            limit_usd: Some(5.0)
        })]
    );
    s.ev(
        root,
        EventKind::SessionBudgetSet {
            limit_usd: Some(5.0),
        },
    );
    s.ev(root, EventKind::Resumed);
    let screen = s.screen(80, 24);
    assert!(!screen.contains("BUDGET"), "{screen}");
    assert!(screen.contains("session budget set to $5.00"), "{screen}");
}

#[test]
fn interrupted_agent_after_resume() {
    let (mut s, [coder, ..]) = team();
    s.ev(
        coder,
        EventKind::AgentStatus {
            parent_id: Some(s.root),
            status: AgentStatus::Interrupted,
            reason: Some("squad stopped while it was at work".into()),
        },
    );
    s.key(KeyCode::Tab);
    s.key(KeyCode::Down);
    let screen = s.screen(100, 24);
    assert!(screen.contains("↯"), "{screen}");
    insta::assert_snapshot!("interrupted_100x24", screen);
}

#[test]
fn stalled_agent_in_the_tree_and_the_details() {
    let (mut s, [coder, ..]) = team();
    s.ev(
        coder,
        EventKind::Stalled {
            on: "tool call run_command cargo test --workspace".into(),
            since_s: 40,
        },
    );
    s.at(80);
    s.app.focus = Focus::Tree;
    s.key(KeyCode::Down);
    let screen = s.screen(100, 24);
    assert!(screen.contains("coder 1a2b3c4e ! stalled"), "{screen}");
    insta::assert_snapshot!("stalled_100x24", screen);
    s.key(KeyCode::Char('i'));
    let screen = s.screen(100, 24);
    assert!(
        screen.contains("45s without progress on the tool call run_command"),
        "{screen}"
    );
    insta::assert_snapshot!("stalled_details_100x24", screen);
    s.key(KeyCode::Esc);
    // Progress again: the mark goes.
    s.ev(coder, EventKind::Unstalled);
    let screen = s.screen(100, 24);
    assert!(!screen.contains("stalled"), "{screen}");
}

#[test]
fn loop_stopped_worker_shows_its_reason() {
    let (mut s, [coder, ..]) = team();
    let why = "loop: called edit_file 5 times with the same arguments, same error";
    s.assistant(
        coder,
        "",
        &[(
            "e5",
            "edit_file",
            r#"{"path":"src/cli.rs","old_text":"json","new_text":"json"}"#,
        )],
    );
    s.tool(
        coder,
        ("e5", "edit_file", ""),
        &format!("invalid arguments: old_text and new_text are identical; nothing would change\n\n[squad] Stopped this turn: {why}."),
        false,
        3,
    );
    s.ev(
        coder,
        EventKind::Error {
            message: why.into(),
        },
    );
    s.ev(
        coder,
        EventKind::AgentStatus {
            parent_id: Some(s.root),
            status: AgentStatus::Failed,
            reason: Some(why.into()),
        },
    );
    s.app.focus = Focus::Tree;
    s.key(KeyCode::Down);
    let screen = s.screen(100, 24);
    assert!(screen.contains("✗ coder 1a2b3c4e loop"), "{screen}");
    insta::assert_snapshot!("loop_stopped_100x24", screen);
    s.key(KeyCode::Char('i'));
    let screen = s.screen(100, 24);
    assert!(
        screen.contains("failed (loop: called edit_file 5 times"),
        "{screen}"
    );
    insta::assert_snapshot!("loop_stopped_details_100x24", screen);
}

#[test]
fn spawn_dialog_with_instructions_narrowed_tools_and_keep() {
    let mut s = Script::new();
    let root = s.root;
    request(
        &mut s,
        root,
        4,
        "copilot",
        "spawn_agent",
        ApprovalAction::Spawn {
            role: "code_reviewer".into(),
            task: "Review src/cli.rs for panics on bad input.".into(),
            tools: vec!["read_file".into(), "return_results".into()],
            model: "gpt-4.1".into(),
            budget: Budget::default(),
            instructions: Some(
                "Only report panics and unwraps; ignore style.\nQuote the line of each finding."
                    .into(),
            ),
            keep: true,
            name: None,
            environment: None,
            quote: None,
        },
    );
    let screen = s.screen(80, 24);
    for needle in [
        "read_file, return_results",
        "kept for follow-ups",
        "instructions (added to its role's prompt)",
        "Quote the line of each finding.",
    ] {
        assert!(screen.contains(needle), "{needle}: {screen}");
    }
    insta::assert_snapshot!("approval_spawn_ad_hoc_80x24", screen);
}

#[test]
fn released_worker_in_the_tree_and_the_details() {
    let (mut s, [_, tester, _]) = team();
    s.ev(
        tester,
        EventKind::AgentOptions(SpawnOptions {
            keep: false,
            instructions: Some("Run only the CLI tests.".into()),
            tools: Some(vec!["run_tests".into(), "return_results".into()]),
            name: None,
            environment: None,
        }),
    );
    s.ev(tester, EventKind::ResultDelivered { parent_id: s.root });
    s.at(90);
    s.ev(tester, EventKind::Released);
    s.app.focus = Focus::Tree;
    s.key(KeyCode::Down);
    s.key(KeyCode::Down);
    let screen = s.screen(100, 24);
    assert!(screen.contains("tester 1a2b3c4f released"), "{screen}");
    assert!(
        screen.contains("(released)"),
        "the composer says so: {screen}"
    );
    assert!(screen.contains("takes no more"), "{screen}");
    insta::assert_snapshot!("released_100x24", screen);
    s.key(KeyCode::Char('i'));
    let screen = s.screen(100, 30);
    for needle in [
        "released: takes no more messages",
        "run_tests, return_results (named by its supervisor)",
        "Run only the CLI tests.",
    ] {
        assert!(screen.contains(needle), "{needle}: {screen}");
    }
    insta::assert_snapshot!("released_details_100x30", screen);
}

#[test]
fn save_role_prompt_in_the_agents_view() {
    let (mut s, [coder, ..]) = team();
    s.command("/agents");
    s.key(KeyCode::Down);
    s.key(KeyCode::Char('s'));
    assert_eq!(s.app.overlay, Some(Overlay::SaveRole(coder)));
    let screen = s.screen(80, 24);
    assert!(
        screen.contains("s save as role") || screen.contains("Enter save"),
        "{screen}"
    );
    insta::assert_snapshot!("save_role_80x24", screen);
}

#[test]
fn worktrees_in_the_tree_and_the_diff_view() {
    use squad::protocol::{ConflictFile, ConflictHunk, DiffStat, LineRange};
    let (mut s, [coder, tester, _]) = team();
    let root = s.root;
    let docs = id(4);
    s.spawn(docs, Some(root), "docs", "Document the --json flag");
    s.status(docs, AgentStatus::Running);
    for (w, added, removed) in [(coder, 12, 3), (tester, 4, 0), (docs, 9, 1)] {
        s.ev(
            w,
            EventKind::WorktreeCreated {
                path: format!("/data/worktrees/s/{}", w.short()).into(),
                branch: format!("squad/{}", w.short()),
            },
        );
        s.ev(
            w,
            EventKind::DiffStat(DiffStat {
                files: 1,
                added,
                removed,
            }),
        );
    }
    s.ev(
        tester,
        EventKind::Merged {
            files: vec!["tests/cli.rs".into()],
            record: None,
        },
    );
    s.status(docs, AgentStatus::Completed);
    s.ev(
        docs,
        EventKind::MergeConflict {
            conflicts: vec![ConflictFile {
                path: "README.md".into(),
                kind: "contents".into(),
                message: String::new(),
                hunks: vec![ConflictHunk {
                    workspace: LineRange {
                        start: 12,
                        count: 2,
                    },
                    worker: LineRange {
                        start: 12,
                        count: 3,
                    },
                }],
            }],
        },
    );
    let screen = s.screen(120, 30);
    for mark in ["+12 −3 pending", "+4 −0 merged", "+9 −1 conflict"] {
        assert!(screen.contains(mark), "{mark}\n{screen}");
    }
    // The conflict is told where the user reads, and flashed in the status bar.
    assert!(
        screen.contains("merge conflict: the change of docs 1a2b3c51 was not merged"),
        "{screen}"
    );
    assert!(screen.contains("README.md (contents): workspace lines 12–13 vs"));
    insta::assert_snapshot!("worktrees_tree_120x30", screen);

    // `d` on a worker asks the runtime for its change; the popup waits for it.
    s.app.focus = Focus::Tree;
    s.key(KeyCode::Down);
    let actions = s
        .app
        .on_key(KeyEvent::new(KeyCode::Char('d'), KeyModifiers::NONE), s.now);
    assert_eq!(
        actions,
        vec![Action::Send(Op::ShowDiff { agent_id: coder })]
    );
    assert_eq!(s.app.overlay, Some(Overlay::Diff(coder)));
    assert!(s.screen(100, 24).contains("reading the worker's change…"));
    let text = "diff --git a/src/cli.rs b/src/cli.rs\nindex 1111111..2222222 100644\n\
                --- a/src/cli.rs\n+++ b/src/cli.rs\n@@ -10,3 +10,4 @@ pub struct Exec {\n \
                pub prompt: String,\n-    pub quiet: bool,\n+    /// Print events as JSON lines.\n\
                +    pub json: bool,\n }\n";
    s.ev(coder, EventKind::Diff { text: text.into() });
    let screen = s.screen(100, 24);
    assert!(
        screen.contains("coder 1a2b3c4e · +12 −3 · pending"),
        "{screen}"
    );
    insta::assert_snapshot!("diff_view_100x24", screen);
    s.key(KeyCode::Char('d'));
    assert_eq!(s.app.overlay, None);
    // The details name the worktree and the change.
    s.key(KeyCode::Char('i'));
    let screen = s.screen(100, 30);
    assert!(
        screen.contains("+12 −3 in 1 file pending · /data/worktrees/s/1a2b3c4e"),
        "{screen}"
    );
}

#[test]
fn at_mention_popup_while_typing_a_path() {
    let mut s = Script::new();
    let root = s.root;
    for c in "explain @".chars() {
        s.key(KeyCode::Char(c));
    }
    insta::assert_snapshot!("at_mention_listing_80x24", s.screen(80, 24));
    let paths = [
        "Cargo.toml",
        "README.md",
        "src/main.rs",
        "src/tui/composer.rs",
        "docs/compose.md",
    ];
    let paths = paths.iter().map(|p| p.to_string()).collect();
    s.ev(root, EventKind::Files { paths });
    for c in "comp".chars() {
        s.key(KeyCode::Char(c));
    }
    s.key(KeyCode::Down);
    insta::assert_snapshot!("at_mention_popup_80x24", s.screen(80, 24));
}

#[test]
fn rewind_lists_messages_then_asks_what_to_put_back() {
    use ::squad::protocol::{ChangedFile, CheckpointSummary, FileChangeKind};
    let mut s = Script::new();
    let root = s.root;
    s.command("/rewind");
    let list = vec![
        CheckpointSummary {
            message: 1,
            text: "add a --verbose flag to src/main.rs".into(),
            changes: Ok(vec![
                ChangedFile {
                    path: "src/main.rs".into(),
                    kind: FileChangeKind::Modified,
                },
                ChangedFile {
                    path: "tests/verbose.rs".into(),
                    kind: FileChangeKind::Added,
                },
            ]),
        },
        CheckpointSummary {
            message: 2,
            text: "and document it".into(),
            changes: Err("the session stopped before it was taken".into()),
        },
    ];
    s.ev(root, EventKind::Checkpoints { list });
    s.key(KeyCode::Up);
    insta::assert_snapshot!("rewind_pick_80x24", s.screen(80, 24));
    s.key(KeyCode::Enter);
    insta::assert_snapshot!("rewind_choose_80x24", s.screen(80, 24));
}

/// A goal two checks in: each check a cell of the persona's conversation, the goal and its
/// last check in the status bar; `/goal` alone says the same.
#[test]
fn goal_checks_in_the_conversation_and_the_status_bar() {
    let mut s = Script::new();
    let root = s.root;
    let goal = squad::protocol::Goal::new("make the tests pass", "sh test.sh");
    s.ev(
        root,
        EventKind::GoalSet {
            goal: goal.clone(),
            spent_usd: 0.0,
        },
    );
    s.user(root, &goal.brief());
    for turn in 1..=2 {
        s.ev(root, EventKind::TurnStarted);
        s.status(root, AgentStatus::Running);
        s.assistant(root, &format!("Attempt {turn}: edited calc.py."), &[]);
        s.ev(
            root,
            EventKind::GoalChecked(squad::protocol::GoalCheck {
                turn,
                max_turns: 10,
                passed: false,
                exit_code: Some(1),
                output_tail: format!("FAILED test_add\nassert add(2, 2) == 4, got {turn}"),
            }),
        );
        s.at(u64::from(turn) * 5);
    }
    insta::assert_snapshot!("goal_checks_100x24", s.screen(100, 24));
    s.command("/goal");
    let screen = s.screen(100, 24);
    assert!(
        screen.contains("met when the command `sh test.sh`"),
        "{screen}"
    );
}

fn review_finding(
    file: &str,
    line: u32,
    severity: ReviewSeverity,
    focus: &[&str],
    title: &str,
    body: &str,
) -> ReviewFinding {
    ReviewFinding {
        file: file.into(),
        line,
        end_line: None,
        severity,
        focus: focus.iter().map(|f| f.to_string()).collect(),
        title: title.into(),
        body: body.into(),
        quote: String::new(),
    }
}

#[test]
fn review_findings_popup_and_the_conversation_lines() {
    let mut s = Script::new();
    let root = s.root;
    // `/review base main` asks the core; nothing else happens on screen until it answers.
    s.app.focus = Focus::Composer;
    for c in "/review base main".chars() {
        s.key(KeyCode::Char(c));
    }
    let actions = s
        .app
        .on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE), s.now);
    let target = ReviewTarget::Base {
        branch: "main".into(),
    };
    assert_eq!(
        actions,
        vec![Action::Send(Op::Review {
            target: target.clone()
        })]
    );
    let reviewers = [id(1), id(2), id(3)];
    for (r, focus) in reviewers.iter().zip(["correctness", "tests", "security"]) {
        s.spawn(*r, Some(root), "code_reviewer", &format!("review: {focus}"));
        s.status(*r, AgentStatus::Running);
    }
    s.ev(
        root,
        EventKind::ReviewStarted {
            target: target.clone(),
            reviewers: reviewers.to_vec(),
        },
    );
    s.at(20);
    for r in reviewers {
        s.status(r, AgentStatus::Inactive);
    }
    let findings = vec![
        review_finding(
            "src/sum.rs",
            3,
            ReviewSeverity::High,
            &["correctness", "tests"],
            "Off-by-one: the loop reads past the end of v",
            "`0..=v.len()` indexes v[v.len()], which panics. Use `0..v.len()` or iterate.",
        ),
        review_finding(
            "src/config.rs",
            41,
            ReviewSeverity::Low,
            &["security"],
            "The config path is not checked against the workspace",
            "",
        ),
    ];
    let dropped = vec![DroppedFinding {
        finding: review_finding(
            "src/sum.rs",
            400,
            ReviewSeverity::Low,
            &["tests"],
            "unwrap on input",
            "",
        ),
        reason: "line 400 is past the end of src/sum.rs (7 lines)".into(),
    }];
    s.ev(
        root,
        EventKind::ReviewFinished {
            target,
            findings,
            dropped,
            unanswered: None,
        },
    );
    assert_eq!(s.app.overlay, Some(Overlay::Review));
    insta::assert_snapshot!("review_findings_80x24", s.screen(80, 24));
    // Enter closes it, as Esc does; the findings stay in the persona's conversation.
    s.key(KeyCode::Enter);
    assert_eq!(s.app.overlay, None);
    let screen = s.screen(100, 24);
    assert!(
        screen.contains("src/sum.rs:3 high Off-by-one: the loop reads past"),
        "{screen}"
    );
    assert!(screen.contains("2 findings, 1 dropped"), "{screen}");
}

/// Two workers of one role at work (issue 50): each row keeps the id the approvals name
/// and its task's first words though both have spent tokens, and the persona's pane says
/// what each is doing now.
#[test]
fn two_workers_of_one_role_are_told_apart() {
    let mut s = Script::new();
    let root = s.root;
    let (calc, parser) = (id(1), id(2));
    s.user(root, "Fix the calculator and the parser.");
    s.status(root, AgentStatus::Running);
    s.at(1);
    s.spawn(calc, Some(root), "implementer", "Fix add() in calc.py");
    s.spawn(parser, Some(root), "implementer", "Parse negative numbers");
    for w in [calc, parser] {
        s.status(w, AgentStatus::Running);
        s.usage(w, 9_000, 400, 0.01);
    }
    s.status(root, AgentStatus::Waiting);
    s.assistant(
        calc,
        "",
        &[("c1", "edit_file", r#"{"path":"calc.py","old_text":"a-b"}"#)],
    );
    s.tool_begin(calc, "c1");
    s.delta(parser, "Reading the tokenizer first");
    s.at(20);
    let screen = s.screen(80, 24);
    for needle in [
        "implementer 1a2b3c4e",
        "implementer 1a2b3c4f",
        "Fix add",
        "Parse neg",
        "implementer 1a2b3c4e edit_file calc",
        "implementer 1a2b3c4f writing: Re",
        "waiting for its 2 workers",
    ] {
        assert!(screen.contains(needle), "{needle}: {screen}");
    }
    assert!(
        !screen.contains("waiting for workers or approval"),
        "{screen}"
    );
    insta::assert_snapshot!("same_role_workers_80x24", screen);
    let screen = s.screen(120, 40);
    for needle in [
        "implementer 1a2b3c4e Fix add() i",
        "edit_file calc.py 19s",
        "writing: Reading the tokenizer first 19s",
    ] {
        assert!(screen.contains(needle), "{needle}: {screen}");
    }
    // The approval names the id the tree shows.
    request(
        &mut s,
        parser,
        7,
        "implementer",
        "run_command",
        ApprovalAction::Command {
            command: "pytest -q".into(),
        },
    );
    let screen = s.screen(120, 40);
    assert!(
        screen.contains("approval · implementer 1a2b3c4f"),
        "{screen}"
    );
    assert!(
        screen.contains("waiting for your approval: run_command"),
        "{screen}"
    );
    insta::assert_snapshot!("same_role_workers_120x40", screen);
}

/// Workers their supervisor named (`spawn_agent`'s `name`): the tree's rows, the live
/// lines, an approval and the details name each by it, where the task's first words
/// would be.
#[test]
fn named_workers_go_by_their_names() {
    let mut s = Script::new();
    let root = s.root;
    let (calc, parser) = (id(1), id(2));
    s.user(root, "Fix the calculator and the parser.");
    s.status(root, AgentStatus::Running);
    s.at(1);
    for (w, task, name) in [
        (calc, "Fix add() in calc.py", "calc fix"),
        (parser, "Parse negative numbers", "negatives"),
    ] {
        s.spawn(w, Some(root), "implementer", task);
        let options = SpawnOptions {
            name: Some(name.into()),
            ..SpawnOptions::default()
        };
        s.ev(w, EventKind::AgentOptions(options));
        s.status(w, AgentStatus::Running);
        s.usage(w, 9_000, 400, 0.01);
    }
    s.status(root, AgentStatus::Waiting);
    s.delta(parser, "Reading the tokenizer first");
    s.at(20);
    let screen = s.screen(120, 40);
    for needle in [
        "implementer 1a2b3c4e calc fix",
        "implementer 1a2b3c4f negatives",
        "implementer 1a2b3c4f negatives · writing: Reading",
    ] {
        assert!(screen.contains(needle), "{needle}: {screen}");
    }
    assert!(
        !screen.contains("Fix add"),
        "the name stands for the task: {screen}"
    );
    insta::assert_snapshot!("named_workers_120x40", screen);
    request(
        &mut s,
        parser,
        7,
        "implementer",
        "run_command",
        ApprovalAction::Command {
            command: "pytest -q".into(),
        },
    );
    let screen = s.screen(120, 40);
    assert!(
        screen.contains("approval · implementer 1a2b3c4f negatives"),
        "{screen}"
    );
    s.at(25);
    s.key(KeyCode::Esc);
    s.app.focus = Focus::Tree;
    s.key(KeyCode::Down);
    s.key(KeyCode::Char('i'));
    let screen = s.screen(120, 40);
    for needle in [
        "implementer 1a2b3c4e calc fix",
        "name",
        "Fix add() in calc.py",
    ] {
        assert!(screen.contains(needle), "{needle}: {screen}");
    }
    insta::assert_snapshot!("named_worker_details_120x40", screen);
}

/// More workers than rows: the tree's last line says how many are cut and points to
/// `/agents`, which shows them all.
#[test]
fn a_cut_tree_points_to_agents() {
    let mut s = Script::new();
    let root = s.root;
    for n in 1..=30 {
        s.spawn(id(n), Some(root), "tester", &format!("suite {n}"));
    }
    let screen = s.screen(80, 24);
    assert!(screen.contains("more: /agents"), "{screen}");
    insta::assert_snapshot!("cut_tree_80x24", screen);
    s.command("/agents");
    let screen = s.screen(80, 24);
    assert!(screen.contains("more · ↑↓ scroll"), "{screen}");
}

/// `!cmd` output and an `@file` attachment as they are (issue 50): indentation and runs
/// of spaces kept, no `<file …>` wrapper; the attachment one line until Enter on it.
#[test]
fn command_output_and_attachments_are_shown_as_they_are() {
    let mut s = Script::new();
    let root = s.root;
    s.user(
        root,
        "!pytest -q\n..F\n    def test_add():\n>       assert add(2, 3) == 5\nE       assert -1 == 5\nname      stmts   miss\ncalc.py       4      0",
    );
    s.user(
        root,
        "why does @test_calc.py fail?\n\n<file path=\"test_calc.py\">\nfrom calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n</file>",
    );
    let screen = s.screen(80, 24);
    for needle in [
        "    def test_add():",
        ">       assert add(2, 3) == 5",
        "name      stmts   miss",
        "attached test_calc.py, 5 lines",
    ] {
        assert!(screen.contains(needle), "{needle}: {screen}");
    }
    assert!(!screen.contains("<file"), "{screen}");
    assert!(!screen.contains("from calc import add"), "{screen}");
    insta::assert_snapshot!("verbatim_collapsed_80x24", screen);
    s.app.focus = Focus::Conversation;
    s.key(KeyCode::Up);
    s.key(KeyCode::Enter);
    let screen = s.screen(80, 24);
    assert!(screen.contains("│     assert add(2, 3) == 5"), "{screen}");
    assert!(screen.contains("from calc import add"), "{screen}");
    insta::assert_snapshot!("verbatim_expanded_80x24", screen);
}

/// `/` lists every command, narrows as you type, ↑↓ move the pick and Enter takes it.
#[test]
fn the_slash_popup_lists_every_command_and_picks_with_arrows() {
    let mut s = Script::new();
    s.app.focus = Focus::Composer;
    s.key(KeyCode::Char('/'));
    let screen = s.screen(100, 40);
    for (command, _) in squad::tui::COMMANDS {
        assert!(screen.contains(command), "{command}: {screen}");
    }
    insta::assert_snapshot!("slash_popup_100x40", screen);
    for c in "ti".chars() {
        s.key(KeyCode::Char(c));
    }
    let screen = s.screen(100, 40);
    assert!(
        screen.contains("/timeline") && !screen.contains("/agents"),
        "{screen}"
    );
    s.key(KeyCode::Enter);
    assert_eq!(s.app.overlay, Some(Overlay::Timeline));
    s.key(KeyCode::Esc);
    // `/s` offers /stats and /stop: ↓ picks the second, Enter runs it.
    s.app.focus = Focus::Composer;
    s.key(KeyCode::Char('/'));
    s.key(KeyCode::Char('s'));
    s.key(KeyCode::Down);
    let screen = s.screen(100, 40);
    insta::assert_snapshot!("slash_popup_s_100x40", screen);
    let picked: Vec<_> = s
        .app
        .on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE), s.now);
    assert_eq!(picked, vec![Action::Send(Op::Stop)]);
}

/// `u` on a merged worker asks first; `y` sends the undo, `n` keeps the merge.
#[test]
fn undoing_a_merge_asks_first() {
    let (mut s, [coder, ..]) = team();
    s.app.focus = Focus::Tree;
    s.key(KeyCode::Down);
    let asked = s
        .app
        .on_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::NONE), s.now);
    assert!(
        asked.is_empty(),
        "nothing is undone before the answer: {asked:?}"
    );
    assert_eq!(s.app.overlay, Some(Overlay::ConfirmUndo(coder)));
    let screen = s.screen(80, 24);
    assert!(
        screen.contains("Take the merged change of coder 1a2b3c4e"),
        "{screen}"
    );
    insta::assert_snapshot!("undo_asks_80x24", screen);
    let kept = s
        .app
        .on_key(KeyEvent::new(KeyCode::Char('n'), KeyModifiers::NONE), s.now);
    assert!(kept.is_empty() && s.app.overlay.is_none());
    s.key(KeyCode::Char('u'));
    let sent = s
        .app
        .on_key(KeyEvent::new(KeyCode::Char('y'), KeyModifiers::NONE), s.now);
    assert_eq!(
        sent,
        vec![Action::Send(Op::UndoMerge {
            agent_id: coder,
            force: false
        })]
    );
}

/// Keys a terminal user expects: `?` on an empty composer opens help (typed after a word,
/// it is a character); the first Ctrl+C clears a draft; Ctrl+U kills to the line start;
/// `/clear` starts a new session as `/new` does.
#[test]
fn keys_users_expect_in_the_composer() {
    let mut s = Script::new();
    s.app.focus = Focus::Composer;
    s.key(KeyCode::Char('?'));
    assert_eq!(s.app.overlay, Some(Overlay::Help));
    s.key(KeyCode::Esc);
    s.app.focus = Focus::Composer;
    for c in "why?".chars() {
        s.key(KeyCode::Char(c));
    }
    assert_eq!(s.app.composer.text(), "why?");
    let cleared = s.app.on_key(
        KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
        s.now,
    );
    assert!(cleared.is_empty(), "{cleared:?}");
    assert_eq!(
        s.app.composer.text(),
        "",
        "the first Ctrl+C clears the draft"
    );
    s.key(KeyCode::Up);
    assert_eq!(s.app.composer.text(), "why?", "Up brings it back");
    s.key(KeyCode::Left);
    s.key_mod(KeyCode::Char('u'), KeyModifiers::CONTROL);
    assert_eq!(s.app.composer.text(), "?", "Ctrl+U kills to the line start");
    s.key_mod(KeyCode::Char('c'), KeyModifiers::CONTROL);
    for c in "/clear".chars() {
        s.key(KeyCode::Char(c));
    }
    let out = s
        .app
        .on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE), s.now);
    assert_eq!(
        out,
        vec![
            Action::Send(Op::Shutdown),
            Action::Quit(squad::tui::Exit::NewSession)
        ]
    );
}

/// A rewound message comes back to the composer addressed to the persona it was said to,
/// whichever agent was on screen.
#[test]
fn a_rewound_message_goes_back_to_the_persona() {
    use ::squad::protocol::CheckpointSummary;
    let (mut s, [coder, ..]) = team();
    let root = s.root;
    s.app.focus = Focus::Tree;
    s.key(KeyCode::Down);
    assert_eq!(s.app.viewed(), coder);
    s.command("/rewind");
    let list = vec![CheckpointSummary {
        message: 1,
        text: "Add a --json flag to the CLI".into(),
        changes: Ok(Vec::new()),
    }];
    s.ev(root, EventKind::Checkpoints { list });
    s.key(KeyCode::Enter);
    s.key(KeyCode::Enter);
    s.ev(
        root,
        EventKind::Rewound {
            message: 1,
            files: Vec::new(),
            removed: Vec::new(),
            history: Some(Vec::new()),
        },
    );
    assert_eq!(s.app.composer.text(), "Add a --json flag to the CLI");
    assert_eq!(s.app.target(), None, "addressed to the persona");
    assert!(s.screen(80, 24).contains("to copilot ★"));
}

/// A review none of whose reviewers answered says so, as the CLI does, instead of
/// "No findings".
#[test]
fn a_review_nobody_answered_is_not_clean() {
    let mut s = Script::new();
    let root = s.root;
    let target = ReviewTarget::Uncommitted;
    let reviewers = vec![id(1), id(2), id(3)];
    s.ev(
        root,
        EventKind::ReviewStarted {
            target: target.clone(),
            reviewers,
        },
    );
    s.ev(
        root,
        EventKind::ReviewFinished {
            target,
            findings: Vec::new(),
            dropped: Vec::new(),
            unanswered: Some("the model server answered 500: boom".into()),
        },
    );
    assert_eq!(s.app.overlay, Some(Overlay::Review));
    let screen = s.screen(80, 24);
    assert!(!screen.contains("No findings"), "{screen}");
    assert!(screen.contains("did not happen"), "{screen}");
    assert!(screen.contains("no reviewer could answer"), "{screen}");
    insta::assert_snapshot!("review_unanswered_80x24", screen);
}

/// A result with nothing checked (issue 48): the tree and the results card say
/// `unchecked`, with no score and no ✓.
#[test]
fn a_result_with_nothing_checked_shows_unchecked_not_a_check_mark() {
    let (mut s, [coder, ..]) = team();
    let verdict = Verdict::unchecked(1, 3, vec![]);
    s.ev(coder, EventKind::Verification(verdict.clone()));
    s.ev(
        coder,
        EventKind::ResultReturned {
            parent_id: Some(s.root),
            result: AgentResult {
                completed_at: None,
                status: ResultStatus::Success,
                summary: "Looked at the CLI; nothing to change.".into(),
                artifacts: vec![],
                known_issues: vec![],
                verification: Some(verdict),
                merge: None,
            },
        },
    );
    s.status(coder, AgentStatus::Completed);
    s.app.focus = Focus::Tree;
    s.key(KeyCode::Down);
    let screen = s.screen(80, 24);
    assert!(screen.contains("unchecked"), "{screen}");
    assert!(
        !screen.contains("verified") && !screen.contains("✓100"),
        "{screen}"
    );
}

/// Workers placed in environments (issue 52): the tree marks where each runs, `@NAME`
/// after its id; a worker here has no mark. The spawn's approval says where it will run.
#[test]
fn placed_workers_show_their_environment_in_the_tree_and_the_approval() {
    let mut s = Script::new();
    let root = s.root;
    let (here, boxed, far) = (id(1), id(2), id(3));
    s.user(root, "Three workers, three places.");
    s.status(root, AgentStatus::Running);
    s.at(1);
    for (w, task, env) in [
        (here, "Edit local.txt", None),
        (boxed, "Edit boxed.txt", Some("box")),
        (far, "Edit remote.txt", Some("build-box")),
    ] {
        s.spawn(w, Some(root), "implementer", task);
        let options = SpawnOptions {
            environment: env.map(str::to_string),
            ..SpawnOptions::default()
        };
        s.ev(w, EventKind::AgentOptions(options));
        s.status(w, AgentStatus::Running);
    }
    s.status(root, AgentStatus::Waiting);
    s.at(5);
    let screen = s.screen(100, 24);
    for needle in [
        "implementer 1a2b3c4f @box",
        "implementer 1a2b3c50 @build-box",
    ] {
        assert!(screen.contains(needle), "{needle}: {screen}");
    }
    assert!(!screen.contains("1a2b3c4e @"), "here is unmarked: {screen}");
    insta::assert_snapshot!("placed_workers_100x24", screen);
    request(
        &mut s,
        root,
        9,
        "copilot",
        "spawn_agent",
        ApprovalAction::Spawn {
            role: "implementer".into(),
            task: "Edit remote.txt".into(),
            tools: vec![],
            model: "gpt-4.1".into(),
            budget: Budget::default(),
            instructions: None,
            keep: false,
            name: None,
            environment: Some("build-box".into()),
            quote: None,
        },
    );
    let screen = s.screen(100, 24);
    assert!(screen.contains("where  build-box"), "{screen}");
}

fn batch_update(step: squad::protocol::BatchStep, done: usize, failed: usize) -> EventKind {
    EventKind::Batch(squad::protocol::BatchUpdate {
        batch: "results.csv".into(),
        step,
        progress: squad::protocol::BatchProgress {
            total: 100,
            done,
            failed,
            running: 8,
            eta_s: (done > 0).then_some(130),
        },
    })
}

fn batch_row(
    id: &str,
    state: squad::protocol::RowState,
    attempt: u32,
) -> squad::protocol::RowRecord {
    squad::protocol::RowRecord {
        id: id.into(),
        state,
        attempt,
        agent: None,
        result: None,
        error: Some(
            "the result does not match the batch's schema: missing required field `len`".into(),
        ),
        tokens: 4300,
        cost_usd: 0.0043,
    }
}

/// A batch under way (issue 55 part 5): its progress and ETA in the status bar, and in
/// the conversation of the agent running it its start, a row tried again and a row that
/// failed for good (a done row is only counted); once it ends, its last line, and the bar
/// no longer shows it.
#[test]
fn a_batch_shows_its_progress_and_eta_in_the_status_bar() {
    use squad::protocol::{BatchSpec, BatchStep, RowState};
    let mut s = Script::new();
    let root = s.root;
    let spec = BatchSpec {
        rows: "rows.csv".into(),
        template: "Row {id}: label {text}".into(),
        id_column: "id".into(),
        role: "implementer".into(),
        output: "results.csv".into(),
        schema: None,
        max_concurrency: Some(8),
        budget: Budget::default(),
        max_attempts: None,
    };
    let started = BatchStep::Started {
        spec: Box::new(spec),
        skipped: 0,
        quote: None,
    };
    s.ev(root, batch_update(started, 0, 0));
    s.at(20);
    s.ev(
        root,
        batch_update(
            BatchStep::Row(batch_row("r003", RowState::Running, 2)),
            36,
            0,
        ),
    );
    s.ev(
        root,
        batch_update(BatchStep::Row(batch_row("r017", RowState::Done, 1)), 37, 0),
    );
    s.ev(
        root,
        batch_update(
            BatchStep::Row(batch_row("r050", RowState::Failed, 2)),
            37,
            1,
        ),
    );
    insta::assert_snapshot!("batch_progress_120x24", s.screen(120, 24));
    let finished = BatchStep::Finished {
        failed: vec!["r050".into()],
        tokens: 215_000,
        cost_usd: 0.42,
        stopped: None,
    };
    s.ev(root, batch_update(finished, 99, 1));
    let screen = s.screen(120, 24);
    assert!(
        screen.contains("▤ batch results.csv: 99 done, 1 failed (r050); 215,000 tokens, $0.42"),
        "{screen}"
    );
    let bar = screen.lines().last().unwrap_or_default();
    assert!(
        !bar.contains("▤"),
        "the bar drops a batch that ended: {bar}"
    );
}

#[test]
fn a_workers_model_shows_in_the_tree_when_it_differs_and_width_allows() {
    let mut s = Script::new();
    let root = s.root;
    let (same, tester, reviewer) = (id(1), id(2), id(3));
    s.user(root, "Three workers, two models.");
    s.status(root, AgentStatus::Running);
    s.at(1);
    // The persona runs gpt-4.1-mini (`Script::spawn`); one worker runs it too, two a
    // costlier model named with its provider's prefix and its release date.
    s.spawn(
        same,
        Some(root),
        "implementer",
        "Edit the parser for the new flag",
    );
    for (w, role, task) in [
        (tester, "tester", "Run the parser tests"),
        (reviewer, "code_reviewer", "Review the parser change"),
    ] {
        s.ev(
            w,
            EventKind::AgentSpawned {
                parent_id: Some(root),
                role: role.into(),
                model: "openai/gpt-4.1-2025-04-14".into(),
                task: task.into(),
                depth: 1,
            },
        );
    }
    for w in [same, tester, reviewer] {
        s.status(w, AgentStatus::Running);
    }
    s.at(5);
    let rows = |screen: &str, id: &str| -> String {
        // A row and, in a narrow pane, the line under it.
        let lines: Vec<&str> = screen.lines().collect();
        let tree = |l: &str| l.split("││").next().unwrap_or("").to_string();
        let i = (lines.iter().position(|l| tree(l).contains(id)))
            .unwrap_or_else(|| panic!("no {id} row: {screen}"));
        format!("{}\n{}", tree(lines[i]), tree(lines[i + 1]))
    };
    // One line a row: the tester's model, shortened, where the row has room; the
    // reviewer's longer role leaves none, so its role, id and task stay whole.
    let wide = s.screen(140, 20);
    assert!(
        rows(&wide, "1a2b3c4f").contains("tester 1a2b3c4f Run"),
        "{wide}"
    );
    assert!(rows(&wide, "1a2b3c4f").contains("gpt-4.1 "), "{wide}");
    let implementer = rows(&wide, "1a2b3c4e");
    let implementer = implementer.lines().next().unwrap_or("");
    assert!(!implementer.contains("gpt-"), "same model: {wide}");
    assert!(
        rows(&wide, "1a2b3c50").contains("code_reviewer 1a2b3c50 Review"),
        "{wide}"
    );
    insta::assert_snapshot!("worker_model_140x20", wide);
    // A narrow pane puts the task and the figures under the row: the model goes there,
    // the role and the id keep their line.
    let narrow = s.screen(80, 20);
    let reviewer_rows = rows(&narrow, "1a2b3c50");
    assert!(reviewer_rows.contains("code_reviewer 1a2b3c50"), "{narrow}");
    assert!(
        reviewer_rows.contains("Review") && reviewer_rows.contains("gpt-4.1"),
        "{narrow}"
    );
    insta::assert_snapshot!("worker_model_80x20", narrow);
}

/// A fan-out's spawn approval shows its quote: the total, what the running workers are
/// still quoted to spend, the new worker's first request and calls, what is left.
#[test]
fn a_fan_outs_spawn_approval_shows_its_quote() {
    use squad::protocol::{Quote, WorkerQuote};
    let mut s = Script::new();
    let root = s.root;
    let quote = Quote {
        workers: vec![WorkerQuote {
            role: "tester".into(),
            model: "gpt-4.1".into(),
            first_request_tokens: 2_100,
            shared_prefix_tokens: 1_800,
            calls: 4,
            prompt_tokens: 12_000,
            completion_tokens: 900,
            cost_usd: 0.0312,
            basis: 2,
            ..WorkerQuote::default()
        }],
        live_workers: 2,
        live_tokens: 20_000,
        live_cost_usd: 0.05,
        left_usd: Some(0.5),
        fan_out: true,
        ..Quote::default()
    }
    .total();
    request(
        &mut s,
        root,
        9,
        "copilot",
        "spawn_agent",
        ApprovalAction::Spawn {
            role: "tester".into(),
            task: "Run the parser tests".into(),
            tools: vec![],
            model: "gpt-4.1".into(),
            budget: Budget::default(),
            instructions: None,
            keep: false,
            name: None,
            environment: None,
            quote: Some(Box::new(quote)),
        },
    );
    let screen = s.screen(100, 30);
    for needle in [
        "quote  32,900 tokens, $0.0812 (1 new worker and 2 running)",
        "running workers still to spend: 20,000 tokens, $0.05",
        "tester on gpt-4.1: first request 2,100 tokens (1,800 a cached prefix), ~4 calls",
        "left of the budget: $0.50",
    ] {
        assert!(screen.contains(needle), "{needle}: {screen}");
    }
}

/// Issue 54 part 7: a worker's plan awaiting approval is a dialog like an approval; `1`
/// approves it, a typed reason rejects it, Esc puts it aside; a decision made elsewhere
/// (its supervisor's) takes it down.
#[test]
fn a_plan_awaiting_approval_is_a_dialog_the_user_decides() {
    use squad::protocol::{PlanDecision, PlanSubmitted};
    let (mut s, [coder, tester, _]) = team();
    let submitted = |plan_id: u64, plan: &str| {
        EventKind::PlanSubmitted(PlanSubmitted {
            plan_id,
            plan: plan.into(),
        })
    };
    s.status(coder, AgentStatus::Waiting);
    s.ev(
        coder,
        submitted(
            1,
            "1. Add `--json` to ExecArgs in src/cli.rs.\n2. Print each event with \
             serde_json in src/exec/mod.rs.\n3. Add a test in tests/exec.rs that parses \
             every line.",
        ),
    );
    insta::assert_snapshot!("plan_dialog_80x24", s.screen(80, 24));
    s.at(80);
    let approve = s
        .app
        .on_key(KeyEvent::new(KeyCode::Char('1'), KeyModifiers::NONE), s.now);
    assert_eq!(
        approve,
        vec![Action::Send(Op::DecidePlan {
            agent_id: coder,
            approve: true,
            reason: String::new(),
        })]
    );
    assert!(s.app.state.plans.is_empty());

    // A second plan: a typed reason and Enter reject it.
    s.ev(tester, submitted(2, "Rewrite the whole test suite."));
    s.at(90);
    for c in "only the exec tests".chars() {
        s.key(KeyCode::Char(c));
    }
    insta::assert_snapshot!("plan_dialog_typed_60x20", s.screen(60, 20));
    let reject = s
        .app
        .on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE), s.now);
    assert_eq!(
        reject,
        vec![Action::Send(Op::DecidePlan {
            agent_id: tester,
            approve: false,
            reason: "only the exec tests".into(),
        })]
    );

    // Decided by its supervisor: the dialog goes without a key.
    s.ev(tester, submitted(3, "Only tests/exec.rs."));
    assert!(s.screen(80, 24).contains("plan · tester"));
    s.ev(
        tester,
        EventKind::PlanDecided(PlanDecision {
            plan_id: 3,
            approved: true,
            reason: String::new(),
            by: Some(s.root),
        }),
    );
    assert!(s.app.state.dialog().is_none());
}

/// Issue 54 parts 4 and 7: `/lead` asks for coordinate-only mode and the status bar shows
/// it once the core says so; a teammate's message is a line in the persona's
/// conversation naming sender and recipient; the board shows each task's owner, whether
/// it claimed it, and its lease.
#[test]
fn the_lead_messages_and_leases_are_seen() {
    let (mut s, [coder, tester, _]) = team();
    s.app.focus = Focus::Composer;
    for c in "/lead".chars() {
        s.key(KeyCode::Char(c));
    }
    let asked = s
        .app
        .on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE), s.now);
    assert_eq!(
        asked,
        vec![Action::Send(Op::SetCoordinateOnly { on: true })]
    );
    let root = s.root;
    s.ev(root, EventKind::CoordinateOnly { on: true });
    s.ev(
        coder,
        EventKind::AgentMessage {
            to: tester,
            message_id: 1,
            text: "I renamed Token::Ident to Token::Name in token.rs".into(),
        },
    );
    let mut t1 = s.task("T1", "The lexer", TaskStatus::Running, &[]);
    t1.assignee = Some(coder);
    t1.claimed = true;
    t1.paths = vec!["src/lexer/**".into()];
    let mut t2 = s.task("T2", "Token names", TaskStatus::Ready, &[]);
    t2.paths = vec!["src/lexer/token.rs".into()];
    s.task_updated(t1);
    s.task_updated(t2);
    s.command("/tasks");
    // The persona's conversation beside the board.
    s.app.tree.selected = Some(root);
    let screen = s.screen(120, 30);
    assert!(screen.contains("LEAD"), "{screen}");
    assert!(
        screen.contains("✉ coder 1a2b3c4e → tester 1a2b3c4f: I renamed Token::Ident"),
        "{screen}"
    );
    assert!(
        screen.contains("T1 The lexer · lease src/lexer/**"),
        "{screen}"
    );
    assert!(
        screen.contains("running · coder 1a2b3c4e claimed"),
        "{screen}"
    );
    assert!(
        screen.contains("T2 Token nam… · paths src/lexer/token.rs"),
        "{screen}"
    );
    insta::assert_snapshot!("lead_messages_leases_120x30", screen);
    // Ctrl+L toggles it back.
    let off = s.app.on_key(
        KeyEvent::new(KeyCode::Char('l'), KeyModifiers::CONTROL),
        s.now,
    );
    assert!(off.contains(&Action::Send(Op::SetCoordinateOnly { on: false })));
}
