//! Text both front ends and the runtime show: clipping, one-line labels, the argument that
//! says what a tool call is about, a worker's result in words, the task figures, and the
//! task board's marks and counts.

use crate::protocol::{AgentId, AgentResult, TaskList, TaskMetrics, TaskStatus};
use serde_json::Value;

/// An error and its causes on one line (`a: b: c`), each cause once: an error whose own
/// words already end with its source's (`cannot open X: {source}` that also names it as
/// its source) would otherwise say it twice.
pub fn error_chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let words = cause.to_string();
        if out.is_empty() {
            out = words;
        } else if !out.contains(&words) {
            out = format!("{out}: {words}");
        }
    }
    out
}

/// `s` cut to at most `max` bytes (on a character boundary), saying how long it was.
pub fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes in all)", &s[..end], s.len())
}

/// `s` cut to at most `max` bytes (at a character's edge) with an ellipsis: a label.
pub fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", s[..end].trim_end())
}

/// Whitespace collapsed to single spaces: a one-line label for a task or a message.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The argument that says what a call is about: the command, the path, the role…
pub fn key_argument(arguments: &str) -> String {
    const KEYS: &[&str] = &[
        "command",
        "cmd",
        "path",
        "file_path",
        "pattern",
        "query",
        "question",
        "role_name",
        "role",
        "target_agent",
        "agent_id",
        "agent_ids",
        "url",
        "status",
    ];
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(arguments) else {
        return one_line(arguments);
    };
    // `apply_patch`: the files it names say more than its first line.
    if let Some(Value::String(patch)) = map.get("patch") {
        let files = patch_files(patch);
        if !files.is_empty() {
            return files.join(", ");
        }
    }
    let show = |v: &Value| -> Option<String> {
        match v {
            Value::String(s) => Some(one_line(s)),
            Value::Number(n) => Some(n.to_string()),
            Value::Array(a) => Some(
                a.iter()
                    .filter_map(|x| x.as_str().map(short_id_or))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            _ => None,
        }
    };
    // A board task's change (`update_task`): which task, then to what; the status alone
    // next to a failed call's mark read as if the call had been cancelled.
    if let (Some(id), Some(status)) = (
        map.get("id").and_then(show),
        map.get("status").and_then(show),
    ) {
        return format!("{id} → {status}");
    }
    for k in KEYS {
        if let Some(s) = map.get(*k).and_then(show) {
            return if k.starts_with("agent_id") {
                short_id_or(&s)
            } else {
                s
            };
        }
    }
    map.values().find_map(show).unwrap_or_default()
}

/// The paths of a V4A patch's file headers, in order.
fn patch_files(patch: &str) -> Vec<&str> {
    const HEADERS: [&str; 3] = ["*** Add File:", "*** Update File:", "*** Delete File:"];
    patch
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            HEADERS
                .iter()
                .find_map(|h| l.strip_prefix(h))
                .map(str::trim)
        })
        .filter(|p| !p.is_empty())
        .collect()
}

/// Agent ids are uuids; eight hex digits are enough for a person.
fn short_id_or(s: &str) -> String {
    match AgentId::parse(s) {
        Some(id) => id.short(),
        None => s.to_string(),
    }
}

/// A worker's result for people: status and summary, then artifacts and known issues.
pub fn describe_result(result: &AgentResult) -> String {
    let mut s = format!("{}: {}", result.status.as_str(), result.summary);
    for a in &result.artifacts {
        s.push_str(&format!(
            "\n  {} {} — {}",
            a.change_type.as_str(),
            a.file_path,
            a.description
        ));
    }
    for k in &result.known_issues {
        s.push_str(&format!("\n  known issue: {k}"));
    }
    s
}

/// The task figures in words, one line each for the tasks, their checks and the workers'
/// lives; a line with nothing to tell is left out. Plain words, not the metrics' names (a
/// correction is a result sent back to be fixed): the results sent back of those checked
/// and the fixes per task answer different questions, so both are said.
pub fn task_lines(t: &TaskMetrics) -> Vec<String> {
    let pct = TaskMetrics::percent;
    let secs = |ms: Option<u64>| {
        ms.map_or_else(
            || "–".to_string(),
            |ms| format!("{:.1}s", ms as f64 / 1000.0),
        )
    };
    let mut out = Vec::new();
    if t.started > 0 {
        out.push(format!(
            "tasks: {} started, {} completed, {} failed · success rate {} · first-pass {} · avg task {}",
            t.started,
            t.completed,
            t.failed,
            pct(t.success_rate()),
            pct(t.first_pass_rate()),
            secs(t.avg_task_ms())
        ));
    }
    let checked = t.corrections + t.verified;
    if checked == 0 && t.unchecked > 0 {
        // Rates of nothing are dashes: say what happened instead.
        out.push(format!(
            "checks: no result had anything to check ({} unchecked)",
            t.unchecked
        ));
    } else if t.started > 0 || t.scored > 0 {
        let score = t
            .avg_score()
            .map_or_else(|| "–".to_string(), |s| format!("{s:.0}/100"));
        let unchecked = match t.unchecked {
            0 => String::new(),
            n => format!(" · {n} unchecked (nothing to check)"),
        };
        let per_task = t
            .seed_retry_rate()
            .map_or_else(|| "–".to_string(), |r| format!("{r:.1}"));
        out.push(format!(
            "checks: {} results checked, {} sent back to be fixed ({}) · {} of {} checked \
             tasks needed a fix ({}) · {per_task} fixes per task · avg score {score}{unchecked}",
            checked,
            t.corrections,
            pct(t.retry_rate()),
            t.caught,
            t.verified,
            pct(t.catch_rate()),
        ));
    }
    if t.lifespans > 0 {
        out.push(format!(
            "workers: avg lifespan {} (spawn to release, {} ended)",
            secs(t.avg_lifespan_ms()),
            t.lifespans
        ));
    }
    out
}

/// A distinct mark per task status, readable without colour; a task a deadlock holds gets
/// its own.
pub fn task_mark(status: TaskStatus, stuck: bool) -> &'static str {
    if stuck {
        return "⊗";
    }
    match status {
        TaskStatus::Pending => "○",
        TaskStatus::Ready => "▷",
        TaskStatus::Running => "●",
        TaskStatus::Done => "✓",
        TaskStatus::Failed => "✗",
        TaskStatus::Blocked => "■",
        TaskStatus::Cancelled => "⊘",
    }
}

/// `tasks: 1 running · 2 pending · 1 done`, and what a deadlock means when there is one.
pub fn board_line(list: &TaskList) -> String {
    let counts: Vec<String> = list
        .counts()
        .iter()
        .map(|(s, n)| format!("{n} {}", s.as_str()))
        .collect();
    let mut line = format!("tasks: {}", counts.join(" · "));
    if list.deadlocked() {
        line.push_str(" — deadlock: nothing can run");
    }
    line
}

/// The `limit` best fuzzy matches of `query` among `items` (indices, best first): the
/// query's characters in order, case aside; runs of them, starts of path segments and the
/// file name count more, shorter paths win ties. An empty query keeps the items' order.
pub fn fuzzy_rank(query: &str, items: &[String], limit: usize) -> Vec<usize> {
    if query.is_empty() {
        return (0..items.len().min(limit)).collect();
    }
    let q: Vec<char> = query.chars().flat_map(char::to_lowercase).collect();
    let mut scored: Vec<(i64, usize, usize)> = items
        .iter()
        .enumerate()
        .filter_map(|(i, s)| fuzzy_score(&q, s).map(|sc| (sc, s.len(), i)))
        .collect();
    scored.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    scored.into_iter().take(limit).map(|(_, _, i)| i).collect()
}

/// How well `item` matches the lowercase `q`, or `None` when it does not.
fn fuzzy_score(q: &[char], item: &str) -> Option<i64> {
    // Most paths and queries are ASCII: bytes, no case folding per character.
    if item.is_ascii() && q.iter().all(char::is_ascii) {
        return fuzzy_score_ascii(q, item.as_bytes());
    }
    let name_at = item.rfind('/').map_or(0, |i| i + 1);
    let mut score = 0i64;
    let mut qi = 0;
    let mut prev: Option<char> = None;
    let mut last_hit = false;
    for (at, c) in item.char_indices() {
        if qi == q.len() {
            break;
        }
        let hit = c.to_lowercase().eq(q[qi].to_lowercase());
        if hit {
            score += 1;
            if last_hit {
                score += 5;
            }
            if prev.is_none_or(|p| matches!(p, '/' | '_' | '-' | '.' | ' ')) {
                score += 8;
            }
            if at >= name_at {
                score += 2;
            }
            qi += 1;
        }
        last_hit = hit;
        prev = Some(c);
    }
    (qi == q.len()).then_some(score)
}

/// `fuzzy_score` on ASCII: the same points.
fn fuzzy_score_ascii(q: &[char], item: &[u8]) -> Option<i64> {
    let name_at = item.iter().rposition(|b| *b == b'/').map_or(0, |i| i + 1);
    let (mut score, mut qi, mut last_hit) = (0i64, 0, false);
    for (at, b) in item.iter().enumerate() {
        if qi == q.len() {
            break;
        }
        let hit = b.to_ascii_lowercase() == q[qi] as u8;
        if hit {
            score += 1 + if last_hit { 5 } else { 0 };
            if at == 0 || matches!(item[at - 1], b'/' | b'_' | b'-' | b'.' | b' ') {
                score += 8;
            }
            if at >= name_at {
                score += 2;
            }
            qi += 1;
        }
        last_hit = hit;
    }
    (qi == q.len()).then_some(score)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_figures_are_in_plain_words() {
        let corrected = TaskMetrics {
            started: 2,
            completed: 2,
            corrections: 2,
            verified: 2,
            caught: 1,
            score_sum: 170,
            scored: 2,
            ..Default::default()
        };
        let lines = task_lines(&corrected);
        assert_eq!(
            lines[1],
            "checks: 4 results checked, 2 sent back to be fixed (50%) · 1 of 2 checked tasks \
             needed a fix (50%) · 1.0 fixes per task · avg score 85/100"
        );
        let nothing = TaskMetrics {
            started: 2,
            completed: 2,
            unchecked: 2,
            ..Default::default()
        };
        assert_eq!(
            task_lines(&nothing)[1],
            "checks: no result had anything to check (2 unchecked)"
        );
        for line in lines.iter().chain(&task_lines(&nothing)) {
            for jargon in ["QC", "catch rate", "retry rate", "seed"] {
                assert!(!line.contains(jargon), "{line}");
            }
        }
    }

    #[test]
    fn an_error_chain_says_each_cause_once() {
        let io = || std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        #[derive(Debug, thiserror::Error)]
        #[error("cannot open the log: {source}")]
        struct Open {
            source: std::io::Error,
        }
        let doubled = anyhow::Error::new(Open { source: io() });
        assert_eq!(error_chain(&doubled), "cannot open the log: no such file");
        let context = anyhow::Error::new(io()).context("reading config.toml");
        assert_eq!(error_chain(&context), "reading config.toml: no such file");
    }

    #[test]
    fn clip_keeps_char_boundaries_and_says_the_size() {
        assert_eq!(clip("short", 10), "short");
        assert_eq!(clip("héllo", 2), "h… (6 bytes in all)");
    }

    #[test]
    fn key_argument_prefers_what_the_call_is_about() {
        assert_eq!(key_argument(r#"{"path":"a.rs","content":"x"}"#), "a.rs");
        assert_eq!(key_argument(r#"{"command":"cargo  test"}"#), "cargo test");
        let id = AgentId::new();
        assert_eq!(
            key_argument(&format!(r#"{{"agent_id":"{id}"}}"#)),
            id.short()
        );
        assert_eq!(
            key_argument(r#"{"options":["a","b"],"question":"Which one?"}"#),
            "Which one?"
        );
        assert_eq!(key_argument("not json\nat all"), "not json at all");
        assert_eq!(
            key_argument(r#"{"id":"t3","status":"cancelled"}"#),
            "t3 → cancelled"
        );
        let patch = "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-x\n+y\n\
                     *** Add File: b.md\n+b\n*** End Patch";
        assert_eq!(
            key_argument(&serde_json::json!({ "patch": patch }).to_string()),
            "src/a.rs, b.md"
        );
    }

    #[test]
    fn fuzzy_rank_prefers_runs_segment_starts_and_file_names() {
        let items: Vec<String> = [
            "src/tui/composer.rs",
            "docs/compose.md",
            "src/main.rs",
            "Cargo.toml",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(fuzzy_rank("main", &items, 5), [2]);
        assert_eq!(fuzzy_rank("compose", &items, 5), [1, 0]);
        assert_eq!(fuzzy_rank("tuicomp", &items, 5), [0]);
        assert_eq!(fuzzy_rank("CARGO", &items, 5), [3]);
        assert_eq!(fuzzy_rank("zzz", &items, 5), Vec::<usize>::new());
        assert_eq!(fuzzy_rank("", &items, 2), [0, 1]);
        assert_eq!(fuzzy_rank("s", &items, 1).len(), 1);
        // Beyond ASCII the same rules, case folded per character.
        let wide: Vec<String> = vec!["docs/Übersicht.md".into(), "docs/other.md".into()];
        assert_eq!(fuzzy_rank("über", &wide, 5), [0]);
    }
}
