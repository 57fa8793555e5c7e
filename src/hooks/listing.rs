//! `squad hooks` (what hooks the config has, and whether each runs) and `squad hooks
//! trust` (approve the workspace's hook file as it is now).

use super::{HookSpec, Hooks, TrustStore, approval_key};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Whether a hook may run now: the user's own always; a workspace's while the user's
/// approval of it, its command and the files that command names holds.
pub fn approved(hook: &HookSpec, store: &TrustStore, project: &Path) -> bool {
    !hook.source.workspace
        || store.is_trusted(&approval_key(&hook.source.digest, &hook.command, project))
}

/// A warning per tool hook whose matcher takes none of `names` (every name a tool goes
/// by: squad's, and Claude Code's as `tools::claude` gives them; the caller, which knows
/// the tools, says): it would never run. MCP matchers are left alone, their servers'
/// tools are known only once they run.
pub fn matcher_warnings(hooks: &Hooks, names: &[String]) -> Vec<String> {
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    hooks
        .list
        .iter()
        .filter(|h| h.event.is_about_tools())
        .filter_map(|h| {
            let m = h.matcher_text.as_deref()?;
            if m.contains("mcp__") || m.contains("__") || h.takes(&names) {
                return None;
            }
            Some(format!(
                "{}: the {} hook's matcher `{m}` matches no tool, so it never runs (tools: \
                 squad's names such as run_command, or Claude Code's such as Bash, Edit|Write)",
                h.source.file.display(),
                h.event.name()
            ))
        })
        .collect()
}

/// One line per hook: its event, matcher and role, its command, the file, and whether it
/// runs; then the problems and the matchers that match none of `names` (as
/// [`matcher_warnings`] takes them).
pub fn list(hooks: &Hooks, store: &TrustStore, project: &Path, names: &[String]) -> String {
    let mut out = String::new();
    if hooks.list.is_empty() {
        // An installed binary has no docs folder: the hint is the table itself.
        out.push_str(
            "no hooks: add a [[hooks]] table to .squad/config.toml (or your user config), \
             e.g. event = \"stop\" and command = \"cargo test -q\"\n",
        );
    }
    for h in &hooks.list {
        let state = if !h.source.workspace {
            "runs"
        } else if approved(h, store, project) {
            "runs (approved)"
        } else {
            "waits for `squad hooks trust` (new, or it or a file it runs changed)"
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
    for p in hooks.problems.iter().chain(&matcher_warnings(hooks, names)) {
        let _ = writeln!(out, "! {p}");
    }
    out
}

/// Approves the workspace's hooks as they are now (each with the files its command names);
/// says what was approved.
pub fn trust_workspace(
    hooks: &Hooks,
    store: &TrustStore,
    project: &Path,
) -> Result<String, String> {
    let mut files: Vec<(PathBuf, usize)> = Vec::new();
    for h in hooks.list.iter().filter(|h| h.source.workspace) {
        let key = approval_key(&h.source.digest, &h.command, project);
        store
            .trust(&key, &h.source.file)
            .map_err(|e| format!("cannot record the approval: {e}"))?;
        match files.iter_mut().find(|(f, _)| *f == h.source.file) {
            Some((_, n)) => *n += 1,
            None => files.push((h.source.file.clone(), 1)),
        }
    }
    if files.is_empty() {
        return Ok("the workspace's config has no hooks: nothing to approve".to_string());
    }
    let mut out = String::new();
    for (file, n) in files {
        let _ = writeln!(
            out,
            "approved {n} hook(s) of {} as they are now, with the files they run; they run until one of those changes",
            file.display()
        );
    }
    Ok(out)
}
