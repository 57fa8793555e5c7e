//! `squad hooks` (what hooks the config has, and whether each runs) and `squad hooks
//! trust` (approve the workspace's hook file as it is now).

use super::{Hooks, TrustStore};
use std::fmt::Write;
use std::path::PathBuf;

/// One line per hook: its event, matcher and role, its command, the file, and whether it
/// runs.
pub fn list(hooks: &Hooks, store: &TrustStore) -> String {
    let mut out = String::new();
    if hooks.list.is_empty() {
        out.push_str("no hooks: add [[hooks]] to a config file (see docs/configuration.md)\n");
    }
    for h in &hooks.list {
        let state = if !h.source.workspace {
            "runs"
        } else if store.is_trusted(&h.source.digest) {
            "runs (approved)"
        } else {
            "waits for `squad hooks trust`"
        };
        let on = match (&h.matcher_text, &h.role) {
            (Some(m), Some(r)) => format!(" {m} (role {r})"),
            (Some(m), None) => format!(" {m}"),
            (None, Some(r)) => format!(" (role {r})"),
            (None, None) => String::new(),
        };
        let _ = writeln!(
            out,
            "{}{on}: `{}` (timeout {} s) — {} — {state}",
            h.event.name(),
            h.label(),
            h.timeout_s,
            h.source.file.display(),
        );
    }
    for p in &hooks.problems {
        let _ = writeln!(out, "! {p}");
    }
    out
}

/// Approves the workspace's hook files as they are now; says what was approved.
pub fn trust_workspace(hooks: &Hooks, store: &TrustStore) -> Result<String, String> {
    let mut files: Vec<(PathBuf, String, usize)> = Vec::new();
    for h in hooks.list.iter().filter(|h| h.source.workspace) {
        match files.iter_mut().find(|(f, _, _)| *f == h.source.file) {
            Some((_, _, n)) => *n += 1,
            None => files.push((h.source.file.clone(), h.source.digest.clone(), 1)),
        }
    }
    if files.is_empty() {
        return Ok("the workspace's config has no hooks: nothing to approve".to_string());
    }
    let mut out = String::new();
    for (file, digest, n) in files {
        store
            .trust(&digest, &file)
            .map_err(|e| format!("cannot record the approval: {e}"))?;
        let _ = writeln!(
            out,
            "approved {n} hook(s) of {} as it is now; they run from the next session on",
            file.display()
        );
    }
    Ok(out)
}
