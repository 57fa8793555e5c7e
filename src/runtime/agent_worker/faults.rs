//! An agent worker's fault (its command not found, a crash, a line that is not JSON-RPC,
//! no answer in time) as the reason it failed: one line naming the agent and what went
//! wrong, with the last lines of its standard error. The worker then ends failed, so its
//! change does not merge (`isolation/merge.rs`: an error keeps it on its branch).

use super::super::cx::AgentCx;
use super::super::turn::TurnOutcome;
use crate::acp_client::{AgentCommand, ClientError};
use crate::roles::{command_line, install_hint};

/// Most of the agent's standard error a reason quotes.
const STDERR_LINES: usize = 3;
const STDERR_CHARS: usize = 400;

/// The reason, in a line.
pub(super) fn reason(agent: &AgentCommand, fault: &ClientError) -> String {
    let what = match fault {
        ClientError::NotFound { command } => {
            format!("`{command}` was not found ({})", install_hint(command))
        }
        ClientError::Spawn { source, .. } => format!("it could not start: {source}"),
        ClientError::Crashed { during, status, .. } => {
            format!("it ended ({status}) during {during}")
        }
        ClientError::Protocol { during, line, .. } => format!(
            "it wrote what is not JSON-RPC during {during}: {:?}",
            crate::text::clip(line, 120)
        ),
        ClientError::Timeout { during, after, .. } => {
            format!("it did not answer {during} within {} s", after.as_secs())
        }
        ClientError::Refused { during, message } => format!("it refused {during}: {message}"),
    };
    let mut line = format!("agent `{}` failed: {what}", command_line(agent));
    if let Some(tail) = fault.stderr().map(tail).filter(|t| !t.is_empty()) {
        line.push_str("; its stderr ends: ");
        line.push_str(&tail);
    }
    line
}

/// The last few lines of `stderr`, on one line.
fn tail(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let last = lines[lines.len().saturating_sub(STDERR_LINES)..].join(" ⏎ ");
    match last.char_indices().rev().nth(STDERR_CHARS - 1) {
        Some((cut, _)) if cut > 0 => format!("…{}", &last[cut..]),
        _ => last,
    }
}

/// The worker's turn ends in the fault: it fails with the reason.
pub(super) fn failed(cx: &AgentCx, agent: &AgentCommand, fault: &ClientError) -> TurnOutcome {
    super::outcome::stopped(cx, reason(agent, fault), String::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_is_one_line_with_the_end_of_its_stderr() {
        let agent = AgentCommand {
            command: "opencode".into(),
            args: vec!["acp".into()],
            ..AgentCommand::default()
        };
        let crashed = ClientError::Crashed {
            during: "session/prompt",
            status: "signal: 9 (SIGKILL)".into(),
            stderr: "starting\nloading model\n\npanicked at x.rs:3\nbye\n".into(),
        };
        let line = reason(&agent, &crashed);
        assert_eq!(
            line,
            "agent `opencode acp` failed: it ended (signal: 9 (SIGKILL)) during session/prompt; \
             its stderr ends: loading model ⏎ panicked at x.rs:3 ⏎ bye"
        );
        assert!(!line.contains('\n'));
        let missing = ClientError::NotFound {
            command: "opencode".into(),
        };
        assert_eq!(
            reason(&agent, &missing),
            "agent `opencode acp` failed: `opencode` was not found (npm install -g opencode-ai)"
        );
        let long = "x".repeat(2000);
        assert!(tail(&long).chars().count() <= STDERR_CHARS + 1);
    }
}
