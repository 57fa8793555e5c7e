//! MCP servers as tools: squad is an MCP client (the protocol's Rust SDK, `rmcp`), and
//! every configured server's tools become tools the agents call like the built-in ones,
//! through the same approvals, events and limits.
//!
//! `connection` talks to one server, `hub` keeps all of a session's servers (start,
//! restart, stop, unique tool names), `names` makes the names the model sees, `content`
//! turns results into text. The runtime adapts `McpTool`s into its tool registry.

mod connection;
mod content;
mod hub;
mod names;
mod report;

pub use hub::{McpHub, McpTool, ServerState, ServerStatus};
pub use names::{MAX_TOOL_NAME, SEPARATOR};
pub use report::list_servers;
