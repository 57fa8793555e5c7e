//! Nothing lost across a restart, on the real binary (issue 54 part 6): seeded rounds of
//! `squad exec` with the mock model server, each a team of 2 to 4 kept workers that claim
//! tasks from a board (some with overlapping declared paths, some depending on others),
//! work a few random steps on each (commands of random length, messages to a random
//! sibling or to the lead) and return; squad is SIGKILLed 2 to 4 times a round, at a random
//! model request of each life (at once or up to 150 ms after it came, so the kill lands in
//! a command, in a message waiting for its delivery, in a claim or a return), and each
//! time continued with `--resume last --continue`, the last life to its end.
//!
//! The mock plays each model from its conversation only (so it reads a call the kill cut
//! off as a model would: it claims again, returns again), and records every request. The
//! oracle, from what the models were really sent and from the session log:
//! - every message on record (and every one whose sender was told it was delivered or
//!   queued) reaches its recipient's model, once: from the request that first carries it,
//!   every later request of that recipient carries it exactly once, at the same place in
//!   its conversation (a second delivery, even after a kill, would sit elsewhere), and
//!   no other agent's model ever sees it;
//! - no task is ever held by two workers (the log's `task_updated` events, folded; and no
//!   two workers' models handed one task unless the log gave it back between), nor a
//!   worker two tasks at once;
//! - the board ends done, each task done once, nobody holding one, and the last life ends
//!   well.
//!
//! `SQUAD_TEAM_CRASH_ROUNDS=N` runs N rounds (25 by default, at least 50 kills landed),
//! `SQUAD_SEED=S` replays round S (the same team, board, steps and kill points; the
//! timing is the machine's); `SQUAD_TEAM_CRASH_KEEP=1` keeps a failed round's sandbox.
//! It found: a resting worker still held after `--continue` (a message to it waited for
//! ever), a task left running when the kill came between its worker's result and the
//! board hearing of it, and a worker killed twice asked with no task at all.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Rounds played at once (each its own squad process, mock server and workspace).
const AT_ONCE: usize = 4;
/// Declared paths a task may lease (overlapping: `src/a/**` and `src/a/x.rs`).
const AREAS: [&str; 4] = ["src/a/**", "src/b/**", "src/a/x.rs", "docs/**"];
/// What a worker's successful `return_results` answers.
const RETURNED: &str = "results delivered to your supervisor";

/// splitmix64.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(1);
        mix(self.0)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[derive(Debug, Clone)]
struct Task {
    id: String,
    paths: Option<&'static str>,
    depends_on: Option<String>,
}

/// A round, all drawn from its seed.
#[derive(Debug)]
struct Plan {
    seed: u64,
    workers: usize,
    tasks: Vec<Task>,
    /// For each life but the last: killed at its `n`th model request (from 0), `after` ms
    /// after it came (0: before it is answered).
    kills: Vec<(usize, u64)>,
}

/// One step of a worker's work on a task.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// `run_command` sleeping this many hundredths of a second.
    Sleep(u32),
    /// `message_agent` to worker `Some(w)` or to the supervisor.
    Message(Option<usize>),
}

fn plan(seed: u64) -> Plan {
    let mut rng = Rng(mix(seed ^ 0x7ea3_c4a5));
    let workers = 2 + rng.below(3);
    let tasks = (0..3 + rng.below(4))
        .map(|i| Task {
            id: format!("T{i}"),
            paths: (rng.below(3) > 0).then(|| AREAS[rng.below(AREAS.len())]),
            depends_on: (i > 0 && rng.below(4) == 0).then(|| format!("T{}", rng.below(i))),
        })
        .collect();
    let lives = 2 + rng.below(3);
    let kills = (0..lives)
        .map(|life| {
            let n = if life == 0 {
                2 + rng.below(18)
            } else {
                rng.below(10)
            };
            let after = match rng.below(3) {
                0 => 0,
                _ => rng.below(150) as u64,
            };
            (n, after)
        })
        .collect();
    Plan {
        seed,
        workers,
        tasks,
        kills,
    }
}

/// Worker `w`'s steps on `task`, the same in every life.
fn steps(plan: &Plan, w: usize, task: &str) -> Vec<Step> {
    let key = task.bytes().fold(w as u64, |h, b| mix(h ^ u64::from(b)));
    let mut rng = Rng(mix(plan.seed ^ key));
    (0..1 + rng.below(3))
        .map(|_| match rng.below(6) {
            0 | 1 => Step::Sleep(5 + rng.below(25) as u32),
            // One message in four to the lead, the others to a sibling.
            2 if rng.below(2) == 0 => Step::Message(None),
            _ => Step::Message(Some((w + 1 + rng.below(plan.workers - 1)) % plan.workers)),
        })
        .collect()
}

// ---- Reading a request ----

/// One message of a request, with the tool's name for a result.
enum Said {
    User(String),
    Result { name: String, out: String },
    Other,
}

fn said(body: &Value) -> Vec<Said> {
    let mut names: HashMap<String, String> = HashMap::new();
    let msgs = body["messages"].as_array().cloned().unwrap_or_default();
    msgs.iter()
        .map(|m| match m["role"].as_str() {
            Some("assistant") => {
                for c in m["tool_calls"].as_array().into_iter().flatten() {
                    names.insert(
                        c["id"].as_str().unwrap_or_default().to_string(),
                        c["function"]["name"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                    );
                }
                Said::Other
            }
            Some("user") => Said::User(content_text(&m["content"])),
            Some("tool") => Said::Result {
                name: names
                    .get(m["tool_call_id"].as_str().unwrap_or_default())
                    .cloned()
                    .unwrap_or_default(),
                out: content_text(&m["content"]),
            },
            _ => Said::Other,
        })
        .collect()
}

/// Who asks: `lead` or `W<i>` (from the worker's task).
fn asker(body: &Value) -> String {
    if !is_worker(body) {
        return "lead".into();
    }
    let task = transcript(body)
        .into_iter()
        .find(|(role, _)| role == "user")
        .map(|(_, t)| t)
        .unwrap_or_default();
    worker_in(&task).map_or_else(|| "?".into(), |w| format!("W{w}"))
}

/// The `(W<i>)` a spawn's task names.
fn worker_in(task: &str) -> Option<usize> {
    let rest = task.split("(W").nth(1)?;
    rest.split(')').next()?.parse().ok()
}

/// A result the continued session wrote for a call the kill cut off.
fn cut_off(out: &str) -> bool {
    out.contains("squad was killed")
}

/// The message numbers (`MSG-<n>`) a text holds, in order.
fn msg_numbers(text: &str) -> Vec<u64> {
    text.split("MSG-")
        .skip(1)
        .filter_map(|s| {
            let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .collect()
}

// ---- The models ----

fn tool(name: &str, args: Value) -> MockResponse {
    static N: AtomicU64 = AtomicU64::new(0);
    let id = format!("c{}", N.fetch_add(1, Ordering::Relaxed));
    MockResponse::tool_call(&id, name, &args.to_string())
}

/// A worker's view of its conversation: the task it holds, and how many calls it made on
/// it since it took it.
fn holding(conv: &[Said]) -> (Option<String>, usize) {
    let mut held = None;
    let mut since = 0;
    for s in conv {
        let Said::Result { name, out } = s else {
            continue;
        };
        match name.as_str() {
            "claim_task" => {
                if let Ok(v) = serde_json::from_str::<Value>(out)
                    && v["brief"].is_string()
                {
                    held = v["task_id"].as_str().map(str::to_string);
                    since = 0;
                } else if let Some(rest) = out.split("you hold task ").nth(1) {
                    held = rest.split_whitespace().next().map(str::to_string);
                    since = 0;
                }
            }
            "return_results" if out == RETURNED => {
                held = None;
                since = 0;
            }
            "return_results" => {}
            _ => since += 1,
        }
    }
    (held, since)
}

/// A worker's next move, from its conversation alone.
fn worker(body: &Value, plan: &Plan, w: usize, sent: &AtomicU64) -> MockResponse {
    let conv = said(body);
    let (held, since) = holding(&conv);
    let next_step = |task: &str| -> MockResponse {
        let steps = steps(plan, w, task);
        match steps.get(since) {
            Some(Step::Sleep(cs)) => tool(
                "run_command",
                json!({"command": format!("sleep 0.{cs:02}; echo W{w} {task} step {since}")}),
            ),
            Some(Step::Message(to)) => {
                let n = sent.fetch_add(1, Ordering::SeqCst);
                let to = to.map_or_else(|| "supervisor".to_string(), |o| format!("w{o}"));
                tool(
                    "message_agent",
                    json!({"to": to, "text": format!("MSG-{n} from W{w} to {to} about {task}")}),
                )
            }
            None => tool("return_results", good_result(&format!("W{w} did {task}"))),
        }
    };
    match conv.last() {
        Some(Said::Result { name, out }) => match (name.as_str(), held) {
            ("claim_task", _) if cut_off(out) => tool("claim_task", json!({})),
            ("return_results", Some(_)) if cut_off(out) => tool(
                "return_results",
                good_result(&format!("W{w} did it (again, after a crash)")),
            ),
            ("return_results", _) => MockResponse::text("returned; waiting for the next task"),
            (_, Some(task)) => next_step(&task),
            ("claim_task", None) => MockResponse::text("nothing I may claim now"),
            _ => MockResponse::text("nothing to do"),
        },
        Some(Said::User(text)) => match held {
            // A correction, a letter, an offer or a continue: go on with the task.
            Some(task) => next_step(&task),
            None if text.starts_with("[message from") => MockResponse::text("noted"),
            None => tool("claim_task", json!({})),
        },
        _ => tool("claim_task", json!({})),
    }
}

/// The lead: the board once, then each worker the log does not have yet (kept, named
/// `w<i>`), then words for whatever comes (results, letters).
fn lead(plan: &Plan, data: &Path) -> MockResponse {
    let events = logged(data);
    if !events.iter().any(|e| e["type"] == "task_updated") {
        let tasks: Vec<Value> = (plan.tasks.iter())
            .map(|t| {
                let mut v = json!({"id": t.id, "title": format!("do {}", t.id)});
                if let Some(p) = t.paths {
                    v["paths"] = json!([p]);
                }
                if let Some(d) = &t.depends_on {
                    v["depends_on"] = json!([d]);
                }
                v
            })
            .collect();
        return tool("plan_tasks", json!({ "tasks": tasks }));
    }
    let have = spawned(&events);
    let missing: Vec<MockToolCall> = (0..plan.workers)
        .filter(|w| !have.values().any(|k| *k == format!("W{w}")))
        .map(|w| {
            call(
                &format!("s{w}_{}", events.len()),
                "spawn_agent",
                json!({"role_name": "agentic_coder", "name": format!("w{w}"), "keep": true,
                       "task_prompt": format!("Claim tasks from the board with claim_task until none is left. (W{w})")}),
            )
        })
        .collect();
    if !missing.is_empty() {
        return MockResponse::tool_calls(missing);
    }
    MockResponse::text("the team works the board")
}

// ---- The log ----

/// The events of every session log under `data`.
fn logged(data: &Path) -> Vec<Value> {
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

/// Agent id → `lead` or `W<i>`.
fn spawned(events: &[Value]) -> HashMap<String, String> {
    (events.iter())
        .filter(|e| e["type"] == "agent_spawned")
        .filter_map(|e| {
            let id = e["agent_id"].as_str()?.to_string();
            if e["parent_id"].is_null() {
                return Some((id, "lead".to_string()));
            }
            let w = worker_in(e["task"].as_str()?)?;
            Some((id, format!("W{w}")))
        })
        .collect()
}

// ---- A round ----

/// How a round went: its kills that landed.
struct Played {
    kills: usize,
    /// Model requests, messages on record, tasks done, over all lives.
    requests: usize,
    messages: usize,
    tasks: usize,
}

/// What the responder shares with the round.
#[derive(Default)]
struct Lives {
    /// The current life's process.
    pid: AtomicI32,
    /// Which life, from 0.
    life: AtomicUsize,
    /// Requests the current life made.
    asked: AtomicUsize,
    /// A kill is on its way: answers wait, so the life cannot end before it lands.
    armed: AtomicBool,
}

async fn round(seed: u64) -> Result<Played, String> {
    let plan = Arc::new(plan(seed));
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[verify]\nenabled = false\n");
    let data = sb.data_dir();
    let lives = Arc::new(Lives::default());
    let sent = Arc::new(AtomicU64::new(1));
    {
        let (plan, lives, sent, data) = (plan.clone(), lives.clone(), sent.clone(), data.clone());
        mock.set_responder(move |body| {
            let life = lives.life.load(Ordering::SeqCst);
            let nth = lives.asked.fetch_add(1, Ordering::SeqCst);
            if let Some(&(at, after)) = plan.kills.get(life)
                && nth == at
                && !lives.armed.swap(true, Ordering::SeqCst)
            {
                let lives = lives.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(after));
                    let mut pid = lives.pid.load(Ordering::SeqCst);
                    while pid == 0 {
                        std::thread::sleep(Duration::from_millis(1));
                        pid = lives.pid.load(Ordering::SeqCst);
                    }
                    // SAFETY: a signal to the child this test started and still owns: it
                    // cannot end before the kill (its answers wait while one is armed).
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                });
            }
            let who = asker(body);
            let answer = match who.strip_prefix('W').and_then(|w| w.parse().ok()) {
                Some(w) => {
                    let delay = mix(plan.seed ^ ((w as u64) << 16) ^ tool_count(body) as u64) % 40;
                    worker(body, &plan, w, &sent).with_delay(Duration::from_millis(delay))
                }
                None => lead(&plan, &data),
            };
            if lives.armed.load(Ordering::SeqCst) {
                return answer.with_delay(Duration::from_millis(600));
            }
            answer
        });
    }
    let mut kills = 0;
    let mut last = None;
    for life in 0.. {
        lives.life.store(life, Ordering::SeqCst);
        lives.asked.store(0, Ordering::SeqCst);
        lives.armed.store(false, Ordering::SeqCst);
        lives.pid.store(0, Ordering::SeqCst);
        let mut cmd = sb.command(Some(&mock));
        cmd.args(["exec", "--approval", "auto"]);
        if life == 0 {
            cmd.arg("split the board");
        } else {
            cmd.args(["--resume", "last", "--continue"]);
        }
        cmd.stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        let child = cmd.spawn().unwrap();
        lives
            .pid
            .store(child.id().unwrap() as i32, Ordering::SeqCst);
        let Ok(out) = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output()).await
        else {
            keep(sb);
            return Err(format!("life {life} did not end"));
        };
        let out = out.unwrap();
        let killed =
            std::os::unix::process::ExitStatusExt::signal(&out.status) == Some(libc::SIGKILL);
        if killed {
            kills += 1;
            continue;
        }
        last = Some(out);
        break;
    }
    let last = last.unwrap();
    let stderr = String::from_utf8_lossy(&last.stderr);
    let tail: String = (stderr.lines().rev().take(15))
        .collect::<Vec<_>>()
        .join("\n  ");
    let events = logged(&data);
    let bodies: Vec<Value> = mock.requests().into_iter().map(|r| r.body).collect();
    let verdict = check(&events, &bodies).and_then(|()| {
        last.status
            .success()
            .then_some(())
            .ok_or_else(|| format!("the last life failed ({})", last.status))
    });
    if verdict.is_err() {
        keep(sb);
    }
    verdict.map_err(|why| {
        format!("{why}\n  (after {kills} kills; last life's stderr, last lines first:\n  {tail})")
    })?;
    Ok(Played {
        kills,
        requests: bodies.len(),
        messages: of_type(&events, "agent_message").len(),
        tasks: plan.tasks.len(),
    })
}

/// With `SQUAD_TEAM_CRASH_KEEP` set, the round's sandbox stays for a look.
fn keep(sb: Sandbox) {
    if std::env::var_os("SQUAD_TEAM_CRASH_KEEP").is_some() {
        eprintln!(
            "kept: {} (workspace {})",
            sb.home.path().display(),
            sb.ws().display()
        );
        std::mem::forget(sb);
    }
}

// ---- The oracle ----

fn check(events: &[Value], bodies: &[Value]) -> Result<(), String> {
    let names = spawned(events);
    let key = |id: &Value| {
        names
            .get(id.as_str().unwrap_or_default())
            .cloned()
            .unwrap_or_else(|| format!("agent {id}"))
    };
    // The messages on record: number → (sender, recipient).
    let mut on_record: BTreeMap<u64, (String, String)> = BTreeMap::new();
    for e in events.iter().filter(|e| e["type"] == "agent_message") {
        let text = e["text"].as_str().unwrap_or_default();
        for n in msg_numbers(text) {
            let was = on_record.insert(n, (key(&e["agent_id"]), key(&e["to"])));
            if was.is_some() {
                return Err(format!("MSG-{n} is on record twice"));
            }
        }
    }
    let told = told_sent(bodies);
    for n in &told {
        if !on_record.contains_key(n) {
            return Err(format!(
                "MSG-{n}: its sender was told it was delivered or queued, but the log has no agent_message for it"
            ));
        }
    }
    delivered_once(bodies, &on_record)?;
    owners(events, bodies, &key)?;
    Ok(())
}

/// The messages whose sender's model was told they were delivered or queued.
fn told_sent(bodies: &[Value]) -> BTreeSet<u64> {
    let mut out = BTreeSet::new();
    for body in bodies {
        let msgs = body["messages"].as_array().cloned().unwrap_or_default();
        let mut texts: HashMap<String, String> = HashMap::new();
        for m in &msgs {
            for c in m["tool_calls"].as_array().into_iter().flatten() {
                if c["function"]["name"] == "message_agent" {
                    let args: Value =
                        serde_json::from_str(c["function"]["arguments"].as_str().unwrap_or("{}"))
                            .unwrap_or_default();
                    texts.insert(
                        c["id"].as_str().unwrap_or_default().to_string(),
                        args["text"].as_str().unwrap_or_default().to_string(),
                    );
                }
            }
            if m["role"] == "tool"
                && let Some(text) = texts.get(m["tool_call_id"].as_str().unwrap_or_default())
            {
                let out_text = content_text(&m["content"]);
                let v: Value = serde_json::from_str(&out_text).unwrap_or_default();
                let delivered = v["delivered"].as_array().is_some_and(|d| !d.is_empty());
                let queued = (v["not_delivered"].as_array().into_iter().flatten())
                    .any(|n| n.get("queued").is_some());
                if delivered || queued {
                    out.extend(msg_numbers(text));
                }
            }
        }
    }
    out
}

/// Every message on record reaches its recipient's model, and once: from the first
/// request that carries it, each later request of the recipient carries it once, at the
/// same place; nobody else's model sees it.
fn delivered_once(
    bodies: &[Value],
    on_record: &BTreeMap<u64, (String, String)>,
) -> Result<(), String> {
    // (recipient, message) → (first request, its place in the conversation).
    let mut first: HashMap<(String, u64), (usize, usize)> = HashMap::new();
    for (r, body) in bodies.iter().enumerate() {
        let who = asker(body);
        let mut here: HashMap<u64, Vec<usize>> = HashMap::new();
        for (i, s) in said(body).iter().enumerate() {
            if let Said::User(text) = s
                && text.contains("[message from")
            {
                for n in msg_numbers(text) {
                    here.entry(n).or_default().push(i);
                }
            }
        }
        for (n, places) in &here {
            match on_record.get(n) {
                None => return Err(format!("MSG-{n} reached {who} but is not on record")),
                Some((_, to)) if *to != who => {
                    let said: Vec<String> = (transcript(body).iter())
                        .map(|(role, t)| {
                            format!("{role}: {}", t.chars().take(80).collect::<String>())
                        })
                        .collect();
                    return Err(format!("MSG-{n}, for {to}, reached {who}: {said:#?}"));
                }
                _ => {}
            }
            if places.len() > 1 {
                return Err(format!(
                    "MSG-{n} reached {who} twice: request {r} carries it at {places:?}"
                ));
            }
            let at = places[0];
            let (r0, at0) = *first.entry((who.clone(), *n)).or_insert((r, at));
            if at0 != at {
                return Err(format!(
                    "MSG-{n} reached {who} twice: at {at0} of its conversation in request {r0}, at {at} in request {r}"
                ));
            }
        }
        for ((to, n), (r0, _)) in &first {
            if *to == who && !here.contains_key(n) {
                return Err(format!(
                    "MSG-{n} left {who}'s conversation: in request {r0}, not in request {r}"
                ));
            }
        }
    }
    for (n, (from, to)) in on_record {
        if !first.contains_key(&(to.clone(), *n)) {
            return Err(format!(
                "MSG-{n} from {from} to {to} never reached {to}'s model (lost)"
            ));
        }
    }
    Ok(())
}

/// No task held by two workers, nor a worker holding two; the board ends done, each task
/// done once, nobody holding one.
fn owners(
    events: &[Value],
    bodies: &[Value],
    key: &dyn Fn(&Value) -> String,
) -> Result<(), String> {
    let mut state: BTreeMap<String, (String, Option<String>)> = BTreeMap::new();
    let mut done: BTreeMap<String, usize> = BTreeMap::new();
    let mut given_back: BTreeSet<String> = BTreeSet::new();
    for e in events.iter().filter(|e| e["type"] == "task_updated") {
        let t = &e["task"];
        let id = t["id"].as_str().unwrap_or_default().to_string();
        let status = t["status"].as_str().unwrap_or_default().to_string();
        let owner = t["assignee"].as_str().map(|a| key(&json!(a)));
        if (t["notes"].as_array().into_iter().flatten())
            .any(|n| n.as_str().is_some_and(|n| n.starts_with("given back")))
        {
            given_back.insert(id.clone());
        }
        let before = state.insert(id.clone(), (status.clone(), owner.clone()));
        if let Some((was, Some(held))) = &before
            && was == "running"
            && status == "running"
            && owner.as_ref() != Some(held)
        {
            return Err(format!("{id} taken by {owner:?} while {held} held it"));
        }
        if status == "done" && before.as_ref().is_none_or(|(s, _)| s != "done") {
            *done.entry(id.clone()).or_default() += 1;
        }
        if status == "running"
            && let Some(o) = &owner
            && let Some((other, _)) = state
                .iter()
                .find(|(t, (s, a))| **t != id && s == "running" && a.as_ref() == Some(o))
        {
            return Err(format!("{o} holds {other} and {id} at once"));
        }
    }
    for (id, (status, owner)) in &state {
        if status != "done" {
            return Err(format!(
                "{id} ends {status} (held by {owner:?}): the board is not done"
            ));
        }
    }
    if let Some((id, n)) = done.iter().find(|(_, n)| **n != 1) {
        return Err(format!("{id} was done {n} times"));
    }
    // The models' side: a task handed to two workers must have been given back between.
    let mut handed: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for body in bodies.iter().filter(|b| is_worker(b)) {
        let who = asker(body);
        for s in said(body) {
            if let Said::Result { name, out } = s
                && name == "claim_task"
                && let Ok(v) = serde_json::from_str::<Value>(&out)
                && v["brief"].is_string()
            {
                let task = v["task_id"].as_str().unwrap_or_default().to_string();
                handed.entry(task).or_default().insert(who.clone());
            }
        }
    }
    for (task, whom) in &handed {
        if whom.len() > 1 && !given_back.contains(task) {
            return Err(format!(
                "{task} was handed to {whom:?} and never given back"
            ));
        }
    }
    Ok(())
}

/// The seeds to play: the one `SQUAD_SEED` names, else `SQUAD_TEAM_CRASH_ROUNDS` (25)
/// consecutive ones from the clock.
fn seeds() -> Vec<u64> {
    if let Ok(s) = std::env::var("SQUAD_SEED") {
        return vec![s.trim().parse().expect("SQUAD_SEED is a number")];
    }
    let rounds: u64 = std::env::var("SQUAD_TEAM_CRASH_ROUNDS")
        .ok()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(25);
    let first = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_secs() * 1000);
    (0..rounds).map(|n| first + n).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn messages_and_claims_survive_kill_9_and_continue() {
    let seeds = seeds();
    let one = seeds.len() == 1;
    let started = Instant::now();
    let mut failed = Vec::new();
    let mut kills = 0;
    use futures::StreamExt;
    let mut rounds = futures::stream::iter(seeds.iter().copied())
        .map(|seed| async move { (seed, tokio::spawn(round(seed)).await.unwrap()) })
        .buffer_unordered(AT_ONCE);
    while let Some((seed, result)) = rounds.next().await {
        match result {
            Ok(p) => {
                if one {
                    eprintln!(
                        "round {seed}: {} kills, {} requests, {} messages, {} tasks",
                        p.kills, p.requests, p.messages, p.tasks
                    );
                }
                kills += p.kills;
            }
            Err(why) => {
                eprintln!(
                    "round {seed} failed (replay: SQUAD_SEED={seed}): {why}\n  plan: {:?}\n",
                    plan(seed)
                );
                failed.push(seed);
            }
        }
    }
    eprintln!(
        "{} rounds in {:.1} s, {kills} kills landed, {} failed",
        seeds.len(),
        started.elapsed().as_secs_f64(),
        failed.len()
    );
    assert!(
        failed.is_empty(),
        "rounds that failed: {failed:?} (replay with SQUAD_SEED)"
    );
    if !one && std::env::var_os("SQUAD_TEAM_CRASH_ROUNDS").is_none() {
        assert!(kills >= 50, "only {kills} kills landed");
    }
}
