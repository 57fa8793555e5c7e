//! Argument parsing shared by the tools: checks the JSON against the tool's own schema first,
//! so a mistake is reported by field name in words a model can act on, then deserializes
//! into the tool's typed struct.

use super::ToolError;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Parses `args` into `T`, after checking it against `schema` (the tool's `parameters`).
///
/// `null` and a missing object count as `{}` (models send that for tools without
/// arguments); a `null` field counts as absent.
pub(crate) fn parse<T: DeserializeOwned>(schema: &Value, args: Value) -> Result<T, ToolError> {
    let args = match args {
        Value::Null => Value::Object(Default::default()),
        Value::Object(map) => {
            Value::Object(map.into_iter().filter(|(_, v)| !v.is_null()).collect())
        }
        other => {
            return Err(ToolError::InvalidArguments(format!(
                "arguments must be a JSON object, got {}",
                kind(&other)
            )));
        }
    };
    check(schema, &args)?;
    serde_json::from_value(args).map_err(|e| ToolError::InvalidArguments(e.to_string()))
}

/// Checks arguments that did not come from the model (a hook's `updatedInput`) against
/// `schema`: its fields, their types and bounds, and no field it does not name.
pub fn check_args(schema: &Value, args: &Value) -> Result<(), String> {
    let props = schema.get("properties").and_then(Value::as_object);
    if let (Some(props), Some(args)) = (props, args.as_object())
        && let Some(extra) = args.keys().find(|k| !props.contains_key(*k))
    {
        let known: Vec<&str> = props.keys().map(String::as_str).collect();
        return Err(format!(
            "unknown field `{extra}` (fields: {})",
            known.join(", ")
        ));
    }
    check(schema, args).map_err(|e| match e {
        ToolError::InvalidArguments(m) => m,
        other => other.to_string(),
    })
}

/// Checks a value against a JSON schema as the tools' arguments are checked (its fields,
/// their types, enums and bounds), fields it does not name allowed: a batch row's result
/// (`crate::batch::schema`).
pub fn check_value(schema: &Value, value: &Value) -> Result<(), String> {
    check(schema, value).map_err(|e| match e {
        ToolError::InvalidArguments(m) => m,
        other => other.to_string(),
    })
}

fn check(schema: &Value, args: &Value) -> Result<(), ToolError> {
    let props = schema.get("properties").and_then(Value::as_object);
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect::<Vec<_>>())
        .unwrap_or_default();
    for name in required {
        if args.get(name).is_none() {
            let about = props
                .and_then(|p| p.get(name))
                .map(describe_field)
                .unwrap_or_default();
            return Err(ToolError::InvalidArguments(format!(
                "missing required field `{name}`{about}"
            )));
        }
    }
    let Some(props) = props else { return Ok(()) };
    for (name, spec) in props {
        let Some(value) = args.get(name) else {
            continue;
        };
        let want = spec.get("type").and_then(Value::as_str).unwrap_or("");
        let ok = match want {
            "string" => value.is_string(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            "array" => value.is_array(),
            "object" => value.is_object(),
            _ => true,
        };
        if !ok {
            return Err(ToolError::InvalidArguments(format!(
                "field `{name}` must be {} {want}, got {}",
                article(want),
                kind(value)
            )));
        }
        if let Some(allowed) = spec.get("enum").and_then(Value::as_array)
            && !allowed.contains(value)
        {
            let allowed: Vec<String> = allowed.iter().map(Value::to_string).collect();
            return Err(ToolError::InvalidArguments(format!(
                "field `{name}` must be one of {}, got {value}",
                allowed.join(", ")
            )));
        }
        if let Some(n) = value.as_f64() {
            if let Some(min) = spec.get("minimum").and_then(Value::as_f64)
                && n < min
            {
                return Err(ToolError::InvalidArguments(format!(
                    "field `{name}` must be at least {min}, got {value}"
                )));
            }
            if let Some(max) = spec.get("maximum").and_then(Value::as_f64)
                && n > max
            {
                return Err(ToolError::InvalidArguments(format!(
                    "field `{name}` must be at most {max}, got {value}"
                )));
            }
        }
    }
    Ok(())
}

fn describe_field(spec: &Value) -> String {
    let ty = spec.get("type").and_then(Value::as_str).unwrap_or("value");
    match spec.get("description").and_then(Value::as_str) {
        Some(d) => format!(" ({ty}: {d})"),
        None => format!(" ({ty})"),
    }
}

fn article(ty: &str) -> &'static str {
    if ty.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

fn kind(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) if s.chars().count() > 40 => "a string".to_string(),
        Value::String(s) => format!("string {s:?}"),
        Value::Array(_) => "an array".to_string(),
        Value::Object(_) => "an object".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    struct A {
        path: String,
        line: Option<u64>,
    }

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "file path"},
                "line": {"type": "integer", "minimum": 1, "maximum": 10}
            },
            "required": ["path"]
        })
    }

    fn err(args: Value) -> String {
        match parse::<A>(&schema(), args) {
            Err(ToolError::InvalidArguments(m)) => m,
            other => panic!("expected InvalidArguments, got {other:?}"),
        }
    }

    #[test]
    fn good_arguments_parse() {
        let a: A = parse(&schema(), json!({"path": "x", "line": null})).unwrap();
        assert_eq!(a.path, "x");
        assert_eq!(a.line, None);
        let a: A = parse(&schema(), json!({"path": "x", "line": 3})).unwrap();
        assert_eq!(a.line, Some(3));
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(
            err(json!({})),
            "missing required field `path` (string: file path)"
        );
        assert_eq!(
            err(json!({"path": 5})),
            "field `path` must be a string, got number 5"
        );
        assert_eq!(
            err(json!({"path": "x", "line": "3"})),
            "field `line` must be an integer, got string \"3\""
        );
        assert!(err(json!({"path": "x", "line": 0})).contains("at least 1"));
        assert!(err(json!({"path": "x", "line": 11})).contains("at most 10"));
        assert!(err(json!([1])).contains("JSON object"));
    }

    #[test]
    fn a_value_outside_the_enum_names_the_choices() {
        let schema = json!({"properties": {"mode": {"enum": ["worktree", "shared"]}}});
        let e = parse::<Value>(&schema, json!({"mode": "git"})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid arguments: field `mode` must be one of \"worktree\", \"shared\", got \"git\""
        );
        assert!(parse::<Value>(&schema, json!({"mode": "shared"})).is_ok());
    }
}
