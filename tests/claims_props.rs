//! Proved, not sampled (issue 48, part 6): random rounds on the real `squad exec` binary
//! with the mock model server. Each round draws from its seed a git or a plain workspace,
//! `--approval auto` or `ask` (in exec nobody answers, so every file tool's write is
//! refused; commands run in the sandbox), one or two workers, each with random writes (new files, rewrites, line edits
//! that fail), commands that change or delete files, and a result whose claims are random
//! true and false `created`/`modified`/`deleted` ones; a worker whose result fails answers
//! its correction with the truth, or goes silent. An oracle knows what each worker really
//! changed. Every round: the verdict on every claim is the truth, a result is `unchecked`
//! exactly when nothing was changed or claimed, the changes a result does not list are
//! named, and (in a git workspace) no change reaches the workspace without a passed
//! verdict.
//!
//! `SQUAD_CLAIMS_ROUNDS=N` runs N rounds (200 by default), `SQUAD_SEED=S` replays round S.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Rounds played at once (each its own squad process, mock server and workspace).
const AT_ONCE: usize = 4;
/// The files each worker finds at its start: `w<i>_<name>`.
const START_FILES: [&str; 3] = ["a.txt", "b.txt", "c.txt"];

/// splitmix64: small, seeded, the same on every machine (as `src/test_rng.rs`).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }
}

/// One call of a worker's, as the model writes it.
#[derive(Clone, Debug)]
enum Act {
    /// `write_file` of the whole file.
    Write { path: String, content: String },
    /// `edit_file` whose old text is not in the file: fails, changes nothing.
    FailedEdit { path: String },
    /// `run_command` appending a line (makes the file if it is not there).
    Append { path: String, line: String },
    /// `run_command` removing the file.
    Remove { path: String },
}

#[derive(Clone, Debug)]
struct Worker {
    acts: Vec<Act>,
    /// Its first result's artifacts: (path, change type).
    claims: Vec<(String, &'static str)>,
    /// After a failed check: answer with the truth (else go silent, in words only).
    answers: bool,
    /// What it really changed: path → (change type, content at the end, `None`: gone).
    truth: BTreeMap<String, (&'static str, Option<String>)>,
}

#[derive(Debug)]
struct Plan {
    git: bool,
    ask: bool,
    workers: Vec<Worker>,
}

fn start_content(w: usize, name: &str) -> String {
    format!("start of w{w}_{name}\n")
}

/// Files as a worker's acts leave them, from the start: `None` for a file that is not
/// there. Only its own files: workers never touch each other's. Under `ask` nobody can
/// approve a file tool's write in exec, so it is refused; a command runs in the sandbox,
/// which needs no approval.
fn play_acts(w: usize, acts: &[Act], ask: bool) -> BTreeMap<String, Option<String>> {
    let mut files: BTreeMap<String, Option<String>> = START_FILES
        .iter()
        .map(|n| (format!("w{w}_{n}"), Some(start_content(w, n))))
        .collect();
    for act in acts {
        match act {
            Act::Write { .. } if ask => {}
            Act::Write { path, content } => {
                files.insert(path.clone(), Some(content.clone()));
            }
            Act::FailedEdit { .. } => {}
            Act::Append { path, line } => {
                let now = files.get(path).cloned().flatten().unwrap_or_default();
                files.insert(path.clone(), Some(format!("{now}{line}\n")));
            }
            Act::Remove { path } => {
                files.insert(path.clone(), None);
            }
        }
    }
    files
}

fn plan(seed: u64) -> Plan {
    let mut rng = Rng(seed);
    let git = !rng.one_in(3);
    let ask = rng.one_in(4);
    // Outside git two workers share the workspace: a command of one is measured by a walk
    // before and after it, which would also see the other's writes meanwhile; such rounds
    // give commands to a single worker only (see the report of issue 48).
    let n = 1 + rng.below(2);
    let commands = git || n == 1;
    let workers = (0..n)
        .map(|w| {
            let own = |name: &str| format!("w{w}_{name}");
            let mut acts = Vec::new();
            for k in 0..rng.below(4) {
                let existing = own(START_FILES[rng.below(START_FILES.len())]);
                let act = match rng.below(if commands { 5 } else { 3 }) {
                    0 => Act::Write {
                        path: existing,
                        content: format!("seed {seed} rewrite {k}\n"),
                    },
                    1 => Act::Write {
                        path: own(&format!("new{k}.txt")),
                        content: format!("seed {seed} new {k}\n"),
                    },
                    2 => Act::FailedEdit { path: existing },
                    3 => Act::Append {
                        path: if rng.one_in(3) {
                            own(&format!("cmd{k}.txt"))
                        } else {
                            existing
                        },
                        line: format!("seed {seed} line {k}"),
                    },
                    _ => Act::Remove { path: existing },
                };
                // A file removed earlier cannot be edited; keep plans simple and valid.
                let removed = |p: &str| {
                    acts.iter()
                        .any(|a| matches!(a, Act::Remove { path } if path == p))
                };
                match &act {
                    Act::Remove { path } | Act::FailedEdit { path } if removed(path) => {}
                    _ => acts.push(act),
                }
            }
            let end = play_acts(w, &acts, ask);
            let truth = truth_of(w, &end);
            let claims = claims(&mut rng, w, n, &truth);
            Worker {
                acts,
                claims,
                answers: !rng.one_in(3),
                truth,
            }
        })
        .collect();
    Plan { git, ask, workers }
}

/// What changed from the start to `end`, by path.
fn truth_of(
    w: usize,
    end: &BTreeMap<String, Option<String>>,
) -> BTreeMap<String, (&'static str, Option<String>)> {
    let start = play_acts(w, &[], false);
    end.iter()
        .filter_map(|(path, now)| {
            let before = start.get(path).cloned().flatten();
            let kind = match (&before, now) {
                (None, Some(_)) => "created",
                (Some(_), None) => "deleted",
                (Some(b), Some(n)) if b != n => "modified",
                _ => return None,
            };
            Some((path.clone(), (kind, now.clone())))
        })
        .collect()
}

/// Random true claims (some of the truth, a created file sometimes as `modified`) and
/// random false ones (an untouched file modified, a file that was there created, one that
/// is still there deleted, a file never made created, a sibling's file modified).
fn claims(
    rng: &mut Rng,
    w: usize,
    n: usize,
    truth: &BTreeMap<String, (&'static str, Option<String>)>,
) -> Vec<(String, &'static str)> {
    let mut out = Vec::new();
    for (path, (kind, _)) in truth {
        if !rng.one_in(4) {
            let kind = if *kind == "created" && rng.one_in(3) {
                "modified"
            } else {
                kind
            };
            out.push((path.clone(), kind));
        }
    }
    for _ in 0..rng.below(3) {
        let file = format!("w{w}_{}", START_FILES[rng.below(START_FILES.len())]);
        let claim = match rng.below(5) {
            0 => (file, "modified"),
            1 => (file, "created"),
            2 => (file, "deleted"),
            3 => (format!("w{w}_ghost.txt"), "created"),
            _ => (format!("w{}_a.txt", (w + 1) % n), "modified"),
        };
        if !out.contains(&claim) {
            out.push(claim);
        }
    }
    out
}

/// Whether claiming `path` as `kind` is true of `truth`.
fn is_true(
    truth: &BTreeMap<String, (&'static str, Option<String>)>,
    path: &str,
    kind: &str,
) -> bool {
    match (truth.get(path).map(|t| t.0), kind) {
        (Some(real), claimed) if real == claimed => true,
        // A file it made is a file it changed.
        (Some("created"), "modified") => true,
        _ => false,
    }
}

fn result_call(id: &str, claims: &[(String, &str)]) -> MockResponse {
    let artifacts: Vec<Value> = claims
        .iter()
        .map(|(p, c)| json!({"file_path": p, "description": "my change", "change_type": c}))
        .collect();
    MockResponse::tool_call(
        id,
        "return_results",
        &json!({"result": {"status": "success", "summary": "done", "artifacts": artifacts, "known_issues": []}})
            .to_string(),
    )
}

fn act_call(id: &str, act: &Act) -> MockResponse {
    let (name, args) = match act {
        Act::Write { path, content } => ("write_file", json!({"path": path, "content": content})),
        Act::FailedEdit { path } => (
            "edit_file",
            json!({"path": path, "old_text": "no such text anywhere", "new_text": "x"}),
        ),
        Act::Append { path, line } => (
            "run_command",
            json!({"command": format!("printf '%s\\n' '{line}' >> {path}")}),
        ),
        Act::Remove { path } => ("run_command", json!({"command": format!("rm -f {path}")})),
    };
    MockResponse::tool_call(id, name, &args.to_string())
}

/// The worker's index, from its task.
fn worker_of(body: &Value) -> usize {
    let task = transcript(body)
        .into_iter()
        .find(|(role, _)| role == "user")
        .map(|(_, t)| t)
        .unwrap_or_default();
    task.split("worker W")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn responder(plan: Arc<Plan>) -> impl Fn(&Value) -> MockResponse + Send + Sync + 'static {
    move |body: &Value| {
        let n = plan.workers.len();
        if !is_worker(body) {
            return match tool_count(body) {
                0 => MockResponse::tool_calls(
                    (0..n)
                        .map(|w| {
                            call(
                                &format!("s{w}"),
                                "spawn_agent",
                                json!({"role_name": "implementer", "task_prompt": format!("worker W{w} does its part")}),
                            )
                        })
                        .collect(),
                ),
                c if c == n => MockResponse::tool_call("wait", "wait_for_agents", "{}"),
                _ => MockResponse::text("done"),
            };
        }
        let w = worker_of(body);
        let worker = &plan.workers[w];
        let k = tool_count(body);
        let acts = worker.acts.len();
        if k < acts {
            return act_call(&format!("a{k}"), &worker.acts[k]);
        }
        if k == acts {
            return result_call("r1", &worker.claims);
        }
        if k == acts + 1 && worker.answers {
            let truth: Vec<(String, &str)> = worker
                .truth
                .iter()
                .map(|(p, (kind, _))| (p.clone(), *kind))
                .collect();
            return result_call("r2", &truth);
        }
        MockResponse::text("I did what the task asked.")
    }
}

fn setup(plan: &Plan) -> Sandbox {
    let sb = Sandbox::new();
    // A claim is judged by the checks alone here: no reviewer, no test command.
    sb.workspace_config("[guards]\nread_repeat_stop_after = 0\n");
    for w in 0..plan.workers.len().max(2) {
        for name in START_FILES {
            sb.write(&format!("w{w}_{name}"), &start_content(w, name));
        }
    }
    if plan.git {
        git(sb.ws(), &["init", "-q"]);
        git(sb.ws(), &["add", "-A"]);
        git(sb.ws(), &["commit", "-qm", "start"]);
    }
    sb
}

/// Plays one round and checks it; `Err` says what broke.
async fn play(seed: u64) -> Result<(), String> {
    let plan = Arc::new(plan(seed));
    let mock = MockServer::start().await;
    let sb = setup(&plan);
    mock.set_responder(responder(plan.clone()));
    let approval = if plan.ask { "ask" } else { "auto" };
    let run = sb
        .exec(&mock, &["--json", "--approval", approval, "do the parts"])
        .await;
    let events = run.events();
    let why = check(&plan, &sb, &events);
    why.map_err(|e| format!("{e}\nplan: {plan:#?}\nstderr tail: {}", tail(&run.stderr)))
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// Each worker's id, by its index.
fn ids(events: &[Value]) -> BTreeMap<usize, String> {
    of_type(events, "agent_spawned")
        .into_iter()
        .filter(|e| e["parent_id"].is_string())
        .filter_map(|e| {
            let task = e["task"].as_str()?;
            let w = task.split("worker W").nth(1)?.split_whitespace().next()?;
            Some((w.parse().ok()?, e["agent_id"].as_str()?.to_string()))
        })
        .collect()
}

fn check(plan: &Plan, sb: &Sandbox, events: &[Value]) -> Result<(), String> {
    let ids = ids(events);
    for (w, worker) in plan.workers.iter().enumerate() {
        let id = ids.get(&w).ok_or(format!("worker {w} was not spawned"))?;
        let verdicts: Vec<&Value> = of_type(events, "verification")
            .into_iter()
            .filter(|e| e["agent_id"] == id.as_str())
            .collect();
        let first = verdicts.first().ok_or(format!("worker {w}: no verdict"))?;
        verdict_is_truth(w, first, &worker.claims, worker)?;
        let first_passed = first["passed"] == true;
        let passed = match (first_passed, worker.answers) {
            (true, _) => true,
            (false, true) => {
                let second = verdicts
                    .get(1)
                    .ok_or(format!("worker {w}: its true answer was not checked"))?;
                let truth: Vec<(String, &str)> = worker
                    .truth
                    .iter()
                    .map(|(p, (k, _))| (p.clone(), *k))
                    .collect();
                verdict_is_truth(w, second, &truth, worker)?;
                true
            }
            (false, false) => false,
        };
        if plan.git {
            reached_only_if_passed(w, sb, worker, passed)?;
        }
    }
    Ok(())
}

/// The verdict on `claims` is the truth: each false claim fails naming its file and kind,
/// no true one does; it passed exactly when every claim was true; it is unchecked exactly
/// when nothing changed and no change was claimed; the changes not claimed are named.
fn verdict_is_truth(
    w: usize,
    v: &Value,
    claims: &[(String, &'static str)],
    worker: &Worker,
) -> Result<(), String> {
    let failures: Vec<String> = v["failures"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| f["message"].as_str().unwrap_or_default().to_string())
        .collect();
    let mut all_true = true;
    for (path, kind) in claims {
        let truly = is_true(&worker.truth, path, kind);
        all_true &= truly;
        let shown = format!("artifact {path} ({kind})");
        let failed = failures.iter().any(|f| f.starts_with(&shown));
        if failed == truly {
            return Err(format!(
                "worker {w}: the claim {path} ({kind}) is {} but its verdict {}: {v}",
                if truly { "true" } else { "false" },
                if failed { "failed it" } else { "let it pass" }
            ));
        }
    }
    if v["passed"] != all_true {
        return Err(format!("worker {w}: passed should be {all_true}: {v}"));
    }
    let nothing = worker.truth.is_empty() && claims.iter().all(|(_, k)| *k == "referenced");
    if (v["unchecked"] == true) != nothing {
        return Err(format!(
            "worker {w}: unchecked should be {nothing} (nothing changed and nothing claimed): {v}"
        ));
    }
    if nothing && v.get("score").is_some() {
        return Err(format!("worker {w}: an unchecked verdict has a score: {v}"));
    }
    let listed: BTreeSet<&str> = claims.iter().map(|(p, _)| p.as_str()).collect();
    let warnings = v["warnings"].to_string();
    for path in worker.truth.keys().filter(|p| !listed.contains(p.as_str())) {
        if !warnings.contains(path.as_str()) {
            return Err(format!(
                "worker {w}: its unlisted change {path} is not named: {v}"
            ));
        }
    }
    Ok(())
}

/// In a git workspace a worker writes in its own worktree: its change is in the workspace
/// after a passed verdict, and not otherwise.
fn reached_only_if_passed(
    w: usize,
    sb: &Sandbox,
    worker: &Worker,
    passed: bool,
) -> Result<(), String> {
    let start = play_acts(w, &[], false);
    for (path, (_, end)) in &worker.truth {
        let now = std::fs::read_to_string(sb.ws().join(path)).ok();
        // Nothing merges unchecked (issue 48 part 2): a worker that went silent after a
        // failed check keeps its change on its branch, out of the workspace.
        let expected = if passed {
            end.clone()
        } else {
            start.get(path).cloned().flatten()
        };
        if now != expected {
            return Err(format!(
                "worker {w}: {path} in the workspace is {now:?}, expected {expected:?} (verdict passed: {passed})"
            ));
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn every_verdict_is_the_truth_of_the_workers_own_change() {
    let seeds: Vec<u64> = match std::env::var("SQUAD_SEED") {
        Ok(s) => vec![s.trim().parse().expect("SQUAD_SEED is a number")],
        Err(_) => {
            let rounds: u64 = std::env::var("SQUAD_CLAIMS_ROUNDS")
                .ok()
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(200);
            let first = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_secs() * 1000);
            (0..rounds).map(|n| first + n).collect()
        }
    };
    let started = std::time::Instant::now();
    let mut failed = Vec::new();
    use futures::StreamExt;
    let mut rounds = futures::stream::iter(seeds.iter().copied())
        .map(|seed| async move { (seed, tokio::spawn(play(seed)).await.unwrap()) })
        .buffer_unordered(AT_ONCE);
    while let Some((seed, result)) = rounds.next().await {
        if let Err(why) = result {
            eprintln!("round {seed} failed (replay: SQUAD_SEED={seed}):\n{why}\n");
            failed.push(seed);
        }
    }
    eprintln!(
        "{} rounds in {:.1} s, {} failed",
        seeds.len(),
        started.elapsed().as_secs_f64(),
        failed.len()
    );
    assert!(
        failed.is_empty(),
        "rounds whose verdict was not the truth: {failed:?} (replay with SQUAD_SEED)"
    );
}
