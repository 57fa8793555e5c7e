//! The goal's layer, on the persona only: at the end of each of its turns, while a goal is
//! active, the check runs and either ends the goal or sends the persona on.

use super::{GoalRefused, Goals, Next};
use crate::protocol::{GOAL_REFUSED, Goal, GoalCheck, GoalEnd, Op, TurnEnd};
use crate::runtime::cx::{AgentCx, Layer, OpRefused, Policy, Starting};
use crate::runtime::points::AfterTurn;
use crate::runtime::session::Session;
use crate::runtime::team::FanIn;
use crate::tools::{RunStatus, ToolContext, ToolError, run_shell};
use async_trait::async_trait;
use std::sync::Arc;

/// Lines of a check's output kept in its event and in the message to the persona.
const TAIL_LINES: usize = 20;
/// Bytes of those lines at most.
const TAIL_BYTES: usize = 2_000;

/// Gives the persona the goal's layer; workers work on their tasks, not the goal.
pub struct GoalPolicy(pub Arc<Goals>);

impl Policy for GoalPolicy {
    fn layer_for(&self, agent: &Starting) -> Option<Box<dyn Layer>> {
        (!agent.is_worker()).then(|| Box::new(GoalLayer(self.0.clone())) as Box<dyn Layer>)
    }

    /// `/goal` sets or clears the goal; the user's `/stop` ends it too (a rewind's stop
    /// keeps it).
    fn on_op(&self, session: &Arc<Session>, op: &Op) -> Result<(), OpRefused> {
        let team = &session.team;
        match op {
            Op::SetGoal { goal } => {
                let set = set_goal(session, &self.0, goal.clone());
                set.map_err(|e| format!("{GOAL_REFUSED}{e}").into())
            }
            Op::Stop => {
                self.0.end_active(team, GoalEnd::Stopped);
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// `/goal`: a goal whose only check is the project's rules needs rules to check.
fn set_goal(session: &Session, goals: &Goals, goal: Option<Goal>) -> Result<(), GoalRefused> {
    let nothing_to_run = |g: &Goal| {
        g.rules
            && g.check.trim().is_empty()
            && session.config.verify.rules.is_empty()
            && (session.config.tools.test_command.as_deref()).is_none_or(|c| c.trim().is_empty())
    };
    if goal.as_ref().is_some_and(nothing_to_run) {
        return Err(GoalRefused::NoRules);
    }
    goals.set(&session.team, goal)
}

pub struct GoalLayer(Arc<Goals>);

#[async_trait]
impl Layer for GoalLayer {
    /// Only a turn that ended by itself is checked: a failed or stopped turn leaves the goal
    /// active for the next one, and a persona whose workers still owe results is not done
    /// (the turn their results start is checked).
    async fn turn_end(&self, cx: &AgentCx, end: TurnEnd, _final_text: &str) -> AfterTurn {
        let by_itself = matches!(
            end,
            TurnEnd::Completed | TurnEnd::MaxTokens | TurnEnd::MaxIterations
        );
        if !by_itself || cx.is_worker() || cx.team().owed_results(cx.id()) != FanIn::Nothing {
            return AfterTurn::Rest;
        }
        let Some((goal, turns)) = self.0.active() else {
            return AfterTurn::Rest;
        };
        let Some((check, failing)) = run_check(cx, &goal, turns + 1).await else {
            return AfterTurn::Rest;
        };
        let message = again(&goal, &check, &failing);
        match self.0.checked(cx.team(), &goal, check) {
            Next::Rest => AfterTurn::Rest,
            Next::Again => AfterTurn::Pursue(message),
        }
    }
}

/// What the goal's check runs: its command, then (with `rules`) the project's test command
/// and its `[[verify.rules]]` commands, as a worker's result is checked.
fn commands(cx: &AgentCx, goal: &Goal, test_command: Option<&String>) -> Vec<String> {
    let mut list: Vec<String> = Some(goal.check.trim().to_string())
        .filter(|c| !c.is_empty())
        .into_iter()
        .collect();
    if goal.rules {
        list.extend(test_command.cloned());
        let rules = &cx.session().config.verify.rules;
        list.extend(rules.iter().map(|r| r.command.clone()));
    }
    list
}

/// Runs the goal's commands as the persona's commands run (its sandbox, its root, the
/// command timeout), up to the first that fails: the check and the command that failed
/// (empty when all passed). `None` when the turn's token stopped it.
async fn run_check(cx: &AgentCx, goal: &Goal, turn: u32) -> Option<(GoalCheck, String)> {
    let ctx = cx.tool_context();
    let list = commands(cx, goal, ctx.settings.test_command.as_ref());
    let mut ran = (Some(0), String::new(), String::new());
    if list.is_empty() {
        let why = "no check to run: no test command or [[verify.rules]] are configured";
        ran = (None, why.to_string(), String::new());
    }
    for command in list {
        let (exit_code, output) = run_one(&ctx, &command).await?;
        ran = (exit_code, output, command);
        if ran.0 != Some(0) {
            break;
        }
    }
    let (exit_code, output, command) = ran;
    let passed = exit_code == Some(0);
    let check = GoalCheck {
        turn,
        max_turns: goal.max_turns,
        passed,
        exit_code,
        output_tail: tail(&output),
    };
    Some((check, if passed { String::new() } else { command }))
}

/// One command of the check: its exit code (`None`: killed, timed out, not started) and
/// output; `None` when cancelled.
async fn run_one(ctx: &ToolContext, command: &str) -> Option<(Option<i32>, String)> {
    let timeout = ctx.settings.command_timeout;
    Some(match run_shell(ctx, command, timeout).await {
        Ok(o) => match o.status {
            RunStatus::Exited(code) => (Some(code), o.output),
            RunStatus::Signalled(sig) => (None, format!("{}\n(killed by signal {sig})", o.output)),
            RunStatus::TimedOut(after) => (
                None,
                format!("{}\n(did not finish within {}s)", o.output, after.as_secs()),
            ),
        },
        Err(ToolError::Cancelled) => return None,
        Err(e) => (None, format!("could not run: {e}")),
    })
}

/// The last lines of `output`, at most `TAIL_BYTES` (cut at a character).
pub(super) fn tail(output: &str) -> String {
    let lines: Vec<&str> = output.trim_end().lines().collect();
    let kept = lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n");
    if kept.len() <= TAIL_BYTES {
        return kept;
    }
    let mut at = kept.len() - TAIL_BYTES;
    while !kept.is_char_boundary(at) {
        at += 1;
    }
    format!("…{}", &kept[at..])
}

/// The persona's next message after a failing check: the goal, and what the check said.
/// Trigger: the user set a goal and its check, a real command, exited non-zero at the end
/// of a turn; with no goal the layer says nothing (`tests.rs`
/// `without_a_goal_the_layer_never_intervenes`, `tests/goal.rs`
/// `without_a_goal_a_plain_turn_ends_as_before`).
fn again(goal: &Goal, check: &GoalCheck, failing: &str) -> String {
    let output = match check.output_tail.trim() {
        "" => String::from("(no output)"),
        text => format!("```\n{text}\n```"),
    };
    let which = match failing {
        "" => String::new(),
        command => format!(": `{command}` {}", check.verdict()),
    };
    format!(
        "[squad] The goal is not met yet (check {}/{}): {}\nIt is met when {}. The check \
         failed{which}; its output ends with:\n{output}\nKeep working toward the goal; the \
         check runs again when your turn ends.",
        check.turn,
        check.max_turns,
        goal.text.trim(),
        goal.end(),
    )
}
