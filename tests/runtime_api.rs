//! The engine through its public API, as a front end uses it: `Op`s in, `Event`s out, with
//! the real HTTP client against the mock server.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use ::squad::protocol::{
    AgentStatus, ApprovalAction, ApprovalDecision, ApprovalPolicy, EventKind, Op,
};
use common::agents::spawn;
use common::engine::*;
use common::*;
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn approvals_reach_the_front_end_and_approve_for_session_is_remembered() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.push_all([
        MockResponse::tool_call(
            "w1",
            "write_file",
            &json!({"path": "src/a.txt", "content": "A\n"}).to_string(),
        ),
        MockResponse::tool_call(
            "w2",
            "write_file",
            &json!({"path": "src/b.txt", "content": "B\n"}).to_string(),
        ),
        MockResponse::text("both written"),
    ]);
    let mut handle = start_engine(&mock, &sb, ApprovalPolicy::Ask).await;
    let root = handle.info.root_agent;
    say(&handle, "write two files");
    let mut seen = Vec::new();
    let asked = next_event(&mut handle, &mut seen, |e| {
        matches!(e.kind, EventKind::ApprovalRequested { .. })
    })
    .await;
    let EventKind::ApprovalRequested {
        request_id,
        role,
        tool,
        action,
    } = asked.kind
    else {
        unreachable!()
    };
    assert_eq!((role.as_str(), tool.as_str()), ("copilot", "write_file"));
    let ApprovalAction::FileChange { path, diff } = action else {
        panic!("{action:?}")
    };
    assert_eq!(path, "src/a.txt");
    assert!(diff.contains("+A"), "{diff}");
    // While the user decides, the agent is waiting, and nothing is written yet.
    assert!(seen.iter().any(|e| e.agent_id == root
        && matches!(
            e.kind,
            EventKind::AgentStatus {
                status: AgentStatus::Waiting,
                ..
            }
        )));
    assert!(!sb.ws().join("src/a.txt").exists());

    handle
        .ops
        .send(Op::Approval {
            request_id,
            decision: ApprovalDecision::ApproveForSession,
        })
        .unwrap();
    // The second write, in the same folder, is not asked again.
    next_event(&mut handle, &mut seen, |e| {
        matches!(e.kind, EventKind::Idle)
    })
    .await;
    assert_eq!(sb.read("src/a.txt"), "A\n");
    assert_eq!(sb.read("src/b.txt"), "B\n");
    let asked = seen
        .iter()
        .filter(|e| matches!(e.kind, EventKind::ApprovalRequested { .. }))
        .count();
    assert_eq!(asked, 1);
    assert!(
        seen.iter()
            .all(|e| !matches!(e.kind, EventKind::Error { .. })),
        "{seen:#?}"
    );

    handle.ops.send(Op::Shutdown).unwrap();
    let summary = next_event(&mut handle, &mut seen, |e| {
        matches!(e.kind, EventKind::Summary { .. })
    })
    .await;
    let EventKind::Summary { totals, .. } = summary.kind else {
        unreachable!()
    };
    assert_eq!(totals.tool_calls, 2);
    assert_eq!(totals.model_calls, 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn interrupting_a_waiting_supervisor_holds_results_until_the_user_speaks() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        let system = content_text(&body["messages"][0]["content"]);
        if system.contains("You are a worker (role") {
            let result = json!({"result": {"status": "success", "summary": "HELD-RESULT",
                "artifacts": [], "known_issues": []}});
            return MockResponse::tool_call("r", "return_results", &result.to_string())
                .with_delay(Duration::from_millis(600));
        }
        let t = transcript(body);
        if t.last().is_some_and(|(_, c)| c.contains("what happened?")) {
            return MockResponse::text("the worker found HELD-RESULT");
        }
        match tool_messages(body).len() {
            0 => spawn("agentic_coder", "slow"),
            _ => MockResponse::text("waiting for the worker"),
        }
    });
    let mut handle = start_engine(&mock, &sb, ApprovalPolicy::Ask).await;
    let root = handle.info.root_agent;
    say(&handle, "delegate");
    let mut seen = Vec::new();
    // Spawning asks (ask policy, a front end that can answer): approve it.
    let asked = next_event(&mut handle, &mut seen, |e| {
        matches!(e.kind, EventKind::ApprovalRequested { .. })
    })
    .await;
    let EventKind::ApprovalRequested { request_id, .. } = asked.kind else {
        unreachable!()
    };
    tokio::time::sleep(Duration::from_millis(10)).await;
    handle
        .ops
        .send(Op::Approval {
            request_id,
            decision: ApprovalDecision::Approve,
        })
        .unwrap();
    // (The Waiting of the approval came before the question; this one is the fan-in's.)
    next_event(&mut handle, &mut seen, |e| {
        e.agent_id == root
            && matches!(
                e.kind,
                EventKind::AgentStatus {
                    status: AgentStatus::Waiting,
                    ..
                }
            )
    })
    .await;
    handle.ops.send(Op::Interrupt { agent_id: root }).unwrap();
    next_event(&mut handle, &mut seen, |e| {
        e.agent_id == root
            && matches!(
                e.kind,
                EventKind::AgentStatus {
                    status: AgentStatus::Inactive,
                    ..
                }
            )
    })
    .await;
    // The worker finishes; the tree rests without the supervisor taking a turn of its own.
    next_event(&mut handle, &mut seen, |e| {
        matches!(e.kind, EventKind::Idle)
    })
    .await;
    let supervisor_calls = |m: &MockServer| {
        m.requests()
            .iter()
            .filter(|r| {
                !content_text(&r.body["messages"][0]["content"]).contains("You are a worker (role")
            })
            .count()
    };
    assert_eq!(supervisor_calls(&mock), 2);

    say(&handle, "what happened?");
    next_event(&mut handle, &mut seen, |e| {
        matches!(e.kind, EventKind::Idle)
    })
    .await;
    assert_eq!(supervisor_calls(&mock), 3);
    let last = mock.requests().last().unwrap().body.clone();
    let told = transcript(&last).last().unwrap().1.clone();
    assert!(
        told.contains("HELD-RESULT") && told.ends_with("what happened?"),
        "{told}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_question_waits_for_the_answer_and_despawning_the_asker_withdraws_it() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        let ask = |id: &str, q: &str| {
            MockResponse::tool_call(id, "ask_user", &json!({"question": q}).to_string())
        };
        if common::agents::is_worker(body) {
            return ask("wq", "Which port?");
        }
        match tool_messages(body).len() {
            0 => ask("rq", "Which file?"),
            1 => spawn("agentic_coder", "configure the server"),
            _ => MockResponse::text("done"),
        }
    });
    let mut handle = start_engine(&mock, &sb, ApprovalPolicy::Auto).await;
    let root = handle.info.root_agent;
    say(&handle, "set it up");
    let mut seen = Vec::new();
    let asked = next_event(&mut handle, &mut seen, |e| {
        matches!(e.kind, EventKind::QuestionAsked { .. })
    })
    .await;
    let EventKind::QuestionAsked {
        request_id,
        role,
        question,
        ..
    } = asked.kind
    else {
        unreachable!()
    };
    assert_eq!(asked.agent_id, root);
    assert_eq!(
        (role.as_str(), question.as_str()),
        ("copilot", "Which file?")
    );
    // The asker waits on the user, and no request goes out meanwhile.
    assert!(seen.iter().any(|e| e.agent_id == root
        && matches!(
            e.kind,
            EventKind::AgentStatus {
                status: AgentStatus::Waiting,
                ..
            }
        )));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(mock.requests().len(), 1);
    handle
        .ops
        .send(Op::Answer {
            request_id,
            answer: Some("config/server.toml".into()),
        })
        .unwrap();

    // The worker asks next; despawning it settles its question as withdrawn.
    let asked = next_event(&mut handle, &mut seen, |e| {
        matches!(e.kind, EventKind::QuestionAsked { .. })
    })
    .await;
    let worker = asked.agent_id;
    assert_ne!(worker, root);
    let EventKind::QuestionAsked {
        request_id: worker_question,
        ..
    } = asked.kind
    else {
        unreachable!()
    };
    let results = tool_messages(&mock.requests()[1].body);
    assert_eq!(results[0].0, "rq");
    assert!(
        results[0]
            .1
            .contains("The user answered: config/server.toml"),
        "{results:?}"
    );
    handle.ops.send(Op::Despawn { agent_id: worker }).unwrap();
    let settled = next_event(&mut handle, &mut seen, |e| {
        matches!(e.kind, EventKind::QuestionAnswered { .. })
    })
    .await;
    assert_eq!(settled.agent_id, worker);
    let EventKind::QuestionAnswered {
        answer, declined, ..
    } = settled.kind
    else {
        unreachable!()
    };
    assert_eq!(answer, None);
    assert_eq!(declined, Some(::squad::protocol::Declined::Cancelled));
    // The tree comes to rest (the supervisor is not woken for a worker it lost).
    if !seen.iter().any(|e| matches!(e.kind, EventKind::Idle)) {
        next_event(&mut handle, &mut seen, |e| {
            matches!(e.kind, EventKind::Idle)
        })
        .await;
    }
    assert_eq!(
        statuses_of(&seen, worker).last().copied(),
        Some(AgentStatus::Cancelled)
    );
    // The despawn's own last event may come after the tree is at rest: wait for it, so
    // only what the late answer stirs is looked for below.
    if !seen
        .iter()
        .any(|e| e.agent_id == worker && matches!(e.kind, EventKind::Despawned { .. }))
    {
        next_event(&mut handle, &mut seen, |e| {
            e.agent_id == worker && matches!(e.kind, EventKind::Despawned { .. })
        })
        .await;
    }
    // A late answer to it changes nothing: no request, no error, the worker stays cancelled.
    let requests = mock.requests().len();
    handle
        .ops
        .send(Op::Answer {
            request_id: worker_question,
            answer: Some("8080".into()),
        })
        .unwrap();
    let stirred = wait_event(&mut handle, &mut seen, Duration::from_millis(300), |e| {
        !matches!(
            e.kind,
            EventKind::TurnFinished { .. }
                | EventKind::ItemAdded { .. }
                | EventKind::ToolCallEnd { .. }
                | EventKind::QuestionAnswered { .. }
        )
    })
    .await;
    assert!(stirred.is_none(), "{stirred:?}");
    assert_eq!(mock.requests().len(), requests);
}
