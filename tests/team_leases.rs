//! File leases beyond the claim (issue 54 part 3): a supervisor's `spawn_agent` with a
//! `task_id` checks the task's lease as a claim does (refused naming the holder, or
//! waiting when the task says so); a worker writing outside its task's declared paths is
//! told so in the write's result (the write stands); a merge conflict names the leases on
//! its files. Real `squad exec` binary, mock server over HTTP.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use serde_json::{Value, json};

fn mentions(body: &Value, needle: &str) -> bool {
    transcript(body).iter().any(|(_, c)| c.contains(needle))
}

fn tool(id: &str, name: &str, args: Value) -> MockResponse {
    MockResponse::tool_call(id, name, &args.to_string())
}

fn write(id: &str, path: &str, content: &str) -> MockResponse {
    tool(id, "write_file", json!({"path": path, "content": content}))
}

fn done(summary: &str, files: &[&str]) -> MockResponse {
    let artifacts: Vec<Value> = (files.iter())
        .map(|f| json!({"file_path": f, "description": "written", "change_type": "modified"}))
        .collect();
    tool(
        "r",
        "return_results",
        json!({"result": {"status": "success", "summary": summary,
               "artifacts": artifacts, "known_issues": []}}),
    )
}

fn sleep(s: f32) -> MockResponse {
    tool("s", "run_command", json!({"command": format!("sleep {s}")}))
}

fn spawn_for(task: &str, marker: &str) -> MockResponse {
    tool(
        &format!("sp{task}"),
        "spawn_agent",
        json!({"role_name": "agentic_coder", "task_id": task,
               "task_prompt": format!("Do the task. ({marker})")}),
    )
}

/// Which worker sent the request, by its prompt's marker.
fn who(body: &Value) -> &'static str {
    ["W1", "W2", "W3"]
        .into_iter()
        .find(|w| mentions(body, &format!("({w})")))
        .unwrap_or("?")
}

fn task_events(events: &[Value], id: &str, status: &str) -> Vec<usize> {
    (events.iter().enumerate())
        .filter(|(_, e)| {
            e["type"] == "task_updated" && e["task"]["id"] == id && e["task"]["status"] == status
        })
        .map(|(i, _)| i)
        .collect()
}

/// The tool results of one worker's requests, the last request's.
fn results_of(reqs: &[Value], worker: &str) -> Vec<(String, String)> {
    (reqs.iter())
        .filter(|b| is_worker(b) && who(b) == worker)
        .max_by_key(|b| tool_count(b))
        .map(tool_messages)
        .unwrap_or_default()
}

/// T1 holds `lexer/**`; a spawn for T2 (`lexer/a.txt`) is refused naming T1's worker, a
/// spawn for T3 (`lexer/b.txt`, `wait: true`) waits until T1 is done; T1's worker writes
/// inside its paths (nothing said) and outside them (told, the write stands).
#[tokio::test(flavor = "multi_thread")]
async fn a_spawn_for_a_task_checks_its_lease_and_a_write_outside_it_is_told() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            return match (who(body), tool_count(body)) {
                ("W1", 0) => sleep(2.0),
                ("W1", 1) => write("w1", "lexer/T1.txt", "T1\n"),
                ("W1", 2) => write("w2", "docs/notes.txt", "notes\n"),
                ("W1", _) => done("T1 done", &["lexer/T1.txt", "docs/notes.txt"]),
                ("W3", 0) => write("w3", "lexer/b.txt", "b\n"),
                (_, _) => done("T3 done", &["lexer/b.txt"]),
            };
        }
        let task = |id: &str, paths: &[&str], wait: bool| {
            json!({"id": id, "title": format!("do {id}"), "paths": paths, "wait": wait})
        };
        match tool_count(body) {
            0 => tool(
                "p",
                "plan_tasks",
                json!({"tasks": [
                    task("T1", &["lexer/**"], false),
                    task("T2", &["lexer/a.txt"], false),
                    task("T3", &["lexer/b.txt"], true),
                ]}),
            ),
            1 => spawn_for("T1", "W1"),
            2 => spawn_for("T2", "W2"),
            3 => spawn_for("T3", "W3"),
            4 => tool("w", "wait_for_agents", json!({})),
            _ => MockResponse::text("the leases held"),
        }
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "split the work"])
        .await;
    run.assert_ok();
    let events = run.events();
    let reqs: Vec<Value> = mock.requests().into_iter().map(|r| r.body).collect();

    // The spawn for T2 was refused, naming T1 and its worker.
    let t1_running = &events[task_events(&events, "T1", "running")[0]];
    let w1 = t1_running["task"]["assignee"].as_str().unwrap()[..8].to_string();
    let persona = (reqs.iter())
        .filter(|b| !is_worker(b))
        .max_by_key(|b| tool_count(b))
        .unwrap();
    let spawns: Vec<(String, String)> = tool_messages(persona);
    let refused = &spawns[2].1;
    assert!(
        refused.contains("overlap task T1") && refused.contains(&format!("worker {w1} holds")),
        "the spawn for T2 is refused naming T1's worker: {refused}"
    );
    assert!(
        task_events(&events, "T2", "running").is_empty(),
        "T2 never ran"
    );
    // The spawn for T3 waited for T1 to be done.
    let t1_done = task_events(&events, "T1", "done")[0];
    let t3_run = task_events(&events, "T3", "running")[0];
    assert!(t3_run > t1_done, "T3 ran only once T1 was done");
    assert_eq!(task_events(&events, "T3", "done").len(), 1);

    // Inside its paths: nothing said; outside: told, naming the globs; both written.
    let w1_results = results_of(&reqs, "W1");
    let inside = &w1_results[1].1;
    assert!(!inside.contains("[squad]"), "{inside}");
    let outside = &w1_results[2].1;
    assert!(
        outside.contains("[squad] docs/notes.txt outside task T1's declared paths (lexer/**)"),
        "{outside}"
    );
    assert_eq!(sb.read("docs/notes.txt"), "notes\n");
    assert_eq!(sb.read("lexer/T1.txt"), "T1\n");
}

/// Two workers in worktrees change `a.txt` from one base: T1 declared it, T2 declared
/// `b.txt`. T1's change merges; T2's conflicts, and its merge report names T1's lease
/// and its worker, and that the file was outside T2's own paths.
#[tokio::test(flavor = "multi_thread")]
async fn a_merge_conflict_names_the_leases_on_its_files() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    git(sb.ws(), &["init", "-q"]);
    sb.write("a.txt", "base\n");
    sb.write(".gitignore", ".squad/\n");
    git(sb.ws(), &["add", "-A"]);
    git(sb.ws(), &["commit", "-qm", "start"]);
    mock.set_responder(|body| {
        if is_worker(body) {
            return match (who(body), tool_count(body)) {
                ("W1", 0) => write("w", "a.txt", "one\n"),
                ("W1", _) => done("T1 done", &["a.txt"]),
                ("W2", 0) => sleep(1.5),
                ("W2", 1) => write("w", "a.txt", "two\n"),
                (_, _) => done("T2 done", &["a.txt"]),
            };
        }
        match tool_count(body) {
            0 => tool(
                "p",
                "plan_tasks",
                json!({"tasks": [
                    {"id": "T1", "title": "a", "paths": ["a.txt"]},
                    {"id": "T2", "title": "b", "paths": ["b.txt"]},
                ]}),
            ),
            1 => MockResponse::tool_calls(vec![
                call(
                    "s1",
                    "spawn_agent",
                    json!({"role_name": "agentic_coder", "task_id": "T1", "task_prompt": "(W1)"}),
                ),
                call(
                    "s2",
                    "spawn_agent",
                    json!({"role_name": "agentic_coder", "task_id": "T2", "task_prompt": "(W2)"}),
                ),
            ]),
            3 => tool("w", "wait_for_agents", json!({})),
            _ => MockResponse::text("one merged, one conflicted"),
        }
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "two changes"])
        .await;
    run.assert_ok();
    let events = run.events();
    let w1 = events[task_events(&events, "T1", "running")[0]]["task"]["assignee"]
        .as_str()
        .unwrap()[..8]
        .to_string();
    let conflict = (events.iter())
        .find(|e| e["type"] == "merge_report" && e["state"] == "conflict")
        .expect("W2's change conflicts");
    let note = conflict["note"].as_str().unwrap();
    assert!(
        note.starts_with(&format!(
            "Leases: a.txt is in task T1 (a.txt) of worker {w1}, done; outside this worker's \
             task T2 (b.txt)."
        )),
        "{note}"
    );
    assert_eq!(sb.read("a.txt"), "one\n");
}
