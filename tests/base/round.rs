//! One round of the property test: a plan drawn from a seed (who is spawned when, what each
//! worker reads and writes, when the persona and the user edit, the order of the returns),
//! played by the mock server against `squad exec`, then every change accounted for.
//!
//! Workers write from what they read, as models do: a whole-file write is the file as the
//! worker last read it with one line replaced or one added; a line edit's `old_text` is
//! that line as read. A worker whose plan is done keeps reading (other files, other lines)
//! until the persona releases it; the persona releases one worker at a time and waits for
//! it, and the persona and the user edit only between those waits, so every write to the
//! workspace has a known author and a known view.

use super::common::agents::*;
use super::common::*;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const FILES: [&str; 3] = ["a.txt", "b.txt", "c.txt"];
const LINES: usize = 6;
/// Rounds played at once (each is its own squad process, mock server and repository): 6
/// on the 2 shared vCPUs under other builds starved every round (seconds per request).
const AT_ONCE: usize = 4;

/// splitmix64: small, seeded, the same on every machine.
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

#[derive(Clone, Copy, Debug)]
enum Write {
    /// The whole file as read, this line replaced.
    Whole(usize),
    /// The whole file as read, one line added at the end.
    Append,
    /// `edit_file` of this line as read.
    Line(usize),
}

#[derive(Clone, Copy, Debug)]
enum Act {
    Read(usize),
    Write(usize, Write),
}

#[derive(Clone, Copy, Debug)]
enum Step {
    Spawn(usize),
    PersonaEdit(usize, usize),
    UserEdit(usize, usize),
    /// Release the worker and wait for it.
    Release(usize),
}

#[derive(Debug)]
struct Plan {
    workers: Vec<Vec<Act>>,
    steps: Vec<Step>,
}

fn plan(seed: u64) -> Plan {
    let mut rng = Rng(seed);
    let n = 2 + rng.below(2);
    let workers: Vec<Vec<Act>> = (0..n)
        .map(|_| {
            let mut acts = Vec::new();
            // One in five only reads.
            let writes = if rng.one_in(5) {
                0
            } else {
                1 + usize::from(rng.one_in(3))
            };
            if writes == 0 {
                acts.push(Act::Read(rng.below(FILES.len())));
            }
            for _ in 0..writes {
                if rng.one_in(3) {
                    acts.push(Act::Read(rng.below(FILES.len())));
                }
                let f = rng.below(FILES.len());
                acts.push(Act::Read(f));
                let w = match rng.below(3) {
                    0 => Write::Whole(rng.below(LINES)),
                    1 => Write::Append,
                    _ => Write::Line(rng.below(LINES)),
                };
                acts.push(Act::Write(f, w));
            }
            acts
        })
        .collect();
    let mut steps = Vec::new();
    let (mut spawned, mut released) = (vec![false; n], vec![false; n]);
    let mut edits = rng.below(4);
    while released.iter().any(|r| !r) {
        let roll = rng.below(10);
        if edits > 0 && roll < 3 {
            edits -= 1;
            let (f, l) = (rng.below(FILES.len()), rng.below(LINES));
            steps.push(if rng.one_in(2) {
                Step::PersonaEdit(f, l)
            } else {
                Step::UserEdit(f, l)
            });
            continue;
        }
        let waiting: Vec<usize> = (0..n).filter(|&i| !spawned[i]).collect();
        let running: Vec<usize> = (0..n).filter(|&i| spawned[i] && !released[i]).collect();
        let spawn = !waiting.is_empty() && (running.is_empty() || rng.one_in(2));
        if spawn {
            let i = waiting[rng.below(waiting.len())];
            spawned[i] = true;
            steps.push(Step::Spawn(i));
        } else {
            let i = running[rng.below(running.len())];
            released[i] = true;
            steps.push(Step::Release(i));
        }
    }
    Plan { workers, steps }
}

/// A change made by someone: its token, where, and the file as its author saw it.
#[derive(Clone, Debug)]
struct Change {
    who: String,
    file: usize,
    token: String,
    /// The line replaced; `None` for a line added at the end.
    line: Option<usize>,
    view: String,
    /// The worker that made it.
    worker: Option<usize>,
    /// Whether its tool call succeeded (`None` until its result is seen).
    ok: Option<bool>,
    /// The call that made it: its result tells `ok`.
    call: String,
}

#[derive(Default)]
struct State {
    changes: Vec<Change>,
    released: Vec<bool>,
    /// The merge report each worker's wait returned.
    waited: Vec<Option<String>>,
    trace: Vec<String>,
}

fn initial(f: usize) -> String {
    (1..=LINES)
        .map(|j| format!("[{}:{j}]\n", FILES[f]))
        .collect()
}

fn result_of(body: &Value, id: &str) -> Option<String> {
    tool_messages(body)
        .into_iter()
        .find(|(call, _)| call == id)
        .map(|(_, out)| out)
}

fn succeeded(out: &str) -> bool {
    ["edited", "created", "overwrote"]
        .iter()
        .any(|w| out.starts_with(w))
}

/// The worker's answer to this request.
fn worker_turn(plan: &Plan, state: &Mutex<State>, i: usize, body: &Value) -> MockResponse {
    let step = tool_count(body);
    let mut st = state.lock().unwrap();
    for c in st.changes.iter_mut().filter(|c| c.worker == Some(i)) {
        if c.ok.is_none() {
            c.ok = result_of(body, &c.call).map(|out| succeeded(&out));
        }
    }
    let acts = &plan.workers[i];
    let Some(act) = acts.get(step) else {
        if st.released[i] {
            return MockResponse::tool_call(
                "ret",
                "return_results",
                &good_result("done").to_string(),
            );
        }
        assert!(step < 900, "worker {i} was never released");
        // Reads while it waits, never twice the same in a row (the loop guard).
        let args = json!({"path": FILES[step % FILES.len()], "start_line": 1 + step % LINES});
        return MockResponse::tool_call(&format!("c{step}"), "read_file", &args.to_string())
            .with_delay(Duration::from_millis(40));
    };
    let id = format!("c{step}");
    match *act {
        Act::Read(f) => {
            MockResponse::tool_call(&id, "read_file", &json!({"path": FILES[f]}).to_string())
        }
        Act::Write(f, w) => {
            // What it saw: its last read of the file (the act before this one).
            let view = (0..step)
                .rev()
                .find(|&s| matches!(acts[s], Act::Read(g) if g == f))
                .and_then(|s| result_of(body, &format!("c{s}")))
                .unwrap_or_default();
            let token = format!("[w{i}.{step}]");
            let lines: Vec<&str> = view.lines().collect();
            let (response, line) = match w {
                Write::Whole(l) | Write::Line(l) if l >= lines.len() => (None, None),
                Write::Whole(l) => {
                    let whole: String = lines
                        .iter()
                        .enumerate()
                        .map(|(j, s)| format!("{}\n", if j == l { token.as_str() } else { s }))
                        .collect();
                    let args = json!({"path": FILES[f], "content": whole});
                    (Some(("write_file", args)), Some(l))
                }
                Write::Append => {
                    let args = json!({"path": FILES[f], "content": format!("{view}{token}\n")});
                    (Some(("write_file", args)), None)
                }
                Write::Line(l) => {
                    let args = json!({"path": FILES[f], "old_text": lines[l], "new_text": token});
                    (Some(("edit_file", args)), Some(l))
                }
            };
            let Some((tool, args)) = response else {
                // The read failed or was short: nothing to write from; read again instead.
                return MockResponse::tool_call(
                    &id,
                    "read_file",
                    &json!({"path": FILES[f]}).to_string(),
                );
            };
            st.trace.push(format!(
                "worker {i}: {tool} {} {token} from {view:?}",
                FILES[f]
            ));
            st.changes.push(Change {
                who: format!("worker {i}"),
                file: f,
                token,
                line,
                view,
                worker: Some(i),
                ok: None,
                call: id.clone(),
            });
            MockResponse::tool_call(&id, tool, &args.to_string())
        }
    }
}

/// The persona's answer to this request.
fn persona_turn(
    plan: &Plan,
    state: &Mutex<State>,
    ws: &std::path::Path,
    body: &Value,
) -> MockResponse {
    let step = tool_count(body);
    let mut st = state.lock().unwrap();
    for c in st.changes.iter_mut().filter(|c| c.worker.is_none()) {
        if c.ok.is_none() {
            c.ok = result_of(body, &c.call).map(|out| succeeded(&out));
        }
    }
    for (s, st_step) in plan.steps.iter().enumerate().take(step) {
        if let Step::Release(i) = *st_step
            && st.waited[i].is_none()
        {
            st.waited[i] = result_of(body, &format!("p{s}"));
        }
    }
    let Some(&next) = plan.steps.get(step) else {
        return MockResponse::text("done");
    };
    let id = format!("p{step}");
    let live = |f: usize| std::fs::read_to_string(ws.join(FILES[f])).unwrap_or_default();
    match next {
        Step::Spawn(i) => MockResponse::tool_call(
            &id,
            "spawn_agent",
            &json!({"role_name": "implementer", "task_prompt": format!("worker-{i}: work")})
                .to_string(),
        ),
        Step::PersonaEdit(f, l) => {
            let view = live(f);
            let token = format!("[p.{step}]");
            let old = view.lines().nth(l).unwrap_or_default().to_string();
            st.trace
                .push(format!("persona: edit {} line {l} {token}", FILES[f]));
            st.changes.push(Change {
                who: "persona".into(),
                file: f,
                token: token.clone(),
                line: Some(l),
                view,
                worker: None,
                ok: None,
                call: id.clone(),
            });
            let args = json!({"path": FILES[f], "old_text": old, "new_text": token});
            MockResponse::tool_call(&id, "edit_file", &args.to_string())
        }
        Step::UserEdit(f, l) => {
            let view = live(f);
            let token = format!("[u.{step}]");
            let edited: String = view
                .lines()
                .enumerate()
                .map(|(j, s)| format!("{}\n", if j == l { token.as_str() } else { s }))
                .collect();
            std::fs::write(ws.join(FILES[f]), edited).unwrap();
            st.trace
                .push(format!("user: {} line {l} {token}", FILES[f]));
            st.changes.push(Change {
                who: "user".into(),
                file: f,
                token,
                line: Some(l),
                view,
                worker: None,
                ok: Some(true),
                call: String::new(),
            });
            MockResponse::tool_call(&id, "read_file", &json!({"path": FILES[f]}).to_string())
        }
        Step::Release(i) => {
            st.released[i] = true;
            st.trace
                .push(format!("persona: release worker {i} and wait"));
            let spawn_step = plan
                .steps
                .iter()
                .position(|s| matches!(s, Step::Spawn(j) if *j == i))
                .unwrap();
            let spawned = result_of(body, &format!("p{spawn_step}")).unwrap_or_default();
            let agent = serde_json::from_str::<Value>(&spawned)
                .ok()
                .and_then(|v| v["agent_id"].as_str().map(str::to_string))
                .unwrap_or_else(|| panic!("worker {i} was not spawned: {spawned}"));
            MockResponse::tool_call(
                &id,
                "wait_for_agents",
                &json!({"agent_ids": [agent]}).to_string(),
            )
        }
    }
}

/// Plays round `seed`; `Err` says which change was lost and how the round went.
async fn play(seed: u64) -> Result<(), String> {
    let plan = Arc::new(plan(seed));
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[verify]\nenabled = false\n\n[limits]\nmax_iterations = 1000\n\n[guards]\nread_repeat_stop_after = 0\n");
    git(sb.ws(), &["init", "-q"]);
    for (f, name) in FILES.iter().enumerate() {
        sb.write(name, &initial(f));
    }
    git(sb.ws(), &["add", "-A"]);
    git(sb.ws(), &["commit", "-qm", "start"]);
    let state = Arc::new(Mutex::new(State {
        released: vec![false; plan.workers.len()],
        waited: vec![None; plan.workers.len()],
        ..State::default()
    }));
    {
        let (plan, state, ws) = (plan.clone(), state.clone(), sb.ws().to_path_buf());
        mock.set_responder(move |body| {
            if !is_worker(body) {
                return persona_turn(&plan, &state, &ws, body);
            }
            let task = transcript(body)
                .into_iter()
                .find(|(role, _)| role == "user")
                .map(|(_, t)| t)
                .unwrap_or_default();
            let i: usize = task
                .strip_prefix("worker-")
                .and_then(|t| t.split(':').next())
                .and_then(|n| n.parse().ok())
                .expect("a worker of the round");
            worker_turn(&plan, &state, i, body)
        });
    }
    let mut cmd = sb.command(Some(&mock));
    cmd.args(["exec", "--approval", "auto", "the round"])
        .stdin(std::process::Stdio::null());
    let out = tokio::time::timeout(Duration::from_secs(120), cmd.output()).await;
    let st = state.lock().unwrap();
    let trace = || format!("plan: {:?}\nround:\n  {}", plan, st.trace.join("\n  "));
    let Ok(out) = out else {
        return Err(format!(
            "squad did not finish in 120 s; its log:\n{}\n{}",
            log_tail(&sb),
            trace()
        ));
    };
    let run = Run::from(out.unwrap());
    if run.code != 0 {
        return Err(format!("squad failed: {}\n{}", run.stderr, trace()));
    }
    let finals: Vec<String> = (0..FILES.len()).map(|f| sb.read(FILES[f])).collect();
    for c in &st.changes {
        if finals[c.file].contains(&c.token) || c.ok == Some(false) {
            continue;
        }
        if c.ok.is_none() {
            return Err(format!(
                "{}'s {} never came back\n{}",
                c.who,
                c.token,
                trace()
            ));
        }
        let named = c
            .worker
            .and_then(|i| st.waited[i].as_deref())
            .is_some_and(|w| {
                w.contains(r#""state": "conflict""#) && FILES.iter().any(|f| w.contains(f))
            });
        if named {
            continue;
        }
        // Replaced on purpose: a later change of the same line by someone who saw it.
        let replaced = st.changes.iter().any(|d| {
            d.file == c.file
                && d.ok == Some(true)
                && d.line.is_some()
                && d.line == line_of(&d.view, &c.token)
        });
        if replaced {
            continue;
        }
        return Err(format!(
            "{}'s change {} to {} is gone, and nobody was told: {:?}\n{}",
            c.who,
            c.token,
            FILES[c.file],
            finals[c.file],
            trace()
        ));
    }
    Ok(())
}

/// The end of squad's own log (`SQUAD_LOG=debug`), for a round that hung.
fn log_tail(sb: &Sandbox) -> String {
    let mut logs = Vec::new();
    let mut dirs = vec![sb.home.path().to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("squad.log"))
            {
                logs.push(p);
            }
        }
    }
    logs.iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(60)..].join("\n")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The line of `view` that holds `token`.
fn line_of(view: &str, token: &str) -> Option<usize> {
    view.lines().position(|l| l.contains(token))
}

/// Plays every round, [`AT_ONCE`] at a time (a new one as soon as one ends); panics naming
/// the seeds that failed.
pub async fn run_all(seeds: &[u64]) {
    let started = std::time::Instant::now();
    let mut failed = Vec::new();
    use futures::StreamExt;
    let mut rounds = futures::stream::iter(seeds.iter().copied())
        .map(|seed| async move { (seed, tokio::spawn(play(seed)).await.unwrap()) })
        .buffer_unordered(AT_ONCE);
    while let Some((seed, result)) = rounds.next().await {
        if let Err(why) = result {
            eprintln!("round {seed} failed (replay: SQUAD_BASE_SEED={seed}):\n{why}\n");
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
        "rounds that lost a change: {failed:?} (replay with SQUAD_BASE_SEED)"
    );
}
