//! squad's slash commands in an editor. They are offered to the client once a session
//! opens (`available_commands_update`); a prompt that starts with one of their names runs
//! the command instead of going to the persona as a message, as in the terminal. Only the
//! commands that mean something without squad's screen: the others (the tree, the board,
//! the timeline) are views, and stopping and modes are ACP's own (`session/cancel`,
//! `session/set_mode`). Any other text starting with `/` is an ordinary message.

use super::rpc::Rpc;
use crate::protocol::{AgentId, Event, EventKind, Op, ReviewFinding};
use crate::slash::{self, GoalArg};
use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, SessionUpdate,
    UnstructuredCommandInput,
};

/// Name, what it does, the hint for its input (`None`: it takes none).
const COMMANDS: [(&str, &str, Option<&str>); 6] = [
    (
        "goal",
        "Work until a check passes: TEXT --check CMD [--rules] [--turns N] [--budget USD]; \
         `clear` stops it",
        Some("TEXT --check CMD"),
    ),
    (
        "review",
        "Review the uncommitted changes read-only, each finding checked against the code \
         (base BRANCH, commit SHA)",
        Some("[uncommitted | base BRANCH | commit SHA]"),
    ),
    (
        "compact",
        "Summarize the older part of the persona's conversation",
        None,
    ),
    (
        "budget",
        "Set the session's cost limit in US dollars (off lifts it)",
        Some("USD or off"),
    ),
    ("model", "The persona's model from now on", Some("MODEL")),
    (
        "merge",
        "Merge a worker's change kept unmerged (it failed its checks) on purpose",
        Some("WORKER (its id or role)"),
    ),
];

/// What the client is told the session takes.
pub fn available() -> Vec<AvailableCommand> {
    COMMANDS
        .iter()
        .map(|(name, description, hint)| {
            let command = AvailableCommand::new(*name, *description);
            match hint {
                Some(h) => command.input(AvailableCommandInput::Unstructured(
                    UnstructuredCommandInput::new(*h),
                )),
                None => command,
            }
        })
        .collect()
}

/// Tells the client the session's commands; sent after the session's id is known to it.
pub fn advertise(rpc: &Rpc, session_id: &str) {
    let update = AvailableCommandsUpdate::new(available());
    rpc.update(session_id, SessionUpdate::AvailableCommandsUpdate(update));
}

/// The event that says a command was done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ack {
    Review,
    Compact,
    Budget,
    Model,
    GoalCleared,
    Merge,
}

/// How a command's prompt ends.
#[derive(Debug, PartialEq)]
pub enum Ends {
    /// As any prompt: the team at rest after the persona's turn.
    Turn,
    /// On the event that says it was done, or the error that says why not.
    Ack(Ack),
    /// At once, with this line (what was wrong with the command).
    Now(String),
}

/// A prompt that is a command: the ops it sends and how its prompt ends.
#[derive(Debug, PartialEq)]
pub struct Command {
    pub ops: Vec<Op>,
    pub ends: Ends,
}

impl Command {
    fn ack(op: Op, ack: Ack) -> Self {
        Self {
            ops: vec![op],
            ends: Ends::Ack(ack),
        }
    }

    fn refused(line: impl Into<String>) -> Self {
        Self {
            ops: Vec::new(),
            ends: Ends::Now(line.into()),
        }
    }
}

/// The command `text` is, for a session whose persona is `root`; `None`: a message.
pub fn parse(text: &str, root: AgentId) -> Option<Command> {
    let (word, arg) = match text.trim().split_once(char::is_whitespace) {
        Some((w, a)) => (w, a.trim()),
        None => (text.trim(), ""),
    };
    let name = word.strip_prefix('/')?;
    COMMANDS.iter().find(|(n, ..)| *n == name)?;
    Some(match name {
        "goal" => match slash::parse_goal(arg) {
            Ok(GoalArg::Set(goal)) => {
                let text = goal.brief();
                Command {
                    ops: vec![
                        Op::SetGoal { goal: Some(goal) },
                        Op::UserMessage { to: None, text },
                    ],
                    ends: Ends::Turn,
                }
            }
            Ok(GoalArg::Clear) => Command::ack(Op::SetGoal { goal: None }, Ack::GoalCleared),
            Ok(GoalArg::Show) => Command::refused(slash::GOAL_USAGE),
            Err(e) => Command::refused(e),
        },
        "review" => match slash::parse_review((!arg.is_empty()).then_some(arg)) {
            Some(target) => Command::ack(Op::Review { target }, Ack::Review),
            None => Command::refused(slash::REVIEW_USAGE),
        },
        "compact" => Command::ack(Op::Compact { agent_id: root }, Ack::Compact),
        "budget" => match slash::parse_budget(arg) {
            Some(limit_usd) => Command::ack(Op::SetSessionBudget { limit_usd }, Ack::Budget),
            None => Command::refused(slash::BUDGET_USAGE),
        },
        "merge" => match arg {
            "" => Command::refused(slash::MERGE_USAGE),
            worker => Command::ack(
                Op::MergeWorker {
                    worker: worker.to_string(),
                },
                Ack::Merge,
            ),
        },
        _ => match slash::parse_model(arg) {
            Some(model) => Command::ack(Op::SetModel { model }, Ack::Model),
            None => Command::refused(slash::MODEL_USAGE),
        },
    })
}

/// Whether `event` ends the prompt of a command waiting for `ack`: the line that says
/// what happened (the prompt then ends as a turn does). An error on the persona is the
/// command refused.
pub fn ended(ack: Ack, event: &Event, root: AgentId) -> Option<String> {
    let on_root = event.agent_id == root;
    if let EventKind::Error { message } = &event.kind
        && on_root
    {
        return Some(format!("squad: {message}"));
    }
    // Each command waits for the one kind that says it was done; any other is not its end.
    let kind = &event.kind;
    match ack {
        Ack::Review => {
            let EventKind::ReviewFinished {
                findings,
                unanswered,
                ..
            } = kind
            else {
                return None;
            };
            Some(match unanswered {
                Some(why) => format!("Review: no reviewer could answer ({why})."),
                None => review(findings),
            })
        }
        Ack::Compact => {
            if let EventKind::Compacted {
                tokens_before,
                tokens_after,
                replaced,
                ..
            } = kind
                && on_root
            {
                Some(format!(
                    "Compacted: {replaced} older items summarized, the next request ~{tokens_before} → ~{tokens_after} tokens."
                ))
            } else if let EventKind::Notice { message } = kind
                && on_root
                && message.starts_with("/compact")
            {
                Some(message.clone())
            } else {
                None
            }
        }
        Ack::Budget => {
            let EventKind::SessionBudgetSet { limit_usd } = kind else {
                return None;
            };
            Some(match limit_usd {
                Some(usd) => format!("The session's cost limit is now ${usd:.2}."),
                None => "The session has no cost limit now.".to_string(),
            })
        }
        Ack::Model => {
            let EventKind::ModelSet { model } = kind else {
                return None;
            };
            Some(format!("The persona uses {model} from now on."))
        }
        Ack::GoalCleared => {
            matches!(kind, EventKind::GoalEnded { .. }).then(|| "The goal is stopped.".to_string())
        }
        Ack::Merge => {
            let who = event.agent_id.short();
            if let EventKind::Merged { files, .. } = kind {
                Some(format!(
                    "Merged the change of worker {who} into the workspace: {}.",
                    files.join(", ")
                ))
            } else if let EventKind::MergeConflict { conflicts } = kind {
                let each: Vec<String> = conflicts.iter().map(ToString::to_string).collect();
                Some(format!(
                    "The change of worker {who} conflicts with the workspace; nothing was merged:\n- {}",
                    each.join("\n- ")
                ))
            } else {
                None
            }
        }
    }
}

/// The findings as Markdown, most severe first (as the review ordered them).
fn review(findings: &[ReviewFinding]) -> String {
    if findings.is_empty() {
        return "Review: no findings.".to_string();
    }
    let mut out = format!("Review: {} finding(s).\n", findings.len());
    for f in findings {
        out.push_str(&format!(
            "\n- **{}** `{}` {} [{}]",
            f.severity.as_str(),
            f.place(),
            f.title,
            f.focus.join(", ")
        ));
        if !f.body.trim().is_empty() {
            out.push_str(&format!("\n  {}", f.body.trim().replace('\n', "\n  ")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Goal, ReviewTarget};

    fn root() -> AgentId {
        AgentId::new()
    }

    #[test]
    fn only_the_offered_names_are_commands() {
        let r = root();
        assert_eq!(parse("fix the bug", r), None);
        assert_eq!(parse("/etc/hosts is wrong", r), None);
        assert_eq!(
            parse("/agents", r),
            None,
            "a view of the terminal, a message here"
        );
        let names: Vec<String> = available().into_iter().map(|c| c.name).collect();
        for name in &names {
            assert!(parse(&format!("/{name}"), r).is_some(), "{name}");
        }
        assert_eq!(
            names,
            ["goal", "review", "compact", "budget", "model", "merge"]
        );
    }

    #[test]
    fn each_command_sends_what_the_terminal_sends() {
        let r = root();
        assert_eq!(
            parse("/review base main", r),
            Some(Command::ack(
                Op::Review {
                    target: ReviewTarget::Base {
                        branch: "main".into()
                    }
                },
                Ack::Review
            ))
        );
        assert_eq!(
            parse("/compact", r),
            Some(Command::ack(Op::Compact { agent_id: r }, Ack::Compact))
        );
        assert_eq!(
            parse("/budget 5", r),
            Some(Command::ack(
                Op::SetSessionBudget {
                    limit_usd: Some(5.0)
                },
                Ack::Budget
            ))
        );
        assert_eq!(
            parse("/merge 1a2b3c4d", r),
            Some(Command::ack(
                Op::MergeWorker {
                    worker: "1a2b3c4d".into()
                },
                Ack::Merge
            ))
        );
        assert_eq!(
            parse("/goal clear", r),
            Some(Command::ack(Op::SetGoal { goal: None }, Ack::GoalCleared))
        );
        let Some(Command { ops, ends }) = parse("/goal tests pass --check cargo test", r) else {
            panic!("a goal");
        };
        assert_eq!(ends, Ends::Turn);
        let goal = Goal::new("tests pass", "cargo test");
        goal.validate().unwrap();
        assert!(matches!(&ops[0], Op::SetGoal { goal: Some(g) } if g.check == "cargo test"));
        assert!(matches!(&ops[1], Op::UserMessage { to: None, text } if *text == goal.brief()));
    }

    #[test]
    fn a_wrong_command_is_told_its_usage_and_sends_nothing() {
        let r = root();
        for bad in [
            "/goal",
            "/goal no check",
            "/review yesterday",
            "/budget -3",
            "/model",
            "/model a b",
            "/merge",
        ] {
            let Some(Command {
                ops,
                ends: Ends::Now(line),
            }) = parse(bad, r)
            else {
                panic!("{bad}: not refused");
            };
            assert!(ops.is_empty(), "{bad}");
            assert!(line.contains("usage"), "{bad}: {line}");
        }
    }

    #[test]
    fn only_its_own_event_or_the_personas_error_ends_a_command() {
        let r = root();
        let other = root();
        let ev = |agent_id, kind| Event {
            seq: 1,
            ts: 0,
            agent_id,
            kind,
        };
        let set = ev(r, EventKind::ModelSet { model: "m".into() });
        assert!(ended(Ack::Budget, &set, r).is_none());
        assert_eq!(
            ended(Ack::Model, &set, r),
            Some("The persona uses m from now on.".into())
        );
        let worker_error = ev(
            other,
            EventKind::Error {
                message: "review: x".into(),
            },
        );
        assert!(ended(Ack::Review, &worker_error, r).is_none());
        let refused = ev(
            r,
            EventKind::Error {
                message: "review: not a git repository".into(),
            },
        );
        let line = ended(Ack::Review, &refused, r).unwrap();
        assert!(line.contains("not a git repository"));
        let done = ev(
            r,
            EventKind::ReviewFinished {
                target: ReviewTarget::Uncommitted,
                findings: Vec::new(),
                dropped: Vec::new(),
                unanswered: None,
            },
        );
        assert_eq!(
            ended(Ack::Review, &done, r).unwrap(),
            "Review: no findings."
        );
        let none_answered = ev(
            r,
            EventKind::ReviewFinished {
                target: ReviewTarget::Uncommitted,
                findings: Vec::new(),
                dropped: Vec::new(),
                unanswered: Some("review: x".into()),
            },
        );
        assert_eq!(
            ended(Ack::Review, &none_answered, r).unwrap(),
            "Review: no reviewer could answer (review: x)."
        );
    }
}
