//! A quote before a fan-out (issue 55 part 1): what new workers are projected to spend,
//! made before they are approved. Each worker's first request is built the way its
//! requests will be (its role's prompt, its tools, its task) and sized; the prefix an
//! earlier request of the session already sent is what a server's cache serves; its
//! calls and tokens come from this session's finished workers of its role, scaled to its
//! first request, or from the stated default until there are some ([`DEFAULT_CALLS`]).
//! Every spawn is quoted (its `quote` event), so the summary can set each role's quote
//! beside what it spent; a spawn that brings the live workers past
//! `[limits] quote_past_workers` (and every batch) is a fan-out: its quote is shown in
//! the approval and refuses the spawn when above what is left of the caller's budget.
//!
//! For a batch (`spawn_batch`): build a [`Draft`] per row, [`make`] one quote with
//! `batch: true`, then [`publish`] it before the rows start; see the notes in the
//! project's team notes for the call.

mod build;
pub mod draft;

pub use build::first_request;
pub use draft::{Draft, FirstRequest};

use super::agent_tools::Call;
use crate::protocol::{AgentId, EventKind, Quote, Spent, WorkerQuote};

/// Model calls a worker is projected to make until a worker of its role has finished.
pub const DEFAULT_CALLS: u64 = 6;
/// Tokens each call adds to the conversation (a tool's output and the answer that asked
/// for it), by default.
pub const DEFAULT_GROWTH_PER_CALL: u64 = 800;
/// Completion tokens per call, by default.
pub const DEFAULT_COMPLETION_PER_CALL: u64 = 300;

/// What the finished workers of a role spent, summed, to project a new one from.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Basis {
    pub workers: u32,
    pub calls: u64,
    pub prompt: u64,
    pub completion: u64,
    /// The server's count of their first requests, and the estimate their quotes made of
    /// the same requests, over the workers that have both: how the estimate runs.
    pub first_actual: u64,
    pub first_estimate: u64,
    pub calibrated: u32,
}

impl Basis {
    /// Sums the finished workers of `role`.
    pub fn of<'a>(role: &str, workers: impl Iterator<Item = &'a Spent>) -> Basis {
        let mut b = Basis::default();
        for s in workers.filter(|s| s.role == role && s.finished() && s.calls > 0) {
            b.workers += 1;
            b.calls += s.calls;
            b.prompt += s.prompt_tokens;
            b.completion += s.completion_tokens;
            if let (Some(actual), Some(q)) = (s.first_prompt, &s.quote)
                && q.first_request_tokens > 0
            {
                b.first_actual += actual;
                b.first_estimate += q.first_request_tokens;
                b.calibrated += 1;
            }
        }
        b
    }
}

/// The calls, prompt and completion tokens, and cached tokens of a worker whose first
/// request is estimated at `first` tokens (`shared` of them a prefix sent before).
pub fn project(basis: &Basis, first: u64, shared: u64) -> (u64, u64, u64, u64) {
    // How the server counts what the estimate sizes, learned from finished workers.
    let ratio = match basis.first_estimate {
        0 => 1.0,
        e => basis.first_actual as f64 / e as f64,
    };
    let f = first as f64 * ratio;
    let (calls, prompt, completion) = if basis.workers == 0 {
        let c = DEFAULT_CALLS as f64;
        let growth = DEFAULT_GROWTH_PER_CALL as f64 * c * (c - 1.0) / 2.0;
        (
            c,
            c * f + growth,
            (DEFAULT_COMPLETION_PER_CALL * DEFAULT_CALLS) as f64,
        )
    } else {
        let n = f64::from(basis.workers);
        let c = basis.calls as f64 / n;
        // Each call repeats the first request; the rest is what the work added. A worker
        // with a larger task repeats more of it in every call.
        let mean_first = match basis.calibrated {
            0 => f,
            k => basis.first_actual as f64 / f64::from(k),
        };
        let prompt = (basis.prompt as f64 / n + c * (f - mean_first)).max(f);
        (c, prompt, basis.completion as f64 / n)
    };
    // Every call after the first starts with the one before it; a shared prefix serves
    // the first one's start too.
    let cached = (prompt - f - (prompt - calls * f).max(0.0) * 2.0 / calls.max(1.0)).max(0.0)
        + shared as f64 * ratio;
    let calls = calls.round() as u64;
    (
        calls.max(1),
        prompt.round() as u64,
        completion.round() as u64,
        cached.min(prompt).round() as u64,
    )
}

/// The quote of `drafts` spawned by `cx.caller` now, beside the live workers' outstanding
/// spend and what the caller has left. `batch` makes it a fan-out whatever the count.
pub fn make(cx: &Call<'_>, drafts: &[Draft<'_>], batch: bool) -> Quote {
    let config = cx.shared.config;
    let events = cx.team.events();
    let firsts: Vec<FirstRequest> = drafts.iter().map(|d| cx.host.first_request(d)).collect();
    let (workers, live, pending) = events.spend(|tally| {
        let mut seen = tally.prefixes();
        let workers: Vec<WorkerQuote> = drafts
            .iter()
            .zip(&firsts)
            .map(|(d, first)| {
                let shared = if first.prefix != 0 && !seen.insert(first.prefix) {
                    first.prefix_tokens
                } else {
                    0
                };
                let basis = Basis::of(&d.role.name, tally.workers().map(|(_, s)| s));
                let (calls, prompt, completion, cached) = project(&basis, first.tokens, shared);
                WorkerQuote {
                    agent_id: d.agent_id,
                    role: d.role.name.clone(),
                    model: d.model.to_string(),
                    first_request_tokens: first.tokens,
                    shared_prefix_tokens: shared,
                    calls,
                    prompt_tokens: prompt,
                    completion_tokens: completion,
                    cached_tokens: cached,
                    cost_usd: config.cost(d.model, prompt, completion),
                    basis: basis.workers,
                    prefix: first.prefix,
                }
            })
            .collect();
        (workers, tally.outstanding(), tally.pending())
    });
    // The team's live count holds the persona too.
    let live_workers = cx.team.live_count().saturating_sub(1) as u32 + pending.0;
    let threshold = config.limits.quote_past_workers;
    let purse = cx
        .team
        .giver(cx.caller, config.limits.max_live_agents)
        .purse;
    Quote {
        fan_out: batch || live_workers as usize + drafts.len() > threshold as usize,
        workers,
        live_workers,
        live_tokens: live.0 + pending.1,
        live_cost_usd: live.1 + pending.2,
        left_usd: purse.limit.cost_usd.map(|l| l - purse.spent.cost_usd),
        left_tokens: purse
            .limit
            .tokens
            .map(|l| (l - purse.spent.tokens).max(0.0) as u64),
        ..Quote::default()
    }
    .total()
}

/// Tells the quote (a `quote` event on the caller) and holds its workers as being
/// spawned until the returned guard drops, so spawns side by side count each other. A
/// fan-out above what is left is refused with both figures.
pub fn publish<'a>(cx: &Call<'a>, quote: &Quote) -> Result<Held<'a>, String> {
    cx.team
        .events()
        .emit(cx.caller, EventKind::Quote(quote.clone()));
    if quote.fan_out
        && let Some(why) = quote.over_budget()
    {
        return Err(format!(
            "{why}; spawn fewer workers, give them smaller tasks, or ask the user to raise \
             the budget"
        ));
    }
    let ids: Vec<AgentId> = quote.workers.iter().filter_map(|w| w.agent_id).collect();
    cx.team.events().spend_mut(|t| {
        for w in &quote.workers {
            if let Some(id) = w.agent_id {
                t.hold(id, w.clone());
            }
        }
    });
    Ok(Held { team: cx.team, ids })
}

/// Workers quoted and being spawned: counted beside the live ones until dropped (by
/// then each is started, and counted live, or refused).
pub struct Held<'a> {
    team: &'a super::team::Team,
    ids: Vec<AgentId>,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let ids = std::mem::take(&mut self.ids);
        self.team.events().spend_mut(|t| {
            for id in ids {
                t.unhold(id);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_stated_and_grows_with_the_first_request() {
        let (calls, prompt, completion, cached) = project(&Basis::default(), 2_000, 0);
        assert_eq!(calls, DEFAULT_CALLS);
        assert_eq!(prompt, 6 * 2_000 + 800 * 15);
        assert_eq!(completion, 1_800);
        assert!(cached > 0 && cached < prompt, "{cached}");
    }

    #[test]
    fn a_finished_worker_of_the_role_is_scaled_to_the_new_first_request() {
        // One worker: 4 calls, first request 3,000 by the server (estimated 2,000).
        let basis = Basis {
            workers: 1,
            calls: 4,
            prompt: 16_000,
            completion: 900,
            first_actual: 3_000,
            first_estimate: 2_000,
            calibrated: 1,
        };
        // The same task again: the same spend.
        let (calls, prompt, completion, _) = project(&basis, 2_000, 0);
        assert_eq!((calls, prompt, completion), (4, 16_000, 900));
        // A task 500 estimated tokens larger: 750 server tokens more in each of 4 calls.
        let (_, prompt, _, _) = project(&basis, 2_500, 0);
        assert_eq!(prompt, 19_000);
        // A shared prefix is cached on top of what the calls repeat.
        let (_, _, _, plain) = project(&basis, 2_000, 0);
        let (_, _, _, shared) = project(&basis, 2_000, 1_000);
        assert_eq!(shared, plain + 1_500);
    }
}
