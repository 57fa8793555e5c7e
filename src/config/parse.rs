//! Parsing TOML into typed settings with errors a person can act on: the line, the key
//! (`limits.max_depth`), what was expected and what was found. Shared by the config and
//! role loaders so both report problems the same way.

use serde::de::DeserializeOwned;
use serde_path_to_error::Segment;
use std::fmt;

/// What is wrong with one TOML document; the caller adds the file name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TomlProblem {
    /// 1-based position of the problem, when the parser knows it.
    pub line: Option<usize>,
    pub column: Option<usize>,
    /// Dotted path of the offending key (`limits.max_depth`), empty for the top level.
    pub key: String,
    pub message: String,
}

impl fmt::Display for TomlProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.key.is_empty() {
            write!(f, "{}: ", self.key)?;
        }
        f.write_str(&self.message)?;
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, " (line {l}, column {c})"),
            (Some(l), None) => write!(f, " (line {l})"),
            _ => Ok(()),
        }
    }
}

/// Parses `text` as a TOML table and checks it against `T`.
///
/// The table is returned too, so callers can merge layers key by key.
pub(crate) fn parse_toml<T: DeserializeOwned>(text: &str) -> Result<(T, toml::Table), TomlProblem> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let (line, column) = position(text, e.span());
        TomlProblem {
            line,
            column,
            key: String::new(),
            message: format!("invalid TOML: {}", e.message().trim()),
        }
    })?;
    let de = toml::Deserializer::parse(text).map_err(|e| TomlProblem {
        line: None,
        column: None,
        key: String::new(),
        message: e.message().trim().to_string(),
    })?;
    match serde_path_to_error::deserialize::<_, T>(de) {
        Ok(value) => Ok((value, table)),
        Err(err) => {
            let segments: Vec<Segment> = err.path().iter().cloned().collect();
            let (line, column) = position(text, err.inner().span());
            Err(describe(
                err.inner().message(),
                &segments,
                &table,
                line,
                column,
            ))
        }
    }
}

/// Checks an already merged table against `T` (used after layering, where every layer was
/// already checked on its own, so a failure here is unexpected but still reported).
pub(crate) fn from_table<T: DeserializeOwned>(table: toml::Table) -> Result<T, TomlProblem> {
    let value = toml::Value::Table(table.clone());
    serde_path_to_error::deserialize::<_, T>(value).map_err(|err| {
        let segments: Vec<Segment> = err.path().iter().cloned().collect();
        describe(&err.inner().to_string(), &segments, &table, None, None)
    })
}

/// Turns serde's wording into "expected X, found Y" naming the key.
fn describe(
    raw: &str,
    segments: &[Segment],
    table: &toml::Table,
    line: Option<usize>,
    column: Option<usize>,
) -> TomlProblem {
    let raw = raw.trim();
    let mut key = key_path(segments);
    let message = if let Some(rest) = raw.strip_prefix("unknown field `") {
        // serde reports an unknown key with the path of the table holding it (or of the key
        // itself, depending on the deserializer); name the table and list what it accepts.
        let (name, tail) = rest.split_once('`').unwrap_or((rest, ""));
        if segments
            .last()
            .is_some_and(|s| matches!(s, Segment::Map { key } if key == name))
        {
            key = key_path(&segments[..segments.len() - 1]);
        }
        let known = backticked(tail);
        if known.is_empty() {
            format!("unknown key '{name}'")
        } else {
            format!("unknown key '{name}' (known keys: {})", known.join(", "))
        }
    } else if let Some(rest) = raw.strip_prefix("missing field `") {
        let name = rest.split_once('`').map_or(rest, |(n, _)| n);
        format!("missing key '{name}'")
    } else if let Some(rest) = raw.strip_prefix("unknown variant `") {
        let (found, tail) = rest.split_once('`').unwrap_or((rest, ""));
        let allowed = backticked(tail);
        format!("expected one of {}, found \"{found}\"", allowed.join(", "))
    } else if let Some(rest) = raw.strip_prefix("invalid type: ") {
        let (found, expected) = rest.split_once(", expected ").unwrap_or((rest, ""));
        let found = lookup(table, segments).map_or_else(|| found.to_string(), describe_value);
        format!("expected {}, found {found}", expected_kind(expected))
    } else if let Some(rest) = raw.strip_prefix("invalid value: ") {
        let (found, expected) = rest.split_once(", expected ").unwrap_or((rest, ""));
        let found = lookup(table, segments).map_or_else(|| found.to_string(), describe_value);
        format!("expected {}, found {found}", expected_range(expected))
    } else {
        raw.to_string()
    };
    TomlProblem {
        line,
        column,
        key,
        message,
    }
}

/// `prices."gpt-4.1".input_per_mtok`, quoting keys that are not bare TOML keys.
fn key_path(segments: &[Segment]) -> String {
    let mut out = String::new();
    for seg in segments {
        match seg {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&toml_key(key));
            }
            Segment::Unknown => out.push_str(".?"),
        }
    }
    out
}

/// A key as written in a dotted path: bare when TOML allows it, quoted otherwise.
pub(crate) fn toml_key(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        key.to_string()
    } else {
        format!("{key:?}")
    }
}

fn backticked(s: &str) -> Vec<&str> {
    s.split('`').skip(1).step_by(2).collect()
}

fn lookup<'a>(table: &'a toml::Table, segments: &[Segment]) -> Option<&'a toml::Value> {
    let (first, rest) = segments.split_first()?;
    let Segment::Map { key } = first else {
        return None;
    };
    let mut value = table.get(key)?;
    for seg in rest {
        value = match (seg, value) {
            (Segment::Map { key }, toml::Value::Table(t)) => t.get(key)?,
            (Segment::Seq { index }, toml::Value::Array(a)) => a.get(*index)?,
            _ => return None,
        };
    }
    Some(value)
}

fn describe_value(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => format!("a string {s:?}"),
        toml::Value::Integer(i) => format!("the integer {i}"),
        toml::Value::Float(x) => format!("the number {x}"),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Datetime(d) => format!("the date-time {d}"),
        toml::Value::Array(_) => "an array".to_string(),
        toml::Value::Table(_) => "a table".to_string(),
    }
}

fn expected_kind(serde_expected: &str) -> String {
    match serde_expected {
        "u8" | "u16" | "u32" | "u64" | "usize" | "i8" | "i16" | "i32" | "i64" | "isize" => {
            "an integer".to_string()
        }
        "f32" | "f64" => "a number".to_string(),
        "a boolean" => "true or false".to_string(),
        "a sequence" => "an array".to_string(),
        "a map" => "a table".to_string(),
        s if s.starts_with("struct ") => "a table".to_string(),
        s if s.starts_with("enum ") => "a string".to_string(),
        s => s.to_string(),
    }
}

fn expected_range(serde_expected: &str) -> String {
    let max = match serde_expected {
        "u8" => u8::MAX as u64,
        "u16" => u16::MAX as u64,
        "u32" => u32::MAX as u64,
        "u64" | "usize" => u64::MAX,
        other => return expected_kind(other),
    };
    format!("an integer from 0 to {max}")
}

/// 1-based line and column of a byte offset.
fn position(text: &str, span: Option<std::ops::Range<usize>>) -> (Option<usize>, Option<usize>) {
    let Some(span) = span else {
        return (None, None);
    };
    let start = span.start.min(text.len());
    let before = text.get(..start).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit_once('\n')
        .map_or(before, |(_, last)| last)
        .chars()
        .count()
        + 1;
    (Some(line), Some(column))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Doc {
        n: u32,
        #[serde(default)]
        inner: Inner,
        #[serde(default)]
        list: Vec<String>,
    }

    #[derive(Debug, Default, Deserialize)]
    #[serde(default, deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        flag: bool,
        price: f64,
    }

    fn problem(text: &str) -> TomlProblem {
        parse_toml::<Doc>(text).unwrap_err()
    }

    #[test]
    fn syntax_error_has_line_and_column() {
        let p = problem("n = 1\ninner = [\n");
        assert_eq!(p.line, Some(2), "{p}");
        assert!(p.message.starts_with("invalid TOML"), "{p}");
        let p = problem("n = 1\nx = = 2\n");
        assert_eq!((p.line, p.column), (Some(2), Some(5)), "{p}");
    }

    #[test]
    fn wrong_type_names_key_expected_and_found() {
        let p = problem("n = \"three\"\n");
        assert_eq!(p.key, "n");
        assert_eq!(p.message, "expected an integer, found a string \"three\"");
        assert_eq!(p.line, Some(1));
        let p = problem("n = 1\n[inner]\nflag = 3\n");
        assert_eq!(p.key, "inner.flag");
        assert_eq!(p.message, "expected true or false, found the integer 3");
        assert_eq!(p.line, Some(3));
        let p = problem("n = 1\nlist = [\"a\", 2]\n");
        assert_eq!(p.key, "list[1]");
        assert_eq!(p.message, "expected a string, found the integer 2");
    }

    #[test]
    fn negative_and_too_large_integers_say_the_range() {
        let p = problem("n = -1\n");
        assert_eq!(
            p.message,
            "expected an integer from 0 to 4294967295, found the integer -1"
        );
        let p = problem("n = 5000000000\n");
        assert_eq!(p.key, "n");
        assert!(p.message.contains("from 0 to 4294967295"), "{p}");
    }

    #[test]
    fn integers_are_accepted_where_numbers_are_expected() {
        let (doc, _) = parse_toml::<Doc>("n = 1\n[inner]\nprice = 2\n").unwrap();
        assert_eq!(doc.inner.price, 2.0);
    }

    #[test]
    fn unknown_key_lists_known_keys_of_its_table() {
        let p = problem("n = 1\nnn = 2\n");
        assert_eq!(p.key, "");
        assert_eq!(p.message, "unknown key 'nn' (known keys: n, inner, list)");
        let p = problem("n = 1\n[inner]\nflg = true\n");
        assert_eq!(p.key, "inner");
        assert_eq!(p.message, "unknown key 'flg' (known keys: flag, price)");
    }

    #[test]
    fn missing_key_is_named() {
        let p = problem("list = []\n");
        assert_eq!(p.message, "missing key 'n'");
    }

    #[test]
    fn keys_that_are_not_bare_are_quoted() {
        let segs = vec![
            Segment::Map {
                key: "prices".into(),
            },
            Segment::Map {
                key: "gpt-4.1".into(),
            },
        ];
        assert_eq!(key_path(&segs), "prices.\"gpt-4.1\"");
    }
}
