//! Which shell commands only read: `ls`, `cat x`, `git status`, `git diff`, `grep -r`,
//! `rg`, `find` without `-exec`/`-delete`…, alone or joined by `&&`, `||`, `;` and `|`, with
//! no redirection but to `/dev/null` or another descriptor. Such a `run_command` changes no
//! file, so a worker that runs it needs no worktree. The rule is the one Codex uses to
//! approve commands unasked (`is_known_safe_command`), written for a `bash -c` string:
//! anything it does not know (a program, an option, `$`, a subshell, a redirection into a
//! file) may change files.

/// Whether `script` (as `bash -c` runs it) is known to change no file.
pub fn is_read_only(script: &str) -> bool {
    let Some(commands) = plain_commands(script) else {
        return false;
    };
    !commands.is_empty() && commands.iter().all(|words| command_reads(words))
}

/// The script's simple commands as words, when it is only plain words (bare, quoted, or
/// escaped, with no expansion but globs) joined by `&&`, `||`, `;`, `|` and newlines, and
/// redirected only to `/dev/null` or a descriptor. `None`: anything else.
fn plain_commands(script: &str) -> Option<Vec<Vec<String>>> {
    let mut commands: Vec<Vec<String>> = vec![Vec::new()];
    let mut word: Option<String> = None;
    let mut chars = script.chars().peekable();
    fn end_word(word: &mut Option<String>, commands: &mut [Vec<String>]) {
        if let (Some(w), Some(last)) = (word.take(), commands.last_mut()) {
            last.push(w);
        }
    }
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => end_word(&mut word, &mut commands),
            '\n' | ';' => {
                end_word(&mut word, &mut commands);
                commands.push(Vec::new());
            }
            '|' | '&' => {
                end_word(&mut word, &mut commands);
                match (c, chars.peek()) {
                    ('|', Some('|')) | ('&', Some('&')) | ('|', Some('&')) => {
                        chars.next();
                    }
                    ('|', _) => {}
                    ('&', Some('>')) => {
                        chars.next();
                        redirect_to_nothing(&mut chars)?;
                        continue;
                    }
                    // `&` alone: the command runs on in the background.
                    _ => return None,
                }
                commands.push(Vec::new());
            }
            '>' => {
                // `2>`: the digits before it name the descriptor, they are no word.
                if word
                    .as_deref()
                    .is_some_and(|w| w.chars().all(|d| d.is_ascii_digit()))
                {
                    word = None;
                }
                end_word(&mut word, &mut commands);
                redirect_to_nothing(&mut chars)?;
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(escaped) => word.get_or_insert_with(String::new).push(escaped),
                None => return None,
            },
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        ch => w.push(ch),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '$' | '`' => return None,
                        '\\' => match chars.next()? {
                            ch @ ('"' | '\\') => w.push(ch),
                            ch => {
                                w.push('\\');
                                w.push(ch);
                            }
                        },
                        ch => w.push(ch),
                    }
                }
            }
            // Expansions, subshells, input redirections, groups, comments and history.
            '$' | '`' | '(' | ')' | '<' | '{' | '}' | '#' | '!' => return None,
            ch => word.get_or_insert_with(String::new).push(ch),
        }
    }
    end_word(&mut word, &mut commands);
    Some(commands.into_iter().filter(|c| !c.is_empty()).collect())
}

/// After a `>`: `>`, `&N` or `/dev/null` follow (the output goes nowhere or to another
/// descriptor); `None` for a file.
fn redirect_to_nothing(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<()> {
    if chars.peek() == Some(&'>') {
        chars.next();
    }
    if chars.peek() == Some(&'&') {
        chars.next();
        let mut digits = 0;
        while chars.peek().is_some_and(char::is_ascii_digit) {
            chars.next();
            digits += 1;
        }
        return (digits > 0 && ends_word(chars.peek())).then_some(());
    }
    while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
        chars.next();
    }
    for expected in "/dev/null".chars() {
        if chars.next()? != expected {
            return None;
        }
    }
    ends_word(chars.peek()).then_some(())
}

fn ends_word(next: Option<&char>) -> bool {
    next.is_none_or(|c| matches!(c, ' ' | '\t' | '\n' | ';' | '|' | '&'))
}

/// Whether one simple command only reads. Leading `NAME=value` assignments are skipped.
fn command_reads(words: &[String]) -> bool {
    let words: Vec<&str> = words
        .iter()
        .map(String::as_str)
        .skip_while(|w| is_assignment(w))
        .collect();
    let Some((&program, args)) = words.split_first() else {
        return true;
    };
    let has = |flags: &[&str]| args.iter().any(|a| flags.contains(a));
    let has_prefix = |prefixes: &[&str]| {
        args.iter()
            .any(|a| prefixes.iter().any(|p| a.starts_with(p)))
    };
    match program {
        "cat" | "cd" | "cut" | "echo" | "expr" | "false" | "grep" | "egrep" | "fgrep" | "head"
        | "id" | "ls" | "nl" | "paste" | "pwd" | "rev" | "seq" | "stat" | "tail" | "tr"
        | "true" | "uname" | "wc" | "which" | "whoami" | "tac" | "numfmt" | "basename"
        | "dirname" | "realpath" | "readlink" | "du" | "df" | "diff" | "cmp" | "comm"
        | "printf" | "md5sum" | "sha1sum" | "sha256sum" | "test" => true,
        // `uniq IN OUT` writes OUT.
        "uniq" => args.iter().filter(|a| !a.starts_with('-')).count() <= 1,
        "sort" => {
            !has(&["-o", "--output", "--compress-program"])
                && !has_prefix(&["--output=", "--compress-program="])
                && !args
                    .iter()
                    .any(|a| a.starts_with("-o") || short_flags_with(a, 'o'))
        }
        "find" => !has(&[
            "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fls", "-fprint", "-fprint0",
            "-fprintf",
        ]),
        "rg" => {
            !has(&["--pre", "--hostname-bin", "--search-zip", "-z"])
                && !has_prefix(&["--pre=", "--hostname-bin="])
                && !args.iter().any(|a| short_flags_with(a, 'z'))
        }
        // `sed -n 5p` / `sed -n 1,40p [file]`: printing lines, nothing else.
        "sed" => {
            args.len() <= 3
                && args.first() == Some(&"-n")
                && args.get(1).is_some_and(|a| line_range(a))
        }
        "git" => git_reads(args),
        _ => false,
    }
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// A bundle of short flags (`-nz`) that holds `flag`.
fn short_flags_with(arg: &str, flag: char) -> bool {
    arg.strip_prefix('-')
        .is_some_and(|rest| !rest.starts_with('-') && rest.contains(flag))
}

/// `N p` or `M,N p`.
fn line_range(arg: &str) -> bool {
    let Some(range) = arg.strip_suffix('p') else {
        return false;
    };
    let number = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    match range.split_once(',') {
        Some((from, to)) => number(from) && number(to),
        None => number(range),
    }
}

/// `git status`, `log`, `diff`, `show`, `ls-files`, `rev-parse` and a listing `branch`,
/// without options that write a file, run a program or set configuration.
fn git_reads(args: &[&str]) -> bool {
    let mut rest = args;
    // Global options before the subcommand.
    let sub = loop {
        match rest.split_first() {
            Some((&"-C", tail)) if !tail.is_empty() => rest = &tail[1..],
            Some((&("--no-pager" | "--no-optional-locks"), tail)) => rest = tail,
            Some((opt, tail))
                if opt.starts_with("--git-dir=") || opt.starts_with("--work-tree=") =>
            {
                rest = tail
            }
            Some((sub, tail)) if !sub.starts_with('-') => {
                rest = tail;
                break *sub;
            }
            _ => return false,
        }
    };
    let unsafe_flag = rest.iter().any(|a| {
        matches!(
            *a,
            "--output" | "--ext-diff" | "--textconv" | "--exec" | "--paginate" | "-c"
        ) || a.starts_with("--output=")
            || a.starts_with("--exec=")
            || a.starts_with("--config-env")
    });
    if unsafe_flag {
        return false;
    }
    match sub {
        "status" | "log" | "diff" | "show" | "ls-files" | "rev-parse" => true,
        "branch" => rest.iter().all(|a| {
            matches!(
                *a,
                "--list"
                    | "-l"
                    | "--show-current"
                    | "-a"
                    | "--all"
                    | "-r"
                    | "--remotes"
                    | "-v"
                    | "-vv"
                    | "--verbose"
            ) || a.starts_with("--format=")
        }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::is_read_only;

    #[test]
    fn reading_commands_change_nothing() {
        for cmd in [
            "ls",
            "ls -la src",
            "cat x",
            "cat 'a file.txt' \"b.txt\"",
            "git status",
            "git diff",
            "git -C sub --no-pager log --oneline -5",
            "git diff HEAD~1 -- src/a.rs",
            "git branch --show-current",
            "grep -rn 'fn main' src",
            "rg -n TODO",
            "find . -name '*.rs'",
            "find src -type f | head -20",
            "cd src && ls -la",
            "wc -l src/*.rs; pwd",
            "sed -n '1,40p' src/main.rs",
            "cat x 2>/dev/null || echo missing",
            "grep foo a.txt 2>&1 | sort | uniq -c",
            "LC_ALL=C sort names.txt",
            "ls >/dev/null",
            "  ls\n  pwd\n",
        ] {
            assert!(is_read_only(cmd), "{cmd}");
        }
    }

    #[test]
    fn anything_that_may_write_or_is_unknown_changes_files() {
        for cmd in [
            "",
            "rm -rf target",
            "touch a",
            "echo hi > a.txt",
            "echo hi >> a.txt",
            "cat a | tee b",
            "ls &> out.txt",
            "ls 2> err.txt",
            "find . -name '*.tmp' -delete",
            "find . -exec rm {} ;",
            "find . -fprint out",
            "rg --pre ./x foo",
            "rg -z foo",
            "sed -i s/a/b/ x",
            "sed -n 1,4w out x",
            "git checkout main",
            "git commit -am x",
            "git branch new-branch",
            "git branch -d old",
            "git -c core.pager=cat log",
            "git diff --output=patch.txt",
            "git log --ext-diff",
            "sort -o out in",
            "sort -uo out in",
            "uniq in out",
            "ls $(cat list)",
            "echo \"$HOME\"",
            "echo `id`",
            "cat <(ls)",
            "cat < in",
            "(cd x && rm y)",
            "{ ls; }",
            "ls & rm x",
            "./script.sh",
            "/bin/rm x",
            "python -m pytest",
            "cargo test",
            "make",
            "xargs rm",
            "awk '{print > \"f\"}' x",
            "ls; rm x",
            "echo 'unterminated",
            "FOO=1",
        ]
        .into_iter()
        .filter(|c| *c != "FOO=1")
        {
            assert!(!is_read_only(cmd), "{cmd}");
        }
        // An assignment alone writes nothing.
        assert!(is_read_only("FOO=1"));
    }
}
