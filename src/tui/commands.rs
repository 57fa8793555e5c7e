//! Slash commands typed in the composer: parsing and Tab completion.

use crate::protocol::{ApprovalPolicy, ReviewTarget};
pub use crate::slash::GoalArg;
use crate::slash::{
    BUDGET_USAGE, MODEL_USAGE, REVIEW_USAGE, parse_budget, parse_goal, parse_model, parse_review,
};

/// What `/approval` takes.
const APPROVALS: [ApprovalPolicy; 3] = [
    ApprovalPolicy::Ask,
    ApprovalPolicy::Auto,
    ApprovalPolicy::ReadOnly,
];

/// Every command with a one-line description (shown in the completion popup and help).
pub const COMMANDS: &[(&str, &str)] = &[
    ("/role", "switch persona (/role NAME)"),
    ("/agents", "full-screen agent tree"),
    (
        "/tasks",
        "the task board (Ctrl+T: beside or instead of the tree)",
    ),
    ("/timeline", "what each agent did when"),
    ("/stats", "tokens, cost and task figures per agent"),
    (
        "/compact",
        "summarize the older part of this agent's conversation",
    ),
    ("/mcp", "MCP servers and their tools"),
    (
        "/review",
        "review the uncommitted changes read-only (/review base BRANCH, /review commit SHA)",
    ),
    ("/pause", "pause the whole team (Ctrl+P toggles)"),
    ("/unpause", "let the paused team go on"),
    (
        "/lead",
        "the persona coordinates only: no writing tools for it (Ctrl+L toggles)",
    ),
    ("/stop", "stop the team: cancel every worker, end the turn"),
    (
        "/goal",
        "work until a check passes (/goal TEXT --check CMD [--rules] [--turns N] [--budget USD])",
    ),
    (
        "/budget",
        "set the session's cost limit (/budget 5 in US dollars, /budget off)",
    ),
    (
        "/model",
        "the persona's model from now on (/model NAME, or pick from the server's list)",
    ),
    (
        "/approval",
        "approval for the rest of the session (/approval ask|auto|read-only)",
    ),
    (
        "/continue",
        "continue the agents interrupted when squad stopped",
    ),
    (
        "/rewind",
        "back to before one of your messages: files, conversation or both (Esc Esc)",
    ),
    (
        "/undo",
        "take the selected worker's merged change back out (u in the tree)",
    ),
    (
        "/merge",
        "merge a worker's change kept unmerged (failed checks) on purpose (/merge [WORKER])",
    ),
    ("/new", "start a new session"),
    ("/clear", "start a new session (as /new)"),
    ("/resume", "resume an earlier session"),
    ("/help", "keys and commands"),
    ("/quit", "end the session"),
];

#[derive(Clone, Debug, PartialEq)]
pub enum SlashCommand {
    Role(String),
    Model(String),
    /// `/model` alone: the server's models, to pick one.
    Models,
    Approval(ApprovalPolicy),
    Agents,
    Tasks,
    Timeline,
    Stats,
    Compact,
    Mcp,
    Review(ReviewTarget),
    Pause,
    Unpause,
    /// Toggles the persona's coordinate-only mode.
    Lead,
    Stop,
    /// A new session cost limit in US dollars; `None` lifts it.
    Budget(Option<f64>),
    Continue,
    /// `/goal` alone shows the goal; `/goal clear` stops it.
    Goal(GoalArg),
    Rewind,
    Undo,
    /// `/merge WORKER`; without one, the worker shown.
    Merge(Option<String>),
    New,
    Resume(Option<String>),
    Help,
    Quit,
}

/// `None` if `input` is an ordinary message; otherwise the command or what is wrong with
/// it. `//text` is an escape for a message that starts with a slash.
pub fn parse(input: &str) -> Option<Result<SlashCommand, String>> {
    let input = input.trim();
    if !input.starts_with('/') || input.starts_with("//") {
        return None;
    }
    let (word, rest) = match input.split_once(char::is_whitespace) {
        Some((w, r)) => (w, r.trim()),
        None => (input, ""),
    };
    // A unique prefix is enough: `/ag` runs `/agents`.
    let name = match COMMANDS.iter().find(|(c, _)| *c == word) {
        Some((c, _)) => *c,
        None => {
            let matches: Vec<&str> = COMMANDS
                .iter()
                .map(|(c, _)| *c)
                .filter(|c| c.starts_with(word))
                .collect();
            match matches.as_slice() {
                [one] => *one,
                [] => return Some(Err(format!("unknown command {word} (/help lists them)"))),
                _ => {
                    return Some(Err(format!("{word} is ambiguous: {}", matches.join(", "))));
                }
            }
        }
    };
    let arg = (!rest.is_empty()).then(|| rest.to_string());
    Some(Ok(match name {
        "/role" => match arg {
            Some(r) if !r.contains(char::is_whitespace) => SlashCommand::Role(r),
            _ => return Some(Err("usage: /role NAME".into())),
        },
        "/model" if arg.is_none() => SlashCommand::Models,
        "/model" => match parse_model(arg.as_deref().unwrap_or("")) {
            Some(m) => SlashCommand::Model(m),
            None => return Some(Err(MODEL_USAGE.into())),
        },
        "/approval" => match APPROVALS
            .iter()
            .find(|a| Some(a.as_str()) == arg.as_deref())
        {
            Some(a) => SlashCommand::Approval(*a),
            None => return Some(Err("usage: /approval ask|auto|read-only".into())),
        },
        "/agents" => SlashCommand::Agents,
        "/tasks" => SlashCommand::Tasks,
        "/timeline" => SlashCommand::Timeline,
        "/stats" | "/cost" => SlashCommand::Stats,
        "/compact" => SlashCommand::Compact,
        "/mcp" => SlashCommand::Mcp,
        "/review" => match parse_review(arg.as_deref()) {
            Some(target) => SlashCommand::Review(target),
            None => {
                return Some(Err(REVIEW_USAGE.into()));
            }
        },
        "/pause" => SlashCommand::Pause,
        "/unpause" => SlashCommand::Unpause,
        "/lead" => SlashCommand::Lead,
        "/stop" => SlashCommand::Stop,
        "/budget" => match arg.as_deref().map(parse_budget) {
            Some(Some(limit)) => SlashCommand::Budget(limit),
            _ => {
                return Some(Err(BUDGET_USAGE.into()));
            }
        },
        "/continue" => SlashCommand::Continue,
        "/goal" => match parse_goal(arg.as_deref().unwrap_or("")) {
            Ok(goal) => SlashCommand::Goal(goal),
            Err(e) => return Some(Err(e)),
        },
        "/rewind" => SlashCommand::Rewind,
        "/undo" => SlashCommand::Undo,
        "/merge" => SlashCommand::Merge(arg),
        "/new" | "/clear" => SlashCommand::New,
        "/resume" => SlashCommand::Resume(arg),
        "/help" => SlashCommand::Help,
        _ => SlashCommand::Quit,
    }))
}

/// The message text for input starting with the `//` escape.
pub fn unescape(input: &str) -> &str {
    if input.trim_start().starts_with("//") {
        &input.trim_start()[1..]
    } else {
        input
    }
}

/// Candidates for what is typed so far: command names, or role names after `/role `.
pub fn candidates(input: &str, roles: &[String]) -> Vec<String> {
    if !input.starts_with('/') || input.starts_with("//") || input.contains('\n') {
        return Vec::new();
    }
    if let Some(prefix) = input.strip_prefix("/role ") {
        return roles
            .iter()
            .filter(|r| r.starts_with(prefix.trim_start()))
            .map(|r| format!("/role {r}"))
            .collect();
    }
    if let Some(prefix) = input.strip_prefix("/approval ") {
        return APPROVALS
            .iter()
            .map(|a| a.as_str())
            .filter(|a| a.starts_with(prefix.trim_start()))
            .map(|a| format!("/approval {a}"))
            .collect();
    }
    if let Some(prefix) = input.strip_prefix("/goal ")
        && !prefix.contains(char::is_whitespace)
        && "clear".starts_with(prefix)
    {
        return vec!["/goal clear".to_string()];
    }
    if let Some(prefix) = input.strip_prefix("/review ") {
        return ["uncommitted", "base ", "commit "]
            .iter()
            .filter(|w| w.starts_with(prefix.trim_start()) && !prefix.contains(' '))
            .map(|w| format!("/review {w}"))
            .collect();
    }
    if input.contains(char::is_whitespace) {
        return Vec::new();
    }
    COMMANDS
        .iter()
        .filter(|(c, _)| c.starts_with(input))
        .map(|(c, _)| c.to_string())
        .collect()
}

/// What Tab turns `input` into: the only candidate (plus a space after a command name),
/// else the candidates' longer common prefix, else the `cycle`-th candidate.
pub fn complete(input: &str, roles: &[String], cycle: usize) -> Option<String> {
    let c = candidates(input, roles);
    match c.len() {
        0 => None,
        1 => Some(with_room(&c[0])),
        _ => {
            let prefix = common_prefix(&c);
            if prefix.len() > input.len() {
                Some(prefix)
            } else {
                Some(c[cycle % c.len()].clone())
            }
        }
    }
}

/// Whether a command is usually given an argument (`/role NAME`, `/goal TEXT`…).
pub fn takes_arg(command: &str) -> bool {
    matches!(
        command,
        "/role" | "/resume" | "/budget" | "/model" | "/approval" | "/review" | "/goal" | "/merge"
    )
}

/// A picked candidate as the composer gets it: a space after a command that takes an
/// argument, so the user types it next.
pub fn with_room(candidate: &str) -> String {
    if takes_arg(candidate) {
        format!("{candidate} ")
    } else {
        candidate.to_string()
    }
}

fn common_prefix(items: &[String]) -> String {
    let Some(first) = items.first() else {
        return String::new();
    };
    let mut end = first.len();
    for s in &items[1..] {
        end = end.min(
            first
                .char_indices()
                .zip(s.chars())
                .take_while(|((_, a), b)| a == b)
                .map(|((i, a), _)| i + a.len_utf8())
                .last()
                .unwrap_or(0),
        );
    }
    first[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands_and_prefixes() {
        assert_eq!(parse("hello"), None);
        assert_eq!(parse("//etc is odd"), None);
        assert_eq!(unescape("//etc"), "/etc");
        assert_eq!(
            parse("/role architect"),
            Some(Ok(SlashCommand::Role("architect".into())))
        );
        assert!(matches!(parse("/role"), Some(Err(_))));
        assert_eq!(parse("/ag"), Some(Ok(SlashCommand::Agents)));
        assert_eq!(
            parse("/model qwen2.5-coder"),
            Some(Ok(SlashCommand::Model("qwen2.5-coder".into())))
        );
        assert_eq!(parse("/model"), Some(Ok(SlashCommand::Models)));
        assert_eq!(
            parse("/approval read-only"),
            Some(Ok(SlashCommand::Approval(ApprovalPolicy::ReadOnly)))
        );
        assert!(matches!(parse("/approval yes"), Some(Err(e)) if e.contains("ask|auto")));
        assert_eq!(parse("/quit"), Some(Ok(SlashCommand::Quit)));
        assert!(matches!(parse("/frobnicate"), Some(Err(e)) if e.contains("unknown")));
        assert_eq!(
            parse("/budget 5"),
            Some(Ok(SlashCommand::Budget(Some(5.0))))
        );
        assert_eq!(
            parse("/budget $2.50"),
            Some(Ok(SlashCommand::Budget(Some(2.5))))
        );
        assert_eq!(parse("/budget off"), Some(Ok(SlashCommand::Budget(None))));
        for bad in ["/budget", "/budget 0", "/budget -1", "/budget lots"] {
            assert!(
                matches!(parse(bad), Some(Err(e)) if e.contains("usage: /budget")),
                "{bad}"
            );
        }
        assert_eq!(
            parse("/review"),
            Some(Ok(SlashCommand::Review(ReviewTarget::Uncommitted)))
        );
        assert_eq!(
            parse("/review base main"),
            Some(Ok(SlashCommand::Review(ReviewTarget::Base {
                branch: "main".into()
            })))
        );
        assert_eq!(
            parse("/review commit abc123"),
            Some(Ok(SlashCommand::Review(ReviewTarget::Commit {
                sha: "abc123".into()
            })))
        );
        assert!(matches!(parse("/review base"), Some(Err(e)) if e.contains("usage: /review")));
        assert_eq!(
            parse("/resume abc"),
            Some(Ok(SlashCommand::Resume(Some("abc".into()))))
        );
    }

    #[test]
    fn parses_goals() {
        assert_eq!(parse("/goal"), Some(Ok(SlashCommand::Goal(GoalArg::Show))));
        assert_eq!(
            parse("/goal clear"),
            Some(Ok(SlashCommand::Goal(GoalArg::Clear)))
        );
        let Some(Ok(SlashCommand::Goal(GoalArg::Set(g)))) =
            parse("/goal make tests pass --check cargo test -q --turns 4 --budget $2")
        else {
            panic!("a goal");
        };
        assert_eq!(g.text, "make tests pass");
        assert_eq!(g.check, "cargo test -q");
        assert_eq!((g.max_turns, g.max_cost_usd), (4, Some(2.0)));
        let Some(Ok(SlashCommand::Goal(GoalArg::Set(g)))) = parse("/goal fix it --check make")
        else {
            panic!("a goal");
        };
        assert_eq!(
            (g.check.as_str(), g.max_turns, g.rules),
            ("make", 10, false)
        );
        let Some(Ok(SlashCommand::Goal(GoalArg::Set(g)))) =
            parse("/goal green --rules --turns 3 --check make lint --fix")
        else {
            panic!("a goal");
        };
        assert_eq!(
            (g.text.as_str(), g.check.as_str()),
            ("green", "make lint --fix")
        );
        assert_eq!((g.rules, g.max_turns), (true, 3));
        let Some(Ok(SlashCommand::Goal(GoalArg::Set(g)))) = parse("/goal green --rules") else {
            panic!("a goal");
        };
        assert_eq!((g.check.as_str(), g.rules), ("", true));
        for bad in [
            "/goal fix it",
            "/goal fix it --check",
            "/goal --check make",
            "/goal x --check make --turns",
            "/goal x --check make --turns 0",
            "/goal x --check make --budget lots",
            "/goal x --rules yes",
        ] {
            assert!(
                matches!(parse(bad), Some(Err(e)) if e.contains("/goal")),
                "{bad}"
            );
        }
    }

    #[test]
    fn completes() {
        let roles = vec!["architect".to_string(), "coder".to_string()];
        assert_eq!(complete("/ro", &roles, 0).as_deref(), Some("/role "));
        assert_eq!(
            complete("/role a", &roles, 0).as_deref(),
            Some("/role architect")
        );
        assert_eq!(complete("/", &roles, 1).as_deref(), Some("/agents"));
        assert_eq!(complete("hi", &roles, 0), None);
        assert_eq!(candidates("/res", &roles), ["/resume"]);
        assert_eq!(candidates("/re", &roles), ["/review", "/rewind", "/resume"]);
        assert_eq!(complete("/mo", &roles, 0).as_deref(), Some("/model "));
        assert_eq!(complete("/go", &roles, 0).as_deref(), Some("/goal "));
        assert_eq!(
            complete("/goal c", &roles, 0).as_deref(),
            Some("/goal clear")
        );
        assert_eq!(
            complete("/approval r", &roles, 0).as_deref(),
            Some("/approval read-only")
        );
        assert_eq!(complete("/rev", &roles, 0).as_deref(), Some("/review "));
        assert_eq!(
            complete("/review b", &roles, 0).as_deref(),
            Some("/review base ")
        );
        assert_eq!(candidates("/review ", &roles).len(), 3);
    }
}
