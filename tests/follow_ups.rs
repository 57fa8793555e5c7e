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
/// loop guard stopped the turn, with no answer. Now its third call after the results goes
/// without tools; it wrote the question as a fenced tool call instead (its template's
/// habit), is asked once more for plain sentences, and answers.
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
    // Spawn, wait, two questions, then the request without tools.
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
/// Four handoffs in a row with no file changed in between now end the turn, with the reason.
#[tokio::test(flavor = "multi_thread")]
async fn handoffs_going_round_with_nothing_changed_end_the_turn_with_the_reason() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        let to = [
            "architect",
            "implementer",
            "tester",
            "implementer",
            "tester",
            "implementer",
        ];
        let n = tool_count(body);
        MockResponse::tool_call(
            &format!("h{n}"),
            "handoff_to",
            &json!({"target_agent": to[n.min(5)], "reason": "The test failed. Please review."})
                .to_string(),
        )
    });
    let run = sb
        .exec(&mock, &["--approval", "auto", "fix the failing test"])
        .await;
    assert_eq!(run.code, 1, "stderr: {}", run.stderr);
    assert!(
        run.stderr.contains("handoffs going round: 4 handoffs"),
        "{}",
        run.stderr
    );
    assert_eq!(mock.requests().len(), 4, "no fifth handoff");
}

/// Qwen2.5-Coder-1.5B as the architect, asked to "write a short design note to design.md
/// … then hand off to the implementer with handoff_to so it writes greet.py": it answered
/// with the design note as text, and the session ended with no file and no handoff. Now
/// the turn that ends with design.md still absent is told so, once; the persona writes
/// it, hands off, and the implementer writes greet.py. A second answer with nothing new
/// missing is not told again.
#[tokio::test(flavor = "multi_thread")]
async fn a_persona_that_answers_with_the_file_it_was_asked_to_write_is_told_to_write_it() {
    const PROMPT: &str = "Write a short design note to design.md for a Python function \
                          greet(name) in greet.py that returns 'Hello, ' + name + '!'. Then \
                          hand off to the implementer with handoff_to so it writes greet.py.";
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        let told = last_user(body).contains("named in the request");
        if system(body).contains("You are the implementer") {
            // The architect's write and handoff came before.
            return match tool_count(body) {
                2 => MockResponse::tool_call(
                    "g",
                    "write_file",
                    &json!({"path": "greet.py", "content": "def greet(name):\n    return 'Hello, ' + name + '!'\n"}).to_string(),
                ),
                _ => MockResponse::text("greet.py is written."),
            };
        }
        match (tool_count(body), told) {
            (0, false) => MockResponse::text("# Design Note for greet.py\n\n## Overview\nThe `greet` function returns \"Hello, [name]!\"."),
            (0, true) => MockResponse::tool_call(
                "d",
                "write_file",
                &json!({"path": "design.md", "content": "# greet\nReturns 'Hello, ' + name + '!'.\n"}).to_string(),
            ),
            _ => MockResponse::tool_call(
                "h",
                "handoff_to",
                &json!({"target_agent": "implementer", "reason": "design.md is written; write greet.py"}).to_string(),
            ),
        }
    });
    let run = sb
        .exec(
            &mock,
            &[
                "--json",
                "--approval",
                "auto",
                "--role",
                "architect",
                PROMPT,
            ],
        )
        .await;
    run.assert_ok();
    assert!(sb.read("design.md").contains("greet"));
    assert!(sb.read("greet.py").contains("Hello, "));
    let reminders: Vec<String> = mock
        .requests()
        .iter()
        .map(|r| last_user(&r.body))
        .filter(|t| t.contains("named in the request"))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(reminders.len(), 1, "{reminders:?}");
    assert!(
        reminders[0].contains("design.md, greet.py named in the request do not exist yet"),
        "{}",
        reminders[0]
    );
    let events = run.events();
    assert_eq!(items_of_kind(&events, "handoff").len(), 1);
}

/// A request that names a file nobody makes ends with its answer after two reminders,
/// the second plain (the 1.5B architect answered the first with "I will create the
/// design.md and greet.py files." and stopped).
#[tokio::test(flavor = "multi_thread")]
async fn a_persona_reminded_of_a_missing_file_is_told_plainly_once_more_then_may_answer() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|_| MockResponse::text("I would rather not write plan.md."));
    let run = sb
        .exec(&mock, &["--approval", "auto", "write the plan to plan.md"])
        .await;
    run.assert_ok();
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3, "the answer, two reminders, the answer again");
    assert!(last_user(&reqs[1].body).contains("plan.md named in the request does not exist yet"));
    assert!(last_user(&reqs[2].body).contains(
        "Still nothing written: plan.md does not exist. Saying you will is not doing it: \
         call write_file now with path \"plan.md\""
    ));
    assert_eq!(
        run.stdout.trim().lines().last(),
        Some("I would rather not write plan.md.")
    );
    // The user reads why the request is not done.
    assert!(
        run.stderr.contains(
            "the request asked for plan.md; after two reminders it was still not written, so \
             the request is not done"
        ),
        "{}",
        run.stderr
    );
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

/// The fix-pytest run: the persona's fix made `run_tests` pass; it then wrote calc.py
/// again (dropping its last newline), ran the tests again (passed), and rewrote
/// test_calc.py without its import, after which the tests failed and it went round edits
/// and handoffs until `max_iterations`. Now, two calls after its tests first passed with
/// its change, while they still pass with nothing changed since, its request goes without
/// tools and says why; it answers.
#[tokio::test(flavor = "multi_thread")]
async fn a_persona_whose_change_passed_the_tests_is_brought_to_its_answer() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("calc.py", "def add(a, b):\n    return a - b\n");
    sb.workspace_config("[tools]\ntest_command = \"grep -q 'a + b' calc.py\"\n");
    mock.set_responder(|body| {
        let offered = body["tools"].as_array().is_some_and(|t| !t.is_empty());
        if !offered {
            return MockResponse::text("I changed add in calc.py to return a + b; the tests pass.");
        }
        match tool_count(body) {
            0 => MockResponse::tool_call("t0", "run_tests", "{}"),
            1 => MockResponse::tool_call(
                "e",
                "edit_file",
                &json!({"path": "calc.py", "old_text": "a - b", "new_text": "a + b"}).to_string(),
            ),
            2 => MockResponse::tool_call("t1", "run_tests", "{}"),
            3 => MockResponse::tool_call(
                "w",
                "write_file",
                &json!({"path": "calc.py", "content": "def add(a, b):\n    return a + b"}).to_string(),
            ),
            4 => MockResponse::tool_call("t2", "run_tests", "{}"),
            n => MockResponse::tool_call(
                &format!("x{n}"),
                "write_file",
                &json!({"path": "test_calc.py", "content": "def test_add():\n    assert add(2, 3) == 5"}).to_string(),
            ),
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
    let reqs: Vec<Value> = mock.requests().into_iter().map(|r| r.body).collect();
    // Three calls before the tests passed, two free ones after, then none with tools.
    assert_eq!(reqs.len(), 6, "{} requests", reqs.len());
    let last = reqs.last().unwrap();
    assert!(last["tools"].as_array().is_none_or(|t| t.is_empty()));
    assert!(
        last["messages"]
            .to_string()
            .contains("the tests pass; nothing is left to do")
    );
    assert!(
        !sb.ws().join("test_calc.py").exists(),
        "the test file was not rewritten"
    );
    let events = run.events();
    let answer = items_of_kind(&events, "assistant");
    assert_eq!(
        answer.last().unwrap()["text"],
        "I changed add in calc.py to return a + b; the tests pass."
    );
}

/// A change after the tests passed, and no run since: the tools stay (the change is not
/// checked yet), even past the free calls; once the tests pass again, the answer is due.
#[tokio::test(flavor = "multi_thread")]
async fn a_change_after_the_tests_passed_keeps_the_tools_until_they_pass_again() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("calc.py", "def add(a, b):\n    return a - b\n");
    sb.workspace_config("[tools]\ntest_command = \"grep -q 'a + b' calc.py\"\n");
    mock.set_responder(|body| {
        let offered = body["tools"].as_array().is_some_and(|t| !t.is_empty());
        if !offered {
            return MockResponse::text("All done: add returns a + b and the tests pass.");
        }
        let edit = |n: usize, from: &str, to: &str| {
            MockResponse::tool_call(
                &format!("e{n}"),
                "edit_file",
                &json!({"path": "calc.py", "old_text": from, "new_text": to}).to_string(),
            )
        };
        match tool_count(body) {
            0 => edit(0, "a - b", "a + b"),
            1 => MockResponse::tool_call("t1", "run_tests", "{}"),
            2 => edit(2, "a + b", "a + b  # sum"),
            3 => edit(3, "# sum", "# the sum"),
            4 => edit(4, "# the sum", "# sum of a and b"),
            5 => MockResponse::tool_call("t5", "run_tests", "{}"),
            n => edit(n, "# sum of a and b", "# a and b, summed"),
        }
    });
    let run = sb
        .exec(
            &mock,
            &["--json", "--approval", "auto", "Fix add in calc.py."],
        )
        .await;
    run.assert_ok();
    let reqs: Vec<Value> = mock.requests().into_iter().map(|r| r.body).collect();
    let offered: Vec<bool> = reqs
        .iter()
        .map(|b| b["tools"].as_array().is_some_and(|t| !t.is_empty()))
        .collect();
    // After the first pass came three changes, then a second pass: only the request after
    // it goes without tools.
    let mut expected = vec![true; 6];
    expected.push(false);
    assert_eq!(offered, expected, "{offered:?}");
    assert!(sb.read("calc.py").contains("# sum of a and b"));
    let events = run.events();
    let answer = items_of_kind(&events, "assistant");
    assert_eq!(
        answer.last().unwrap()["text"],
        "All done: add returns a + b and the tests pass."
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
    // Spawn, wait, two free calls, the request without tools, the short one.
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

/// The handoff-chain run, this session: the architect answered with the design note as
/// text; reminded, it replied "I will create the `design.md` and `greet.py` files using
/// the provided tools." followed by `### design.md` over the note in a ```markdown block
/// (with python examples fenced inside it) and `### greet.py` over the code, and no tool
/// call; reminded plainly, the same again. The labelled blocks of files the request asked
/// for are now its `write_file` calls; it then hands off as asked. A labelled block of a
/// file nobody asked for stays text.
#[tokio::test(flavor = "multi_thread")]
async fn a_persona_that_writes_asked_for_files_as_labelled_blocks_gets_them_written() {
    const PROMPT: &str = "Write a short design note to design.md for a Python function \
                          greet(name) in greet.py that returns 'Hello, ' + name + '!'. Then \
                          hand off to the implementer with handoff_to so it writes greet.py.";
    const BLOCKS: &str = "I will create the `design.md` and `greet.py` files using the provided tools.\n\n\
        ### design.md\n```markdown\n# Design Note for greet.py\n\n## Function Signature\n```python\n\
        def greet(name: str) -> str:\n    \"\"\"Returns a greeting.\"\"\"\n```\n\n## Testing\n```python\n\
        assert greet(\"Alice\") == \"Hello, Alice!\"\n```\n```\n\n\
        ### greet.py\n```python\n# greet.py\ndef greet(name: str) -> str:\n    return f\"Hello, {name}!\"\n```\n\n\
        ### extra.py\n```python\nprint('not asked for')\n```\n";
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if system(body).contains("You are the implementer") {
            return MockResponse::text("greet.py is there and returns the greeting.");
        }
        let told = last_user(body).contains("named in the request");
        match (tool_count(body), told) {
            (0, false) => MockResponse::text("# Design Note for greet.py\n\n## Overview\nThe `greet` function returns \"Hello, [name]!\"."),
            (0, true) => MockResponse::text(BLOCKS),
            _ => MockResponse::tool_call(
                "h",
                "handoff_to",
                &json!({"target_agent": "implementer", "reason": "design.md is written"}).to_string(),
            ),
        }
    });
    let run = sb
        .exec(
            &mock,
            &[
                "--json",
                "--approval",
                "auto",
                "--role",
                "architect",
                PROMPT,
            ],
        )
        .await;
    run.assert_ok();
    let design = sb.read("design.md");
    assert!(
        design.starts_with("# Design Note for greet.py\n"),
        "{design}"
    );
    assert!(
        design.contains("```python\nassert greet(\"Alice\")"),
        "{design}"
    );
    assert!(design.ends_with("```\n"), "{design}");
    assert_eq!(
        sb.read("greet.py"),
        "# greet.py\ndef greet(name: str) -> str:\n    return f\"Hello, {name}!\"\n"
    );
    assert!(
        !sb.ws().join("extra.py").exists(),
        "a file nobody asked for was written"
    );
    let events = run.events();
    let written: Vec<&Value> = items_of_kind(&events, "assistant")
        .into_iter()
        .flat_map(|i| i["tool_calls"].as_array().into_iter().flatten())
        .filter(|c| c["name"] == "write_file")
        .collect();
    assert_eq!(written.len(), 2, "{written:?}");
    assert_eq!(items_of_kind(&events, "handoff").len(), 1);
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
        let offered = body["tools"].as_array().is_some_and(|t| !t.is_empty());
        if !offered {
            return MockResponse::text("add returns a + b now; the tests pass.");
        }
        let outputs = tool_messages(body);
        let last = outputs.last().map(|(_, o)| o.clone()).unwrap_or_default();
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
