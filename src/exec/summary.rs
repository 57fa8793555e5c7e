use crate::protocol::{AgentSummary, SessionTotals, TaskMetrics};
use crate::text::task_lines;
use std::fmt::Write;

/// The per-agent table `exec` prints on stderr at the end, and the session's task figures
/// below it when workers had tasks, checks or ended.
pub fn summary_table(agents: &[AgentSummary], totals: &SessionTotals) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n{:<10} {:<16} {:<10} {:>9} {:>9} {:>9} {:>6} {:>6} {:>6} {:>8} {:>9} {:>6} {:>10} {:>7} {:>5} {:>7}",
        "agent",
        "role",
        "status",
        "prompt",
        "output",
        "cost $",
        "calls",
        "tools",
        "errors",
        "wall s",
        "ok/failed",
        "fixes",
        "first-pass",
        "success",
        "score",
        "life s"
    );
    for a in agents {
        let _ = writeln!(
            s,
            "{:<10} {:<16} {:<10} {:>9} {:>9} {:>9.4} {:>6} {:>6} {:>6} {:>8.1} {}",
            a.agent_id.short(),
            a.role,
            a.status.as_str(),
            a.prompt_tokens,
            a.completion_tokens,
            a.cost_usd,
            a.model_calls,
            a.tool_calls,
            a.errors,
            a.wall_ms as f64 / 1000.0,
            task_columns(&a.tasks)
        );
    }
    let _ = writeln!(
        s,
        "{:<10} {:<16} {:<10} {:>9} {:>9} {:>9.4} {:>6} {:>6} {:>6} {:>8.1} {}",
        "total",
        format!("{} agents", totals.agents),
        "",
        totals.prompt_tokens,
        totals.completion_tokens,
        totals.cost_usd,
        totals.model_calls,
        totals.tool_calls,
        totals.errors,
        totals.wall_ms as f64 / 1000.0,
        task_columns(&totals.tasks)
    );
    for line in task_lines(&totals.tasks) {
        let _ = writeln!(s, "{line}");
    }
    // Rows without task figures (the persona's) end in blank columns.
    s.lines().map(|l| format!("{}\n", l.trim_end())).collect()
}

/// `ok/failed`, corrections, first-pass and success rates, the mean verification score
/// and the lifespan; blank for agents without tasks (the root).
fn task_columns(t: &TaskMetrics) -> String {
    if !t.any() {
        return format!(
            "{:>9} {:>6} {:>10} {:>7} {:>5} {:>7}",
            "", "", "", "", "", ""
        );
    }
    let or_dash = |v: Option<String>| v.unwrap_or_else(|| "–".into());
    format!(
        "{:>9} {:>6} {:>10} {:>7} {:>5} {:>7}",
        format!("{}/{}", t.completed, t.failed),
        t.corrections,
        TaskMetrics::percent(t.first_pass_rate()),
        TaskMetrics::percent(t.success_rate()),
        or_dash(t.avg_score().map(|s| format!("{s:.0}"))),
        or_dash(
            t.avg_lifespan_ms()
                .map(|ms| format!("{:.1}", ms as f64 / 1000.0))
        ),
    )
}
