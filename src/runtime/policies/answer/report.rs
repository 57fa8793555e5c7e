//! The short request for the persona's answer once it is due: the user's last message and
//! what the turn's reporting calls and notices said.

use super::{ANSWER_NOW, BACK_TO_GREEN};
use crate::protocol::{AgentResult, HistoryItem};
use crate::text::{clip, describe_result};
use std::collections::HashSet;

/// How much of what the turn's tools reported the short request carries.
const FACTS_BUDGET: usize = 3_000;
/// Of one tool's output.
const FACT_CHARS: usize = 600;

/// The short request for an answer: the user's last message, then what the turn's
/// reporting calls (`reporting`: their ids) and notices said (the latest first to be kept
/// when they are long).
pub(super) fn report_request(
    history: &[HistoryItem],
    reporting: &HashSet<String>,
) -> Vec<HistoryItem> {
    let start = history
        .iter()
        .rposition(|i| matches!(i, HistoryItem::User { text } if !text.starts_with("[squad]")));
    let asked = match start.map(|i| &history[i]) {
        Some(HistoryItem::User { text }) => text.clone(),
        _ => String::from("(the user's message is no longer in the history)"),
    };
    let after = start.map_or(history, |i| &history[i + 1..]);
    let mut facts: Vec<String> = Vec::new();
    let mut used = 0;
    for item in after.iter().rev() {
        let fact = match item {
            HistoryItem::ToolResult {
                call_id,
                name,
                output,
                is_error: false,
            } if reporting.contains(call_id) => reported(name, output),
            HistoryItem::Notice { text } if text != ANSWER_NOW && text != BACK_TO_GREEN => {
                clip(text, FACT_CHARS)
            }
            _ => continue,
        };
        used += fact.len();
        if used > FACTS_BUDGET {
            break;
        }
        facts.push(fact);
    }
    facts.reverse();
    let facts = if facts.is_empty() {
        String::from("(nothing was reported)")
    } else {
        facts.join("\n\n")
    };
    vec![
        HistoryItem::user(asked),
        HistoryItem::user(format!(
            "[squad] What was done and reported:\n\n{facts}\n\nNow write your answer to the \
             message above, for the user, in plain sentences."
        )),
    ]
}

/// What a tool reported: workers' results in words, one entry each (their pretty-printed
/// JSON would fill the budget with braces), other output clipped.
fn reported(name: &str, output: &str) -> String {
    let results = output
        .find('{')
        .and_then(|at| serde_json::from_str::<serde_json::Value>(&output[at..]).ok())
        .and_then(|v| v.get("results").and_then(|r| r.as_array()).cloned());
    let Some(results) = results else {
        return format!("{name}: {}", clip(output, FACT_CHARS));
    };
    let lines: Vec<String> = results
        .iter()
        .map(|r| {
            let field = |key: &str| r[key].as_str().unwrap_or("").to_string();
            let what = match serde_json::from_value::<AgentResult>(r["result"].clone()) {
                Ok(result) => describe_result(&result),
                Err(_) => field("error"),
            };
            format!(
                "- {} worker ({}): {}",
                field("role"),
                field("status"),
                clip(&what, FACT_CHARS)
            )
        })
        .collect();
    format!("{name}:\n{}", lines.join("\n"))
}
