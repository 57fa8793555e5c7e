//! The names the model sees: `SERVER__TOOL`, legal as OpenAI tool names (letters, digits,
//! `_`, `-`, at most 64), unique across servers, and the same from one start to the next.

/// OpenAI's limit on a tool name.
pub const MAX_TOOL_NAME: usize = 64;

/// Between the server's name and the tool's.
pub const SEPARATOR: &str = "__";

/// `server__tool`, with any character OpenAI rejects replaced by `_`.
fn qualified(server: &str, tool: &str) -> String {
    let tool: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{server}{SEPARATOR}{tool}")
}

/// Names for `(server, tool)` pairs, in order. A name that is too long, or already taken
/// (two tools that differ only in characters that were replaced), is cut and ends in a
/// hash of the original pair, so it stays unique and stable.
pub fn assign<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<String> {
    let mut taken = std::collections::HashSet::new();
    let mut out = Vec::new();
    for (server, tool) in pairs {
        let full = qualified(server, tool);
        let mut name = full.clone();
        if name.len() > MAX_TOOL_NAME || taken.contains(&name) {
            let mut salt = 0u32;
            loop {
                let suffix = format!("_{:08x}", fnv1a(server, tool, salt));
                let keep = (MAX_TOOL_NAME - suffix.len()).min(full.len());
                // Only ASCII is left after `qualified`, so any cut is a char boundary.
                let candidate = format!("{}{suffix}", &full[..keep]);
                if !taken.contains(&candidate) {
                    name = candidate;
                    break;
                }
                salt += 1;
            }
        }
        taken.insert(name.clone());
        out.push(name);
    }
    out
}

/// The server a tool name belongs to, among `servers`.
pub fn server_of<'a>(name: &str, servers: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    servers.into_iter().find(|s| {
        name.strip_prefix(*s)
            .is_some_and(|rest| rest.starts_with(SEPARATOR))
    })
}

/// 32 bits of FNV-1a over the pair: stable across runs and builds, unlike std's hasher.
fn fnv1a(server: &str, tool: &str, salt: u32) -> u32 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let bytes = server
        .bytes()
        .chain([0])
        .chain(tool.bytes())
        .chain(salt.to_le_bytes());
    for b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    (hash ^ (hash >> 32)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_namespaced_and_legal() {
        let names = assign([("everything", "get-sum"), ("git", "git.status v2")]);
        assert_eq!(names, ["everything__get-sum", "git__git_status_v2"]);
    }

    #[test]
    fn long_and_clashing_names_are_cut_unique_and_stable() {
        let long = "a".repeat(80);
        let pairs = [
            ("srv", long.as_str()),
            ("srv", "x.y"),
            ("srv", "x y"),
            ("srv", long.as_str()),
        ];
        let names = assign(pairs);
        assert!(names.iter().all(|n| n.len() <= MAX_TOOL_NAME), "{names:?}");
        assert!(names[0].starts_with("srv__aaa"));
        assert_eq!(names[1], "srv__x_y");
        assert!(names[2].starts_with("srv__x_y_") && names[2].len() == 17);
        let unique: std::collections::HashSet<_> = names.iter().collect();
        assert_eq!(unique.len(), 4);
        assert_eq!(assign(pairs), names, "the same tools get the same names");
    }

    #[test]
    fn a_name_finds_its_server() {
        let servers = ["git", "github"];
        assert_eq!(server_of("github__search", servers), Some("github"));
        assert_eq!(server_of("git__git_status", servers), Some("git"));
        assert_eq!(server_of("gitx__a", servers), None);
        assert_eq!(server_of("read_file", servers), None);
    }
}
