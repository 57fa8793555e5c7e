//! Budgets: what one worker may spend (tokens, dollars, wall time), and which budget was
//! reached when one is.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Limits on what one worker may spend; `None` is no limit. Tokens count prompt and
/// completion tokens of every model call, as the server reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_s: Option<u64>,
}

impl Budget {
    pub fn is_unlimited(&self) -> bool {
        self.tokens.is_none() && self.cost_usd.is_none() && self.wall_s.is_none()
    }

    /// `50,000 tokens · $0.50 · 300 s`, or `no limit`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(t) = self.tokens {
            parts.push(BudgetMeasure::Tokens.amount(t as f64));
        }
        if let Some(c) = self.cost_usd {
            parts.push(BudgetMeasure::CostUsd.amount(c));
        }
        if let Some(w) = self.wall_s {
            parts.push(BudgetMeasure::WallS.amount(w as f64));
        }
        if parts.is_empty() {
            "no limit".to_string()
        } else {
            parts.join(" · ")
        }
    }
}

/// Whose budget: one agent's own, or the whole session's (`limits.max_session_cost_usd`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetScope {
    Agent,
    Session,
}

/// What a budget counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetMeasure {
    Tokens,
    CostUsd,
    WallS,
}

impl BudgetMeasure {
    /// The name of the field in a `budget` object.
    pub fn field(self) -> &'static str {
        match self {
            Self::Tokens => "tokens",
            Self::CostUsd => "cost_usd",
            Self::WallS => "wall_s",
        }
    }

    /// `51,200 tokens`, `$0.0125`, `312 s`.
    pub fn amount(self, value: f64) -> String {
        match self {
            Self::Tokens => format!("{} tokens", thousands(value.max(0.0) as u64)),
            Self::CostUsd => dollars(value),
            Self::WallS => format!("{} s", value.max(0.0).round() as u64),
        }
    }
}

/// A budget that was reached: `spent` of `limit`, in the measure's unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BudgetReached {
    pub measure: BudgetMeasure,
    pub spent: f64,
    pub limit: f64,
}

impl fmt::Display for BudgetReached {
    /// `budget: 51,200 of 50,000 tokens spent`: the reason a worker failed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let spent = match self.measure {
            BudgetMeasure::Tokens => thousands(self.spent.max(0.0) as u64),
            m => m.amount(self.spent),
        };
        let verb = match self.measure {
            BudgetMeasure::WallS => "of wall time used",
            _ => "spent",
        };
        write!(
            f,
            "budget: {spent} of {} {verb}",
            self.measure.amount(self.limit)
        )
    }
}

/// `$2.50`, `$0.50`; four decimals for an amount under a dollar that is not whole cents,
/// so small spends stay readable (`$0.0125`).
pub fn dollars(usd: f64) -> String {
    let cents = usd * 100.0;
    if usd.abs() < 1.0 && (cents - cents.round()).abs() > 1e-6 {
        format!("${usd:.4}")
    } else {
        format!("${usd:.2}")
    }
}

/// `51200` → `51,200`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_name_the_budget_and_the_spend() {
        let r = BudgetReached {
            measure: BudgetMeasure::Tokens,
            spent: 51_200.0,
            limit: 50_000.0,
        };
        assert_eq!(r.to_string(), "budget: 51,200 of 50,000 tokens spent");
        let r = BudgetReached {
            measure: BudgetMeasure::CostUsd,
            spent: 0.0125,
            limit: 0.01,
        };
        assert_eq!(r.to_string(), "budget: $0.0125 of $0.01 spent");
        let r = BudgetReached {
            measure: BudgetMeasure::WallS,
            spent: 312.4,
            limit: 300.0,
        };
        assert_eq!(r.to_string(), "budget: 312 s of 300 s of wall time used");
    }

    #[test]
    fn describes_and_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(Budget::default().describe(), "no limit");
        let b = Budget {
            tokens: Some(50_000),
            cost_usd: Some(2.5),
            wall_s: Some(300),
        };
        assert_eq!(b.describe(), "50,000 tokens · $2.50 · 300 s");
        assert_eq!(dollars(0.5), "$0.50");
        assert_eq!(dollars(0.012), "$0.0120");
        assert_eq!(dollars(12.345), "$12.35");
        let json = serde_json::to_string(&Budget {
            tokens: Some(10),
            ..Budget::default()
        })
        .unwrap();
        assert_eq!(json, r#"{"tokens":10}"#);
    }
}
