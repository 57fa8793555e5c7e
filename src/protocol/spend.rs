//! The spend fold: per agent, what it spent (calls, tokens, dollars), what it was quoted,
//! and the facts that make a spend wasted (its result never read, cancelled before one,
//! failed checks never corrected, no tool call of work, identical calls repeated). Folded
//! from the event stream, so the runtime, a resumed session and the TUI tell the same.
//! A selector, not one of the exhaustive folds: it picks the kinds it needs.

use super::quote::{QuoteVsActual, WasteKind, WasteLine, WasteReport, WastedBy, WorkerQuote};
use super::{AgentId, AgentStatus, Event, EventKind, HistoryItem};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Tools that report or talk rather than work: a report whose worker called only these
/// made no tool call of work.
pub(crate) const NOT_WORK: [&str; 3] = ["return_results", "message_supervisor", "message_agent"];

#[derive(Clone, Debug, Default)]
pub struct SpendTally {
    agents: HashMap<AgentId, Spent>,
    /// Spawn order, for reports that name agents in the order they came.
    order: Vec<AgentId>,
    /// Workers quoted and being spawned (not from events: `runtime/quote` holds them
    /// until each is started or refused).
    pending: HashMap<AgentId, WorkerQuote>,
    /// The prompt-and-tools prefixes of the workers quoted so far.
    prefixes: HashSet<u64>,
    /// Workers whose result went to this supervisor, until its next model call reads it.
    unread: HashMap<AgentId, Vec<AgentId>>,
}

/// One agent's spend and the facts about it.
#[derive(Clone, Debug, Default)]
pub struct Spent {
    /// Its `agent_spawned` was seen (a quote may come before it).
    spawned: bool,
    pub role: String,
    pub worker: bool,
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_usd: f64,
    /// The server's prompt tokens of its first model call.
    pub first_prompt: Option<u64>,
    pub quote: Option<WorkerQuote>,
    pub status: AgentStatus,
    /// It returned a result at least once.
    pub returned: bool,
    /// Its latest result went up and no model call of its supervisor has read it yet
    /// (given to the supervisor is not read: a session can end before its next call).
    owed: bool,
    /// Despawned, or cancelled, before any result.
    cancelled_early: bool,
    /// Its latest checked result failed and nothing passed since.
    failed_checks: bool,
    /// Tool calls of work (not reporting nor messaging).
    work_calls: u64,
    /// A result returned with no tool call of work before it.
    empty_report: bool,
    /// Calls seen, by a hash of name and arguments.
    seen: HashSet<u64>,
    /// The last model call's tokens and dollars, for the calls its answer made.
    last_call: (u64, f64),
    repeated_tokens: u64,
    repeated_usd: f64,
}

impl Spent {
    pub fn tokens(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }

    /// Done with its task: a result went up and it runs no more.
    pub fn finished(&self) -> bool {
        self.returned
            && matches!(
                self.status,
                AgentStatus::Inactive | AgentStatus::Completed | AgentStatus::Failed
            )
    }

    /// Still running (or about to): it may spend more.
    pub fn live(&self) -> bool {
        let busy = matches!(
            self.status,
            AgentStatus::Running | AgentStatus::Waiting | AgentStatus::Paused
        );
        let not_started = self.status == AgentStatus::Inactive && self.calls == 0;
        !self.cancelled_early && !self.returned && (busy || not_started)
    }
}

impl SpendTally {
    /// Folds one event in.
    pub fn observe(&mut self, ev: &Event) {
        let id = ev.agent_id;
        if let EventKind::AgentSpawned {
            parent_id, role, ..
        } = &ev.kind
        {
            self.pending.remove(&id);
            // Its quote came first (`quote`, then `agent_spawned`): its entry may be there.
            if !self.agents.get(&id).is_some_and(|s| s.spawned) {
                self.order.push(id);
            }
            let s = self.entry(id);
            s.spawned = true;
            s.role = role.clone();
            s.worker = parent_id.is_some();
        } else if let EventKind::Quote(q) = &ev.kind {
            for w in &q.workers {
                if w.prefix != 0 {
                    self.prefixes.insert(w.prefix);
                }
                if let Some(a) = w.agent_id {
                    self.entry(a).quote = Some(w.clone());
                }
            }
        } else if let EventKind::Usage {
            prompt_tokens,
            completion_tokens,
            cost_usd,
            context_window,
            ..
        } = &ev.kind
        {
            let s = self.entry(id);
            s.usage(
                *prompt_tokens,
                *completion_tokens,
                *cost_usd,
                *context_window,
            );
            // A model call of a supervisor read what was given to it before.
            for w in self.unread.remove(&id).unwrap_or_default() {
                self.entry(w).owed = false;
            }
        } else if let EventKind::ItemAdded {
            item: HistoryItem::Assistant { tool_calls, .. },
        } = &ev.kind
        {
            let calls = tool_calls
                .iter()
                .map(|c| (c.name.clone(), canonical(&c.arguments)))
                .collect();
            self.entry(id).answered(calls);
        } else {
            self.outcome(id, &ev.kind);
        }
    }

    /// The events that tell what became of an agent's work.
    fn outcome(&mut self, id: AgentId, kind: &EventKind) {
        if let EventKind::Verification(v) = kind {
            if !v.unchecked {
                self.entry(id).failed_checks = !v.passed;
            }
        } else if let EventKind::ResultReturned { .. } = kind {
            let s = self.entry(id);
            s.empty_report |= s.work_calls == 0;
            s.returned = true;
            s.owed = true;
        } else if let EventKind::ResultDelivered { parent_id } = kind {
            if self.agents.get(&id).is_some_and(|s| s.owed) {
                self.unread.entry(*parent_id).or_default().push(id);
            }
        } else if let EventKind::Despawned { .. } = kind {
            self.entry(id).cancel();
        } else if let EventKind::AgentStatus { status, .. } = kind {
            let s = self.entry(id);
            s.status = *status;
            if *status == AgentStatus::Cancelled {
                s.cancel();
            }
        }
    }

    fn entry(&mut self, id: AgentId) -> &mut Spent {
        self.agents.entry(id).or_default()
    }

    pub fn get(&self, id: AgentId) -> Option<&Spent> {
        self.agents.get(&id)
    }

    /// Workers in spawn order.
    pub fn workers(&self) -> impl Iterator<Item = (AgentId, &Spent)> {
        self.order
            .iter()
            .filter_map(|id| self.agents.get(id).map(|s| (*id, s)))
            .filter(|(_, s)| s.worker)
    }

    /// A worker quoted and being spawned, counted beside the live ones.
    pub fn hold(&mut self, id: AgentId, quote: WorkerQuote) {
        if !self.agents.get(&id).is_some_and(|s| s.spawned) {
            self.pending.insert(id, quote);
        }
    }

    pub fn unhold(&mut self, id: AgentId) {
        self.pending.remove(&id);
    }

    /// Spawns being quoted: how many, and their quotes' tokens and dollars.
    pub fn pending(&self) -> (u32, u64, f64) {
        let q = self.pending.values();
        let n = q.len() as u32;
        let (t, c) = q.fold((0, 0.0), |(t, c), w| (t + w.tokens(), c + w.cost_usd));
        (n, t, c)
    }

    /// Prefixes of the workers quoted so far (a later one's is served from the cache).
    pub fn prefixes(&self) -> HashSet<u64> {
        self.prefixes.clone()
    }

    /// What the live quoted workers are still projected to spend: each one's quote less
    /// what it spent, never below nothing.
    pub fn outstanding(&self) -> (u64, f64) {
        let mut out = (0, 0.0);
        for (_, s) in self.workers().filter(|(_, s)| s.live()) {
            if let Some(q) = &s.quote {
                out.0 += q.tokens().saturating_sub(s.tokens());
                out.1 += (q.cost_usd - s.cost_usd).max(0.0);
            }
        }
        out
    }

    /// The quote beside the actual, per role, for the workers that were quoted.
    pub fn quote_vs_actual(&self) -> Vec<QuoteVsActual> {
        let mut by_role: BTreeMap<String, QuoteVsActual> = BTreeMap::new();
        for (_, s) in self.workers() {
            let Some(q) = &s.quote else { continue };
            let r = by_role
                .entry(s.role.clone())
                .or_insert_with(|| QuoteVsActual {
                    role: s.role.clone(),
                    ..QuoteVsActual::default()
                });
            r.workers += 1;
            r.quoted_tokens += q.tokens();
            r.quoted_cost_usd += q.cost_usd;
            r.actual_tokens += s.tokens();
            r.actual_cost_usd += s.cost_usd;
        }
        by_role.into_values().collect()
    }

    /// What was spent for nothing, one line per kind.
    pub fn waste(&self) -> WasteReport {
        let mut lines: BTreeMap<WasteKind, WasteLine> = BTreeMap::new();
        for (id, s) in self.workers() {
            let whole = (s.tokens(), s.cost_usd);
            let kinds = [
                (WasteKind::Unread, s.owed && !s.cancelled_early, whole),
                (
                    WasteKind::Cancelled,
                    s.cancelled_early && !s.returned,
                    whole,
                ),
                (WasteKind::FailedChecks, s.failed_checks, whole),
                (WasteKind::NoToolCalls, s.empty_report, whole),
                (
                    WasteKind::Repeated,
                    s.repeated_tokens > 0,
                    (s.repeated_tokens, s.repeated_usd),
                ),
            ];
            for (kind, wasted, (tokens, cost_usd)) in kinds {
                if !wasted {
                    continue;
                }
                let line = lines.entry(kind).or_insert_with(|| WasteLine {
                    kind,
                    tokens: 0,
                    cost_usd: 0.0,
                    agents: Vec::new(),
                });
                line.tokens += tokens;
                line.cost_usd += cost_usd;
                line.agents.push(WastedBy {
                    agent_id: id,
                    role: s.role.clone(),
                    tokens,
                    cost_usd,
                });
            }
        }
        WasteReport {
            lines: lines.into_values().collect(),
        }
    }
}

impl Spent {
    fn usage(&mut self, prompt: u64, completion: u64, cost: f64, window: u64) {
        // A call outside the conversation (a summary) has no window: spend, not a call.
        if window > 0 || self.calls == 0 {
            self.calls += 1;
            self.first_prompt.get_or_insert(prompt);
        }
        self.prompt_tokens += prompt;
        self.completion_tokens += completion;
        self.cost_usd += cost;
        self.last_call = (prompt + completion, cost);
    }

    /// An answer with these calls: the work counted, and the share of its model call
    /// that only repeated calls made before.
    fn answered(&mut self, calls: Vec<(String, String)>) {
        let total = calls.len();
        let mut repeats = 0;
        for call in calls {
            if !NOT_WORK.contains(&call.0.as_str()) {
                self.work_calls += 1;
            }
            let mut h = std::collections::hash_map::DefaultHasher::new();
            std::hash::Hash::hash(&call, &mut h);
            if !self.seen.insert(std::hash::Hasher::finish(&h)) {
                repeats += 1;
            }
        }
        if repeats > 0 {
            let share = repeats as f64 / total as f64;
            self.repeated_tokens += (self.last_call.0 as f64 * share).round() as u64;
            self.repeated_usd += self.last_call.1 * share;
        }
    }

    /// Despawned or cancelled: before a result, all it spent went for nothing; after one
    /// nobody read, it stays unread.
    fn cancel(&mut self) {
        if !self.returned {
            self.cancelled_early = true;
        }
    }
}

/// Arguments compared by value, not by their text: keys sorted (the crate keeps JSON
/// objects in the order they came), spaces aside.
fn canonical(args: &str) -> String {
    serde_json::from_str::<serde_json::Value>(args)
        .map(|v| sorted(v).to_string())
        .unwrap_or_else(|_| args.to_string())
}

fn sorted(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Object(map) => {
            let mut pairs: Vec<(String, Value)> = map.into_iter().collect();
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(pairs.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{AgentResult, ToolCall, Verdict};

    struct Log {
        tally: SpendTally,
        seq: u64,
    }

    impl Log {
        fn new() -> Self {
            Self {
                tally: SpendTally::default(),
                seq: 0,
            }
        }

        fn ev(&mut self, agent_id: AgentId, kind: EventKind) -> &mut Self {
            self.seq += 1;
            let ev = Event {
                seq: self.seq,
                ts: 0,
                agent_id,
                kind,
            };
            self.tally.observe(&ev);
            self
        }

        fn spawn(&mut self, id: AgentId, parent: AgentId) -> &mut Self {
            self.ev(
                id,
                EventKind::AgentSpawned {
                    parent_id: Some(parent),
                    role: "implementer".into(),
                    model: "m".into(),
                    task: "t".into(),
                    depth: 1,
                },
            )
        }

        fn usage(&mut self, id: AgentId, prompt: u64) -> &mut Self {
            self.ev(
                id,
                EventKind::Usage {
                    model: "m".into(),
                    prompt_tokens: prompt,
                    completion_tokens: 10,
                    cost_usd: 0.01,
                    context_tokens: prompt,
                    context_window: 1_000_000,
                    cached_tokens: 0,
                },
            )
        }

        fn calls(&mut self, id: AgentId, calls: &[(&str, &str)]) -> &mut Self {
            let tool_calls = calls
                .iter()
                .enumerate()
                .map(|(i, (name, args))| ToolCall {
                    id: format!("c{i}"),
                    name: (*name).into(),
                    arguments: (*args).into(),
                })
                .collect();
            self.ev(
                id,
                EventKind::ItemAdded {
                    item: HistoryItem::assistant(String::new(), tool_calls),
                },
            )
        }

        fn returns(&mut self, id: AgentId, parent: AgentId) -> &mut Self {
            self.ev(
                id,
                EventKind::ResultReturned {
                    parent_id: Some(parent),
                    result: AgentResult {
                        status: crate::protocol::ResultStatus::Success,
                        summary: "done".into(),
                        artifacts: Vec::new(),
                        known_issues: Vec::new(),
                        verification: None,
                        merge: None,
                        completed_at: None,
                    },
                },
            )
            .status(id, AgentStatus::Completed)
        }

        fn status(&mut self, id: AgentId, status: AgentStatus) -> &mut Self {
            self.ev(
                id,
                EventKind::AgentStatus {
                    parent_id: None,
                    status,
                    reason: None,
                },
            )
        }

        fn named(&self, kind: WasteKind) -> Vec<AgentId> {
            let waste = self.tally.waste();
            let line = waste.lines.iter().find(|l| l.kind == kind);
            line.map(|l| l.agents.iter().map(|a| a.agent_id).collect())
                .unwrap_or_default()
        }
    }

    #[test]
    fn a_result_given_to_a_supervisor_is_read_only_at_its_next_model_call() {
        let (root, w) = (AgentId::new(), AgentId::new());
        let mut log = Log::new();
        log.spawn(w, root).usage(w, 100);
        log.calls(w, &[("read_file", r#"{"path":"a"}"#)]);
        log.usage(w, 200).calls(w, &[("return_results", "{}")]);
        log.returns(w, root);
        log.ev(w, EventKind::ResultDelivered { parent_id: root });
        assert_eq!(log.named(WasteKind::Unread), [w], "given, not read yet");
        log.usage(root, 500);
        assert!(log.named(WasteKind::Unread).is_empty());
        assert!(
            log.named(WasteKind::NoToolCalls).is_empty(),
            "it read a file"
        );
        assert!(log.tally.get(w).is_some_and(Spent::finished));
    }

    #[test]
    fn each_kind_of_waste_names_its_workers() {
        let root = AgentId::new();
        let [quiet, gone, wrong, again] = [(); 4].map(|_| AgentId::new());
        let mut log = Log::new();
        for w in [quiet, gone, wrong, again] {
            log.spawn(w, root).usage(w, 100);
        }
        // Reports at once: no tool call of work.
        log.calls(quiet, &[("return_results", "{}")])
            .returns(quiet, root);
        // Despawned before any result.
        log.ev(
            gone,
            EventKind::Despawned {
                parent_id: Some(root),
            },
        );
        // Its checked result failed, nothing passed since.
        log.calls(wrong, &[("write_file", r#"{"path":"x"}"#)]);
        log.ev(
            wrong,
            EventKind::Verification(Verdict {
                passed: false,
                ..Verdict::default()
            }),
        );
        // The same call twice, its keys in another order: the second call's spend.
        log.calls(again, &[("search", r#"{"q":"a","path":"."}"#)]);
        log.usage(again, 300);
        log.calls(again, &[("search", r#"{"path": ".", "q": "a"}"#)]);
        assert_eq!(log.named(WasteKind::NoToolCalls), [quiet]);
        assert_eq!(log.named(WasteKind::Cancelled), [gone]);
        assert_eq!(log.named(WasteKind::FailedChecks), [wrong]);
        assert_eq!(log.named(WasteKind::Repeated), [again]);
        let waste = log.tally.waste();
        let repeated = waste.lines.iter().find(|l| l.kind == WasteKind::Repeated);
        assert_eq!(repeated.map(|l| l.tokens), Some(310));
        // A check that passes later corrects it.
        log.ev(
            wrong,
            EventKind::Verification(Verdict {
                passed: true,
                ..Verdict::default()
            }),
        );
        assert!(log.named(WasteKind::FailedChecks).is_empty());
    }

    #[test]
    fn a_quote_before_its_spawn_is_counted_once_and_held_until_then() {
        let (root, w) = (AgentId::new(), AgentId::new());
        let mut log = Log::new();
        let quote = WorkerQuote {
            agent_id: Some(w),
            role: "implementer".into(),
            prompt_tokens: 1_000,
            completion_tokens: 100,
            ..WorkerQuote::default()
        };
        log.tally.hold(w, quote.clone());
        assert_eq!(log.tally.pending(), (1, 1_100, 0.0));
        log.ev(
            root,
            EventKind::Quote(crate::protocol::Quote {
                workers: vec![quote],
                ..Default::default()
            }),
        );
        log.spawn(w, root)
            .status(w, AgentStatus::Running)
            .usage(w, 400);
        assert_eq!(log.tally.pending().0, 0, "spawned: live, not pending");
        assert_eq!(log.tally.workers().count(), 1);
        assert_eq!(log.tally.outstanding().0, 1_100 - 410);
        let vs = log.tally.quote_vs_actual();
        assert_eq!((vs[0].quoted_tokens, vs[0].actual_tokens), (1_100, 410));
    }
}
