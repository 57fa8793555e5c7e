use super::*;
use crate::config::Limits;
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

fn unlimited_parent() -> (Budget, Spend) {
    (Budget::default(), Spend::default())
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

#[test]
fn a_worker_never_gets_more_than_its_parent_has_left() {
    let parent = (
        Budget {
            tokens: Some(40_000),
            cost_usd: Some(1.0),
            wall_s: Some(100),
        },
        Spend {
            tokens: 30_000,
            cost_usd: 0.25,
            wall: Duration::from_millis(40_500),
        },
    );
    let l = limits(Some(50_000), None, None);
    let b = for_worker(&l, parent, Budget::default()).unwrap();
    assert_eq!(
        b,
        Budget {
            tokens: Some(10_000),
            cost_usd: Some(0.75),
            wall_s: Some(59),
        }
    );
    let asked = Budget {
        tokens: Some(20_000),
        ..Budget::default()
    };
    let e = for_worker(&l, parent, asked).unwrap_err().to_string();
    assert!(
        e.contains("ceiling of 10,000 tokens (what your own budget has left)"),
        "{e}"
    );

    let spent = (
        parent.0,
        Spend {
            tokens: 40_000,
            ..parent.1
        },
    );
    let e = for_worker(&l, spent, Budget::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("your own tokens budget is spent"), "{e}");
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
