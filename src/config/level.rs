//! The three model levels in the order of what they cost, for `[limits]
//! max_worker_model`: a cap on the level a worker may be spawned on.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A model level, cheapest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelLevel {
    Fast,
    Base,
    Smart,
}

impl ModelLevel {
    pub const ALL: [ModelLevel; 3] = [Self::Fast, Self::Base, Self::Smart];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fast => "fast",
            Self::Base => "base",
            Self::Smart => "smart",
        }
    }
}

impl fmt::Display for ModelLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
