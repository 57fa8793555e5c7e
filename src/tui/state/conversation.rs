//! One agent's conversation as entries on screen: messages, tool lines (filled in as
//! results arrive), notices, errors and results.

use crate::protocol::{AgentResult, TurnEnd, Verdict};
use std::collections::HashMap;

/// One agent's conversation: durable entries plus the text streaming in right now.
#[derive(Clone, Debug, Default)]
pub struct Conversation {
    pub entries: Vec<Entry>,
    pub streaming: String,
    /// Bumped on every change to `streaming`, so its layout can be cached.
    pub stream_rev: u64,
    tool_index: HashMap<String, usize>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub kind: EntryKind,
    /// Bumped on every change to the entry, so its cached layout knows it is stale.
    pub rev: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub enum EntryKind {
    User(super::UserEntry),
    Assistant(String),
    Tool(ToolEntry),
    Notice(String),
    Handoff {
        from: String,
        to: String,
        reason: String,
    },
    Error(String),
    /// Something that stopped work and needs the user's eye but is no fault (a budget).
    Warning(String),
    Retrying {
        attempt: u32,
        max_attempts: u32,
        reason: String,
    },
    Result(AgentResult),
    /// A result that failed its checks and went back to the worker for correction (a
    /// delivered result shows its verdict on its card instead).
    Verification(Verdict),
    /// The turn stopped early (interrupted, cancelled, out of iterations).
    TurnStopped(TurnEnd),
}

#[derive(Clone, Debug, PartialEq)]
pub struct ToolEntry {
    pub call_id: String,
    pub name: String,
    pub arguments: String,
    /// `None` while the tool runs.
    pub output: Option<String>,
    pub is_error: bool,
    pub duration_ms: Option<u64>,
    pub expanded: bool,
}

impl Conversation {
    pub fn push(&mut self, kind: EntryKind) {
        if let EntryKind::Tool(t) = &kind {
            self.tool_index
                .insert(t.call_id.clone(), self.entries.len());
        }
        self.entries.push(Entry { kind, rev: 0 });
    }

    pub(super) fn set_streaming(&mut self, text: String) {
        self.streaming = text;
        self.stream_rev += 1;
    }

    fn tool_mut(&mut self, call_id: &str) -> Option<&mut Entry> {
        let idx = *self.tool_index.get(call_id)?;
        self.entries.get_mut(idx)
    }

    /// Opens the tool call's line, from the assistant item that makes the call.
    pub(super) fn begin_tool(&mut self, call_id: &str, name: &str, arguments: &str) {
        if self.tool_index.contains_key(call_id) {
            return;
        }
        self.push(EntryKind::Tool(ToolEntry {
            call_id: call_id.to_string(),
            name: name.to_string(),
            arguments: arguments.to_string(),
            output: None,
            is_error: false,
            duration_ms: None,
            expanded: false,
        }));
    }

    /// Fills in a call's result (opening its line if the call was never seen).
    pub(super) fn end_tool(&mut self, call_id: &str, name: &str, output: &str, is_error: bool) {
        if !self.tool_index.contains_key(call_id) {
            self.begin_tool(call_id, name, "");
        }
        if let Some(e) = self.tool_mut(call_id)
            && let EntryKind::Tool(t) = &mut e.kind
        {
            t.output = Some(output.to_string());
            t.is_error = is_error;
            e.rev += 1;
        }
    }

    /// How long a call ran, from its live `tool_call_end`.
    pub(super) fn set_tool_duration(&mut self, call_id: &str, duration_ms: u64) {
        if let Some(e) = self.tool_mut(call_id)
            && let EntryKind::Tool(t) = &mut e.kind
        {
            t.duration_ms = Some(duration_ms);
            e.rev += 1;
        }
    }

    /// Flips a tool line between one line and its full arguments and output, or a
    /// message's attachments between one line each and their text.
    pub fn toggle_tool(&mut self, idx: usize) -> bool {
        let Some(entry) = self.entries.get_mut(idx) else {
            return false;
        };
        match &mut entry.kind {
            EntryKind::Tool(t) => t.expanded = !t.expanded,
            EntryKind::User(u) if u.expandable() => u.expanded = !u.expanded,
            _ => return false,
        }
        entry.rev += 1;
        true
    }
}
