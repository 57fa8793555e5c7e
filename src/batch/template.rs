//! The instruction template: `{column}` filled from a row; `{{` and `}}` are braces.

use super::BatchError;
use super::rows::Row;

/// The pieces of a template: text as it is, and the columns it names.
#[derive(Clone, Debug, PartialEq)]
enum Piece {
    Text(String),
    Column(String),
}

/// A template checked once against the rows' columns, filled per row.
#[derive(Clone, Debug, PartialEq)]
pub struct Template {
    pieces: Vec<Piece>,
}

impl Template {
    /// Parses `text`; every placeholder must name one of `columns`.
    pub fn parse(text: &str, columns: &[String]) -> Result<Self, BatchError> {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    literal.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    literal.push('}');
                }
                '{' => {
                    let name: String = chars.by_ref().take_while(|&c| c != '}').collect();
                    let name = name.trim().to_string();
                    if !columns.contains(&name) {
                        return Err(BatchError::Placeholder {
                            name,
                            columns: columns.join(", "),
                        });
                    }
                    pieces.push(Piece::Text(std::mem::take(&mut literal)));
                    pieces.push(Piece::Column(name));
                }
                c => literal.push(c),
            }
        }
        pieces.push(Piece::Text(literal));
        pieces.retain(|p| !matches!(p, Piece::Text(t) if t.is_empty()));
        Ok(Self { pieces })
    }

    /// The instruction for `row` (a column the row lacks is empty).
    pub fn fill(&self, row: &Row) -> String {
        let mut out = String::new();
        for p in &self.pieces {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Column(c) => out.push_str(row.get(c).unwrap_or_default()),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> Row {
        Row {
            id: "7".into(),
            columns: vec![("id".into(), "7".into()), ("city".into(), "Oslo".into())],
        }
    }

    #[test]
    fn placeholders_are_filled_and_double_braces_stay() {
        let cols = vec!["id".to_string(), "city".to_string()];
        let t = Template::parse("Row {id}: describe { city } as {{\"x\": 1}}", &cols).unwrap();
        assert_eq!(t.fill(&row()), "Row 7: describe Oslo as {\"x\": 1}");
    }

    #[test]
    fn an_unknown_placeholder_is_refused_naming_the_columns() {
        let cols = vec!["id".to_string()];
        let err = Template::parse("{town}", &cols).unwrap_err().to_string();
        assert_eq!(
            err,
            "the template names `{town}`, which is not a column (columns: id)"
        );
    }
}
