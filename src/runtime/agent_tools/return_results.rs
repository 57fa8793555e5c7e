//! `return_results`: a worker's structured result, validated field by field.

use super::{AgentTool, Call, Checked, Done, Effect, Failure};
use crate::model::ToolSpec;
use crate::protocol::{AgentResult, EventKind};
use crate::roles::Audience;
use async_trait::async_trait;
use serde_json::{Map, Value, json};

/// The tool's name, for the code that must tell its calls apart.
pub const RETURN_RESULTS: &str = "return_results";

pub struct ReturnResults;

#[async_trait]
impl AgentTool for ReturnResults {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: RETURN_RESULTS.into(),
            description: "Finish your task and hand your supervisor the result. Call it exactly once when done \
                (also when you failed: say so in status and summary)."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "result": {
                        "type": "object",
                        "properties": {
                            "status": {"type": "string", "enum": ["success", "failure", "partial"]},
                            "summary": {"type": "string", "description": "What you did and found, concretely."},
                            "artifacts": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "file_path": {"type": "string"},
                                        "description": {"type": "string"},
                                        "change_type": {"type": "string", "enum": ["created", "modified", "deleted", "referenced"]}
                                    },
                                    "required": ["file_path", "description", "change_type"]
                                }
                            },
                            "known_issues": {"type": "array", "items": {"type": "string"}, "description": "What is left or doubtful; [] if nothing."}
                        },
                        "required": ["status", "summary", "artifacts", "known_issues"]
                    }
                },
                "required": ["result"]
            }),
            freeform: None,
        }
    }

    fn audience(&self) -> Audience {
        Audience::Workers
    }

    /// The wrapper is checked by hand, not by the schema: a model that leaves out the
    /// `result` object but sends its fields is forgiven; the content is checked strictly.
    async fn call(&self, cx: &Call<'_>, args: Value) -> Result<Done, Failure> {
        let raw = match args.get("result") {
            Some(v) => v.clone(),
            None if args.get("status").is_some() => args,
            None => {
                return Err(Failure::Fixable(
                    "missing required argument `result` (an object with status, summary, artifacts, known_issues)".into(),
                ));
            }
        };
        let mut result = validate_result(&raw).map_err(|e| {
            Failure::Fixable(format!(
                "invalid result: {e}. Fix it and call return_results again."
            ))
        })?;
        match cx.host.check_result(&result).await {
            Checked::Unchecked => {}
            Checked::Deliver(verdict) => {
                cx.team
                    .emit(cx.caller, EventKind::Verification(verdict.clone()));
                result.verification = Some(verdict);
            }
            Checked::Correct { verdict, message } => {
                let output = format!(
                    "result not accepted yet: the check against the workspace scored {} with {} error(s); the correction follows",
                    verdict.score_text(),
                    verdict.failures.len()
                );
                cx.team.emit(cx.caller, EventKind::Verification(verdict));
                return Ok(Done {
                    output,
                    effect: Effect::Correct(message),
                });
            }
            Checked::Kept(message) => {
                return Ok(Done {
                    output: "result not accepted yet: a task_completed hook keeps your task open; its reason follows".into(),
                    effect: Effect::Correct(message),
                });
            }
        }
        let parent = cx.team.set_result(cx.caller, result.clone());
        // Each fact once: the verdict was its own event just before.
        result.verification = None;
        cx.team.emit(
            cx.caller,
            EventKind::ResultReturned {
                parent_id: parent,
                result,
            },
        );
        Ok(Done {
            output: "results delivered to your supervisor".to_string(),
            effect: Effect::Returned,
        })
    }
}

/// Checks a `return_results` payload field by field, naming the first bad one.
pub fn validate_result(v: &Value) -> Result<AgentResult, String> {
    let obj = v
        .as_object()
        .ok_or_else(|| format!("`result` must be an object, got {v}"))?;
    let status = match obj.get("status") {
        Some(Value::String(s)) if ["success", "failure", "partial"].contains(&s.as_str()) => s,
        Some(other) => {
            return Err(format!(
                "`result.status` must be one of \"success\", \"failure\", \"partial\"; got {other}"
            ));
        }
        None => return Err("missing `result.status` (success, failure or partial)".into()),
    };
    match obj.get("summary") {
        Some(Value::String(s)) if !s.trim().is_empty() => {}
        Some(Value::String(_)) => return Err("`result.summary` must not be empty".into()),
        Some(other) => return Err(format!("`result.summary` must be a string; got {other}")),
        None => return Err("missing `result.summary`".into()),
    }
    match obj.get("artifacts") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => check_artifacts(items)?,
        Some(other) => return Err(format!("`result.artifacts` must be an array; got {other}")),
    }
    match obj.get("known_issues") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            if let Some((i, bad)) = items.iter().enumerate().find(|(_, v)| !v.is_string()) {
                return Err(format!(
                    "`result.known_issues[{i}]` must be a string; got {bad}"
                ));
            }
        }
        Some(other) => {
            return Err(format!(
                "`result.known_issues` must be an array of strings; got {other}"
            ));
        }
    }
    let clean = cleaned(obj, status);
    serde_json::from_value(Value::Object(clean)).map_err(|e| e.to_string())
}

/// Each artifact names its file, says what it is and how it changed.
fn check_artifacts(items: &[Value]) -> Result<(), String> {
    for (i, item) in items.iter().enumerate() {
        let Some(a) = item.as_object() else {
            return Err(format!(
                "`result.artifacts[{i}]` must be an object; got {item}"
            ));
        };
        for key in ["file_path", "description"] {
            if !a.get(key).is_some_and(Value::is_string) {
                return Err(format!("`result.artifacts[{i}].{key}` must be a string"));
            }
        }
        match a.get("change_type").and_then(Value::as_str) {
            Some("created" | "modified" | "deleted" | "referenced") => {}
            _ => {
                return Err(format!(
                    "`result.artifacts[{i}].change_type` must be one of created, modified, deleted, referenced; got {}",
                    a.get("change_type")
                        .map_or("nothing".to_string(), |v| v.to_string())
                ));
            }
        }
    }
    Ok(())
}

/// A checked payload as a result reads it: what only squad sets taken out, missing or
/// null lists empty.
fn cleaned(obj: &Map<String, Value>, status: &str) -> Map<String, Value> {
    let mut clean = obj.clone();
    // Only squad sets the verdict, the merge report and the time.
    clean.remove("verification");
    clean.remove("merge");
    clean.remove("completed_at");
    clean.insert("status".into(), json!(status));
    clean.entry("artifacts").or_insert(json!([]));
    clean.entry("known_issues").or_insert(json!([]));
    if clean.get("artifacts") == Some(&Value::Null) {
        clean.insert("artifacts".into(), json!([]));
    }
    if clean.get("known_issues") == Some(&Value::Null) {
        clean.insert("known_issues".into(), json!([]));
    }
    clean
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_artifact_is_named_by_its_index_and_field() {
        let ok = json!({"file_path": "a.rs", "description": "d", "change_type": "created"});
        assert_eq!(check_artifacts(std::slice::from_ref(&ok)), Ok(()));
        let no_path = json!({"description": "d", "change_type": "created"});
        let err = check_artifacts(&[ok, no_path]).unwrap_err();
        assert_eq!(err, "`result.artifacts[1].file_path` must be a string");
        let bad_change = json!({"file_path": "a.rs", "description": "d", "change_type": "x"});
        let err = check_artifacts(&[bad_change]).unwrap_err();
        assert!(
            err.starts_with("`result.artifacts[0].change_type` must be one of"),
            "{err}"
        );
        assert!(check_artifacts(&[json!("a.rs")]).is_err());
    }

    #[test]
    fn a_result_keeps_none_of_what_only_squad_sets_and_its_lists_default_empty() {
        let v = json!({"status": "success", "summary": "s", "artifacts": null,
            "verification": {}, "merge": {}, "completed_at": "now"});
        let Value::Object(obj) = v else {
            unreachable!()
        };
        let clean = cleaned(&obj, "success");
        let keys: Vec<_> = clean.keys().map(String::as_str).collect();
        assert_eq!(keys.len(), 4, "{keys:?}");
        assert_eq!(clean["artifacts"], json!([]));
        assert_eq!(clean["known_issues"], json!([]));
        let r = validate_result(&Value::Object(obj)).unwrap();
        assert!(r.verification.is_none() && r.artifacts.is_empty());
    }
}
