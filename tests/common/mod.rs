//! Shared support for integration tests: the scripted OpenAI-compatible mock server.
#![allow(dead_code, unused_imports)]

pub mod mock_server;

pub use mock_server::{MockResponse, MockServer, MockToolCall, RecordedRequest};
pub mod squad;

pub use squad::{
    Run, Sandbox, content_text, git, git_output, items_of_kind, of_type, run_with_timeout,
    tool_messages, transcript,
};
pub mod acp;
pub mod agents;
pub mod engine;
pub mod engines;
pub mod mcp;
pub mod podman;
pub mod pty;
pub mod sshd;
