//! The answer layer alone, on a team with no model server: which repeats take the tools
//! away, and which calls (new ones, a file's round trip, a command) do not.

use super::{AnswerPolicy, without_times};
use crate::model::ChatRequest;
use crate::protocol::{AgentId, Budget, HistoryItem, TurnEnd};
use crate::runtime::cx::{AgentCx, Policies, Policy};
use crate::runtime::points::Verdict;
use crate::runtime::points::{Reviewed, ToolDone, ToolUse};
use crate::runtime::request::RequestSetup;
use crate::runtime::team::Team;
use crate::runtime::testing::{Parts, Points, TestSession, call_tool, tool};
use crate::runtime::toolbox::Reach;
use std::sync::Arc;

/// The answer policy alone, for a persona and its workers.
fn answer_layer(assist: crate::config::Assist) -> Arc<Policies> {
    let board = Arc::new(crate::runtime::tasks::TaskBoard::default());
    let on = assist == crate::config::Assist::Auto;
    let policy: Box<dyn Policy> = Box::new(AnswerPolicy::new(
        board,
        Arc::new(move |_: Option<&str>| on),
    ));
    Arc::new(Policies::new(vec![policy]))
}

fn ask(output: &str) -> Reviewed<'_> {
    Reviewed {
        name: "ask_user",
        arguments: r#"{"question": "What is in notes.md?"}"#,
        kind: crate::runtime::points::CallKind::Other,
        reports: crate::tools::Reports::Nothing,
        output,
        is_error: false,
    }
}

#[tokio::test]
async fn the_answer_layer_takes_the_tools_away_only_when_the_persona_repeats_itself_with_all_done()
{
    let dir = tempfile::tempdir().unwrap();
    let ts = TestSession::new(dir.path(), Parts::default());
    let (team, root) = (&ts.session.team, ts.root);
    let worker = ts.add(root, Budget::default());
    let policies = answer_layer(crate::config::Assist::Auto);
    let (me, it) = (ts.cx_with(&policies, root), ts.cx_with(&policies, worker));
    let offered = |req: &RequestSetup| !req.request.tools.is_empty();
    let new_request = || request(team, root);
    let shaped = async || {
        let mut req = new_request();
        me.shape_request(&mut req).await;
        offered(&req)
    };
    me.turn_start().await;
    // A worker still at work: a repeat is no evidence of a finished persona.
    it.settle(TurnEnd::Returned).await;
    assert_eq!(me.review(&ask("nobody")), Verdict::Pass);
    assert_eq!(me.review(&ask("nobody")), Verdict::Pass);
    assert!(shaped().await);
    // Its result is in and told: many new calls keep the tools (a capable supervisor
    // checks the work with its own reads)...
    team.set_status(worker, crate::protocol::AgentStatus::Completed, None);
    team.mark_delivered(worker);
    for i in 0..10 {
        let args = format!(r#"{{"path": "f{i}.rs"}}"#);
        let read = Reviewed {
            name: "read_file",
            arguments: &args,
            kind: crate::runtime::points::CallKind::Read,
            reports: crate::tools::Reports::Nothing,
            output: "x",
            is_error: false,
        };
        assert_eq!(me.review(&read), Verdict::Pass);
        assert!(shaped().await, "call {i}");
    }
    // ... a call made again with the same answer does not.
    assert_eq!(me.review(&ask("nobody")), Verdict::Pass);
    assert!(!shaped().await);
    let history = team.request_view(root).unwrap().history;
    assert!(
        matches!(history.last(), Some(HistoryItem::Notice { text }) if text.contains("Answer the user now") && !text.starts_with("[squad]"))
    );
    // A change to a file gives them back.
    let args = serde_json::json!({});
    let ok = ToolDone {
        output: "",
        is_error: false,
    };
    me.after_tool(&tool(Reach::ChangesFiles, &args, None), &ok)
        .await;
    assert!(shaped().await);
    // A new turn starts afresh: no results in yet.
    me.turn_start().await;
    assert_eq!(me.review(&ask("nobody")), Verdict::Pass);
    assert_eq!(me.review(&ask("nobody")), Verdict::Pass);
    assert!(shaped().await);
    // Whatever runs, a third time is evidence enough (where the loop guard notes it).
    assert_eq!(me.review(&ask("nobody")), Verdict::Pass);
    assert!(!shaped().await);
    // With `assist = "off"` the same repeat leaves the tools.
    let off = answer_layer(crate::config::Assist::Off);
    let (me, it) = (ts.cx_with(&off, root), ts.cx_with(&off, worker));
    me.turn_start().await;
    it.settle(TurnEnd::Returned).await;
    me.review(&ask("nobody"));
    me.review(&ask("nobody"));
    let mut req = new_request();
    me.shape_request(&mut req).await;
    assert!(offered(&req));
}

fn request(team: &Team, root: AgentId) -> RequestSetup {
    RequestSetup {
        request: ChatRequest {
            model: "m".into(),
            system_prompt: "lead".into(),
            history: team.request_view(root).unwrap().history,
            tools: Arc::from(vec![crate::model::ToolSpec {
                name: "read_file".into(),
                description: String::new(),
                parameters: serde_json::json!({}),
                freeform: None,
            }]),
        },
        max_iterations: 50,
        fixed_tokens: 10,
        window: 100_000,
    }
}

/// A persona alone (no workers) in a workspace of its own, writing and reading `f.py`.
struct Alone {
    cx: AgentCx,
    _ts: TestSession,
    _dir: tempfile::TempDir,
}

impl Alone {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.py"), "def f():\n    return 1\n").unwrap();
        let ts = TestSession::new(dir.path(), Parts::default());
        let cx = ts.cx_with(&answer_layer(crate::config::Assist::Auto), ts.root);
        Self {
            cx,
            _ts: ts,
            _dir: dir,
        }
    }

    /// `write_file` of `f.py`, as the runtime drives the layer through it.
    async fn write(&self, content: &str) {
        let args = serde_json::json!({"path": "f.py", "content": content});
        let writes = vec!["f.py".to_string()];
        let use_ = ToolUse {
            call_id: "w",
            name: "write_file",
            args: &args,
            reach: Reach::ChangesFiles,
            reports: crate::tools::Reports::Change,
            writes: Some(&writes),
            action: None,
        };
        let done = ToolDone {
            output: "overwrote 'f.py'",
            is_error: false,
        };
        let (path, content) = (self.cx.root().root().join("f.py"), content.to_string());
        call_tool(&self.cx, &use_, &done, move || {
            std::fs::write(path, content).unwrap()
        })
        .await;
        let text = args.to_string();
        let reviewed = Reviewed {
            name: "write_file",
            arguments: &text,
            kind: crate::runtime::points::CallKind::Change,
            reports: crate::tools::Reports::Nothing,
            output: "overwrote 'f.py'",
            is_error: false,
        };
        assert_eq!(self.cx.review(&reviewed), Verdict::Pass);
    }

    /// `read_file` of `f.py`, answered with what it holds.
    fn read(&self) {
        let now = std::fs::read_to_string(self.cx.root().root().join("f.py")).unwrap();
        let reviewed = Reviewed {
            name: "read_file",
            arguments: r#"{"path": "f.py"}"#,
            kind: crate::runtime::points::CallKind::Read,
            reports: crate::tools::Reports::Nothing,
            output: &now,
            is_error: false,
        };
        assert_eq!(self.cx.review(&reviewed), Verdict::Pass);
    }

    /// A command that may have changed anything.
    async fn command(&self) {
        let args = serde_json::json!({"command": "make"});
        let ok = ToolDone {
            output: "",
            is_error: false,
        };
        let use_ = tool(Reach::ChangesFiles, &args, None);
        call_tool(&self.cx, &use_, &ok, || {}).await;
    }

    /// A `run_tests` that passes or fails.
    async fn tests(&self, passed: bool) {
        let args = serde_json::json!({});
        let output = if passed {
            "tests passed (0.4s)"
        } else {
            "tests FAILED (exit code 1, 0.4s)"
        };
        let use_ = ToolUse {
            name: "run_tests",
            reports: crate::tools::Reports::TestRun,
            ..tool(Reach::ChangesFiles, &args, None)
        };
        let done = ToolDone {
            output,
            is_error: false,
        };
        call_tool(&self.cx, &use_, &done, || {}).await;
    }

    async fn tools_offered(&self) -> bool {
        let mut req = request(self.cx.team(), self.cx.id());
        self.cx.shape_request(&mut req).await;
        !req.request.tools.is_empty()
    }
}

#[tokio::test]
async fn writing_what_a_file_already_holds_a_third_time_is_a_repeat() {
    let alone = Alone::new();
    alone.cx.turn_start().await;
    alone.write("def f():\n    return 2\n").await;
    alone.write("def f():\n    return 2\n").await;
    assert!(alone.tools_offered().await);
    alone.write("def f():\n    return 2\n").await;
    assert!(!alone.tools_offered().await);
}

#[tokio::test]
async fn a_file_put_back_as_it_was_is_where_it_was() {
    let alone = Alone::new();
    alone.cx.turn_start().await;
    // List, change, put back (blank lines and trailing blanks aside), list: one call in
    // one state.
    let asked = || {
        let listed = Reviewed {
            name: "list_files",
            arguments: "{}",
            kind: crate::runtime::points::CallKind::Read,
            reports: crate::tools::Reports::Nothing,
            output: "f.py",
            is_error: false,
        };
        alone.cx.review(&listed)
    };
    assert_eq!(asked(), Verdict::Pass);
    alone.write("def f():\n    return 2\n").await;
    assert_eq!(asked(), Verdict::Pass);
    alone.write("def f():\n\n    return 1   ").await;
    assert_eq!(asked(), Verdict::Pass);
    assert!(alone.tools_offered().await, "twice is no evidence");
    alone.write("def f():\n    return 2\n").await;
    alone.write("def f():\n    return 1\n").await;
    assert_eq!(asked(), Verdict::Pass);
    assert!(!alone.tools_offered().await, "the third round trip is");
}

#[tokio::test]
async fn a_capable_models_debug_print_and_checks_between_commands_stay_quiet() {
    let alone = Alone::new();
    alone.cx.turn_start().await;
    // Add a print, run, take it out, run, read, run the tests again, read again: every
    // repeat has a command (whose changes squad cannot see) before it.
    alone.read();
    alone
        .write("def f():\n    print('here')\n    return 1\n")
        .await;
    alone.command().await;
    alone.write("def f():\n    return 1\n").await;
    alone.read();
    alone.command().await;
    alone.read();
    alone.command().await;
    alone.read();
    assert!(alone.tools_offered().await);
}

#[test]
fn durations_are_no_part_of_an_answer() {
    assert_eq!(
        without_times("tests passed (1.8s)\n1 passed in 0.02s; 350ms"),
        without_times("tests passed (1.9s)\n1 passed in 0.03s; 12ms")
    );
    assert_eq!(
        without_times("v1.2 has 3 files, 10 sessions"),
        "v1.2 has 3 files, 10 sessions"
    );
    assert_ne!(without_times("exit 1"), without_times("exit 2"));
}

#[tokio::test]
async fn passing_again_on_files_put_back_after_a_failure_is_a_round_trip() {
    let alone = Alone::new();
    alone.cx.turn_start().await;
    alone.tests(false).await;
    alone.write("def f():\n    return 2\n").await;
    alone.tests(true).await;
    assert!(alone.tools_offered().await, "a green run is no evidence");
    // Broken after the pass, the failure noted, put back (as the note says), green again.
    alone.write("def f():\n    return 3\n").await;
    alone.tests(false).await;
    alone.write("def f():\n\n    return 2").await;
    assert!(alone.tools_offered().await);
    alone.tests(true).await;
    assert!(!alone.tools_offered().await);
    let history = alone.cx.team().request_view(alone.cx.id()).unwrap().history;
    assert!(
        matches!(history.last(), Some(HistoryItem::Notice { text }) if text.contains("pass again"))
    );
}

#[tokio::test]
async fn a_capable_model_fixing_forward_after_a_failure_keeps_its_tools() {
    let alone = Alone::new();
    alone.cx.turn_start().await;
    // Green, a new step breaks the tests, a fix on top passes: no file went back.
    alone.write("def f():\n    return 2\n").await;
    alone.tests(true).await;
    alone.write("def f(x):\n    return 2 * x\n").await;
    alone.tests(false).await;
    alone.write("def f(x=1):\n    return 2 * x\n").await;
    alone.tests(true).await;
    // The same tests passing twice in a row on the same files is no round trip either.
    alone.tests(true).await;
    assert!(alone.tools_offered().await);
}

#[tokio::test]
async fn the_same_handoff_a_third_time_is_a_repeat_whatever_was_written_between() {
    let alone = Alone::new();
    alone.cx.turn_start().await;
    let handoff = |to: &str, why: &str| {
        let args = format!(r#"{{"target_agent": "{to}", "reason": "{why}"}}"#);
        let output = format!("handing off to {to}; it continues from here with your context");
        let reviewed = Reviewed {
            name: "handoff_to",
            arguments: &args,
            kind: crate::runtime::points::CallKind::Other,
            reports: crate::tools::Reports::Nothing,
            output: &output,
            is_error: false,
        };
        assert_eq!(alone.cx.review(&reviewed), Verdict::Pass);
    };
    // A design review hands on to a new persona each time, with its own reason: quiet.
    for (i, to) in ["architect", "implementer", "tester", "copilot"]
        .iter()
        .enumerate()
    {
        alone.write(&format!("def f():\n    return {i}\n")).await;
        handoff(to, &format!("step {i} is done"));
    }
    assert!(alone.tools_offered().await);
    // The same handoff again and again, a line added to the file each round.
    let mut body = String::from("def f():\n");
    for _ in 0..2 {
        body.push_str("    return 1\n");
        alone.write(&body).await;
        handoff("implementer", "The test passed");
        alone.tests(true).await;
        handoff("tester", "The test passed");
    }
    assert!(alone.tools_offered().await, "twice is no evidence");
    alone.write(&format!("{body}    return 1\n")).await;
    handoff("implementer", "The test passed");
    assert!(!alone.tools_offered().await);
}

#[tokio::test]
async fn the_same_read_answered_the_same_a_fourth_time_is_a_repeat_whatever_was_written() {
    let alone = Alone::new();
    alone.cx.turn_start().await;
    let listed = || {
        let listed = Reviewed {
            name: "search_files",
            arguments: r#"{"pattern": "add"}"#,
            kind: crate::runtime::points::CallKind::Read,
            reports: crate::tools::Reports::Nothing,
            output: "calc.py:1: def add(a, b):",
            is_error: false,
        };
        assert_eq!(alone.cx.review(&listed), Verdict::Pass);
    };
    let mut body = String::from("def add(a, b):\n");
    for _ in 0..3 {
        listed();
        body.push_str("    return a + b\n");
        alone.write(&body).await;
    }
    assert!(
        alone.tools_offered().await,
        "three times is no evidence here"
    );
    listed();
    assert!(!alone.tools_offered().await);
}
