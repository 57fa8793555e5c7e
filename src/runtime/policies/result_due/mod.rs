//! A worker whose turn ends in words, with no `return_results`, owes its supervisor a
//! result: squad asks it once, in the same task, to return one (a task not done is a `partial`
//! or `failure` result). The evidence
//! is the protocol missed, not a guess: a worker's task ends with `return_results`, and
//! only that call has its result checked against the files and the rules. Without it the
//! worker's change was merged unchecked and its supervisor read a last message (a 1.5B
//! worker wrote its result as a fenced JSON object, so the rule its file broke never ran).
//!
//! Quiet when the worker returned (a capable worker always does, `tests/capable_models.rs`),
//! when it answers a follow-up after it returned (a reply is words), for squad's own
//! reviewers (they answer in words and have no `return_results`), when its own workers
//! still owe it results (their results wake it), when the turn did not end by itself, and
//! for a model with `assist = "off"`. Asked once per task: a second answer in words goes up
//! as its last message, as before.

use super::answer::AssistFor;
use crate::protocol::TurnEnd;
use crate::runtime::agent_tools::return_results::RETURN_RESULTS;
use crate::runtime::cx::{AgentCx, Layer, Policy, Starting};
use crate::runtime::points::{AfterTurn, Moment};
use crate::runtime::team::FanIn;
use async_trait::async_trait;
use std::sync::atomic::{AtomicBool, Ordering};

/// What the worker is told when its turn ended without a result.
pub const RESULT_DUE: &str = "[squad] Your turn ended without return_results, so your \
                              supervisor has no result from you. Call return_results now: \
                              status (success, partial or failure), summary, artifacts, \
                              known_issues.";

pub struct ResultDuePolicy(pub AssistFor);

impl Policy for ResultDuePolicy {
    fn layer_for(&self, agent: &Starting) -> Option<Box<dyn Layer>> {
        agent.is_worker().then(|| {
            Box::new(ResultDueLayer {
                assist: self.0.clone(),
                asked: AtomicBool::new(false),
            }) as Box<dyn Layer>
        })
    }
}

struct ResultDueLayer {
    assist: AssistFor,
    /// Asked for its result in this task.
    asked: AtomicBool,
}

#[async_trait]
impl Layer for ResultDueLayer {
    /// The trigger: a worker's turn ended in words (`Completed`) with no result ever
    /// returned, offered `return_results`, owing nothing to workers of its own.
    async fn turn_end(&self, cx: &AgentCx, end: TurnEnd, _final_text: &str) -> AfterTurn {
        let (team, id) = (cx.team(), cx.id());
        if end != TurnEnd::Completed || !(self.assist)(team.model(id).as_deref()) {
            return AfterTurn::Rest;
        }
        // Squad's own reviewers answer in words: they have no result to return.
        let reports = team
            .tools(id)
            .is_some_and(|t| t.iter().any(|n| n == RETURN_RESULTS));
        // A worker that returned once answers its follow-ups in words.
        let returned = team.result(id).is_some();
        if !reports || returned || !matches!(team.owed_results(id), FanIn::Nothing) {
            return AfterTurn::Rest;
        }
        if self.asked.swap(true, Ordering::Relaxed) {
            return AfterTurn::Rest;
        }
        AfterTurn::Continue(RESULT_DUE.to_string())
    }

    /// The task's turns are over: the next message (a follow-up) is a new ask.
    async fn hear(&self, _cx: &AgentCx, moment: Moment) {
        if let Moment::Settled(_) = moment {
            self.asked.store(false, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Budget;
    use crate::runtime::testing::{Parts, TestSession, agent};
    use std::sync::Arc;

    /// A worker of `parent` offered `return_results`, as every spawned worker is.
    fn worker(ts: &TestSession, parent: crate::protocol::AgentId) -> crate::protocol::AgentId {
        let mut new = agent(
            crate::protocol::AgentId::new(),
            Some(parent),
            Budget::default(),
        );
        new.tools = vec!["write_file".into(), RETURN_RESULTS.into()];
        ts.add_with(new)
    }

    fn policy(assist: bool) -> Box<dyn Policy> {
        Box::new(ResultDuePolicy(Arc::new(move |_| assist)))
    }

    #[tokio::test]
    async fn a_worker_that_ends_in_words_is_asked_once_per_task() {
        let dir = tempfile::tempdir().unwrap();
        let ts = TestSession::new(dir.path(), Parts::default());
        let worker = worker(&ts, ts.root);
        let cx = ts.cx(vec![policy(true)], worker);
        assert_eq!(
            cx.turn_end(TurnEnd::Completed, "done, file written", true)
                .await,
            AfterTurn::Continue(RESULT_DUE.into())
        );
        assert_eq!(
            cx.turn_end(TurnEnd::Completed, "done", true).await,
            AfterTurn::Rest
        );
        // Its supervisor's next message is a new ask.
        cx.hear(Moment::Settled(TurnEnd::Completed)).await;
        assert_eq!(
            cx.turn_end(TurnEnd::Completed, "still words", true).await,
            AfterTurn::Continue(RESULT_DUE.into())
        );
    }

    #[tokio::test]
    async fn quiet_for_a_worker_that_returned_and_for_turns_that_did_not_end_by_themselves() {
        let dir = tempfile::tempdir().unwrap();
        let ts = TestSession::new(dir.path(), Parts::default());
        let worker = worker(&ts, ts.root);
        let cx = ts.cx(vec![policy(true)], worker);
        for end in [
            TurnEnd::Returned,
            TurnEnd::MaxTokens,
            TurnEnd::MaxIterations,
            TurnEnd::Interrupted,
            TurnEnd::Cancelled,
            TurnEnd::Error,
        ] {
            assert_eq!(cx.turn_end(end, "", true).await, AfterTurn::Rest, "{end:?}");
        }
        // A follow-up after its result is answered in words.
        let result = serde_json::json!({"status": "success", "summary": "done"});
        ts.session
            .team
            .set_result(worker, serde_json::from_value(result).unwrap());
        cx.hear(Moment::Settled(TurnEnd::Returned)).await;
        assert_eq!(
            cx.turn_end(TurnEnd::Completed, "yes, it handles empty input", true)
                .await,
            AfterTurn::Rest
        );
    }

    #[tokio::test]
    async fn quiet_for_a_reviewer_that_has_no_result_to_return() {
        let dir = tempfile::tempdir().unwrap();
        let ts = TestSession::new(dir.path(), Parts::default());
        let mut new = agent(
            crate::protocol::AgentId::new(),
            Some(ts.root),
            Budget::default(),
        );
        new.tools = vec!["read_file".into()];
        let reviewer = ts.add_with(new);
        let cx = ts.cx(vec![policy(true)], reviewer);
        assert_eq!(
            cx.turn_end(TurnEnd::Completed, "1. src/a.rs:3 high", true)
                .await,
            AfterTurn::Rest
        );
    }

    #[tokio::test]
    async fn quiet_for_the_persona_for_assist_off_and_while_its_own_workers_run() {
        let dir = tempfile::tempdir().unwrap();
        let ts = TestSession::new(dir.path(), Parts::default());
        let persona = ts.cx(vec![policy(true)], ts.root);
        assert_eq!(
            persona.turn_end(TurnEnd::Completed, "hi", true).await,
            AfterTurn::Rest
        );
        let worker = worker(&ts, ts.root);
        let off = ts.cx(vec![policy(false)], worker);
        assert_eq!(
            off.turn_end(TurnEnd::Completed, "done", true).await,
            AfterTurn::Rest
        );
        // A worker that supervises rests until its own worker's result wakes it.
        let _grandchild = ts.add(worker, Budget::default());
        let supervising = ts.cx(vec![policy(true)], worker);
        assert_eq!(
            supervising
                .turn_end(TurnEnd::Completed, "waiting", true)
                .await,
            AfterTurn::Rest
        );
    }
}
