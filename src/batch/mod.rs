//! A batch's parts that need no agent (issue 55 part 5): reading the rows (CSV or JSON
//! Lines), filling the instruction template, checking a row's result against its schema,
//! writing the output file so a crash never leaves it torn, and the pace of the rows for
//! the ETA. `runtime/batch` runs the workers; this only reads and writes what they use.

pub mod eta;
pub mod output;
pub mod rows;
pub mod schema;
pub mod template;

/// Why a batch cannot start: told to the user or the model as it is.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    #[error("cannot read the rows file `{path}`: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("rows file `{path}`, {line}: {message}")]
    Row {
        path: String,
        line: String,
        message: String,
    },
    #[error("rows file `{path}` has no column `{column}` (columns: {columns})")]
    NoColumn {
        path: String,
        column: String,
        columns: String,
    },
    #[error("rows file `{path}`: the id `{id}` is on two rows; ids must be unique")]
    DuplicateId { path: String, id: String },
    #[error("the template names `{{{name}}}`, which is not a column (columns: {columns})")]
    Placeholder { name: String, columns: String },
    #[error("the schema must be a JSON object with \"type\": \"object\"; got {0}")]
    Schema(String),
    #[error("cannot write the output file `{path}`: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
}
