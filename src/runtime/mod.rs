//! The headless core. A session owns the agent tree, the active persona, the approval gate
//! and the event log; each agent runs in its own tokio task. Front ends reach it only
//! through [`SessionHandle`]: `Op`s in, `Event`s out.
//!
//! Who owns what (arrows point to what a file uses): `start` builds the [`session::Session`]
//! (what every agent shares) and the [`policies`]; each agent runs on its own
//! [`cx::AgentCx`] (the session, its id, its cancel token, its own layer stack):
//! `agent` → `turn` → `model_call` / `calls` → `toolbox` → `agent_tools`. The one recursion,
//! a tool call starting an agent, runs through the [`agent_tools::Host`] trait, which
//! `agent` implements for `AgentCx`: the tools never import the loop that runs them.

mod agent;
mod agent_tools;
mod agent_worker;
mod approval;
mod batch;
mod board;
mod calls;
mod cx;
mod events;
mod handle;
mod inbox;
#[cfg(test)]
mod loops_tests;
mod mcp;
mod memory;
mod model_call;
mod ops;
#[cfg(test)]
mod order_tests;
mod persona;
mod plan;
mod points;
mod policies;
mod questions;
mod quote;
mod refused;
mod report;
mod request;
mod review;
mod save_role;
mod session;
mod settings;
mod start;
mod tasks;
mod team;
#[cfg(test)]
mod testing;
mod tool_call;
mod toolbox;
mod turn;
mod user_command;

pub use start::{RuntimeError, start_session};
pub use toolbox::facts_of as tool_facts;

pub use handle::{SessionHandle, SessionInfo, SessionOptions};

use crate::tools::ToolRegistry;
use std::sync::Arc;

/// Every tool name an agent may be given with these coding tools, for checking role files
/// (`squad roles`) outside a session.
pub fn tool_names(coding: &ToolRegistry) -> Vec<String> {
    toolbox::ToolBox::new(coding, Arc::new(crate::mcp::McpHub::empty())).names()
}
