//! Running the `git` CLI for squad's own bookkeeping, the one place that builds git
//! commands: the user's repository configuration (filters, attributes, excludes) applies,
//! but nothing that runs a program of its own (hooks, fsmonitor, external diff, pager,
//! credential helper, ssh), never a stray `GIT_DIR` from a parent process, and squad's
//! snapshot commits carry squad's name, so they work on a machine with no git identity
//! configured. In a worker's worktree git is told its folders ([`Git::worktree`]) instead
//! of finding them through files the worker may write, and runs only while those files
//! are as squad made them (see `seal.rs`).

use super::IsolationError;
use super::seal::Seal;
use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Variables that would point git at another repository, index or work tree than the
/// one squad names.
const REDIRECTING_VARS: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
];

/// Parallel checkout (git's own `checkout.workers`): writing 10,000 files waits on the
/// file system far more than on the CPU (creating a file took ~1 ms on a busy ext4 disk),
/// so many writers at once finish several times sooner, also on two cores (32 beat 16
/// and 64 on 10,000 files here: 0.48 s against 2.1 and 0.6 s, medians of 7 by hand under
/// load). Below 2,000 files the helper processes cost more than they save.
pub(crate) const PARALLEL_CHECKOUT: [&str; 4] = [
    "-c",
    "checkout.workers=32",
    "-c",
    "checkout.thresholdForParallelism=2000",
];

/// Variables that would have git run a program.
const PROGRAM_VARS: &[&str] = &[
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
    "PAGER",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_PROXY_COMMAND",
];

/// Settings that turn off everything in git's configuration that runs a program for a
/// command squad uses, whoever set it. Hooks go to `/dev/null`: a path below which no
/// file can ever exist, unlike a folder someone could fill. Filters and merge drivers stay:
/// they are the user's own (squad reads no configuration a worker wrote, see `seal.rs`)
/// and make squad's files the same as the user's git would.
const SAFE: &[&str] = &[
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.pager=cat",
    "core.sshCommand=false",
    "core.askPass=",
    "credential.helper=",
    "diff.external=",
    "gc.auto=0",
    "maintenance.auto=false",
];

/// One git invocation in `dir`, optionally with its own index file.
#[derive(Clone, Copy)]
pub(crate) struct Git<'a> {
    dir: &'a Path,
    index: Option<&'a Path>,
    /// A worker's worktree: its folders named, its metadata checked before each run.
    seal: Option<&'a Seal>,
    /// squad's own shadow repository (checkpoints), `dir` its work tree.
    shadow: Option<&'a Path>,
}

/// What a git run returned: its exit code and standard output.
pub(crate) struct Ran {
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl<'a> Git<'a> {
    /// git in the user's own repository (the workspace, or squad's bookkeeping there),
    /// found from `dir` as the user's git finds it: only the user writes it.
    pub fn new(dir: &'a Path) -> Self {
        Self {
            dir,
            index: None,
            seal: None,
            shadow: None,
        }
    }

    /// git on squad's own repository `git_dir` with `work_tree` as its files (`GIT_DIR`,
    /// `GIT_WORK_TREE`): the work tree's `.gitignore` files apply, but the user's `.git`
    /// (its index, refs, stash, configuration) is never read or written.
    pub fn shadow(git_dir: &'a Path, work_tree: &'a Path) -> Self {
        Self {
            dir: work_tree,
            index: None,
            seal: None,
            shadow: Some(git_dir),
        }
    }

    /// git in a worker's worktree: its git folder, the shared one and its work tree named
    /// (`GIT_DIR`, `GIT_COMMON_DIR`, `GIT_WORK_TREE`) from what squad recorded when it
    /// made it, never found through the worktree's own files; and no run at all while
    /// those files are not what squad wrote ([`Seal::check`]).
    pub fn worktree(seal: &'a Seal) -> Self {
        Self {
            dir: &seal.work_tree,
            index: None,
            seal: Some(seal),
            shadow: None,
        }
    }

    /// Runs against `index` instead of the repository's own, which stays untouched.
    pub fn with_index(mut self, index: &'a Path) -> Self {
        self.index = Some(index);
        self
    }

    /// Standard output of a run that must succeed.
    pub fn run<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<Vec<u8>, IsolationError> {
        self.run_with_input(args, None)
    }

    /// Standard output, trimmed, as text (object ids, paths from rev-parse).
    pub fn text<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<String, IsolationError> {
        let out = self.run(args)?;
        Ok(String::from_utf8_lossy(&out).trim().to_string())
    }

    /// Like [`Git::run`], feeding `input` on standard input.
    pub fn run_with_input<S: AsRef<OsStr>>(
        &self,
        args: &[S],
        input: Option<&[u8]>,
    ) -> Result<Vec<u8>, IsolationError> {
        let ran = self.output(args, input)?;
        if ran.code != 0 {
            return Err(self.failed(args, &ran));
        }
        Ok(ran.stdout)
    }

    /// Runs and returns whatever the exit code, for commands whose code carries meaning
    /// (`merge-tree` exits 1 on conflicts, `rev-parse --verify` 1 when a name is unknown).
    /// A run that met another git half way (one of git's lock files taken, or a sibling
    /// worktree being made whose files are not all written yet: the user's git, or a
    /// sibling worker's worktree being made beside this one) is tried again a few times,
    /// since git itself gives up at once.
    pub fn output<S: AsRef<OsStr>>(
        &self,
        args: &[S],
        input: Option<&[u8]>,
    ) -> Result<Ran, IsolationError> {
        let mut wait = LOCK_RETRY_FIRST;
        for _ in 0..LOCK_RETRIES {
            let ran = self.once(args, input)?;
            if ran.code == 0 || !met_another_git(&ran.stderr) {
                return Ok(ran);
            }
            std::thread::sleep(wait);
            wait *= 2;
        }
        self.once(args, input)
    }

    fn once<S: AsRef<OsStr>>(
        &self,
        args: &[S],
        input: Option<&[u8]>,
    ) -> Result<Ran, IsolationError> {
        if let Some(seal) = self.seal {
            seal.check()?;
        }
        let mut cmd = Command::new("git");
        cmd.arg("--no-pager")
            .args(SAFE.iter().flat_map(|s| ["-c", s]))
            .args(args)
            .current_dir(self.dir)
            .env("GIT_AUTHOR_NAME", "squad")
            .env("GIT_AUTHOR_EMAIL", "squad@localhost")
            .env("GIT_COMMITTER_NAME", "squad")
            .env("GIT_COMMITTER_EMAIL", "squad@localhost")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("LC_ALL", "C")
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for var in REDIRECTING_VARS.iter().chain(PROGRAM_VARS) {
            cmd.env_remove(var);
        }
        if let Some(seal) = self.seal {
            cmd.env("GIT_DIR", &seal.git_dir)
                .env("GIT_COMMON_DIR", &seal.common_dir)
                .env("GIT_WORK_TREE", &seal.work_tree);
        }
        if let Some(git_dir) = self.shadow {
            cmd.env("GIT_DIR", git_dir).env("GIT_WORK_TREE", self.dir);
        }
        if let Some(index) = self.index {
            cmd.env("GIT_INDEX_FILE", index);
        }
        let mut child = cmd.spawn().map_err(IsolationError::GitMissing)?;
        // Fed from a thread of its own: git may fill its output pipes before it has read
        // all of a long input (a fill's 10,000 paths), and then neither side would move.
        let feeder = match (input, child.stdin.take()) {
            (Some(bytes), Some(mut stdin)) => {
                let bytes = bytes.to_vec();
                let feed = std::thread::Builder::new()
                    .name("git-stdin".into())
                    .spawn(move || {
                        // A git that exits early closes the pipe; its exit code tells why.
                        let _ = stdin.write_all(&bytes);
                    });
                match feed {
                    Ok(handle) => Some(handle),
                    Err(e) => {
                        let _ = child.kill();
                        let _ = child.wait();
                        return Err(IsolationError::GitMissing(e));
                    }
                }
            }
            _ => None,
        };
        let out = child
            .wait_with_output()
            .map_err(IsolationError::GitMissing)?;
        if let Some(feeder) = feeder {
            let _ = feeder.join();
        }
        Ok(Ran {
            code: out.status.code().unwrap_or(-1),
            stdout: out.stdout,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }

    /// The error for a run that did not do what it should.
    pub fn failed<S: AsRef<OsStr>>(&self, args: &[S], ran: &Ran) -> IsolationError {
        IsolationError::Git {
            command: args
                .iter()
                .map(|a| a.as_ref().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" "),
            dir: self.dir.to_path_buf(),
            code: ran.code,
            stderr: ran.stderr.clone(),
        }
    }
}

/// Tries after meeting another git, waiting 10, 20, 40 … ms (1.3 s in all).
const LOCK_RETRIES: u32 = 7;
const LOCK_RETRY_FIRST: std::time::Duration = std::time::Duration::from_millis(10);

/// Whether git failed because another git was half way: one of its `*.lock` files exists
/// (`Unable to create '…/index.lock': File exists`, `cannot lock ref …`), or a worktree
/// being made beside it has no `commondir` or `gitdir` yet (`git worktree add` reads every
/// sibling's: `failed to read .git/worktrees/<name>/commondir`).
fn met_another_git(stderr: &str) -> bool {
    (stderr.contains(".lock") && stderr.contains("File exists"))
        || (stderr.contains("failed to read") && stderr.contains("/worktrees/"))
}

/// Splits `-z` output into its NUL-terminated fields.
pub(crate) fn fields(out: &[u8]) -> impl Iterator<Item = &[u8]> {
    let out = out.strip_suffix(b"\0").unwrap_or(out);
    out.split(|b| *b == 0).filter(move |_| !out.is_empty())
}

/// A path from git's `-z` output, relative to the top of the work tree.
pub(crate) fn path_of(field: &[u8]) -> String {
    String::from_utf8_lossy(field).into_owned()
}

/// `top/rel` for a path git printed (always with `/`).
pub(crate) fn join(top: &Path, rel: &str) -> PathBuf {
    rel.split('/')
        .fold(top.to_path_buf(), |p, part| p.join(part))
}

/// The installed git's version as (major, minor), from `git version 2.47.3`.
pub(crate) fn parse_version(text: &str) -> Option<(u32, u32)> {
    let number = text
        .split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))?;
    let mut parts = number.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts
        .next()?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .ok()?;
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_from_the_usual_spellings() {
        assert_eq!(parse_version("git version 2.47.3"), Some((2, 47)));
        assert_eq!(
            parse_version("git version 2.39.3 (Apple Git-146)"),
            Some((2, 39))
        );
        assert_eq!(parse_version("git version 2.45.1.windows.1"), Some((2, 45)));
        assert_eq!(parse_version("git version 2.50.0-rc1"), Some((2, 50)));
        assert_eq!(parse_version("nonsense"), None);
    }

    #[test]
    fn meeting_another_git_is_told_apart_from_other_failures() {
        assert!(met_another_git(
            "fatal: Unable to create '/r/.git/index.lock': File exists.\n\nAnother git process seems to be running"
        ));
        assert!(met_another_git(
            "error: cannot lock ref 'refs/heads/squad/ab12': Unable to create '/r/.git/refs/heads/squad/ab12.lock': File exists."
        ));
        assert!(met_another_git(
            "fatal: failed to read .git/worktrees/e39e5b9b/commondir: Success"
        ));
        assert!(!met_another_git("fatal: invalid reference: nope"));
        assert!(!met_another_git("fatal: '/x' already exists"));
    }

    #[test]
    fn nul_fields_split_and_an_empty_output_has_none() {
        let got: Vec<&[u8]> = fields(b"a\0b c\0\0d\0").collect();
        assert_eq!(got, vec![&b"a"[..], b"b c", b"", b"d"]);
        assert_eq!(fields(b"").count(), 0);
        assert_eq!(fields(b"\0").count(), 0);
    }
}
