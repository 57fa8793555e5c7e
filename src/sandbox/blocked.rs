//! Telling the model, in plain words, that the sandbox may be what stopped its command.
//! The kernel's refusal looks like any other (EACCES, EPERM, EROFS, ENETUNREACH), so the
//! note is added when a failed command's output carries one of those messages.

use super::Confined;
use crate::config::SandboxMode;

/// What tools print for a write, connect or lookup the sandbox refused.
const SIGNS: [&str; 8] = [
    "permission denied",
    "operation not permitted",
    "read-only file system",
    "network is unreachable",
    "temporary failure in name resolution",
    "could not resolve host",
    "name or service not known",
    "couldn't connect to server",
];

/// The note for a failed command's `output`, or `None` when nothing in it looks like the
/// sandbox's doing.
pub fn blocked_note(output: &str, c: &Confined) -> Option<String> {
    let lower = output.to_lowercase();
    if !SIGNS.iter().any(|s| lower.contains(s)) {
        return None;
    }
    let writes = match c.level.mode {
        SandboxMode::ReadOnly => "writes only to $TMPDIR".to_string(),
        _ => {
            let mut places = vec![c.root.display().to_string(), "$TMPDIR".to_string()];
            places.extend(c.writable.iter().map(|p| p.display().to_string()));
            format!("writes only in {}", places.join(", "))
        }
    };
    let network = if c.level.network { "" } else { "; no network" };
    Some(format!(
        "[squad] The sandbox blocked this, most likely: commands run in the `{}` sandbox \
         ({writes}{network}). Do not work around it. If the command really needs more, call \
         run_command again with escalate: true and a reason; the user is asked.",
        c.level.mode.as_str()
    ))
}
