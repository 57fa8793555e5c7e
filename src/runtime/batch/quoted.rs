//! The batch's quote (issue 55 part 1): before its one approval, every row not yet done
//! is quoted as the worker `spawn_agent` would start for it (the row's role, model and
//! tools, the batch's shared instructions, the row's own text), so the user sees the whole
//! batch's projected spend, and a batch above what is left of the budget never starts.

use super::super::agent_tools::{Call, worker_model};
use super::super::quote::{self, Draft};
use super::plan::Plan;
use super::row;
use crate::protocol::Quote;

/// The quote of the rows left, told as a `quote` event; refused (naming both figures)
/// when it is above what is left of the caller's budget.
pub fn rows_left(cx: &Call<'_>, plan: &Plan) -> Result<Quote, String> {
    let me = cx
        .team
        .card(cx.caller)
        .ok_or_else(|| "agent no longer exists".to_string())?;
    let role = cx
        .shared
        .roles
        .get(&plan.spec.role)
        .ok_or_else(|| format!("no role named `{}` is loaded", plan.spec.role))?;
    let model = worker_model::choose(cx.shared.config, role, None)?;
    let tools = cx.host.tools_for(role, true, Some(&me.tools), &model);
    let texts: Vec<String> = plan
        .rows
        .iter()
        .filter(|r| !plan.settled.contains_key(&r.id))
        .map(|r| row::task_text(plan, r, None))
        .collect();
    let drafts: Vec<Draft<'_>> = texts
        .iter()
        .map(|text| Draft {
            agent_id: None,
            role,
            model: &model,
            tools: &tools,
            instructions: Some(&plan.instructions),
            first_message: text,
        })
        .collect();
    let q = quote::make(cx, &drafts, true);
    // The rows have no ids yet: nothing is held as being spawned (each row's own spawn
    // is quoted again as it starts, with the batch's running rows counted).
    quote::publish(cx, &q)?;
    Ok(q)
}
