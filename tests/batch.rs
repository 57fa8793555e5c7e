//! A worker per row (issue 55 part 5), through the real binary and the mock server:
//! `squad exec --batch` on 100 rows in a git workspace, each row's worker writing its
//! file (merged through the queue, its claim checked), ten rows whose first result misses
//! the schema and are tried again, two that never match and fail named; the output file
//! complete. Killed with SIGKILL at a seeded row (`SQUAD_SEED`), `--continue` runs only
//! the rows the log did not have settled, none twice. Every row's first request is the
//! same bytes up to the row's own text, so a server's prompt cache serves them all.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const ROWS: usize = 100;
const TEMPLATE: &str = "Row {id}: write out/{id}.txt holding {name}; report its id and len.";

/// Rows whose first result misses the schema (`len` left out), then match.
fn fails_once(n: usize) -> bool {
    n % 10 == 3
}

/// Rows whose result never matches.
fn fails_always(n: usize) -> bool {
    n == 50 || n == 77
}

fn id(n: usize) -> String {
    format!("r{n:03}")
}

fn schema() -> Value {
    json!({"type": "object", "properties": {
        "id": {"type": "string"}, "len": {"type": "integer", "minimum": 0}
    }, "required": ["id", "len"]})
}

/// A git workspace with the rows and the schema.
fn workspace() -> Sandbox {
    let sb = Sandbox::new();
    let mut rows = String::from("id,name\n");
    for n in 1..=ROWS {
        rows.push_str(&format!("{},\"name {n}, of {ROWS}\"\n", id(n)));
    }
    sb.write("rows.csv", &rows);
    sb.write("schema.json", &schema().to_string());
    sb.write("README.md", "rows\n");
    git(sb.ws(), &["init", "-q", "-b", "main"]);
    git(sb.ws(), &["add", "."]);
    git(
        sb.ws(),
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "rows",
        ],
    );
    sb.workspace_config("[team]\nrelease_after_s = 0\n");
    sb
}

/// What the mock saw: each row's first requests (attempt by attempt) and the results it
/// gave that match the schema.
#[derive(Default)]
struct Seen {
    starts: BTreeMap<String, u32>,
    /// Rows whose worker was told an earlier attempt did not count.
    retried: std::collections::BTreeSet<String>,
    good: BTreeMap<String, u32>,
}

/// The row a worker's request is for, and whether it is a retry.
fn row_of(body: &Value) -> Option<(String, bool)> {
    let task = transcript(body)
        .into_iter()
        .find(|(role, _)| role == "user")
        .map(|(_, text)| text)?;
    let rest = task.strip_prefix("Row ")?;
    let id = rest.split(':').next()?.to_string();
    Some((id, task.contains("did not count")))
}

/// Answers every request: the persona with words; a row's worker writes its file, then
/// returns its result (off the schema where the row says so).
fn responder(seen: Arc<Mutex<Seen>>) -> impl Fn(&Value) -> MockResponse + Send + Sync {
    move |body| {
        let Some((row, retry)) = row_of(body).filter(|_| is_worker(body)) else {
            return MockResponse::text("ok");
        };
        let n: usize = row[1..].parse().unwrap();
        let path = format!("out/{row}.txt");
        if tool_count(body) == 0 {
            let mut seen = seen.lock().unwrap();
            *seen.starts.entry(row.clone()).or_default() += 1;
            if retry {
                seen.retried.insert(row.clone());
            }
            drop(seen);
            let content = match retry {
                true => format!("name {n}, again\n"),
                false => format!("name {n}\n"),
            };
            return MockResponse::tool_call(
                "w",
                "write_file",
                &json!({"path": path, "content": content}).to_string(),
            )
            .with_usage(1000, 20);
        }
        let bad = fails_always(n) || (fails_once(n) && !retry);
        let summary = match bad {
            true => json!({"id": row}),
            false => json!({"id": row, "len": n}),
        };
        if !bad {
            *seen.lock().unwrap().good.entry(row.clone()).or_default() += 1;
        }
        let change = if retry { "modified" } else { "created" };
        let args = json!({"result": {
            "status": "success",
            "summary": summary.to_string(),
            "artifacts": [{"file_path": path, "description": "the row's file", "change_type": change}],
            "known_issues": []
        }});
        MockResponse::tool_call("r", "return_results", &args.to_string()).with_usage(1100, 30)
    }
}

fn batch_args(output: &str) -> Vec<String> {
    [
        "--approval",
        "auto",
        "--batch",
        "rows.csv",
        "--template",
        TEMPLATE,
        "--schema",
        "schema.json",
        "--output",
        output,
        "--max-concurrency",
        "8",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

async fn exec_batch(sb: &Sandbox, mock: &MockServer, extra: &[&str], output: &str) -> Run {
    let mut cmd = sb.command(Some(mock));
    cmd.arg("exec").args(extra).args(batch_args(output));
    let out = tokio::time::timeout(Duration::from_secs(400), cmd.output())
        .await
        .expect("the batch did not finish within 400 s")
        .unwrap();
    Run::from(out)
}

/// The output file's rows by id: (status, attempts, result, tokens).
type OutRow = (String, String, String, String);

fn output_rows(sb: &Sandbox, output: &str) -> BTreeMap<String, OutRow> {
    let text = sb.read(output);
    let mut reader = csv_rows(&text);
    let header = reader.remove(0);
    assert_eq!(
        header,
        [
            "id", "status", "attempts", "result", "error", "tokens", "cost_usd"
        ]
    );
    reader
        .into_iter()
        .map(|r| {
            (
                r[0].clone(),
                (r[1].clone(), r[2].clone(), r[3].clone(), r[5].clone()),
            )
        })
        .collect()
}

/// A CSV text's records (quoted fields may hold commas; none here holds a newline).
fn csv_rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .map(|line| {
            let (mut fields, mut cur, mut quoted) = (Vec::new(), String::new(), false);
            let mut chars = line.chars().peekable();
            while let Some(c) = chars.next() {
                match c {
                    '"' if quoted && chars.peek() == Some(&'"') => {
                        chars.next();
                        cur.push('"');
                    }
                    '"' => quoted = !quoted,
                    ',' if !quoted => fields.push(std::mem::take(&mut cur)),
                    c => cur.push(c),
                }
            }
            fields.push(cur);
            fields
        })
        .collect()
}

/// 98 rows done (their files merged into the workspace), the two that never match failed
/// and named, the ten tried again done on their second attempt.
/// `killed`: a row at work when squad was killed may have spent more (its worker's change
/// had merged before the kill, so the next one's claim was corrected).
fn assert_finished(sb: &Sandbox, output: &str, stderr: &str, killed: bool) {
    let rows = output_rows(sb, output);
    assert_eq!(rows.len(), ROWS, "{rows:?}");
    for n in 1..=ROWS {
        let (status, attempts, result, tokens) = &rows[&id(n)];
        // Each attempt's worker made two requests (1,020 and 1,130 tokens); a row's
        // figures count every attempt.
        let tries: u64 = attempts.parse().unwrap();
        let tokens: u64 = tokens.parse().unwrap();
        match killed {
            false => assert_eq!(tokens, tries * 2150, "{}", id(n)),
            true => assert!(tokens >= tries * 2150, "{}", id(n)),
        }
        if fails_always(n) {
            assert_eq!(
                (status.as_str(), attempts.as_str()),
                ("failed", "2"),
                "{}",
                id(n)
            );
            continue;
        }
        assert_eq!(status, "done", "{}", id(n));
        let want = if fails_once(n) { 2 } else { 1 };
        match killed {
            false => assert_eq!(tries, want, "{}", id(n)),
            // A row at work at the kill whose change had merged goes again from its
            // start: its file is there already, so its first claim ("created") fails.
            true => assert!((want..=2).contains(&tries), "{}", id(n)),
        }
        let result: Value = serde_json::from_str(result).unwrap();
        assert_eq!(result, json!({"id": id(n), "len": n}));
        assert!(
            sb.ws().join(format!("out/{}.txt", id(n))).is_file(),
            "{}",
            id(n)
        );
    }
    assert!(
        stderr.contains("2 failed (r050, r077)"),
        "the failed rows are named: {stderr}"
    );
    assert!(stderr.contains("ETA "), "progress with an ETA: {stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_rows_end_98_done_and_2_failed_named_with_the_output_complete() {
    let sb = workspace();
    let mock = MockServer::start().await;
    let seen = Arc::new(Mutex::new(Seen::default()));
    mock.set_responder(responder(seen.clone()));
    let run = exec_batch(&sb, &mock, &[], "results.csv").await;
    assert_eq!(run.code, 1, "two rows failed: {}", run.stderr);
    assert!(
        run.stderr
            .contains("batch results.csv: 2 of 100 rows failed: r050, r077"),
        "{}",
        run.stderr
    );
    assert_finished(&sb, "results.csv", &run.stderr, false);
    // `--max-concurrency 8`: never more rows at work at once, and more than one.
    let most = (run.stderr.lines())
        .filter_map(|l| {
            l.split(" running")
                .next()?
                .rsplit(", ")
                .next()?
                .parse()
                .ok()
        })
        .max()
        .unwrap_or(0usize);
    assert!((2..=8).contains(&most), "at most {most} rows at once");
    let seen = seen.lock().unwrap();
    for n in 1..=ROWS {
        let tries = if fails_once(n) || fails_always(n) {
            2
        } else {
            1
        };
        assert_eq!(seen.starts.get(&id(n)), Some(&tries), "{}", id(n));
    }
    // Only a row whose attempt failed hears why; the others hear nothing squad-made.
    let failing: Vec<String> = (1..=ROWS)
        .filter(|&n| fails_once(n) || fails_always(n))
        .map(id)
        .collect();
    assert_eq!(seen.retried.iter().cloned().collect::<Vec<_>>(), failing);
    drop(seen);
    assert_one_prefix(&mock.requests());
}

/// Every row's first request is the same bytes until its own task: the system prompt and
/// the tools, then the row's message last.
fn assert_one_prefix(requests: &[RecordedRequest]) {
    let firsts: Vec<&RecordedRequest> = requests
        .iter()
        .filter(|r| is_worker(&r.body) && tool_count(&r.body) == 0)
        .collect();
    assert!(firsts.len() >= ROWS, "{} first requests", firsts.len());
    let prefix = |r: &RecordedRequest| -> String {
        let raw = String::from_utf8(r.raw.to_vec()).unwrap();
        let task = row_of(&r.body).unwrap().0;
        let at = raw
            .find(&format!("Row {task}:"))
            .expect("the row's text is in the body");
        raw[..at].to_string()
    };
    let first = prefix(firsts[0]);
    assert!(first.len() > 1000, "a real prefix: {} bytes", first.len());
    for r in &firsts[1..] {
        assert_eq!(
            prefix(r),
            first,
            "a row's request differs before its own text"
        );
    }
    // And the row's text is last: nothing follows the row's message in the body but the
    // request's closing fields.
    let raw = String::from_utf8(firsts[1].raw.to_vec()).unwrap();
    let row_at = raw.find("Row r").unwrap();
    assert!(!raw[row_at..].contains("\"role\":\"system\""), "{raw}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_killed_at_a_seeded_row_goes_on_with_only_the_rows_not_settled() {
    let seed: u64 = std::env::var("SQUAD_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::process::id() as u64);
    // splitmix64, as src/test_rng.rs.
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    let kill_at = 10 + ((z ^ (z >> 31)) % 80) as usize;
    eprintln!("SQUAD_SEED={seed}: killed once {kill_at} rows settled");

    let sb = workspace();
    let mock = MockServer::start().await;
    let seen = Arc::new(Mutex::new(Seen::default()));
    mock.set_responder(responder(seen.clone()));
    let mut cmd = sb.command(Some(&mock));
    cmd.arg("exec").args(batch_args("results.csv"));
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let settled_at_kill = loop {
        let n = std::fs::read_to_string(sb.ws().join("results.csv"))
            .map(|t| t.lines().count().saturating_sub(1))
            .unwrap_or(0);
        if n >= kill_at {
            child.start_kill().unwrap();
            let _ = child.wait().await;
            break output_rows(&sb, "results.csv");
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the batch ended before row {kill_at}"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    assert!(settled_at_kill.len() >= kill_at && settled_at_kill.len() < ROWS);
    let before = std::mem::take(&mut *seen.lock().unwrap());

    let run = exec_batch(&sb, &mock, &["--continue"], "results.csv").await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "{} settled before and not run again",
            settled_at_kill.len()
        )),
        "{}",
        run.stderr
    );
    assert_finished(&sb, "results.csv", &run.stderr, true);
    let after = seen.lock().unwrap();
    for id in settled_at_kill.keys() {
        assert_eq!(
            after.starts.get(id),
            None,
            "{id} settled before the kill ran again"
        );
    }
    // No row's result counted twice: each row matched the schema once in all.
    for n in (1..=ROWS).filter(|&n| !fails_always(n)) {
        let good = before.good.get(&id(n)).unwrap_or(&0) + after.good.get(&id(n)).unwrap_or(&0);
        let settled_done = settled_at_kill.get(&id(n)).is_some_and(|r| r.0 == "done");
        // A row at work when squad was killed may have answered before the log had it
        // settled: it is run again, and its result is counted once in the output.
        assert!(good >= 1, "{}", id(n));
        if settled_done {
            assert_eq!(good, 1, "{} done before the kill answered again", id(n));
        }
    }
}

/// The tool: a supervisor whose role names `spawn_batch` in `tools` runs a batch of JSON
/// Lines rows into a JSON Lines output and is answered when every row settled; the
/// copilot, whose role names no tools, is not offered it (its first request is as it was).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawn_batch_runs_a_batch_for_a_role_that_names_it_and_only_for_it() {
    let sb = Sandbox::new();
    let rows: String = (1..=5)
        .map(|n| format!("{}\n", json!({"id": id(n), "name": format!("name {n}")})))
        .collect();
    sb.write("rows.jsonl", &rows);
    sb.write(
        ".squad/roles/batcher.toml",
        "name = \"batcher\"\ndescription = \"runs batches\"\nsystem_prompt = \"You run \
         batches.\"\ntools = [\"read_file\", \"write_file\", \"spawn_batch\"]\nenabled_agents = [\"implementer\"]\n",
    );
    let mock = MockServer::start().await;
    let seen = Arc::new(Mutex::new(Seen::default()));
    let workers = responder(seen.clone());
    mock.set_responder(move |body| {
        if is_worker(body) {
            return workers(body);
        }
        if !offered(body).contains(&"spawn_batch".to_string()) {
            return MockResponse::text("no batch tool");
        }
        match tool_messages(body).last() {
            None => MockResponse::tool_call(
                "b",
                "spawn_batch",
                &json!({"rows": "rows.jsonl", "template": TEMPLATE, "id_column": "id",
                    "role_name": "implementer", "output": "out/results.jsonl",
                    "schema": schema(), "max_concurrency": 2})
                .to_string(),
            ),
            Some((_, out)) => MockResponse::text(&format!("batch said: {out}")),
        }
    });
    let run = sb
        .exec(
            &mock,
            &["--role", "batcher", "--approval", "auto", "label the rows"],
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("batch said: ▤ batch out/results.jsonl: 5 done;"),
        "{}",
        run.stdout
    );
    let lines: Vec<Value> = sb
        .read("out/results.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5);
    assert!(lines.iter().all(|l| l["status"] == "done"), "{lines:?}");
    assert_eq!(lines[2]["result"], json!({"id": "r003", "len": 3}));
    assert_eq!(lines[2]["attempts"], 2, "r003 misses its schema once");

    // The copilot: no spawn_batch in its requests.
    let plain = sb.exec(&mock, &["--approval", "auto", "hello"]).await;
    assert_eq!(plain.stdout.trim(), "no batch tool", "{}", plain.stderr);
}

/// The names of the tools a request offers.
fn offered(body: &Value) -> Vec<String> {
    (body["tools"].as_array().into_iter().flatten())
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect()
}

/// The batch is quoted before it starts (issue 55 part 1): every row left, as the worker
/// its spawn would start, told as a `quote` event; a quote above what is left of the
/// session's budget refuses the batch naming both figures, and no row's worker starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_is_quoted_before_it_starts_and_refused_above_what_is_left() {
    let sb = workspace();
    sb.workspace_config("[team]\nrelease_after_s = 0\n[limits]\nmax_session_cost_usd = 0.05\n");
    let mock = MockServer::start().await;
    let seen = Arc::new(Mutex::new(Seen::default()));
    mock.set_responder(responder(seen.clone()));
    let run = exec_batch(&sb, &mock, &["--json"], "results.csv").await;
    assert_ne!(run.code, 0, "{}", run.stderr);
    let events = run.events();
    let quote = of_type(&events, "quote")
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no quote: {}", run.stderr));
    assert_eq!(quote["fan_out"], true, "{quote:#}");
    assert_eq!(quote["workers"].as_array().map(Vec::len), Some(ROWS));
    let (cost, left) = (
        quote["cost_usd"].as_f64().unwrap(),
        quote["left_usd"].as_f64().unwrap(),
    );
    assert!(cost > left, "{quote:#}");
    let said = format!("{}{}", run.stdout, run.stderr);
    assert!(
        said.contains(&::squad::protocol::dollars(cost))
            && said.contains(&::squad::protocol::dollars(left))
            && said.contains("left of the budget"),
        "{said}"
    );
    assert!(seen.lock().unwrap().starts.is_empty(), "a row started");
    assert!(!sb.ws().join("results.csv").exists());
}
