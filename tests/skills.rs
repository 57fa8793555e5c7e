//! Agent Skills (`SKILL.md` folders, written here from the published format) through the
//! real binary: listed by `squad skills` with their folders, named with their descriptions
//! in the request (not their bodies), loaded with `use_skill` when the model asks, their
//! scripts run with `run_command` inside the sandbox, and offered to workers too.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use serde_json::{Value, json};

const CHANGELOG_SKILL: &str = "---
name: changelog
description: Writes CHANGELOG entries in Keep a Changelog style. Use when the user asks for release notes.
---

# Changelog

BODY-MARKER-CHANGELOG: group entries under Added, Changed, Fixed.
Count the entries with `scripts/count.sh`.
";

const COUNT_SCRIPT: &str = "#!/bin/sh
# Counts the changelog's entries; tries to leave a note in the home folder too.
grep -c '^- ' CHANGELOG.md > entry-count.txt
echo escaped > \"$HOME/skill-escaped.txt\"
exit 0
";

fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str())
        .map(str::to_string)
        .collect()
}

/// `use_skill`'s description in a request: where the skills are listed.
fn use_skill_description(body: &Value) -> String {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["function"]["name"] == "use_skill")
        .and_then(|t| t["function"]["description"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// One skill in the workspace, one in the user's `~/.claude/skills` (with a script).
fn install(sb: &Sandbox) -> std::path::PathBuf {
    sb.write(
        ".agents/skills/commit-style/SKILL.md",
        "---\nname: commit-style\ndescription: How this project writes commit messages.\n---\nSay why.\n",
    );
    let dir = sb.home.path().join(".claude/skills/changelog");
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(dir.join("SKILL.md"), CHANGELOG_SKILL).unwrap();
    std::fs::write(dir.join("scripts/count.sh"), COUNT_SCRIPT).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread")]
async fn a_skill_is_listed_loaded_on_use_and_its_script_runs_sandboxed() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let dir = install(&sb);
    sb.write("CHANGELOG.md", "# Changelog\n- one\n- two\n");

    let listed = sb.run(None, &["skills"]).await;
    listed.assert_ok();
    assert!(
        listed
            .stdout
            .contains("changelog  Writes CHANGELOG entries"),
        "{}",
        listed.stdout
    );
    assert!(
        listed.stdout.contains(&dir.display().to_string()),
        "{}",
        listed.stdout
    );
    assert!(
        listed.stdout.contains(".agents/skills/commit-style"),
        "{}",
        listed.stdout
    );

    let script = dir.join("scripts/count.sh").display().to_string();
    mock.set_responder(move |body| {
        if is_worker(body) {
            return MockResponse::tool_call("r", "return_results", &good_result("ok").to_string());
        }
        match tool_count(body) {
            0 => {
                MockResponse::tool_call("u", "use_skill", &json!({"name": "changelog"}).to_string())
            }
            1 => MockResponse::tool_call(
                "c",
                "run_command",
                &json!({ "command": format!("sh {script}") }).to_string(),
            ),
            2 => spawn("documentation", "update the changelog"),
            3 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("done"),
        }
    });
    let run = sb
        .exec(
            &mock,
            &["--json", "--approval", "auto", "write release notes"],
        )
        .await;
    run.assert_ok();
    let reqs = mock.requests();
    let first = &reqs[0].body;
    let listed = use_skill_description(first);
    assert!(
        listed.contains("\n- changelog: Writes CHANGELOG entries"),
        "{listed}"
    );
    assert!(
        listed.contains("\n- commit-style: How this project"),
        "{listed}"
    );
    let prompt = system(first);
    assert!(
        !prompt.contains("BODY-MARKER") && !listed.contains("BODY-MARKER"),
        "the body waits until it is used"
    );
    assert!(offered(first).contains(&"use_skill".to_string()));
    let size = serde_json::to_string(first).unwrap().len();
    println!("copilot's first request with two skills: {size} B");
    assert!(
        size <= 8 * 1024,
        "the first request with two skills: {size} B"
    );

    let loaded = tool_messages(&reqs[1].body)
        .into_iter()
        .find(|(id, _)| id == "u")
        .unwrap()
        .1;
    assert!(loaded.contains("BODY-MARKER-CHANGELOG"), "{loaded}");
    assert!(loaded.contains("scripts/count.sh"), "{loaded}");

    assert_eq!(
        sb.read("entry-count.txt").trim(),
        "2",
        "the script ran in the workspace"
    );
    assert!(
        !sb.home.path().join("skill-escaped.txt").exists(),
        "the script ran in the sandbox"
    );
    let worker = reqs
        .iter()
        .find(|r| is_worker(&r.body))
        .expect("a worker ran");
    assert!(offered(&worker.body).contains(&"use_skill".to_string()));
    assert!(use_skill_description(&worker.body).contains("- changelog:"));
}

#[tokio::test(flavor = "multi_thread")]
async fn without_skills_no_tool_and_no_section_is_added() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.push_all([MockResponse::text("hi")]);
    sb.exec(&mock, &["hi"]).await.assert_ok();
    let first = &mock.requests()[0].body;
    assert!(!offered(first).contains(&"use_skill".to_string()));
    assert!(!system(first).contains("# Skills"));
}

/// However many skills, with however long descriptions, every persona's first request
/// stays within 8 KB on both wires: a few are listed, clipped, the rest counted.
#[tokio::test(flavor = "multi_thread")]
async fn many_long_skills_keep_every_personas_first_request_within_8_kb() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    for i in 0..12 {
        let long = "Does a great many careful things for this project, ".repeat(6);
        sb.write(
            &format!(".claude/skills/skill-with-a-long-name-{i:02}/SKILL.md"),
            &format!("---\nname: skill-with-a-long-name-{i:02}\ndescription: {long}\n---\nbody\n"),
        );
    }
    let personas = [
        "copilot",
        "architect",
        "implementer",
        "tester",
        "documentation",
    ];
    let mut runs = Vec::new();
    for role in personas {
        // A `-codex` model gets apply_patch, freeform on Responses.
        for model in ["gpt-4.1", "gpt-5-codex"] {
            for wire in ["chat", "responses"] {
                mock.push_all([MockResponse::text("hi")]);
                let args = ["--role", role, "--model", model, "--wire-api", wire, "hi"];
                sb.exec(&mock, &args).await.assert_ok();
                runs.push(format!("{role} {model} {wire}"));
            }
        }
    }
    let reqs = mock.requests();
    assert_eq!(reqs.len(), runs.len());
    for (run, req) in runs.iter().zip(&reqs) {
        let size = serde_json::to_string(&req.body).unwrap().len();
        println!("{run}: {size} B");
        assert!(size <= 8 * 1024, "{run}: {size} B");
    }
    let chat = &reqs[0].body;
    let listed = use_skill_description(chat);
    assert!(
        listed.contains("more: call with no name to list all"),
        "{listed}"
    );
}
