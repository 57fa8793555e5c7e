//! Guard rails (issue 11): the loop guard stops an agent that repeats one call, and stall
//! detection marks an agent whose model or tool call makes no progress. Against the mock
//! server, through the real `squad exec` binary and the public runtime API.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use ::squad::protocol::{AgentStatus, ApprovalPolicy, EventKind, TurnEnd};
use common::agents::*;
use common::engine::*;
use common::*;
use serde_json::{Value, json};
use std::time::Duration;

const LOOP_EDIT: &str = "loop: called edit_file 5 times with the same arguments, same error";

/// The last tool message of a request.
fn last_tool_result(body: &Value) -> String {
    tool_messages(body).last().map(|(_, c)| c.clone()).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_repeating_a_failing_call_is_warned_then_stopped_and_its_supervisor_told() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    mock.set_responder(|body| {
        if is_worker(body) {
            // What a small model does: the very same call, whatever it is told. The key
            // order changes from call to call; it is still the same call.
            let args = if tool_count(body).is_multiple_of(2) {
                r#"{"path":"a.txt","old_text":"alpha","new_text":"alpha"}"#
            } else {
                r#"{ "new_text": "alpha", "path": "a.txt", "old_text": "alpha" }"#
            };
            return MockResponse::tool_call("e", "edit_file", args);
        }
        match tool_count(body) {
            0 => spawn("agentic_coder", "fix the typo in a.txt"),
            1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("the worker looped; I will do it myself"),
        }
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "fix the typo"])
        .await;
    run.assert_ok();

    let reqs = mock.requests();
    let worker: Vec<&Value> = reqs
        .iter()
        .map(|r| &r.body)
        .filter(|b| is_worker(b))
        .collect();
    assert_eq!(
        worker.len(),
        5,
        "the worker is stopped after its 5th identical failure: no 6th request"
    );
    // Requests 2..5 carry results 1..4: plain errors first, the note from the 3rd on.
    for (i, body) in worker.iter().enumerate().skip(1) {
        let result = last_tool_result(body);
        assert!(
            result.contains("old_text and new_text are identical"),
            "{result}"
        );
        let noted = result.contains("repeating") || result.contains("change your approach");
        assert_eq!(noted, i >= 3, "result {i}: {result}");
        if i >= 3 {
            assert!(result.contains(&format!("{i} times")), "{result}");
        }
    }
    // The supervisor's next request names the loop, in the failure of its worker.
    let report = last_tool_result(&reqs.last().unwrap().body);
    assert!(
        report.contains("CRITICAL") || report.contains("\"failed\""),
        "{report}"
    );
    assert!(report.contains(LOOP_EDIT), "{report}");

    let events = run.events();
    let worker_id = of_type(&events, "agent_spawned")[1]["agent_id"].clone();
    let failed: Vec<_> = of_type(&events, "agent_status")
        .into_iter()
        .filter(|e| e["agent_id"] == worker_id && e["status"] == "failed")
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["reason"], LOOP_EDIT);
    assert!(
        of_type(&events, "error")
            .iter()
            .any(|e| e["agent_id"] == worker_id && e["message"] == LOOP_EDIT),
        "the stop is an error the user sees"
    );
    // The 5th result is recorded with the stop, so the history stays whole.
    let results: Vec<_> = events
        .iter()
        .filter(|e| {
            e["type"] == "item_added"
                && e["agent_id"] == worker_id
                && e["item"]["kind"] == "tool_result"
        })
        .collect();
    assert_eq!(results.len(), 5);
    let last = results[4]["item"]["output"].as_str().unwrap();
    assert!(
        last.contains("Stopped this turn") && last.contains(LOOP_EDIT),
        "{last}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_persona_reading_one_file_over_and_over_is_stopped_and_the_session_goes_on() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    mock.set_responder(|body| {
        let last_user = transcript(body)
            .iter()
            .rev()
            .find(|(role, _)| role == "user")
            .map(|(_, text)| text.clone())
            .unwrap_or_default();
        if last_user.contains("something else") {
            return MockResponse::text("here is something else");
        }
        MockResponse::tool_call("r", "read_file", r#"{"path":"a.txt"}"#)
    });
    let mut h = start_engine(&mock, &sb, ApprovalPolicy::Auto).await;
    let root = h.info.root_agent;
    let mut seen = Vec::new();
    say(&h, "what is in a.txt?");
    let finished = next_event(&mut h, &mut seen, |e| {
        e.agent_id == root && matches!(e.kind, EventKind::TurnFinished { .. })
    })
    .await;
    assert_eq!(
        finished.kind,
        EventKind::TurnFinished {
            end: TurnEnd::Error
        }
    );
    assert_eq!(
        mock.requests().len(),
        5,
        "no 6th request after the 5th read"
    );
    let why = "loop: called read_file 5 times with the same arguments, nothing changed in between";
    assert!(
        seen.iter().any(|e| e.agent_id == root
            && e.kind
                == EventKind::Error {
                    message: why.into()
                }),
        "a clear error for the user"
    );
    // The persona is not failed: it rests, and the next message is served.
    assert!(!statuses_of(&seen, root).contains(&AgentStatus::Failed));
    say(&h, "something else please");
    let finished = next_event(&mut h, &mut seen, |e| {
        e.agent_id == root && matches!(e.kind, EventKind::TurnFinished { .. })
    })
    .await;
    assert_eq!(
        finished.kind,
        EventKind::TurnFinished {
            end: TurnEnd::Completed
        }
    );
    // A new turn counts afresh: its request carries the stopped turn's results.
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 6);
    let results = tool_messages(&reqs[5].body);
    assert_eq!(results.len(), 5);
    assert!(
        results[4].1.contains("Stopped this turn"),
        "{}",
        results[4].1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_write_between_questions_is_stopped_once_it_changed_nothing_five_times() {
    // What Qwen2.5-Coder-1.5B did for fifteen minutes of `squad exec`: write a file, ask
    // the (absent) user, write the very same content, ask again…
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if tool_count(body).is_multiple_of(2) {
            MockResponse::tool_call(
                "w",
                "write_file",
                &json!({"path": "t.py", "content": "x = 1\n"}).to_string(),
            )
        } else {
            // Worded anew each time (the same question again is a loop of its own, below).
            let question = format!("what now ({})?", tool_count(body));
            MockResponse::tool_call(
                "q",
                "ask_user",
                &json!({ "question": question }).to_string(),
            )
        }
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "fix the test"])
        .await;
    let writes = |body: &Value| {
        tool_messages(body)
            .iter()
            .filter(|(_, c)| c.contains("t.py"))
            .count()
    };
    let reqs = mock.requests();
    let last = &reqs.last().unwrap().body;
    // The first write creates the file; the next ones change nothing: the 5th of those
    // ends the turn, and no request carries its result.
    assert_eq!(writes(last), 5);
    assert_eq!(
        reqs.len(),
        11,
        "write and ask five times, then the 6th write"
    );
    assert!(
        tool_messages(last)
            .iter()
            .any(|(_, c)| c.contains("already has exactly this content")),
        "the model is told its write changed nothing"
    );
    let why = "loop: called write_file 5 times with the same arguments, nothing changed in between";
    assert!(
        of_type(&run.events(), "error")
            .iter()
            .any(|e| e["message"] == why),
        "{}",
        run.stdout
    );
    assert_eq!(sb.read("t.py"), "x = 1\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn reads_with_a_change_in_between_are_not_a_loop() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    mock.set_responder(|body| {
        let n = tool_count(body);
        if n >= 8 {
            return MockResponse::text("done");
        }
        // read, read, read, write, read, read, read, read: never 5 reads with nothing between.
        if n == 3 {
            return MockResponse::tool_call(
                "w",
                "write_file",
                &json!({"path": "b.txt", "content": "beta\n"}).to_string(),
            );
        }
        MockResponse::tool_call("r", "read_file", r#"{"path":"a.txt"}"#)
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "look around"])
        .await;
    run.assert_ok();
    assert_eq!(mock.requests().len(), 9);
    assert!(of_type(&run.events(), "error").is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stalled_model_stream_is_marked_within_stall_after_s_and_unmarked_when_it_moves() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[guards]\nstall_after_s = 1\n[provider]\nretry_base_ms = 10\n");
    // Two deltas, then nothing for 3 s, then the connection drops: retried, and done.
    mock.push_all([
        MockResponse::text("half an answer that stops").stall_after(2, Duration::from_secs(3)),
        MockResponse::text("the whole answer"),
    ]);
    let run = sb.exec(&mock, &["--json", "answer me"]).await;
    run.assert_ok();
    let events = run.events();
    let root = events[0]["agent_id"].clone();
    let types: Vec<&str> = events
        .iter()
        .filter(|e| e["agent_id"] == root)
        .map(|e| e["type"].as_str().unwrap())
        .filter(|t| ["stalled", "unstalled", "retrying", "turn_finished"].contains(t))
        .collect();
    // Marked while the stream was quiet (before it broke off), unmarked once it moved.
    assert_eq!(
        types,
        ["stalled", "retrying", "unstalled", "turn_finished"],
        "{types:?}"
    );
    let stalled = of_type(&events, "stalled")[0];
    assert_eq!(stalled["on"], "model call");
    // Seen one second after the last byte (a loaded machine may wake the timer late).
    let since = stalled["since_s"].as_u64().unwrap();
    assert!((1..=2).contains(&since), "{stalled}");
    assert!(run.stdout.contains("the whole answer"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_call_that_does_not_end_is_marked_stalled_until_it_ends() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[guards]\nstall_after_s = 1\n");
    mock.push_all([
        MockResponse::tool_call("c", "run_command", r#"{"command":"sleep 3"}"#),
        MockResponse::text("slept"),
    ]);
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "sleep a bit"])
        .await;
    run.assert_ok();
    let events = run.events();
    let types: Vec<&str> = events
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .filter(|t| ["stalled", "unstalled", "tool_call_begin", "tool_call_end"].contains(t))
        .collect();
    assert_eq!(
        types,
        ["tool_call_begin", "stalled", "unstalled", "tool_call_end"],
        "{types:?}"
    );
    let stalled = of_type(&events, "stalled")[0];
    assert_eq!(stalled["on"], "tool call run_command sleep 3");
    let since = stalled["since_s"].as_u64().unwrap();
    assert!((1..=2).contains(&since), "{stalled}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_question_to_an_absent_user_is_stopped_on_the_fifth_and_exec_says_why() {
    // What Qwen2.5-Coder-1.5B did with Aider's `proverb` exercise under `squad exec`:
    // plan_tasks, then ask_user("What is the proverb about?") 28 times in a row, each
    // answered "nobody can answer", until the 600 s timeout.
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| match tool_count(body) {
        0 => MockResponse::tool_call(
            "p",
            "plan_tasks",
            &json!({"tasks": [{"id": "t1", "title": "write the proverb"}]}).to_string(),
        ),
        n => MockResponse::tool_call(
            &format!("q{n}"),
            "ask_user",
            r#"{"question":"What is the proverb about?"}"#,
        ),
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "solve proverb"])
        .await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 6, "plan, then five questions: no 7th request");
    let last = &reqs.last().unwrap().body;
    assert!(
        tool_messages(last)
            .iter()
            .any(|(_, c)| c.contains("same `ask_user` call 3 times")),
        "the third answer carries the note"
    );
    let why = "loop: called ask_user 5 times with the same arguments, nothing changed in between";
    assert!(run.stderr.contains(why), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn tests_passing_again_on_files_put_back_after_a_failure_end_the_round() {
    // What Qwen2.5-Coder-1.5B did after its fix passed: broke the test file in another
    // persona's turn, got the failure's note, wrote the files back, passed again, and
    // would have gone round once more.
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("calc.py", "def add(a, b):\n    return a - b\n");
    sb.workspace_config("[tools]\ntest_command = \"grep -q 'a + b' calc.py\"\n");
    let fixed = "def add(a, b):\n    return a + b\n";
    let broken = "def add(a, b):\n    return a * b\n";
    let write = |id: &str, content: &str| {
        MockResponse::tool_call(
            id,
            "write_file",
            &json!({"path": "calc.py", "content": content}).to_string(),
        )
    };
    let steps = [
        write("w1", fixed),
        MockResponse::tool_call("t1", "run_tests", "{}"),
        write("w2", broken),
        MockResponse::tool_call("t2", "run_tests", "{}"),
        // Put back, blank line and all trailing newline aside.
        write("w3", "def add(a, b):\n\n    return a + b"),
        MockResponse::tool_call("t3", "run_tests", "{}"),
        MockResponse::text("add is fixed and the tests pass."),
    ];
    mock.set_responder(move |body| {
        let n = tool_count(body);
        steps
            .get(n)
            .cloned()
            .unwrap_or_else(|| MockResponse::text("past the script"))
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "fix add"])
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 7, "one request a step");
    // The failure after the pass named what to put back; the green run after it ended the
    // round: the last request offers no tool and says why.
    assert!(tool_messages(&reqs[4].body)[3].1.contains("put each back"));
    let last = &reqs[6].body;
    assert!(
        last.get("tools")
            .is_none_or(|t| t.as_array().is_some_and(|a| a.is_empty()))
    );
    assert!(last.to_string().contains("The tests pass again"));
    assert!(run.stdout.contains("add is fixed"), "{}", run.stdout);
    assert_eq!(sb.read("calc.py"), "def add(a, b):\n\n    return a + b");
}
