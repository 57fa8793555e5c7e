//! Questions: answered, declined, withdrawn, and told but unanswerable in a headless run.

use super::*;
use crate::protocol::Event;
use std::sync::Arc;
use tokio::sync::mpsc;

fn sink() -> (Arc<EventSink>, mpsc::UnboundedReceiver<Event>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (Arc::new(EventSink::new(None, 0, tx)), rx)
}

/// Asks `question` as `agent` in a task of its own.
fn ask(
    questions: &Arc<Questions>,
    events: &Arc<EventSink>,
    agent: AgentId,
    question: &str,
    cancel: &CancellationToken,
) -> tokio::task::JoinHandle<Reply> {
    let (questions, events, cancel) = (questions.clone(), events.clone(), cancel.clone());
    let question = question.to_string();
    tokio::spawn(async move {
        let options = vec!["Postgres".to_string(), "SQLite".to_string()];
        let q = Question {
            agent_id: agent,
            role: "coder",
            question: &question,
            options: &options,
        };
        questions.ask(q, &events, &cancel).await
    })
}

/// The next `question_asked`: (request id, agent, question).
async fn next_asked(rx: &mut mpsc::UnboundedReceiver<Event>) -> (u64, AgentId, String) {
    loop {
        let ev = rx.recv().await.unwrap();
        if let EventKind::QuestionAsked {
            request_id,
            question,
            options,
            role,
        } = ev.kind
        {
            assert_eq!(options, ["Postgres", "SQLite"]);
            assert_eq!(role, "coder");
            return (request_id, ev.agent_id, question);
        }
    }
}

/// The next `question_answered`: (request id, answer, why not).
async fn next_answered(
    rx: &mut mpsc::UnboundedReceiver<Event>,
) -> (u64, Option<String>, Option<Declined>) {
    loop {
        let ev = rx.recv().await.unwrap();
        if let EventKind::QuestionAnswered {
            request_id,
            answer,
            declined,
        } = ev.kind
        {
            return (request_id, answer, declined);
        }
    }
}

#[tokio::test]
async fn questions_from_several_agents_wait_each_for_its_own_answer() {
    let (events, mut rx) = sink();
    let questions = Arc::new(Questions::new(true));
    let cancel = CancellationToken::new();
    let (a, b) = (AgentId::new(), AgentId::new());
    let first = ask(&questions, &events, a, "Which database?", &cancel);
    let (id_a, who, text) = next_asked(&mut rx).await;
    assert_eq!((who, text.as_str()), (a, "Which database?"));
    let second = ask(&questions, &events, b, "Keep the old API?", &cancel);
    let (id_b, who, _) = next_asked(&mut rx).await;
    assert_eq!(who, b);
    assert_ne!(id_a, id_b);

    // Answered out of order: each agent gets its own answer.
    assert!(questions.answer(id_b, None));
    assert!(questions.answer(id_a, Some("SQLite".into())));
    assert_eq!(second.await.unwrap(), Reply::Declined(Declined::User));
    assert_eq!(first.await.unwrap(), Reply::Answer("SQLite".into()));
    let mut settled = vec![next_answered(&mut rx).await, next_answered(&mut rx).await];
    settled.sort_by_key(|s| s.0);
    let mut want = vec![
        (id_a, Some("SQLite".to_string()), None),
        (id_b, None, Some(Declined::User)),
    ];
    want.sort_by_key(|s| s.0);
    assert_eq!(settled, want);

    // A settled question cannot be answered twice; an unknown id is ignored.
    assert!(!questions.answer(id_a, Some("Postgres".into())));
    assert!(!questions.answer(999, Some("x".into())));
}

#[tokio::test]
async fn cancelling_the_agent_withdraws_its_question() {
    let (events, mut rx) = sink();
    let questions = Arc::new(Questions::new(true));
    let cancel = CancellationToken::new();
    let task = ask(&questions, &events, AgentId::new(), "Go on?", &cancel);
    let (id, _, _) = next_asked(&mut rx).await;
    cancel.cancel();
    assert_eq!(task.await.unwrap(), Reply::Declined(Declined::Cancelled));
    assert_eq!(
        next_answered(&mut rx).await,
        (id, None, Some(Declined::Cancelled))
    );
    // The front end's late answer finds nothing waiting.
    assert!(!questions.answer(id, Some("yes".into())));
}

#[tokio::test]
async fn without_a_user_the_question_is_told_and_settled_at_once() {
    let (events, mut rx) = sink();
    let questions = Arc::new(Questions::new(false));
    let cancel = CancellationToken::new();
    let reply = ask(&questions, &events, AgentId::new(), "Which one?", &cancel)
        .await
        .unwrap();
    assert_eq!(reply, Reply::Declined(Declined::NoUser));
    let (id, _, text) = next_asked(&mut rx).await;
    assert_eq!(text, "Which one?");
    assert_eq!(
        next_answered(&mut rx).await,
        (id, None, Some(Declined::NoUser))
    );
}
