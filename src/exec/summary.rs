use crate::protocol::{AgentSummary, SessionTotals, TaskMetrics};
use crate::text::task_line;
use std::fmt::Write;

/// The per-agent table `exec` prints on stderr at the end, and a line of task figures
/// when workers had tasks.
pub fn summary_table(agents: &[AgentSummary], totals: &SessionTotals) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n{:<10} {:<16} {:<10} {:>9} {:>9} {:>9} {:>6} {:>6} {:>6} {:>8} {:>9} {:>6} {:>10}",
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
        "first-pass"
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
    if totals.tasks.started > 0 {
        let _ = writeln!(s, "{}", task_line(&totals.tasks));
    }
    s
}

/// `ok/failed`, corrections and first-pass rate; blank for agents without tasks (the root).
fn task_columns(t: &TaskMetrics) -> String {
    if t.started == 0 {
        return format!("{:>9} {:>6} {:>10}", "", "", "");
    }
    format!(
        "{:>9} {:>6} {:>10}",
        format!("{}/{}", t.completed, t.failed),
        t.corrections,
        TaskMetrics::percent(t.first_pass_rate())
    )
}
