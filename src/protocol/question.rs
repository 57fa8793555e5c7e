use serde::{Deserialize, Serialize};

/// Why an `ask_user` question got no answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Declined {
    /// The user chose not to answer (`Esc` in the dialog).
    User,
    /// Nobody can answer: a headless run (`exec`).
    NoUser,
    /// The asking agent was interrupted or cancelled while the question was open.
    Cancelled,
}

impl Declined {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "declined by the user",
            Self::NoUser => "nobody can answer in this run",
            Self::Cancelled => "withdrawn: the agent was stopped",
        }
    }
}
