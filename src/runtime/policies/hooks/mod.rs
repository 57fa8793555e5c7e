//! The user's hooks: the service that runs them (`service`) and each agent's layer.

pub mod layer;
mod reapprove;
pub mod service;
