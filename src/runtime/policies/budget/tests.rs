use super::*;
use crate::config::Limits;
use crate::runtime::team::budget::Giver;
use crate::runtime::team::carve::{Amount, Limit, Purse};
use crate::runtime::team::for_worker;
use std::time::Duration;

fn limits(tokens: Option<u64>, cost: Option<f64>, wall: Option<u64>) -> Limits {
    Limits {
        max_tokens_per_agent: tokens,
        max_cost_per_agent_usd: cost,
        max_agent_wall_s: wall,
        ..Limits::default()
    }
}

fn unlimited_parent() -> &'static Giver {
    static G: std::sync::LazyLock<Giver> = std::sync::LazyLock::new(|| Giver {
        slots: 15,
        ..Giver::default()
    });
    &G
}

#[test]
fn a_worker_takes_the_config_limits_when_it_asks_for_nothing() {
    let l = limits(Some(50_000), Some(0.5), None);
    let b = for_worker(&l, unlimited_parent(), Budget::default()).unwrap();
    assert_eq!(
        b,
        Budget {
            tokens: Some(50_000),
            cost_usd: Some(0.5),
            wall_s: None
        }
    );
    let none = for_worker(&Limits::default(), unlimited_parent(), Budget::default()).unwrap();
    assert!(none.is_unlimited());
}

#[test]
fn a_tighter_budget_is_honoured_and_a_looser_one_refused_naming_field_and_ceiling() {
    let l = limits(Some(50_000), None, Some(600));
    let asked = Budget {
        tokens: Some(10_000),
        ..Budget::default()
    };
    let b = for_worker(&l, unlimited_parent(), asked).unwrap();
    assert_eq!(b.tokens, Some(10_000));
    assert_eq!(b.wall_s, Some(600), "what it did not ask keeps the limit");

    let looser = Budget {
        tokens: Some(80_000),
        ..Budget::default()
    };
    let e = for_worker(&l, unlimited_parent(), looser)
        .unwrap_err()
        .to_string();
    assert!(e.contains("budget.tokens = 80,000 tokens"), "{e}");
    assert!(
        e.contains("50,000 tokens (limits.max_tokens_per_agent)"),
        "{e}"
    );

    // Unlimited config: anything positive goes.
    let any = Budget {
        cost_usd: Some(3.0),
        ..Budget::default()
    };
    assert_eq!(
        for_worker(&Limits::default(), unlimited_parent(), any)
            .unwrap()
            .cost_usd,
        Some(3.0)
    );
    let zero = Budget {
        wall_s: Some(0),
        ..Budget::default()
    };
    let e = for_worker(&Limits::default(), unlimited_parent(), zero)
        .unwrap_err()
        .to_string();
    assert!(e.contains("budget.wall_s must be above 0"), "{e}");
}

/// A parent with `budget` that spent `spent` (tokens, dollars) and set `reserved` aside
/// for `live` workers, 40.5 s into its life, with `slots` free live slots.
fn parent(spent: (f64, f64), reserved: (f64, f64), live: usize, slots: u32) -> Giver {
    let budget = Budget {
        tokens: Some(40_000),
        cost_usd: Some(1.0),
        wall_s: Some(100),
    };
    Giver {
        budget,
        purse: Purse {
            limit: Limit {
                tokens: Some(40_000.0),
                cost_usd: Some(1.0),
            },
            spent: Amount {
                tokens: spent.0,
                cost_usd: spent.1,
            },
            reserved: Amount {
                tokens: reserved.0,
                cost_usd: reserved.1,
            },
            live_workers: live,
        },
        wall: Duration::from_millis(40_500),
        slots,
    }
}

#[test]
fn a_worker_never_gets_more_than_its_parent_has_left() {
    let p = parent((30_000.0, 0.25), (0.0, 0.0), 0, 1);
    let l = limits(Some(50_000), None, None);
    // Asking for nothing: half of what is left (the parent and one free slot).
    let b = for_worker(&l, &p, Budget::default()).unwrap();
    assert_eq!(
        b,
        Budget {
            tokens: Some(5_000),
            cost_usd: Some(0.375),
            wall_s: Some(59),
        }
    );
    let asked = Budget {
        tokens: Some(20_000),
        ..Budget::default()
    };
    let e = for_worker(&l, &p, asked).unwrap_err().to_string();
    assert!(
        e.contains(
            "budget.tokens = 20,000 tokens cannot be set aside for the worker: your budget \
             of 40,000 tokens: 30,000 tokens spent, 0 tokens set aside for 0 live workers, \
             so 10,000 tokens is left"
        ),
        "{e}"
    );
    let spent = parent((40_000.0, 0.25), (0.0, 0.0), 0, 1);
    let e = for_worker(&l, &spent, Budget::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("your own tokens budget is spent"), "{e}");
}

#[test]
fn a_spawn_is_refused_with_the_figures_when_the_rest_is_set_aside() {
    let l = limits(None, None, None);
    let p = parent((10_000.0, 0.2), (30_000.0, 0.5), 2, 4);
    let e = for_worker(&l, &p, Budget::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(
            "nothing of your tokens budget is left to set aside for a worker: your budget of \
             40,000 tokens: 10,000 tokens spent, 30,000 tokens set aside for 2 live workers"
        ),
        "{e}"
    );
    // Dollars: 0.30 left; 0.5 asked is short, naming both.
    let p = parent((0.0, 0.2), (0.0, 0.5), 2, 4);
    let asked = Budget {
        cost_usd: Some(0.5),
        ..Budget::default()
    };
    let e = for_worker(&l, &p, asked).unwrap_err().to_string();
    assert!(
        e.contains("budget.cost_usd = $0.50 cannot be set aside"),
        "{e}"
    );
    assert!(e.contains("so $0.30 is left"), "{e}");
    // Nothing asked: a fifth of the $0.30 (the parent and four free slots).
    let b = for_worker(&l, &p, Budget::default()).unwrap();
    assert!((b.cost_usd.unwrap() - 0.06).abs() < 1e-9, "{b:?}");
}

#[test]
fn reached_names_the_first_measure_spent() {
    let b = Budget {
        tokens: Some(50_000),
        cost_usd: Some(0.1),
        wall_s: Some(60),
    };
    let under = Spend {
        tokens: 49_999,
        cost_usd: 0.09,
        wall: Duration::from_secs(59),
    };
    assert!(reached(&b, &under).is_none());
    let over = Spend {
        tokens: 51_200,
        ..under
    };
    assert_eq!(
        reached(&b, &over).unwrap().to_string(),
        "budget: 51,200 of 50,000 tokens spent"
    );
    let late = Spend {
        wall: Duration::from_secs(61),
        ..under
    };
    assert_eq!(reached(&b, &late).unwrap().measure, BudgetMeasure::WallS);
    assert!(reached(&Budget::default(), &over).is_none());
}
