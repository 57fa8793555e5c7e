//! A local server found by itself: with no API key and no base URL, or with `--oss`, the
//! real `squad` asks the ports named in `SQUAD_LOCAL_PORTS` (the usual ones by default) on
//! 127.0.0.1 and uses the first that lists a model. The mock server plays the local one.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use std::time::{Duration, Instant};

/// A port nothing listens on.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn exec(sb: &Sandbox, ports: &str, extra_env: &[(&str, &str)], args: &[&str]) -> Run {
    let mut cmd = sb.command(None);
    cmd.env("SQUAD_LOCAL_PORTS", ports);
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.arg("exec")
        .args(args)
        .stdin(std::process::Stdio::null());
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("squad finished")
        .unwrap();
    Run::from(out)
}

#[tokio::test(flavor = "multi_thread")]
async fn with_no_key_and_no_base_url_the_local_server_that_answers_is_used() {
    let mock = MockServer::start().await;
    mock.set_models(["qwen-local"]);
    mock.push(MockResponse::text("hello from the local model"));
    let sb = Sandbox::new();
    let port = mock.addr().port();
    let ports = format!("{},{port}", closed_port());
    let run = exec(&sb, &ports, &[], &["say hi"]).await;
    run.assert_ok();
    assert!(run.stdout.contains("hello from the local model"));
    assert!(
        run.stderr.contains(&format!(
            "squad: using the local OpenAI-compatible server at http://127.0.0.1:{port}/v1 (model qwen-local)"
        )),
        "{}",
        run.stderr
    );
    let body = &mock.requests()[0].body;
    assert_eq!(body["model"], "qwen-local", "the model it serves");
    // `squad doctor` shows what it found.
    let mut cmd = sb.command(None);
    cmd.env("SQUAD_LOCAL_PORTS", &ports).arg("doctor");
    let doctor = Run::from(cmd.output().await.unwrap());
    assert!(
        doctor
            .stdout
            .contains("using the local OpenAI-compatible server at"),
        "{}",
        doctor.stdout
    );
    // The found server's model is every agent's, and not said to come from --model.
    assert!(
        doctor.stdout.contains("✓ model (every agent) = ")
            && !doctor.stdout.contains("--model / SQUAD_MODEL"),
        "{}",
        doctor.stdout
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn with_none_answering_the_missing_key_is_said_and_nothing_is_sent() {
    let sb = Sandbox::new();
    let run = exec(&sb, &closed_port().to_string(), &[], &["say hi"]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("no API key for"), "{}", run.stderr);
    assert!(
        run.stderr.contains("which squad finds by itself"),
        "{}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_port_that_never_answers_does_not_hold_up_one_that_does() {
    // Accepts connections and never answers.
    let slow = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let slow_port = slow.local_addr().unwrap().port();
    let held = tokio::spawn(async move {
        let mut kept = Vec::new();
        while let Ok((sock, _)) = slow.accept().await {
            kept.push(sock);
        }
    });
    let mock = MockServer::start().await;
    mock.push(MockResponse::text("answered"));
    let sb = Sandbox::new();
    let started = Instant::now();
    let run = exec(
        &sb,
        &format!("{slow_port},{}", mock.addr().port()),
        &[],
        &["say hi"],
    )
    .await;
    run.assert_ok();
    assert!(run.stdout.contains("answered"));
    assert!(started.elapsed() < Duration::from_secs(20));
    // Only the slow one is there: it times out and counts as none.
    let run = exec(&sb, &slow_port.to_string(), &[], &["say hi"]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    held.abort();
}

#[tokio::test(flavor = "multi_thread")]
async fn oss_uses_the_local_server_even_with_a_key_and_says_when_there_is_none() {
    let mock = MockServer::start().await;
    mock.push(MockResponse::text("local answer"));
    let sb = Sandbox::new();
    let key = [("OPENAI_API_KEY", "sk-test-not-used")];
    let run = exec(
        &sb,
        &mock.addr().port().to_string(),
        &key,
        &["--oss", "say hi"],
    )
    .await;
    run.assert_ok();
    assert!(run.stdout.contains("local answer"));
    assert!(
        mock.requests()[0].header("authorization").is_none(),
        "the key is not sent to the local server"
    );
    let run = exec(&sb, &closed_port().to_string(), &key, &["--oss", "say hi"]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("--oss: no local server answered on 127.0.0.1 ports"),
        "{}",
        run.stderr
    );
}

/// In the TUI the server found is said once on screen as a note, not as an error, and
/// the session talks to it.
#[tokio::test(flavor = "multi_thread")]
async fn the_tui_says_which_local_server_it_uses_as_a_note() {
    let mock = MockServer::start().await;
    mock.set_models(["qwen-local"]);
    mock.push(MockResponse::text("hello from the local model"));
    let sb = Sandbox::new();
    let port = mock.addr().port().to_string();
    let mut tui = common::pty::Tui::spawn_with_env(
        &sb,
        "",
        &[],
        &[("SQUAD_LOCAL_PORTS", port.as_str())],
        30,
        120,
    );
    let screen = tui.wait_text("using the local OpenAI-compatible").await;
    let line = screen
        .lines()
        .find(|l| l.contains("using the local OpenAI-compatible"))
        .unwrap();
    assert!(!line.contains("error"), "said as an error: {screen}");
    assert!(line.contains('·'), "a note's mark: {screen}");
    tui.type_text("say hi").await;
    tui.enter().await;
    tui.wait_text("hello from the local model").await;
    assert_eq!(mock.requests()[0].body["model"], "qwen-local");
    tui.send(b"\x03\x03");
    tui.wait_exit(Duration::from_secs(10)).await;
}
