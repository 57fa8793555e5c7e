use super::*;
use crate::protocol::{AgentResult, ResultStatus, ToolCall};
use crate::protocol::{AgentStatus, ApprovalAction, Event, EventKind, TurnEnd};
use std::time::Duration;

fn info(root: AgentId) -> SessionInfo {
    SessionInfo {
        log_path: None,
        replayed_seq: 0,
        prompts: Vec::new(),
        session_id: "s1".into(),
        workspace: "/tmp/w".into(),
        model: "m".into(),
        approval: ApprovalPolicy::Ask,
        role: "copilot".into(),
        root_agent: root,
    }
}

fn ev(agent_id: AgentId, kind: EventKind) -> Event {
    Event {
        seq: 0,
        ts: 0,
        agent_id,
        kind,
    }
}

fn spawn(id: AgentId, parent: Option<AgentId>, role: &str) -> Event {
    ev(
        id,
        EventKind::AgentSpawned {
            parent_id: parent,
            role: role.into(),
            model: "m".into(),
            task: "t".into(),
            depth: 0,
        },
    )
}

#[test]
fn assistant_item_replaces_streaming_text() {
    let root = AgentId::new();
    let mut s = SessionState::new(&info(root));
    let t = Instant::now();
    s.apply(&spawn(root, None, "copilot"), t);
    for d in ["Hel", "lo"] {
        s.apply(&ev(root, EventKind::TextDelta { delta: d.into() }), t);
    }
    assert_eq!(s.agents[&root].conversation.streaming, "Hello");
    let item = HistoryItem::Assistant {
        text: "Hello!".into(),
        tool_calls: vec![ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a"}"#.into(),
        }],
        reasoning: Vec::new(),
    };
    s.apply(&ev(root, EventKind::ItemAdded { item }), t);
    // The begin event for the same call must not open a second line.
    s.apply(
        &ev(
            root,
            EventKind::ToolCallBegin {
                call_id: "c1".into(),
            },
        ),
        t,
    );
    let conv = &s.agents[&root].conversation;
    assert!(conv.streaming.is_empty());
    assert_eq!(conv.entries.len(), 2);
    assert_eq!(conv.entries[0].kind, EntryKind::Assistant("Hello!".into()));
}

#[test]
fn retry_drops_partial_text_and_keeps_one_line() {
    let root = AgentId::new();
    let mut s = SessionState::new(&info(root));
    let t = Instant::now();
    s.apply(
        &ev(
            root,
            EventKind::TextDelta {
                delta: "par".into(),
            },
        ),
        t,
    );
    for attempt in [1, 2] {
        s.apply(
            &ev(
                root,
                EventKind::Retrying {
                    attempt,
                    max_attempts: 4,
                    delay_ms: 10,
                    reason: "503".into(),
                },
            ),
            t,
        );
    }
    let conv = &s.agents[&root].conversation;
    assert!(conv.streaming.is_empty());
    assert_eq!(conv.entries.len(), 1);
    assert!(matches!(
        conv.entries[0].kind,
        EntryKind::Retrying { attempt: 2, .. }
    ));
}

#[test]
fn tree_usage_results_and_handoff() {
    let root = AgentId::new();
    let w = AgentId::new();
    let mut s = SessionState::new(&info(root));
    let t = Instant::now();
    s.apply(&spawn(root, None, "copilot"), t);
    s.apply(&spawn(w, Some(root), "coder"), t);
    assert_eq!(s.agents[&root].children, vec![w]);
    assert_eq!(s.roots, vec![root]);
    for _ in 0..2 {
        s.apply(
            &ev(
                w,
                EventKind::Usage {
                    model: "m".into(),
                    prompt_tokens: 100,
                    completion_tokens: 10,
                    cost_usd: 0.5,
                    context_tokens: 0,
                    context_window: 0,
                    cached_tokens: 0,
                },
            ),
            t,
        );
    }
    assert_eq!(s.agents[&w].figures.tokens(), 220);
    assert_eq!(s.subtree_figures(root).model_calls, 2);
    s.apply(
        &ev(
            w,
            EventKind::ResultReturned {
                parent_id: Some(root),
                result: AgentResult {
                    completed_at: None,
                    status: ResultStatus::Success,
                    summary: "ok".into(),
                    artifacts: vec![],
                    known_issues: vec![],
                    verification: None,
                    merge: None,
                },
            },
        ),
        t,
    );
    assert!(s.agents[&w].result.is_some());
    let item = HistoryItem::Handoff {
        from: "copilot".into(),
        to: "architect".into(),
        reason: "design".into(),
        context: String::new(),
    };
    s.apply(&ev(root, EventKind::ItemAdded { item }), t);
    assert_eq!(s.active_role, "architect");
    assert_eq!(s.agents[&root].role, "architect");
    assert_eq!(s.agents[&root].conversation.entries.len(), 1);
}

#[test]
fn approvals_queue_and_resolve() {
    let root = AgentId::new();
    let mut s = SessionState::new(&info(root));
    let t = Instant::now();
    for id in [7, 8, 7] {
        s.apply(&approval_at(root, 1, id), t);
    }
    assert_eq!(s.approvals.len(), 2);
    s.apply(
        &ev(
            root,
            EventKind::ApprovalResolved {
                request_id: 7,
                decision: crate::protocol::ApprovalDecision::Deny,
            },
        ),
        t,
    );
    assert_eq!(s.approvals.front().map(|p| p.request_id), Some(8));
}

#[test]
fn elapsed_comes_from_the_injected_clock() {
    let root = AgentId::new();
    let mut s = SessionState::new(&info(root));
    let t0 = Instant::now();
    s.apply(&spawn(root, None, "copilot"), t0);
    s.apply(
        &ev(
            root,
            EventKind::AgentStatus {
                parent_id: None,
                status: AgentStatus::Running,
                reason: None,
            },
        ),
        t0 + Duration::from_secs(5),
    );
    let a = &s.agents[&root];
    assert_eq!(
        a.busy_for(t0 + Duration::from_secs(65)),
        Some(Duration::from_secs(60))
    );
    s.apply(
        &ev(
            root,
            EventKind::AgentStatus {
                parent_id: None,
                status: AgentStatus::Inactive,
                reason: None,
            },
        ),
        t0 + Duration::from_secs(70),
    );
    let a = &s.agents[&root];
    assert_eq!(a.busy_for(t0 + Duration::from_secs(99)), None);
    assert_eq!(
        a.wall_time(t0 + Duration::from_secs(99)),
        Duration::from_secs(70)
    );
}

#[test]
fn role_completion_knows_every_loaded_role() {
    let root = AgentId::new();
    let mut s = SessionState::new(&info(root));
    s.apply(
        &ev(
            root,
            EventKind::SessionStarted {
                session_id: "s1".into(),
                workspace: "/tmp/w".into(),
                model: "m".into(),
                role: "copilot".into(),
                approval: ApprovalPolicy::Ask,
                resumed: false,
                roles: vec!["copilot".into(), "documentation".into(), "tester".into()],
            },
        ),
        Instant::now(),
    );
    let roles = s.known_roles();
    assert!(roles.contains(&"documentation".to_string()), "{roles:?}");
    assert!(roles.contains(&"tester".to_string()), "{roles:?}");
}

#[test]
fn context_fill_follows_usage_and_compaction() {
    let root = AgentId::new();
    let mut s = SessionState::new(&info(root));
    let t = Instant::now();
    s.apply(&spawn(root, None, "copilot"), t);
    assert_eq!(s.agents[&root].context_percent(), None);
    let usage = |context_tokens, context_window| EventKind::Usage {
        model: "m".into(),
        prompt_tokens: 900,
        completion_tokens: 10,
        cost_usd: 0.0,
        context_tokens,
        context_window,
        cached_tokens: 0,
    };
    s.apply(&ev(root, usage(20_312, 32_768)), t);
    assert_eq!(s.agents[&root].context_percent(), Some(61));
    // A summary call tells nothing about the context.
    s.apply(&ev(root, usage(0, 0)), t);
    assert_eq!(s.agents[&root].context_percent(), Some(61));
    s.apply(
        &ev(
            root,
            EventKind::Compacted {
                tokens_before: 27_000,
                tokens_after: 6_553,
                context_window: 32_768,
                replaced: 40,
                history: vec![HistoryItem::user("task")],
            },
        ),
        t,
    );
    let a = &s.agents[&root];
    assert_eq!(a.context_percent(), Some(19));
    let EntryKind::Notice(text) = &a.conversation.entries.last().unwrap().kind else {
        panic!("{:?}", a.conversation.entries);
    };
    assert!(text.contains("context compacted: 40 older items"), "{text}");
    s.apply(
        &ev(
            root,
            EventKind::InstructionsLoaded {
                files: vec!["/tmp/w/AGENTS.md".into()],
                bytes: 2048,
                cut: false,
            },
        ),
        t,
    );
    assert_eq!(s.instructions.as_deref(), Some("AGENTS.md"));
}

fn asked(agent: AgentId, seq: u64, request_id: u64, question: &str) -> Event {
    Event {
        seq,
        ts: 0,
        agent_id: agent,
        kind: EventKind::QuestionAsked {
            request_id,
            role: "coder".into(),
            question: question.into(),
            options: vec!["yes".into(), "no".into()],
        },
    }
}

fn approval_at(agent: AgentId, seq: u64, request_id: u64) -> Event {
    Event {
        seq,
        ts: 0,
        agent_id: agent,
        kind: EventKind::ApprovalRequested {
            request_id,
            role: "copilot".into(),
            tool: "shell".into(),
            action: ApprovalAction::Command {
                command: "ls".into(),
            },
        },
    }
}

#[test]
fn questions_queue_in_order_and_take_turns_with_approvals() {
    let root = AgentId::new();
    let (a, b) = (AgentId::new(), AgentId::new());
    let mut s = SessionState::new(&info(root));
    let t = Instant::now();
    s.apply(&asked(a, 1, 1, "first?"), t);
    s.apply(&approval_at(root, 2, 7), t);
    s.apply(&asked(b, 3, 2, "second?"), t);
    // The same question told twice is queued once.
    s.apply(&asked(b, 3, 2, "second?"), t);
    assert_eq!(s.questions.len(), 2);
    assert_eq!(s.dialogs_waiting(), 2);

    // Oldest first, whatever its kind.
    let front = |s: &SessionState| match s.dialog() {
        Some(Dialog::Question(q)) => format!("question {} of {}", q.request_id, q.role),
        Some(Dialog::Approval(p)) => format!("approval {}", p.request_id),
        Some(Dialog::Plan(p)) => format!("plan {}", p.plan_id),
        None => "none".into(),
    };
    assert_eq!(front(&s), "question 1 of coder");
    assert_eq!(s.questions[0].agent_id, a);
    assert!(s.resolve_question(1));
    assert!(!s.resolve_question(1), "idempotent");
    assert_eq!(front(&s), "approval 7");
    assert!(s.resolve_approval(7));
    assert_eq!(front(&s), "question 2 of coder");

    // The runtime settling it (declined, withdrawn) closes it too.
    s.apply(
        &ev(
            b,
            EventKind::QuestionAnswered {
                request_id: 2,
                answer: None,
                declined: Some(crate::protocol::Declined::Cancelled),
            },
        ),
        t,
    );
    assert_eq!(front(&s), "none");
    assert_eq!(s.dialogs_waiting(), 0);
}

#[test]
fn an_approval_read_back_from_the_log_opens_no_dialog() {
    let root = AgentId::new();
    let mut i = info(root);
    i.replayed_seq = 10;
    let mut s = SessionState::new(&i);
    let t = Instant::now();
    s.apply(&approval_at(root, 9, 1), t);
    assert!(s.dialog().is_none());
    assert_eq!(s.dialogs_waiting(), 0);
    s.apply(&approval_at(root, 11, 1), t);
    assert!(matches!(s.dialog(), Some(Dialog::Approval(_))));
}

#[test]
fn a_question_read_back_from_the_log_opens_no_dialog() {
    let root = AgentId::new();
    let mut i = info(root);
    i.replayed_seq = 10;
    let mut s = SessionState::new(&i);
    let t = Instant::now();
    s.apply(&asked(root, 9, 1, "from the last run?"), t);
    assert!(s.dialog().is_none());
    s.apply(&asked(root, 11, 1, "asked again after resume?"), t);
    assert!(
        matches!(s.dialog(), Some(Dialog::Question(q)) if q.question.starts_with("asked again"))
    );
}

#[test]
fn a_workers_message_shows_in_its_supervisors_conversation() {
    let (root, w) = (AgentId::new(), AgentId::new());
    let mut s = SessionState::new(&info(root));
    let t = Instant::now();
    s.apply(&spawn(root, None, "copilot"), t);
    s.apply(&spawn(w, Some(root), "tester"), t);
    s.apply(
        &ev(
            w,
            EventKind::SupervisorMessage {
                supervisor_id: root,
                kind: crate::protocol::MessageKind::Question,
                text: "which port?".into(),
            },
        ),
        t,
    );
    let EntryKind::Notice(text) = &s.agents[&root].conversation.entries.last().unwrap().kind else {
        panic!("{:?}", s.agents[&root].conversation.entries);
    };
    assert_eq!(
        text,
        &format!("question from tester {}: which port?", w.short())
    );
}

#[test]
fn a_stall_is_marked_until_progress_the_turn_ends_or_it_was_only_read_back() {
    let root = AgentId::new();
    let mut s = SessionState::new(&SessionInfo {
        replayed_seq: 2,
        prompts: Vec::new(),
        ..info(root)
    });
    let t = Instant::now() + Duration::from_secs(100);
    let at = |seq: u64, kind: EventKind| Event {
        seq,
        ts: 0,
        agent_id: root,
        kind,
    };
    let stalled = || EventKind::Stalled {
        on: "model call".into(),
        since_s: 30,
    };
    // From the log of an earlier run: that stall is over.
    s.apply(&at(1, EventKind::TurnStarted), t);
    s.apply(&at(2, stalled()), t);
    assert_eq!(s.agents[&root].stalled, None);
    s.apply(&at(3, stalled()), t);
    let stall = s.agents[&root].stalled.clone().unwrap();
    assert_eq!(stall.on, "model call");
    assert_eq!(t.duration_since(stall.since), Duration::from_secs(30));
    s.apply(&at(4, EventKind::Unstalled), t);
    assert_eq!(s.agents[&root].stalled, None);
    s.apply(&at(5, stalled()), t);
    s.apply(
        &at(
            6,
            EventKind::TurnFinished {
                end: TurnEnd::Interrupted,
            },
        ),
        t,
    );
    assert_eq!(s.agents[&root].stalled, None, "a turn's end ends its stall");
}
