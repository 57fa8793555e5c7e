use super::*;
use crate::test_rng::Rng;

fn cost(usd: f64) -> Limit {
    Limit {
        tokens: None,
        cost_usd: Some(usd),
    }
}

fn usd(cost_usd: f64) -> Amount {
    Amount {
        tokens: 0.0,
        cost_usd,
    }
}

#[test]
fn a_worker_is_set_aside_and_what_it_did_not_spend_comes_back() {
    let (root, a, b) = (AgentId::new(), AgentId::new(), AgentId::new());
    let mut l = Ledger::default();
    l.enter(root, None, cost(1.0), Amount::default());
    l.spend(root, usd(0.1));
    l.reserve(root, a, cost(0.6)).unwrap();
    l.spend(a, usd(0.2));
    let p = l.purse(root);
    assert!((p.left().cost_usd.unwrap() - 0.3).abs() < 1e-9, "{p:?}");
    assert_eq!(p.live_workers, 1);
    // 0.6 does not fit in the 0.3 left; nothing is set aside for it.
    let short = l.reserve(root, b, cost(0.6)).unwrap_err();
    assert!(!short.tokens && (short.asked - 0.6).abs() < 1e-9);
    assert!((short.purse.reserved.cost_usd - 0.4).abs() < 1e-9);
    assert!((short.purse.spent.cost_usd - 0.3).abs() < 1e-9);
    l.end(a);
    let p = l.purse(root);
    assert!((p.left().cost_usd.unwrap() - 0.7).abs() < 1e-9, "{p:?}");
    assert_eq!((p.reserved, p.live_workers), (Amount::default(), 0));
    l.reserve(root, b, cost(0.6)).unwrap();
}

/// A model of the tree recomputed from scratch, to hold the ledger's running sums to.
struct Model {
    parent: Vec<Option<usize>>,
    limit: Vec<Limit>,
    own: Vec<Amount>,
    live: Vec<bool>,
}

impl Model {
    fn subtree(&self, i: usize) -> Amount {
        let mut s = self.own[i];
        for c in self.children(i) {
            s.add(self.subtree(c));
        }
        s
    }

    fn children(&self, i: usize) -> Vec<usize> {
        (0..self.parent.len())
            .filter(|&c| self.parent[c] == Some(i))
            .collect()
    }

    /// Reservations of live children not yet spent, summed.
    fn outstanding(&self, i: usize) -> Amount {
        let mut r = Amount::default();
        for c in self.children(i).into_iter().filter(|&c| self.live[c]) {
            let s = self.subtree(c);
            r.add(self.limit[c].amount().zip(s, |l, s| (l - s).max(0.0)));
        }
        r
    }

    fn reserved_by_live(&self, i: usize) -> Amount {
        let mut r = Amount::default();
        for c in self.children(i).into_iter().filter(|&c| self.live[c]) {
            r.add(self.limit[c].amount());
        }
        r
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6 * (1.0 + a.abs().max(b.abs()))
}

/// One random session: spawns under live agents (each asking for a random share, some
/// more than is left), calls that spend only while an agent's committed spend is under
/// its budget (as `before_call` lets them; a call may pass it), and ends.
fn round(seed: u64) -> usize {
    let mut rng = Rng(seed);
    let mut ids = vec![AgentId::new()];
    let session = Limit {
        tokens: Some(100_000.0),
        cost_usd: Some(5.0),
    };
    let mut m = Model {
        parent: vec![None],
        limit: vec![session],
        own: vec![Amount::default()],
        live: vec![true],
    };
    let mut l = Ledger::default();
    l.enter(ids[0], None, session, Amount::default());
    let mut refused = 0;
    for _ in 0..300 {
        let live: Vec<usize> = (0..ids.len()).filter(|&i| m.live[i]).collect();
        let i = live[rng.below(live.len())];
        match rng.below(10) {
            0..=3 => {
                let left = l.purse(ids[i]).left();
                let frac = (rng.below(70) + 1) as f64 / 100.0;
                let ask = |lim: Option<f64>, whole: f64| lim.map(|_| whole * frac);
                let limit = Limit {
                    tokens: ask(left.tokens, m.limit[i].tokens.unwrap_or(0.0)),
                    cost_usd: ask(left.cost_usd, m.limit[i].cost_usd.unwrap_or(0.0)),
                };
                let id = AgentId::new();
                let fits =
                    |a: Option<f64>, b: Option<f64>| a.zip(b).is_none_or(|(a, b)| a <= b + 1e-9);
                let expect = fits(limit.tokens, left.tokens) && fits(limit.cost_usd, left.cost_usd);
                let got = l.reserve(ids[i], id, limit);
                assert_eq!(got.is_ok(), expect, "seed {seed}: {got:?}");
                if got.is_ok() {
                    ids.push(id);
                    m.parent.push(Some(i));
                    m.limit.push(limit);
                    m.own.push(Amount::default());
                    m.live.push(true);
                } else {
                    refused += 1;
                }
            }
            4..=8 => {
                let p = l.purse(ids[i]);
                let committed = p.spent.zip(p.reserved, |a, b| a + b);
                let under = |lim: Option<f64>, c: f64| lim.is_none_or(|l| c < l);
                if under(m.limit[i].tokens, committed.tokens)
                    && under(m.limit[i].cost_usd, committed.cost_usd)
                {
                    let d = Amount {
                        tokens: rng.below(3_000) as f64,
                        cost_usd: rng.below(200) as f64 / 1_000.0,
                    };
                    l.spend(ids[i], d);
                    m.own[i].add(d);
                }
            }
            _ if i != 0 => {
                l.end(ids[i]);
                m.live[i] = false;
            }
            _ => {}
        }
        check(&l, &m, &ids, seed);
    }
    assert!(ids.len() > 5, "seed {seed}: a dull round");
    // Everything ends: every purse holds only what was spent under it.
    for (i, id) in ids.iter().enumerate().skip(1) {
        l.end(*id);
        m.live[i] = false;
    }
    check(&l, &m, &ids, seed);
    let root = l.purse(ids[0]);
    assert_eq!(root.reserved, Amount::default(), "seed {seed}");
    let total = m.subtree(0);
    assert!(close(root.left().cost_usd.unwrap(), 5.0 - total.cost_usd));
    assert!(close(root.left().tokens.unwrap(), 100_000.0 - total.tokens));
    refused
}

fn check(l: &Ledger, m: &Model, ids: &[AgentId], seed: u64) {
    for (i, id) in ids.iter().enumerate() {
        let p = l.purse(*id);
        let (s, o) = (m.subtree(i), m.outstanding(i));
        assert!(close(p.spent.tokens, s.tokens) && close(p.spent.cost_usd, s.cost_usd));
        assert!(
            close(p.reserved.tokens, o.tokens) && close(p.reserved.cost_usd, o.cost_usd),
            "seed {seed}: agent {i}: {p:?} against {o:?}"
        );
        // The reservations of live workers never pass their supervisor's budget.
        let r = m.reserved_by_live(i);
        let within = |lim: Option<f64>, r: f64| lim.is_none_or(|l| r <= l + 1e-6);
        assert!(
            within(m.limit[i].tokens, r.tokens) && within(m.limit[i].cost_usd, r.cost_usd),
            "seed {seed}: agent {i} reserved {r:?} of {:?}",
            m.limit[i]
        );
    }
}

#[test]
fn reservations_never_pass_the_budget_at_any_depth_and_everything_unspent_returns() {
    let first: u64 = std::env::var("SQUAD_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let refused: usize = (first..first + 40).map(round).sum();
    assert!(
        refused > 40,
        "spawns were refused {refused} times: too few to test refusing"
    );
}
