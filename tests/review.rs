//! `squad review` on the real binary against the mock server, in a real git repository
//! with a planted bug: reviewers run in parallel, one per focus, read-only; a true finding
//! reported by two of them is shown once naming both focuses, a false one (its quote is
//! not in the file, or its line is past the end) is dropped with the reason, and the
//! review changes nothing in the workspace or the repository.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::pty::Tui;
use common::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;

const SUM_OK: &str = "pub fn sum(v: &[u32]) -> u32 {\n    let mut total = 0;\n    for i in 0..v.len() {\n        total += v[i];\n    }\n    total\n}\n";
const SUM_BUG: &str = "pub fn sum(v: &[u32]) -> u32 {\n    let mut total = 0;\n    for i in 0..=v.len() {\n        total += v[i];\n    }\n    total\n}\n";

/// A repository whose `src/sum.rs` is committed right, with the off-by-one written over it
/// and not committed; `AGENTS.md` gives the rules reviewer something to hold it to.
fn repo() -> Sandbox {
    let sb = Sandbox::new();
    git(sb.ws(), &["init", "-q", "-b", "main"]);
    sb.write("src/sum.rs", SUM_OK);
    sb.write("AGENTS.md", "# Rules\n- No unwrap on outside input.\n");
    git(sb.ws(), &["add", "."]);
    git(sb.ws(), &["commit", "-q", "-m", "sum"]);
    sb.write("src/sum.rs", SUM_BUG);
    sb
}

fn finding(line: u32, severity: &str, title: &str, quote: &str) -> Value {
    json!({"file": "src/sum.rs", "line": line, "severity": severity, "title": title,
           "body": "the loop reads v[v.len()]", "quote": quote})
}

fn answer(findings: Vec<Value>) -> MockResponse {
    MockResponse::text(&format!(
        "```json\n{}\n```",
        json!({ "findings": findings })
    ))
}

/// Which reviewer asks, from its task (the first user message).
fn focus(body: &Value) -> &'static str {
    let task = transcript(body)
        .into_iter()
        .find(|(role, _)| role == "user")
        .map(|(_, t)| t)
        .unwrap_or_default();
    for (needle, name) in [
        ("Your focus: bugs", "correctness"),
        ("Your focus: tests", "tests"),
        ("Your focus: security", "security"),
        ("Your focus: the project's own rules", "rules"),
    ] {
        if task.contains(needle) {
            return name;
        }
    }
    "persona"
}

/// The reviewers' scripted answers: correctness reads the file, then reports the bug and
/// a finding whose quote is nowhere in the file; tests reports the same bug a line off;
/// security first answers in words (and is asked once more); rules names a line past
/// the end.
fn reviewers(mock: &MockServer) {
    mock.set_responder(|body| {
        let user_turns = transcript(body).iter().filter(|(r, _)| r == "user").count();
        match focus(body) {
            "correctness" if tool_count(body) == 0 => MockResponse::tool_call(
                "r1",
                "read_file",
                &json!({"path": "src/sum.rs"}).to_string(),
            ),
            "correctness" => answer(vec![
                finding(
                    3,
                    "high",
                    "Off-by-one: the loop reads past the end of v",
                    "for i in 0..=v.len() {",
                ),
                finding(
                    2,
                    "medium",
                    "Unchecked overflow",
                    "total = total.wrapping_add(v[i]);",
                ),
            ]),
            "tests" => answer(vec![finding(
                4,
                "medium",
                "Loop reads past the end of v (off-by-one)",
                "for i in 0..=v.len() {",
            )]),
            "security" if user_turns == 1 => MockResponse::text("Nothing to worry about here."),
            "security" => answer(vec![]),
            "rules" => answer(vec![finding(400, "low", "unwrap on input", "x.unwrap()")]),
            other => MockResponse::text(&format!("unexpected request from {other}")),
        }
    });
}

/// Every file under `dir` but `.git`, with its content.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// What a review must leave as it found it.
fn snapshot(ws: &Path) -> (BTreeMap<String, Vec<u8>>, String, String) {
    (
        files(ws),
        git(ws, &["status", "--porcelain", "--untracked-files=all"]),
        git(ws, &["rev-parse", "HEAD"]),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_review_finds_the_planted_bug_once_and_drops_the_false_findings() {
    let mock = MockServer::start().await;
    let sb = repo();
    reviewers(&mock);
    let before = snapshot(sb.ws());
    let run = sb.run(Some(&mock), &["review", "--json"]).await;
    run.assert_ok();
    let out: Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout));

    let findings = out["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{out:#}");
    let f = &findings[0];
    assert_eq!(
        (f["file"].as_str(), f["line"].as_u64()),
        (Some("src/sum.rs"), Some(3))
    );
    assert_eq!(f["severity"], "high");
    assert_eq!(f["focus"], json!(["correctness", "tests"]));

    let dropped = out["dropped"].as_array().unwrap();
    let reason = |title: &str| -> String {
        let d = dropped
            .iter()
            .find(|d| d["title"] == title)
            .unwrap_or_else(|| panic!("{title} not dropped: {out:#}"));
        d["reason"].as_str().unwrap().to_string()
    };
    assert!(reason("Unchecked overflow").contains("quoted code is not at src/sum.rs:2"));
    assert!(reason("unwrap on input").contains("past the end of src/sum.rs (7 lines)"));
    assert_eq!(dropped.len(), 2, "{out:#}");

    // Read-only: the files, git's status and HEAD are as they were.
    assert_eq!(snapshot(sb.ws()), before);

    // Four reviewers (AGENTS.md is there), each offered only tools that read, and no
    // request of the persona: squad, not a model, started them.
    let requests = mock.requests();
    let mut seen = std::collections::BTreeSet::new();
    for r in &requests {
        let body = r.as_chat();
        seen.insert(focus(&body));
        let tools: Vec<String> = body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
            .collect();
        for t in &tools {
            assert!(
                ["read_file", "list_files", "search_files"].contains(&t.as_str()),
                "{t} offered to a reviewer"
            );
        }
        assert!(is_role(&body, "code_reviewer"), "{}", system(&body));
    }
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        ["correctness", "rules", "security", "tests"]
    );
    // correctness: 2 calls, security: 2 (asked again), tests and rules: 1 each.
    assert_eq!(requests.len(), 6);
}

#[tokio::test(flavor = "multi_thread")]
async fn text_output_lists_file_line_severity_and_title() {
    let mock = MockServer::start().await;
    let sb = repo();
    reviewers(&mock);
    let run = sb.run(Some(&mock), &["review"]).await;
    run.assert_ok();
    assert_eq!(
        run.stdout,
        "src/sum.rs:3  high  Off-by-one: the loop reads past the end of v  [correctness, tests]\n"
    );
    assert!(
        run.stderr.contains("1 finding(s), 2 dropped"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("dropped src/sum.rs:400  unwrap on input"),
        "{}",
        run.stderr
    );
    // What each reviewer cost, as exec's table tells it.
    assert!(run.stderr.contains("code_reviewer"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_commit_is_checked_against_its_own_files() {
    let mock = MockServer::start().await;
    let sb = repo();
    git(sb.ws(), &["commit", "-q", "-am", "planted bug"]);
    // The workspace moves on: the loop's line is gone there, but not in the commit.
    sb.write(
        "src/sum.rs",
        "pub fn sum(v: &[u32]) -> u32 {\n    v.iter().sum()\n}\n",
    );
    reviewers(&mock);
    let before = snapshot(sb.ws());
    let run = sb
        .run(Some(&mock), &["review", "--commit", "HEAD", "--json"])
        .await;
    run.assert_ok();
    let out: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(out["findings"].as_array().unwrap().len(), 1, "{out:#}");
    let task = transcript(&mock.requests()[0].as_chat())
        .into_iter()
        .find(|(r, _)| r == "user")
        .unwrap()
        .1;
    assert!(
        task.contains("-    for i in 0..v.len() {\n+    for i in 0..=v.len() {"),
        "{task}"
    );
    assert_eq!(snapshot(sb.ws()), before);
}

#[tokio::test(flavor = "multi_thread")]
async fn nothing_changed_is_a_review_without_reviewers_and_no_repository_an_error() {
    let mock = MockServer::start().await;
    let sb = repo();
    git(sb.ws(), &["commit", "-q", "-am", "planted bug"]);
    let run = sb.run(Some(&mock), &["review", "--json"]).await;
    run.assert_ok();
    let out: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(out, json!({"findings": [], "dropped": []}));
    assert!(mock.requests().is_empty());

    let plain = Sandbox::new();
    let run = plain.run(Some(&mock), &["review"]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("not in a git repository"),
        "{}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn slash_review_in_the_tui_opens_the_findings() {
    let mock = MockServer::start().await;
    let sb = repo();
    reviewers(&mock);
    let before = snapshot(sb.ws());
    let tui = Tui::spawn(&sb, &mock.base_url(), &[], 30, 110);
    tui.wait_text("copilot").await;
    tui.type_text("/review").await;
    tui.enter().await;
    let screen = tui.wait_text("Review findings (1)").await;
    assert!(
        screen.contains("src/sum.rs:3  high  correctness, tests"),
        "{screen}"
    );
    assert!(screen.contains("Dropped (2)"), "{screen}");
    // Esc closes it; the findings stay in the persona's conversation.
    tui.send(b"\x1b");
    tui.wait_text("1 finding, 2 dropped").await;
    assert_eq!(snapshot(sb.ws()), before);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_review_no_reviewer_could_answer_fails() {
    let mock = MockServer::start().await;
    let sb = repo();
    mock.set_responder(|_| MockResponse::error(400, "bad request"));
    let run = sb.run(Some(&mock), &["review", "--json"]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("no reviewer could answer"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("review: the correctness reviewer gave no findings"),
        "{}",
        run.stderr
    );
}

/// A reviewer is told to end its task the way its tools let it: it is offered no
/// `return_results` (its answer is the JSON it writes), so neither its system prompt nor
/// its task asks for that call, or names any tool it is not given; it is told its last
/// message is its answer.
#[tokio::test(flavor = "multi_thread")]
async fn a_reviewers_prompt_names_no_tool_it_is_not_given() {
    let mock = MockServer::start().await;
    let sb = repo();
    reviewers(&mock);
    let run = sb.run(Some(&mock), &["review", "--json"]).await;
    run.assert_ok();
    let requests = mock.requests();
    assert!(!requests.is_empty());
    for r in &requests {
        let body = r.as_chat();
        let offered: Vec<String> = body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
            .collect();
        let prompt = system(&body);
        let said: String = transcript(&body)
            .into_iter()
            .filter(|(role, _)| role != "assistant")
            .map(|(_, text)| text)
            .collect::<Vec<_>>()
            .join("\n");
        for tool in [
            "return_results",
            "message_supervisor",
            "spawn_agent",
            "wait_for_agents",
            "write_file",
            "edit_file",
            "apply_patch",
            "run_command",
        ] {
            assert!(
                offered.iter().any(|t| t == tool) || !said.contains(tool),
                "a reviewer not given {tool} is told of it ({offered:?}):\n{said}"
            );
        }
        assert!(
            prompt.contains("your last message is your answer"),
            "{prompt}"
        );
    }
}
