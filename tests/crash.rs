//! Nothing lost on a crash (issue 34): the session log is on disk before each model request
//! goes out, so after a SIGKILL at any moment `--continue` never runs a finished call again
//! and loses no result. Many runs of the real binary against the mock server, each killed
//! at a random request, either at once (before the answer) or a few milliseconds after it
//! (inside the tool call or the next request); each is then continued to its end.
//! `SQUAD_CRASH_RUNS=N` runs N (60 by default), `SQUAD_SEED=S` (or `SQUAD_CRASH_SEED=S`)
//! replays run S.
//!
//! The same for a team (issue 48, `crash/team.rs`): two workers appending a line each in
//! their worktrees, killed mid-command, mid-verification, mid-merge or between calls, then
//! continued: each line lands exactly once or the session names the change as not merged.
//! `SQUAD_CRASH_ROUNDS=N` runs N rounds (40 by default), `SQUAD_SEED=S` replays round S.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "crash/team.rs"]
mod team;

use common::agents::*;
use common::*;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Calls the persona makes, one per request.
const CALLS: usize = 5;
const AT_ONCE: usize = 3;

/// splitmix64.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Where run `seed` is killed: at the request carrying this many results, and how long
/// after it arrived (0: before it is answered).
fn kill_point(seed: u64) -> (usize, u64) {
    let r = mix(seed);
    // Never at the last request: the process must still be there when the kill comes.
    let at = 1 + (r % (CALLS as u64 - 1)) as usize;
    let after = match (r >> 8) % 3 {
        0 => 0,
        _ => (r >> 16) % 15,
    };
    (at, after)
}

fn command(k: usize) -> MockResponse {
    MockResponse::tool_call(
        &format!("c{k}"),
        "run_command",
        &json!({"command": format!("echo c{k} >> runs.log && echo ran c{k}")}).to_string(),
    )
}

/// One run: `Err` says what went wrong.
async fn crash_and_continue(seed: u64) -> Result<(), String> {
    let (at, after) = kill_point(seed);
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[verify]\nenabled = false\n");
    let pid = Arc::new(AtomicI32::new(0));
    // The results each call had in the requests before the kill.
    let seen: Arc<Mutex<BTreeMap<String, String>>> = Arc::default();
    let killed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let continued = Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let (pid, seen, killed, continued) =
            (pid.clone(), seen.clone(), killed.clone(), continued.clone());
        mock.set_responder(move |body| {
            let done = tool_count(body);
            if !killed.load(Ordering::SeqCst) {
                let mut seen = seen.lock().unwrap();
                for (id, out) in tool_messages(body) {
                    seen.insert(id, out);
                }
            }
            if done == at && !killed.swap(true, Ordering::SeqCst) {
                let deadline = Instant::now() + Duration::from_secs(5);
                while pid.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(1));
                }
                let target = pid.load(Ordering::SeqCst);
                let kill = move || {
                    // SAFETY: a signal to the child this test started and still owns.
                    unsafe { libc::kill(target, libc::SIGKILL) };
                };
                if after == 0 {
                    kill();
                } else {
                    std::thread::spawn(move || {
                        std::thread::sleep(Duration::from_millis(after));
                        kill();
                    });
                }
            }
            let answer = if done < CALLS {
                command(done)
            } else {
                MockResponse::text("finished")
            };
            // Until the kill lands the first run must not end (its pid could be reused).
            if done > at && !continued.load(Ordering::SeqCst) {
                return answer.with_delay(Duration::from_millis(300));
            }
            answer
        });
    }
    let mut cmd = sb.command(Some(&mock));
    cmd.args(["exec", "--approval", "auto", "run the commands"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    pid.store(child.id().unwrap() as i32, Ordering::SeqCst);
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .map_err(|_| "the first run did not end".to_string())?
        .unwrap();
    let before: BTreeMap<String, String> = seen.lock().unwrap().clone();
    let requests_before = mock.requests().len();
    if status.success() {
        return Err("the first run was not killed".into());
    }
    continued.store(true, Ordering::SeqCst);
    let run = sb
        .exec(
            &mock,
            &["--approval", "auto", "--resume", "last", "--continue"],
        )
        .await;
    if run.code != 0 || !run.stdout.contains("finished") {
        return Err(format!(
            "the continued run failed: {}{}",
            run.stdout, run.stderr
        ));
    }
    // Every result the model had seen comes back unchanged in the continued run.
    let reqs = mock.requests();
    let first_after = reqs
        .get(requests_before)
        .ok_or("no request after continuing")?;
    let resent: BTreeMap<String, String> = tool_messages(&first_after.body).into_iter().collect();
    for (id, out) in &before {
        if resent.get(id) != Some(out) {
            return Err(format!(
                "the result of {id} was lost: the model had seen {out:?}, after --continue {:?}",
                resent.get(id)
            ));
        }
    }
    // A call whose result the model had seen ran exactly once. One the kill cut short
    // may have run or not: its result went nowhere, and the continued run says it is
    // not finished or asks the model again.
    let ran = std::fs::read_to_string(sb.ws().join("runs.log")).unwrap_or_default();
    for k in 0..CALLS {
        let times = ran.lines().filter(|l| *l == format!("c{k}")).count();
        if before.contains_key(&format!("c{k}")) && times != 1 {
            return Err(format!(
                "c{k}, whose result the model had seen, ran {times} times: {ran:?}"
            ));
        }
    }
    Ok(())
}

/// The seeds to play: the one `SQUAD_SEED` (or `SQUAD_CRASH_SEED`) names, else `runs_var`
/// (`default` when unset) consecutive ones from the clock.
fn seeds(runs_var: &str, default: u64) -> Vec<u64> {
    let one = std::env::var("SQUAD_SEED").or_else(|_| std::env::var("SQUAD_CRASH_SEED"));
    if let Ok(s) = one {
        return vec![s.trim().parse().expect("SQUAD_SEED is a number")];
    }
    let runs: u64 = std::env::var(runs_var)
        .ok()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(default);
    let first = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_secs() * 1000);
    (0..runs).map(|n| first + n).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_session_continues_without_running_a_finished_call_twice_or_losing_a_result() {
    let seeds = seeds("SQUAD_CRASH_RUNS", 60);
    let started = Instant::now();
    let mut failed = Vec::new();
    for batch in seeds.chunks(AT_ONCE) {
        let runs: Vec<_> = batch
            .iter()
            .map(|&seed| tokio::spawn(async move { (seed, crash_and_continue(seed).await) }))
            .collect();
        for r in runs {
            let (seed, result) = r.await.unwrap();
            if let Err(why) = result {
                let (at, after) = kill_point(seed);
                eprintln!(
                    "run {seed} (killed at request {at}, {after} ms after) failed \
                     (replay: SQUAD_CRASH_SEED={seed}): {why}"
                );
                failed.push(seed);
            }
        }
    }
    eprintln!(
        "{} runs in {:.1} s, {} failed",
        seeds.len(),
        started.elapsed().as_secs_f64(),
        failed.len()
    );
    assert!(failed.is_empty(), "runs that failed: {failed:?}");
}

/// A team killed at random moments and continued: no worker's append runs twice or is
/// lost without the session saying so (see `crash/team.rs`).
#[tokio::test(flavor = "multi_thread")]
async fn a_killed_team_continues_without_an_append_twice_or_lost() {
    let seeds = seeds("SQUAD_CRASH_ROUNDS", 40);
    let started = Instant::now();
    let (failed, cuts) = team::play(&seeds, AT_ONCE).await;
    eprintln!(
        "{} rounds in {:.1} s, {} failed; the kills cut: {cuts:?}",
        seeds.len(),
        started.elapsed().as_secs_f64(),
        failed.len()
    );
    assert!(failed.is_empty(), "rounds that failed: {failed:?}");
}

/// A call's record is on disk before it starts (issue 48): squad killed the moment its
/// command has written, before the log's usual write, is continued; the call is named as
/// cut off, never asked for again as if it had not been made, so its append is there once.
/// Before, the reply could still be in the log's buffer: the continued model was asked its
/// first request again and the append ran twice.
#[tokio::test(flavor = "multi_thread")]
async fn a_call_killed_as_it_runs_is_never_asked_for_again() {
    for round in 0..5 {
        let mock = MockServer::start().await;
        let sb = Sandbox::new();
        sb.workspace_config("[verify]\nenabled = false\n");
        let told: Arc<Mutex<Vec<String>>> = Arc::default();
        {
            let told = told.clone();
            mock.set_responder(move |body| match tool_messages(body).last() {
                None => MockResponse::tool_call(
                    "append",
                    "run_command",
                    &json!({"command": "echo RAN >> runs.log; sleep 5"}).to_string(),
                ),
                Some((_, out)) => {
                    told.lock().unwrap().push(out.clone());
                    MockResponse::text("checked")
                }
            });
        }
        let mut cmd = sb.command(Some(&mock));
        cmd.args(["exec", "--approval", "auto", "append once"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let mut child = cmd.spawn().unwrap();
        let pid = child.id().unwrap() as i32;
        let log = sb.ws().join("runs.log");
        let deadline = Instant::now() + Duration::from_secs(30);
        while !std::fs::read_to_string(&log).is_ok_and(|t| t.contains("RAN")) {
            assert!(Instant::now() < deadline, "the command never ran");
            std::thread::sleep(Duration::from_micros(200));
        }
        // SAFETY: a signal to the child this test started and still owns.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        child.wait().await.unwrap();
        let run = sb
            .exec(
                &mock,
                &["--approval", "auto", "--resume", "last", "--continue"],
            )
            .await;
        let ran = std::fs::read_to_string(&log).unwrap();
        assert_eq!(
            ran.lines().count(),
            1,
            "round {round}: the append ran again after --continue: {ran:?}\n{}",
            run.stderr
        );
        let told = told.lock().unwrap().clone();
        assert!(
            told.iter().any(|t| t.contains("killed (a crash)")
                && t.contains("may or may not have taken effect")),
            "round {round}: the model is told its call was cut off: {told:?}\n{}",
            run.stderr
        );
    }
}
