//! Agent roles (issue 53, part 1's config side): the built-in roles for other agents over
//! ACP are listed by `squad roles` and `squad doctor` with whether their command is on
//! `PATH`, and how to install it when not. Run through the real binary with a `PATH`
//! holding a fake `opencode`, and with one that holds nothing.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// `squad ARGS…` in `sb` with `PATH` set to `path` only.
async fn run_with_path(sb: &Sandbox, path: &Path, args: &[&str]) -> Run {
    let mut cmd = sb.command(None);
    cmd.env("PATH", path).args(args);
    Run::from(run_with_timeout(cmd).await)
}

fn line<'a>(out: &'a str, start: &str) -> &'a str {
    out.lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line starting {start:?} in:\n{out}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn roles_and_doctor_say_which_agents_are_installed() {
    let sb = Sandbox::new();
    let with = sb.tmp.path().join("bin-with");
    let without = sb.tmp.path().join("bin-without");
    std::fs::create_dir_all(&with).unwrap();
    std::fs::create_dir_all(&without).unwrap();
    let opencode = with.join("opencode");
    std::fs::write(&opencode, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&opencode, std::fs::Permissions::from_mode(0o755)).unwrap();

    let roles = run_with_path(&sb, &with, &["roles"]).await;
    roles.assert_ok();
    let oc = line(&roles.stdout, "opencode ");
    assert!(
        oc.contains(&format!(
            "agent: `opencode acp`, installed ({})",
            opencode.display()
        )),
        "{oc}"
    );
    let codex = line(&roles.stdout, "codex ");
    assert!(
        codex.contains(
            "agent: `codex-acp`, not installed — npm install -g @zed-industries/codex-acp"
        ),
        "{codex}"
    );
    // A native role says nothing of an agent.
    assert!(!line(&roles.stdout, "implementer ").contains("agent:"));

    let roles = run_with_path(&sb, &without, &["roles"]).await;
    roles.assert_ok();
    let oc = line(&roles.stdout, "opencode ");
    assert!(
        oc.contains("agent: `opencode acp`, not installed — npm install -g opencode-ai"),
        "{oc}"
    );

    let doctor = run_with_path(&sb, &with, &["doctor", "--demo"]).await;
    let oc = line(&doctor.stdout, "✓ agent role opencode:");
    assert!(oc.contains(&opencode.display().to_string()), "{oc}");
    let gemini = line(&doctor.stdout, "· agent role gemini:");
    assert!(
        gemini.ends_with("`gemini --acp` not installed — npm install -g @google/gemini-cli"),
        "{gemini}"
    );

    let doctor = run_with_path(&sb, &without, &["doctor", "--demo"]).await;
    let oc = line(&doctor.stdout, "· agent role opencode:");
    assert!(
        oc.ends_with("not installed — npm install -g opencode-ai"),
        "{oc}"
    );
    assert!(!doctor.stdout.contains("✓ agent role"), "{}", doctor.stdout);
}

/// An agent role is never run as a native agent with no instructions: not as the persona
/// (`--role`, refused with the reason), and as a worker only as its agent: with the agent
/// not installed, the worker fails with the reason and the install line, no native worker
/// asks the model, and the supervisor reads why.
#[tokio::test(flavor = "multi_thread")]
async fn an_agent_role_runs_as_its_agent_never_as_a_native_agent() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let run = sb.exec(&mock, &["--role", "opencode", "go"]).await;
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "role `opencode` is another agent (`opencode`); squad runs agent roles only as workers"
        ),
        "{}",
        run.stderr
    );
    assert!(mock.requests().is_empty(), "no model call was made");

    sb.write(
        ".squad/roles/lead.toml",
        "name = \"lead\"\nsystem_prompt = \"You lead.\"\nenabled_agents = [\"opencode\"]\n",
    );
    mock.set_responder(|body| match tool_count(body) {
        0 => spawn("opencode", "write x.txt"),
        1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
        _ => MockResponse::text("done"),
    });
    // A PATH with no `opencode` on it (git only, for the worker's worktree).
    let bin = sb.tmp.path().join("bin-git");
    std::fs::create_dir_all(&bin).unwrap();
    let git = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    std::os::unix::fs::symlink(git.trim(), bin.join("git")).unwrap();
    let mut cmd = sb.command(Some(&mock));
    cmd.env("PATH", &bin)
        .args(["exec", "--role", "lead", "--approval", "auto", "go"]);
    Run::from(run_with_timeout(cmd).await).assert_ok();
    let reqs = mock.requests();
    assert!(
        !reqs.iter().any(|r| is_worker(&r.body)),
        "no native worker ran"
    );
    let last = &reqs.last().unwrap().body;
    let told: Vec<String> = tool_messages(last).into_iter().map(|(_, t)| t).collect();
    assert!(
        told.iter().any(|t| t.contains(
            "agent `opencode acp` failed: `opencode` was not found (npm install -g opencode-ai)"
        )),
        "{told:#?}"
    );
}
