//! What a spawned agent and a history item add to the state: the agent's view in the
//! tree, and the entries of its conversation.

use super::*;

impl SessionState {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn spawn(
        &mut self,
        id: AgentId,
        parent: Option<AgentId>,
        role: &str,
        model: &str,
        task: &str,
        depth: u32,
        now: Instant,
    ) {
        let parent = parent.filter(|p| self.agents.contains_key(p) && *p != id);
        let known = self.agents.contains_key(&id);
        let a = self.agent_entry(id, now);
        a.role = role.to_string();
        a.model = model.to_string();
        a.task = task.to_string();
        a.depth = depth;
        if !known {
            a.spawned_at = now;
        }
        if let Some(p) = parent
            && a.parent.is_none()
        {
            a.parent = Some(p);
            self.roots.retain(|r| *r != id);
            if let Some(pa) = self.agents.get_mut(&p) {
                pa.children.push(id);
            }
        }
        if parent.is_none() && id == self.root_agent {
            self.active_role = role.to_string();
        }
        self.tree_rev += 1;
    }

    pub(super) fn add_item(&mut self, id: AgentId, item: &HistoryItem, now: Instant) {
        if let HistoryItem::Handoff { to, .. } = item
            && id == self.root_agent
        {
            self.active_role = to.clone();
            self.agent_entry(id, now).role = to.clone();
        }
        let a = self.agent_entry(id, now);
        if let HistoryItem::ToolResult { is_error, .. } = item {
            a.figures.tool_calls += 1;
            if *is_error {
                a.figures.tool_errors += 1;
            }
        }
        let conv = &mut a.conversation;
        match item {
            HistoryItem::User { text } => {
                if let Some(i) = a.queued.iter().position(|q| q == text) {
                    a.queued.remove(i);
                }
                a.conversation.push(EntryKind::User(UserEntry::parse(text)));
            }
            HistoryItem::Assistant {
                text, tool_calls, ..
            } => {
                // The committed text supersedes whatever streamed in before it.
                conv.set_streaming(String::new());
                if !text.trim().is_empty() {
                    conv.push(EntryKind::Assistant(text.clone()));
                }
                for c in tool_calls {
                    conv.begin_tool(&c.id, &c.name, &c.arguments);
                }
            }
            HistoryItem::ToolResult {
                call_id,
                name,
                output,
                is_error,
            } => conv.end_tool(call_id, name, output, *is_error),
            HistoryItem::Notice { text } => conv.push(EntryKind::Notice(text.clone())),
            HistoryItem::Summary { text } => conv.push(EntryKind::Notice(format!(
                "summary of the earlier conversation:\n{text}"
            ))),
            HistoryItem::Handoff {
                from, to, reason, ..
            } => conv.push(EntryKind::Handoff {
                from: from.clone(),
                to: to.clone(),
                reason: reason.clone(),
            }),
        }
    }
}
