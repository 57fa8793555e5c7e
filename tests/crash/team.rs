//! A team killed at random moments (issue 48): the persona spawns two workers in a git
//! repository, each appends one line to its own file with `run_command` (in its worktree),
//! then returns its result, which is verified (a slow rule) and merged. squad is SIGKILLed
//! at a random request, at once or up to 160 ms after it arrived, so the kill lands in a
//! worker's command, in a verification, in a merge, in a spawn or between calls; the
//! session is then continued with `--resume last --continue` to its end.
//!
//! The mock plays the models the way a model reads its conversation: a worker with no
//! result yet appends its line (so a call lost from the log is asked for again and runs
//! again), one told its command was cut off either returns at once (trusting: its claim is
//! checked like any) or first appends only if the line is not there (careful), a
//! correction has it do the careful append and return again. The persona re-spawns a
//! worker only when the log has none for that task.
//!
//! The oracle, after the continued run: each line is in the workspace exactly once, or the
//! session names that worker's change as not merged (a conflict, a failed check, a
//! failure); never twice, never silently lost.

use super::common::agents::*;
use super::common::*;
use super::mix;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Each worker's line and file.
pub const WORK: [(&str, &str); 2] = [("A-LINE", "a.txt"), ("B-LINE", "b.txt")];

/// Requests of an uninterrupted round: the persona's spawn, wait and answer, each
/// worker's command and return.
const REQUESTS: usize = 7;

/// Where and how a round is killed, and how its workers read a cut-off call.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// The request (in arrival order, from 0) whose arrival starts the kill.
    pub at: usize,
    /// Milliseconds after it (0: before it is answered).
    pub after: u64,
    /// Workers told their command was cut off check the file before appending.
    pub careful: bool,
    /// Seconds a worker's first command sleeps before its append (it sleeps 0.06 after).
    pub before: f32,
    /// Instead of at a request: the moment this worker's line reaches the workspace (its
    /// merge is writing, its report not yet on disk).
    pub in_merge: Option<usize>,
}

pub fn plan(seed: u64) -> Plan {
    let r = mix(seed ^ 0x7ea3);
    // Never at the last request: the process must still be there when the kill comes.
    let at = 1 + (r % (REQUESTS as u64 - 2)) as usize;
    let after = match (r >> 8) % 4 {
        0 => 0,
        _ => (r >> 16) % 160,
    };
    Plan {
        at,
        after,
        careful: (r >> 40).is_multiple_of(2),
        in_merge: (r >> 44)
            .is_multiple_of(4)
            .then_some(((r >> 48) % 2) as usize),
        before: if (r >> 52).is_multiple_of(2) {
            0.0
        } else {
            0.03
        },
    }
}

/// Kills `pid` the moment `line` is in `file`: the merge has begun writing the workspace.
fn kill_in_merge(pid: i32, file: std::path::PathBuf, line: &'static str) {
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            if text.lines().any(|l| l == line) {
                // SAFETY: a signal to the child this test started and still owns.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                return;
            }
            std::thread::sleep(Duration::from_micros(500));
        }
    });
}

fn task(line: &str, file: &str) -> String {
    format!("append the line {line} to {file}")
}

/// A result the continued session wrote for a call the kill cut off (today's words, and
/// the words of squad before issue 48, so the test also runs against an older binary).
fn cut_off(output: &str) -> bool {
    output.contains("squad was killed") || output.starts_with("not finished:")
}

/// The append; `slow`: the first one, which sleeps `before` seconds before the write and
/// 0.06 after, so a kill may land before or after it; else the careful one.
fn append(id: &str, line: &str, file: &str, slow: Option<f32>) -> MockResponse {
    let command = match slow {
        Some(before) => format!("sleep {before}; echo {line} >> {file}; sleep 0.06"),
        None => format!("grep -qx {line} {file} || echo {line} >> {file}"),
    };
    MockResponse::tool_call(
        id,
        "run_command",
        &json!({ "command": command }).to_string(),
    )
}

fn returns(id: &str, line: &str, file: &str) -> MockResponse {
    let result = json!({"result": {
        "status": "success",
        "summary": format!("appended {line} to {file}"),
        "artifacts": [{"file_path": file, "description": "one line appended", "change_type": "modified"}],
        "known_issues": []
    }});
    MockResponse::tool_call(id, "return_results", &result.to_string())
}

/// A worker's next move, read from its conversation.
fn worker(body: &Value, plan: &Plan) -> MockResponse {
    let first = transcript(body)
        .into_iter()
        .find(|(role, _)| role == "user")
        .map(|(_, text)| text)
        .unwrap_or_default();
    let Some(&(line, file)) = WORK.iter().find(|(line, _)| first.contains(line)) else {
        return MockResponse::text("no task of mine");
    };
    let results = tool_messages(body);
    let n = results.len();
    let last_is_user = transcript(body)
        .last()
        .is_some_and(|(role, _)| role == "user");
    let Some((id, output)) = results.last() else {
        return append("cmd0", line, file, Some(plan.before));
    };
    if n > 0 && last_is_user {
        // A correction after its result: make sure of the line, then return again.
        return append(&format!("fix{n}"), line, file, None);
    }
    match id.as_str() {
        _ if cut_off(output) && id.starts_with("ret") => returns(&format!("ret{n}"), line, file),
        _ if cut_off(output) && plan.careful => append(&format!("chk{n}"), line, file, None),
        _ if id.starts_with("ret") => MockResponse::text("returned"),
        _ => returns(&format!("ret{n}"), line, file),
    }
}

/// The events of every session log under `data`.
pub fn logged(data: &Path) -> Vec<Value> {
    let mut logs: Vec<_> = std::fs::read_dir(data.join("sessions"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    logs.sort();
    logs.iter()
        .flat_map(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            text.lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The workers the log has for `line`'s task.
fn workers_of(events: &[Value], line: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "agent_spawned" && e["parent_id"].is_string())
        .filter(|e| e["task"].as_str().is_some_and(|t| t.contains(line)))
        .filter_map(|e| e["agent_id"].as_str().map(str::to_string))
        .collect()
}

/// The persona's next move: spawn the workers the log does not have, wait, answer.
fn persona(body: &Value, data: &Path) -> MockResponse {
    let results = tool_messages(body);
    if results.is_empty() {
        return MockResponse::tool_calls(
            WORK.iter()
                .enumerate()
                .map(|(i, (line, file))| {
                    call(
                        &format!("s{i}"),
                        "spawn_agent",
                        json!({"role_name": "implementer", "task_prompt": task(line, file)}),
                    )
                })
                .collect(),
        );
    }
    let n = results.len();
    let events = logged(data);
    let missing: Vec<_> = WORK
        .iter()
        .filter(|(line, _)| workers_of(&events, line).is_empty())
        .enumerate()
        .map(|(i, (line, file))| {
            call(
                &format!("s{n}_{i}"),
                "spawn_agent",
                json!({"role_name": "implementer", "task_prompt": task(line, file)}),
            )
        })
        .collect();
    if !missing.is_empty() {
        return MockResponse::tool_calls(missing);
    }
    match results.last() {
        Some((id, output)) if id.starts_with('w') && !cut_off(output) => MockResponse::text("done"),
        _ => MockResponse::tool_call(&format!("w{n}"), "wait_for_agents", "{}"),
    }
}

/// A repository with each worker's file committed.
fn repo() -> Sandbox {
    let sb = Sandbox::new();
    git(sb.ws(), &["init", "-q"]);
    for (_, file) in WORK {
        sb.write(file, "start\n");
    }
    sb.workspace_config("[[verify.rules]]\nid = \"settle\"\ncommand = \"sleep 0.05\"\n");
    git(sb.ws(), &["add", "-A"]);
    git(sb.ws(), &["commit", "-qm", "start"]);
    sb
}

/// What the first run's log says the kill cut: each call recorded without its result,
/// by what it was doing (a worker's command, its result's verification or merge, the
/// persona's spawn), or `between calls`. Events trail the log by up to 50 ms, so this is
/// what was known on disk, not to the millisecond.
fn under_way(events: &[Value]) -> String {
    let mut open: Vec<(String, String, String)> = Vec::new();
    let mut stage: std::collections::HashMap<String, &str> = Default::default();
    for e in events {
        let agent = e["agent_id"].as_str().unwrap_or_default().to_string();
        let item = &e["item"];
        match (e["type"].as_str(), item["kind"].as_str()) {
            (Some("item_added"), Some("assistant")) => {
                for c in item["tool_calls"].as_array().into_iter().flatten() {
                    let id = c["id"].as_str().unwrap_or_default().to_string();
                    let name = c["name"].as_str().unwrap_or_default().to_string();
                    open.push((agent.clone(), id, name));
                }
                stage.remove(&agent);
            }
            (Some("item_added"), Some("tool_result")) => {
                open.retain(|(a, id, _)| !(*a == agent && item["call_id"] == id.as_str()));
            }
            (Some("verification"), _) => {
                stage.insert(agent, "mid-merge");
            }
            (Some("merge_report"), _) => {
                stage.insert(agent, "after the merge");
            }
            _ => {}
        }
    }
    let mut cut: Vec<&str> = open
        .iter()
        .map(|(agent, _, name)| match name.as_str() {
            "run_command" => "mid-command",
            "return_results" => stage.get(agent).copied().unwrap_or("mid-verification"),
            "spawn_agent" => "mid-spawn",
            "wait_for_agents" => "persona waiting",
            _ => "another call",
        })
        .collect();
    cut.sort_unstable();
    cut.dedup();
    if cut.is_empty() {
        "between calls".into()
    } else {
        cut.join(", ")
    }
}

/// Whether the session names `worker`'s change as not merged: a conflict or a change kept
/// unmerged, a failed check, a failed result or worker.
fn named_unmerged(events: &[Value], worker: &str) -> bool {
    let mine = || events.iter().filter(|e| e["agent_id"] == worker);
    let merge = mine().rfind(|e| e["type"] == "merge_report");
    let verdict = mine().rfind(|e| e["type"] == "verification");
    let result = mine().rfind(|e| e["type"] == "result_returned");
    let status = mine().rfind(|e| e["type"] == "agent_status");
    merge.is_some_and(|m| m["state"] != "merged")
        || verdict.is_some_and(|v| v["passed"] == false)
        || result.is_some_and(|r| r["result"]["status"] == "failure")
        || status.is_some_and(|s| s["status"] == "failed")
}

/// One round; `Err` says what went wrong, `Ok` what the kill cut.
pub async fn round(seed: u64) -> Result<String, String> {
    let plan = plan(seed);
    let mock = MockServer::start().await;
    let sb = repo();
    let data = sb.data_dir();
    let pid = Arc::new(AtomicI32::new(0));
    let arrived = Arc::new(AtomicUsize::new(0));
    let continued = Arc::new(AtomicBool::new(false));
    {
        let (pid, arrived, continued) = (pid.clone(), arrived.clone(), continued.clone());
        let data = data.clone();
        mock.set_responder(move |body| {
            let first_run = !continued.load(Ordering::SeqCst);
            let nth = arrived.fetch_add(1, Ordering::SeqCst);
            if first_run && plan.in_merge.is_none() && nth == plan.at {
                let deadline = Instant::now() + Duration::from_secs(5);
                while pid.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(1));
                }
                let target = pid.load(Ordering::SeqCst);
                let kill = move || {
                    // SAFETY: a signal to the child this test started and still owns.
                    unsafe { libc::kill(target, libc::SIGKILL) };
                };
                if plan.after == 0 {
                    kill();
                } else {
                    std::thread::spawn(move || {
                        std::thread::sleep(Duration::from_millis(plan.after));
                        kill();
                    });
                }
            }
            let answer = if is_worker(body) {
                worker(body, &plan)
            } else {
                persona(body, &data)
            };
            // The first run must not end before the kill lands (its pid could be reused).
            if first_run && !is_worker(body) && tool_count(body) > 2 {
                return answer.with_delay(Duration::from_millis(1500));
            }
            answer
        });
    }
    let mut cmd = sb.command(Some(&mock));
    cmd.args([
        "exec",
        "--approval",
        "auto",
        "have the team append the lines",
    ])
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    pid.store(child.id().unwrap() as i32, Ordering::SeqCst);
    if let Some(w) = plan.in_merge {
        let (line, file) = WORK[w];
        kill_in_merge(child.id().unwrap() as i32, sb.ws().join(file), line);
    }
    let status = tokio::time::timeout(Duration::from_secs(60), child.wait())
        .await
        .map_err(|_| "the first run did not end".to_string())?
        .unwrap();
    if status.success() {
        return Err("the first run was not killed".into());
    }
    let first = logged(&data);
    let mut cut = under_way(&first);
    // A line in the workspace whose merge report is not on disk: the kill came in (or
    // right after) the merge.
    for (line, file) in WORK {
        let text = std::fs::read_to_string(sb.ws().join(file)).unwrap_or_default();
        let reported = workers_of(&first, line).iter().any(|w| {
            (first.iter()).any(|e| e["agent_id"] == w.as_str() && e["type"] == "merge_report")
        });
        if text.lines().any(|l| l == line) && !reported {
            cut.push_str(", merged but not logged");
        }
    }
    continued.store(true, Ordering::SeqCst);
    let mut cmd = sb.command(Some(&mock));
    cmd.args([
        "exec",
        "--approval",
        "auto",
        "--resume",
        "last",
        "--continue",
    ])
    .stdin(std::process::Stdio::null());
    let run = tokio::time::timeout(Duration::from_secs(90), cmd.output())
        .await
        .map_err(|_| format!("[{cut}] the continued run did not end"))?
        .unwrap();
    let events = logged(&data);
    if std::env::var_os("SQUAD_CRASH_KEEP").is_some() {
        eprintln!("round {seed}: kept {}", sb.home.path().display());
        eprintln!("workspace {}", sb.ws().display());
        std::mem::forget(sb);
        return Err("kept".into());
    }
    let stderr = String::from_utf8_lossy(&run.stderr);
    let tail: String = stderr
        .lines()
        .rev()
        .take(12)
        .collect::<Vec<_>>()
        .join(" | ");
    for (line, file) in WORK {
        let text = std::fs::read_to_string(sb.ws().join(file)).unwrap_or_default();
        let times = text.lines().filter(|l| *l == line).count();
        let workers = workers_of(&events, line);
        match times {
            1 => {}
            0 if workers.iter().any(|w| named_unmerged(&events, w)) => {}
            0 if workers.is_empty() => {
                return Err(format!("[{cut}] no worker was ever spawned for {line}"));
            }
            0 => {
                return Err(format!(
                    "[{cut}] {line} is not in {file} and the session does not say why \
                     (silently lost); continued run: {tail}"
                ));
            }
            _ => {
                return Err(format!(
                    "[{cut}] {line} is in {file} {times} times: an append ran again; \
                     continued run: {tail}"
                ));
            }
        }
    }
    Ok(cut)
}

/// Plays `seeds`, a few rounds at once; returns the failures (seed, why) and what each
/// kill cut, counted.
pub async fn play(seeds: &[u64], at_once: usize) -> (Vec<(u64, String)>, Vec<(String, usize)>) {
    let mut failed = Vec::new();
    let mut cuts: std::collections::BTreeMap<String, usize> = Default::default();
    for batch in seeds.chunks(at_once) {
        let runs: Vec<_> = batch
            .iter()
            .map(|&seed| tokio::spawn(async move { (seed, round(seed).await) }))
            .collect();
        for r in runs {
            let (seed, result) = r.await.unwrap();
            match result {
                Ok(cut) => *cuts.entry(cut).or_default() += 1,
                Err(why) => {
                    let p = plan(seed);
                    let when = match p.in_merge {
                        Some(w) => format!("in the merge of {}", WORK[w].0),
                        None => format!("at request {}, {} ms after", p.at, p.after),
                    };
                    eprintln!(
                        "round {seed} (killed {when}, careful: {}) failed \
                         (replay: SQUAD_SEED={seed}): {why}",
                        p.careful
                    );
                    failed.push((seed, why));
                }
            }
        }
    }
    (failed, cuts.into_iter().collect())
}
