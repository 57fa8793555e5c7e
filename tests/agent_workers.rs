//! Agent workers (issue 53): a supervisor's `spawn_agent` with an agent role starts that
//! agent as a worker. Run through the real binary: the supervisor is squad on one mock
//! model, its worker's agent is a second squad (`squad acp`) on its own mock, driven over
//! ACP in the worker's worktree. Its edit reaches the supervisor's approval flow as the
//! worker's, and its change is checked and merged; an agent that crashes mid-prompt ends
//! its worker failed with the reason, nothing merges, and no process is left.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::squad::squad_bin;
use common::*;
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

/// A git repository with `b.txt` committed, the persona `lead` that may spawn `helper`,
/// and `helper` an agent role whose agent is this squad over ACP on `worker_mock` (run
/// through `wrap` after the shell line `before`), its process id written to `agent.pid`.
fn team(worker_mock: &MockServer, before: &str, wrap: &str) -> Sandbox {
    let sb = Sandbox::new();
    git(sb.ws(), &["init", "-q"]);
    sb.write("b.txt", "old\n");
    git(sb.ws(), &["add", "-A"]);
    git(sb.ws(), &["commit", "-qm", "start"]);
    sb.write(
        ".squad/roles/lead.toml",
        "name = \"lead\"\nsystem_prompt = \"You lead.\"\nenabled_agents = [\"helper\"]\n",
    );
    let pid = sb.tmp.path().join("agent.pid");
    let script = format!(
        "echo $$ > '{}'; {before} exec {wrap} '{}' acp --approval ask",
        pid.display(),
        squad_bin().display()
    );
    let child_data = sb.home.path().join("child-data");
    let role = format!(
        "name = \"helper\"\ndescription = \"squad over ACP\"\n\
         agent = {{ command = \"sh\", args = [\"-c\", {script:?}], env = {{ OPENAI_BASE_URL = {:?}, SQUAD_DATA_DIR = {:?} }} }}\n",
        worker_mock.base_url(),
        child_data.display().to_string(),
    );
    sb.write(".squad/roles/helper.toml", &role);
    sb
}

/// The supervisor: spawns `helper` on `task`, waits for it, then answers.
fn supervise(mock: &MockServer, task: &'static str) {
    mock.set_responder(move |body| match tool_count(body) {
        0 => spawn("helper", task),
        1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
        _ => MockResponse::text("all done"),
    });
}

fn events_of<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// The worker's agent id (the one agent with a parent).
fn worker_id(events: &[Value]) -> String {
    let spawned = events_of(events, "agent_spawned");
    let worker = spawned
        .iter()
        .find(|e| e["parent_id"].is_string())
        .unwrap_or_else(|| panic!("no worker spawned: {events:#?}"));
    worker["agent_id"].as_str().unwrap().to_string()
}

fn alive(pid_file: &Path) -> bool {
    let pid = std::fs::read_to_string(pid_file).unwrap();
    Path::new(&format!("/proc/{}", pid.trim())).exists()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_worker_edits_its_worktree_and_its_change_is_checked_and_merged() {
    let (lead, agent) = (MockServer::start().await, MockServer::start().await);
    let sb = team(&agent, "", "");
    supervise(&lead, "make b.txt say new");
    agent.push_all([
        MockResponse::tool_call(
            "w1",
            "write_file",
            &json!({"path": "b.txt", "content": "new\n"}).to_string(),
        ),
        MockResponse::text("b.txt now says new."),
    ]);
    let run = sb
        .exec(
            &lead,
            &["--json", "--role", "lead", "--approval", "auto", "go"],
        )
        .await;
    run.assert_ok();
    let events = run.events();
    let worker = worker_id(&events);
    let mine = |kind: &str| -> Vec<&Value> {
        events_of(&events, kind)
            .into_iter()
            .filter(|e| e["agent_id"] == worker.as_str())
            .collect()
    };
    // Its card: an agent worker with its own worktree.
    let spawned = &mine("agent_spawned")[0];
    assert_eq!(spawned["role"], "helper");
    assert!(
        spawned["model"].as_str().unwrap().starts_with("acp: sh -c"),
        "{spawned}"
    );
    assert_eq!(mine("worktree_created").len(), 1, "{events:#?}");
    // Its conversation: the agent's tool call and its words, as the worker's items.
    let items: Vec<&Value> = mine("item_added").iter().map(|e| &e["item"]).collect();
    assert!(
        items
            .iter()
            .any(|i| i["kind"] == "assistant" && i["tool_calls"][0]["id"] == "w1"),
        "{items:#?}"
    );
    assert!(
        items
            .iter()
            .any(|i| i["kind"] == "tool_result" && i["call_id"] == "w1"),
        "{items:#?}"
    );
    // Its result: the agent's last message, checked, and its change merged.
    let result = &mine("result_returned")[0]["result"];
    assert_eq!(result["status"], "success");
    assert_eq!(result["summary"], "b.txt now says new.");
    assert_eq!(mine("verification").len(), 1, "{events:#?}");
    let merge = &mine("merge_report")[0];
    assert_eq!(merge["state"], "merged", "{merge}");
    assert_eq!(sb.read("b.txt"), "new\n");
    assert_eq!(agent.remaining(), 0, "the agent made both its model calls");
    // The supervisor read the result; the agent's process is gone.
    let requests = lead.requests();
    let last = &requests.last().unwrap().body;
    assert!(
        tool_messages(last)
            .iter()
            .any(|(_, t)| t.contains("b.txt now says new.")),
        "{last}"
    );
    assert!(!alive(&sb.tmp.path().join("agent.pid")));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_workers_permission_request_is_the_workers_approval() {
    let (lead, agent) = (MockServer::start().await, MockServer::start().await);
    let sb = team(&agent, "", "");
    supervise(&lead, "make b.txt say new");
    agent.push_all([
        MockResponse::tool_call(
            "w1",
            "write_file",
            &json!({"path": "b.txt", "content": "new\n"}).to_string(),
        ),
        MockResponse::text("could not write b.txt"),
    ]);
    // `exec` cannot ask: under `ask`, the worker's request is refused as unanswered.
    let run = sb
        .exec(
            &lead,
            &["--json", "--role", "lead", "--approval", "ask", "go"],
        )
        .await;
    let events = run.events();
    let worker = worker_id(&events);
    let unanswered = events_of(&events, "approval_unanswered");
    assert_eq!(unanswered.len(), 1, "{events:#?}");
    assert_eq!(unanswered[0]["agent_id"], worker.as_str());
    assert_eq!(unanswered[0]["tool"], "acp edit");
    assert_eq!(sb.read("b.txt"), "old\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_that_crashes_mid_prompt_fails_its_worker_and_nothing_merges() {
    let (lead, agent) = (MockServer::start().await, MockServer::start().await);
    // The agent is killed 4 s after it started, while its second model call waits.
    let sb = team(
        &agent,
        "echo helper: low on memory >&2;",
        "timeout -s KILL 4",
    );
    supervise(&lead, "make b.txt say new");
    agent.push_all([
        MockResponse::tool_call(
            "w1",
            "write_file",
            &json!({"path": "b.txt", "content": "new\n"}).to_string(),
        ),
        MockResponse::text("late").with_delay(Duration::from_secs(30)),
    ]);
    let run = sb
        .exec(
            &lead,
            &["--json", "--role", "lead", "--approval", "auto", "go"],
        )
        .await;
    let events = run.events();
    let worker = worker_id(&events);
    let failed: Vec<&Value> = events_of(&events, "agent_status")
        .into_iter()
        .filter(|e| e["agent_id"] == worker.as_str() && e["status"] == "failed")
        .collect();
    assert_eq!(failed.len(), 1, "{events:#?}");
    let reason = failed[0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("agent `sh -c")
            && reason.contains("failed: it ended (signal: 9 (SIGKILL)) during session/prompt")
            && reason.ends_with("its stderr ends: helper: low on memory"),
        "{reason}"
    );
    assert!(!reason.contains('\n'), "{reason}");
    // Its write reached its worktree, and stays there: nothing merged.
    assert!(
        events_of(&events, "merge_report")
            .iter()
            .all(|e| e["state"] != "merged"),
        "{events:#?}"
    );
    assert_eq!(sb.read("b.txt"), "old\n");
    assert!(!alive(&sb.tmp.path().join("agent.pid")));
    // The supervisor heard of the failure with its reason.
    let requests = lead.requests();
    let last = &requests.last().unwrap().body;
    assert!(
        tool_messages(last)
            .iter()
            .any(|(_, t)| t.contains("during session/prompt")),
        "{last}"
    );
}

/// The child squad's requests, as (tool results, the whole request's text).
fn child_texts(mock: &MockServer) -> Vec<String> {
    mock.requests()
        .iter()
        .map(|r| {
            transcript(&r.body)
                .into_iter()
                .map(|(_, t)| t)
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_check_sends_the_correction_as_a_prompt_in_the_same_session() {
    let (lead, agent) = (MockServer::start().await, MockServer::start().await);
    let sb = team(&agent, "", "");
    sb.workspace_config(
        "[[verify.rules]]\nid = \"says-new\"\ncommand = \"grep -qx new b.txt\"\nseverity = \"error\"\n",
    );
    supervise(&lead, "make b.txt say new");
    let write = |text: &str| {
        MockResponse::tool_call(
            "w",
            "write_file",
            &json!({"path": "b.txt", "content": text}).to_string(),
        )
    };
    agent.push_all([
        write("nwe\n"),
        MockResponse::text("b.txt says new."),
        write("new\n"),
        MockResponse::text("fixed: b.txt says new."),
    ]);
    let run = sb
        .exec(
            &lead,
            &["--json", "--role", "lead", "--approval", "auto", "go"],
        )
        .await;
    run.assert_ok();
    let events = run.events();
    let worker = worker_id(&events);
    let verdicts: Vec<&Value> = events_of(&events, "verification")
        .into_iter()
        .filter(|e| e["agent_id"] == worker.as_str())
        .collect();
    assert_eq!(verdicts.len(), 2, "{events:#?}");
    assert_eq!(verdicts[0]["passed"], false);
    assert_eq!(verdicts[1]["passed"], true);
    // The correction was the agent's next prompt, in the session that holds its first try.
    let texts = child_texts(&agent);
    assert_eq!(texts.len(), 4, "{texts:#?}");
    assert!(
        texts[2].contains("b.txt says new.") && texts[2].contains("says-new"),
        "{}",
        texts[2]
    );
    let result = &events_of(&events, "result_returned")[0]["result"];
    assert_eq!(result["summary"], "fixed: b.txt says new.");
    assert_eq!(sb.read("b.txt"), "new\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn speak_to_agent_is_a_follow_up_prompt_in_the_same_session() {
    let (lead, agent) = (MockServer::start().await, MockServer::start().await);
    let sb = team(&agent, "", "");
    lead.set_responder(|body| match tool_count(body) {
        0 => MockResponse::tool_call(
            "s",
            "spawn_agent",
            &json!({"role_name": "helper", "task_prompt": "make b.txt say new", "keep": true})
                .to_string(),
        ),
        1 | 3 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
        2 => MockResponse::tool_call(
            "t",
            "speak_to_agent",
            &json!({"agent_id": spawned_ids(body)[0], "message": "now write c.txt too"})
                .to_string(),
        ),
        _ => MockResponse::text("all done"),
    });
    let write = |path: &str| {
        MockResponse::tool_call(
            path,
            "write_file",
            &json!({"path": path, "content": "new\n"}).to_string(),
        )
    };
    agent.push_all([
        write("b.txt"),
        MockResponse::text("b.txt says new."),
        write("c.txt"),
        MockResponse::text("c.txt written."),
    ]);
    let run = sb
        .exec(
            &lead,
            &["--json", "--role", "lead", "--approval", "auto", "go"],
        )
        .await;
    run.assert_ok();
    let texts = child_texts(&agent);
    assert_eq!(texts.len(), 4, "{texts:#?}");
    // The follow-up came into the session that holds the first task.
    assert!(
        texts[2].contains("make b.txt say new") && texts[2].contains("now write c.txt too"),
        "{}",
        texts[2]
    );
    assert_eq!(sb.read("b.txt"), "new\n");
    assert_eq!(sb.read("c.txt"), "new\n");
    let events = run.events();
    let worker = worker_id(&events);
    let merged = events_of(&events, "merge_report")
        .into_iter()
        .filter(|e| e["agent_id"] == worker.as_str() && e["state"] == "merged")
        .count();
    assert_eq!(merged, 2, "{events:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn despawning_an_agent_worker_mid_prompt_ends_its_process() {
    let (lead, agent) = (MockServer::start().await, MockServer::start().await);
    let sb = team(&agent, "", "");
    let pid_file = sb.tmp.path().join("agent.pid");
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = seen.clone();
    let pids = pid_file.clone();
    lead.set_responder(move |body| match tool_count(body) {
        0 => spawn("helper", "take your time"),
        1 => {
            // The agent is in its prompt (its model answers in 30 s) by now.
            std::thread::sleep(Duration::from_secs(2));
            kept.lock().unwrap().push(alive(&pids));
            MockResponse::tool_call(
                "d",
                "despawn_agent",
                &json!({"agent_id": spawned_ids(body)[0]}).to_string(),
            )
        }
        _ => {
            // Ended within moments of the despawn (asked to cancel, then its process ended).
            let gone = (0..30).any(|_| {
                std::thread::sleep(Duration::from_millis(100));
                !alive(&pids)
            });
            kept.lock().unwrap().push(!gone);
            MockResponse::text("stopped it")
        }
    });
    agent.push(MockResponse::text("late").with_delay(Duration::from_secs(30)));
    let started = std::time::Instant::now();
    let run = sb
        .exec(
            &lead,
            &["--json", "--role", "lead", "--approval", "auto", "go"],
        )
        .await;
    run.assert_ok();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    // Alive while it worked; gone once the despawn's result was back.
    assert_eq!(*seen.lock().unwrap(), vec![true, false]);
    let events = run.events();
    let worker = worker_id(&events);
    assert!(
        events_of(&events, "despawned")
            .iter()
            .any(|e| e["agent_id"] == worker.as_str()),
        "{events:#?}"
    );
}

/// A capable supervisor's transcript (the shape of `tests/capable_models.rs`): it splits
/// a task between an agent worker (a second squad over ACP) and a native `implementer`,
/// spawned in one response, waits, and answers. Both changes are checked and merged; the
/// supervisor's every request offers its tools, squad adds nothing to its conversation
/// but the tools' results, and no request is made beyond the script.
#[tokio::test(flavor = "multi_thread")]
async fn a_supervisor_splits_a_task_between_an_agent_worker_and_a_native_worker() {
    let (lead, agent) = (MockServer::start().await, MockServer::start().await);
    let sb = team(&agent, "", "");
    sb.write(
        ".squad/roles/lead.toml",
        "name = \"lead\"\nsystem_prompt = \"You lead.\"\nenabled_agents = [\"helper\", \"implementer\"]\n",
    );
    lead.set_responder(|body| {
        if is_role(body, "implementer") {
            return match tool_count(body) {
                0 => MockResponse::tool_call(
                    "a",
                    "write_file",
                    &json!({"path": "a.txt", "content": "A\n"}).to_string(),
                ),
                _ => MockResponse::tool_call(
                    "r",
                    "return_results",
                    &json!({"result": {"status": "success", "summary": "a.txt holds A.",
                        "artifacts": [{"file_path": "a.txt", "description": "A", "change_type": "created"}],
                        "known_issues": []}})
                    .to_string(),
                ),
            };
        }
        match tool_count(body) {
            0 => MockResponse::tool_calls(vec![
                call("s1", "spawn_agent", json!({"role_name": "helper", "task_prompt": "make b.txt say new"})),
                call("s2", "spawn_agent", json!({"role_name": "implementer", "task_prompt": "write A to a.txt"})),
            ]),
            2 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("a.txt holds A and b.txt says new."),
        }
    });
    agent.push_all([
        MockResponse::tool_call(
            "w1",
            "write_file",
            &json!({"path": "b.txt", "content": "new\n"}).to_string(),
        ),
        MockResponse::text("b.txt says new."),
    ]);
    let run = sb
        .exec(
            &lead,
            &["--role", "lead", "--approval", "auto", "split the work"],
        )
        .await;
    run.assert_ok();
    assert!(
        run.stdout.contains("a.txt holds A and b.txt says new."),
        "{}",
        run.stdout
    );
    assert_eq!(sb.read("a.txt"), "A\n");
    assert_eq!(sb.read("b.txt"), "new\n");
    let requests = lead.requests();
    let (workers, persona): (Vec<_>, Vec<_>) = requests.iter().partition(|r| is_worker(&r.body));
    // Not one request more than the script: three of the supervisor's, two of its worker's,
    // two of the agent's.
    assert_eq!(
        (persona.len(), workers.len(), agent.requests().len()),
        (3, 2, 2)
    );
    let tools = |r: &RecordedRequest| -> Vec<String> {
        r.body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
            .collect()
    };
    let first = tools(persona[0]);
    assert!(first.contains(&"spawn_agent".to_string()), "{first:?}");
    for r in &persona {
        assert_eq!(
            tools(r),
            first,
            "every request offers the supervisor's tools"
        );
    }
    // What the supervisor was told: its task, then only the tools' results (both workers'
    // results among them), nothing squad-made.
    let last = transcript(&persona[2].body);
    let users: Vec<&String> = last
        .iter()
        .filter(|(role, _)| role == "user")
        .map(|(_, t)| t)
        .collect();
    assert_eq!(users.len(), 1, "{last:#?}");
    let told: String = tool_messages(&persona[2].body)
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    assert!(
        told.contains("a.txt holds A.") && told.contains("b.txt says new."),
        "{told}"
    );
}

/// An agent that writes what is not JSON-RPC on its stdout fails its worker with the line
/// it wrote; the supervisor reads why and the session goes on.
#[tokio::test(flavor = "multi_thread")]
async fn an_agent_that_is_not_json_rpc_fails_its_worker_with_the_line() {
    let (lead, agent) = (MockServer::start().await, MockServer::start().await);
    let sb = team(&agent, "", "");
    sb.write(
        ".squad/roles/helper.toml",
        "name = \"helper\"\ndescription = \"chatty\"\n\
         agent = { command = \"sh\", args = [\"-c\", \"echo warming up >&2; sleep 0.3; echo Starting agent...; sleep 20\"] }\n",
    );
    supervise(&lead, "make b.txt say new");
    let started = std::time::Instant::now();
    let run = sb
        .exec(
            &lead,
            &["--json", "--role", "lead", "--approval", "auto", "go"],
        )
        .await;
    run.assert_ok();
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    let events = run.events();
    let worker = worker_id(&events);
    let reason = events_of(&events, "agent_status")
        .into_iter()
        .find(|e| e["agent_id"] == worker.as_str() && e["status"] == "failed")
        .unwrap_or_else(|| panic!("{events:#?}"))["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        reason,
        "agent `sh -c echo warming up >&2; sleep 0.3; echo Starting agent...; sleep 20` failed: it wrote \
         what is not JSON-RPC during initialize: \"Starting agent...\"; its stderr ends: warming up"
    );
}

/// An agent that hangs in its prompt is bounded by its worker's wall-time budget: the
/// worker fails with the budget as the reason, and the agent's process is ended.
#[tokio::test(flavor = "multi_thread")]
async fn a_hanging_agent_is_stopped_by_its_workers_wall_time_budget() {
    let (lead, agent) = (MockServer::start().await, MockServer::start().await);
    let sb = team(&agent, "", "");
    lead.set_responder(|body| match tool_count(body) {
        0 => MockResponse::tool_call(
            "s",
            "spawn_agent",
            &json!({"role_name": "helper", "task_prompt": "make b.txt say new",
                    "budget": {"wall_s": 4}})
            .to_string(),
        ),
        1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
        _ => MockResponse::text("it ran out of time"),
    });
    agent.push(MockResponse::text("late").with_delay(Duration::from_secs(40)));
    let started = std::time::Instant::now();
    let run = sb
        .exec(
            &lead,
            &["--json", "--role", "lead", "--approval", "auto", "go"],
        )
        .await;
    run.assert_ok();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let events = run.events();
    let worker = worker_id(&events);
    let reason = events_of(&events, "agent_status")
        .into_iter()
        .find(|e| e["agent_id"] == worker.as_str() && e["status"] == "failed")
        .unwrap_or_else(|| panic!("{events:#?}"))["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        reason.starts_with("budget:") && reason.contains("wall"),
        "{reason}"
    );
    assert!(!alive(&sb.tmp.path().join("agent.pid")));
}
