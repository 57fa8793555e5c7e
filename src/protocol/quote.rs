//! What a fan-out is projected to cost before it starts (issue 55 part 1), what was spent
//! for nothing afterwards (part 3), and the quote beside the actual per role, so a user
//! learns whether to trust the next quote. The figures are made by `runtime/quote` and
//! folded back from the event stream by [`super::SpendTally`].

use super::{AgentId, dollars, thousands};
use serde::{Deserialize, Serialize};

/// One worker's projected spend: its first request (known before it starts), the model
/// calls and tokens this session's finished workers of its role took (or the default).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkerQuote {
    /// The worker it is for; `None` before it has an id (a batch's rows).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    pub role: String,
    pub model: String,
    /// Its first request: its prompt, its tools and its task, as the server will count them.
    pub first_request_tokens: u64,
    /// Of those, the prefix (prompt and tools) an earlier request of this session already
    /// sent, which a server's prompt cache serves.
    pub shared_prefix_tokens: u64,
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Of the prompt tokens, those a prompt cache would serve (every request repeats the
    /// one before it, and the shared prefix).
    pub cached_tokens: u64,
    /// At `[prices]` (cached tokens at the full input price); 0 without a price.
    pub cost_usd: f64,
    /// Finished workers of its role this is projected from; 0: the stated default.
    pub basis: u32,
    /// Tells its prompt-and-tools prefix apart from others' (live only): a later worker
    /// with the same one has it served from the cache.
    #[serde(skip)]
    pub prefix: u64,
}

impl WorkerQuote {
    pub fn tokens(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

/// A spawn's (or a batch's) quote: the new workers, what the live ones are still
/// projected to spend, and what the caller has left.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Quote {
    pub workers: Vec<WorkerQuote>,
    /// Workers already running (or being spawned) beside them.
    pub live_workers: u32,
    /// What those are still projected to spend: their quote less what they spent.
    pub live_tokens: u64,
    pub live_cost_usd: f64,
    /// New and live together.
    pub tokens: u64,
    pub cost_usd: f64,
    /// The caller's budget not yet spent nor set aside; `None`: no limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left_usd: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left_tokens: Option<u64>,
    /// The spawn brings the live workers past `[limits] quote_past_workers` (or it is a
    /// batch): shown in the approval and refused when above what is left.
    pub fan_out: bool,
}

impl Quote {
    /// Sums the new workers and the live ones' outstanding spend into the totals.
    pub fn total(mut self) -> Self {
        self.tokens = self.live_tokens + self.workers.iter().map(WorkerQuote::tokens).sum::<u64>();
        self.cost_usd = self.live_cost_usd + self.workers.iter().map(|w| w.cost_usd).sum::<f64>();
        self
    }

    /// Why the quote passes what is left, naming both figures; `None` when it fits.
    pub fn over_budget(&self) -> Option<String> {
        if let Some(left) = self.left_usd
            && self.cost_usd > left + 1e-9
        {
            return Some(format!(
                "this spawn's quote is {} ({}), above the {} left of the budget",
                dollars(self.cost_usd),
                self.scope(),
                dollars(left.max(0.0))
            ));
        }
        if let Some(left) = self.left_tokens
            && self.tokens > left
        {
            return Some(format!(
                "this spawn's quote is {} tokens ({}), above the {} tokens left of the budget",
                thousands(self.tokens),
                self.scope(),
                thousands(left)
            ));
        }
        None
    }

    fn scope(&self) -> String {
        let new = self.workers.len();
        let mut s = format!("{new} new worker{}", if new == 1 { "" } else { "s" });
        if self.live_workers > 0 {
            s.push_str(&format!(" and {} running", self.live_workers));
        }
        s
    }

    /// Lines for a person: the total, then each new worker.
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![format!(
            "quote: {} tokens, {} ({})",
            thousands(self.tokens),
            dollars(self.cost_usd),
            self.scope()
        )];
        if self.live_workers > 0 {
            out.push(format!(
                "  running workers still to spend: {} tokens, {}",
                thousands(self.live_tokens),
                dollars(self.live_cost_usd)
            ));
        }
        for w in &self.workers {
            let basis = match w.basis {
                0 => "default: no finished worker of its role yet".to_string(),
                n => format!("from {n} finished {}", w.role),
            };
            out.push(format!(
                "  {} on {}: first request {} tokens ({} a cached prefix), ~{} calls, {} tokens, {} ({basis})",
                w.role,
                w.model,
                thousands(w.first_request_tokens),
                thousands(w.shared_prefix_tokens),
                w.calls,
                thousands(w.tokens()),
                dollars(w.cost_usd)
            ));
        }
        if let Some(left) = self.left_usd {
            out.push(format!("  left of the budget: {}", dollars(left.max(0.0))));
        }
        out
    }
}

/// The quote beside the actual, for one role's quoted workers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct QuoteVsActual {
    pub role: String,
    pub workers: u32,
    pub quoted_tokens: u64,
    pub actual_tokens: u64,
    pub quoted_cost_usd: f64,
    pub actual_cost_usd: f64,
}

impl QuoteVsActual {
    /// `implementer: 3 workers quoted 41.2k tokens ($0.12), spent 38.9k ($0.11), -6%`.
    pub fn line(&self) -> String {
        let off = if self.quoted_tokens > 0 {
            let d = self.actual_tokens as f64 / self.quoted_tokens as f64 - 1.0;
            format!(", {:+.0}%", d * 100.0)
        } else {
            String::new()
        };
        format!(
            "{}: {} worker{} quoted {} tokens ({}), spent {} ({}){off}",
            self.role,
            self.workers,
            if self.workers == 1 { "" } else { "s" },
            thousands(self.quoted_tokens),
            dollars(self.quoted_cost_usd),
            thousands(self.actual_tokens),
            dollars(self.actual_cost_usd)
        )
    }
}

/// What a spend was wasted on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WasteKind {
    /// A result went up and was never given to its supervisor.
    Unread,
    /// Despawned or cancelled before it returned a result.
    Cancelled,
    /// Its last result failed verification and was never corrected.
    FailedChecks,
    /// It reported without a single tool call of work.
    NoToolCalls,
    /// The model calls that only repeated a call the agent had made before, identically.
    Repeated,
}

impl WasteKind {
    pub fn label(self) -> &'static str {
        match self {
            Self::Unread => "results nobody read",
            Self::Cancelled => "despawned or cancelled before a result",
            Self::FailedChecks => "results that failed verification, never corrected",
            Self::NoToolCalls => "reports made with zero tool calls",
            Self::Repeated => "repeated identical calls",
        }
    }
}

/// One agent named on a waste line.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WastedBy {
    pub agent_id: AgentId,
    pub role: String,
    pub tokens: u64,
    pub cost_usd: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WasteLine {
    pub kind: WasteKind,
    pub tokens: u64,
    pub cost_usd: f64,
    pub agents: Vec<WastedBy>,
}

impl WasteLine {
    /// `results nobody read: 12.4k tokens, $0.03 — 1a2b3c4d (implementer)`.
    pub fn line(&self) -> String {
        let who: Vec<String> = self
            .agents
            .iter()
            .map(|a| format!("{} ({})", a.agent_id.short(), a.role))
            .collect();
        format!(
            "{}: {} tokens, {} — {}",
            self.kind.label(),
            thousands(self.tokens),
            dollars(self.cost_usd),
            who.join(", ")
        )
    }
}

/// What was spent for nothing, one line per kind that has any; an agent may be on more
/// than one line, so the lines are not summed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WasteReport {
    pub lines: Vec<WasteLine>,
}

impl WasteReport {
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}
