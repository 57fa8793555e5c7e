//! Why the session refused a user's request it serves itself (a message, a persona, the
//! model, the approval policy, a role to save): told the user as an `error` event on the
//! agent the request named, in the variant's words.

use crate::protocol::AgentStatus;

#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("unknown role `{role}`; known roles: {known}")]
    UnknownRole { role: String, known: String },
    /// A role that is another agent (`Role::not_runnable` says why).
    #[error("{0}")]
    AgentRole(String),
    /// The agent as the request named it.
    #[error("no agent {0} in this session")]
    NoAgent(String),
    #[error(
        "this worker was released (its result was delivered and it was not kept) and takes \
         no more messages; its history stays here for reading. Ask its supervisor for a new worker"
    )]
    Released,
    #[error(
        "this worker is {0} and cannot take messages; talk to the supervisor or spawn a new worker"
    )]
    Settled(AgentStatus),
    #[error("this agent has stopped and cannot take messages")]
    Stopped,
    #[error("usage: /model NAME (one word, as the server names it)")]
    ModelUsage,
    /// Why the machine has no sandbox.
    #[error(
        "/approval auto runs every command in the sandbox, and there is none here: {0}; \
         the approval policy stays as it was"
    )]
    NoSandbox(String),
    #[error("the persona's role is a role file already; select a worker to save its role")]
    PersonaRole,
    #[error("role `{0}` is no longer loaded; there is nothing to save it from")]
    RoleGone(String),
    /// What writing the role file said.
    #[error(transparent)]
    NotSaved(#[from] crate::roles::SaveRoleError),
}
