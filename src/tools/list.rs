//! `list_files`, and the gitignore-aware directory walk it shares with `search_files`.

use super::{ToolContext, ToolEffect, ToolError, ToolHandler, args};
use crate::model::ToolSpec;
use async_trait::async_trait;
use ignore::{DirEntry, WalkBuilder};
use serde::Deserialize;
use serde_json::{Value, json};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

const DEFAULT_DEPTH: usize = 2;
const MAX_DEPTH: usize = 20;
const MAX_ENTRIES: usize = 500;

/// What a walk saw besides the entries it handed over.
#[derive(Debug, Default)]
pub(crate) struct WalkInfo {
    /// The requested directory is itself gitignored; it was walked anyway (the model asked
    /// for it by name) but without applying ignore rules from above it.
    pub target_ignored: bool,
    /// Entries that could not be read (permissions, vanished files).
    pub errors: usize,
}

/// Whether the root is inside a git repository, so `.gitignore` files above the root apply
/// the way git applies them. Outside a repository, stray ignore files in parent directories
/// (a `~/.gitignore` with `*`, say) must not hide the workspace.
fn in_git_repo(root: &Path) -> bool {
    root.ancestors().any(|dir| dir.join(".git").exists())
}

fn builder(start: &Path, parents: bool, max_depth: Option<usize>) -> WalkBuilder {
    let mut b = WalkBuilder::new(start);
    b.hidden(false)
        .require_git(false)
        .parents(parents)
        .follow_links(false)
        .max_depth(max_depth)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|e| e.file_name() != ".git");
    b
}

/// Walks the directory `target` inside `root`, honouring `.gitignore`/`.ignore` files from
/// the root down (including those between the root and `target`), never following symlinks
/// and hiding `.git`. Calls `visit` for every entry strictly below `target`, in sorted
/// depth-first order; `depth` is counted from `target`.
pub(crate) fn walk(
    root: &Path,
    target: &Path,
    depth: Option<usize>,
    mut visit: impl FnMut(&DirEntry) -> ControlFlow<()>,
) -> WalkInfo {
    let mut info = WalkInfo::default();
    let parents = in_git_repo(root);
    let below = target.strip_prefix(root).map(|p| p.components().count());
    let (start, max_depth, prune_to_target) = match below {
        Ok(n) => (root, depth.map(|d| d + n), n > 0),
        Err(_) => (target, depth, false),
    };
    let mut b = builder(start, parents, max_depth);
    if prune_to_target {
        // Walk from the root so every ignore file on the way down is read, but only descend
        // towards and into the target.
        let t = target.to_path_buf();
        b.filter_entry(move |e| {
            e.file_name() != ".git" && (t.starts_with(e.path()) || e.path().starts_with(&t))
        });
    }
    let mut seen_target = !prune_to_target;
    for item in b.build() {
        let entry = match item {
            Ok(entry) => entry,
            Err(_) => {
                info.errors += 1;
                continue;
            }
        };
        if entry.path() == target {
            seen_target = true;
            continue;
        }
        if !entry.path().starts_with(target) {
            continue;
        }
        if visit(&entry).is_break() {
            return info;
        }
    }
    if !seen_target {
        info.target_ignored = true;
        for item in builder(target, false, depth).build() {
            match item {
                Ok(entry) if entry.path() == target => {}
                Ok(entry) => {
                    if visit(&entry).is_break() {
                        break;
                    }
                }
                Err(_) => info.errors += 1,
            }
        }
    }
    info
}

/// Depth of `entry` below `target` (1 for its direct children).
pub(crate) fn depth_below(target: &Path, entry: &Path) -> usize {
    entry
        .strip_prefix(target)
        .map(|p| p.components().count())
        .unwrap_or(0)
}

pub struct ListFiles;

#[derive(Deserialize)]
struct ListArgs {
    path: Option<String>,
    depth: Option<usize>,
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "depth": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_DEPTH,
                "description": format!("Levels to show (default {DEFAULT_DEPTH}).")
            }
        }
    })
}

#[async_trait]
impl ToolHandler for ListFiles {
    fn kind(&self) -> super::ToolKind {
        super::ToolKind::Search
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "list_files".to_string(),
            description: "List files and directories, sorted (directories end with '/'), \
                 without what .gitignore ignores."
                .to_string(),
            parameters: schema(),
            freeform: None,
        }
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::ReadOnly
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<String, ToolError> {
        let args: ListArgs = args::parse(&schema(), args)?;
        let target = ctx.workspace.resolve(args.path.as_deref().unwrap_or("."))?;
        let rel = ctx.workspace.relative(&target);
        let depth = args.depth.unwrap_or(DEFAULT_DEPTH);
        match tokio::fs::metadata(&target).await {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Ok(format!("{rel} (a file, not a directory)")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(ToolError::Failed(format!(
                    "directory not found: '{rel}' (paths are relative to the workspace root; \
                     list '.' to see the top level)"
                )));
            }
            Err(e) => return Err(ToolError::io("list", &rel, e)),
        }
        let ws = ctx.workspace.clone();
        let cancel = ctx.cancel.clone();
        let listing = tokio::task::spawn_blocking(move || list(ws.root(), &target, depth, &cancel))
            .await
            .map_err(|e| ToolError::Failed(format!("listing task failed: {e}")))?;
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        Ok(listing.render(&rel, depth))
    }
}

struct Listing {
    lines: Vec<String>,
    truncated: bool,
    unexpanded: bool,
    info: WalkInfo,
}

fn list(
    root: &Path,
    target: &Path,
    depth: usize,
    cancel: &tokio_util::sync::CancellationToken,
) -> Listing {
    let mut lines = Vec::new();
    let mut truncated = false;
    let mut unexpanded = false;
    let info = walk(root, target, Some(depth), |entry| {
        if cancel.is_cancelled() {
            return ControlFlow::Break(());
        }
        if lines.len() >= MAX_ENTRIES {
            truncated = true;
            return ControlFlow::Break(());
        }
        let shown = shown_path(root, entry.path());
        let ft = entry.file_type();
        let line = if ft.is_some_and(|t| t.is_symlink()) {
            match std::fs::read_link(entry.path()) {
                Ok(to) => format!("{shown} -> {}", to.display()),
                Err(_) => format!("{shown} -> ?"),
            }
        } else if ft.is_some_and(|t| t.is_dir()) {
            if depth_below(target, entry.path()) >= depth {
                unexpanded = true;
            }
            format!("{shown}/")
        } else {
            shown
        };
        lines.push(line);
        ControlFlow::Continue(())
    });
    Listing {
        lines,
        truncated,
        unexpanded,
        info,
    }
}

fn shown_path(root: &Path, path: &Path) -> String {
    let rel: PathBuf = path.strip_prefix(root).unwrap_or(path).to_path_buf();
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

impl Listing {
    fn render(self, rel: &str, depth: usize) -> String {
        let mut out = String::new();
        if self.info.target_ignored {
            out.push_str(&format!(
                "[note: '{rel}' is ignored by .gitignore; listing it anyway]\n"
            ));
        }
        if self.lines.is_empty() {
            out.push_str(&format!(
                "[{rel} is empty (or all its contents are ignored)]"
            ));
            return out;
        }
        out.push_str(&self.lines.join("\n"));
        if self.truncated {
            out.push_str(&format!(
                "\n[stopped at {MAX_ENTRIES} entries; list a subdirectory or use a smaller depth to see the rest]"
            ));
        }
        if self.unexpanded {
            out.push_str(&format!(
                "\n[directories {depth} levels down are not expanded; list one of them, or pass a larger depth]"
            ));
        }
        if self.info.errors > 0 {
            out.push_str(&format!(
                "\n[{} entries could not be read]",
                self.info.errors
            ));
        }
        out
    }
}
