use super::*;

#[test]
fn a_role_narrows_the_level_and_never_widens_it() {
    let session = Level {
        mode: SandboxMode::WorkspaceWrite,
        network: false,
    };
    let wide = RoleSandbox {
        mode: Some(SandboxMode::Off),
        network: Some(true),
    };
    assert_eq!(session.narrowed(&wide), session);
    let narrow = RoleSandbox {
        mode: Some(SandboxMode::ReadOnly),
        network: None,
    };
    assert_eq!(session.narrowed(&narrow).mode, SandboxMode::ReadOnly);
    let open = Level {
        mode: SandboxMode::Off,
        network: true,
    };
    let offline = RoleSandbox {
        mode: None,
        network: Some(false),
    };
    assert!(!open.narrowed(&offline).network);
    assert_eq!(open.narrowed(&RoleSandbox::default()), open);
    assert_eq!(
        Level {
            mode: SandboxMode::ReadOnly,
            network: true
        }
        .label(),
        "read-only +net"
    );
}

#[test]
fn home_paths_expand_and_relative_ones_are_dropped() {
    let home = Path::new("/home/me");
    assert_eq!(
        expand_home("~/.ssh", Some(home)),
        Some(PathBuf::from("/home/me/.ssh"))
    );
    assert_eq!(
        expand_home("/etc/x", Some(home)),
        Some(PathBuf::from("/etc/x"))
    );
    assert_eq!(expand_home("rel/x", Some(home)), None);
}

#[cfg(target_os = "linux")]
#[test]
fn reads_are_granted_beside_the_way_to_a_denied_path_never_on_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for d in ["home/.ssh", "home/src", "other"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join("home/.bashrc"), "").unwrap();
    std::os::unix::fs::symlink(root.join("home/.ssh"), root.join("home/keys")).unwrap();
    let denied = root.join("home/.ssh");
    let (listing, readable) = linux::readable_paths(std::slice::from_ref(&denied));
    assert!(listing.contains(&PathBuf::from("/")));
    assert!(listing.contains(&root.join("home")));
    assert!(readable.contains(&root.join("home/src")));
    assert!(readable.contains(&root.join("home/.bashrc")));
    assert!(readable.contains(&root.join("other")));
    assert!(!readable.contains(&denied), "{readable:?}");
    assert!(
        !readable.contains(&root.join("home/keys")),
        "a symlink into it"
    );
    assert!(!readable.contains(&root.join("home")), "only listed");
    assert!(!readable.iter().any(|p| p == Path::new("/")));
}

#[test]
fn the_note_names_the_sandbox_only_for_refusals() {
    let c = Confined {
        level: Level {
            mode: SandboxMode::WorkspaceWrite,
            network: false,
        },
        root: PathBuf::from("/w"),
        writable: Vec::new(),
        deny_read: Vec::new(),
        net: NetCut::Namespace,
    };
    let note = blocked_note("sh: 1: cannot create /etc/x: Permission denied", &c).unwrap();
    assert!(note.contains("sandbox") && note.contains("/w") && note.contains("escalate"));
    assert!(note.contains("no network"));
    assert_eq!(blocked_note("error[E0308]: mismatched types", &c), None);
}
