//! A batch as the screen shows it: the status bar reads `batch` (its progress and ETA)
//! while it runs, and its start, each row that failed or went again, and its end are
//! lines in the conversation of the agent that runs it.

use super::{EntryKind, SessionState};
use crate::protocol::{AgentId, BatchStep, BatchUpdate, RowState};
use std::time::Instant;

impl SessionState {
    pub(super) fn batch_update(&mut self, id: AgentId, update: &BatchUpdate, now: Instant) {
        let finished = matches!(update.step, BatchStep::Finished { .. });
        self.batch = (!finished).then(|| (update.batch.clone(), update.progress));
        // A done row is counted in the bar; the rest are worth a line.
        let quiet = matches!(&update.step, BatchStep::Row(r) if r.state == RowState::Done);
        let Some(line) = update.line().filter(|_| !quiet) else {
            return;
        };
        let entry = match &update.step {
            BatchStep::Row(r) if r.state == RowState::Failed => EntryKind::Warning(line),
            _ => EntryKind::Notice(line),
        };
        self.agent_entry(id, now).conversation.push(entry);
    }
}
