//! `[environments.NAME]`: where a worker's tools may run besides this machine: another
//! host over the user's own `ssh`, or a container an engine (Docker, Podman) starts. Only
//! the settings live here (config is the bottom layer); `crate::environments` reaches them.
//! Every key is optional in one file, as files merge key by key; what a kind needs is
//! checked once every layer is merged ([`incomplete`]).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where an environment is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EnvKind {
    /// This machine, in-process: what a worker gets without an environment.
    Local,
    /// Another host, through the system `ssh` (the user's `~/.ssh/config`, agent and
    /// ProxyJump apply).
    Ssh,
    /// A container the engine at `socket` starts from `image`.
    Container,
}

impl EnvKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::Ssh => "ssh",
            Self::Container => "container",
        }
    }
}

/// One environment, as a file writes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EnvironmentConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<EnvKind>,
    /// ssh: the host as the user's OpenSSH knows it (`user@host`, an alias of
    /// `~/.ssh/config`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// ssh and container: the folder workers work in on the far side (ssh: required;
    /// container: default `/work`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workdir: Option<String>,
    /// ssh and container: the `squad` program on the far side (default: `squad` on its
    /// `PATH`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub squad: Option<String>,
    /// ssh: an `ssh_config` file used instead of the user's (`ssh -F`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssh_config: Option<String>,
    /// container: the image workers' containers start from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// container: the engine's API socket (`unix:///run/podman/podman.sock`); default
    /// `DOCKER_HOST`, else Docker's, else Podman's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub socket: Option<String>,
    /// container: the network mode (default `none`: no network at all).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    /// container: CPUs the container may use (`1.5`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<f64>,
    /// container: memory limit, in bytes or with a unit (`"512m"`, `"2g"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    /// container: bind mounts, `host:container[:ro]`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mounts: Vec<String>,
}

impl EnvironmentConfig {
    /// The network mode a container gets.
    pub fn network_mode(&self) -> &str {
        self.network.as_deref().unwrap_or("none")
    }

    /// The memory limit in bytes, if set and valid.
    pub fn memory_bytes(&self) -> Option<i64> {
        self.memory.as_deref().and_then(|m| parse_memory(m).ok())
    }

    /// The folder workers work in on the far side.
    pub fn workdir_or_default(&self) -> &str {
        match (self.kind, self.workdir.as_deref()) {
            (_, Some(dir)) => dir,
            (Some(EnvKind::Container), None) => "/work",
            _ => ".",
        }
    }

    /// The `squad` program on the far side.
    pub fn squad_or_default(&self) -> &str {
        self.squad.as_deref().unwrap_or("squad")
    }
}

/// Keys each kind takes besides `kind`.
fn keys_of(kind: EnvKind) -> &'static [&'static str] {
    match kind {
        EnvKind::Local => &[],
        EnvKind::Ssh => &["host", "workdir", "squad", "ssh_config"],
        EnvKind::Container => &[
            "image", "socket", "network", "cpus", "memory", "mounts", "workdir", "squad",
        ],
    }
}

/// The keys this environment sets, besides `kind`.
fn keys_set(env: &EnvironmentConfig) -> Vec<&'static str> {
    let set = [
        ("host", env.host.is_some()),
        ("workdir", env.workdir.is_some()),
        ("squad", env.squad.is_some()),
        ("ssh_config", env.ssh_config.is_some()),
        ("image", env.image.is_some()),
        ("socket", env.socket.is_some()),
        ("network", env.network.is_some()),
        ("cpus", env.cpus.is_some()),
        ("memory", env.memory.is_some()),
        ("mounts", !env.mounts.is_empty()),
    ];
    set.into_iter()
        .filter(|(_, s)| *s)
        .map(|(k, _)| k)
        .collect()
}

/// Problems one file can show on its own, as `(key, what is expected)`.
pub(crate) fn problems(envs: &BTreeMap<String, EnvironmentConfig>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (name, env) in envs {
        let key = |k: &str| format!("environments.{name}{k}");
        if !valid_name(name) {
            out.push((
                key(""),
                "expected a name of letters, digits, '_' or '-'".to_string(),
            ));
        }
        if let Some(kind) = env.kind
            && let Some(k) = keys_set(env)
                .into_iter()
                .find(|k| !keys_of(kind).contains(k))
        {
            out.push((
                key(&format!(".{k}")),
                format!(
                    "not a key of a `{}` environment (it takes: {})",
                    kind.as_str(),
                    keys_of(kind).join(", ")
                ),
            ));
        }
        for (k, value) in [
            (".host", &env.host),
            (".workdir", &env.workdir),
            (".squad", &env.squad),
            (".image", &env.image),
            (".network", &env.network),
        ] {
            if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
                out.push((
                    key(k),
                    "expected a value, found an empty string".to_string(),
                ));
            }
        }
        if let Some(cpus) = env.cpus.filter(|c| !(c.is_finite() && *c > 0.0)) {
            out.push((
                key(".cpus"),
                format!("expected a positive number of CPUs, found {cpus}"),
            ));
        }
        if let Some(Err(e)) = env.memory.as_deref().map(parse_memory) {
            out.push((key(".memory"), e));
        }
        if let Some(socket) = &env.socket
            && !socket.starts_with("unix://")
            && !socket.starts_with('/')
        {
            out.push((
                key(".socket"),
                format!(
                    "expected a unix socket (unix:///run/podman/podman.sock), found {socket:?}"
                ),
            ));
        }
        if let Some(bad) = env.mounts.iter().find(|m| m.split(':').count() < 2) {
            out.push((
                key(".mounts"),
                format!("expected host:container[:ro], found {bad:?}"),
            ));
        }
    }
    out
}

/// What an environment lacks once every layer is merged: `(name, message)`.
pub(crate) fn incomplete(envs: &BTreeMap<String, EnvironmentConfig>) -> Option<(String, String)> {
    envs.iter().find_map(|(name, env)| {
        let missing = match env.kind {
            None => Some("expected `kind = \"local\"`, `\"ssh\"` or `\"container\"`, found none"),
            Some(EnvKind::Ssh) if env.host.is_none() => {
                Some("an ssh environment needs `host` (as your ssh config knows it)")
            }
            Some(EnvKind::Ssh) if env.workdir.is_none() => {
                Some("an ssh environment needs `workdir` (the folder workers work in there)")
            }
            Some(EnvKind::Container) if env.image.is_none() => {
                Some("a container environment needs `image`")
            }
            _ => None,
        };
        missing.map(|m| (name.clone(), m.to_string()))
    })
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// `"512m"`, `"2g"`, `"1048576"` in bytes; units are powers of 1024, as engines read them.
pub fn parse_memory(text: &str) -> Result<i64, String> {
    let t = text.trim().to_ascii_lowercase();
    let (digits, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => t.split_at(i),
        None => (t.as_str(), ""),
    };
    let shift = match unit.trim_end_matches('b') {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        _ => {
            return Err(format!(
                "expected bytes or a size like \"512m\" or \"2g\", found {text:?}"
            ));
        }
    };
    digits
        .parse::<i64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .filter(|n| *n >= 4 << 20)
        .ok_or_else(|| {
            format!("expected a size of at least 4m, like \"512m\" or \"2g\", found {text:?}")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_sizes_parse_in_powers_of_1024_and_bad_ones_say_what_is_expected() {
        assert_eq!(parse_memory("512m"), Ok(512 << 20));
        assert_eq!(parse_memory("2G"), Ok(2 << 30));
        assert_eq!(parse_memory("8388608"), Ok(8 << 20));
        assert!(parse_memory("lots").unwrap_err().contains("\"512m\""));
        assert!(parse_memory("1k").unwrap_err().contains("at least 4m"));
        assert!(parse_memory("99999999999g").is_err());
    }
}
