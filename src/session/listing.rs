//! `squad sessions`: this folder's sessions first (the ones `--resume last` picks from),
//! every folder's with `--all`; `squad review` runs only when asked for. What was left
//! out is counted, with the flag that shows it.

use super::SessionMeta;
use std::path::Path;

/// What to list besides this folder's sessions.
#[derive(Clone, Copy, Debug, Default)]
pub struct Shown {
    /// Every folder's sessions, each with its folder.
    pub all: bool,
    /// `squad review` runs too.
    pub reviews: bool,
}

/// The lines (stdout) and a note of what was left out (stderr; empty when nothing was).
/// `sessions` are newest first, as the store lists them.
pub fn listing(sessions: &[SessionMeta], workspace: &Path, shown: Shown) -> (String, String) {
    let reviews_out = if shown.reviews {
        0
    } else {
        sessions.iter().filter(|s| s.review).count()
    };
    let kept = || sessions.iter().filter(|s| shown.reviews || !s.review);
    let here: Vec<&SessionMeta> = kept().filter(|s| s.is_of(workspace)).collect();
    let elsewhere: Vec<&SessionMeta> = kept().filter(|s| !s.is_of(workspace)).collect();
    let mut out = String::new();
    let listed = if shown.all {
        here.iter().chain(elsewhere.iter()).copied().collect()
    } else {
        here.clone()
    };
    for s in &listed {
        out.push_str(&line(s, shown.all));
        out.push('\n');
    }
    let mut left = Vec::new();
    if listed.is_empty() {
        // With --all no folder has one: naming this folder would say less than is true.
        left.push(match shown.all {
            true => "no saved session in any folder".to_string(),
            false => format!("no saved session of this folder ({})", workspace.display()),
        });
    }
    if !shown.all && !elsewhere.is_empty() {
        left.push(format!(
            "{} of other folders (--all)",
            count(elsewhere.len(), "session")
        ));
    }
    if reviews_out > 0 {
        left.push(format!(
            "{} left out (--reviews)",
            count(reviews_out, "review")
        ));
    }
    let note = if left.is_empty() {
        String::new()
    } else {
        format!("{}\n", left.join("; "))
    };
    (out, note)
}

/// `ID  DATE  [FOLDER  ]FIRST-PROMPT`; a review says so where its prompt would be.
fn line(s: &SessionMeta, with_folder: bool) -> String {
    let prompt = match &s.first_prompt {
        Some(p) => crate::text::one_line(p).chars().take(60).collect(),
        None if s.review => "(review)".to_string(),
        None => String::new(),
    };
    let mut out = format!("{}  {}  ", s.id, s.modified.format("%Y-%m-%d %H:%M"));
    if with_folder {
        let folder = s.workspace.as_ref().map(|w| w.display().to_string());
        out.push_str(&folder.unwrap_or_else(|| "?".into()));
        out.push_str("  ");
    }
    out.push_str(&prompt);
    out.trim_end().to_string()
}

fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};
    use std::path::PathBuf;

    fn meta(id: &str, folder: &str, prompt: Option<&str>, review: bool) -> SessionMeta {
        SessionMeta {
            id: id.into(),
            path: PathBuf::from(format!("/data/{id}.jsonl")),
            modified: Utc.with_ymd_and_hms(2026, 11, 29, 3, 40, 0).unwrap(),
            workspace: Some(PathBuf::from(folder)),
            first_prompt: prompt.map(str::to_string),
            review,
        }
    }

    fn sessions() -> Vec<SessionMeta> {
        vec![
            meta("s4", "/other", Some("theirs"), false),
            meta("s3", "/here", None, true),
            meta("s2", "/here", Some("fix the\ntypo"), false),
            meta("s1", "/here", Some("first"), false),
        ]
    }

    #[test]
    fn this_folders_sessions_only_and_what_was_left_out() {
        let (out, note) = listing(&sessions(), Path::new("/here"), Shown::default());
        assert_eq!(
            out,
            "s2  2026-11-29 03:40  fix the typo\ns1  2026-11-29 03:40  first\n"
        );
        assert_eq!(
            note,
            "1 session of other folders (--all); 1 review left out (--reviews)\n"
        );
    }

    #[test]
    fn all_lists_this_folders_first_then_the_others_with_their_folder() {
        let shown = Shown {
            all: true,
            reviews: true,
        };
        let (out, note) = listing(&sessions(), Path::new("/here"), shown);
        let ids: Vec<&str> = out.lines().map(|l| l.split("  ").next().unwrap()).collect();
        assert_eq!(ids, ["s3", "s2", "s1", "s4"]);
        assert!(
            out.contains("s3  2026-11-29 03:40  /here  (review)"),
            "{out}"
        );
        assert!(
            out.contains("s4  2026-11-29 03:40  /other  theirs"),
            "{out}"
        );
        assert_eq!(note, "");
    }

    #[test]
    fn none_here_says_so_and_points_to_the_others() {
        let (out, note) = listing(&sessions(), Path::new("/new"), Shown::default());
        assert_eq!(out, "");
        assert_eq!(
            note,
            "no saved session of this folder (/new); 3 sessions of other folders (--all); \
             1 review left out (--reviews)\n"
        );
        let all = Shown {
            all: true,
            ..Shown::default()
        };
        let (out, note) = listing(&[], Path::new("/new"), all);
        assert_eq!(
            (out.as_str(), note.as_str()),
            ("", "no saved session in any folder\n")
        );
    }
}
