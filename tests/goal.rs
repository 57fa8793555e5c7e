//! `squad exec --goal`: the real binary against the mock server, the goal's check a real
//! command in a real temp workspace. The scripted model writes the wrong content on its
//! first turns and the right one later; the check decides when the run ends.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::Value;

/// The check: passes once state.txt says `fixed`, and says what it holds otherwise.
const CHECK: &str =
    "grep -q fixed state.txt || { echo \"state.txt holds: $(cat state.txt)\"; exit 1; }";

/// One turn of the scripted persona: write `content` to state.txt, then answer.
fn turn(mock: &MockServer, n: u32, content: &str) {
    let args = serde_json::json!({ "path": "state.txt", "content": content }).to_string();
    mock.push_all([
        MockResponse::tool_call(&format!("w{n}"), "write_file", &args),
        MockResponse::text(&format!("Turn {n}: wrote {content}.")),
    ]);
}

/// `squad exec` with the goal "make state.txt say fixed" and [`CHECK`], then `more`.
async fn goal_exec(sb: &Sandbox, mock: &MockServer, more: &[&str]) -> Run {
    let mut args = vec![
        "--approval",
        "auto",
        "--goal",
        "make state.txt say fixed",
        "--goal-check",
        CHECK,
    ];
    args.extend_from_slice(more);
    sb.exec(mock, &args).await
}

/// A mock server and a workspace whose state.txt the goal's check finds broken.
async fn broken_state() -> (MockServer, Sandbox) {
    let sb = Sandbox::new();
    sb.write("state.txt", "broken\n");
    (MockServer::start().await, sb)
}

fn checks(events: &[Value]) -> Vec<&Value> {
    of_type(events, "goal_checked")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_goal_whose_check_passes_on_the_third_turn_ends_the_run_met() {
    let (mock, sb) = broken_state().await;
    turn(&mock, 1, "still broken");
    turn(&mock, 2, "nearly");
    turn(&mock, 3, "fixed");
    let run = goal_exec(&sb, &mock, &["--json"]).await;
    run.assert_ok();
    let events = run.events();
    let set = of_type(&events, "goal_set");
    assert_eq!(set.len(), 1);
    assert_eq!(set[0]["goal"]["max_turns"], 10);
    let checks = checks(&events);
    assert_eq!(checks.len(), 3, "{}", run.stdout);
    let passed: Vec<bool> = checks.iter().map(|c| c["passed"] == true).collect();
    assert_eq!(passed, [false, false, true]);
    assert_eq!(checks[0]["exit_code"], 1);
    assert_eq!(checks[0]["output_tail"], "state.txt holds: still broken");
    let ended = of_type(&events, "goal_ended");
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0]["reason"], "met");
    assert_eq!(sb.read("state.txt"), "fixed");
    // The persona's first message is the goal; after a failing check it reads the goal
    // and what the check said, as its next message.
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 6);
    let first = transcript(&reqs[0].body);
    assert!(
        first
            .last()
            .unwrap()
            .1
            .contains("Goal: make state.txt say fixed")
    );
    let third = transcript(&reqs[2].body);
    let again = &third.last().unwrap().1;
    assert!(again.contains("not met yet (check 1/10)"), "{again}");
    assert!(again.contains("state.txt holds: still broken"), "{again}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_spent_budget_ends_the_run_with_exit_1_and_says_so() {
    let (mock, sb) = broken_state().await;
    turn(&mock, 1, "still broken");
    turn(&mock, 2, "nearly");
    let run = goal_exec(&sb, &mock, &["--goal-turns", "2", "fix state.txt"]).await;
    assert_eq!(
        run.code, 1,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    assert!(
        run.stderr.contains("◎ goal check 1/2: failed (exit 1)"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("◎ goal check 2/2: failed (exit 1)"));
    assert!(run.stderr.contains("◎ goal budget spent"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("squad: goal not met: its budget is spent")
    );
    assert_eq!(mock.requests().len(), 4, "no third turn");
    // The user's prompt comes first, then what the goal is.
    let first = transcript(&mock.requests()[0].body);
    let message = &first.last().unwrap().1;
    assert!(message.starts_with("fix state.txt\n\nGoal: make state.txt say fixed"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resumed_session_goes_on_toward_its_active_goal() {
    let (mock, sb) = broken_state().await;
    // The first run's turn fails before the check: the goal stays active in the log.
    mock.push(MockResponse::error(400, "the model is not loaded"));
    let run = goal_exec(&sb, &mock, &[]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    turn(&mock, 1, "fixed");
    let run = sb
        .exec(
            &mock,
            &["--approval", "auto", "--json", "--resume", "last", "go on"],
        )
        .await;
    run.assert_ok();
    let events = run.events();
    assert!(
        of_type(&events, "goal_set").is_empty(),
        "set only once, in the first run"
    );
    let checks = checks(&events);
    assert_eq!(checks.len(), 1, "{}", run.stdout);
    assert_eq!(checks[0]["passed"], true);
    assert_eq!(checks[0]["turn"], 1);
    assert_eq!(of_type(&events, "goal_ended")[0]["reason"], "met");
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_goal_a_plain_turn_ends_as_before() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.push(MockResponse::text("Nothing to do."));
    let run = sb.exec(&mock, &["--json", "hello"]).await;
    run.assert_ok();
    let events = run.events();
    assert!(
        events
            .iter()
            .all(|e| !e["type"].as_str().unwrap().starts_with("goal_"))
    );
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_goal_without_turns_is_a_usage_error() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let run = sb
        .exec(
            &mock,
            &["--goal", "x", "--goal-check", "true", "--goal-turns", "0"],
        )
        .await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("at least one turn"), "{}", run.stderr);
    assert!(mock.requests().is_empty());
}

/// The real TUI in a pseudo-terminal: `/goal` sets the goal and starts the work; each check
/// is a line of the conversation, and the goal ends met on the second turn.
#[tokio::test(flavor = "multi_thread")]
async fn slash_goal_in_the_tui_works_until_the_check_passes() {
    let (mock, sb) = broken_state().await;
    turn(&mock, 1, "still broken");
    turn(&mock, 2, "fixed");
    let tui = common::pty::Tui::spawn(&sb, &mock.base_url(), &["--approval", "auto"], 30, 120);
    tui.wait_text("copilot").await;
    tui.type_text("/goal make state.txt say fixed --check grep -q fixed state.txt --turns 3")
        .await;
    tui.enter().await;
    let screen = tui.wait_text("goal met after 2 turn(s)").await;
    assert!(
        screen.contains("◎ goal check 1/3: failed (exit 1)"),
        "{screen}"
    );
    assert!(screen.contains("◎ goal check 2/3: passed"), "{screen}");
    assert_eq!(sb.read("state.txt"), "fixed");
    let first = transcript(&mock.requests()[0].body);
    assert!(
        first
            .last()
            .unwrap()
            .1
            .starts_with("Goal: make state.txt say fixed")
    );
    tui.type_text("/goal").await;
    tui.enter().await;
    tui.wait_text("no goal is set").await;
}

/// A run stopped by Ctrl+C mid-turn leaves its goal active and the persona `interrupted`:
/// `--resume ID --continue` goes on with the turn, and the goal's check ends it met.
#[tokio::test(flavor = "multi_thread")]
async fn continue_after_ctrl_c_goes_on_toward_the_goal() {
    let (mock, sb) = broken_state().await;
    mock.push(MockResponse::text("too late").with_delay(std::time::Duration::from_secs(30)));
    let mut cmd = sb.command(Some(&mock));
    cmd.args([
        "exec",
        "--approval",
        "auto",
        "--goal",
        "make state.txt say fixed",
    ])
    .args(["--goal-check", CHECK])
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().unwrap();
    assert!(
        mock.wait_for_requests(1, std::time::Duration::from_secs(20))
            .await
    );
    let pid = child.id().unwrap() as libc::pid_t;
    // SAFETY: sends a signal to the child this test started and still owns.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let out = child.wait_with_output().await.unwrap();
    assert_eq!(out.status.code(), Some(130));
    turn(&mock, 1, "fixed");
    let run = sb
        .exec(
            &mock,
            &[
                "--approval",
                "auto",
                "--json",
                "--resume",
                "last",
                "--continue",
            ],
        )
        .await;
    run.assert_ok();
    let events = run.events();
    let checks = checks(&events);
    assert_eq!(checks.len(), 1, "{}", run.stdout);
    assert_eq!(checks[0]["passed"], true);
    assert_eq!(of_type(&events, "goal_ended")[0]["reason"], "met");
}

/// `--goal-rules`: the project's test command is the check; without one configured the
/// goal is refused before anything reaches the model, and a goal without a check at all
/// is a usage error.
#[tokio::test(flavor = "multi_thread")]
async fn the_projects_rules_as_the_goals_check() {
    let (mock, sb) = broken_state().await;
    let refused = sb
        .exec(
            &mock,
            &["--goal", "make state.txt say fixed", "--goal-rules"],
        )
        .await;
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("squad: goal: the goal's check is the project's rules"),
        "{}",
        refused.stderr
    );
    assert!(mock.requests().is_empty(), "nothing was sent");
    let usage = sb
        .exec(&mock, &["--goal", "make state.txt say fixed"])
        .await;
    assert_eq!(usage.code, 2, "{}", usage.stderr);

    sb.workspace_config("[tools]\ntest_command = \"grep -q fixed state.txt\"\n");
    turn(&mock, 1, "fixed");
    let run = sb
        .exec(
            &mock,
            &[
                "--approval",
                "auto",
                "--goal",
                "make state.txt say fixed",
                "--goal-rules",
            ],
        )
        .await;
    run.assert_ok();
    assert!(
        run.stderr.contains("◎ goal check 1/10: passed"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("◎ goal met"), "{}", run.stderr);
    let first = transcript(&mock.requests()[0].body);
    assert!(first.last().unwrap().1.contains("the project's checks"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stop_hook_that_keeps_blocking_still_lets_the_goals_check_run() {
    let (mock, sb) = broken_state().await;
    std::fs::create_dir_all(sb.config_dir()).unwrap();
    std::fs::write(
        sb.config_dir().join("config.toml"),
        "[[hooks]]\nevent = \"Stop\"\ncommand = '''echo '{\"decision\": \"block\", \"reason\": \"Run the tests first.\"}' '''\n",
    )
    .unwrap();
    turn(&mock, 1, "fixed");
    // The hook blocks every end: the persona is asked to go on 3 times, the layers' most.
    for n in 2..=4 {
        mock.push(MockResponse::text(&format!("Turn {n}: the tests pass.")));
    }
    let run = goal_exec(&sb, &mock, &["--json"]).await;
    run.assert_ok();
    let events = run.events();
    assert_eq!(
        mock.requests().len(),
        5,
        "the task, its answer, 3 more turns"
    );
    let checks = checks(&events);
    assert_eq!(checks.len(), 1, "the check ran once the hook was done");
    assert_eq!(checks[0]["passed"], true);
    let ended = of_type(&events, "goal_ended");
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0]["reason"], "met", "{:?}", ended[0]);
}
