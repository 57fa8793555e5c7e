use super::*;
use crate::isolation::SessionDir;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A base commit as `carry` makes it, kept under its carried ref.
fn base(repo: &Path, subject: &str) -> String {
    let tree = git(repo, &["rev-parse", "HEAD^{tree}"]);
    let commit = git(repo, &["commit-tree", &tree, "-m", subject]);
    git(
        repo,
        &["update-ref", &format!("{CARRIED}{commit}"), &commit],
    );
    commit
}

fn refs(repo: &Path) -> Vec<String> {
    let out = git(
        repo,
        &["for-each-ref", "--format=%(refname)", "refs/squad/"],
    );
    out.lines().map(str::to_string).collect()
}

#[test]
fn refs_go_with_their_sessions_and_stay_for_a_running_one_or_a_worktree_left() {
    let repo = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let r = repo.path();
    git(r, &["init", "-q"]);
    std::fs::write(r.join("a.txt"), "a\n").unwrap();
    git(r, &["add", "-A"]);
    git(
        r,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "a",
        ],
    );
    let head = git(r, &["rev-parse", "HEAD"]);
    let subject = |s: &str, w: &str| format!("{BASE_SUBJECT} (session {s}, root /w/squad-{w})");
    // Session `live` runs (its lock is held); `dead` ran and left one worker's worktree;
    // `gone` left nothing.
    let _live = SessionDir::claim(data.path(), "live", r).unwrap();
    let dead = worktrees_dir(data.path()).join("dead");
    std::fs::create_dir_all(dead.join("aaaaaaaa")).unwrap();
    let live_base = base(r, &subject("live", "11111111"));
    let kept_base = base(r, &subject("dead", "aaaaaaaa"));
    let dead_base = base(r, &subject("dead", "bbbbbbbb"));
    let gone_base = base(r, &subject("gone", "cccccccc"));
    for (name, commit) in [
        ("live/11111111", &live_base),
        ("dead/aaaaaaaa", &head),
        ("dead/bbbbbbbb", &head),
        ("gone/cccccccc", &head),
        ("me/22222222", &head),
    ] {
        git(r, &["update-ref", &format!("{RETURNED}{name}"), commit]);
    }
    let mine = base(r, &subject("me", "22222222"));

    let gone = prune(r, data.path(), "me").unwrap();
    let mut left = refs(r);
    left.sort();
    let mut want = vec![
        format!("{CARRIED}{live_base}"),
        format!("{CARRIED}{kept_base}"),
        format!("{CARRIED}{mine}"),
        format!("{RETURNED}dead/aaaaaaaa"),
        format!("{RETURNED}live/11111111"),
        format!("{RETURNED}me/22222222"),
    ];
    want.sort();
    assert_eq!(left, want, "pruned: {gone:?}");
    assert_eq!(gone.len(), 4, "{gone:?}");
    assert!(gone.contains(&format!("{CARRIED}{dead_base}")), "{gone:?}");
    assert!(gone.contains(&format!("{CARRIED}{gone_base}")), "{gone:?}");
    // The objects stay: a ref pruned never takes a commit a resume could still read.
    git(r, &["cat-file", "-e", &format!("{dead_base}^{{commit}}")]);
}

#[test]
fn an_older_squads_refs_stay_while_another_session_runs_and_go_after() {
    let repo = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let r = repo.path();
    git(r, &["init", "-q"]);
    std::fs::write(r.join("a.txt"), "a\n").unwrap();
    git(r, &["add", "-A"]);
    git(
        r,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "a",
        ],
    );
    let old = base(r, BASE_SUBJECT);
    git(r, &["update-ref", &format!("{RETURNED}dddddddd"), &old]);
    {
        let _other = SessionDir::claim(data.path(), "other", r).unwrap();
        assert!(prune(r, data.path(), "me").unwrap().is_empty());
    }
    let gone = prune(r, data.path(), "me").unwrap();
    assert_eq!(gone.len(), 2, "{gone:?}");
    assert!(refs(r).is_empty());
}

#[test]
fn a_ref_names_its_owner_by_its_name_or_its_commits_subject() {
    let o = owner_of("refs/squad/returned/s1/abcd1234", "");
    assert_eq!(o.session.as_deref(), Some("s1"));
    assert_eq!(o.worker.as_deref(), Some("abcd1234"));
    let o = owner_of("refs/squad/returned/abcd1234", "");
    assert_eq!((o.session, o.worker.as_deref()), (None, Some("abcd1234")));
    let o = owner_of(
        "refs/squad/carried/ff",
        "squad: a placed worker's base (session s2, root /srv/w/squad-0123abcd)",
    );
    assert_eq!(o.session.as_deref(), Some("s2"));
    assert_eq!(o.worker.as_deref(), Some("0123abcd"));
    let o = owner_of("refs/squad/carried/ff", "squad: a placed worker's base");
    assert_eq!((o.session, o.worker), (None, None));
}
