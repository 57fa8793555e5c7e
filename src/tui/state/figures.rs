//! Figures an agent runs up (tokens, cost, calls, errors), and their sums over a subtree
//! or the whole session.

use super::SessionState;
use crate::protocol::AgentId;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_usd: f64,
    pub model_calls: u64,
    pub tool_calls: u64,
    pub tool_errors: u64,
    pub errors: u64,
}

impl Figures {
    pub fn tokens(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }

    pub fn add(&mut self, o: &Figures) {
        self.prompt_tokens += o.prompt_tokens;
        self.completion_tokens += o.completion_tokens;
        self.cost_usd += o.cost_usd;
        self.model_calls += o.model_calls;
        self.tool_calls += o.tool_calls;
        self.tool_errors += o.tool_errors;
        self.errors += o.errors;
    }
}

impl SessionState {
    /// Figures of an agent and all its descendants (for a collapsed subtree).
    pub fn subtree_figures(&self, id: AgentId) -> Figures {
        let mut total = Figures::default();
        let mut stack = vec![id];
        while let Some(n) = stack.pop() {
            if let Some(a) = self.agents.get(&n) {
                total.add(&a.figures);
                stack.extend(a.children.iter().copied());
            }
        }
        total
    }

    pub fn totals(&self) -> Figures {
        let mut t = Figures::default();
        for a in self.agents.values() {
            t.add(&a.figures);
        }
        t
    }
}
