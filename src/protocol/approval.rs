//! Approvals as the protocol carries them: each agent's policy, the user's decision, and
//! what an action that needs approval is.

use super::Budget;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalPolicy {
    /// Ask the user before every mutating action (exec cannot ask: there it denies).
    #[default]
    Ask,
    Auto,
    ReadOnly,
}

impl ApprovalPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ask => "ask",
            Self::Auto => "auto",
            Self::ReadOnly => "read-only",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "ask" => Some(Self::Ask),
            "auto" => Some(Self::Auto),
            "read-only" | "readonly" | "read_only" => Some(Self::ReadOnly),
            _ => None,
        }
    }

    /// The narrower of two policies: a worker never gets more than its parent.
    pub fn narrowest(self, other: Self) -> Self {
        fn rank(p: ApprovalPolicy) -> u8 {
            match p {
                ApprovalPolicy::ReadOnly => 0,
                ApprovalPolicy::Ask => 1,
                ApprovalPolicy::Auto => 2,
            }
        }
        if rank(self) <= rank(other) {
            self
        } else {
            other
        }
    }
}

/// Why a call that needed the user's answer was refused where nobody can answer (`exec`):
/// each has its own way to let such calls run, which `exec` tells at the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unanswered {
    /// The approval policy is `ask`: `--approval auto` lets such calls run.
    Policy,
    /// The command would leave the sandbox, which is always the user's call.
    Escalation,
    /// A `pre_tool_use` hook asked for the user's approval.
    Hook,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    Approve,
    /// Approve this and matching later actions (same tool and path/command prefix).
    ApproveForSession,
    Deny,
}

/// What a mutating tool call would do, shown to the user before it runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ApprovalAction {
    Command {
        command: String,
    },
    /// A command that runs inside the OS sandbox (`sandbox` names it): the sandbox bounds
    /// it, so `ask` lets it run without a prompt; `read-only` still refuses it.
    SandboxedCommand {
        command: String,
        sandbox: String,
    },
    /// A command the model asks to run outside the sandbox (`escalate`), with its reason:
    /// always put to the user, under `auto` too; refused where nobody can answer.
    Escalation {
        command: String,
        reason: String,
    },
    /// A write or edit; `diff` is a unified diff of the file before and after.
    FileChange {
        path: String,
        diff: String,
    },
    /// An `apply_patch`: every file it changes (a move names both paths) and one unified
    /// diff of them all.
    Patch {
        paths: Vec<String>,
        diff: String,
    },
    Spawn {
        role: String,
        task: String,
        tools: Vec<String>,
        model: String,
        /// What it may spend (left out when unlimited).
        #[serde(default, skip_serializing_if = "Budget::is_unlimited")]
        budget: Budget,
        /// Instructions appended to its role's prompt (`spawn_agent`'s `instructions`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instructions: Option<String>,
        /// Kept for follow-ups rather than released once its result is delivered.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        keep: bool,
        /// The name its supervisor gave it (`spawn_agent`'s `name`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// Where it will run (`kind: NAME` of an `[environments.NAME]`); `None`: here.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        environment: Option<String>,
        /// Its quote, when the spawn is a fan-out (`[limits] quote_past_workers`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        quote: Option<Box<super::Quote>>,
    },
    /// A workspace hook (`[[hooks]]` of the workspace's config, or a file its command runs)
    /// new or changed since the user approved it: it would run with the user's rights,
    /// outside the sandbox. `files` are the workspace files its command runs, each with
    /// its text as it is now (clipped), for the user to read first.
    Hook {
        command: String,
        /// The config file it is written in.
        source: String,
        files: Vec<(String, String)>,
    },
    /// A tool of an MCP server that does not declare itself read-only.
    McpTool {
        server: String,
        /// The server's own name for the tool.
        tool: String,
        /// The arguments, as pretty JSON.
        arguments: String,
    },
}
