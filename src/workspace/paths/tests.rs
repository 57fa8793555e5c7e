use super::*;
use std::os::unix::fs::symlink;

fn setup() -> (tempfile::TempDir, tempfile::TempDir, Workspace) {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("src/inner")).unwrap();
    std::fs::write(root.path().join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret\n").unwrap();
    let ws = Workspace::new(root.path()).unwrap();
    (root, outside, ws)
}

#[test]
fn root_and_plain_paths_resolve_inside() {
    let (_root, _out, ws) = setup();
    assert_eq!(ws.resolve("").unwrap(), ws.root());
    assert_eq!(ws.resolve(".").unwrap(), ws.root());
    assert_eq!(ws.resolve("./").unwrap(), ws.root());
    assert_eq!(
        ws.resolve("src/main.rs").unwrap(),
        ws.root().join("src/main.rs")
    );
    assert_eq!(
        ws.resolve("src/inner/../main.rs").unwrap(),
        ws.root().join("src/main.rs")
    );
    assert_eq!(ws.resolve("src/..").unwrap(), ws.root());
}

#[test]
fn missing_files_resolve_under_their_existing_ancestor() {
    let (_root, _out, ws) = setup();
    assert_eq!(
        ws.resolve("src/new/dir/file.rs").unwrap(),
        ws.root().join("src/new/dir/file.rs")
    );
    assert_eq!(
        ws.resolve("new/../other.txt").unwrap(),
        ws.root().join("other.txt")
    );
}

#[test]
fn escaping_dotdot_is_refused() {
    let (_root, _out, ws) = setup();
    let err = ws.resolve("../../etc/passwd").unwrap_err();
    assert!(matches!(err, PathError::Escapes { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("../../etc/passwd"), "{msg}");
    assert!(msg.contains("relative to the workspace root"), "{msg}");
    assert!(ws.resolve("src/../../x").is_err());
    assert!(ws.resolve("..").is_err());
}

#[test]
fn absolute_paths_are_refused_with_a_hint_when_inside() {
    let (_root, _out, ws) = setup();
    let err = ws.resolve("/etc/passwd").unwrap_err();
    assert!(matches!(err, PathError::Absolute { .. }), "{err}");
    assert!(err.to_string().contains("relative to the workspace root"));
    let inside = ws.root().join("src/main.rs");
    let err = ws.resolve(inside.to_str().unwrap()).unwrap_err();
    assert!(
        err.to_string().contains("use 'src/main.rs' instead"),
        "{err}"
    );
}

#[test]
fn symlinks_out_are_refused_anywhere_in_the_path() {
    let (root, out, ws) = setup();
    symlink(out.path(), root.path().join("outdir")).unwrap();
    symlink(
        out.path().join("secret.txt"),
        root.path().join("src/secret"),
    )
    .unwrap();
    for p in [
        "outdir",
        "outdir/secret.txt",
        "outdir/new.txt",
        "src/secret",
    ] {
        let err = ws.resolve(p).unwrap_err();
        assert!(matches!(err, PathError::Escapes { .. }), "{p}: {err}");
        assert!(err.to_string().contains("symlink"), "{err}");
    }
}

#[test]
fn dangling_symlinks_are_refused() {
    let (root, out, ws) = setup();
    symlink(out.path().join("nope.txt"), root.path().join("dangling")).unwrap();
    let err = ws.resolve("dangling").unwrap_err();
    assert!(err.to_string().contains("target does not exist"), "{err}");
    assert!(!out.path().join("nope.txt").exists());
}

#[test]
fn symlinks_inside_are_followed() {
    let (root, _out, ws) = setup();
    symlink(root.path().join("src"), root.path().join("code")).unwrap();
    assert_eq!(
        ws.resolve("code/main.rs").unwrap(),
        ws.root().join("src/main.rs")
    );
    assert_eq!(
        ws.resolve("code/new.rs").unwrap(),
        ws.root().join("src/new.rs")
    );
}

#[test]
fn relative_display() {
    let (_root, _out, ws) = setup();
    assert_eq!(ws.relative(ws.root()), ".");
    assert_eq!(ws.relative(&ws.root().join("src/main.rs")), "src/main.rs");
    assert_eq!(ws.relative(Path::new("/etc/passwd")), "/etc/passwd");
}
