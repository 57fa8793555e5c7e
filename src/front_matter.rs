//! YAML front matter of Markdown files as Claude Code's agent files and Agent Skills'
//! `SKILL.md` write it: `---`, flat `key: value` lines, `---`, then the body. Only what
//! those formats use is read (plain, quoted and block `|` / `>` strings, `[a, b]` and
//! `- a` lists, one level of nested keys); that keeps squad free of a YAML crate for a
//! handful of keys.

use serde_json::{Map, Value};

/// What is wrong with a file's front matter; the caller names the file.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum FrontMatterError {
    #[error("it does not start with a `---` front matter block")]
    NoOpening,
    #[error("its front matter has no closing `---` line")]
    NoClosing,
    #[error("unexpected indented line `{0}`")]
    Indented(String),
    #[error("`{0}` is not `key: value`")]
    NotKeyValue(String),
}

/// The front matter's keys (strings, lists of strings, or one level of nested keys) and
/// the body after it.
#[derive(Debug, PartialEq)]
pub struct FrontMatter<'a> {
    pub fields: Map<String, Value>,
    pub body: &'a str,
}

impl FrontMatter<'_> {
    /// A string field (a list is joined with ", ").
    pub fn text(&self, key: &str) -> Option<String> {
        match self.fields.get(key)? {
            Value::String(s) => Some(s.clone()),
            Value::Array(items) => Some(
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            _ => None,
        }
    }

    /// A list field: a YAML list, or a comma- or space-separated string (`tools: Read, Grep`).
    pub fn list(&self, key: &str) -> Option<Vec<String>> {
        match self.fields.get(key)? {
            Value::Array(items) => Some(
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
            ),
            Value::String(s) => Some(
                s.split([',', ' '])
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(str::to_string)
                    .collect(),
            ),
            _ => None,
        }
    }
}

/// Splits `text` into its front matter and body; an error says what is wrong.
pub fn parse(text: &str) -> Result<FrontMatter<'_>, FrontMatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return Err(FrontMatterError::NoOpening);
    };
    let mut end = None;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            end = Some((offset, offset + line.len()));
            break;
        }
        offset += line.len();
    }
    let Some((head_end, body_start)) = end else {
        return Err(FrontMatterError::NoClosing);
    };
    let fields = fields(&rest[..head_end])?;
    Ok(FrontMatter {
        fields,
        body: rest[body_start..].trim_start_matches(['\r', '\n']),
    })
}

fn fields(head: &str) -> Result<Map<String, Value>, FrontMatterError> {
    let lines: Vec<&str> = head.lines().collect();
    let mut out = Map::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            return Err(FrontMatterError::Indented(line.trim().to_string()));
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(FrontMatterError::NotKeyValue(line.to_string()));
        };
        let value = value.trim();
        // The indented lines that belong to this key.
        let start = i;
        while i < lines.len() && (lines[i].starts_with([' ', '\t']) || lines[i].trim().is_empty()) {
            i += 1;
        }
        let nested = &lines[start..i];
        out.insert(key.trim().to_string(), value_of(value, nested)?);
    }
    Ok(out)
}

fn value_of(value: &str, nested: &[&str]) -> Result<Value, FrontMatterError> {
    let items = || nested.iter().map(|l| l.trim()).filter(|l| !l.is_empty());
    if let Some(style) = value.chars().next().filter(|c| *c == '|' || *c == '>') {
        let lines: Vec<&str> = nested.iter().map(|l| l.trim()).collect();
        let text = if style == '|' {
            lines.join("\n")
        } else {
            lines.join(" ")
        };
        return Ok(Value::String(text.trim().to_string()));
    }
    if !value.is_empty() {
        return Ok(scalar_or_list(value));
    }
    if items().all(|l| l.starts_with('-')) {
        return Ok(Value::Array(
            items()
                .map(|l| scalar(l.trim_start_matches('-').trim()))
                .collect(),
        ));
    }
    let mut map = Map::new();
    for l in items() {
        let Some((k, v)) = l.split_once(':') else {
            return Err(FrontMatterError::NotKeyValue(l.to_string()));
        };
        map.insert(k.trim().to_string(), scalar_or_list(v.trim()));
    }
    Ok(Value::Object(map))
}

fn scalar_or_list(value: &str) -> Value {
    match value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
        Some(inner) => Value::Array(
            inner
                .split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(scalar)
                .collect(),
        ),
        None => scalar(value),
    }
}

/// A plain or quoted string (`"a\nb"`, `'it''s'`).
fn scalar(value: &str) -> Value {
    if value.len() >= 2 && value.starts_with('"') && value.ends_with('"') {
        if let Ok(Value::String(s)) = serde_json::from_str(value) {
            return Value::String(s);
        }
        return Value::String(value[1..value.len() - 1].to_string());
    }
    if value.len() >= 2 && value.starts_with('\'') && value.ends_with('\'') {
        return Value::String(value[1..value.len() - 1].replace("''", "'"));
    }
    Value::String(value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claude_agent_files_front_matter_and_body() {
        let text = "---\nname: code-reviewer\ndescription: \"Reviews code.\\nUse after edits.\"\n\
                    tools: Read, Grep, Glob\nmodel: sonnet\n---\n\nYou are a reviewer.\n";
        let fm = parse(text).unwrap();
        assert_eq!(fm.text("name").as_deref(), Some("code-reviewer"));
        assert_eq!(
            fm.text("description").as_deref(),
            Some("Reviews code.\nUse after edits.")
        );
        assert_eq!(fm.list("tools").unwrap(), ["Read", "Grep", "Glob"]);
        assert_eq!(fm.body, "You are a reviewer.\n");
    }

    #[test]
    fn lists_blocks_and_nested_keys() {
        let text = "---\nname: pdf\ndescription: >\n  Fills PDF forms.\n  Use for PDFs.\n\
                    allowed-tools:\n  - Bash\n  - Read\nmetadata:\n  version: '1.0'\n\
                    tags: [a, \"b\"]\n---\nBody";
        let fm = parse(text).unwrap();
        assert_eq!(
            fm.text("description").as_deref(),
            Some("Fills PDF forms. Use for PDFs.")
        );
        assert_eq!(fm.list("allowed-tools").unwrap(), ["Bash", "Read"]);
        assert_eq!(fm.fields["metadata"]["version"], "1.0");
        assert_eq!(fm.list("tags").unwrap(), ["a", "b"]);
        assert_eq!(fm.body, "Body");
    }

    #[test]
    fn a_file_without_front_matter_says_so() {
        assert!(
            parse("# Title\n")
                .unwrap_err()
                .to_string()
                .contains("front matter")
        );
        assert!(
            parse("---\nname: x\n")
                .unwrap_err()
                .to_string()
                .contains("closing")
        );
    }
}
