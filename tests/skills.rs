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
        // Chat nests the function; Responses has its fields at the top.
        .map(|t| t.get("function").unwrap_or(t))
        .find(|t| t["name"] == "use_skill")
        .and_then(|t| t["description"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// The bytes of `use_skill`'s description that are the user's skills (the names and
/// descriptions after its first line): the 8 KB goal counts squad's own text only.
fn skills_text(body: &Value) -> usize {
    let listed = use_skill_description(body);
    listed.find('\n').map_or(0, |i| listed.len() - i)
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
    let size = serde_json::to_string(first).unwrap().len() - skills_text(first);
    println!("copilot's first request with two skills, less their text: {size} B");
    assert!(size <= 8 * 1024, "squad's own text: {size} B");

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
    let size = serde_json::to_string(first).unwrap().len();
    println!("copilot's first request without skills: {size} B");
}

/// However many skills, with however long descriptions, squad's own text in every
/// persona's first request stays within 8 KB on both wires; the skills' text stays within
/// its share of the context window (2 % of 32,768 tokens here): the descriptions of the
/// first found (none used yet) whole, the rest by name alone, on a line that says so.
#[tokio::test(flavor = "multi_thread")]
async fn many_long_skills_keep_squads_own_first_request_within_8_kb_and_theirs_within_budget() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[context_windows]\n\"gpt-4.1\" = 32768\n\"gpt-5-codex\" = 32768\n");
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
        let listed = use_skill_description(&req.body);
        let theirs = listed.find('\n').map_or(0, |i| listed.len() - i);
        let size = serde_json::to_string(&req.body).unwrap().len() - theirs;
        println!("{run}: {size} B of squad's, {theirs} B of the skills'");
        assert!(size <= 8 * 1024, "{run}: {size} B");
        // 2 % of 32,768 tokens at 3.5 bytes a token, and room for the names.
        assert!(theirs <= 2_293 + 400, "{run}: {theirs} B");
    }
    let listed = use_skill_description(&reqs[0].body);
    let whole = "Does a great many careful things for this project, ".repeat(6);
    assert!(
        listed.contains(&format!("\n- skill-with-a-long-name-00: {}", whole.trim())),
        "{listed}"
    );
    assert!(
        listed.contains("more, by name alone (the least recently used"),
        "{listed}"
    );
    assert!(listed.contains("skill-with-a-long-name-11"), "{listed}");
}

/// A skill's description is how a model decides to load it: a 71-character one reaches
/// the model whole (it was cut to 60 and an ellipsis).
#[tokio::test(flavor = "multi_thread")]
async fn a_skills_description_reaches_the_model_whole() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let description = "Formats release notes the way this project's maintainers want them, too";
    assert_eq!(description.chars().count(), 71);
    sb.write(
        ".agents/skills/notes/SKILL.md",
        &format!("---\nname: notes\ndescription: {description}\n---\nbody\n"),
    );
    mock.push(MockResponse::text("hi"));
    sb.exec(&mock, &["hi"]).await.assert_ok();
    let listed = use_skill_description(&mock.requests()[0].body);
    assert!(
        listed.ends_with(&format!("\n- notes: {description}")),
        "{listed}"
    );
}
