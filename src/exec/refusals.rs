//! What exec could not do because it cannot ask: the calls the approval gate refused for
//! want of an answer (`approval_unanswered`), counted by why, and whether any change went
//! through all the same. A run whose every change was refused ends saying so, with the
//! way to allow them, and exits with its own code instead of looking like a success.

use crate::protocol::{EventKind, HistoryItem, Unanswered};

/// Why, in the order the lines are told.
const ORDER: [Unanswered; 3] = [Unanswered::Policy, Unanswered::Escalation, Unanswered::Hook];

#[derive(Default)]
pub struct Refusals {
    /// (why, how many, the tools refused, each once, in the order first met).
    refused: Vec<(Unanswered, usize, Vec<String>)>,
    /// A changing tool's call succeeded: something may have changed.
    changed: bool,
}

/// Whether a successful call of `tool` may have changed files, as its handler says (a
/// command may write; a tool squad does not know, an MCP server's, may too).
fn may_change_files(tool: &str) -> bool {
    crate::runtime::tool_facts(tool, &serde_json::Value::Null).changes_files()
}

/// Whether the event says files may have changed: a changing tool's successful call, or
/// a worker's change merged. Every other kind is neither a refusal nor a change.
fn changes_files(kind: &EventKind) -> bool {
    matches!(kind, EventKind::Merged { .. })
        || matches!(
            kind,
            EventKind::ItemAdded {
                item: HistoryItem::ToolResult { name, is_error: false, .. },
            } if may_change_files(name)
        )
}

impl Refusals {
    pub fn observe(&mut self, kind: &EventKind) {
        if let EventKind::ApprovalUnanswered { tool, why } = kind {
            let i = match self.refused.iter().position(|(w, ..)| w == why) {
                Some(i) => i,
                None => {
                    self.refused.push((*why, 0, Vec::new()));
                    self.refused.len() - 1
                }
            };
            let (_, n, tools) = &mut self.refused[i];
            *n += 1;
            if !tools.contains(tool) {
                tools.push(tool.clone());
            }
        } else if changes_files(kind) {
            self.changed = true;
        }
    }

    /// Some call was refused and none of the changing calls went through.
    pub fn nothing_changed(&self) -> bool {
        !self.refused.is_empty() && !self.changed
    }

    /// The run's last lines: how many calls were refused, why, and how to allow them.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for why in ORDER {
            let Some((_, n, tools)) = self.refused.iter().find(|(w, ..)| *w == why) else {
                continue;
            };
            let calls = if *n == 1 {
                "1 call was".to_string()
            } else {
                format!("{n} calls were")
            };
            let tools = tools.join(", ");
            out.push(match why {
                Unanswered::Policy => format!(
                    "! {calls} refused ({tools}): the approval policy is `ask` and exec cannot \
                     ask; run again with --approval auto to let writes and commands run (or \
                     use `squad`, which asks you)"
                ),
                Unanswered::Escalation => format!(
                    "! {calls} refused ({tools}): leaving the sandbox always asks and exec \
                     cannot ask; run the command yourself, or use `squad`, which asks you"
                ),
                Unanswered::Hook => format!(
                    "! {calls} refused ({tools}): a pre_tool_use hook asks for your approval \
                     and exec cannot ask; use `squad`, which asks you"
                ),
            });
        }
        out
    }
}

/// The reason a run that could change nothing ends with.
pub const NOTHING_CHANGED: &str = "nothing changed: every write and command the agents tried \
     was refused, because exec cannot ask (see above)";

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(tool: &str, why: Unanswered) -> EventKind {
        EventKind::ApprovalUnanswered {
            tool: tool.into(),
            why,
        }
    }

    fn result(name: &str, is_error: bool) -> EventKind {
        EventKind::ItemAdded {
            item: HistoryItem::ToolResult {
                call_id: "c".into(),
                name: name.into(),
                output: String::new(),
                is_error,
            },
        }
    }

    #[test]
    fn nothing_refused_says_nothing() {
        let mut r = Refusals::default();
        r.observe(&result("read_file", false));
        assert!(!r.nothing_changed());
        assert!(r.lines().is_empty());
    }

    #[test]
    fn every_change_refused_is_nothing_changed_and_counts_by_why() {
        let mut r = Refusals::default();
        r.observe(&refused("edit_file", Unanswered::Policy));
        r.observe(&result("edit_file", true));
        r.observe(&refused("edit_file", Unanswered::Policy));
        r.observe(&refused("write_file", Unanswered::Policy));
        r.observe(&refused("run_command", Unanswered::Escalation));
        r.observe(&result("read_file", false));
        assert!(r.nothing_changed());
        let lines = r.lines();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].starts_with("! 3 calls were refused (edit_file, write_file)"));
        assert!(lines[0].contains("--approval auto"));
        assert!(lines[1].starts_with("! 1 call was refused (run_command)"));
    }

    #[test]
    fn a_change_that_went_through_is_no_nothing_changed() {
        let mut r = Refusals::default();
        r.observe(&refused("edit_file", Unanswered::Policy));
        r.observe(&result("run_command", false));
        assert!(!r.nothing_changed());
        assert_eq!(r.lines().len(), 1);
    }
}
