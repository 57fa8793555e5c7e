//! What sandbox this machine can give: Landlock's ABI, and whether an unprivileged user
//! namespace (for a network namespace) can be made. Asked once per process.

use serde::Serialize;
use std::sync::OnceLock;

/// Set (to anything but `0`) to act as if Landlock were missing: how the tests, and a
/// user, see what squad does on a machine without a sandbox.
pub const UNAVAILABLE_ENV: &str = "SQUAD_SANDBOX_UNAVAILABLE";

/// How the network is cut for a command that may not use it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NetCut {
    /// A new user and network namespace: no interface but a loopback that is down.
    Namespace,
    /// Landlock's TCP rules (ABI 4+): no TCP connect or bind; UDP stays.
    LandlockTcp,
    /// Nothing here can cut it.
    None,
}

/// What the sandbox can be here.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Support {
    /// Landlock's ABI version, when the kernel has it enabled.
    pub landlock_abi: Option<i32>,
    pub user_namespaces: bool,
    pub net_cut: NetCut,
    /// Why commands cannot be sandboxed at all; `None` when they can.
    pub unavailable: Option<String>,
}

impl Support {
    pub fn available(&self) -> bool {
        self.unavailable.is_none()
    }

    /// `Landlock ABI 7, network namespace`, for one line.
    pub fn mechanism(&self) -> String {
        let abi = self
            .landlock_abi
            .map_or("no Landlock".to_string(), |v| format!("Landlock ABI {v}"));
        match self.net_cut {
            NetCut::Namespace => format!("{abi}, network namespace"),
            NetCut::LandlockTcp => format!("{abi}, Landlock TCP rules"),
            NetCut::None => abi,
        }
    }

    /// No sandbox, for `why`.
    pub fn none(why: &str) -> Self {
        Self {
            landlock_abi: None,
            user_namespaces: false,
            net_cut: NetCut::None,
            unavailable: Some(why.to_string()),
        }
    }
}

/// This machine's support, probed on first use (a system call and one short process).
pub fn support() -> Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    SUPPORT.get_or_init(probe).clone()
}

fn probe() -> Support {
    if std::env::var(UNAVAILABLE_ENV).is_ok_and(|v| !v.is_empty() && v != "0") {
        return Support::none(&format!(
            "Landlock is unavailable ({UNAVAILABLE_ENV} is set)"
        ));
    }
    probe_os()
}

#[cfg(target_os = "linux")]
fn probe_os() -> Support {
    let abi = super::linux::landlock_abi();
    let user_namespaces = super::linux::user_namespaces_work();
    let net_cut = match (user_namespaces, abi) {
        (true, _) => NetCut::Namespace,
        (false, Some(v)) if v >= 4 => NetCut::LandlockTcp,
        _ => NetCut::None,
    };
    let unavailable = match abi {
        None => Some(
            "this kernel has no Landlock (it needs Linux 5.13 or newer with Landlock \
             enabled at boot, e.g. lsm=landlock,…)"
                .to_string(),
        ),
        Some(_) => None,
    };
    Support {
        landlock_abi: abi,
        user_namespaces,
        net_cut,
        unavailable,
    }
}

#[cfg(not(target_os = "linux"))]
fn probe_os() -> Support {
    Support::none("squad's sandbox needs Linux (Landlock); this is not Linux")
}
