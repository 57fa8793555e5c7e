//! What a batch needs before its first row starts: the rows read, the template checked
//! against their columns, the schema checked, the output's place, and the rows an earlier
//! run of it settled (from the log).

use super::super::agent_tools::Call;
use crate::batch::output::Output;
use crate::batch::rows::{self, Row};
use crate::batch::template::Template;
use crate::protocol::{BatchSpec, RowRecord};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Whose paths the spec's are: a model's stay inside the workspace like any tool's; the
/// user's (exec's flags) are theirs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Where {
    Model,
    User,
}

/// A batch ready to run.
pub struct Plan {
    pub spec: BatchSpec,
    pub rows: Vec<Row>,
    pub template: Template,
    pub output: Output,
    /// Rows settled by an earlier run, by id: not run again.
    pub settled: BTreeMap<String, RowRecord>,
    /// Rows of an earlier run whose worker was at work when it ended (with that worker).
    pub stale: Vec<RowRecord>,
    /// What every row's worker is told beyond its row (the same bytes for each, so a
    /// server's prompt cache serves them all after the first).
    pub instructions: String,
}

/// Reads and checks everything the batch needs; the error says what to fix.
pub fn prepare(cx: &Call<'_>, spec: BatchSpec, whose: Where) -> Result<Plan, String> {
    let rows_path = place(cx, &spec.rows, whose)?;
    let read = rows::read(&rows_path, &spec.rows, &spec.id_column).map_err(|e| e.to_string())?;
    if read.rows.is_empty() {
        return Err(format!("rows file `{}` has no rows", spec.rows));
    }
    let template = Template::parse(&spec.template, &read.columns).map_err(|e| e.to_string())?;
    if let Some(schema) = &spec.schema {
        crate::batch::schema::validate_schema(schema).map_err(|e| e.to_string())?;
    }
    may_spawn(cx, &spec.role)?;
    let output = Output::new(place(cx, &spec.output, whose)?, &spec.output);
    let (settled, stale) = {
        let ledger = crate::sync::lock(cx.shared.batches);
        (ledger.settled(spec.key()), ledger.unsettled(spec.key()))
    };
    let instructions = instructions(&spec);
    Ok(Plan {
        spec,
        rows: read.rows,
        template,
        output,
        settled,
        stale,
        instructions,
    })
}

/// The batch's role, if the caller's role may spawn it (its `enabled_agents`).
fn may_spawn(cx: &Call<'_>, role: &str) -> Result<(), String> {
    let mine = cx.team.role(cx.caller).unwrap_or_default();
    let enabled =
        (cx.shared.roles.get(&mine)).is_some_and(|r| r.enabled_agents.iter().any(|a| a == role));
    if !enabled {
        return Err(format!(
            "role `{mine}` may not spawn `{role}` (its enabled_agents)"
        ));
    }
    if cx.shared.roles.get(role).is_none() {
        return Err(format!("no role named `{role}` is loaded"));
    }
    Ok(())
}

/// A path of the spec: inside the workspace for a model, the user's own else (relative
/// ones from the workspace's root).
fn place(cx: &Call<'_>, path: &str, whose: Where) -> Result<PathBuf, String> {
    let ctx = cx.host.tool_context();
    match whose {
        Where::Model => (ctx.workspace.resolve(path)).map_err(|e| format!("`{path}`: {e}")),
        Where::User => Ok(ctx.workspace.root().join(path)),
    }
}

/// The batch's words to each row's worker, the same for every row.
fn instructions(spec: &BatchSpec) -> String {
    let mut text = "You do one row of a batch: your task is the batch's instruction filled \
                    from your row. Do only that row."
        .to_string();
    if let Some(schema) = &spec.schema {
        text.push_str(&format!(
            " Your result's summary must be one JSON object matching this JSON schema, \
             nothing else: {schema}"
        ));
    }
    text
}
