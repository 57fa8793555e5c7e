use crate::protocol::{AgentSummary, QuoteVsActual, SessionTotals, TaskMetrics, WasteReport};
use crate::text::task_lines;
use std::fmt::Write;

/// Under the table: each role's quote beside what its quoted workers spent, then what was
/// spent for nothing (issue 55), each line naming the workers.
pub fn spend_lines(quotes: &[QuoteVsActual], waste: &WasteReport) -> String {
    let mut s = String::new();
    if !quotes.is_empty() {
        let _ = writeln!(s, "quote against actual, per role:");
        for q in quotes {
            let _ = writeln!(s, "  {}", q.line());
        }
    }
    if !waste.is_empty() {
        let _ = writeln!(s, "waste (a worker may be on more than one line):");
        for l in &waste.lines {
            let _ = writeln!(s, "  {}", l.line());
        }
    }
    s
}

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
        // An agent worker that reported no usage: its tokens are unknown, not zero.
        let (prompt, output) = match counts_no_usage(a) {
            true => ("–".to_string(), "–".to_string()),
            false => (a.prompt_tokens.to_string(), a.completion_tokens.to_string()),
        };
        let _ = writeln!(
            s,
            "{:<10} {:<16} {:<10} {:>9} {:>9} {:>9.4} {:>6} {:>6} {:>6} {:>8.1} {}",
            a.agent_id.short(),
            a.role,
            a.status.as_str(),
            prompt,
            output,
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
    for a in agents.iter().filter(|a| counts_no_usage(a)) {
        let _ = writeln!(
            s,
            "{} ({}) is another agent that reported no usage: its budget was wall time and prompts",
            a.agent_id.short(),
            a.role
        );
    }
    // Rows without task figures (the persona's) end in blank columns.
    s.lines().map(|l| format!("{}\n", l.trim_end())).collect()
}

/// Whether `a` is an agent worker (its model is `acp: COMMAND`, `roles::Role::model`)
/// whose agent reported no usage, so squad counted none.
fn counts_no_usage(a: &AgentSummary) -> bool {
    a.model.starts_with("acp: ")
        && a.prompt_tokens == 0
        && a.completion_tokens == 0
        && a.cost_usd == 0.0
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::AgentId;

    #[test]
    fn an_agent_worker_without_usage_says_its_budget_was_wall_time_and_prompts() {
        let silent = AgentSummary {
            agent_id: AgentId::new(),
            role: "squad_acp".into(),
            model: "acp: squad acp".into(),
            ..AgentSummary::default()
        };
        let counted = AgentSummary {
            agent_id: AgentId::new(),
            role: "codex".into(),
            model: "acp: codex-acp".into(),
            prompt_tokens: 1230,
            ..AgentSummary::default()
        };
        let table = summary_table(
            &[silent.clone(), counted.clone()],
            &SessionTotals::default(),
        );
        let row = |a: &AgentSummary| {
            table
                .lines()
                .find(|l| l.starts_with(&a.agent_id.short()))
                .unwrap()
                .to_string()
        };
        assert!(row(&silent).contains(" – "), "{table}");
        assert!(row(&counted).contains(" 1230 "), "{table}");
        let said = format!(
            "{} (squad_acp) is another agent that reported no usage: its budget was wall time and prompts",
            silent.agent_id.short()
        );
        assert!(table.contains(&said), "{table}");
        assert!(!table.contains("(codex) is another agent"), "{table}");
    }
}
