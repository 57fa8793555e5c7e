//! `use_skill`: loads an Agent Skill when the model asks for it (the request carries only
//! names and short descriptions): its `SKILL.md` body and the files beside it, or one of
//! those files. Skill folders may be outside the workspace (the user's own), so this tool
//! reads them itself, only inside the skill's folder; scripts run with `run_command`.

use super::{ToolContext, ToolEffect, ToolError, ToolHandler, args};
use crate::model::ToolSpec;
use crate::skills::SkillSet;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::{Component, Path};
use std::sync::Arc;

pub const USE_SKILL: &str = "use_skill";

/// The most bytes of a skill file returned.
const MAX_FILE: usize = 64 * 1024;

pub struct UseSkill(pub Arc<SkillSet>);

#[derive(Deserialize)]
struct SkillArgs {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    file: Option<String>,
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "file": {"type": "string"}
        }
    })
}

/// The files of a skill's folder (relative, sorted), a few levels deep.
fn files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let walker = ignore::WalkBuilder::new(dir).max_depth(Some(4)).build();
    for entry in walker.filter_map(Result::ok) {
        if entry.file_type().is_some_and(|t| t.is_file())
            && let Ok(rel) = entry.path().strip_prefix(dir)
            && rel != Path::new("SKILL.md")
        {
            out.push(rel.to_string_lossy().into_owned());
        }
    }
    out.sort();
    out
}

fn read(path: &Path) -> Result<String, ToolError> {
    let bytes = std::fs::read(path)
        .map_err(|e| ToolError::Failed(format!("cannot read {}: {e}", path.display())))?;
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_FILE)]).into_owned();
    Ok(text)
}

#[async_trait]
impl ToolHandler for UseSkill {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: USE_SKILL.to_string(),
            description: self.0.tool_description(),
            parameters: schema(),
            freeform: None,
        }
    }

    fn comes_with(&self) -> Option<&'static str> {
        Some("read_file")
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::ReadOnly
    }

    async fn call(&self, _ctx: &ToolContext, args: Value) -> Result<String, ToolError> {
        let args: SkillArgs = args::parse(&schema(), args)?;
        let Some(name) = args.name.filter(|n| !n.trim().is_empty()) else {
            return Ok(self
                .0
                .skills
                .iter()
                .map(|s| format!("- {}: {}", s.name, s.description))
                .collect::<Vec<_>>()
                .join("\n"));
        };
        let Some(skill) = self.0.get(name.trim()) else {
            let known: Vec<&str> = self.0.skills.iter().map(|s| s.name.as_str()).collect();
            return Err(ToolError::InvalidArguments(format!(
                "no skill `{name}`; the skills are: {}",
                known.join(", ")
            )));
        };
        if let Some(file) = args.file.filter(|f| !f.trim().is_empty()) {
            let rel = Path::new(file.trim());
            if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
                return Err(ToolError::InvalidArguments(format!(
                    "`{file}` must be a path inside the skill's folder (no `..`, not absolute)"
                )));
            }
            return read(&skill.dir.join(rel));
        }
        let body = read(&skill.dir.join("SKILL.md"))?;
        self.0.note_use(&skill.name);
        let body = crate::front_matter::parse(&body).map_or(body.clone(), |fm| fm.body.to_string());
        let mut out = format!(
            "Skill `{}` (folder {}; run its scripts with run_command by that path):\n\n{}",
            skill.name,
            skill.dir.display(),
            body.trim()
        );
        let files = files(&skill.dir);
        if !files.is_empty() {
            out.push_str(&format!(
                "\n\nIts files (read one with {USE_SKILL} name+file): {}",
                files.join(", ")
            ));
        }
        Ok(out)
    }
}
