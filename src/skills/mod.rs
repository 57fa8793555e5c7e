//! Agent Skills: folders with a `SKILL.md` (front matter `name` and `description`, then
//! instructions), the open format Claude Code, Codex, Gemini CLI, OpenCode and Crush read.
//! squad finds them in the workspace (`.agents/skills/`, `.claude/skills/`) and the user's
//! folders (`~/.config/squad/skills/`, `~/.claude/skills/`); the first of a name wins. A
//! request carries only each skill's name and its whole description (how a model decides
//! to load it), in `use_skill`'s description, within a budget of the context window; the
//! model loads a skill's body and files with the `use_skill` tool when it needs them, and
//! runs its scripts with `run_command`, in the sandbox like any command.

pub mod usage;

use std::collections::HashMap;
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
    /// Bytes of `use_skill`'s list (see [`budget`]); `None`: that of the default window.
    pub budget: Option<usize>,
    /// Each skill's last use (Unix seconds), as the session found it (`usage.rs`).
    pub last_used: HashMap<String, u64>,
    /// Where a use is noted; `None`: nowhere (no data dir).
    pub usage_file: Option<PathBuf>,
}

/// The most characters of one skill's description: the Agent Skills spec's own limit.
const MAX_DESCRIPTION: usize = 1024;
/// The share of the context window the list of skills may take before the least
/// recently used are listed by name alone (as Claude Code budgets its skills).
const BUDGET_SHARE: f64 = 0.02;
/// Bytes a token is taken for (as `context::estimate_text` does).
const BYTES_PER_TOKEN: f64 = 3.5;
/// Room for names alone even when the descriptions took the whole budget.
const MIN_NAMES_BYTES: usize = 160;
/// The window assumed when none is known (`context.default_window`'s default).
const DEFAULT_WINDOW: u64 = 32_768;

/// The bytes the list of skills may take in a request to a model of `window` tokens.
pub fn budget(window: u64) -> usize {
    (window as f64 * BUDGET_SHARE * BYTES_PER_TOKEN) as usize
}

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

/// Why a skill's folder is skipped; the loader names its `SKILL.md`.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    #[error("{0}")]
    Read(#[from] std::io::Error),
    #[error(transparent)]
    FrontMatter(#[from] crate::front_matter::FrontMatterError),
    #[error("its front matter has no `{0}`")]
    Missing(&'static str),
}

fn read_skill(dir: &Path, from: &Path) -> Result<Skill, SkillError> {
    let text = std::fs::read_to_string(dir.join("SKILL.md"))?;
    let fm = crate::front_matter::parse(&text)?;
    let name = fm.text("name").ok_or(SkillError::Missing("name"))?;
    let description = (fm.text("description")).ok_or(SkillError::Missing("description"))?;
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

    /// `use_skill`'s description: what it does, then each skill's name and whole
    /// description on a line. Past the budget, the least recently used are listed by name
    /// alone, on a line that says so (and past it again, counted). Claude Code's Skill
    /// tool lists its skills the same way.
    pub fn tool_description(&self) -> String {
        let budget = self.budget.unwrap_or_else(|| budget(DEFAULT_WINDOW));
        let line = |s: &Skill| {
            let description = crate::text::one_line(&s.description);
            format!(
                "\n- {}: {}",
                s.name,
                crate::text::cut(&description, MAX_DESCRIPTION)
            )
        };
        // Most recently used first; never used after, in the order found.
        let mut order: Vec<usize> = (0..self.skills.len()).collect();
        order.sort_by_key(|i| std::cmp::Reverse(self.last_used.get(&self.skills[*i].name)));
        let mut whole = vec![false; self.skills.len()];
        let mut used = 0;
        for i in order.iter().copied() {
            let len = line(&self.skills[i]).len();
            if used + len > budget {
                break;
            }
            whole[i] = true;
            used += len;
        }
        let mut out = "Load one of these skills (name), or a file of it (name, file):".to_string();
        for (s, _) in self.skills.iter().zip(&whole).filter(|(_, w)| **w) {
            out.push_str(&line(s));
        }
        let rest: Vec<&str> = order
            .iter()
            .filter(|i| !whole[**i])
            .map(|i| self.skills[*i].name.as_str())
            .collect();
        if rest.is_empty() {
            return out;
        }
        out.push_str(&format!(
            "\n{} more, by name alone (the least recently used: the descriptions above fill \
             the skills' share of the context window; call with no name for every one):",
            rest.len()
        ));
        // The names too stay within the budget, or a little room past the descriptions.
        let room = budget.max(used + MIN_NAMES_BYTES);
        for (n, name) in rest.iter().enumerate() {
            if used + name.len() + 2 > room {
                out.push_str(&format!(" and {} more", rest.len() - n));
                break;
            }
            out.push_str(if n == 0 { " " } else { ", " });
            out.push_str(name);
            used += name.len() + 2;
        }
        out
    }

    /// Notes that `name` was loaded (for the next session's order).
    pub fn note_use(&self, name: &str) {
        if let Some(file) = &self.usage_file {
            usage::record(file, name);
        }
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

    /// A set of skills named `s0`, `s1`, … with these descriptions.
    fn set_of(descriptions: &[&str]) -> SkillSet {
        let skills = descriptions
            .iter()
            .enumerate()
            .map(|(i, d)| Skill {
                name: format!("s{i}"),
                description: d.to_string(),
                dir: PathBuf::from(format!("/skills/s{i}")),
                from: PathBuf::from("/skills"),
            })
            .collect();
        SkillSet {
            skills,
            ..SkillSet::default()
        }
    }

    #[test]
    fn a_description_reaches_the_model_whole_up_to_the_specs_limit() {
        let short = "Formats the release notes of this project the way its maintainers want.";
        let long = "x".repeat(2000);
        let mut set = set_of(&[short, &long]);
        set.budget = Some(budget(128_000));
        let listed = set.tool_description();
        assert!(listed.contains(&format!("\n- s0: {short}\n")), "{listed}");
        let cut = format!("\n- s1: {}…", "x".repeat(MAX_DESCRIPTION));
        assert!(listed.ends_with(&cut), "{listed}");
        assert!(!listed.contains("by name alone"));
    }

    #[test]
    fn past_the_budget_the_least_recently_used_are_listed_by_name_alone() {
        let d = "y".repeat(100);
        let mut set = set_of(&[&d, &d, &d, &d]);
        set.budget = Some(250); // two lines of ~107 bytes
        set.last_used = HashMap::from([("s3".into(), 300), ("s1".into(), 200), ("s0".into(), 100)]);
        let listed = set.tool_description();
        // s3 and s1 are the most recently used: whole, in the order found.
        assert!(
            listed.contains(&format!("\n- s1: {d}\n- s3: {d}\n")),
            "{listed}"
        );
        assert!(
            listed.ends_with(
                "2 more, by name alone (the least recently used: the descriptions \
                 above fill the skills' share of the context window; call with no name for \
                 every one): s0, s2"
            ),
            "{listed}"
        );
    }

    #[test]
    fn a_thousand_skills_stay_near_their_budget() {
        let tmp = tempfile::tempdir().unwrap();
        for i in 0..1000 {
            skill(tmp.path(), &format!("s{i:04}"), &format!("skill-{i:04}"));
        }
        let set = discover(&[tmp.path().to_path_buf()]);
        let listed = set.tool_description();
        let most = budget(DEFAULT_WINDOW) + 400;
        assert!(listed.len() < most, "{} B", listed.len());
        assert!(
            listed.contains("\n- skill-0000: Does skill-0000 things."),
            "{listed}"
        );
        assert!(listed.contains("more, by name alone"), "{listed}");
        assert!(listed.contains(" more"), "{listed}");
    }
}
