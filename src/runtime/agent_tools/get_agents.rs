//! `get_agents`: the caller's workers at a glance, and the session's task figures by role
//! (`metrics`), so a supervisor can pick the role that does best.

use super::{AgentTool, Call, Done, Failure};
use crate::model::ToolSpec;
use crate::protocol::{AgentStatus, TaskMetrics};
use crate::roles::Audience;
use crate::runtime::team::ChildInfo;
use crate::text::clip;
use async_trait::async_trait;
use serde_json::{Value, json};

pub struct GetAgents;

#[async_trait]
impl AgentTool for GetAgents {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "get_agents".into(),
            // Terse: copilot's first request stays under 8 KB (`benches/context.rs`).
            description: "Your workers, how they stand, and task `metrics` by role.".into(),
            parameters: json!({"type": "object", "properties": {"include_completed": {"type": "boolean"}}}),
            freeform: None,
        }
    }

    fn audience(&self) -> Audience {
        Audience::Supervisors
    }

    fn concurrent(&self) -> bool {
        true
    }

    async fn call(&self, cx: &Call<'_>, args: Value) -> Result<Done, Failure> {
        // Seed 000's default: finished workers are listed too.
        let include_completed = args["include_completed"].as_bool().unwrap_or(true);
        let children: Vec<_> = cx
            .team
            .child_infos(cx.caller)
            .into_iter()
            .filter(|a| {
                include_completed
                    || !matches!(
                        a.status,
                        AgentStatus::Completed | AgentStatus::Failed | AgentStatus::Cancelled
                    )
            })
            .collect();
        let mut counts = serde_json::Map::new();
        let list: Vec<Value> = children.iter().map(|a| entry(a, &mut counts)).collect();
        let by_role = cx.team.events().task_metrics_by_role();
        let mut all = TaskMetrics::default();
        for m in by_role.values() {
            all.add(m);
        }
        let by_role: serde_json::Map<String, Value> = by_role
            .iter()
            .map(|(role, m)| (role.clone(), figures(m)))
            .collect();
        let metrics = json!({"workers": figures(&all), "by_role": by_role});
        let mut out = json!({
            "agents": list,
            "total_count": children.len(),
            "include_completed": include_completed,
            "metrics": metrics,
        });
        for (status, n) in counts {
            out[format!("{status}_count")] = n;
        }
        Ok(Done::output(out.to_string()))
    }
}

/// One worker as seed 000 lists it, with squad's verdict and release beside; counts it
/// under its status.
fn entry(a: &ChildInfo, counts: &mut serde_json::Map<String, Value>) -> Value {
    let n = counts.entry(a.status.as_str()).or_insert(json!(0));
    *n = json!(n.as_u64().unwrap_or(0) + 1);
    let mut entry = json!({
        "agent_id": a.id.to_string(),
        "role_name": a.role,
        "status": a.status.as_str(),
        "created_at": a.created_at,
        "task_prompt": clip(&a.task, 120),
        "has_result": a.has_result,
        "parent_id": a.parent.map(|p| p.to_string()),
    });
    if a.released {
        entry["released"] = json!(true);
    }
    if let Some(v) = &a.verification {
        entry["verification"] = json!({
            "passed": v.passed,
            "score": v.score,
            "unchecked": v.unchecked,
            "attempt": v.attempt,
            "errors": v.failures.len(),
        });
    }
    entry
}

/// One set of task figures for the model: the counts, and each rate that can be told
/// (fractions to three places; times in ms).
fn figures(m: &TaskMetrics) -> Value {
    let mut out = json!({
        "tasks": m.started,
        "completed": m.completed,
        "failed": m.failed,
        "corrections": m.corrections,
    });
    if let Ok(Value::Object(rates)) = serde_json::to_value(m.rates()) {
        for (name, v) in rates {
            let v = match v.as_f64() {
                Some(f) if v.is_f64() => json!((f * 1000.0).round() / 1000.0),
                _ => v,
            };
            if !v.is_null() {
                out[name] = v;
            }
        }
    }
    out
}
