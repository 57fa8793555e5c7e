//! squad: a terminal coding assistant where one session is a team of agents.
//!
//! Layers (see docs/ and DESIGN.md): front ends (`tui`, `exec`) send [`protocol::Op`]s to
//! the `runtime` and draw the [`protocol::Event`]s it sends back; the runtime runs agents
//! that call the `model` and `tools`, confined to the `workspace`.

pub mod acp;
pub mod acp_client;
pub mod batch;
pub mod checkpoint;
pub mod config;
pub mod context;
pub mod doctor;
pub mod environments;
pub mod exec;
pub mod front_matter;
pub mod hooks;
pub mod isolation;
pub mod logging;
pub mod mcp;
pub mod model;
pub mod protocol;
pub mod review;
pub mod roles;
pub mod runtime;
pub mod sandbox;
pub mod session;
pub mod skills;
pub mod slash;
pub mod sync;
#[cfg(test)]
mod test_rng;
pub mod text;
pub mod tools;
pub mod tui;
pub mod verify;
pub mod workspace;
