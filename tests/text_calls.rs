//! Tool calls written as text (a stock chat template on a small local model): a reply that is
//! nothing but a well-formed call of an offered tool runs as that call, through the real
//! `squad exec` against the mock; a reply that only mentions a tool stays the answer.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

const ARGS: &str = r#"{"path": "out.txt", "content": "made\n"}"#;

#[tokio::test(flavor = "multi_thread")]
async fn each_text_call_format_runs_as_a_call_and_the_model_is_told() {
    let formats = [
        format!("<tool_call>\n{{\"name\": \"write_file\", \"arguments\": {ARGS}}}\n</tool_call>"),
        format!("```json\n{{\"name\": \"write_file\", \"arguments\": {ARGS}}}\n```"),
        format!("{{\"name\": \"write_file\", \"parameters\": {ARGS}}}"),
        format!("<|python_tag|>{{\"name\": \"write_file\", \"parameters\": {ARGS}}}"),
        format!("[TOOL_CALLS][{{\"name\": \"write_file\", \"arguments\": {ARGS}}}]"),
        format!("[TOOL_CALLS]write_file[ARGS]{ARGS}"),
    ];
    for text in formats {
        let mock = MockServer::start().await;
        let sb = Sandbox::new();
        mock.push(MockResponse::text(&text));
        mock.push(MockResponse::text("Wrote out.txt."));
        let run = sb
            .exec(&mock, &["--approval", "auto", "write out.txt"])
            .await;
        run.assert_ok();
        assert_eq!(sb.read("out.txt"), "made\n", "{text}");
        assert!(run.stdout.contains("Wrote out.txt."), "{}", run.stdout);
        let reqs = mock.requests();
        assert_eq!(reqs.len(), 2, "{text}");
        let results = tool_messages(&reqs[1].body);
        assert_eq!(results.len(), 1, "{text}");
        assert!(
            results[0]
                .1
                .starts_with("[squad] Your reply was this tool call written as text"),
            "{}",
            results[0].1
        );
        // Its history holds the call once, as a call.
        let said = transcript(&reqs[1].body);
        assert!(
            said.iter().all(|(_, t)| !t.contains("<tool_call>")),
            "{said:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_text_that_mentions_a_tool_or_names_one_not_offered_stays_text() {
    for text in [
        "I would call write_file with path out.txt.",
        "Like this:\n```json\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"out.txt\"}}\n```",
        "{\"name\": \"format_disk\", \"arguments\": {}}",
    ] {
        let mock = MockServer::start().await;
        let sb = Sandbox::new();
        mock.push(MockResponse::text(text));
        let run = sb.exec(&mock, &["--approval", "auto", "how?"]).await;
        run.assert_ok();
        assert_eq!(mock.requests().len(), 1, "{text}");
        assert!(!sb.ws().join("out.txt").exists());
        assert!(
            run.stdout.contains(text.lines().next().unwrap()),
            "{}",
            run.stdout
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_text_call_with_bad_arguments_gets_the_same_error_as_any_call() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.push(MockResponse::text(
        "<tool_call>{\"name\": \"write_file\", \"arguments\": {\"path\": \"out.txt\"}}</tool_call>",
    ));
    mock.push(MockResponse::text("I could not write it."));
    let run = sb.exec(&mock, &["--approval", "auto", "write"]).await;
    run.assert_ok();
    let results = tool_messages(&mock.requests()[1].body);
    assert!(results[0].1.contains("content"), "{}", results[0].1);
    assert!(!sb.ws().join("out.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn with_assist_off_a_text_call_stays_text() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[models.\"gpt-4.1\"]\nassist = \"off\"\n");
    let text =
        format!("<tool_call>{{\"name\": \"write_file\", \"arguments\": {ARGS}}}</tool_call>");
    mock.push(MockResponse::text(&text));
    let run = sb.exec(&mock, &["--approval", "auto", "write"]).await;
    run.assert_ok();
    assert_eq!(mock.requests().len(), 1);
    assert!(!sb.ws().join("out.txt").exists());
}
