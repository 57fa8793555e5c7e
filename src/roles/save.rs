//! Writing a role file: a worker's role as it ran, kept as a permanent role in the
//! workspace's `.squad/roles/NAME.toml`, in the format the loader reads back.

use super::check_fields;
use super::{Role, RoleSet};
use crate::config::parse::parse_toml;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum SaveRoleError {
    #[error("cannot save role `{name}`: {problem}")]
    Invalid { name: String, problem: String },
    #[error("a role named `{name}` exists ({place}); pick another name")]
    Exists { name: String, place: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Writes `role` as `<workspace>/.squad/roles/<name>.toml` (a new file: nothing is ever
/// overwritten), under a `header` comment, and returns its path. The file is read back
/// through the loader's checks before it is written, so what is saved loads.
pub fn save_role(
    roles: &RoleSet,
    workspace: &Path,
    role: &Role,
    header: &str,
) -> Result<PathBuf, SaveRoleError> {
    let invalid = |problem: String| SaveRoleError::Invalid {
        name: role.name.clone(),
        problem,
    };
    check_fields(role).map_err(|p| invalid(p.to_string()))?;
    if let Some(existing) = roles.get(&role.name) {
        return Err(SaveRoleError::Exists {
            name: role.name.clone(),
            place: existing.source.to_string(),
        });
    }
    let body = toml::to_string(role).map_err(|e| invalid(e.to_string()))?;
    let text = format!("# {header}\n{body}");
    let (back, _) = parse_toml::<Role>(&text).map_err(|p| invalid(p.to_string()))?;
    if back.system_prompt != role.system_prompt {
        return Err(invalid("its prompt does not read back as written".into()));
    }
    let dir = workspace.join(".squad").join("roles");
    let path = dir.join(format!("{}.toml", role.name));
    let write = |source| SaveRoleError::Write {
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(&dir).map_err(write)?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => SaveRoleError::Exists {
                name: role.name.clone(),
                place: path.display().to_string(),
            },
            _ => write(e),
        })?;
    file.write_all(text.as_bytes()).map_err(write)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roles::load_roles_from;

    fn role(name: &str) -> Role {
        let ws = tempfile::tempdir().unwrap();
        let mut r = load_roles_from(None, ws.path())
            .unwrap()
            .get("code_reviewer")
            .unwrap()
            .clone();
        r.name = name.into();
        r.system_prompt
            .push_str("\n\nOnly look at \"src/\"; quote ''' and \"\"\" as is.");
        r
    }

    #[test]
    fn a_saved_role_loads_back_and_is_never_overwritten() {
        let ws = tempfile::tempdir().unwrap();
        let roles = load_roles_from(None, ws.path()).unwrap();
        let saved = role("strict_reviewer");
        let path = save_role(&roles, ws.path(), &saved, "saved from a worker").unwrap();
        assert_eq!(path, ws.path().join(".squad/roles/strict_reviewer.toml"));
        let again = load_roles_from(None, ws.path()).unwrap();
        assert!(again.warnings.is_empty(), "{:?}", again.warnings);
        let loaded = again.get("strict_reviewer").unwrap();
        assert_eq!(loaded.system_prompt, saved.system_prompt);
        assert_eq!(loaded.tools, saved.tools);

        let err = save_role(&roles, ws.path(), &saved, "again").unwrap_err();
        assert!(
            matches!(&err, SaveRoleError::Exists { place, .. } if place.ends_with("strict_reviewer.toml")),
            "{err}"
        );
        let err = save_role(&again, ws.path(), &role("copilot"), "x").unwrap_err();
        assert_eq!(
            err.to_string(),
            "a role named `copilot` exists (built-in); pick another name"
        );
        let err = save_role(&again, ws.path(), &role("no spaces"), "x").unwrap_err();
        assert!(err.to_string().contains("letters, digits"), "{err}");
    }
}
