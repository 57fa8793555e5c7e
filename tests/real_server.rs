//! Opt-in: squad against a real OpenAI-compatible server and a real (small) model.
//!
//! Runs only when `SQUAD_TEST_BASE_URL` (with `/v1`) and `SQUAD_TEST_MODEL` are set, e.g.
//! with llama.cpp's server from `../shared/real-llm/` (see README "Local models"):
//!
//! ```sh
//! eval "$(MODEL=1.5b EXTRA_ARGS='--temp 0' ../shared/real-llm/serve.sh)"
//! SQUAD_TEST_BASE_URL=$BASE_URL SQUAD_TEST_MODEL=$MODEL_ID \
//!     cargo test --test real_server -- --nocapture
//! ```
//!
//! `SQUAD_TEST_WIRE_API=responses` runs the scenarios on the Responses wire (llama.cpp
//! serves `/v1/responses`); `SQUAD_TEST_ONLY=read_file` runs the scenarios whose name
//! contains that text.
//!
//! Otherwise it prints one line and passes, so the default `cargo test` does no work here.
//! The scenarios run one after the other (a CPU server is slow enough alone) and each
//! prints its result and time; the test fails at the end if any failed.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::Value;
use std::time::{Duration, Instant};

/// A CPU server reads ~90 tokens a second: a scenario may take minutes.
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(900);

struct Server {
    base_url: String,
    model: String,
}

fn server() -> Option<Server> {
    let base_url = std::env::var("SQUAD_TEST_BASE_URL")
        .ok()
        .filter(|s| !s.is_empty())?;
    let model = std::env::var("SQUAD_TEST_MODEL")
        .ok()
        .filter(|s| !s.is_empty())?;
    Some(Server { base_url, model })
}

/// Roles small models can follow: few tools, plain orders.
const ROLES: &[(&str, &str)] = &[
    (
        "reader",
        r#"name = "reader"
description = "reads files and reports"
tools = ["read_file"]
system_prompt = """
You answer questions about files in the workspace. Always read a file with the read_file
tool before you answer about it. Answer in one short sentence.
"""
"#,
    ),
    (
        "fixer",
        r#"name = "fixer"
description = "makes small edits"
tools = ["read_file", "edit_file"]
system_prompt = """
You fix small mistakes in files. First read the file with read_file, then change it with
edit_file (old_text must be copied exactly from the file). When the file is fixed, say done.
"""
"#,
    ),
    (
        "lead",
        r#"name = "lead"
description = "delegates"
tools = ["spawn_agent", "wait_for_agents"]
enabled_agents = ["scout"]
system_prompt = """
You never read files yourself. For any question about a file, call spawn_agent with
role_name "scout" and a task_prompt that names the file and the question. Then call
wait_for_agents. Then answer the user with what the worker found.
"""
"#,
    ),
    (
        "scout",
        r#"name = "scout"
description = "reads one file for its supervisor"
tools = ["read_file", "return_results"]
system_prompt = """
You are given one task about one file. Read the file with read_file. Then call
return_results with status "success", a summary that answers the task, artifacts [] and
known_issues [].
"""
"#,
    ),
];

struct Outcome {
    name: &'static str,
    passed: bool,
    took: Duration,
    detail: String,
}

fn sandbox(server: &Server, extra_config: &str) -> Sandbox {
    let sb = Sandbox::new();
    let wire = std::env::var("SQUAD_TEST_WIRE_API").unwrap_or_else(|_| "chat".into());
    sb.workspace_config(&format!(
        "[provider]\napi_key_env = \"\"\nrequest_timeout_s = 900\nidle_timeout_s = 600\n\
         wire_api = \"{wire}\"\n{extra_config}"
    ));
    for (name, toml) in ROLES {
        sb.write(&format!(".squad/roles/{name}.toml"), toml);
    }
    let _ = &server.model;
    sb
}

async fn exec(server: &Server, sb: &Sandbox, args: &[&str]) -> (Run, Duration) {
    let mut cmd = sb.command(None);
    cmd.env("OPENAI_BASE_URL", &server.base_url)
        .env("SQUAD_MODEL", &server.model)
        .arg("exec")
        .args(["--json", "--approval", "auto"])
        .args(args)
        .stdin(std::process::Stdio::null());
    let started = Instant::now();
    let out = tokio::time::timeout(SCENARIO_TIMEOUT, cmd.output())
        .await
        .expect("scenario timed out")
        .unwrap();
    (Run::from(out), started.elapsed())
}

fn summary_of(events: &[Value]) -> String {
    let s = of_type(events, "summary");
    match s.first() {
        Some(s) => format!(
            "{} model calls, {} tool calls, {} prompt + {} completion tokens",
            s["totals"]["model_calls"],
            s["totals"]["tool_calls"],
            s["totals"]["prompt_tokens"],
            s["totals"]["completion_tokens"]
        ),
        None => "no summary".into(),
    }
}

fn final_answer(events: &[Value]) -> String {
    items_of_kind(events, "assistant")
        .iter()
        .rev()
        .find_map(|i| i["text"].as_str().filter(|t| !t.trim().is_empty()))
        .unwrap_or("")
        .to_string()
}

async fn read_file_loop(server: &Server) -> Outcome {
    let sb = sandbox(server, "");
    sb.write(
        "notes.txt",
        "Meeting notes.\nThe secret word is PELICAN.\nEnd.\n",
    );
    let (run, took) = exec(
        server,
        &sb,
        &[
            "--role",
            "reader",
            "Use read_file to read notes.txt, then tell me the secret word written in it.",
        ],
    )
    .await;
    let events = run.events();
    let read = items_of_kind(&events, "tool_result").iter().any(|r| {
        r["name"] == "read_file" && r["output"].as_str().unwrap_or("").contains("PELICAN")
    });
    let answer = final_answer(&events);
    Outcome {
        name: "read_file loop",
        passed: run.code == 0 && read && answer.to_uppercase().contains("PELICAN"),
        took,
        detail: format!("read={read} answer={answer:?}; {}", summary_of(&events)),
    }
}

async fn edit_changes_a_file(server: &Server) -> Outcome {
    let sb = sandbox(server, "");
    sb.write("greet.txt", "Hello wrold!\n");
    let (run, took) = exec(
        server,
        &sb,
        &[
            "--role",
            "fixer",
            "greet.txt has a typo: 'wrold' should be 'world'. Fix it with edit_file.",
        ],
    )
    .await;
    let events = run.events();
    let content = sb.read("greet.txt");
    Outcome {
        name: "edit changes a file",
        passed: run.code == 0 && content == "Hello world!\n",
        took,
        detail: format!("greet.txt now {content:?}; {}", summary_of(&events)),
    }
}

async fn spawn_and_return(server: &Server) -> Outcome {
    let sb = sandbox(server, "[verify]\nenabled = false\n");
    sb.write("version.txt", "release 4.7.1\n");
    let (run, took) = exec(
        server,
        &sb,
        &[
            "--role",
            "lead",
            "Call spawn_agent with role_name scout and task_prompt 'Read version.txt and \
             return the release it names', then wait_for_agents, then tell me the release.",
        ],
    )
    .await;
    let events = run.events();
    let spawned = of_type(&events, "agent_spawned").len().saturating_sub(1);
    let returned: Vec<String> = of_type(&events, "result_returned")
        .iter()
        .map(|e| e["result"]["summary"].as_str().unwrap_or("").to_string())
        .collect();
    let answer = final_answer(&events);
    Outcome {
        name: "spawn + return_results",
        passed: run.code == 0 && spawned >= 1 && !returned.is_empty(),
        took,
        detail: format!(
            "workers={spawned} returned={returned:?} answer={answer:?}; {}",
            summary_of(&events)
        ),
    }
}

async fn forced_compaction(server: &Server) -> Outcome {
    // A 2,000-token window for a model that has 32k: compaction at 1,600. One question per
    // run, each resuming the last, as a user carries on a session.
    let sb = sandbox(
        server,
        &format!("[context_windows]\n\"{}\" = 2000\n", server.model),
    );
    let files = [
        ("a", "APPLE"),
        ("b", "BANANA"),
        ("c", "CHERRY"),
        ("d", "DATE"),
    ];
    for (name, word) in files {
        // ~1,200 bytes (~350 tokens): under the cut for tool output in a 2k window.
        let filler: String = (1..=40)
            .map(|i| format!("{name}{i:02}: the quick brown fox\n"))
            .collect();
        sb.write(
            &format!("{name}.txt"),
            &format!("{filler}The code word is {word}.\n"),
        );
    }
    let started = Instant::now();
    let mut events = Vec::new();
    let mut codes = Vec::new();
    let mut answers = Vec::new();
    for (i, (name, _)) in files.iter().enumerate() {
        let question = format!("Use read_file to read {name}.txt and tell me its code word.");
        let mut args = vec!["--role", "reader"];
        if i > 0 {
            args.extend(["--resume", "last"]);
        }
        args.push(&question);
        let (run, _) = exec(server, &sb, &args).await;
        codes.push(run.code);
        let mut e = run.events();
        answers.push(final_answer(&e));
        events.append(&mut e);
    }
    let compacted: Vec<String> = of_type(&events, "compacted")
        .iter()
        .map(|c| {
            format!(
                "{}→{} ({} items)",
                c["tokens_before"], c["tokens_after"], c["replaced"]
            )
        })
        .collect();
    let errors: Vec<&str> = of_type(&events, "error")
        .iter()
        .filter_map(|e| e["message"].as_str())
        .collect();
    Outcome {
        name: "forced compaction (2k window)",
        passed: codes.iter().all(|c| *c == 0) && !compacted.is_empty(),
        took: started.elapsed(),
        detail: format!(
            "exit codes {codes:?} compacted={compacted:?} errors={errors:?} answers={answers:?}"
        ),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn real_server_suite() {
    let Some(server) = server() else {
        eprintln!("real_server: skipped (set SQUAD_TEST_BASE_URL and SQUAD_TEST_MODEL to run it)");
        return;
    };
    eprintln!("real_server: {} with {}", server.base_url, server.model);
    let only = std::env::var("SQUAD_TEST_ONLY").unwrap_or_default();
    let wanted = |name: &str| name.contains(only.as_str());
    let mut outcomes = Vec::new();
    if wanted("read_file loop") {
        outcomes.push(read_file_loop(&server).await);
    }
    if wanted("edit") {
        outcomes.push(edit_changes_a_file(&server).await);
    }
    if wanted("spawn") {
        outcomes.push(spawn_and_return(&server).await);
    }
    if wanted("compaction") {
        outcomes.push(forced_compaction(&server).await);
    }
    for o in &outcomes {
        eprintln!(
            "  {} {:<30} {:>6.1} s  {}",
            if o.passed { "PASS" } else { "FAIL" },
            o.name,
            o.took.as_secs_f64(),
            o.detail
        );
    }
    let failed: Vec<&str> = outcomes
        .iter()
        .filter(|o| !o.passed)
        .map(|o| o.name)
        .collect();
    assert!(
        failed.is_empty(),
        "failed against the real server: {failed:?}"
    );
}
