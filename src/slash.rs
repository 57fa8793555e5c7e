//! What the slash commands of the front ends take after their name (`/goal`, `/review`,
//! `/budget`, `/model`), parsed once for the TUI's composer and ACP's prompts, so a command typed in
//! an editor means what it means in the terminal.

use crate::protocol::{Goal, ReviewTarget};

pub const REVIEW_USAGE: &str = "usage: /review [uncommitted | base BRANCH | commit SHA]";
pub const BUDGET_USAGE: &str = "usage: /budget USD (e.g. /budget 5), or /budget off";
pub const MODEL_USAGE: &str = "usage: /model NAME";
pub const MERGE_USAGE: &str =
    "usage: /merge WORKER (its id, a prefix of it, or its role): merges its unmerged change";

/// What `/model` takes: one name.
pub fn parse_model(arg: &str) -> Option<String> {
    let model = arg.trim();
    (!model.is_empty() && !model.contains(char::is_whitespace)).then(|| model.to_string())
}

/// What `/goal` was given.
#[derive(Clone, Debug, PartialEq)]
pub enum GoalArg {
    Show,
    Clear,
    Set(Goal),
}

/// `5`, `$2.50` → a limit; `off` / `none` → no limit; anything else (zero and negative
/// amounts included) → `None`.
pub fn parse_budget(arg: &str) -> Option<Option<f64>> {
    if matches!(arg, "off" | "none") {
        return Some(None);
    }
    let usd: f64 = arg.trim_start_matches('$').parse().ok()?;
    (usd.is_finite() && usd > 0.0).then_some(Some(usd))
}

pub const GOAL_USAGE: &str =
    "usage: /goal TEXT --check CMD [--rules] [--turns N] [--budget USD], /goal clear";

/// Where an option of `/goal` starts in `text` (at a word's start and end), if any.
fn next_option(text: &str) -> Option<usize> {
    ["--check", "--rules", "--turns", "--budget"]
        .iter()
        .flat_map(|o| text.match_indices(o))
        .filter(|(at, o)| {
            let before = text[..*at].chars().next_back();
            let after = text[at + o.len()..].chars().next();
            before.is_none_or(char::is_whitespace) && after.is_none_or(char::is_whitespace)
        })
        .map(|(at, _)| at)
        .min()
}

/// `TEXT --check CMD [--rules] [--turns N] [--budget USD]`: the text runs to the first
/// option, a check to the next; `clear` and nothing are the other two forms.
pub fn parse_goal(arg: &str) -> Result<GoalArg, String> {
    match arg {
        "" => return Ok(GoalArg::Show),
        "clear" | "off" | "stop" => return Ok(GoalArg::Clear),
        _ => {}
    }
    let at = next_option(arg).ok_or(GOAL_USAGE)?;
    let mut goal = Goal::new(arg[..at].trim(), "");
    let mut rest = &arg[at..];
    while !rest.is_empty() {
        let (option, after) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        let end = next_option(after).unwrap_or(after.len());
        let value = after[..end].trim();
        match option {
            "--check" => goal.check = value.to_string(),
            "--rules" if value.is_empty() => goal.rules = true,
            "--turns" => goal.max_turns = value.parse().map_err(|_| GOAL_USAGE)?,
            "--budget" => {
                let usd = value
                    .trim_start_matches('$')
                    .parse()
                    .map_err(|_| GOAL_USAGE)?;
                goal.max_cost_usd = Some(usd);
            }
            _ => return Err(GOAL_USAGE.into()),
        }
        rest = &after[end..];
    }
    goal.validate().map_err(|e| format!("{e} ({GOAL_USAGE})"))?;
    Ok(GoalArg::Set(goal))
}

/// What `/review` takes: nothing or `uncommitted`, `base BRANCH`, `commit SHA`.
pub fn parse_review(arg: Option<&str>) -> Option<ReviewTarget> {
    let words: Vec<&str> = arg.unwrap_or("").split_whitespace().collect();
    match words.as_slice() {
        [] | ["uncommitted"] => Some(ReviewTarget::Uncommitted),
        ["base", branch] => Some(ReviewTarget::Base {
            branch: branch.to_string(),
        }),
        ["commit", sha] => Some(ReviewTarget::Commit {
            sha: sha.to_string(),
        }),
        _ => None,
    }
}
