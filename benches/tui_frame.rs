//! Time to draw one TUI frame, with a long history and a big agent tree against a small
//! one. Run with `cargo bench --bench tui_frame`. Each measured frame follows a streamed
//! delta (the common case while an agent answers), drawn into ratatui's `TestBackend`.

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use squad::protocol::{
    AgentId, AgentStatus, ApprovalPolicy, Event, EventKind, HistoryItem, ToolCall,
};
use squad::tui::{App, SessionInfo, Theme};
use std::time::{Duration, Instant};

const FRAMES: usize = 300;

fn ev(seq: &mut u64, agent_id: AgentId, kind: EventKind) -> Event {
    *seq += 1;
    Event {
        seq: *seq,
        ts: 0,
        agent_id,
        kind,
    }
}

fn build(messages: usize, agents: usize) -> (App, AgentId) {
    let root = AgentId::new();
    let info = SessionInfo {
        log_path: None,
        replayed_seq: 0,
        prompts: Vec::new(),
        session_id: "bench".into(),
        workspace: "/srv/bench".into(),
        model: "gpt-4.1".into(),
        approval: ApprovalPolicy::Ask,
        role: "copilot".into(),
        root_agent: root,
    };
    let mut app = App::new(&info, Theme::default());
    let now = Instant::now();
    let mut seq = 0;
    let spawn = |seq: &mut u64, id, parent, role: &str| {
        ev(
            seq,
            id,
            EventKind::AgentSpawned {
                parent_id: parent,
                role: role.into(),
                model: "gpt-4.1-mini".into(),
                task: "Refactor the module and keep the tests green".into(),
                depth: 0,
            },
        )
    };
    app.apply(&spawn(&mut seq, root, None, "copilot"), now);
    // A tree of workers: each one's parent is an earlier agent, a few levels deep.
    let mut ids = vec![root];
    for i in 1..agents {
        let id = AgentId::new();
        let parent = ids[(i - 1) / 4];
        app.apply(&spawn(&mut seq, id, Some(parent), "coder"), now);
        let status = [
            AgentStatus::Running,
            AgentStatus::Completed,
            AgentStatus::Waiting,
            AgentStatus::Failed,
        ][i % 4];
        let kind = EventKind::AgentStatus {
            parent_id: Some(parent),
            status,
            reason: None,
        };
        app.apply(&ev(&mut seq, id, kind), now);
        let usage = EventKind::Usage {
            model: "m".into(),
            prompt_tokens: 1000 + i as u64,
            completion_tokens: 100,
            cost_usd: 0.001,
            context_tokens: 0,
            context_window: 0,
            cached_tokens: 0,
        };
        app.apply(&ev(&mut seq, id, usage), now);
        ids.push(id);
    }
    for i in 0..messages {
        let item = match i % 4 {
            0 => HistoryItem::user(format!("Question number {i}: what does this function do?")),
            1 => HistoryItem::Assistant {
                text: format!(
                    "## Answer {i}\n\nIt **parses** the input and returns `Result<T>`:\n\n- one\n- two\n\n```rust\nfn f() {{}}\n```"
                ),
                tool_calls: vec![ToolCall {
                    id: format!("c{i}"),
                    name: "read_file".into(),
                    arguments: r#"{"path":"src/lib.rs"}"#.into(),
                }],
                reasoning: Vec::new(),
            },
            2 => HistoryItem::ToolResult {
                call_id: format!("c{}", i - 1),
                name: "read_file".into(),
                output: "fn main() {}\n".repeat(20),
                is_error: false,
            },
            _ => HistoryItem::notice(format!("worker {i} returned its results")),
        };
        app.apply(&ev(&mut seq, root, EventKind::ItemAdded { item }), now);
    }
    let running = EventKind::AgentStatus {
        parent_id: None,
        status: AgentStatus::Running,
        reason: None,
    };
    app.apply(&ev(&mut seq, root, running), now);
    (app, root)
}

fn measure(label: &str, messages: usize, agents: usize) {
    let (mut app, root) = build(messages, agents);
    let mut term = match Terminal::new(TestBackend::new(160, 48)) {
        Ok(t) => t,
        Err(e) => match e {},
    };
    let t0 = Instant::now();
    let _ = term.draw(|f| app.render(f, Instant::now()));
    let first = t0.elapsed();

    let mut seq = 1_000_000;
    let mut times: Vec<Duration> = Vec::with_capacity(FRAMES);
    for i in 0..FRAMES {
        let delta = EventKind::TextDelta {
            delta: format!("word{i} "),
        };
        let start = Instant::now();
        app.apply(&ev(&mut seq, root, delta), start);
        let _ = term.draw(|f| app.render(f, Instant::now()));
        times.push(start.elapsed());
    }
    times.sort();
    let mean = times.iter().sum::<Duration>() / FRAMES as u32;
    let median = times[FRAMES / 2];
    let p99 = times[FRAMES * 99 / 100];
    println!(
        "{label:<34} first {:>8.3} ms | then per frame: mean {:>6.3} ms, median {:>6.3} ms, p99 {:>6.3} ms",
        first.as_secs_f64() * 1e3,
        mean.as_secs_f64() * 1e3,
        median.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3,
    );
}

fn main() {
    println!("TUI frame at 160x48, each frame after one streamed delta ({FRAMES} frames):");
    measure("10 messages, 10 agents", 10, 10);
    measure("10,000 messages, 1,000 agents", 10_000, 1_000);
}
