//! An agent worker on the screen (issue 53), the real binary in a pseudo-terminal: the
//! supervisor spawns a worker whose agent is a second squad over ACP; the agent's edit
//! comes up as the worker's own approval (titled with its role, showing the diff), the
//! user answers it with `y`, and the change is merged.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::pty::Tui;
use common::squad::squad_bin;
use common::*;
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_workers_edit_is_its_approval_on_screen_and_merges_once_approved() {
    let (lead, agent) = (MockServer::start().await, MockServer::start().await);
    let sb = Sandbox::new();
    git(sb.ws(), &["init", "-q"]);
    sb.write("b.txt", "old\n");
    git(sb.ws(), &["add", "-A"]);
    git(sb.ws(), &["commit", "-qm", "start"]);
    sb.write(
        ".squad/roles/lead.toml",
        "name = \"lead\"\nsystem_prompt = \"You lead.\"\nenabled_agents = [\"helper\"]\n",
    );
    sb.write(
        ".squad/roles/helper.toml",
        &format!(
            "name = \"helper\"\ndescription = \"squad over ACP\"\n\
             agent = {{ command = {:?}, args = [\"acp\", \"--approval\", \"ask\"], env = {{ OPENAI_BASE_URL = {:?}, SQUAD_DATA_DIR = {:?} }} }}\n",
            squad_bin().display().to_string(),
            agent.base_url(),
            sb.home.path().join("child-data").display().to_string(),
        ),
    );
    lead.set_responder(|body| match tool_count(body) {
        0 => spawn("helper", "make b.txt say new"),
        1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
        _ => MockResponse::text("The helper made b.txt say new."),
    });
    agent.push_all([
        MockResponse::tool_call(
            "w1",
            "write_file",
            &json!({"path": "b.txt", "content": "new\n"}).to_string(),
        ),
        MockResponse::text("b.txt says new."),
    ]);
    let tui = Tui::spawn(&sb, &lead.base_url(), &["--role", "lead"], 40, 120);
    tui.wait_text("lead").await;
    tui.type_text("make b.txt say new").await;
    tui.enter().await;
    // The spawn's own approval first.
    tui.wait_for("the spawn's approval", |s| s.contains("acp: "))
        .await;
    tokio::time::sleep(::squad::tui::APPROVAL_GUARD + Duration::from_millis(100)).await;
    tui.send(b"y");
    // Then the agent's edit, as the worker's approval, with its diff.
    let screen = tui
        .wait_for("the agent worker's approval", |s| {
            s.contains("approval · helper") && s.contains("+new")
        })
        .await;
    assert!(screen.contains("b.txt"), "{screen}");
    assert_eq!(
        sb.read("b.txt"),
        "old\n",
        "nothing written before the answer"
    );
    tokio::time::sleep(::squad::tui::APPROVAL_GUARD + Duration::from_millis(100)).await;
    tui.send(b"y");
    tui.wait_text("The helper made b.txt say new.").await;
    assert_eq!(sb.read("b.txt"), "new\n");
}

/// A mixed team on screen: a native `implementer` and an agent worker (a second squad
/// over ACP) side by side in the tree; the agent worker's conversation (its tool call, its
/// words) is readable like any worker's, with its result card and merge state.
#[tokio::test(flavor = "multi_thread")]
async fn a_mixed_team_shows_each_workers_conversation_result_and_merge() {
    let (lead, agent) = (MockServer::start().await, MockServer::start().await);
    let sb = Sandbox::new();
    git(sb.ws(), &["init", "-q"]);
    sb.write("b.txt", "old\n");
    git(sb.ws(), &["add", "-A"]);
    git(sb.ws(), &["commit", "-qm", "start"]);
    sb.write(
        ".squad/roles/lead.toml",
        "name = \"lead\"\nsystem_prompt = \"You lead.\"\nenabled_agents = [\"helper\", \"implementer\"]\n",
    );
    sb.write(
        ".squad/roles/helper.toml",
        &format!(
            "name = \"helper\"\ndescription = \"squad over ACP\"\n\
             agent = {{ command = {:?}, args = [\"acp\", \"--approval\", \"ask\"], env = {{ OPENAI_BASE_URL = {:?}, SQUAD_DATA_DIR = {:?} }} }}\n",
            squad_bin().display().to_string(),
            agent.base_url(),
            sb.home.path().join("child-data").display().to_string(),
        ),
    );
    lead.set_responder(|body| {
        if is_role(body, "implementer") {
            return match tool_count(body) {
                0 => MockResponse::tool_call(
                    "a",
                    "write_file",
                    &json!({"path": "a.txt", "content": "A\n"}).to_string(),
                ),
                _ => MockResponse::tool_call(
                    "r",
                    "return_results",
                    &json!({"result": {"status": "success", "summary": "NATIVE: a.txt holds A",
                        "artifacts": [{"file_path": "a.txt", "description": "A", "change_type": "created"}],
                        "known_issues": []}})
                    .to_string(),
                ),
            };
        }
        match tool_count(body) {
            // One after the other, so the tree's order is fixed: the agent worker first.
            0 => spawn("helper", "make b.txt say new"),
            1 => spawn("implementer", "write A to a.txt"),
            2 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("Both parts are in."),
        }
    });
    agent.push_all([
        MockResponse::tool_call(
            "w1",
            "write_file",
            &json!({"path": "b.txt", "content": "new\n"}).to_string(),
        ),
        MockResponse::text("ACP-WORKER: b.txt says new."),
    ]);
    let tui = Tui::spawn(
        &sb,
        &lead.base_url(),
        &["--role", "lead", "--approval", "auto"],
        40,
        140,
    );
    tui.wait_text("lead").await;
    tui.type_text("split the work").await;
    tui.enter().await;
    let screen = tui.wait_text("Both parts are in.").await;
    assert!(screen.contains("3 agents"), "{screen}");
    assert!(
        screen.contains("helper") && screen.contains("implement"),
        "{screen}"
    );
    assert_eq!(sb.read("a.txt"), "A\n");
    assert_eq!(sb.read("b.txt"), "new\n");
    // Select the agent worker (the first worker in the tree) and read its conversation.
    tui.send(b"\t");
    tokio::time::sleep(Duration::from_millis(100)).await;
    tui.send(b"j");
    tokio::time::sleep(Duration::from_millis(100)).await;
    tui.send(b"\r");
    let screen = tui.wait_text("ACP-WORKER: b.txt says new.").await;
    assert!(
        screen.contains("to helper"),
        "composer addresses it: {screen}"
    );
    assert!(
        screen.contains("edit write_file b.txt"),
        "its tool call: {screen}"
    );
    assert!(
        screen.contains("result · success"),
        "its result card: {screen}"
    );
    assert!(
        screen.contains("merged into the workspace: b.txt"),
        "its merge state: {screen}"
    );
}
