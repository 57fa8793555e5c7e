//! Budgets against the mock server, with the usage of each answer scripted: a worker over
//! its own budget stops before its next request and its supervisor is told which budget;
//! `spawn_agent`'s `budget` may only tighten; the session's budget pauses the team until
//! the user raises it, and ends `exec` with a non-zero exit.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use ::squad::protocol::{
    AgentStatus, ApprovalPolicy, BudgetMeasure, BudgetScope, Event, EventKind, Op,
};
use common::agents::*;
use common::engine::*;
use common::*;
use serde_json::json;
use std::time::Duration;

fn read_a() -> MockResponse {
    MockResponse::tool_call("r", "read_file", r#"{"path":"a.txt"}"#)
}

fn returns() -> MockResponse {
    MockResponse::tool_call("ret", "return_results", &good_result("read it").to_string())
}

fn failed_with(seen: &[Event], reason: &str) -> bool {
    seen.iter().any(|e| {
        matches!(
            &e.kind,
            EventKind::AgentStatus { status: AgentStatus::Failed, reason: Some(r), .. } if r == reason
        )
    })
}

fn root_turn_finished(root: ::squad::protocol::AgentId) -> impl Fn(&Event) -> bool {
    move |e| e.agent_id == root && matches!(e.kind, EventKind::TurnFinished { .. })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_over_its_token_budget_stops_before_its_next_request_and_its_supervisor_is_told() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    mock.set_responder(|body| {
        if is_worker(body) {
            // Its first answer alone spends 1,100 tokens of its 1,000.
            return match tool_count(body) {
                0 => read_a().with_usage(900, 200),
                _ => returns(),
            };
        }
        match tool_count(body) {
            0 => spawn("code_reviewer", "read a.txt"),
            1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("the worker ran out of budget"),
        }
    });
    let mut h = start_engine_with(&mock, &sb, ApprovalPolicy::Auto, |c| {
        c.limits.max_tokens_per_agent = Some(1_000);
    })
    .await;
    let root = h.info.root_agent;
    let mut seen = Vec::new();
    say(&h, "read it");
    next_event(&mut h, &mut seen, root_turn_finished(root)).await;

    const REASON: &str = "budget: 1,100 of 1,000 tokens spent";
    let reqs = mock.requests();
    assert_eq!(
        reqs.iter().filter(|r| is_worker(&r.body)).count(),
        1,
        "the worker sent no request after its budget was spent"
    );
    assert!(failed_with(&seen, REASON), "{seen:#?}");
    assert!(seen.iter().any(|e| matches!(
        e.kind,
        EventKind::AgentBudget { budget } if budget.tokens == Some(1_000)
    )));
    assert!(seen.iter().any(|e| matches!(
        e.kind,
        EventKind::BudgetReached {
            scope: BudgetScope::Agent,
            measure: BudgetMeasure::Tokens,
            spent,
            limit,
        } if spent == 1_100.0 && limit == 1_000.0
    )));
    // The read it asked for still ran and got its result: only the next call was stopped.
    assert!(seen.iter().any(|e| matches!(
        &e.kind,
        EventKind::ItemAdded { item: ::squad::protocol::HistoryItem::ToolResult { name, is_error: false, .. } }
            if name == "read_file"
    )));
    // The supervisor's next request names the budget and the spend.
    let last = &reqs.last().unwrap().body;
    assert!(!is_worker(last));
    let (_, wait_output) = tool_messages(last).pop().unwrap();
    assert!(wait_output.contains(REASON), "{wait_output}");
    assert!(wait_output.contains("CRITICAL"), "{wait_output}");
    h.ops.send(Op::Shutdown).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tighter_spawn_budget_is_honoured_and_a_looser_one_is_refused() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    mock.set_responder(|body| {
        if is_worker(body) {
            // 3,000 tokens: far under the config's 50,000, over the 2,500 it was given.
            return match tool_count(body) {
                0 => read_a().with_usage(2_000, 1_000),
                _ => returns(),
            };
        }
        match tool_count(body) {
            0 => MockResponse::tool_calls(vec![
                call(
                    "tight",
                    "spawn_agent",
                    json!({"role_name": "code_reviewer", "task_prompt": "read a.txt",
                        "budget": {"tokens": 2_500}}),
                ),
                call(
                    "loose",
                    "spawn_agent",
                    json!({"role_name": "code_reviewer", "task_prompt": "read a.txt too",
                        "budget": {"tokens": 80_000}}),
                ),
            ]),
            2 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("done"),
        }
    });
    let mut h = start_engine_with(&mock, &sb, ApprovalPolicy::Auto, |c| {
        c.limits.max_tokens_per_agent = Some(50_000);
    })
    .await;
    let root = h.info.root_agent;
    let mut seen = Vec::new();
    say(&h, "read it twice");
    next_event(&mut h, &mut seen, root_turn_finished(root)).await;

    let reqs = mock.requests();
    // The looser one was refused with the field and the ceiling named; it never started.
    let spawns = tool_messages(&reqs.iter().find(|r| tool_count(&r.body) == 2).unwrap().body);
    let (_, loose) = spawns.iter().find(|(id, _)| id == "loose").unwrap();
    assert!(
        loose.contains(
            "budget.tokens = 80,000 tokens is looser than its ceiling of 50,000 tokens \
             (limits.max_tokens_per_agent)"
        ),
        "{loose}"
    );
    let workers: Vec<_> = seen
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::AgentSpawned {
                    parent_id: Some(_),
                    ..
                }
            )
        })
        .collect();
    assert_eq!(workers.len(), 1, "only the tighter spawn started a worker");
    // The tighter one got its 2,500 and stopped on it, not on the config's 50,000.
    assert!(seen.iter().any(|e| e.agent_id == workers[0].agent_id
        && matches!(e.kind, EventKind::AgentBudget { budget } if budget.tokens == Some(2_500))));
    assert!(
        failed_with(&seen, "budget: 3,000 of 2,500 tokens spent"),
        "{seen:#?}"
    );
    assert_eq!(reqs.iter().filter(|r| is_worker(&r.body)).count(), 1);
    h.ops.send(Op::Shutdown).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_session_budget_pauses_the_team_until_the_user_raises_it() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    // gpt-4.1 at $2 / $8 per million: 4,000 + 500 tokens cost $0.012, over $0.01.
    mock.set_responder(|body| match tool_count(body) {
        0 => read_a().with_usage(4_000, 500),
        _ => MockResponse::text("all read").with_usage(100, 10),
    });
    let mut h = start_engine_with(&mock, &sb, ApprovalPolicy::Auto, |c| {
        c.limits.max_session_cost_usd = Some(0.01);
    })
    .await;
    let root = h.info.root_agent;
    let mut seen = Vec::new();
    say(&h, "read it");
    let reached = next_event(&mut h, &mut seen, |e| {
        matches!(e.kind, EventKind::BudgetReached { .. })
    })
    .await;
    assert_eq!(reached.agent_id, root);
    let EventKind::BudgetReached {
        scope,
        measure,
        spent,
        limit,
    } = reached.kind
    else {
        unreachable!()
    };
    assert_eq!(
        (scope, measure, limit),
        (BudgetScope::Session, BudgetMeasure::CostUsd, 0.01)
    );
    assert!((spent - 0.012).abs() < 1e-9, "{spent}");
    next_event(&mut h, &mut seen, |e| matches!(e.kind, EventKind::Paused)).await;
    // The persona is held before its tool call; nothing more is asked of the model.
    next_event(&mut h, &mut seen, |e| {
        e.agent_id == root
            && matches!(
                e.kind,
                EventKind::AgentStatus {
                    status: AgentStatus::Paused,
                    ..
                }
            )
    })
    .await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(mock.requests().len(), 1);
    assert!(
        !seen
            .iter()
            .any(|e| matches!(e.kind, EventKind::ToolCallBegin { .. })),
        "no tool call started while the budget holds the team"
    );

    // A limit the session has already spent is refused.
    h.ops
        .send(Op::SetSessionBudget {
            limit_usd: Some(0.005),
        })
        .unwrap();
    let refused = next_event(&mut h, &mut seen, |e| {
        matches!(e.kind, EventKind::Error { .. })
    })
    .await;
    assert!(
        matches!(&refused.kind, EventKind::Error { message } if message.contains("spent $0.0120 already")),
        "{refused:?}"
    );
    // Raised: the team goes on and the turn completes.
    h.ops
        .send(Op::SetSessionBudget {
            limit_usd: Some(0.05),
        })
        .unwrap();
    next_event(&mut h, &mut seen, |e| {
        matches!(
            e.kind,
            EventKind::SessionBudgetSet {
                limit_usd: Some(0.05)
            }
        )
    })
    .await;
    next_event(&mut h, &mut seen, |e| matches!(e.kind, EventKind::Resumed)).await;
    next_event(&mut h, &mut seen, root_turn_finished(root)).await;
    assert_eq!(mock.requests().len(), 2);
    h.ops.send(Op::Shutdown).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_session_budget_ends_exec_with_a_clear_line_and_exit_1_and_a_raised_one_continues() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    sb.workspace_config("[limits]\nmax_session_cost_usd = 0.01\n");
    mock.push_all([
        read_a().with_usage(4_000, 500),
        MockResponse::text("finished after the resume"),
    ]);
    let run = sb.exec(&mock, &["read a.txt"]).await;
    assert_eq!(
        run.code, 1,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    let line = "squad: session budget reached: $0.0120 of $0.01 spent \
                (limits.max_session_cost_usd); the run was stopped";
    assert_eq!(
        run.stderr.lines().filter(|l| *l == line).count(),
        1,
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("first-pass"),
        "the table: {}",
        run.stderr
    );
    assert_eq!(
        mock.requests().len(),
        1,
        "no call after the budget was spent"
    );

    // With a higher limit the stopped run goes on where it stopped (the log kept the
    // pause; exec lifts it).
    sb.workspace_config("[limits]\nmax_session_cost_usd = 1\n");
    let run = sb.exec(&mock, &["--resume", "last", "--continue"]).await;
    run.assert_ok();
    assert!(
        run.stdout.contains("finished after the resume"),
        "{}",
        run.stdout
    );
    assert_eq!(mock.requests().len(), 2);
}

/// Issue 55 part 2: a worker's budget is set aside out of its supervisor's, so two
/// workers of one supervisor cannot both be given what it has left: the nested spawn
/// that would pass its parent's budget is refused, naming both figures.
#[tokio::test(flavor = "multi_thread")]
async fn a_nested_spawn_is_refused_when_its_reservation_would_pass_its_parents_budget() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[limits]\nmax_session_cost_usd = 1\n");
    let reviewer = |task: &str| {
        call(
            task,
            "spawn_agent",
            json!({"role_name": "code_reviewer", "task_prompt": format!("review {task}"),
                "budget": {"cost_usd": 0.06}}),
        )
    };
    mock.set_responder(move |body| {
        if is_role(body, "code_reviewer") {
            return returns();
        }
        if is_role(body, "agentic_coder") {
            return match tool_count(body) {
                // One at a time: the second is asked while the first still holds its $0.06.
                0 => MockResponse::tool_calls(vec![reviewer("one")]),
                1 => MockResponse::tool_calls(vec![reviewer("two")]),
                2 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
                _ => returns(),
            };
        }
        match tool_count(body) {
            0 => MockResponse::tool_call(
                "coder",
                "spawn_agent",
                &json!({"role_name": "agentic_coder", "task_prompt": "have it reviewed",
                    "budget": {"cost_usd": 0.1}})
                .to_string(),
            ),
            1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("done"),
        }
    });
    let run = sb.exec(&mock, &["--json", "review it"]).await;
    run.assert_ok();
    let reqs = mock.requests();
    let coder = reqs
        .iter()
        .find(|r| is_role(&r.body, "agentic_coder") && tool_count(&r.body) == 2)
        .expect("the coder asked again after its second spawn");
    let outputs = tool_messages(&coder.body);
    let (_, first) = &outputs[0];
    assert!(first.contains("agent_id"), "the first fits: {first}");
    let (_, second) = &outputs[1];
    assert!(
        second.contains(
            "budget.cost_usd = $0.06 cannot be set aside for the worker: your budget of \
             $0.10: $0.00 spent, $0.06 set aside for 1 live worker, so $0.04 is left"
        ),
        "{second}"
    );
    let events = run.events();
    let workers = of_type(&events, "agent_spawned")
        .into_iter()
        .filter(|e| e["parent_id"].is_string())
        .count();
    assert_eq!(workers, 2, "the coder and one reviewer");
}

/// Issue 55 part 4: the model a spawn chooses is the one the worker's requests carry, and
/// `max_worker_model` refuses a costlier one, whether the spawn or the role asks for it.
#[tokio::test(flavor = "multi_thread")]
async fn a_workers_requests_carry_its_chosen_model_and_a_costlier_one_is_refused() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config(
        "[models]\nfast = \"mini-model\"\nbase = \"base-model\"\nsmart = \"big-model\"\n\
         [limits]\nmax_worker_model = \"base\"\n",
    );
    let reviewer = |id: &str, model: Option<&str>| {
        let mut args = json!({"role_name": "code_reviewer", "task_prompt": format!("review {id}")});
        if let Some(m) = model {
            args["model"] = json!(m);
        }
        call(id, "spawn_agent", args)
    };
    mock.set_responder(move |body| {
        if is_worker(body) {
            return returns();
        }
        match tool_count(body) {
            0 => MockResponse::tool_calls(vec![
                // code_reviewer's level is smart: refused; asked on fast: runs there.
                reviewer("as-role", None),
                reviewer("on-smart", Some("smart")),
                reviewer("on-fast", Some("fast")),
            ]),
            3 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("done"),
        }
    });
    let run = sb.exec(&mock, &["--json", "review it"]).await;
    run.assert_ok();
    let reqs = mock.requests();
    let workers: Vec<_> = reqs.iter().filter(|r| is_worker(&r.body)).collect();
    assert!(!workers.is_empty());
    for w in &workers {
        assert_eq!(
            w.body["model"], "mini-model",
            "the worker's requests carry fast's model"
        );
    }
    let after = reqs.iter().find(|r| tool_count(&r.body) == 3).unwrap();
    let outputs = tool_messages(&after.body);
    let out = |id: &str| outputs.iter().find(|(i, _)| i == id).unwrap().1.clone();
    assert!(
        out("as-role").contains(
            "role `code_reviewer` runs on `smart`, which (big-model) is a costlier level than \
             limits.max_worker_model = \"base\" allows: spawn it with model \"fast\" or \"base\""
        ),
        "{}",
        out("as-role")
    );
    assert!(out("on-smart").contains("model `smart` (big-model) is a costlier level"));
    assert!(out("on-fast").contains("agent_id"), "{}", out("on-fast"));
    let events = run.events();
    let spawned: Vec<_> = of_type(&events, "agent_spawned")
        .into_iter()
        .filter(|e| e["parent_id"].is_string())
        .collect();
    assert_eq!(spawned.len(), 1);
    assert_eq!(
        spawned[0]["model"], "mini-model",
        "the tree is told the model it runs on"
    );
}
