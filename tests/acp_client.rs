//! squad as an ACP client (issue 53 groundwork), against real agents: `squad acp` itself
//! as a child process on the mock model, and small shell commands for the faults.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use ::squad::acp_client::{
    AcpClient, AgentCommand, AgentUpdate, ClientError, ClientOptions, Decision, PermissionAsk,
    StopReason,
};
use common::*;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// `squad acp --approval ask` in the sandbox, on the mock.
fn squad_acp(sb: &Sandbox, mock: &MockServer) -> AgentCommand {
    let cmd = sb.command(Some(mock));
    let std = cmd.as_std();
    AgentCommand {
        command: std.get_program().to_string_lossy().into_owned(),
        args: vec!["acp".into(), "--approval".into(), "ask".into()],
        env: std
            .get_envs()
            .filter_map(|(k, v)| Some((k.to_string_lossy().into(), v?.to_string_lossy().into())))
            .collect(),
        cwd: None,
    }
}

/// Options whose permission answers are `decision`, each question kept.
fn answering(decision: Decision) -> (ClientOptions, Arc<Mutex<Vec<PermissionAsk>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let kept = asked.clone();
    let options = ClientOptions::new(Arc::new(move |ask| {
        kept.lock().unwrap().push(ask);
        Box::pin(async move { decision })
    }));
    (options, asked)
}

fn shell(script: &str) -> AgentCommand {
    AgentCommand {
        command: "sh".into(),
        args: vec!["-c".into(), script.into()],
        ..AgentCommand::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn squad_acp_edits_a_file_in_the_folder_after_the_permission_callback() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("b.txt", "old\n");
    mock.push_all([
        MockResponse::tool_call(
            "w1",
            "write_file",
            &json!({"path": "b.txt", "content": "new\n"}).to_string(),
        ),
        MockResponse::text("done"),
    ]);
    let (options, asked) = answering(Decision::AllowOnce);
    let mut agent = AcpClient::start(&squad_acp(&sb, &mock), sb.ws(), options)
        .await
        .unwrap();
    let stop = agent.prompt("make b.txt new").await.unwrap();
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(sb.read("b.txt"), "new\n");
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].tool_call_id, "w1");
    assert!(
        asked[0].offered.contains(&"allow_once".to_string()),
        "{asked:?}"
    );
    let mut updates = Vec::new();
    while let Ok(u) = agent.updates().try_recv() {
        updates.push(u);
    }
    assert!(
        updates
            .iter()
            .any(|u| matches!(u, AgentUpdate::ToolCall { id, .. } if id == "w1")),
        "{updates:?}"
    );
    let said: String = updates
        .iter()
        .filter_map(|u| match u {
            AgentUpdate::Message(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert!(said.contains("done"), "{updates:?}");
    agent.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rejected_edit_leaves_the_file() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("b.txt", "old\n");
    mock.push_all([
        MockResponse::tool_call(
            "w1",
            "write_file",
            &json!({"path": "b.txt", "content": "new\n"}).to_string(),
        ),
        MockResponse::text("left it"),
    ]);
    let (options, asked) = answering(Decision::RejectOnce);
    let agent = AcpClient::start(&squad_acp(&sb, &mock), sb.ws(), options)
        .await
        .unwrap();
    agent.prompt("make b.txt new").await.unwrap();
    assert_eq!(sb.read("b.txt"), "old\n");
    assert_eq!(asked.lock().unwrap().len(), 1);
    agent.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_agent_killed_mid_prompt_is_a_crash() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.push(MockResponse::text("late").with_delay(Duration::from_secs(20)));
    let (options, _) = answering(Decision::AllowOnce);
    let agent = AcpClient::start(&squad_acp(&sb, &mock), sb.ws(), options)
        .await
        .unwrap();
    let pid = agent.pid().unwrap();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        // SAFETY: a plain signal to the child this test started.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    });
    let err = agent.prompt("wait").await.unwrap_err();
    assert!(
        matches!(
            err,
            ClientError::Crashed {
                during: "session/prompt",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("signal: 9"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn faults_are_typed_with_the_stderr_tail() {
    let dir = tempfile::tempdir().unwrap();
    let (options, _) = answering(Decision::AllowOnce);
    let missing = AgentCommand {
        command: "no-such-agent-here".into(),
        ..AgentCommand::default()
    };
    let err = AcpClient::start(&missing, dir.path(), options.clone())
        .await
        .err()
        .unwrap();
    assert!(matches!(err, ClientError::NotFound { .. }), "{err}");

    let mut quick = options.clone();
    quick.timeout = Duration::from_millis(800);
    let hang = shell("echo starting up >&2; sleep 5");
    let err = AcpClient::start(&hang, dir.path(), quick)
        .await
        .err()
        .unwrap();
    assert!(
        matches!(
            err,
            ClientError::Timeout {
                during: "initialize",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(err.stderr().map(str::trim), Some("starting up"));

    let chatty = shell("echo Agent ready on stdio; sleep 5");
    let err = AcpClient::start(&chatty, dir.path(), options.clone())
        .await
        .err()
        .unwrap();
    match &err {
        ClientError::Protocol { line, .. } => assert_eq!(line, "Agent ready on stdio"),
        other => panic!("{other}"),
    }

    let dies = shell("echo 'config missing' >&2; exit 3");
    let err = AcpClient::start(&dies, dir.path(), options)
        .await
        .err()
        .unwrap();
    assert!(matches!(err, ClientError::Crashed { .. }), "{err}");
    assert!(err.to_string().contains("config missing"), "{err}");
}
