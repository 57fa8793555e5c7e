//! What a new store borrows where the workspace is not simply a repository's top, or
//! where the user's git converts files (issue 49 part 3's last gap): a monorepo's package,
//! line-ending conversion and filters (LFS's kind). The store's first index must hold the
//! user's entries with their stat data (so git hashes none of them again), except those
//! whose blob is not the file's bytes, and a rewind must give back exactly the bytes.

use super::cost_tests::{git, own_blobs};
use super::*;
use std::path::Path;

/// `git ls-files` in the store (its own index), as git lists it.
fn store_lists(store: &CheckpointStore, args: &[&str]) -> String {
    let mut all = vec!["ls-files"];
    all.extend(args);
    String::from_utf8(store.git().run(&all).unwrap()).unwrap()
}

fn write(top: &Path, rel: &str, bytes: &[u8]) {
    let path = top.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// A monorepo: `packages/app` (the workspace) of `n` files, a sibling package, files at
/// the top, and ignore rules above the workspace that must still apply in it.
fn monorepo(top: &Path, n: usize) -> std::path::PathBuf {
    for i in 0..n {
        let rel = format!("packages/app/src/d{}/f{i}.ts", i / 100);
        write(
            top,
            &rel,
            format!("export const v{i} = {i};\n").repeat(20).as_bytes(),
        );
    }
    for i in 0..100 {
        write(top, &format!("packages/lib/f{i}.ts"), b"lib\n");
    }
    write(top, "README.md", b"top\n");
    write(top, ".gitignore", b"node_modules/\n/packages/app/dist/\n");
    git(top, &["init", "-q"]);
    git(top, &["add", "-A"]);
    git(top, &["commit", "-qm", "user"]);
    write(
        top,
        "packages/app/node_modules/dep/index.js",
        b"dependency\n",
    );
    write(top, "packages/app/dist/app.js", b"built\n");
    top.join("packages/app")
}

#[test]
fn a_workspace_in_a_subfolder_borrows_its_entries_with_their_stat_data() {
    let repo = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let app = monorepo(repo.path(), 2_000);
    let store = CheckpointStore::open(data.path(), &app).unwrap();
    let _ = store.borrow();
    // The store's first index: the 2,000 entries under the workspace, named from it, with
    // the very stat data the user's git recorded (`--debug`), so none is hashed again.
    let listed = store_lists(&store, &["-s"]);
    assert_eq!(
        listed.lines().count(),
        2_000,
        "{}",
        &listed[..listed.len().min(500)]
    );
    let theirs = git(&app, &["ls-files", "-s"]);
    assert_eq!(listed, theirs);
    assert_eq!(
        store_lists(&store, &["--debug"]),
        git(&app, &["ls-files", "--debug"])
    );

    let id = store.checkpoint("first").unwrap();
    assert!(own_blobs(&store).is_empty(), "{:?}", own_blobs(&store));
    // The rules above the workspace apply: the dependency and the build output are not
    // the store's, so a rewind leaves them alone.
    let tree = String::from_utf8(
        store
            .git()
            .run(&["ls-tree", "-r", "--name-only", &id.0])
            .unwrap(),
    )
    .unwrap();
    assert_eq!(tree.lines().count(), 2_000, "only the tracked files");
    std::fs::write(app.join("src/d3/f300.ts"), "squad\n").unwrap();
    std::fs::write(app.join("node_modules/dep/index.js"), "updated\n").unwrap();
    let changed = store.changes_since(&id).unwrap();
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert_eq!(changed[0].path, "src/d3/f300.ts");
    store.restore(&id, true).unwrap();
    assert_eq!(
        std::fs::read_to_string(app.join("src/d3/f300.ts")).unwrap(),
        "export const v300 = 300;\n".repeat(20)
    );
    assert_eq!(
        std::fs::read_to_string(app.join("node_modules/dep/index.js")).unwrap(),
        "updated\n"
    );
}

/// A repository whose git converts: `text=auto` (a CRLF file committed as LF), and a
/// filter (a reversing one: it keeps lengths, the hardest case; git-lfs's works alike).
fn converting(top: &Path, n: usize) {
    for i in 0..n {
        write(
            top,
            &format!("src/f{i}.txt"),
            format!("line {i}\n").repeat(50).as_bytes(),
        );
    }
    write(top, ".gitattributes", b"* text=auto\n*.bin filter=rev\n");
    write(top, "windows.txt", b"one\r\ntwo\r\n");
    write(top, "asset.bin", b"abcdef\n");
    git(top, &["init", "-q"]);
    git(top, &["config", "core.autocrlf", "input"]);
    git(top, &["config", "filter.rev.clean", "rev"]);
    git(top, &["config", "filter.rev.smudge", "rev"]);
    git(top, &["add", "-A"]);
    git(top, &["commit", "-qm", "user"]);
}

#[test]
fn with_conversions_unchanged_files_are_borrowed_and_converted_ones_restored_exactly() {
    let repo = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let top = repo.path();
    converting(top, 2_000);
    // The user's git stored other blobs than the bytes of these two.
    let blob = |rel: &str| git(top, &["cat-file", "-p", &format!(":{rel}")]);
    assert_eq!(blob("windows.txt"), "one\ntwo\n");
    assert_eq!(blob("asset.bin"), "fedcba\n");

    let store = CheckpointStore::open(data.path(), top).unwrap();
    let _ = store.borrow();
    let listed = store_lists(&store, &[]);
    let names: Vec<&str> = listed.lines().collect();
    assert_eq!(names.len(), 2_001, "every file but the two converted ones");
    assert!(!names.contains(&"windows.txt") && !names.contains(&"asset.bin"));

    let id = store.checkpoint("first").unwrap();
    // Stored: only the two files' own bytes.
    let own = own_blobs(&store);
    assert_eq!(own.len(), 2, "{own:?}");
    std::fs::write(top.join("windows.txt"), "squad\n").unwrap();
    std::fs::write(top.join("asset.bin"), "squad\n").unwrap();
    std::fs::write(top.join("src/f7.txt"), "squad\n").unwrap();
    store.restore(&id, true).unwrap();
    assert_eq!(
        std::fs::read(top.join("windows.txt")).unwrap(),
        b"one\r\ntwo\r\n"
    );
    assert_eq!(std::fs::read(top.join("asset.bin")).unwrap(), b"abcdef\n");
    assert_eq!(
        std::fs::read_to_string(top.join("src/f7.txt")).unwrap(),
        "line 7\n".repeat(50)
    );
}

/// With `core.autocrlf=true` git writes CRLF files from LF blobs: none of them is the
/// blob's bytes, each is hashed once, and each comes back with its CRLF.
#[test]
fn files_checked_out_with_crlf_are_kept_as_they_are() {
    let repo = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let top = repo.path();
    write(top, "a.txt", b"one\ntwo\n");
    write(top, "b.txt", b"no newline");
    git(top, &["init", "-q"]);
    git(top, &["config", "core.autocrlf", "true"]);
    git(top, &["add", "-A"]);
    git(top, &["commit", "-qm", "user"]);
    std::fs::remove_file(top.join("a.txt")).unwrap();
    git(top, &["checkout", "--", "a.txt"]);
    assert_eq!(std::fs::read(top.join("a.txt")).unwrap(), b"one\r\ntwo\r\n");

    let store = CheckpointStore::open(data.path(), top).unwrap();
    let _ = store.borrow();
    assert_eq!(
        store_lists(&store, &[]),
        "b.txt\n",
        "a.txt's blob is not its bytes"
    );
    let id = store.checkpoint("first").unwrap();
    std::fs::write(top.join("a.txt"), "squad\n").unwrap();
    store.restore(&id, true).unwrap();
    assert_eq!(std::fs::read(top.join("a.txt")).unwrap(), b"one\r\ntwo\r\n");
}
