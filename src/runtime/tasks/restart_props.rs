//! Nothing lost across a restart (issue 54 part 6), as a seeded property of the session
//! log: random workers message each other, claim tasks and finish them on the real team
//! and board; at random kill points the process "dies", losing the events the log writer
//! had not put on disk (any suffix after the last model request: the runtime waits for
//! the log before each one, `session/writer.rs`), and a new life starts from the replayed
//! log as `--continue` does (owed mail restored, the board restored and reconciled, some
//! workers not coming back). Across every life, no message reaches a model twice, every
//! message on record reaches its live recipient once, message ids stay unique, and no task
//! ever has two owners. `SQUAD_SEED=N` replays a round (rounds N to N+199 run). It found
//! message ids used twice after a resume (the counter went on from the owed mail only).

use super::TaskBoard;
use crate::protocol::{AgentId, AgentStatus, Budget, Event, EventKind, TaskStatus};
use crate::runtime::board::PlannedTask;
use crate::runtime::events::EventSink;
use crate::runtime::team::{NewAgent, Team};
use crate::test_rng::Rng;
use std::collections::{BTreeMap, HashMap, HashSet};
use tokio::sync::mpsc;

/// One process's life: its team and board, and the events it emitted.
struct Life {
    team: Team,
    board: TaskBoard,
    rx: mpsc::UnboundedReceiver<Event>,
    /// Agents' inboxes, kept so deliveries to them are not refused.
    _inboxes: Vec<mpsc::UnboundedReceiver<crate::runtime::team::AgentInput>>,
}

/// What every life shares: the log on disk and what the models saw.
struct World {
    root: AgentId,
    workers: Vec<AgentId>,
    /// The durable log: what a restart reads.
    log: Vec<Event>,
    /// Events up to here are on disk (a model request waited for them).
    durable: usize,
    /// Each message text, how many times a model was handed it.
    seen: HashMap<String, u32>,
    /// Workers that did not come back after a restart.
    dead: HashSet<AgentId>,
    sent: u64,
    kills: usize,
}

fn new_agent(id: AgentId, parent: Option<AgentId>, status: AgentStatus) -> NewAgent {
    NewAgent {
        status,
        ..crate::runtime::testing::agent(id, parent, Budget::default())
    }
}

impl World {
    fn agents(&self) -> Vec<AgentId> {
        let mut all = vec![self.root];
        all.extend(self.workers.iter().filter(|w| !self.dead.contains(w)));
        all
    }

    /// Moves what `life` emitted into the log (its live-only events never reach it).
    fn collect(&mut self, life: &mut Life) {
        while let Ok(ev) = life.rx.try_recv() {
            if !ev.kind.is_live_only() {
                self.log.push(ev);
            }
        }
    }

    /// A model request of `agent`: its mail is handed over, and the log is on disk first.
    fn model_call(&mut self, life: &mut Life, agent: AgentId) {
        let before = self.log.len();
        life.team.take_mail(agent);
        self.collect(life);
        for ev in &self.log[before..] {
            if let EventKind::AgentMessagesDelivered { item, .. } = &ev.kind {
                for text in item_texts(item) {
                    *self.seen.entry(text).or_default() += 1;
                }
            }
        }
        self.durable = self.log.len();
    }

    /// The first life: the team spawned and the board planned, on disk.
    fn start(&mut self, rng: &mut Rng) -> Life {
        let (tx, rx) = mpsc::unbounded_channel();
        let team = Team::new(EventSink::new(None, 0, tx), self.root);
        let mut inboxes = vec![
            team.add(new_agent(self.root, None, AgentStatus::Inactive))
                .0,
        ];
        for &w in &self.workers {
            inboxes.push(
                team.add(new_agent(w, Some(self.root), AgentStatus::Inactive))
                    .0,
            );
        }
        let board = TaskBoard::default();
        let areas = [
            "src/a/**",
            "src/b/**",
            "src/a/x.rs",
            "docs/**",
            "tests/t.rs",
        ];
        let tasks: Vec<PlannedTask> = (0..4 + rng.below(5))
            .map(|i| PlannedTask {
                id: format!("T{i}"),
                title: format!("task {i}"),
                description: None,
                role: None,
                depends_on: (i > 0 && rng.below(3) == 0)
                    .then(|| format!("T{}", rng.below(i)))
                    .into_iter()
                    .collect(),
                paths: (rng.below(3) > 0)
                    .then(|| areas[rng.below(areas.len())].to_string())
                    .into_iter()
                    .collect(),
                wait: false,
            })
            .collect();
        board
            .plan(&team, self.root, tasks)
            .unwrap_or_else(|e| panic!("plan: {e}"));
        let mut life = Life {
            team,
            board,
            rx,
            _inboxes: inboxes,
        };
        self.collect(&mut life);
        self.durable = self.log.len();
        life
    }

    /// SIGKILL: what was not on disk is lost; the next life starts from the log as
    /// `--continue` does, and some workers do not come back.
    fn restart(&mut self, rng: &mut Rng, life: Life) -> Life {
        drop(life);
        self.kills += 1;
        let keep = self.durable + rng.below(self.log.len() - self.durable + 1);
        self.log.truncate(keep);
        self.durable = keep;
        let replayed = crate::session::replay(&self.log).unwrap_or_else(|| panic!("replay"));
        let (tx, rx) = mpsc::unbounded_channel();
        let team = Team::new(EventSink::new(None, replayed.last_seq, tx), self.root);
        team.restore_mail_ids(replayed.last_mail_id);
        let mut inboxes = Vec::new();
        for agent in &replayed.agents {
            let mut new = new_agent(agent.id, agent.parent_id, agent.status);
            new.announce = false;
            inboxes.push(team.add(new).0);
            let mail = (agent.mail.iter())
                .map(|m| (m.id, m.from, m.text.clone()))
                .collect::<Vec<_>>();
            if !mail.is_empty() {
                team.restore_mail(agent.id, mail);
            }
        }
        for &w in &self.workers {
            if !self.dead.contains(&w) && rng.below(6) == 0 {
                self.dead.insert(w);
                team.set_status(w, AgentStatus::Failed, Some("did not come back".into()));
            }
        }
        let board = TaskBoard::default();
        board.restore(replayed.tasks);
        let dead = self.dead.clone();
        board.reconcile(&team, &|a| !dead.contains(&a));
        let mut life = Life {
            team,
            board,
            rx,
            _inboxes: inboxes,
        };
        self.collect(&mut life);
        check_owners(&life.board, &self.dead);
        life
    }

    /// One random step of the team.
    fn step(&mut self, rng: &mut Rng, life: &mut Life) {
        let agents = self.agents();
        let a = agents[rng.below(agents.len())];
        let live_workers: Vec<AgentId> = (self.workers.iter().copied())
            .filter(|w| !self.dead.contains(w))
            .collect();
        match rng.below(10) {
            0..=2 => {
                let to = agents[rng.below(agents.len())];
                if to != a {
                    self.sent += 1;
                    let text =
                        format!("message {} from {} to {}", self.sent, a.short(), to.short());
                    let _ = life.team.send_mail(a, to, &text);
                }
            }
            3..=5 => self.model_call(life, a),
            6 | 7 if !live_workers.is_empty() => {
                let w = live_workers[rng.below(live_workers.len())];
                let _ = life.board.claim(&life.team, w, "r", None);
            }
            8 if !live_workers.is_empty() => {
                let w = live_workers[rng.below(live_workers.len())];
                let ok = rng.below(4) > 0;
                if ok {
                    life.board
                        .worker_finished(&life.team, w, true, Some("done".into()));
                } else {
                    life.board.give_back(&life.team, w, "it failed");
                }
            }
            _ => {}
        }
        self.collect(life);
    }
}

/// The message texts a delivery item holds (each after its sender's mark).
fn item_texts(item: &crate::protocol::HistoryItem) -> Vec<String> {
    let crate::protocol::HistoryItem::User { text } = item else {
        return Vec::new();
    };
    (text.lines())
        .filter(|l| l.starts_with("message "))
        .map(str::to_string)
        .collect()
}

/// After a restart every running task is held by one worker that came back.
fn check_owners(board: &TaskBoard, dead: &HashSet<AgentId>) {
    let mut held: HashMap<AgentId, String> = HashMap::new();
    for t in lock_tasks(board) {
        if t.status != TaskStatus::Running {
            continue;
        }
        let owner = t
            .assignee
            .unwrap_or_else(|| panic!("{} runs with no owner", t.id));
        assert!(
            !dead.contains(&owner),
            "{} held by a worker that is gone",
            t.id
        );
        if let Some(other) = held.insert(owner, t.id.clone()) {
            panic!("worker {} holds {other} and {}", owner.short(), t.id);
        }
    }
}

fn lock_tasks(board: &TaskBoard) -> Vec<crate::protocol::Task> {
    let inner = crate::sync::lock(&board.inner);
    inner.board.tasks().into_iter().cloned().collect()
}

/// The log's own story: message ids unique, and each task taken (running) only from a
/// state where nobody held it.
fn check_log(log: &[Event]) {
    let mut ids = HashSet::new();
    let mut state: BTreeMap<String, (TaskStatus, Option<AgentId>)> = BTreeMap::new();
    for ev in log {
        match &ev.kind {
            EventKind::AgentMessage { message_id, .. } => {
                assert!(
                    ids.insert(*message_id),
                    "message id {message_id} used twice"
                );
            }
            EventKind::TaskUpdated { task } => {
                let before = state.insert(task.id.clone(), (task.status, task.assignee));
                if let Some((TaskStatus::Running, Some(held))) = before
                    && task.status == TaskStatus::Running
                    && task.assignee != Some(held)
                {
                    panic!(
                        "{} taken by {:?} while {} held it",
                        task.id,
                        task.assignee,
                        held.short()
                    );
                }
            }
            _ => {}
        }
    }
}

/// One round: 3 to 5 workers, 4 to 8 tasks, 120 steps with 1 to 4 kills among them.
fn round(seed: u64) -> usize {
    let mut rng = Rng(seed);
    let workers = (0..3 + rng.below(3)).map(|_| AgentId::new()).collect();
    let mut world = World {
        root: AgentId::new(),
        workers,
        log: Vec::new(),
        durable: 0,
        seen: HashMap::new(),
        dead: HashSet::new(),
        sent: 0,
        kills: 0,
    };
    let kills: HashSet<usize> = (0..1 + rng.below(4)).map(|_| rng.below(120)).collect();
    let mut life = world.start(&mut rng);
    for i in 0..120 {
        if kills.contains(&i) {
            life = world.restart(&mut rng, life);
        }
        world.step(&mut rng, &mut life);
    }
    // The last life runs until everyone alive took what was owed to it.
    life = world.restart(&mut rng, life);
    for a in world.agents() {
        world.model_call(&mut life, a);
    }
    check_log(&world.log);
    let sent: Vec<(String, AgentId)> = (world.log.iter())
        .filter_map(|e| match &e.kind {
            EventKind::AgentMessage { to, text, .. } => Some((text.clone(), *to)),
            _ => None,
        })
        .collect();
    let on_record: HashSet<&String> = sent.iter().map(|(t, _)| t).collect();
    for (text, n) in &world.seen {
        assert!(*n <= 1, "seed {seed}: {text:?} reached a model {n} times");
        assert!(
            on_record.contains(text),
            "seed {seed}: {text:?} seen but not on record"
        );
    }
    for (text, to) in &sent {
        if !world.dead.contains(to) {
            assert_eq!(world.seen.get(text), Some(&1), "seed {seed}: {text:?} lost");
        }
    }
    world.kills
}

#[test]
fn no_message_lost_or_delivered_twice_and_no_task_owned_twice_across_kills() {
    let first: u64 = std::env::var("SQUAD_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let kills: usize = (first..first + 200).map(round).sum();
    assert!(kills >= 200 * 2, "only {kills} kill points in 200 rounds");
}
