//! The team's busy/idle/fan-in rules, without a model or a task per agent.

use super::*;
use crate::protocol::{Event, MessageKind, ResultStatus, SpawnOptions};
use crate::runtime::report::notice_batch;

fn team() -> (Team, AgentId, mpsc::UnboundedReceiver<Event>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let root = AgentId::new();
    let team = Team::new(EventSink::new(None, 0, tx), root);
    let _ = team.add(new_agent(root, None));
    (team, root, rx)
}

fn new_agent(id: AgentId, parent: Option<AgentId>) -> NewAgent {
    NewAgent {
        tools: vec!["read_file".into()],
        status: AgentStatus::Inactive,
        ..crate::runtime::testing::agent(id, parent, Budget::default())
    }
}

fn worker(team: &Team, parent: AgentId) -> AgentId {
    let id = AgentId::new();
    let _ = team.add(NewAgent {
        first_message: Some("do it".into()),
        ..new_agent(id, Some(parent))
    });
    id
}

fn kinds(rx: &mut mpsc::UnboundedReceiver<Event>) -> Vec<EventKind> {
    let mut out = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        out.push(ev.kind);
    }
    out
}

fn ready(done: &[AgentId], running: &[AgentId]) -> FanIn {
    FanIn::Ready {
        done: done.to_vec(),
        running: running.to_vec(),
    }
}

fn result() -> AgentResult {
    AgentResult {
        completed_at: None,
        status: ResultStatus::Success,
        summary: "done".into(),
        artifacts: Vec::new(),
        known_issues: Vec::new(),
        verification: None,
        merge: None,
    }
}

#[test]
fn a_worker_with_queued_input_is_busy_until_it_takes_it_up() {
    let (team, root, _rx) = team();
    let w = worker(&team, root);
    assert!(!team.tree_idle(), "a spawned worker's task is queued work");
    assert_eq!(team.owed_results(root), FanIn::Waiting);
    team.begin_turn(w, true);
    assert_eq!(team.status(w), Some(AgentStatus::Running));
    assert_eq!(team.owed_results(root), FanIn::Waiting);
    assert!(team.counts_agree());
}

#[test]
fn a_finished_worker_is_owed_until_its_outcome_is_taken() {
    let (team, root, mut rx) = team();
    let w = worker(&team, root);
    team.begin_turn(w, true);
    team.set_result(w, result());
    team.set_status(w, AgentStatus::Completed, None);
    assert_eq!(team.owed_results(root), ready(&[w], &[]));
    assert!(team.tree_idle());
    kinds(&mut rx);
    let (outcomes, still) = team.take_outcomes(&[w], &[]);
    assert_eq!(outcomes.len(), 1);
    assert!(still.is_empty());
    assert_eq!(
        outcomes[0].result.as_ref().map(|r| r.summary.as_str()),
        Some("done")
    );
    assert_eq!(team.owed_results(root), FanIn::Nothing);
    // Delivery is its own event, which resume reads.
    assert_eq!(
        kinds(&mut rx),
        vec![EventKind::ResultDelivered { parent_id: root }]
    );
}

#[test]
fn a_reviewer_answering_squad_is_never_owed_to_the_persona() {
    let (team, root, _rx) = team();
    let r = worker(&team, root);
    team.answer_to_squad(r);
    // Running, it does not make the persona wait; done, it is not handed to it; nor is a
    // failure of it urgent news for the persona.
    team.begin_turn(r, true);
    assert_eq!(team.owed_results(root), FanIn::Nothing);
    assert!(
        team.unfinished_children(root).is_empty(),
        "wait_for_agents waits for none"
    );
    team.set_status(r, AgentStatus::Inactive, None);
    assert_eq!(team.owed_results(root), FanIn::Nothing);
    let w = worker(&team, root);
    team.begin_turn(w, true);
    team.begin_turn(r, true);
    team.fail(w, "broke".into());
    assert_eq!(team.owed_results(root), ready(&[w], &[]));
    assert!(team.counts_agree());
}

#[test]
fn a_new_outcome_after_a_follow_up_is_owed_again() {
    let (team, root, _rx) = team();
    let w = worker(&team, root);
    team.begin_turn(w, true);
    team.set_status(w, AgentStatus::Inactive, None);
    team.take_outcomes(&[w], &[]);
    assert_eq!(team.owed_results(root), FanIn::Nothing);
    team.begin_turn(w, false);
    team.set_status(w, AgentStatus::Completed, None);
    assert_eq!(team.owed_results(root), ready(&[w], &[]));
}

#[test]
fn cancelled_is_final_and_owes_nothing() {
    let (team, root, _rx) = team();
    let w = worker(&team, root);
    let sub = worker(&team, w);
    team.begin_turn(w, true);
    assert_eq!(team.cancel_subtree(w, "despawned"), 2);
    assert_eq!(team.status(w), Some(AgentStatus::Cancelled));
    assert_eq!(team.status(sub), Some(AgentStatus::Cancelled));
    // A cancelled wait or approval must not revive it.
    team.set_status(w, AgentStatus::Running, None);
    assert_eq!(team.status(w), Some(AgentStatus::Cancelled));
    assert_eq!(team.owed_results(root), FanIn::Nothing);
    assert!(
        team.tree_idle(),
        "queued input of a cancelled agent is not work"
    );
    assert!(!team.deliver(
        w,
        AgentInput::Message {
            text: "x".into(),
            reply: None
        }
    ));
}

#[test]
fn idle_is_announced_once_the_whole_tree_rests() {
    let (team, root, mut rx) = team();
    let w = worker(&team, root);
    team.begin_turn(root, false);
    team.begin_turn(w, true);
    kinds(&mut rx);
    team.set_status(root, AgentStatus::Inactive, None);
    assert!(
        !kinds(&mut rx).contains(&EventKind::Idle),
        "a worker still runs"
    );
    team.set_status(w, AgentStatus::Completed, None);
    assert!(kinds(&mut rx).contains(&EventKind::Idle));
    assert!(team.counts_agree());
}

#[test]
fn an_interrupt_holds_results_until_the_next_message() {
    let (team, root, _rx) = team();
    let turn = team.begin_turn(root, false).unwrap();
    team.interrupt(root);
    assert!(turn.is_cancelled());
    assert!(team.is_held(root));
    assert!(team.release_hold(root));
    assert!(!team.is_held(root));
}

#[test]
fn requests_share_the_history_instead_of_copying_it() {
    let (team, root, _rx) = team();
    team.push_item(root, HistoryItem::user("one"));
    let view = team.request_view(root).unwrap();
    let again = team.request_view(root).unwrap();
    assert!(Arc::ptr_eq(&view.history, &again.history));
    drop((view, again));
    team.push_item(root, HistoryItem::user("two"));
    assert_eq!(team.request_view(root).unwrap().history.len(), 2);
}

#[test]
fn a_failed_worker_is_urgent_while_others_still_run() {
    let (team, root, _rx) = team();
    let (a, b) = (worker(&team, root), worker(&team, root));
    team.begin_turn(a, true);
    team.begin_turn(b, true);
    team.set_status(a, AgentStatus::Completed, None);
    assert_eq!(
        team.owed_results(root),
        FanIn::Waiting,
        "a result is not urgent"
    );
    team.fail(b, "model gone".into());
    assert_eq!(team.owed_results(root), ready(&[a, b], &[]));
    assert!(team.take_alarm(root), "a wait hears of the failure");
    assert!(!team.take_alarm(root));
    assert_eq!(team.owed_failures(root), vec![b]);
}

#[test]
fn a_failure_is_worth_a_batch_while_other_workers_run() {
    let (team, root, _rx) = team();
    let (a, b) = (worker(&team, root), worker(&team, root));
    team.begin_turn(a, true);
    team.begin_turn(b, true);
    team.fail(a, "model gone".into());
    assert_eq!(team.owed_results(root), ready(&[a], &[b]));
}

#[test]
fn a_question_wakes_the_supervisor_and_an_update_waits_for_the_next_batch() {
    let (team, root, mut rx) = team();
    let w = worker(&team, root);
    team.begin_turn(w, true);
    kinds(&mut rx);
    assert_eq!(
        team.message_supervisor(w, MessageKind::Update, "halfway"),
        Some(root)
    );
    assert_eq!(team.owed_results(root), FanIn::Waiting);
    assert!(!team.has_urgent_notice(root));
    team.message_supervisor(w, MessageKind::Question, "which port?");
    assert!(team.has_urgent_notice(root));
    assert_eq!(team.owed_results(root), ready(&[], &[w]));
    // Each message is an event of the worker's, naming the supervisor.
    let told = kinds(&mut rx);
    assert_eq!(
        told[1],
        EventKind::SupervisorMessage {
            supervisor_id: root,
            kind: MessageKind::Question,
            text: "which port?".into()
        }
    );
    // The persona has nobody to message.
    assert_eq!(
        team.message_supervisor(root, MessageKind::Question, "?"),
        None
    );
}

#[test]
fn a_batch_tells_a_failure_and_a_question_before_results_that_came_earlier() {
    let (team, root, mut rx) = team();
    let (a, b, c) = (
        worker(&team, root),
        worker(&team, root),
        worker(&team, root),
    );
    for w in [a, b, c] {
        team.begin_turn(w, true);
    }
    team.message_supervisor(c, MessageKind::Update, "still reading");
    team.set_result(a, result());
    team.set_status(a, AgentStatus::Completed, None);
    team.message_supervisor(c, MessageKind::Question, "which port?");
    team.fail(b, "backend on fire".into());
    let FanIn::Ready { done, running } = team.owed_results(root) else {
        panic!("a failure is urgent");
    };
    assert_eq!(
        (done.as_slice(), running.as_slice()),
        ([a, b].as_slice(), [c].as_slice())
    );
    kinds(&mut rx);
    let batch = notice_batch(&team, root, &done, &running, Vec::new()).unwrap();
    let at = |needle: &str| {
        batch
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} not in {batch}"))
    };
    assert!(at("CRITICAL — workers failed") < at("Question from your worker"));
    assert!(at("backend on fire") < at("Question from your worker"));
    assert!(at("Question from your worker") < at("others are still running"));
    assert!(at("\"summary\": \"done\"") < at("Update from your worker"));
    // All of it delivered: outcomes marked, inbox emptied, and the log told so.
    assert_eq!(team.owed_results(root), FanIn::Waiting);
    assert!(team.take_notices(root).is_empty());
    assert!(kinds(&mut rx).contains(&EventKind::InboxDelivered { notices: 2 }));
    assert_eq!(notice_batch(&team, root, &[], &[], Vec::new()), None);
}

/// A worker that finished and whose outcome its supervisor has taken.
fn delivered_worker(team: &Team, root: AgentId, keep: bool) -> AgentId {
    let id = AgentId::new();
    let _ = team.add(NewAgent {
        first_message: Some("do it".into()),
        options: SpawnOptions {
            keep,
            ..SpawnOptions::default()
        },
        ..new_agent(id, Some(root))
    });
    team.begin_turn(id, true);
    team.set_result(id, result());
    team.set_status(id, AgentStatus::Completed, None);
    team.take_outcomes(&[id], &[]);
    id
}

#[test]
fn a_delivered_worker_frees_its_slot_and_a_kept_one_does_not() {
    let (team, root, _rx) = team();
    let w = worker(&team, root);
    team.begin_turn(w, true);
    team.set_status(w, AgentStatus::Completed, None);
    assert_eq!(team.live_count(), 2, "owed, not yet delivered: it counts");
    team.take_outcomes(&[w], &[]);
    assert_eq!(team.live_count(), 1);
    let kept = delivered_worker(&team, root, true);
    assert_eq!(team.live_count(), 2, "a kept worker holds its slot");
    assert!(team.counts_agree());
    // A follow-up puts the worker back to work: it counts again until delivered again.
    team.begin_turn(w, false);
    assert_eq!(team.live_count(), 3);
    team.set_status(w, AgentStatus::Inactive, None);
    assert_eq!(team.live_count(), 3);
    team.mark_delivered(w);
    assert_eq!(team.live_count(), 2);
    assert!(team.counts_agree());
    assert!(!team.is_released(kept));
}

#[test]
fn releases_come_when_due_never_for_kept_workers_and_not_while_a_subworker_works() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let root = AgentId::new();
    let team = Team::new(EventSink::new(None, 0, tx), root)
        .release_after(std::time::Duration::from_secs(60));
    let _ = team.add(new_agent(root, None));
    let t0 = std::time::Instant::now();
    let w = delivered_worker(&team, root, false);
    let kept = delivered_worker(&team, root, true);
    assert_eq!(team.release_due(t0), 0, "not yet due");
    assert!(!team.release_if_due(w, t0));
    let later = t0 + std::time::Duration::from_secs(61);
    kinds(&mut rx);
    assert_eq!(team.release_due(later), 1);
    assert!(team.is_released(w));
    assert!(!team.is_released(kept));
    assert_eq!(kinds(&mut rx), vec![EventKind::Released]);
    assert!(team.request_view(w).unwrap().history.is_empty());
    assert!(
        !team.deliver(
            w,
            AgentInput::Message {
                text: "more?".into(),
                reply: None
            }
        ),
        "a released worker takes no input"
    );
    assert!(team.is_settled(w));
    assert!(team.counts_agree());

    // One whose own worker was set to work again (by the user) waits a period more.
    let busy = delivered_worker(&team, root, false);
    let sub = worker(&team, busy);
    team.begin_turn(sub, true);
    let much_later = later + std::time::Duration::from_secs(120);
    assert_eq!(team.release_due(much_later), 0);
    assert!(!team.is_released(busy));
    team.set_status(sub, AgentStatus::Inactive, None);
    assert_eq!(
        team.release_due(much_later + std::time::Duration::from_secs(61)),
        1
    );
    assert!(
        team.is_released(busy) && team.is_released(sub),
        "with its subtree"
    );
    assert!(team.counts_agree());
}

#[test]
fn a_follow_up_after_delivery_puts_the_release_off_to_the_next_delivery() {
    let (tx, _rx) = mpsc::unbounded_channel();
    let root = AgentId::new();
    let team =
        Team::new(EventSink::new(None, 0, tx), root).release_after(std::time::Duration::ZERO);
    let _ = team.add(new_agent(root, None));
    let w = worker(&team, root);
    team.begin_turn(w, true);
    team.set_status(w, AgentStatus::Completed, None);
    team.take_outcomes(&[w], &[]);
    // Spoken to again before the timer came round: it works, so it is not released.
    team.begin_turn(w, false);
    assert_eq!(team.release_due(std::time::Instant::now()), 0);
    team.set_status(w, AgentStatus::Completed, None);
    assert!(
        !team.release_if_due(w, std::time::Instant::now()),
        "owed again"
    );
    team.mark_delivered(w);
    assert!(team.release_if_due(w, std::time::Instant::now()));
}
