//! The order the layers are asked in around one model call and one tool call, pinned on
//! the loops themselves (a test session, a model script at the trait): who is asked
//! first, who is not asked once one decided, what a layer that changes a call does to the
//! layers after it, and where the approval comes. What a layer does after a call runs
//! once the layers after it are done: innermost first (decided when the layers became a
//! stack; the walk before asked every layer's `after_tool` in the policies' order).

use super::calls::run_tool_calls;
use super::cx::{AgentCx, Layer, ModelNext, Policy, ToolNext};
use super::points::{Called, ModelCall, ToolUse};
use super::policies::ask::layer::AskPolicy;
use super::team::NewAgent;
use super::testing::{Gate, ToolGate};
use super::testing::{Parts, Script, TestSession, agent, every};
use super::tool_call::{ToolOut, ToolReq};
use super::turn::run_turn;
use crate::protocol::{AgentId, ApprovalPolicy, Budget, HistoryItem, ToolCall, TurnEnd};
use async_trait::async_trait;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

type Log = Arc<Mutex<Vec<String>>>;

/// A layer that writes down each point it is asked at, and answers as told.
struct Toy {
    name: &'static str,
    log: Log,
    /// Its answer before a model call.
    gate: Gate,
    /// Its answer before a tool call.
    tool: fn(&ToolUse<'_>) -> ToolGate,
}

impl Toy {
    fn note(&self, what: String) {
        crate::sync::lock(&self.log).push(format!("{} {what}", self.name));
    }
}

#[async_trait]
impl Layer for Toy {
    async fn model_call(&self, cx: &AgentCx, call: &mut ModelCall, next: ModelNext<'_>) -> Called {
        self.note("before model".into());
        if let Gate::Stop(why) = &self.gate {
            return Called::Stopped(why.clone());
        }
        let called = next.run(cx, call).await;
        self.note("after model".into());
        called
    }

    async fn tool_call(&self, cx: &AgentCx, req: &mut ToolReq<'_>, next: ToolNext<'_>) -> ToolOut {
        self.note(format!("before {} {}", req.call.name, req.args));
        match (self.tool)(&req.view()) {
            ToolGate::Block(why) => return ToolOut::refused(why),
            ToolGate::Amend(args, _) => {
                let spec = cx.session().tools.spec(&req.call.name);
                if let Err(why) = req.amend(spec.as_ref().map(|s| &s.parameters), args) {
                    return ToolOut::refused(why);
                }
            }
            ToolGate::Go | ToolGate::Approval(_) => {}
        }
        let out = next.run(cx, req).await;
        if out.did_run() {
            self.note(format!("after {} error={}", req.call.name, out.is_error));
        }
        out
    }
}

fn go(_: &ToolUse<'_>) -> ToolGate {
    ToolGate::Go
}

fn toy(name: &'static str, log: &Log, tool: fn(&ToolUse<'_>) -> ToolGate) -> Box<dyn Policy> {
    let log = log.clone();
    every(move || Toy {
        name,
        log: log.clone(),
        gate: Gate::Go,
        tool,
    })
}

fn log(l: &Log) -> Vec<String> {
    crate::sync::lock(l).clone()
}

fn session(dir: &std::path::Path, script: &Arc<Script>) -> TestSession {
    TestSession::new(
        dir,
        Parts {
            model: script.clone(),
            ..Parts::default()
        },
    )
}

/// A worker of the persona that may call `tools`, under `policy`.
fn worker(ts: &TestSession, tools: &[&str], policy: ApprovalPolicy) -> AgentId {
    ts.add_with(NewAgent {
        role: "implementer".into(),
        tools: tools.iter().map(|t| t.to_string()).collect(),
        policy,
        ..agent(AgentId::new(), Some(ts.root), Budget::default())
    })
}

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.to_string(),
    }
}

/// The result the model reads for call `id`.
fn result_of(ts: &TestSession, agent: AgentId, id: &str) -> (String, bool) {
    let history = ts.session.team.request_view(agent).unwrap().history;
    history
        .iter()
        .find_map(|i| match i {
            HistoryItem::ToolResult {
                call_id,
                output,
                is_error,
                ..
            } if call_id == id => Some((output.clone(), *is_error)),
            _ => None,
        })
        .expect("the call has its result")
}

#[tokio::test]
async fn around_a_model_call_the_layers_are_asked_in_the_order_of_the_policies() {
    let dir = tempfile::tempdir().unwrap();
    let script = Script::new(Vec::new());
    let ts = session(dir.path(), &script);
    let l = Log::default();
    let cx = ts.cx(vec![toy("a", &l, go), toy("b", &l, go)], ts.root);
    assert_eq!(run_turn(&cx).await.end, TurnEnd::Completed);
    assert_eq!(
        log(&l),
        [
            "a before model",
            "b before model",
            "b after model",
            "a after model"
        ]
    );
    assert_eq!(script.sent(), 1);
}

#[tokio::test]
async fn a_layer_that_stops_a_model_call_ends_the_turn_and_the_layers_after_it_are_not_asked() {
    let dir = tempfile::tempdir().unwrap();
    let script = Script::new(Vec::new());
    let ts = session(dir.path(), &script);
    let l = Log::default();
    let stopper = {
        let l = l.clone();
        every(move || Toy {
            name: "a",
            log: l.clone(),
            gate: Gate::Stop("spent".into()),
            tool: go,
        })
    };
    let cx = ts.cx(vec![stopper, toy("b", &l, go)], ts.root);
    let outcome = run_turn(&cx).await;
    assert_eq!(outcome.end, TurnEnd::Error);
    assert_eq!(outcome.error.as_deref(), Some("spent"));
    assert_eq!(log(&l), ["a before model"]);
    assert_eq!(script.sent(), 0, "the model was never called");
}

/// Every layer is asked before the call in the policies' order; the parts after it run
/// once it ran, innermost first (a layer wraps the ones after it).
#[tokio::test]
async fn around_a_tool_call_the_layers_are_asked_in_order_and_hear_it_ran() {
    let dir = tempfile::tempdir().unwrap();
    let ts = session(dir.path(), &Script::new(Vec::new()));
    let me = worker(&ts, &["get_agents"], ApprovalPolicy::Auto);
    let l = Log::default();
    let cx = ts.cx(vec![toy("a", &l, go), toy("b", &l, go)], me);
    run_tool_calls(&cx, &[call("c1", "get_agents", json!({}))]).await;
    assert_eq!(
        log(&l),
        [
            "a before get_agents {}",
            "b before get_agents {}",
            "b after get_agents error=false",
            "a after get_agents error=false",
        ]
    );
    assert!(!result_of(&ts, me, "c1").1);
}

fn block(_: &ToolUse<'_>) -> ToolGate {
    ToolGate::Block("not this one".into())
}

#[tokio::test]
async fn a_layer_that_blocks_a_call_is_the_last_asked_and_nobody_hears_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let ts = session(dir.path(), &Script::new(Vec::new()));
    let me = worker(&ts, &["get_agents"], ApprovalPolicy::Auto);
    let l = Log::default();
    let cx = ts.cx(
        vec![toy("a", &l, go), toy("b", &l, block), toy("c", &l, go)],
        me,
    );
    run_tool_calls(&cx, &[call("c1", "get_agents", json!({}))]).await;
    assert_eq!(
        log(&l),
        ["a before get_agents {}", "b before get_agents {}"]
    );
    assert_eq!(result_of(&ts, me, "c1"), ("not this one".to_string(), true));
}

fn amend(tool: &ToolUse<'_>) -> ToolGate {
    match tool.args.get("path").and_then(Value::as_str) {
        Some("asked.txt") => {
            ToolGate::Amend(json!({"path": "changed.txt", "content": "x\n"}), None)
        }
        Some("bad.txt") => ToolGate::Amend(json!({"path": "bad.txt"}), None),
        _ => ToolGate::Go,
    }
}

/// A layer that changes a call's arguments (a user's `pre_tool_use` hook answering
/// `updatedInput`): the layers after it see the changed call, which is what runs; a change
/// the tool refuses is the model's error, and nothing runs.
#[tokio::test]
async fn a_changed_call_is_what_the_later_layers_see_and_what_runs() {
    let dir = tempfile::tempdir().unwrap();
    let ts = session(dir.path(), &Script::new(Vec::new()));
    let me = worker(&ts, &["write_file"], ApprovalPolicy::Auto);
    let l = Log::default();
    let cx = ts.cx(vec![toy("a", &l, amend), toy("b", &l, go)], me);
    let write = json!({"path": "asked.txt", "content": "x\n"});
    run_tool_calls(&cx, &[call("c1", "write_file", write)]).await;
    let changed = json!({"path": "changed.txt", "content": "x\n"});
    assert_eq!(
        log(&l),
        [
            format!(
                "a before write_file {}",
                json!({"path": "asked.txt", "content": "x\n"})
            ),
            format!("b before write_file {changed}"),
            "b after write_file error=false".to_string(),
            "a after write_file error=false".to_string(),
        ]
    );
    assert!(dir.path().join("changed.txt").exists());
    assert!(!dir.path().join("asked.txt").exists());
    assert!(!result_of(&ts, me, "c1").1);

    crate::sync::lock(&l).clear();
    let bad = json!({"path": "bad.txt", "content": "y\n"});
    run_tool_calls(&cx, &[call("c2", "write_file", bad)]).await;
    let (output, is_error) = result_of(&ts, me, "c2");
    assert!(is_error && output.contains("updatedInput"), "{output}");
    assert!(!dir.path().join("bad.txt").exists());
    assert_eq!(
        log(&l).len(),
        1,
        "only the layer that changed it: {:?}",
        log(&l)
    );
}

/// The user is asked only about a call every layer before the approval ask let through: a
/// blocked call is never put to the approval, and a refused one is heard by no layer.
#[tokio::test]
async fn the_approval_comes_after_the_layers() {
    let dir = tempfile::tempdir().unwrap();
    let ts = session(dir.path(), &Script::new(Vec::new()));
    let me = worker(&ts, &["write_file"], ApprovalPolicy::ReadOnly);
    let l = Log::default();
    let blocking = ts.cx(vec![toy("a", &l, block), Box::new(AskPolicy)], me);
    let write = json!({"path": "f.txt", "content": "x\n"});
    run_tool_calls(&blocking, &[call("c1", "write_file", write.clone())]).await;
    assert_eq!(result_of(&ts, me, "c1"), ("not this one".to_string(), true));
    let going = ts.cx(vec![toy("b", &l, go), Box::new(AskPolicy)], me);
    run_tool_calls(&going, &[call("c2", "write_file", write)]).await;
    let (output, is_error) = result_of(&ts, me, "c2");
    assert!(is_error && output.contains("read-only"), "{output}");
    assert_eq!(
        log(&l),
        [
            format!(
                "a before write_file {}",
                json!({"path": "f.txt", "content": "x\n"})
            ),
            format!(
                "b before write_file {}",
                json!({"path": "f.txt", "content": "x\n"})
            ),
        ]
    );
    assert!(!dir.path().join("f.txt").exists());
}

/// A policy that gives no layer and writes down each op it hears; `refuses` says no to it.
struct Hears {
    name: &'static str,
    log: Log,
    refuses: bool,
}

#[derive(Debug, thiserror::Error)]
#[error("{0} refused it")]
struct Said(&'static str);

impl Policy for Hears {
    fn layer_for(&self, _agent: &super::cx::Starting) -> Option<Box<dyn Layer>> {
        None
    }

    fn on_op(
        &self,
        _session: &Arc<super::session::Session>,
        op: &crate::protocol::Op,
    ) -> Result<(), super::cx::OpRefused> {
        crate::sync::lock(&self.log).push(format!("{} {op:?}", self.name));
        match self.refuses {
            true => Err(Box::new(Said(self.name))),
            false => Ok(()),
        }
    }
}

#[test]
fn an_op_is_heard_by_every_policy_in_order_and_a_policy_is_found_by_its_type() {
    let dir = tempfile::tempdir().unwrap();
    let ts = TestSession::new(dir.path(), Parts::default());
    let l: Log = Default::default();
    let hears = |name, refuses| -> Box<dyn Policy> {
        Box::new(Hears {
            name,
            log: l.clone(),
            refuses,
        })
    };
    let policies = Arc::new(super::cx::Policies::new(vec![
        hears("a", false),
        hears("b", true),
        hears("c", false),
    ]));
    let refused = policies.on_op(&ts.session, &crate::protocol::Op::Pause);
    let said: Vec<String> = refused.iter().map(|e| e.to_string()).collect();
    assert_eq!(said, ["b refused it"]);
    assert_eq!(*crate::sync::lock(&l), ["a Pause", "b Pause", "c Pause"]);
    assert_eq!(policies.get::<Hears>().map(|h| h.name), Some("a"));
    assert!(policies.get::<AskPolicy>().is_none());
}
