//! The agent's loops without a model server: `agent.rs` (an agent's life), `turn.rs` (a
//! turn), `calls.rs` (a response's calls) and `model_call.rs` (one call), each on a test
//! session whose model is a script at the trait. The HTTP path is `tests/`'s.

use super::agent::start_agent;
use super::calls::{BatchEnd, run_tool_calls};
use super::cx::{AgentCx, Layer, ModelNext, Policies, Policy, Starting};
use super::model_call;
use super::points::{Called, ModelCall, Purpose};
use super::request::RequestSetup;
use super::team::{AgentInput, NewAgent};
use super::testing::{FnPolicy, Parts, Script, TestSession, agent, calls, said};
use super::turn::run_turn;
use crate::config::Config;
use crate::model::{ChatResponse, ModelError, TokenUsage};
use crate::protocol::{AgentId, AgentStatus, Budget, EventKind, HistoryItem, ToolCall, TurnEnd};
use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;

fn session_on(dir: &std::path::Path, script: &Arc<Script>, config: Config) -> TestSession {
    TestSession::new(
        dir,
        Parts {
            model: script.clone(),
            config,
            ..Parts::default()
        },
    )
}

/// A worker of the persona on the built-in `coder` role.
fn coder(ts: &TestSession) -> AgentId {
    ts.add_with(NewAgent {
        role: "implementer".into(),
        ..agent(AgentId::new(), Some(ts.root), Budget::default())
    })
}

fn history(ts: &TestSession, id: AgentId) -> Vec<HistoryItem> {
    ts.session.team.request_view(id).unwrap().history.to_vec()
}

// turn.rs

#[tokio::test]
async fn a_turn_answers_each_call_then_ends_on_the_models_words() {
    let dir = tempfile::tempdir().unwrap();
    let script = Script::new(vec![Ok(calls("no_such_tool", "{}")), Ok(said("all done"))]);
    let ts = session_on(dir.path(), &script, Config::default());
    let cx = ts.cx(Vec::new(), ts.root);
    let outcome = run_turn(&cx).await;
    assert_eq!(outcome.end, TurnEnd::Completed);
    assert_eq!(outcome.final_text, "all done");
    assert_eq!(script.sent(), 2);
    let items = history(&ts, ts.root);
    let answered = items.iter().find_map(|i| match i {
        HistoryItem::ToolResult {
            output, is_error, ..
        } => Some((output.clone(), *is_error)),
        _ => None,
    });
    let (output, is_error) = answered.expect("the call got its result");
    assert!(
        is_error && output.contains("unknown tool `no_such_tool`"),
        "{output}"
    );
    // The second request carries the first call and its result.
    let sent = crate::sync::lock(&script.requests).clone();
    assert!(sent[1].history.len() > sent[0].history.len());
}

#[tokio::test]
async fn a_reply_cut_off_at_its_length_ends_the_turn_as_max_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let cut = ChatResponse {
        text: "half a senten".into(),
        finish_reason: Some("length".into()),
        ..Default::default()
    };
    let script = Script::new(vec![Ok(cut)]);
    let ts = session_on(dir.path(), &script, Config::default());
    let outcome = run_turn(&ts.cx(Vec::new(), ts.root)).await;
    assert_eq!(outcome.end, TurnEnd::MaxTokens);
    assert_eq!(outcome.final_text, "half a senten");
}

#[tokio::test]
async fn a_turn_that_keeps_calling_stops_at_max_iterations_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let replies = (0..10).map(|i| Ok(calls("no_such_tool", &format!(r#"{{"n":{i}}}"#))));
    let script = Script::new(replies.collect());
    let mut config = Config::default();
    config.limits.max_iterations = 3;
    let mut ts = session_on(dir.path(), &script, config);
    let worker = coder(&ts);
    let outcome = run_turn(&ts.cx(Vec::new(), worker)).await;
    assert_eq!(outcome.end, TurnEnd::MaxIterations);
    assert_eq!(script.sent(), 3);
    assert!(
        ts.kinds().iter().any(
            |k| matches!(k, EventKind::Error { message } if message.contains("max_iterations"))
        )
    );
}

/// A toy policy, as docs/adding-a-policy.md adds one: it gives a layer to the persona only,
/// and that layer ends every turn before its first model call.
struct PersonaOnly;

struct NotNow;

#[async_trait]
impl Layer for NotNow {
    async fn model_call(
        &self,
        _cx: &AgentCx,
        _call: &mut ModelCall,
        _next: ModelNext<'_>,
    ) -> Called {
        Called::Stopped("not now (a toy policy)".into())
    }
}

impl Policy for PersonaOnly {
    fn layer_for(&self, agent: &Starting) -> Option<Box<dyn Layer>> {
        (!agent.is_worker()).then(|| Box::new(NotNow) as Box<dyn Layer>)
    }
}

#[tokio::test]
async fn a_toy_policy_added_to_the_order_runs_for_the_one_agent_it_gives_a_layer() {
    let dir = tempfile::tempdir().unwrap();
    let script = Script::new(Vec::new());
    let ts = session_on(dir.path(), &script, Config::default());
    let worker = coder(&ts);
    let policies = Arc::new(Policies::new(vec![Box::new(PersonaOnly)]));
    let persona = run_turn(&ts.cx_with(&policies, ts.root)).await;
    assert_eq!(persona.end, TurnEnd::Error);
    assert_eq!(persona.error.as_deref(), Some("not now (a toy policy)"));
    assert_eq!(script.sent(), 0, "the persona's call was never made");
    let its = run_turn(&ts.cx_with(&policies, worker)).await;
    assert_eq!(its.end, TurnEnd::Completed, "the worker has no such layer");
    assert_eq!(script.sent(), 1);
}

// calls.rs

#[tokio::test]
async fn every_call_of_a_response_gets_one_result_in_order_whatever_goes_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let script = Script::new(Vec::new());
    let ts = session_on(dir.path(), &script, Config::default());
    let worker = ts.add_with(NewAgent {
        tools: vec!["get_agents".into()],
        ..agent(AgentId::new(), Some(ts.root), Budget::default())
    });
    let cx = ts.cx(Vec::new(), worker);
    let call = |id: &str, name: &str, arguments: &str| ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    };
    let batch = [
        call("a", "no_such_tool", "{}"),
        call("b", "get_agents", "{not json"),
        call("c", "get_agents", "[1]"),
        call("d", "get_agents", ""),
    ];
    let out = run_tool_calls(&cx, &batch).await;
    assert!(matches!(out.end, BatchEnd::Continue));
    let results: Vec<(String, String, bool)> = history(&ts, worker)
        .into_iter()
        .filter_map(|i| match i {
            HistoryItem::ToolResult {
                call_id,
                output,
                is_error,
                ..
            } => Some((call_id, output, is_error)),
            _ => None,
        })
        .collect();
    let ids: Vec<&str> = results.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c", "d"]);
    assert!(results[0].1.contains("unknown tool"), "{}", results[0].1);
    assert!(results[1].1.contains("not valid JSON") && results[1].2);
    assert!(results[2].1.contains("must be a JSON object") && results[2].2);
    assert!(
        !results[3].2,
        "empty arguments are an empty object: {}",
        results[3].1
    );
}

#[tokio::test]
async fn calls_of_a_stopped_turn_are_answered_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let script = Script::new(Vec::new());
    let ts = session_on(dir.path(), &script, Config::default());
    let cx = ts.cx(Vec::new(), ts.root);
    cx.cancel().cancel();
    let batch = [ToolCall {
        id: "x".into(),
        name: "get_agents".into(),
        arguments: "{}".into(),
    }];
    run_tool_calls(&cx, &batch).await;
    let answered = history(&ts, ts.root).into_iter().any(|i| {
        matches!(i, HistoryItem::ToolResult { output, is_error: true, .. }
            if output.contains("not run: the turn was stopped"))
    });
    assert!(answered);
}

// model_call.rs

/// `setup` sent by `cx`'s stack.
async fn call_model(cx: &AgentCx, setup: RequestSetup) -> Called {
    let mut call = ModelCall::new(setup, Purpose::Turn);
    cx.model_call(&mut call, &model_call::Core).await
}

#[tokio::test]
async fn a_model_calls_usage_is_counted_on_its_agent_and_told() {
    let dir = tempfile::tempdir().unwrap();
    let reply = ChatResponse {
        usage: Some(TokenUsage {
            prompt_tokens: 120,
            completion_tokens: 30,
            cached_tokens: 100,
        }),
        ..said("ok")
    };
    let script = Script::new(vec![Ok(reply), Err(ModelError::BadResponse("junk".into()))]);
    let mut ts = session_on(dir.path(), &script, Config::default());
    let cx = ts.cx(Vec::new(), ts.root);
    let setup = ts.session.request_for(ts.root).unwrap();
    assert!(matches!(call_model(&cx, setup).await, Called::Answer(r) if r.text == "ok"));
    let (_, spent) = ts.session.team.budget_and_spend(ts.root).unwrap();
    assert_eq!(spent.tokens, 150);
    assert!(ts.kinds().iter().any(|k| matches!(
        k,
        EventKind::Usage {
            prompt_tokens: 120,
            cached_tokens: 100,
            ..
        }
    )));
    // A failure is said in words the user reads.
    let setup = ts.session.request_for(ts.root).unwrap();
    assert!(matches!(call_model(&cx, setup).await, Called::Failed(why) if why.contains("junk")));
    // A call of a stopped turn is no failure.
    cx.cancel().cancel();
    let setup = ts.session.request_for(ts.root).unwrap();
    assert!(matches!(call_model(&cx, setup).await, Called::Interrupted));
}

// agent.rs

#[tokio::test]
async fn an_agent_takes_a_message_runs_its_turn_and_answers_whoever_asked() {
    let dir = tempfile::tempdir().unwrap();
    let script = Script::new(vec![Ok(said("hello back"))]);
    let ts = session_on(dir.path(), &script, Config::default());
    let policies = Arc::new(Policies::new(Vec::new()));
    let worker = start_agent(
        &ts.session,
        &policies,
        NewAgent {
            role: "implementer".into(),
            status: AgentStatus::Inactive,
            ..agent(AgentId::new(), Some(ts.root), Budget::default())
        },
    );
    let (tx, rx) = tokio::sync::oneshot::channel();
    let text = "say hello".to_string();
    assert!(ts.session.team.deliver(
        worker,
        AgentInput::Message {
            text,
            reply: Some(tx)
        }
    ));
    let answer = tokio::time::timeout(Duration::from_secs(10), rx)
        .await
        .expect("answered in time")
        .expect("the agent kept its promise");
    assert_eq!(answer, Ok("hello back".to_string()));
    let told = history(&ts, worker);
    assert!(
        told.iter()
            .any(|i| matches!(i, HistoryItem::User { text } if text == "say hello"))
    );
    // A cancelled agent ends its task.
    ts.session.team.cancel_subtree(worker, "test");
    ts.session.agent_tasks.close();
    tokio::time::timeout(Duration::from_secs(10), ts.session.agent_tasks.wait())
        .await
        .expect("the agent's task ended");
}

/// A policy made from a closure works like any other.
#[test]
fn a_closure_is_a_policy() {
    let p = FnPolicy(|a: &Starting| -> Option<Box<dyn Layer>> {
        a.is_worker().then(|| Box::new(NotNow) as Box<dyn Layer>)
    });
    let persona = Starting {
        parent: None,
        parent_is_root: false,
    };
    assert!(p.layer_for(&persona).is_none());
}
