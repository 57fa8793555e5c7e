//! A row's result against the batch's schema: the JSON object the worker's summary holds
//! (alone, or in a ```json block), checked the way squad checks tools' arguments
//! (`tools::check_value`: fields, types, enums, bounds).

use super::BatchError;
use serde_json::Value;

/// A schema fit to check results with: an object schema.
pub fn validate_schema(schema: &Value) -> Result<(), BatchError> {
    let is_object = schema.get("type").and_then(Value::as_str) == Some("object");
    if !schema.is_object() || !is_object {
        return Err(BatchError::Schema(crate::text::clip(
            &schema.to_string(),
            200,
        )));
    }
    Ok(())
}

/// The row's result from a worker's `summary`: with a schema, the JSON object it holds,
/// checked; else the summary as text.
pub fn row_result(summary: &str, schema: Option<&Value>) -> Result<Value, String> {
    let Some(schema) = schema else {
        return Ok(Value::String(summary.to_string()));
    };
    let value = json_in(summary).ok_or_else(|| {
        "the result's summary holds no JSON object; it must be one JSON object matching \
         the batch's schema"
            .to_string()
    })?;
    crate::tools::check_value(schema, &value)
        .map_err(|e| format!("the result does not match the batch's schema: {e}"))?;
    Ok(value)
}

/// The JSON object in `text`: all of it, a fenced block, or from its first `{` to its
/// last `}`.
fn json_in(text: &str) -> Option<Value> {
    let object = |s: &str| match serde_json::from_str::<Value>(s.trim()) {
        Ok(v @ Value::Object(_)) => Some(v),
        _ => None,
    };
    if let Some(v) = object(text) {
        return Some(v);
    }
    if let Some(start) = text.find("```") {
        let body = &text[start + 3..];
        let body = body.strip_prefix("json").unwrap_or(body);
        if let Some(end) = body.find("```")
            && let Some(v) = object(&body[..end])
        {
            return Some(v);
        }
    }
    let (start, end) = (text.find('{')?, text.rfind('}')?);
    (start < end).then(|| object(&text[start..=end])).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "label": {"type": "string", "enum": ["spam", "ham"]},
            "score": {"type": "number", "minimum": 0}
        }, "required": ["label"]})
    }

    #[test]
    fn a_result_is_found_alone_fenced_or_in_words() {
        let s = schema();
        assert_eq!(
            row_result("{\"label\": \"ham\"}", Some(&s)).unwrap()["label"],
            "ham"
        );
        let fenced = "Done.\n```json\n{\"label\": \"spam\", \"score\": 1}\n```";
        assert_eq!(row_result(fenced, Some(&s)).unwrap()["score"], 1);
        let words = "The answer is {\"label\": \"ham\"} as asked.";
        assert!(row_result(words, Some(&s)).is_ok());
        assert_eq!(row_result("plain", None).unwrap(), json!("plain"));
    }

    #[test]
    fn a_result_off_the_schema_says_why() {
        let s = schema();
        let err = row_result("{\"label\": \"eggs\"}", Some(&s)).unwrap_err();
        assert!(err.contains("field `label` must be one of"), "{err}");
        let err = row_result("{\"score\": 2}", Some(&s)).unwrap_err();
        assert!(err.contains("missing required field `label`"), "{err}");
        let err = row_result("no json here", Some(&s)).unwrap_err();
        assert!(err.contains("holds no JSON object"), "{err}");
    }

    #[test]
    fn only_an_object_schema_is_taken() {
        assert!(validate_schema(&schema()).is_ok());
        assert!(validate_schema(&json!({"type": "string"})).is_err());
        assert!(validate_schema(&json!([1])).is_err());
    }
}
