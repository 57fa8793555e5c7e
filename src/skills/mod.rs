//! Agent Skills: folders with a `SKILL.md` (front matter `name` and `description`, then
//! instructions), the open format Claude Code, Codex, Gemini CLI, OpenCode and Crush read.
//! squad finds them in the workspace (`.agents/skills/`, `.claude/skills/`) and the user's
//! folders (`~/.config/squad/skills/`, `~/.claude/skills/`); the first of a name wins. A
//! request carries only each skill's name and a short description, in `use_skill`'s
//! description (a few, clipped: every persona's first request stays within 8 KB with
//! them; see docs/configuration.md); the model loads a
//! skill's body and files with the `use_skill` tool when it needs them, and runs its
//! scripts with `run_command`, in the sandbox like any command.

use std::path::{Path, PathBuf};

/// One skill: what the model is told of it up front, and where the rest is.
#[derive(Clone, Debug, PartialEq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The skill's folder (its `SKILL.md` and files).
    pub dir: PathBuf,
    /// The skills folder it was found in, for `squad skills`.
    pub from: PathBuf,
}

/// The skills of a session.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SkillSet {
    pub skills: Vec<Skill>,
    /// Skill folders that could not be read, and names found twice.
    pub warnings: Vec<String>,
}

/// The most bytes of the list of skills in a request (every persona's first request stays
/// within 8 KB with a few skills); skills beyond it are listed by `use_skill` without a name.
const MAX_LIST_BYTES: usize = 160;
/// The most skills listed in a request.
const MAX_LISTED: usize = 4;
/// The most characters of one skill's description in the list.
const MAX_DESCRIPTION: usize = 64;

/// The skills folders, most specific first: the workspace's, then the user's.
pub fn skill_dirs(workspace: &Path, user_dir: Option<&Path>, home: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs = vec![
        workspace.join(".agents/skills"),
        workspace.join(".claude/skills"),
    ];
    dirs.extend(user_dir.map(|d| d.join("skills")));
    dirs.extend(home.map(|h| h.join(".claude/skills")));
    dirs
}

/// Every skill in `dirs` (each a folder of skill folders), the first of a name winning.
pub fn discover(dirs: &[PathBuf]) -> SkillSet {
    let mut set = SkillSet::default();
    for from in dirs {
        let Ok(entries) = std::fs::read_dir(from) else {
            continue;
        };
        let mut folders: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.join("SKILL.md").is_file())
            .collect();
        folders.sort();
        for dir in folders {
            match read_skill(&dir, from) {
                Ok(skill) if set.skills.iter().any(|s| s.name == skill.name) => {
                    set.warnings.push(format!(
                        "skill `{}` in {} is hidden by one of the same name found earlier",
                        skill.name,
                        dir.display()
                    ));
                }
                Ok(skill) => set.skills.push(skill),
                Err(e) => set.warnings.push(format!(
                    "skipped skill {}: {e}",
                    dir.join("SKILL.md").display()
                )),
            }
        }
    }
    set
}

fn read_skill(dir: &Path, from: &Path) -> Result<Skill, String> {
    let text = std::fs::read_to_string(dir.join("SKILL.md")).map_err(|e| e.to_string())?;
    let fm = crate::front_matter::parse(&text)?;
    let name = fm.text("name").ok_or("its front matter has no `name`")?;
    let description = fm
        .text("description")
        .ok_or("its front matter has no `description`")?;
    Ok(Skill {
        name: name.trim().to_string(),
        description: description.trim().to_string(),
        dir: dir.to_path_buf(),
        from: from.to_path_buf(),
    })
}

impl SkillSet {
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// `use_skill`'s description: what it does and each skill's name and description on
    /// a line (clipped), at most `MAX_LISTED` of them within `MAX_LIST_BYTES`, the rest
    /// counted. Claude Code's Skill tool lists its skills the same way.
    pub fn tool_description(&self) -> String {
        let mut out = "Load one of these skills (name), or a file of it (name, file):".to_string();
        let start = out.len();
        for (i, s) in self.skills.iter().enumerate() {
            let line = format!(
                "\n- {}: {}",
                s.name,
                crate::text::cut(&crate::text::one_line(&s.description), MAX_DESCRIPTION)
            );
            if i == MAX_LISTED || out.len() - start + line.len() > MAX_LIST_BYTES {
                out.push_str(&format!(
                    "\n({} more: call with no name to list all)",
                    self.skills.len() - i
                ));
                break;
            }
            out.push_str(&line);
        }
        out
    }

    /// `squad skills`: one line per skill with the folder it came from.
    pub fn listing(&self) -> String {
        let mut out = String::new();
        if self.skills.is_empty() {
            out.push_str(
                "no skills: add a folder with a SKILL.md to .agents/skills/ or .claude/skills/ \
                 (workspace), ~/.config/squad/skills/ or ~/.claude/skills/\n",
            );
        }
        for s in &self.skills {
            out.push_str(&format!(
                "{}  {}  [{}]\n",
                s.name,
                crate::text::cut(&crate::text::one_line(&s.description), 80),
                s.dir.display()
            ));
        }
        for w in &self.warnings {
            out.push_str(&format!("! {w}\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(root: &Path, folder: &str, name: &str) {
        let dir = root.join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: Does {name} things.\n---\n# {name}\n"),
        )
        .unwrap();
    }

    #[test]
    fn the_first_of_a_name_wins_and_broken_ones_are_named() {
        let tmp = tempfile::tempdir().unwrap();
        let (ws, user) = (tmp.path().join("ws"), tmp.path().join("user"));
        skill(&ws.join(".claude/skills"), "pdf", "pdf");
        skill(&user.join("skills"), "pdf", "pdf");
        skill(&user.join("skills"), "xlsx", "xlsx");
        let broken = ws.join(".agents/skills/broken");
        std::fs::create_dir_all(&broken).unwrap();
        std::fs::write(broken.join("SKILL.md"), "no front matter").unwrap();
        let set = discover(&skill_dirs(&ws, Some(&user), None));
        let names: Vec<&str> = set.skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["pdf", "xlsx"]);
        assert!(set.skills[0].dir.starts_with(&ws));
        assert_eq!(set.warnings.len(), 2, "{:?}", set.warnings);
        let listed = set.tool_description();
        assert!(listed.contains("\n- pdf: Does pdf things."), "{listed}");
    }

    #[test]
    fn a_long_list_stays_within_its_budget() {
        let tmp = tempfile::tempdir().unwrap();
        for i in 0..100 {
            skill(tmp.path(), &format!("s{i:03}"), &format!("skill-{i:03}"));
        }
        let set = discover(&[tmp.path().to_path_buf()]);
        let listed = set.tool_description();
        assert!(listed.len() < MAX_LIST_BYTES + 120, "{}", listed.len());
        assert!(listed.contains("(96 more: call with no name"), "{listed}");
    }
}
