//! What capable models do, replayed against the mock through the real `squad exec`: squad
//! must leave them alone. Each transcript is shaped like the public trajectories of capable
//! agents (SWE-bench and Terminal-Bench runs of Codex, Claude Code and OpenHands), not like
//! what squad's help for small models expects: OpenHands' SWE-bench instruction walks
//! reading, running the tests, exploring, a reproduction script, the fix, verification and
//! a final review that reads the changed code and runs the tests again; Claude Code reads and
//! greps its way through a codebase, dozens of calls, before it explains it; Codex runs the
//! tests after each step of a multi-step change. They run tests between steps, look around
//! after a green run, read 45 files before they answer, mention files in questions, show
//! files they were told not to write, and pass a design round a chain of personas.
//!
//! Every transcript asserts the same five things:
//! - every request offers the persona's tools (the same set as its first request);
//! - nothing squad-made is added to the conversation (no reminder, notice or nudge: only the
//!   user's words, the handoff records and the workers' results the model asked for);
//! - no file changes that no tool call made;
//! - the model's answer is printed on stdout;
//! - exit 0, with exactly as many model requests as the transcript has steps.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

/// The answer a request past the end of a script gets: squad asked for more than the model
/// gave (a reminder, a request without tools, a retry of an answer).
const OUT_OF_SCRIPT: &str = "OUT-OF-SCRIPT";

/// Phrases of squad's help for small models that a capable model must never read.
const NUDGES: &[&str] = &[
    "[squad]",
    "finish now",
    "next step is your final answer",
    "Answer the user now",
    "do not ask the user",
    "nothing is left to do",
    // A spawn argument squad overruled (`budget_ignored`, `wall_budget_ignored`, …).
    "_ignored",
];

/// User messages squad may add that are not help: the record of a handoff the model made,
/// and the results of workers it started.
const PROTOCOL: &[&str] = &["[squad] Handoff:", "[squad] Results of your"];

struct Transcript {
    prompt: &'static str,
    /// The workspace before the run: (path, content); committed to git.
    files: Vec<(String, String)>,
    config: &'static str,
    /// The persona's replies, one per request, in order.
    persona: Vec<MockResponse>,
    /// Each worker's replies, by a marker its task prompt holds.
    workers: Vec<(&'static str, Vec<MockResponse>)>,
    /// The final answer, printed on stdout.
    answer: &'static str,
    /// Files the transcript's tool calls change: (path, content after), `None` if deleted.
    changed: Vec<(&'static str, Option<&'static str>)>,
    /// The start of a note the transcript may meet because a check failed (it informs
    /// only); what follows it in a result is not read for nudges.
    informs: Option<&'static str>,
    /// (worker marker, request index, text): what a worker's request must hold.
    hears: Vec<(&'static str, usize, &'static str)>,
}

impl Transcript {
    fn new(prompt: &'static str, answer: &'static str) -> Self {
        Self {
            prompt,
            files: Vec::new(),
            config: "",
            persona: Vec::new(),
            workers: Vec::new(),
            answer,
            changed: Vec::new(),
            informs: None,
            hears: Vec::new(),
        }
    }

    /// The worker's request number `at` (from 0) holds `text`, and none before it does.
    fn hears(mut self, marker: &'static str, at: usize, text: &'static str) -> Self {
        self.hears.push((marker, at, text));
        self
    }

    fn file(mut self, path: &str, content: &str) -> Self {
        self.files.push((path.to_string(), content.to_string()));
        self
    }

    fn tests(mut self, command: &'static str) -> Self {
        self.config = command;
        self
    }

    fn step(mut self, r: MockResponse) -> Self {
        self.persona.push(r);
        self
    }

    fn worker(mut self, marker: &'static str, rs: Vec<MockResponse>) -> Self {
        self.workers.push((marker, rs));
        self
    }

    fn informs(mut self, note: &'static str) -> Self {
        self.informs = Some(note);
        self
    }

    fn changes(mut self, path: &'static str, after: &'static str) -> Self {
        self.changed.push((path, Some(after)));
        self
    }

    /// Runs it and asserts the five promises.
    async fn run(self) {
        let mock = MockServer::start().await;
        let sb = Sandbox::new();
        git(sb.ws(), &["init", "-q"]);
        for (path, content) in &self.files {
            sb.write(path, content);
        }
        sb.write(".gitignore", ".squad/\n");
        if !self.config.is_empty() {
            sb.workspace_config(&format!(
                "[tools]\ntest_command = {}\n",
                toml_string(self.config)
            ));
        }
        git(sb.ws(), &["add", "-A"]);
        git(sb.ws(), &["commit", "-qm", "start"]);
        let before = snapshot(sb.ws());

        let persona = Arc::new(self.persona);
        let workers = Arc::new(self.workers);
        let steps = persona.len();
        {
            let (persona, workers) = (persona.clone(), workers.clone());
            mock.set_responder(move |body| {
                let at = assistant_count(body);
                let script = if is_worker(body) {
                    let task = first_user(body);
                    match workers.iter().find(|(m, _)| task.contains(m)) {
                        Some((_, s)) => s,
                        None => return MockResponse::text(OUT_OF_SCRIPT),
                    }
                } else {
                    &*persona
                };
                script
                    .get(at)
                    .cloned()
                    .unwrap_or_else(|| MockResponse::text(OUT_OF_SCRIPT))
            });
        }
        let run = sb.exec(&mock, &["--approval", "auto", self.prompt]).await;
        assert_eq!(
            run.code, 0,
            "exit 0.\nstdout:\n{}\nstderr:\n{}",
            run.stdout, run.stderr
        );
        assert!(
            run.stdout.contains(self.answer),
            "the model's answer is printed.\nstdout:\n{}\nstderr:\n{}",
            run.stdout,
            run.stderr
        );

        let reqs = mock.requests();
        let bodies: Vec<&Value> = reqs.iter().map(|r| &r.body).collect();
        let persona_reqs: Vec<&Value> = bodies.iter().copied().filter(|b| !is_worker(b)).collect();
        assert_eq!(
            persona_reqs.len(),
            steps,
            "one request per step of the persona, no more (stderr:\n{})",
            run.stderr
        );
        let worker_steps: usize = workers.iter().map(|(_, s)| s.len()).sum();
        assert_eq!(
            bodies.len() - persona_reqs.len(),
            worker_steps,
            "one request per step of each worker"
        );
        for body in &bodies {
            for (role, text) in transcript(body) {
                assert!(
                    !text.contains(OUT_OF_SCRIPT),
                    "squad asked beyond the script: {text}"
                );
                let protocol = PROTOCOL.iter().any(|p| text.starts_with(p));
                if role == "system" || protocol {
                    continue;
                }
                let text = match self.informs {
                    Some(note) => text.split(note).next().unwrap_or_default().to_string(),
                    None => text,
                };
                for nudge in NUDGES {
                    assert!(
                        !text.contains(nudge),
                        "squad added {nudge:?} to the conversation ({role}):\n{text}"
                    );
                }
            }
        }
        for (marker, at, text) in &self.hears {
            let mine: Vec<&Value> = (bodies.iter().copied())
                .filter(|b| is_worker(b) && first_user(b).contains(marker))
                .collect();
            let holds = |b: &Value| transcript(b).iter().any(|(_, t)| t.contains(text));
            let first = mine.iter().position(|b| holds(b));
            assert_eq!(
                first,
                Some(*at),
                "{marker}'s request {at} is the first with {text:?}"
            );
        }
        // Every request of one persona offers the tools its first request did.
        let mut offered: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for body in &bodies {
            let tools = tool_names(body);
            assert!(!tools.is_empty(), "a request without tools");
            let first = offered.entry(system(body)).or_insert_with(|| tools.clone());
            assert_eq!(*first, tools, "the tools offered changed within a persona");
        }
        // No file changed that no tool call made.
        let after = snapshot(sb.ws());
        let mut expected = before.clone();
        for (path, content) in &self.changed {
            match content {
                Some(c) => expected.insert(path.to_string(), c.to_string()),
                None => expected.remove(*path),
            };
        }
        let diff: Vec<&String> = expected
            .keys()
            .chain(after.keys())
            .filter(|k| expected.get(*k) != after.get(*k))
            .collect();
        assert!(
            diff.is_empty(),
            "files differ from what the tool calls made: {diff:?}\nexpected: {expected:?}\nafter: {after:?}"
        );
    }
}

fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// Every file of the workspace but git's and squad's own, with its content.
fn snapshot(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if rel == ".git" || rel == ".squad" {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                out.insert(rel, std::fs::read_to_string(&path).unwrap_or_default());
            }
        }
    }
    out
}

fn assistant_count(body: &Value) -> usize {
    body["messages"].as_array().map_or(0, |ms| {
        ms.iter().filter(|m| m["role"] == "assistant").count()
    })
}

fn first_user(body: &Value) -> String {
    transcript(body)
        .into_iter()
        .find(|(role, _)| role == "user")
        .map(|(_, t)| t)
        .unwrap_or_default()
}

fn tool_names(body: &Value) -> BTreeSet<String> {
    body["tools"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn tc(id: &str, name: &str, args: Value) -> MockResponse {
    MockResponse::tool_call(id, name, &args.to_string())
}

fn read(id: &str, path: &str) -> MockResponse {
    tc(id, "read_file", json!({"path": path}))
}

fn edit(id: &str, path: &str, old: &str, new: &str) -> MockResponse {
    tc(
        id,
        "edit_file",
        json!({"path": path, "old_text": old, "new_text": new}),
    )
}

fn write(id: &str, path: &str, content: &str) -> MockResponse {
    tc(id, "write_file", json!({"path": path, "content": content}))
}

fn run_tests(id: &str) -> MockResponse {
    tc(id, "run_tests", json!({}))
}

fn command(id: &str, cmd: &str) -> MockResponse {
    tc(id, "run_command", json!({"command": cmd}))
}

fn search(id: &str, pattern: &str) -> MockResponse {
    tc(id, "search_files", json!({"pattern": pattern}))
}

fn handoff(id: &str, to: &str, reason: &str) -> MockResponse {
    tc(
        id,
        "handoff_to",
        json!({"target_agent": to, "reason": reason, "context": "design review of the cache"}),
    )
}

fn result(summary: &str, artifacts: Value) -> MockResponse {
    tc(
        "ret",
        "return_results",
        json!({"result": {"status": "success", "summary": summary,
            "artifacts": artifacts, "known_issues": []}}),
    )
}

const CALC: &str = "def add(a, b):\n    return a + b\n";

/// A multi-step change with a test run after each step (Codex's habit): four steps, the
/// tests green after every one of them.
#[tokio::test(flavor = "multi_thread")]
async fn a_four_step_change_with_the_tests_run_after_each_step() {
    let mut t = Transcript::new(
        "Add sub, mul and div to calc.py, one at a time, and a module docstring; run the tests after each.",
        "Added sub, mul, div and a docstring; the tests pass after each step.",
    )
    .file("calc.py", CALC)
    .tests("grep -q 'def add' calc.py")
    .step(read("r", "calc.py"));
    let steps = [
        (
            "    return a + b\n",
            "    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
        ),
        (
            "    return a - b\n",
            "    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
        ),
        (
            "    return a * b\n",
            "    return a * b\n\n\ndef div(a, b):\n    return a / b\n",
        ),
        (
            "def add(a, b):\n",
            "\"\"\"Arithmetic.\"\"\"\n\n\ndef add(a, b):\n",
        ),
    ];
    for (i, (old, new)) in steps.iter().enumerate() {
        t = t
            .step(edit(&format!("e{i}"), "calc.py", old, new))
            .step(run_tests(&format!("t{i}")));
    }
    t.step(MockResponse::text(
        "Added sub, mul, div and a docstring; the tests pass after each step.",
    ))
    .changes(
        "calc.py",
        "\"\"\"Arithmetic.\"\"\"\n\n\ndef add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n\n\ndef div(a, b):\n    return a / b\n",
    )
    .run()
    .await;
}

/// After a green run the model looks around (three reads) before its next change, as
/// OpenHands' "final review" phase does.
#[tokio::test(flavor = "multi_thread")]
async fn looking_around_after_a_green_run_before_the_next_change() {
    Transcript::new(
        "Make add in calc.py accept three numbers, then update the README.",
        "add takes an optional third number; README updated; tests pass.",
    )
    .file("calc.py", CALC)
    .file("README.md", "# calc\nadd(a, b)\n")
    .file("main.py", "from calc import add\nprint(add(1, 2))\n")
    .file("setup.cfg", "[metadata]\nname = calc\n")
    .tests("grep -q 'def add' calc.py")
    .step(read("r1", "calc.py"))
    .step(edit(
        "e1",
        "calc.py",
        "def add(a, b):\n    return a + b\n",
        "def add(a, b, c=0):\n    return a + b + c\n",
    ))
    .step(run_tests("t1"))
    .step(read("r2", "main.py"))
    .step(read("r3", "README.md"))
    .step(read("r4", "setup.cfg"))
    .step(edit("e2", "README.md", "add(a, b)\n", "add(a, b, c=0)\n"))
    .step(run_tests("t2"))
    .step(MockResponse::text(
        "add takes an optional third number; README updated; tests pass.",
    ))
    .changes("calc.py", "def add(a, b, c=0):\n    return a + b + c\n")
    .changes("README.md", "# calc\nadd(a, b, c=0)\n")
    .run()
    .await;
}

/// OpenHands' phases: explore, reproduce with a script, fix, verify, then a final review that
/// reads the change, looks at the diff and runs the tests once more.
#[tokio::test(flavor = "multi_thread")]
async fn reproduce_fix_verify_and_review_as_openhands_does() {
    Transcript::new(
        "div(1, 0) crashes with ZeroDivisionError; make it return None instead.",
        "div now returns None for a zero divisor; reproduced, fixed, verified.",
    )
    .file("calc.py", "def div(a, b):\n    return a / b\n")
    .file(
        "test_calc.py",
        "from calc import div\n\n\ndef test_div():\n    assert div(4, 2) == 2\n",
    )
    .tests("grep -q 'def div' calc.py")
    .step(tc("l", "list_files", json!({})))
    .step(search("s", "def div"))
    .step(read("r1", "calc.py"))
    .step(run_tests("t0"))
    .step(write("w", "repro.txt", "div(1, 0)\n"))
    .step(command("c1", "cat repro.txt"))
    .step(edit(
        "e",
        "calc.py",
        "    return a / b\n",
        "    if b == 0:\n        return None\n    return a / b\n",
    ))
    .step(command("c2", "grep -n 'return None' calc.py"))
    .step(run_tests("t1"))
    .step(read("r2", "calc.py"))
    .step(read("r3", "test_calc.py"))
    .step(command("c3", "git diff --stat"))
    .step(run_tests("t2"))
    .step(MockResponse::text(
        "div now returns None for a zero divisor; reproduced, fixed, verified.",
    ))
    .changes(
        "calc.py",
        "def div(a, b):\n    if b == 0:\n        return None\n    return a / b\n",
    )
    .changes("repro.txt", "div(1, 0)\n")
    .run()
    .await;
}

/// Debugging: red, red, green, then one more improvement and green again.
#[tokio::test(flavor = "multi_thread")]
async fn debugging_through_failing_runs_then_a_last_improvement() {
    Transcript::new(
        "The test for add fails; fix it and tidy the module.",
        "Fixed add (it subtracted) and added a docstring; tests pass.",
    )
    .file("calc.py", "def add(a, b):\n    return a - b\n")
    .tests("grep -q 'a + b' calc.py")
    .step(run_tests("t0"))
    .step(read("r", "calc.py"))
    .step(edit("e1", "calc.py", "return a - b", "return a + 0 - b"))
    .step(run_tests("t1"))
    .step(edit("e2", "calc.py", "return a + 0 - b", "return a + b"))
    .step(run_tests("t2"))
    .step(edit(
        "e3",
        "calc.py",
        "def add(a, b):\n",
        "def add(a, b):\n    \"\"\"The sum.\"\"\"\n",
    ))
    .step(run_tests("t3"))
    .step(read("r2", "calc.py"))
    .step(MockResponse::text(
        "Fixed add (it subtracted) and added a docstring; tests pass.",
    ))
    .changes(
        "calc.py",
        "def add(a, b):\n    \"\"\"The sum.\"\"\"\n    return a + b\n",
    )
    .run()
    .await;
}

/// Green, a further step breaks the tests, a fix on top of it passes (the files differ
/// from the earlier pass: no round trip), the tests once more, an answer.
#[tokio::test(flavor = "multi_thread")]
async fn a_step_that_breaks_the_tests_fixed_forward_not_put_back() {
    Transcript::new(
        "Fix add, then let it take a default for b.",
        "add is fixed and b defaults to 0; tests pass.",
    )
    .file("calc.py", "def add(a, b):\n    return a - b\n")
    .tests("grep -q 'a + b' calc.py")
    .step(edit("e1", "calc.py", "return a - b", "return a + b"))
    .step(run_tests("t1"))
    .step(edit("e2", "calc.py", "return a + b", "return a+b"))
    .step(run_tests("t2"))
    .step(edit(
        "e3",
        "calc.py",
        "def add(a, b):\n    return a+b",
        "def add(a, b=0):\n    return a + b",
    ))
    .step(run_tests("t3"))
    .step(run_tests("t4"))
    .step(MockResponse::text(
        "add is fixed and b defaults to 0; tests pass.",
    ))
    .changes("calc.py", "def add(a, b=0):\n    return a + b\n")
    // The failing run after a pass names what the file held then: a failure's note.
    .informs("[squad] The tests passed at an earlier run")
    .run()
    .await;
}

/// A question that names a file to create, with the answer "no".
#[tokio::test(flavor = "multi_thread")]
async fn a_question_about_creating_a_file_is_answered_not_done() {
    Transcript::new(
        "Should I create a CHANGELOG.md for this project? Don't create it, just tell me.",
        "No: the project is a single script with no releases yet.",
    )
    .file("README.md", "# tool\nA single script.\n")
    .file("tool.py", "print('hi')\n")
    .step(tc("l", "list_files", json!({})))
    .step(read("r", "README.md"))
    .step(MockResponse::text(
        "No: the project is a single script with no releases yet.",
    ))
    .run()
    .await;
}

/// A file shown under its name in a fenced block, which the user said not to write.
#[tokio::test(flavor = "multi_thread")]
async fn a_file_shown_in_an_answer_is_not_written() {
    let answer = "A minimal one:\n\nconfig.yaml\n```yaml\nname: app\nport: 8080\n```\n\nWrite it when you are ready.";
    Transcript::new(
        "What would a minimal config.yaml look like? Don't create the file: I'll write config.yaml myself later.",
        "port: 8080",
    )
    .file("app.py", "import yaml\n")
    .step(read("r", "app.py"))
    .step(MockResponse::text(answer))
    .run()
    .await;
}

/// A persona that answers with code blocks labelled with file names it explains.
#[tokio::test(flavor = "multi_thread")]
async fn a_persona_that_answers_with_labelled_code_blocks() {
    let answer = "Here is how you would write them.\n\n### tests/test_utils.py\n```python\nfrom utils import slug\n\n\ndef test_slug():\n    assert slug('A B') == 'a-b'\n```\n\n### conftest.py\n```python\nimport sys\n```\nAdd them yourself when you like.";
    Transcript::new(
        "Explain how I would write tests/test_utils.py and a conftest.py for utils.py; show the code, I'll add it myself.",
        "def test_slug():",
    )
    .file("utils.py", "def slug(s):\n    return s.lower().replace(' ', '-')\n")
    .step(read("r", "utils.py"))
    .step(MockResponse::text(answer))
    .run()
    .await;
}

fn many_files(n: usize) -> Vec<(String, String)> {
    (0..n)
        .map(|i| {
            (
                format!("src/mod_{i:02}.py"),
                format!("def f{i}():\n    return {i}\n"),
            )
        })
        .collect()
}

/// A read-only investigation of 45 files before the explanation (Claude Code reads its way
/// through a codebase before it explains it).
#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_investigation_of_45_files() {
    let mut t = Transcript::new(
        "Explain how the modules in src/ fit together.",
        "Each of the 45 modules defines one function returning its index.",
    );
    t.files = many_files(45);
    let mut t = t.step(tc("l", "list_files", json!({"path": "src"})));
    for i in 0..45 {
        t = t.step(read(&format!("r{i}"), &format!("src/mod_{i:02}.py")));
    }
    t.step(MockResponse::text(
        "Each of the 45 modules defines one function returning its index.",
    ))
    .run()
    .await;
}

/// 120 distinct calls in one turn: searches and reads over 60 files, then the answer.
#[tokio::test(flavor = "multi_thread")]
async fn a_turn_of_120_distinct_calls() {
    let mut t = Transcript::new(
        "Audit every module in src/ for functions that return constants.",
        "All 60 functions return a constant (their index).",
    );
    t.files = many_files(60);
    for i in 0..60 {
        t = t
            .step(search(&format!("s{i}"), &format!("def f{i}\\(")))
            .step(read(&format!("r{i}"), &format!("src/mod_{i:02}.py")));
    }
    t.step(MockResponse::text(
        "All 60 functions return a constant (their index).",
    ))
    .run()
    .await;
}

/// Terminal-Bench style: one distinct shell command after another, then a change and a test.
#[tokio::test(flavor = "multi_thread")]
async fn a_long_shell_exploration_then_one_change() {
    let mut t = Transcript::new(
        "Find where the version is defined and bump it to 1.1.",
        "Bumped VERSION to 1.1 in version.txt.",
    )
    .file("version.txt", "VERSION=1.0\n")
    .tests("grep -q 'VERSION=1.1' version.txt");
    t.files.extend(many_files(30));
    for i in 0..30 {
        t = t.step(command(
            &format!("c{i}"),
            &format!("grep -c return src/mod_{i:02}.py"),
        ));
    }
    t.step(command("cv", "grep -rn VERSION ."))
        .step(edit("e", "version.txt", "VERSION=1.0", "VERSION=1.1"))
        .step(run_tests("t"))
        .step(MockResponse::text("Bumped VERSION to 1.1 in version.txt."))
        .changes("version.txt", "VERSION=1.1\n")
        .run()
        .await;
}

/// The seeds' handoff chain for a design review: copilot → architect → implementer →
/// tester → copilot, each reading what it needs, no file changed on the way.
#[tokio::test(flavor = "multi_thread")]
async fn a_design_review_across_the_seeds_handoff_chain() {
    Transcript::new(
        "Review the cache design in cache.py with the architect, implementer and tester; change nothing.",
        "Design review done: the cache is sound; the tester suggests an eviction test.",
    )
    .file("cache.py", "CACHE = {}\n\n\ndef get(k):\n    return CACHE.get(k)\n")
    .step(read("r0", "cache.py"))
    .step(handoff("h1", "architect", "the design needs an architect's view"))
    .step(read("r1", "cache.py"))
    .step(handoff("h2", "implementer", "how hard is it to build"))
    .step(search("s2", "CACHE"))
    .step(handoff("h3", "tester", "how would we test it"))
    .step(tc("l3", "list_files", json!({})))
    .step(handoff("h4", "copilot", "review gathered; report to the user"))
    .step(MockResponse::text(
        "Design review done: the cache is sound; the tester suggests an eviction test.",
    ))
    .run()
    .await;
}

/// A worker reads 30 files before its one write; the supervisor waits and answers.
#[tokio::test(flavor = "multi_thread")]
async fn a_worker_that_reads_30_files_before_writing() {
    let mut worker: Vec<MockResponse> = (0..30)
        .map(|i| read(&format!("r{i}"), &format!("src/mod_{i:02}.py")))
        .collect();
    worker.push(write("w", "INDEX.md", "30 modules, one function each.\n"));
    worker.push(result(
        "wrote INDEX.md",
        json!([{"file_path": "INDEX.md", "description": "the index", "change_type": "created"}]),
    ));
    let mut t = Transcript::new(
        "Have an implementer write INDEX.md describing src/.",
        "The implementer wrote INDEX.md after reading all 30 modules.",
    );
    t.files = many_files(30);
    t.step(spawn(
        "implementer",
        "MARK-INDEX: read every module in src/ and write INDEX.md summarising them",
    ))
    .step(tc("w", "wait_for_agents", json!({})))
    .step(MockResponse::text(
        "The implementer wrote INDEX.md after reading all 30 modules.",
    ))
    .worker("MARK-INDEX", worker)
    .changes("INDEX.md", "30 modules, one function each.\n")
    .run()
    .await;
}

/// The supervisor checks a worker's result with its own reads and a test run before it
/// answers (what copilot's prompt asks of it).
#[tokio::test(flavor = "multi_thread")]
async fn a_supervisor_checks_its_workers_result_before_answering() {
    Transcript::new(
        "Have an implementer add sub to calc.py, then check it.",
        "The implementer added sub; I read it and the tests pass.",
    )
    .file("calc.py", CALC)
    .file("test_calc.py", "from calc import add\n")
    .tests("grep -q 'def add' calc.py")
    .step(spawn(
        "implementer",
        "MARK-SUB: add def sub(a, b) to calc.py",
    ))
    .step(tc("w", "wait_for_agents", json!({})))
    .step(read("r1", "calc.py"))
    .step(read("r2", "test_calc.py"))
    .step(search("s", "def sub"))
    .step(run_tests("t"))
    .step(MockResponse::text(
        "The implementer added sub; I read it and the tests pass.",
    ))
    .worker(
        "MARK-SUB",
        vec![
            read("r", "calc.py"),
            edit(
                "e",
                "calc.py",
                "    return a + b\n",
                "    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
            ),
            result(
                "added sub",
                json!([{"file_path": "calc.py", "description": "sub", "change_type": "modified"}]),
            ),
        ],
    )
    .changes(
        "calc.py",
        "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
    )
    .run()
    .await;
}

/// A kept worker claims the board's only task, does it and rests: the board offer
/// (`runtime/tasks/claims.rs`) has nothing to offer, so nothing squad-made reaches it.
#[tokio::test(flavor = "multi_thread")]
async fn a_kept_worker_claims_the_only_task_and_hears_nothing_more() {
    Transcript::new(
        "Put the task on the board and have a worker claim it.",
        "The worker claimed T1 and wrote a.txt.",
    )
    .step(tc(
        "p",
        "plan_tasks",
        json!({"tasks": [{"id": "T1", "title": "write a.txt", "paths": ["a.txt"]}]}),
    ))
    .step(tc(
        "s",
        "spawn_agent",
        json!({"role_name": "agentic_coder", "keep": true,
               "task_prompt": "MARK-CLAIM: claim a task from the board with claim_task and do it"}),
    ))
    .step(tc("w", "wait_for_agents", json!({})))
    .step(MockResponse::text("The worker claimed T1 and wrote a.txt."))
    .worker(
        "MARK-CLAIM",
        vec![
            tc("c", "claim_task", json!({})),
            write("a", "a.txt", "a\n"),
            result(
                "wrote a.txt",
                json!([{"file_path": "a.txt", "description": "new", "change_type": "created"}]),
            ),
        ],
    )
    .changes("a.txt", "a\n")
    .run()
    .await;
}

/// Two workers on board tasks with declared paths coordinate through messages: A tells B
/// the interface mid-task, B answers A while A still works, and each writes inside its
/// task's paths. Nothing squad-made reaches them beyond the deliveries themselves (no
/// lease note: `runtime/tasks/leases.rs`, no board offer: they were not kept).
#[tokio::test(flavor = "multi_thread")]
async fn two_workers_coordinate_through_messages_and_hear_nothing_else() {
    let spawn = |id: &str, task: &str, name: &str, prompt: &str| {
        call(
            id,
            "spawn_agent",
            json!({"role_name": "agentic_coder", "task_id": task, "name": name,
                   "task_prompt": prompt}),
        )
    };
    Transcript::new(
        "Split the API and its client between two workers who agree on the names.",
        "Both workers agreed on fetch_user and wrote api.py and client.py.",
    )
    .step(tc(
        "p",
        "plan_tasks",
        json!({"tasks": [
            {"id": "T1", "title": "api", "paths": ["api.py"]},
            {"id": "T2", "title": "client", "paths": ["client.py"]}
        ]}),
    ))
    .step(MockResponse::tool_calls(vec![
        spawn("s1", "T1", "api", "MARK-API: write api.py; tell the client worker its name"),
        spawn("s2", "T2", "client", "MARK-CLIENT: write client.py calling the api"),
    ]))
    .step(tc("w", "wait_for_agents", json!({})))
    .step(MockResponse::text(
        "Both workers agreed on fetch_user and wrote api.py and client.py.",
    ))
    .worker(
        "MARK-API",
        vec![
            tc(
                "m",
                "message_agent",
                json!({"to": "client", "text": "The function is fetch_user(id) in api.py."}),
            ),
            command("c", "sleep 2.5"),
            write("w", "api.py", "def fetch_user(id):\n    return {\"id\": id}\n"),
            result(
                "wrote api.py",
                json!([{"file_path": "api.py", "description": "api", "change_type": "created"}]),
            ),
        ],
    )
    .worker(
        "MARK-CLIENT",
        vec![
            command("c", "sleep 1"),
            tc(
                "m",
                "message_agent",
                json!({"to": "api", "text": "Got it: client.py calls fetch_user."}),
            ),
            write("w", "client.py", "from api import fetch_user\n"),
            result(
                "wrote client.py",
                json!([{"file_path": "client.py", "description": "client", "change_type": "created"}]),
            ),
        ],
    )
    // Each message arrives at its recipient's next request, mid-task.
    .hears("MARK-CLIENT", 1, "The function is fetch_user(id)")
    .hears("MARK-API", 2, "Got it: client.py calls fetch_user.")
    .changes("api.py", "def fetch_user(id):\n    return {\"id\": id}\n")
    .changes("client.py", "from api import fetch_user\n")
    .run()
    .await;
}

/// Two workers in parallel on different files; the supervisor reads both and runs the tests.
#[tokio::test(flavor = "multi_thread")]
async fn two_parallel_workers_then_the_supervisor_reviews_both() {
    Transcript::new(
        "Have two implementers write a.txt and b.txt in parallel, then review them.",
        "Both files are written and reviewed.",
    )
    .file("README.md", "# two\n")
    .tests("true")
    .step(MockResponse::tool_calls(vec![
        call(
            "s1",
            "spawn_agent",
            json!({"role_name": "implementer", "task_prompt": "MARK-A: write a.txt with alpha"}),
        ),
        call(
            "s2",
            "spawn_agent",
            json!({"role_name": "implementer", "task_prompt": "MARK-B: write b.txt with beta"}),
        ),
    ]))
    .step(tc("w", "wait_for_agents", json!({})))
    .step(read("r1", "a.txt"))
    .step(read("r2", "b.txt"))
    .step(run_tests("t"))
    .step(MockResponse::text("Both files are written and reviewed."))
    .worker(
        "MARK-A",
        vec![
            write("w", "a.txt", "alpha\n"),
            result(
                "wrote a.txt",
                json!([{"file_path": "a.txt", "description": "a", "change_type": "created"}]),
            ),
        ],
    )
    .worker(
        "MARK-B",
        vec![
            write("w", "b.txt", "beta\n"),
            result(
                "wrote b.txt",
                json!([{"file_path": "b.txt", "description": "b", "change_type": "created"}]),
            ),
        ],
    )
    .changes("a.txt", "alpha\n")
    .changes("b.txt", "beta\n")
    .run()
    .await;
}

/// A model that re-reads a file after each of its edits (Claude Code checks its edits).
#[tokio::test(flavor = "multi_thread")]
async fn re_reading_a_file_after_each_edit() {
    Transcript::new(
        "Rename the function f to g in lib.py and its caller.",
        "Renamed f to g in lib.py and main.py.",
    )
    .file("lib.py", "def f():\n    return 1\n")
    .file("main.py", "from lib import f\nprint(f())\n")
    .step(search("s", "f\\("))
    .step(read("r1", "lib.py"))
    .step(edit("e1", "lib.py", "def f():", "def g():"))
    .step(read("r2", "lib.py"))
    .step(read("r3", "main.py"))
    .step(edit(
        "e2",
        "main.py",
        "from lib import f\nprint(f())",
        "from lib import g\nprint(g())",
    ))
    .step(read("r4", "main.py"))
    .step(read("r5", "lib.py"))
    .step(MockResponse::text("Renamed f to g in lib.py and main.py."))
    .changes("lib.py", "def g():\n    return 1\n")
    .changes("main.py", "from lib import g\nprint(g())\n")
    .run()
    .await;
}

/// A change that asks for files by name ("create …"), made with tool calls, then a last
/// look and an answer that shows one of them in a block: nothing written twice.
#[tokio::test(flavor = "multi_thread")]
async fn created_files_then_an_answer_that_shows_them() {
    Transcript::new(
        "Create docs/usage.md and docs/faq.md from the README.",
        "Created both:\n\ndocs/usage.md\n```markdown\n# Usage\nrun it\n```",
    )
    .file("README.md", "# app\nrun it\n")
    .step(read("r", "README.md"))
    .step(write("w1", "docs/usage.md", "# Usage\nrun it\n"))
    .step(write("w2", "docs/faq.md", "# FAQ\nnone yet\n"))
    .step(tc("l", "list_files", json!({"path": "docs"})))
    .step(MockResponse::text(
        "Created both:\n\ndocs/usage.md\n```markdown\n# Usage\nrun it\n```",
    ))
    .changes("docs/usage.md", "# Usage\nrun it\n")
    .changes("docs/faq.md", "# FAQ\nnone yet\n")
    .run()
    .await;
}

/// A plain question answered after a couple of reads: the shortest capable turn.
#[tokio::test(flavor = "multi_thread")]
async fn a_question_answered_after_reading() {
    Transcript::new("What does main.py print?", "It prints 3.")
        .file("main.py", "print(1 + 2)\n")
        .step(read("r", "main.py"))
        .step(MockResponse::text("It prints 3."))
        .run()
        .await;
}

/// Runs the tests twice with nothing changed in between (a flaky-test check), then answers.
#[tokio::test(flavor = "multi_thread")]
async fn the_tests_run_twice_to_rule_out_a_flake() {
    Transcript::new(
        "Are the tests green? Run them twice to be sure they are not flaky.",
        "Green both times.",
    )
    .file("calc.py", CALC)
    .tests("grep -q 'def add' calc.py")
    .step(run_tests("t1"))
    .step(run_tests("t2"))
    .step(MockResponse::text("Green both times."))
    .run()
    .await;
}
