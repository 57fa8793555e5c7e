//! What Qwen2.5-Coder-1.5B did with `squad exec "Use spawn_agent to start an implementer
//! worker with the task: create the file notes.md containing the word hi. Then wait for it
//! with wait_for_agents and tell me what it reported."`, replayed against the mock: the
//! worker wrote notes.md in its worktree and returned; the persona then acknowledged the
//! finished worker ("The file 'notes.md' has been created with the word 'hi'. The task is
//! completed."), the worker took that for a new task and reported `modified notes.md`, was
//! checked against a follow-up that changed nothing, corrected three times, and the persona
//! acknowledged again, until the run was killed. Through the real `squad exec`.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use serde_json::{Value, json};

const ACK: &str = "The file 'notes.md' has been created with the word 'hi'. The task is completed.";

fn last_user(body: &Value) -> String {
    transcript(body)
        .into_iter()
        .rev()
        .find(|(role, _)| role == "user")
        .map(|(_, text)| text)
        .unwrap_or_default()
}

fn notes_result(change: &str) -> MockResponse {
    MockResponse::tool_call(
        "r",
        "return_results",
        &json!({"result": {"status": "success", "summary": "notes.md contains hi",
            "artifacts": [{"file_path": "notes.md", "description": "the note", "change_type": change}],
            "known_issues": []}})
        .to_string(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn an_acknowledged_worker_is_not_corrected_and_the_same_acknowledgement_is_not_sent_twice() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    git(sb.ws(), &["init", "-q"]);
    sb.write("README.md", "a project\n");
    git(sb.ws(), &["add", "-A"]);
    git(sb.ws(), &["commit", "-qm", "start"]);
    mock.set_responder(|body| {
        if is_worker(body) {
            // The worker's first task: write, then report. Any later message (the
            // acknowledgement): report the same file again, as the 1.5B model did.
            return match (tool_count(body), last_user(body).contains("follow-up")) {
                (0, false) => MockResponse::tool_call(
                    "w",
                    "write_file",
                    &json!({"path": "notes.md", "content": "hi\n"}).to_string(),
                ),
                (_, false) => notes_result("created"),
                (_, true) => notes_result("modified"),
            };
        }
        let id = || spawned_ids(body).first().cloned().unwrap_or_default();
        let ack = || {
            MockResponse::tool_call(
                &format!("a{}", tool_count(body)),
                "speak_to_agent",
                &json!({"agent_id": id(), "message": ACK}).to_string(),
            )
        };
        match tool_count(body) {
            0 => spawn(
                "implementer",
                "create the file notes.md containing the word hi",
            ),
            1 => MockResponse::tool_call("wait", "wait_for_agents", "{}"),
            // It acknowledges, and acknowledges again, and again.
            2..=4 => ack(),
            _ => MockResponse::text("The worker created notes.md with the word hi."),
        }
    });
    let run = sb
        .exec(
            &mock,
            &["--json", "--approval", "auto", "Use spawn_agent …"],
        )
        .await;
    run.assert_ok();
    assert_eq!(sb.read("notes.md"), "hi\n", "merged into the workspace");
    let events = run.events();
    // Its follow-up report is true of its life: no correction, every check passed.
    let verdicts = of_type(&events, "verification");
    assert!(!verdicts.is_empty());
    assert!(
        verdicts.len() == 2 && verdicts.iter().all(|v| v["passed"] == true),
        "{verdicts:?}"
    );
    let reqs = mock.requests();
    let worker_reqs: Vec<&Value> = reqs
        .iter()
        .map(|r| &r.body)
        .filter(|b| is_worker(b))
        .collect();
    assert!(
        worker_reqs
            .iter()
            .all(|b| !last_user(b).contains("did not pass")),
        "no correction reached the worker"
    );
    // The worker got the acknowledgement once, as a follow-up to its returned result.
    let acks = worker_reqs
        .iter()
        .filter(|b| last_user(b).contains(ACK))
        .count();
    assert_eq!(acks, 1, "one acknowledgement reached the worker");
    // The same acknowledgement again, nothing changed since: not sent, and the persona
    // reads why and what to do next.
    let last = &reqs.last().unwrap().body;
    let results: Vec<String> = tool_messages(last).into_iter().map(|(_, c)| c).collect();
    let refused: Vec<&String> = results.iter().filter(|c| c.contains("not sent")).collect();
    assert_eq!(refused.len(), 2, "{results:?}");
    // The reply, under seed 000's name.
    let first_ack: Value = serde_json::from_str(&results[2]).unwrap();
    assert!(first_ack["agent_response"].is_string(), "{first_ack}");
    assert!(refused[0].contains("your final answer to the user"));
    let answer = items_of_kind(&events, "assistant");
    assert_eq!(
        answer.last().unwrap()["text"],
        "The worker created notes.md with the word hi."
    );
}

/// The same run on a later build: the results said the next step was the answer, and the
/// model asked the absent user "What is the content of notes.md?" five times until the
/// loop guard stopped the turn, with no answer. Asking the same question again and getting
/// the same answer, with its workers all done, is evidence it is stuck: the request after
/// the repeat goes without tools, says why, and it answers.
#[tokio::test(flavor = "multi_thread")]
async fn a_persona_that_keeps_asking_after_the_results_is_brought_to_its_answer() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            return match tool_count(body) {
                0 => MockResponse::tool_call(
                    "w",
                    "write_file",
                    &json!({"path": "notes.md", "content": "hi\n"}).to_string(),
                ),
                _ => notes_result("created"),
            };
        }
        let offered = body["tools"].as_array().is_some_and(|t| !t.is_empty());
        match tool_count(body) {
            0 => spawn(
                "implementer",
                "create the file notes.md containing the word hi",
            ),
            1 => MockResponse::tool_call("wait", "wait_for_agents", "{}"),
            n if offered => MockResponse::tool_call(
                &format!("q{n}"),
                "ask_user",
                &json!({"question": "What is the content of notes.md?"}).to_string(),
            ),
            _ => MockResponse::text("The worker created notes.md; it contains hi."),
        }
    });
    let run = sb
        .exec(
            &mock,
            &["--json", "--approval", "auto", "Use spawn_agent …"],
        )
        .await;
    run.assert_ok();
    let persona: Vec<Value> = mock
        .requests()
        .into_iter()
        .map(|r| r.body)
        .filter(|b| !is_worker(b))
        .collect();
    // Spawn, wait, the question, the same question again, then the request without tools.
    assert_eq!(persona.len(), 5, "{} persona requests", persona.len());
    let last = persona.last().unwrap();
    assert!(last["tools"].as_array().is_none_or(|t| t.is_empty()));
    assert!(last["messages"].to_string().contains("Answer the user now"));
    let events = run.events();
    let answer = items_of_kind(&events, "assistant");
    assert_eq!(
        answer.last().unwrap()["text"],
        "The worker created notes.md; it contains hi."
    );
}

/// `assist = "off"` for the persona's model: the same repeat gets no request without
/// tools; only the loop guard's note and stop remain. `squad doctor` says which it is.
#[tokio::test(flavor = "multi_thread")]
async fn with_assist_off_a_repeat_keeps_the_tools_and_only_the_loop_guard_acts() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[models.\"gpt-4.1\"]\nassist = \"off\"\n");
    mock.set_responder(|body| {
        if is_worker(body) {
            return match tool_count(body) {
                0 => MockResponse::tool_call(
                    "w",
                    "write_file",
                    &json!({"path": "notes.md", "content": "hi\n"}).to_string(),
                ),
                _ => notes_result("created"),
            };
        }
        match tool_count(body) {
            0 => spawn(
                "implementer",
                "create the file notes.md containing the word hi",
            ),
            1 => MockResponse::tool_call("wait", "wait_for_agents", "{}"),
            n => MockResponse::tool_call(
                &format!("q{n}"),
                "ask_user",
                &json!({"question": "What is the content of notes.md?"}).to_string(),
            ),
        }
    });
    let run = sb
        .exec(&mock, &["--approval", "auto", "Use spawn_agent …"])
        .await;
    assert!(
        run.stderr
            .contains("loop: called ask_user 5 times with the same arguments"),
        "{}",
        run.stderr
    );
    let persona: Vec<Value> = mock
        .requests()
        .into_iter()
        .map(|r| r.body)
        .filter(|b| !is_worker(b))
        .collect();
    // Spawn, wait, five questions: every request with its tools, none asking for the answer.
    assert_eq!(persona.len(), 7, "{} persona requests", persona.len());
    for body in &persona {
        assert!(body["tools"].as_array().is_some_and(|t| !t.is_empty()));
        assert!(!body["messages"].to_string().contains("Answer the user now"));
    }
    let doctor = sb.run(Some(&mock), &["doctor"]).await;
    assert!(
        doctor.stdout.contains("assist of gpt-4.1: off"),
        "{}",
        doctor.stdout
    );
}

/// The two-workers run: the persona spawned both, then waited for `<agent-id-1>` and
/// `<agent-id-2>` (copied from nowhere) three times, each refused, until it gave up on
/// waiting. Ids none of which is a worker of its own now mean its workers.
#[tokio::test(flavor = "multi_thread")]
async fn waiting_for_ids_that_are_none_of_its_workers_waits_for_all_of_them() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            return MockResponse::tool_call(
                "r",
                "return_results",
                &good_result("done").to_string(),
            );
        }
        match tool_count(body) {
            0 => MockResponse::tool_calls(vec![
                call(
                    "s1",
                    "spawn_agent",
                    json!({"role_name": "implementer", "task_prompt": "a"}),
                ),
                call(
                    "s2",
                    "spawn_agent",
                    json!({"role_name": "implementer", "task_prompt": "b"}),
                ),
            ]),
            2 => MockResponse::tool_call(
                "w",
                "wait_for_agents",
                &json!({"agent_ids": ["<agent-id-1>", "<agent-id-2>"], "timeout_s": 60})
                    .to_string(),
            ),
            _ => MockResponse::text("both done"),
        }
    });
    let run = sb.exec(&mock, &["--approval", "auto", "two workers"]).await;
    run.assert_ok();
    let last = mock.requests().last().unwrap().body.clone();
    let waited = &tool_messages(&last)[2].1;
    assert!(waited.contains("waited for all of them"), "{waited}");
    assert_eq!(
        waited.matches("\"status\": \"completed\"").count(),
        2,
        "{waited}"
    );
}

/// The fix-pytest run: the persona handed the session copilot → architect → implementer →
/// tester → implementer … with one reason, 23 times in ten minutes, until it was killed.
/// The same handoff made again and again, answered the same with nothing changed in
/// between, is a repeat: the loop guard notes it, then ends the turn with the reason. A
/// count of handoffs on its own is no evidence (the seeds' design chain takes four; see
/// `tests/capable_models.rs`).
#[tokio::test(flavor = "multi_thread")]
async fn the_same_handoffs_going_round_are_stopped_as_a_repeat() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        let to = ["architect", "implementer", "tester"];
        let n = tool_count(body);
        let to = if n == 0 { to[0] } else { to[1 + (n - 1) % 2] };
        MockResponse::tool_call(
            &format!("h{n}"),
            "handoff_to",
            &json!({"target_agent": to, "reason": "The test failed. Please review."}).to_string(),
        )
    });
    let run = sb
        .exec(&mock, &["--approval", "auto", "fix the failing test"])
        .await;
    assert_eq!(run.code, 1, "stderr: {}", run.stderr);
    assert!(
        run.stderr
            .contains("loop: called handoff_to 5 times with the same arguments"),
        "{}",
        run.stderr
    );
    // architect, then implementer and tester in turn until one of them is made the 5th time.
    assert_eq!(mock.requests().len(), 10, "no more handoffs after the stop");
}

/// Qwen2.5-Coder-1.5B spawned its implementer with `task_id: "task_1"` when nothing was
/// planned, was refused ("no task task_1 on the board"), and went round spawn, get_tasks
/// and wait until the loop guard stopped the turn, with no worker started. On an empty
/// board a task id is made up: the worker starts without it and the reply says so. On a
/// board with tasks an unknown id is still refused. Its `budget: {"tokens": 100}` is left
/// out the same way.
#[tokio::test(flavor = "multi_thread")]
async fn a_made_up_task_id_on_an_empty_board_does_not_stop_the_spawn() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            return MockResponse::tool_call("r", "return_results", &good_result("hi").to_string());
        }
        match tool_count(body) {
            0 => MockResponse::tool_call(
                "s",
                "spawn_agent",
                &json!({"role_name": "implementer", "task_prompt": "create notes.md", "task_id": "task_1",
                    "budget": {"tokens": 100, "cost_usd": 0.5, "wall_s": 60}}).to_string(),
            ),
            1 => MockResponse::tool_call(
                "p",
                "plan_tasks",
                &json!({"tasks": [{"id": "T1", "title": "one"}]}).to_string(),
            ),
            2 => MockResponse::tool_call(
                "s2",
                "spawn_agent",
                &json!({"role_name": "implementer", "task_prompt": "again", "task_id": "task_9"}).to_string(),
            ),
            3 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("done"),
        }
    });
    sb.exec(&mock, &["--approval", "auto", "go"])
        .await
        .assert_ok();
    let last = mock.requests().last().unwrap().body.clone();
    let outputs = tool_messages(&last);
    let spawned: Value = serde_json::from_str(&outputs[0].1).unwrap();
    assert!(spawned["agent_id"].is_string(), "{spawned}");
    assert!(
        spawned["task_id_ignored"]
            .as_str()
            .is_some_and(|n| n.contains("`task_1` is not on the board")),
        "{spawned}"
    );
    // So is a token budget smaller than one request (the same model gave 100 tokens;
    // every worker failed at its first call).
    assert!(
        spawned["budget_ignored"]
            .as_str()
            .is_some_and(|n| n.contains("budget.tokens 100 is less than one model request")),
        "{spawned}"
    );
    assert!(
        outputs[2].1.contains("no task task_9 on the board"),
        "{}",
        outputs[2].1
    );
    assert!(
        outputs[3].1.contains("\"summary\": \"hi\""),
        "{}",
        outputs[3].1
    );
}

/// The two-workers run: both workers' results were in, the persona's request without
/// tools was answered with an `ask_user` call written as text, and so was the request
/// asking once more for plain sentences; the run ended with no answer. Now the second ask
/// is a short request of its own: the user's message and what the workers reported,
/// without the tool-laden prompt and history.
#[tokio::test(flavor = "multi_thread")]
async fn a_persona_that_writes_tool_calls_as_text_is_asked_once_more_in_a_short_request() {
    const AS_TEXT: &str = "```json\n{\"name\": \"ask_user\", \"arguments\": {\"question\": \"What did they report?\"}}\n```";
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            return match tool_count(body) {
                0 => MockResponse::tool_call(
                    "w",
                    "write_file",
                    &json!({"path": "notes.md", "content": "hi\n"}).to_string(),
                ),
                _ => notes_result("created"),
            };
        }
        let offered = body["tools"].as_array().is_some_and(|t| !t.is_empty());
        if system(body).starts_with("You report to the user") {
            return MockResponse::text("The worker created notes.md with the word hi.");
        }
        match tool_count(body) {
            0 => spawn(
                "implementer",
                "create the file notes.md containing the word hi",
            ),
            1 => MockResponse::tool_call("wait", "wait_for_agents", "{}"),
            n if offered => MockResponse::tool_call(
                &format!("q{n}"),
                "ask_user",
                &json!({"question": "What did they report?"}).to_string(),
            ),
            _ => MockResponse::text(AS_TEXT),
        }
    });
    let run = sb
        .exec(
            &mock,
            &[
                "--json",
                "--approval",
                "auto",
                "Spawn a worker to write notes.md; tell me what it reported.",
            ],
        )
        .await;
    run.assert_ok();
    let persona: Vec<Value> = mock
        .requests()
        .into_iter()
        .map(|r| r.body)
        .filter(|b| !is_worker(b))
        .collect();
    // Spawn, wait, the question, its repeat, the request without tools, the short one.
    assert_eq!(persona.len(), 6, "{} persona requests", persona.len());
    let short = persona.last().unwrap();
    assert!(short["tools"].as_array().is_none_or(|t| t.is_empty()));
    let said = transcript(short);
    // The prompt, then the user's message and the facts (one user message on the wire).
    assert_eq!(said.len(), 2, "{said:?}");
    assert!(said[0].1.starts_with("You report to the user"));
    assert!(said[1].1.starts_with("Spawn a worker to write notes.md"));
    assert!(
        said[1].1.contains(
            "- implementer worker (completed): success: notes.md contains hi\n  created \
             notes.md — the note"
        ),
        "{}",
        said[1].1
    );
    let events = run.events();
    let answer = items_of_kind(&events, "assistant");
    assert_eq!(
        answer.last().unwrap()["text"],
        "The worker created notes.md with the word hi."
    );
}

/// The two-workers run on a busy 2-core server: the persona gave its worker `wall_s: 60`
/// while one model call took 45 to 170 s; the worker wrote a.txt and was failed by its
/// budget at 111 s, before it could report. A wall-time budget shorter than five of the
/// session's slowest model call is left out, and the reply says so; a longer one stands.
#[tokio::test(flavor = "multi_thread")]
async fn a_wall_budget_shorter_than_a_few_model_calls_is_left_out() {
    use std::time::Duration;
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        let slow = |r: MockResponse| r.with_delay(Duration::from_millis(700));
        if is_worker(body) {
            return slow(match tool_count(body) {
                0 => MockResponse::tool_call(
                    "w",
                    "write_file",
                    &json!({"path": "a.txt", "content": "alpha\n"}).to_string(),
                ),
                _ => MockResponse::tool_call("r", "return_results", &good_result("a.txt").to_string()),
            });
        }
        match tool_count(body) {
            0 => slow(MockResponse::tool_call(
                "s",
                "spawn_agent",
                &json!({"role_name": "implementer", "task_prompt": "create a.txt", "budget": {"wall_s": 1}}).to_string(),
            )),
            1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            2 => MockResponse::tool_call(
                "s2",
                "spawn_agent",
                &json!({"role_name": "code_reviewer", "task_prompt": "look", "budget": {"wall_s": 3600}}).to_string(),
            ),
            _ => MockResponse::text("done"),
        }
    });
    sb.exec(&mock, &["--approval", "auto", "go"])
        .await
        .assert_ok();
    let last = mock
        .requests()
        .into_iter()
        .map(|r| r.body)
        .rfind(|b| !is_worker(b))
        .unwrap();
    let outputs = tool_messages(&last);
    let spawned: Value = serde_json::from_str(&outputs[0].1).unwrap();
    assert!(
        spawned["wall_budget_ignored"]
            .as_str()
            .is_some_and(|n| n.contains("budget.wall_s 1 is less than 5 model calls take here")),
        "{spawned}"
    );
    // The worker outlived the second it was given and reported.
    assert!(
        outputs[1].1.contains("\"status\": \"completed\""),
        "{}",
        outputs[1].1
    );
    assert_eq!(sb.read("a.txt"), "alpha\n");
    let second: Value = serde_json::from_str(&outputs[2].1).unwrap();
    assert!(second.get("wall_budget_ignored").is_none(), "{second}");
}

/// The same task in the TUI, another path of the same model: its fix passed, its next call
/// rewrote test_calc.py without `from calc import add`, and from then on it edited calc.py
/// (adding `return a + b` again each time) while the tests failed, until interrupted. A run
/// that fails after the tests passed now names the files changed since and what they held;
/// the file put back, the tests pass and the answer follows.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_that_fails_after_a_pass_says_which_change_broke_it_and_what_to_put_back() {
    const TEST: &str = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("calc.py", "def add(a, b):\n    return a - b\n");
    sb.write("test_calc.py", TEST);
    sb.workspace_config(
        "[tools]\ntest_command = \"grep -q 'a + b' calc.py && grep -q 'from calc import add' test_calc.py\"\n",
    );
    mock.set_responder(|body| {
        let outputs = tool_messages(body);
        let last = outputs.last().map(|(_, o)| o.clone()).unwrap_or_default();
        // Green again after the file went back: the answer.
        if outputs.len() > 4 && last.starts_with("tests passed") {
            return MockResponse::text("add returns a + b now; the tests pass.");
        }
        if last.contains("test_calc.py as it was:") {
            return MockResponse::tool_call(
                "back",
                "write_file",
                &json!({"path": "test_calc.py", "content": TEST}).to_string(),
            );
        }
        match outputs.len() {
            0 => MockResponse::tool_call("t0", "run_tests", "{}"),
            1 => MockResponse::tool_call(
                "e",
                "edit_file",
                &json!({"path": "calc.py", "old_text": "a - b", "new_text": "a + b"}).to_string(),
            ),
            2 => MockResponse::tool_call("t2", "run_tests", "{}"),
            3 => MockResponse::tool_call(
                "w",
                "write_file",
                &json!({"path": "test_calc.py", "content": "def test_add():\n    assert add(2, 3) == 5"}).to_string(),
            ),
            n => MockResponse::tool_call(&format!("t{n}"), "run_tests", "{}"),
        }
    });
    let run = sb
        .exec(
            &mock,
            &[
                "--json",
                "--approval",
                "auto",
                "Fix add in calc.py, then run the tests.",
            ],
        )
        .await;
    run.assert_ok();
    assert_eq!(sb.read("test_calc.py"), TEST);
    let reqs: Vec<Value> = mock.requests().into_iter().map(|r| r.body).collect();
    let outputs = tool_messages(reqs.last().unwrap());
    let failed_again = &outputs[4].1;
    assert!(failed_again.starts_with("tests FAILED"), "{failed_again}");
    assert!(
        failed_again.contains(&format!(
            "test_calc.py as it was:\n```\n{}\n```",
            TEST.trim_end()
        )),
        "{failed_again}"
    );
    let events = run.events();
    let answer = items_of_kind(&events, "assistant");
    assert_eq!(
        answer.last().unwrap()["text"],
        "add returns a + b now; the tests pass."
    );
}
