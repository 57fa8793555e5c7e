//! `spawn_batch`: a worker per row of a CSV or JSON Lines file (`runtime/batch`), for a
//! supervisor whose role names it in `tools`. The call lasts until every row settled and
//! answers with what was done, what failed and what it cost; the rows' results are in its
//! output file.

use super::{AgentTool, Call, Done, Failure, parse};
use crate::model::ToolSpec;
use crate::protocol::{BatchSpec, Budget};
use crate::roles::Audience;
use crate::runtime::batch::{self, Where};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

pub const SPAWN_BATCH: &str = "spawn_batch";

pub struct SpawnBatch;

#[derive(Deserialize)]
struct Args {
    rows: String,
    template: String,
    id_column: String,
    role_name: String,
    output: String,
    #[serde(default)]
    schema: Option<Value>,
    #[serde(default)]
    max_concurrency: Option<u32>,
    #[serde(default)]
    budget: Option<Budget>,
}

#[async_trait]
impl AgentTool for SpawnBatch {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: SPAWN_BATCH.into(),
            description: "A worker per row of a CSV or JSONL file; returns when all are done. \
                Each row's status, result and cost go to output."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "rows": {"type": "string"},
                    "template": {"type": "string", "description": "Each worker's task; {column} is the row's value."},
                    "id_column": {"type": "string"},
                    "role_name": {"type": "string"},
                    "output": {"type": "string", "description": ".csv or .jsonl"},
                    "schema": {"type": "object", "description": "JSON schema each result must match."},
                    "max_concurrency": {"type": "integer", "minimum": 1},
                    "budget": {"type": "object", "description": "Per row.", "properties": {"tokens": {"type": "integer"}, "cost_usd": {"type": "number"}}}
                },
                "required": ["rows", "template", "id_column", "role_name", "output"]
            }),
            freeform: None,
        }
    }

    fn audience(&self) -> Audience {
        Audience::Named
    }

    async fn call(&self, cx: &Call<'_>, args: Value) -> Result<Done, Failure> {
        let args: Args = parse(&self.spec(), args)?;
        let spec = BatchSpec {
            rows: args.rows,
            template: args.template,
            id_column: args.id_column,
            role: args.role_name.trim().to_string(),
            output: args.output,
            schema: args.schema,
            max_concurrency: args.max_concurrency,
            budget: args.budget.unwrap_or_default(),
            max_attempts: None,
        };
        let line = batch::run(cx, spec, Where::Model).await?;
        Ok(Done::output(line))
    }
}
