//! The team's own news, as front ends show it apart from each agent's work (issue 54
//! part 7): who messaged whom, who took or gave back which task (and the paths it
//! leases), a plan submitted and decided. Folded from the events alike by the TUI's
//! timeline and ACP, live and replayed; a claim is a change of a task's holder, so the
//! fold keeps each task's holder.

use super::{AgentId, Event, EventKind, TaskStatus};
use std::collections::HashMap;

/// One piece of team news; each names its agent.
#[derive(Clone, Debug, PartialEq)]
pub enum TeamNews {
    /// `from` messaged `to` (`message_agent`; queued for `to`'s next model call).
    Message {
        from: AgentId,
        to: AgentId,
        message_id: u64,
        text: String,
    },
    /// `holder` took a task: claimed it (`claim_task`) or was spawned for it. `paths`
    /// are its lease while it runs.
    Took {
        holder: AgentId,
        task_id: String,
        title: String,
        paths: Vec<String>,
        claimed: bool,
    },
    /// `holder` gave its task back as ready (it ended or was released without finishing;
    /// `note` says what it left).
    GaveBack {
        holder: AgentId,
        task_id: String,
        title: String,
        note: Option<String>,
    },
    /// `worker` submitted a plan and waits for its approval.
    PlanSubmitted {
        worker: AgentId,
        plan_id: u64,
        plan: String,
    },
    /// `worker`'s plan was decided, `by` its supervisor (none: the user).
    PlanDecided {
        worker: AgentId,
        plan_id: u64,
        approved: bool,
        reason: String,
        by: Option<AgentId>,
    },
}

/// Folds events into team news: keeps who holds each running task.
#[derive(Clone, Debug, Default)]
pub struct TeamNewsFold {
    holders: HashMap<String, AgentId>,
}

impl TeamNewsFold {
    /// The news `ev` makes, if any.
    pub fn observe(&mut self, ev: &Event) -> Option<TeamNews> {
        if let EventKind::AgentMessage {
            to,
            message_id,
            text,
        } = &ev.kind
        {
            return Some(TeamNews::Message {
                from: ev.agent_id,
                to: *to,
                message_id: *message_id,
                text: text.clone(),
            });
        }
        if let EventKind::PlanSubmitted(p) = &ev.kind {
            return Some(TeamNews::PlanSubmitted {
                worker: ev.agent_id,
                plan_id: p.plan_id,
                plan: p.plan.clone(),
            });
        }
        if let EventKind::PlanDecided(d) = &ev.kind {
            return Some(TeamNews::PlanDecided {
                worker: ev.agent_id,
                plan_id: d.plan_id,
                approved: d.approved,
                reason: d.reason.clone(),
                by: d.by,
            });
        }
        let EventKind::TaskUpdated { task } = &ev.kind else {
            return None;
        };
        let held = (task.status == TaskStatus::Running)
            .then_some(task.assignee)
            .flatten();
        let before = match held {
            Some(h) => self.holders.insert(task.id.clone(), h),
            None => self.holders.remove(&task.id),
        };
        match (before, held) {
            (b, Some(h)) if b != Some(h) => Some(TeamNews::Took {
                holder: h,
                task_id: task.id.clone(),
                title: task.title.clone(),
                paths: task.paths.clone(),
                claimed: task.claimed,
            }),
            (Some(b), None) if task.status.is_open() => Some(TeamNews::GaveBack {
                holder: b,
                task_id: task.id.clone(),
                title: task.title.clone(),
                note: task.notes.last().cloned(),
            }),
            _ => None,
        }
    }
}

impl TeamNews {
    /// The agent the news is about: the sender, the holder, the worker of the plan.
    pub fn agent(&self) -> AgentId {
        match self {
            Self::Message { from, .. } => *from,
            Self::Took { holder, .. } | Self::GaveBack { holder, .. } => *holder,
            Self::PlanSubmitted { worker, .. } | Self::PlanDecided { worker, .. } => *worker,
        }
    }

    /// The news on one line, `who` naming an agent (`coder 1a2b3c4d`) and `max` the
    /// characters of a message or plan shown (its first line):
    /// `✉ coder 1a2b3c4d → tester 5e6f7a8b: the API changed`,
    /// `⚑ coder 1a2b3c4d claimed T1 lexer · lease lexer/**`,
    /// `↩ coder 1a2b3c4d gave back T1 lexer: …`, `▤ plan of coder 1a2b3c4d approved by lead`.
    pub fn line(&self, who: impl Fn(AgentId) -> String, max: usize) -> String {
        match self {
            Self::Message { from, to, text, .. } => {
                format!("✉ {} → {}: {}", who(*from), who(*to), first_line(text, max))
            }
            Self::Took {
                holder,
                task_id,
                title,
                paths,
                claimed,
            } => {
                let how = if *claimed { "claimed" } else { "took" };
                let mut line = format!("⚑ {} {how} {task_id} {}", who(*holder), one_line(title));
                if !paths.is_empty() {
                    line.push_str(&format!(" · lease {}", paths.join(", ")));
                }
                line
            }
            Self::GaveBack {
                holder,
                task_id,
                title,
                note,
            } => {
                let mut line =
                    format!("↩ {} gave back {task_id} {}", who(*holder), one_line(title));
                if let Some(note) = note {
                    line.push_str(&format!(": {}", first_line(note, max)));
                }
                line
            }
            Self::PlanSubmitted { worker, plan, .. } => format!(
                "▤ plan of {} awaiting approval: {}",
                who(*worker),
                first_line(plan, max)
            ),
            Self::PlanDecided {
                worker,
                approved,
                reason,
                by,
                ..
            } => {
                let by = by.map_or_else(|| "the user".to_string(), &who);
                if *approved {
                    format!("▤ plan of {} approved by {by}", who(*worker))
                } else {
                    format!(
                        "▤ plan of {} rejected by {by}: {}",
                        who(*worker),
                        first_line(reason, max)
                    )
                }
            }
        }
    }
}

/// The first non-blank line of `text`, its runs of white space one space, at most `max`
/// characters (an ellipsis where cut, or where lines follow).
pub fn first_line(text: &str, max: usize) -> String {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let line = one_line(lines.next().unwrap_or_default());
    let more = lines.next().is_some();
    if line.chars().count() <= max && !more {
        return line;
    }
    let mut cut: String = line.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Task;

    fn ev(agent: AgentId, kind: EventKind) -> Event {
        Event {
            seq: 1,
            ts: 0,
            agent_id: agent,
            kind,
        }
    }

    fn task(status: TaskStatus, assignee: Option<AgentId>, claimed: bool) -> EventKind {
        EventKind::TaskUpdated {
            task: Task {
                id: "T1".into(),
                title: "the lexer".into(),
                description: None,
                role: None,
                depends_on: Vec::new(),
                status,
                assignee,
                notes: vec!["given back by worker 1a2b3c4d: it failed".into()],
                result: None,
                paths: vec!["lexer/**".into()],
                wait: false,
                claimed,
            },
        }
    }

    #[test]
    fn a_claim_is_news_once_and_a_give_back_names_the_holder() {
        let (w, lead) = (AgentId::new(), AgentId::new());
        let who = |a: AgentId| {
            if a == w {
                "coder w".into()
            } else {
                "lead".into()
            }
        };
        let mut fold = TeamNewsFold::default();
        assert_eq!(
            fold.observe(&ev(lead, task(TaskStatus::Ready, None, false))),
            None
        );
        let took = fold
            .observe(&ev(w, task(TaskStatus::Running, Some(w), true)))
            .unwrap();
        assert_eq!(took.agent(), w);
        assert_eq!(
            took.line(who, 80),
            "⚑ coder w claimed T1 the lexer · lease lexer/**"
        );
        // The same holder again (a note added): no news.
        assert_eq!(
            fold.observe(&ev(w, task(TaskStatus::Running, Some(w), true))),
            None
        );
        let back = fold
            .observe(&ev(w, task(TaskStatus::Ready, None, false)))
            .unwrap();
        assert_eq!(
            back.line(who, 80),
            "↩ coder w gave back T1 the lexer: given back by worker 1a2b3c4d: it failed"
        );
        // Done is no give-back.
        fold.observe(&ev(w, task(TaskStatus::Running, Some(w), true)));
        assert_eq!(
            fold.observe(&ev(w, task(TaskStatus::Done, Some(w), true))),
            None
        );
    }

    #[test]
    fn a_message_shows_its_first_line_and_a_plan_who_decided() {
        let (a, b) = (AgentId::new(), AgentId::new());
        let who = |x: AgentId| {
            if x == a {
                "coder a".into()
            } else {
                "tester b".into()
            }
        };
        let mut fold = TeamNewsFold::default();
        let m = fold
            .observe(&ev(
                a,
                EventKind::AgentMessage {
                    to: b,
                    message_id: 3,
                    text: "\n  the   API changed\nsee lexer.rs".into(),
                },
            ))
            .unwrap();
        assert_eq!(m.line(who, 80), "✉ coder a → tester b: the API changed…");
        assert_eq!(first_line("abcdef", 4), "abc…");
        let d = fold
            .observe(&ev(
                a,
                EventKind::PlanDecided(crate::protocol::PlanDecision {
                    plan_id: 1,
                    approved: false,
                    reason: "too broad".into(),
                    by: Some(b),
                }),
            ))
            .unwrap();
        assert_eq!(
            d.line(who, 80),
            "▤ plan of coder a rejected by tester b: too broad"
        );
    }
}
