//! The team's own news as an ACP client sees it (issue 54 part 5), each with its agent
//! (ids and names under the `squad/team` key of `_meta`):
//! - a message between teammates: with subagents, the protocol's inter-session message,
//!   its outgoing view in the sender's session and, once delivered, its incoming view in
//!   the recipient's; without, a tool call of its own, in progress until delivered;
//! - a task taken (claimed or at a spawn) or given back: a line in its holder's session,
//!   and the plan's entries name each task's owner and lease (`squad/task` in `_meta`);
//! - a plan submitted: a tool call in its supervisor's session, pending until decided,
//!   then completed (approved) or failed (rejected, with the reason).

use super::{Translator, text_content};
use crate::protocol::{AgentId, Event, EventKind, Task, TaskStatus, TeamNews, TeamNewsFold};
use agent_client_protocol::v1::schema::{
    ContentBlock, MessageId, Meta, PlanEntry, PlanEntryPriority, PlanEntryStatus, SessionId,
    SessionMessage, SessionUpdate, ToolCall, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
    ToolKind,
};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};

/// Where squad's own facts go in `_meta` (namespaced, as the protocol asks).
const TEAM_KEY: &str = "squad/team";
const TASK_KEY: &str = "squad/task";

/// The longest part of a message or a plan a title shows.
const TITLE_TEXT: usize = 80;

/// What the translator keeps of the team.
#[derive(Default)]
pub(super) struct TeamView {
    fold: TeamNewsFold,
    roles: HashMap<AgentId, String>,
    /// Messages sent and not yet delivered: id → (from, to, text).
    owed: BTreeMap<u64, (AgentId, AgentId, String)>,
    /// Plans awaiting a decision: (worker, plan id) → the plan.
    plans: HashMap<(AgentId, u64), String>,
}

fn meta(key: &str, value: Value) -> Meta {
    let mut m = Meta::new();
    m.insert(key.to_string(), value);
    m
}

impl Translator {
    /// The team's news in `event`, shown besides what the event itself shows.
    pub(super) fn team_event(&mut self, event: &Event) {
        let agent = event.agent_id;
        if let EventKind::AgentSpawned { role, .. } = &event.kind {
            self.team.roles.insert(agent, role.clone());
        }
        if let EventKind::SessionStarted { role, .. } = &event.kind {
            self.team.roles.entry(agent).or_insert_with(|| role.clone());
        }
        if let EventKind::AgentMessagesDelivered { message_ids, .. } = &event.kind {
            for id in message_ids {
                self.message_delivered(*id);
            }
        }
        let Some(news) = self.team.fold.observe(event) else {
            return;
        };
        let line = news.line(|a| self.who(a), TITLE_TEXT);
        match news {
            TeamNews::Message {
                from,
                to,
                message_id,
                text,
            } => self.message_sent(from, to, message_id, text, line),
            TeamNews::Took { holder, .. } | TeamNews::GaveBack { holder, .. } => {
                self.worker_line(holder, &line, true);
            }
            TeamNews::PlanSubmitted {
                worker,
                plan_id,
                plan,
            } => self.plan_submitted(worker, plan_id, plan, line),
            TeamNews::PlanDecided {
                worker,
                plan_id,
                approved,
                reason,
                by,
            } => {
                let status = if approved {
                    ToolCallStatus::Completed
                } else {
                    ToolCallStatus::Failed
                };
                let plan = self.team.plans.remove(&(worker, plan_id));
                let mut content: Vec<_> = plan.into_iter().map(text_content).collect();
                content.push(text_content(line.clone()));
                let facts = json!({
                    "event": "plan_decided", "planId": plan_id,
                    "agentId": worker.to_string(), "agent": self.who(worker),
                    "approved": approved, "reason": reason,
                    "by": by.map(|b| b.to_string()), "byName": by.map(|b| self.who(b)),
                });
                let fields = ToolCallUpdateFields::new()
                    .title(line)
                    .status(status)
                    .content(content);
                let update = ToolCallUpdate::new(plan_call(worker, plan_id), fields)
                    .meta(meta(TEAM_KEY, facts));
                let session = self.supervisor_session(worker);
                self.send(&session, SessionUpdate::ToolCallUpdate(update));
            }
        }
    }

    /// `coder 1a2b3c4d`, or the persona's role alone.
    pub(super) fn who(&self, id: AgentId) -> String {
        match self.team.roles.get(&id) {
            Some(role) if id == self.root => role.clone(),
            Some(role) => format!("{role} {}", id.short()),
            None => format!("agent {}", id.short()),
        }
    }

    /// A task as an entry of the plan: its title, then who holds it (and whether it
    /// claimed it) and the paths it leases while it runs (declares otherwise).
    pub(super) fn plan_entry(&self, t: &Task) -> PlanEntry {
        let status = match t.status {
            TaskStatus::Running => PlanEntryStatus::InProgress,
            s if s.is_final() => PlanEntryStatus::Completed,
            _ => PlanEntryStatus::Pending,
        };
        let mut content = t.title.clone();
        if let Some(a) = t.assignee {
            let how = if t.claimed { " claimed" } else { "" };
            content.push_str(&format!(" · {}{how}", self.who(a)));
        }
        let lease = t.status == TaskStatus::Running && t.assignee.is_some();
        if !t.paths.is_empty() {
            let word = if lease { "lease" } else { "paths" };
            content.push_str(&format!(" · {word} {}", t.paths.join(", ")));
        }
        let facts = json!({
            "id": t.id, "status": t.status.as_str(),
            "owner": t.assignee.map(|a| a.to_string()), "ownerName": t.assignee.map(|a| self.who(a)),
            "claimed": t.claimed, "paths": t.paths, "lease": lease && !t.paths.is_empty(),
        });
        PlanEntry::new(content, PlanEntryPriority::Medium, status).meta(meta(TASK_KEY, facts))
    }

    /// An agent's own session: its child session, or the one it is shown in.
    fn own_session(&self, agent: AgentId) -> String {
        self.views
            .get(&agent)
            .map_or_else(|| self.session_id.clone(), |v| v.session_id.clone())
    }

    /// Where a worker's supervisor is shown: the session its worker was announced in.
    fn supervisor_session(&self, worker: AgentId) -> String {
        match self.views.get(&worker) {
            Some(v) => match &v.as_call {
                Some((session, _)) => session.clone(),
                None => v.parent_session.clone(),
            },
            None => self.session_id.clone(),
        }
    }

    fn message_facts(&self, event: &str, id: u64, from: AgentId, to: AgentId) -> Meta {
        meta(
            TEAM_KEY,
            json!({
                "event": event, "messageId": id,
                "agentId": from.to_string(), "agent": self.who(from),
                "to": to.to_string(), "toName": self.who(to),
            }),
        )
    }

    fn message_sent(&mut self, from: AgentId, to: AgentId, id: u64, text: String, line: String) {
        let facts = self.message_facts("message", id, from, to);
        let (sender, recipient) = (self.own_session(from), self.own_session(to));
        self.team.owed.insert(id, (from, to, text.clone()));
        if self.subagents {
            let m = between(format!("message-{id}"), &sender, &recipient, text)
                .recipient_message_id(MessageId::from(format!("message-{id}-in")))
                .meta(facts);
            self.send(&sender, SessionUpdate::SessionMessage(m));
        } else {
            let call = ToolCall::new(format!("message-{id}"), line)
                .kind(ToolKind::Other)
                .status(ToolCallStatus::InProgress)
                .content(vec![text_content(text.clone())])
                .raw_input(json!({"to": to.to_string(), "text": text}))
                .meta(facts);
            self.send(&self.shown_session(from), SessionUpdate::ToolCall(call));
        }
    }

    fn message_delivered(&mut self, id: u64) {
        let Some((from, to, text)) = self.team.owed.remove(&id) else {
            return;
        };
        let facts = self.message_facts("message_delivered", id, from, to);
        if self.subagents {
            let (sender, recipient) = (self.own_session(from), self.own_session(to));
            let m = between(format!("message-{id}-in"), &sender, &recipient, text)
                .sender_message_id(MessageId::from(format!("message-{id}")))
                .meta(facts);
            self.send(&recipient, SessionUpdate::SessionMessage(m));
        } else {
            let fields = ToolCallUpdateFields::new().status(ToolCallStatus::Completed);
            let update = ToolCallUpdate::new(format!("message-{id}"), fields).meta(facts);
            self.send(
                &self.shown_session(from),
                SessionUpdate::ToolCallUpdate(update),
            );
        }
    }

    fn plan_submitted(&mut self, worker: AgentId, plan_id: u64, plan: String, line: String) {
        let facts = json!({
            "event": "plan_submitted", "planId": plan_id,
            "agentId": worker.to_string(), "agent": self.who(worker),
        });
        let call = ToolCall::new(plan_call(worker, plan_id), line)
            .kind(ToolKind::Think)
            .status(ToolCallStatus::Pending)
            .content(vec![text_content(plan.clone())])
            .raw_input(json!({"plan": plan}))
            .meta(meta(TEAM_KEY, facts));
        self.team.plans.insert((worker, plan_id), plan);
        self.send(
            &self.supervisor_session(worker),
            SessionUpdate::ToolCall(call),
        );
    }
}

/// A message from one session to another, its text the content.
fn between(id: String, from: &str, to: &str, text: String) -> SessionMessage {
    SessionMessage::new(id)
        .sender_session_id(SessionId::from(from.to_string()))
        .recipient_session_id(SessionId::from(to.to_string()))
        .content(vec![ContentBlock::from(text)])
}

/// The tool call that stands for a worker's plan.
fn plan_call(worker: AgentId, plan_id: u64) -> String {
    format!("plan-{worker}-{plan_id}")
}
