//! PLACEHOLDER — to be replaced by the role loader (built-ins, user and workspace files).
use super::Role;
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Clone, Debug, Default)]
pub struct RoleSet {
    roles: BTreeMap<String, Role>,
    /// Problems with role files that were skipped (file, key, what is expected).
    pub warnings: Vec<String>,
}

impl RoleSet {
    pub fn get(&self, name: &str) -> Option<&Role> {
        self.roles.get(name)
    }
    pub fn names(&self) -> Vec<String> {
        self.roles.keys().cloned().collect()
    }
    pub fn iter(&self) -> impl Iterator<Item = &Role> {
        self.roles.values()
    }
    pub fn insert(&mut self, role: Role) {
        self.roles.insert(role.name.clone(), role);
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RoleError {
    #[error("unknown role '{name}'; known roles: {known}")]
    Unknown { name: String, known: String },
}

pub fn load_roles(_workspace: &Path) -> Result<RoleSet, RoleError> {
    Ok(RoleSet::default())
}

impl RoleSet {
    pub fn require(&self, name: &str) -> Result<&Role, RoleError> {
        self.get(name).ok_or_else(|| RoleError::Unknown {
            name: name.to_string(),
            known: self.names().join(", "),
        })
    }
}

impl Role {
    pub fn model(&self, config: &crate::config::Config) -> String {
        match (&self.model, &self.level) {
            (Some(m), _) => m.clone(),
            (None, Some(l)) => config.model_for_level(l),
            (None, None) => config.model_for_level(&config.default_level),
        }
    }
}
