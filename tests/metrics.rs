//! Seed 001's metrics end to end, and the clock every event carries (`ts`): the real
//! `squad exec` binary against the mock model server, and a session log written by hand
//! with known times.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use ::squad::protocol::{AgentId, AgentStatus, ApprovalPolicy, Event, EventKind, HistoryItem};
use common::agents::*;
use common::*;
use serde_json::{Value, json};

/// A git workspace whose workers are released as soon as their outcome is delivered.
fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(sb.ws())
        .status()
        .expect("git runs");
    assert!(git.success());
    sb.write("README.md", "# project\n");
    sb.workspace_config("[team]\nrelease_after_s = 0\n");
    sb
}

/// `return_results` claiming notes.md was created.
fn claim(id: &str) -> MockResponse {
    MockResponse::tool_call(
        id,
        "return_results",
        &json!({"result": {"status": "success", "summary": "done", "known_issues": [],
                "artifacts": [{"file_path": "notes.md", "description": "the notes",
                               "change_type": "created"}]}})
        .to_string(),
    )
}

/// The supervisor spawns one worker, waits for it, asks `get_agents`, answers. The worker
/// claims notes.md before writing it (one error: score 80, a correction), then writes it
/// and claims it again (score 100).
fn script(body: &Value) -> MockResponse {
    if is_worker(body) {
        return match tool_count(body) {
            0 => claim("r1"),
            1 => MockResponse::tool_call(
                "w1",
                "write_file",
                &json!({"path": "notes.md", "content": "the notes\n"}).to_string(),
            ),
            _ => claim("r2"),
        };
    }
    match tool_count(body) {
        0 => spawn("agentic_coder", "write the notes"),
        1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
        2 => MockResponse::tool_call("g", "get_agents", "{}"),
        _ => MockResponse::text("done"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_shows_seed_001s_figures_in_its_table_and_summary() {
    let mock = MockServer::start().await;
    let sb = sandbox();
    mock.set_responder(script);
    let run = sb.exec(&mock, &["--approval", "auto", "write notes"]).await;
    run.assert_ok();
    let err = &run.stderr;
    let header = err
        .lines()
        .find(|l| l.starts_with("agent "))
        .unwrap_or_else(|| panic!("no table in:\n{err}"));
    for column in [
        "ok/failed",
        "fixes",
        "first-pass",
        "success",
        "score",
        "life s",
    ] {
        assert!(header.contains(column), "{header}");
    }
    let worker = err
        .lines()
        .skip_while(|l| !l.starts_with("agent "))
        .find(|l| l.contains("agentic_coder"))
        .unwrap_or_else(|| panic!("no worker row in:\n{err}"));
    // ok/failed, fixes, first-pass, success, score; then the lifespan in seconds.
    assert!(
        worker.contains("1/0      1         0%    100%    90"),
        "{worker}"
    );
    assert!(
        err.contains(
            "tasks: 1 started, 1 completed, 0 failed · success rate 100% · first-pass 0% · avg task "
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "checks: 2 results checked, 1 sent back to be fixed (50%) · 1 of 1 checked \
             tasks needed a fix (100%) · 1.0 fixes per task · avg score 90/100"
        ),
        "{err}"
    );
    for jargon in ["QC", "catch rate", "retry rate", "seed 0"] {
        assert!(!err.contains(jargon), "{jargon}: {err}");
    }
    assert!(
        err.contains("workers: avg lifespan ") && err.contains("(spawn to release, 1 ended)"),
        "{err}"
    );

    // The same figures in the `summary` event, from a workspace as it was.
    std::fs::remove_file(sb.ws().join("notes.md")).unwrap();
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "write notes"])
        .await;
    run.assert_ok();
    let events = run.events();
    let summary = of_type(&events, "summary")[0];
    let rates = &summary["totals"]["rates"];
    assert_eq!(
        (
            &rates["success_rate"],
            &rates["first_pass_rate"],
            &rates["retry_rate"],
            &rates["seed_retry_rate"],
            &rates["qc_catch_rate"],
            &rates["avg_verification_score"],
        ),
        (
            &json!(1.0),
            &json!(0.0),
            &json!(0.5),
            &json!(1.0),
            &json!(1.0),
            &json!(90.0)
        ),
        "{summary}"
    );
    assert!(rates["avg_task_ms"].is_u64(), "{summary}");
    assert!(rates["avg_lifespan_ms"].is_u64(), "{summary}");
    let worker = summary["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["role"] == "agentic_coder")
        .unwrap();
    assert_eq!(worker["rates"]["success_rate"], 1.0, "{worker}");
    assert_eq!(worker["tasks"]["lifespans"], 1, "{worker}");
    // Every event carries its clock, and the clock never goes back from one `seq` to the
    // next (the front end may receive them a little out of order).
    let mut stamps: Vec<(u64, u64)> = events
        .iter()
        .map(|e| (e["seq"].as_u64().unwrap(), e["ts"].as_u64().unwrap()))
        .collect();
    stamps.sort_unstable();
    let ts: Vec<u64> = stamps.into_iter().map(|(_, ts)| ts).collect();
    assert!(ts.iter().all(|t| *t > 1_700_000_000_000), "{ts:?}");
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "{ts:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn get_agents_gives_the_supervisor_the_figures_by_role() {
    let mock = MockServer::start().await;
    let sb = sandbox();
    mock.set_responder(script);
    sb.exec(&mock, &["--approval", "auto", "write notes"])
        .await
        .assert_ok();
    let reqs = mock.requests();
    let last = &reqs.iter().rfind(|r| !is_worker(&r.body)).unwrap().body;
    let results = tool_messages(last);
    let (_, listing) = results.iter().find(|(id, _)| id == "g").unwrap();
    let listing: Value = serde_json::from_str(listing).unwrap();
    let m = &listing["metrics"];
    let coder = &m["by_role"]["agentic_coder"];
    assert_eq!(
        (
            &coder["tasks"],
            &coder["completed"],
            &coder["corrections"],
            &coder["success_rate"],
            &coder["retry_rate"],
            &coder["seed_retry_rate"],
            &coder["avg_verification_score"],
        ),
        (
            &json!(1),
            &json!(1),
            &json!(1),
            &json!(1.0),
            &json!(0.5),
            &json!(1.0),
            &json!(90.0)
        ),
        "{listing}"
    );
    assert!(coder["avg_task_ms"].is_u64(), "{listing}");
    assert_eq!(m["workers"]["tasks"], 1, "{listing}");
}

/// 2026-01-01T00:00:00Z in milliseconds since the epoch.
const T0: u64 = 1_767_225_600_000;

/// A log of one earlier run, written by hand: a worker spawned at T0 + 1 s, given its task
/// at T0 + 2 s, done at T0 + 6 s, released at T0 + 11 s.
fn earlier_run(sb: &Sandbox) {
    let (root, worker) = (AgentId::new(), AgentId::new());
    let spawned = |parent_id: Option<AgentId>, role: &str| EventKind::AgentSpawned {
        parent_id,
        role: role.into(),
        model: "gpt-4.1".into(),
        task: "write the notes".into(),
        depth: u32::from(parent_id.is_some()),
    };
    let status = |status| EventKind::AgentStatus {
        parent_id: Some(root),
        status,
        reason: None,
    };
    let answer = |text: &str| EventKind::ItemAdded {
        item: HistoryItem::Assistant {
            text: text.into(),
            tool_calls: vec![],
            reasoning: Vec::new(),
        },
    };
    let events = [
        (
            0,
            root,
            EventKind::SessionStarted {
                session_id: "20260101-000000-abcdef".into(),
                workspace: sb.ws().to_path_buf(),
                model: "gpt-4.1".into(),
                role: "copilot".into(),
                approval: ApprovalPolicy::Ask,
                resumed: false,
                roles: vec![],
            },
        ),
        (0, root, spawned(None, "copilot")),
        (
            0,
            root,
            EventKind::ItemAdded {
                item: HistoryItem::user("write the notes"),
            },
        ),
        (1_000, worker, spawned(Some(root), "agentic_coder")),
        (
            2_000,
            worker,
            EventKind::ItemAdded {
                item: HistoryItem::user("write the notes"),
            },
        ),
        (2_000, worker, status(AgentStatus::Running)),
        (6_000, worker, answer("notes written")),
        (6_000, worker, status(AgentStatus::Completed)),
        (
            6_000,
            worker,
            EventKind::ResultDelivered { parent_id: root },
        ),
        (7_000, root, answer("the worker wrote the notes")),
        (11_000, worker, EventKind::Released),
    ];
    let lines: Vec<String> = events
        .into_iter()
        .enumerate()
        .map(|(i, (at, agent_id, kind))| {
            serde_json::to_string(&Event {
                seq: i as u64 + 1,
                ts: T0 + at,
                agent_id,
                kind,
            })
            .unwrap()
        })
        .collect();
    let dir = sb.data_dir().join("sessions");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("20260101-000000-abcdef.jsonl"),
        lines.join("\n") + "\n",
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resumed_session_times_its_tasks_and_lifespans_by_the_logs_clock() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    earlier_run(&sb);
    mock.push(MockResponse::text("you are welcome"));
    let run = sb
        .exec(&mock, &["--json", "--resume", "last", "thanks"])
        .await;
    run.assert_ok();
    let events = run.events();
    let totals = &of_type(&events, "summary")[0]["totals"];
    // 2 s to 6 s, and 1 s to 11 s, whenever the resume ran.
    assert_eq!(
        (
            &totals["tasks"]["timed"],
            &totals["tasks"]["task_ms"],
            &totals["rates"]["avg_task_ms"],
            &totals["rates"]["avg_lifespan_ms"],
            &totals["rates"]["success_rate"],
        ),
        (
            &json!(1),
            &json!(4000),
            &json!(4000),
            &json!(10000),
            &json!(1.0)
        ),
        "{totals}"
    );
    // The resumed run's events are stamped after the log's.
    let first = events[0]["ts"].as_u64().unwrap();
    assert!(first > T0 + 11_000, "{first}");
}
