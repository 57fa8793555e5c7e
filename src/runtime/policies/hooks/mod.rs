//! The user's hooks: the service that runs them (`service`), each agent's layer, and the
//! team's hook points (`team`: a task created or completed, a teammate idle).

pub mod layer;
mod reapprove;
pub mod service;
pub mod team;
