//! What each agent was doing when: segments of model calls, tool calls, waiting and
//! approvals, for `/timeline`. Each event is placed by its `ts`, so the part of a resumed
//! session read back from its log has its times too; the time squad was not running
//! between two runs is cut out. A log written before events had a clock (`ts` 0) starts
//! no segment.
//!
//! An agent's activity follows from its status and what it has in flight: an approval
//! pending beats everything, `waiting` comes next (a supervisor in `wait_for_agents` is
//! waiting, not running a tool), then a tool call in flight, and a running agent with no
//! tool call in flight is in a model call. Idle statuses have no segment. Tool calls'
//! begin and end are not logged, so in the part read back they count as model time.
//!
//! Times are session time: a `Duration` since the epoch, less the cut-out gaps.
//!
//! The team's own news (who messaged whom, claims and give-backs, plan decisions) is kept
//! beside the segments, each at its time, for the timeline's lines under the rows.

use crate::protocol::{AgentId, AgentStatus, Event, EventKind, TeamNews, TeamNewsFold};
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Activity {
    Model,
    Tool,
    Waiting,
    Approval,
}

impl Activity {
    /// Which of two activities a slice of the timeline shows when both cover it alike:
    /// the higher.
    fn rank(self) -> usize {
        match self {
            Self::Model => 0,
            Self::Tool => 1,
            Self::Waiting => 2,
            Self::Approval => 3,
        }
    }
}

/// Every activity, by rank.
const ALL: [Activity; 4] = [
    Activity::Model,
    Activity::Tool,
    Activity::Waiting,
    Activity::Approval,
];

/// One stretch of one activity; `end` is `None` while it goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub activity: Activity,
    pub start: Duration,
    pub end: Option<Duration>,
}

impl Segment {
    /// How much of `[from, to)` this segment covers, counting an open one up to `now`.
    fn overlap(&self, from: Duration, to: Duration, now: Duration) -> Duration {
        let end = self.end.unwrap_or(now).min(to);
        end.saturating_sub(self.start.max(from))
    }
}

#[derive(Clone, Debug, Default)]
struct Track {
    status: Option<AgentStatus>,
    tools: HashSet<String>,
    approvals: HashSet<u64>,
    segments: Vec<Segment>,
}

impl Track {
    fn activity(&self) -> Option<Activity> {
        if !self.approvals.is_empty() {
            return Some(Activity::Approval);
        }
        match self.status? {
            AgentStatus::Waiting => Some(Activity::Waiting),
            AgentStatus::Running if self.tools.is_empty() => Some(Activity::Model),
            AgentStatus::Running => Some(Activity::Tool),
            _ => None,
        }
    }

    /// Closes the open segment and opens the next one if the activity changed at `now`.
    fn settle(&mut self, now: Duration) {
        let next = self.activity();
        let open = self.segments.last().filter(|s| s.end.is_none()).copied();
        if open.map(|s| s.activity) == next {
            return;
        }
        if open.is_some()
            && let Some(last) = self.segments.last_mut()
        {
            if last.start == now {
                // It lasted no time (changes folded in one batch): not worth a segment.
                self.segments.pop();
            } else {
                last.end = Some(now);
            }
        }
        if let Some(activity) = next {
            // Back to what just ended at this very moment: the same stretch goes on.
            match self.segments.last_mut() {
                Some(last) if last.activity == activity && last.end == Some(now) => {
                    last.end = None;
                }
                _ => self.segments.push(Segment {
                    activity,
                    start: now,
                    end: None,
                }),
            }
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Timeline {
    tracks: HashMap<AgentId, Track>,
    /// The first stamped event, in session time: where the time axis starts.
    start: Option<Duration>,
    /// The latest `ts` seen.
    last_ts: Option<u64>,
    /// Milliseconds cut out so far: the time between one run's last event and the next
    /// run's start.
    gap_ms: u64,
    /// Events without a clock were folded in (a log from before events had one).
    unclocked: bool,
    /// The latest live event with a clock: when it arrived and its `ts`, to read the wall
    /// clock at a frame's `now`.
    anchor: Option<(Instant, u64)>,
    /// The team's news in the order it came, at its session time (`None`: no clock).
    news: Vec<(Option<Duration>, TeamNews)>,
    team: TeamNewsFold,
}

impl Timeline {
    /// Folds in one event at its `ts`; `arrived` is when a live one reached the screen
    /// (`None` for one read back from the log).
    pub fn observe(&mut self, ev: &Event, arrived: Option<Instant>) {
        if let Some(at) = arrived.filter(|_| ev.ts > 0) {
            self.anchor = Some((at, ev.ts));
        }
        if ev.ts > 0
            && let EventKind::SessionStarted { resumed: true, .. } = ev.kind
            && let Some(last) = self.last_ts
        {
            // Nothing ran while squad was stopped: whatever was under way ended with the
            // last run's last event, and the stretch until this one is left out.
            let end = self.session_time(last);
            for track in self.tracks.values_mut() {
                track.status = None;
                track.tools.clear();
                track.approvals.clear();
                track.settle(end);
            }
            self.gap_ms += ev.ts.saturating_sub(last);
        }
        let track = self.tracks.entry(ev.agent_id).or_default();
        // Only these start or end something in flight.
        if let EventKind::AgentStatus { status, .. } = &ev.kind {
            track.status = Some(*status);
            if status.is_idle() {
                // Nothing is in flight for an agent at rest, whatever was missed.
                track.tools.clear();
                track.approvals.clear();
            }
        } else if matches!(ev.kind, EventKind::Despawned { .. }) {
            track.status = Some(AgentStatus::Cancelled);
            track.tools.clear();
            track.approvals.clear();
        } else if let EventKind::ToolCallBegin { call_id } = &ev.kind {
            track.tools.insert(call_id.clone());
        } else if let EventKind::ToolCallEnd { call_id, .. } = &ev.kind {
            track.tools.remove(call_id);
        } else if let EventKind::ApprovalRequested { request_id, .. } = &ev.kind {
            track.approvals.insert(*request_id);
        } else if let EventKind::ApprovalResolved { request_id, .. } = &ev.kind {
            track.approvals.remove(request_id);
        }
        let news = self.team.observe(ev);
        if ev.ts == 0 {
            self.unclocked = true;
            self.news.extend(news.map(|n| (None, n)));
            return;
        }
        // Events of two agents may arrive a little out of `seq` order: time never goes back.
        let ts = self.last_ts.map_or(ev.ts, |l| l.max(ev.ts));
        self.last_ts = Some(ts);
        let now = Duration::from_millis(ts.saturating_sub(self.gap_ms));
        self.start.get_or_insert(now);
        track.settle(now);
        self.news.extend(news.map(|n| (Some(now), n)));
    }

    /// The team's news, oldest first, each at its session time when it had a clock.
    pub fn news(&self) -> &[(Option<Duration>, TeamNews)] {
        &self.news
    }

    /// Where the axis starts: the first event with a clock.
    pub fn start(&self) -> Option<Duration> {
        self.start
    }

    /// Session time of the wall-clock instant `ts` (milliseconds since the epoch).
    pub fn session_time(&self, ts: u64) -> Duration {
        Duration::from_millis(ts.saturating_sub(self.gap_ms))
    }

    /// The wall clock at `now` (milliseconds since the epoch), read off the last live
    /// event; before any, the last event read back. `None` when no event had a clock.
    pub fn wall_ms(&self, now: Instant) -> Option<u64> {
        match self.anchor {
            Some((at, ts)) => Some(ts + now.saturating_duration_since(at).as_millis() as u64),
            None => self.last_ts,
        }
    }

    /// Whether the time between two runs was cut out.
    pub fn has_gap(&self) -> bool {
        self.gap_ms > 0
    }

    /// Whether events without a clock were folded in: their time is not shown.
    pub fn unclocked(&self) -> bool {
        self.unclocked
    }

    pub fn segments(&self, id: AgentId) -> &[Segment] {
        self.tracks.get(&id).map_or(&[], |t| t.segments.as_slice())
    }

    /// What `id` did in each of `cells` equal slices of `[from, to)`: the activity that
    /// covered most of the slice (on a tie the one more worth seeing: an approval, then
    /// waiting, then a tool call). A slice the agent was busy in for any time is never
    /// blank; `None` where it did nothing.
    pub fn cells(
        &self,
        id: AgentId,
        from: Duration,
        to: Duration,
        cells: usize,
    ) -> Vec<Option<Activity>> {
        let mut out = vec![None; cells];
        let span = to.saturating_sub(from);
        if cells == 0 || span.is_zero() {
            return out;
        }
        let segments = self.segments(id);
        let edge = |i: usize| from + span.mul_f64(i as f64 / cells as f64);
        // Segments are in time order: `first` is the earliest that may still matter.
        let mut first = 0;
        for (i, cell) in out.iter_mut().enumerate() {
            let (a, b) = (edge(i), if i + 1 == cells { to } else { edge(i + 1) });
            while first < segments.len() && segments[first].end.is_some_and(|e| e <= a) {
                first += 1;
            }
            // Time covered by each activity, by rank.
            let mut covered = [Duration::ZERO; 4];
            for s in &segments[first..] {
                if s.start >= b {
                    break;
                }
                covered[s.activity.rank()] += s.overlap(a, b, to);
            }
            *cell = ALL
                .into_iter()
                .filter(|x| !covered[x.rank()].is_zero())
                // Later in `ALL` wins a tie: `max_by_key` keeps the last maximum.
                .max_by_key(|x| covered[x.rank()]);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ApprovalAction, ApprovalDecision};

    /// 2026-01-01T00:00:00Z, in milliseconds since the epoch.
    const T0: u64 = 1_767_225_600_000;

    struct Clock {
        tl: Timeline,
        id: AgentId,
    }

    impl Clock {
        fn new() -> Self {
            Self {
                tl: Timeline::default(),
                id: AgentId::new(),
            }
        }

        fn at(&self, s: u64) -> Duration {
            Duration::from_millis(T0) + Duration::from_secs(s)
        }

        fn ev(&mut self, s: u64, kind: EventKind) {
            let ev = Event {
                seq: 1,
                ts: T0 + s * 1000,
                agent_id: self.id,
                kind,
            };
            self.tl.observe(&ev, None);
        }

        fn status(&mut self, s: u64, status: AgentStatus) {
            self.ev(
                s,
                EventKind::AgentStatus {
                    parent_id: None,
                    status,
                    reason: None,
                },
            );
        }

        fn tool(&mut self, s: u64, call: &str, begin: bool) {
            let call_id = call.to_string();
            self.ev(
                s,
                if begin {
                    EventKind::ToolCallBegin { call_id }
                } else {
                    EventKind::ToolCallEnd {
                        call_id,
                        duration_ms: 0,
                    }
                },
            );
        }

        /// `(activity, start s, end s)` of every segment.
        fn spans(&self) -> Vec<(Activity, u64, Option<u64>)> {
            let secs = |t: Duration| (t - Duration::from_millis(T0)).as_secs();
            self.tl
                .segments(self.id)
                .iter()
                .map(|s| (s.activity, secs(s.start), s.end.map(secs)))
                .collect()
        }
    }

    #[test]
    fn running_is_a_model_call_until_a_tool_runs() {
        use Activity::*;
        let mut c = Clock::new();
        c.status(0, AgentStatus::Running);
        c.tool(2, "a", true);
        c.tool(3, "b", true);
        c.tool(4, "a", false);
        c.tool(5, "b", false);
        c.status(7, AgentStatus::Inactive);
        assert_eq!(
            c.spans(),
            [(Model, 0, Some(2)), (Tool, 2, Some(5)), (Model, 5, Some(7))]
        );
    }

    #[test]
    fn approval_beats_waiting_and_waiting_beats_a_tool_in_flight() {
        use Activity::*;
        let mut c = Clock::new();
        c.status(0, AgentStatus::Running);
        // wait_for_agents: a tool in flight, but the agent waits.
        c.tool(1, "w", true);
        c.status(1, AgentStatus::Waiting);
        c.tool(4, "w", false);
        c.status(4, AgentStatus::Running);
        // An approval: the gate sets waiting, then asks, in the same instant.
        c.status(6, AgentStatus::Waiting);
        c.ev(
            6,
            EventKind::ApprovalRequested {
                request_id: 9,
                role: "coder".into(),
                tool: "shell".into(),
                action: ApprovalAction::Command {
                    command: "ls".into(),
                },
            },
        );
        c.ev(
            9,
            EventKind::ApprovalResolved {
                request_id: 9,
                decision: ApprovalDecision::Approve,
            },
        );
        c.status(9, AgentStatus::Running);
        assert_eq!(
            c.spans(),
            [
                (Model, 0, Some(1)),
                (Waiting, 1, Some(4)),
                (Model, 4, Some(6)),
                (Approval, 6, Some(9)),
                (Model, 9, None),
            ]
        );
    }

    #[test]
    fn a_stretch_interrupted_for_no_time_goes_on() {
        use Activity::*;
        let mut c = Clock::new();
        c.status(0, AgentStatus::Running);
        // A tool that began and ended within one batch leaves no trace.
        c.tool(3, "x", true);
        c.tool(3, "x", false);
        c.status(5, AgentStatus::Completed);
        assert_eq!(c.spans(), [(Model, 0, Some(5))]);
    }

    #[test]
    fn team_news_is_kept_at_its_time() {
        let mut c = Clock::new();
        let to = AgentId::new();
        c.status(0, AgentStatus::Running);
        c.ev(
            3,
            EventKind::AgentMessage {
                to,
                message_id: 1,
                text: "ping".into(),
            },
        );
        // Not team news.
        c.tool(4, "t", true);
        let news = c.tl.news();
        assert_eq!(news.len(), 1);
        assert_eq!(news[0].0, Some(c.at(3)));
        assert_eq!(news[0].1.agent(), c.id);
    }

    #[test]
    fn events_of_an_old_log_have_no_clock() {
        let mut c = Clock::new();
        let ev = Event {
            seq: 1,
            ts: 0,
            agent_id: c.id,
            kind: EventKind::AgentStatus {
                parent_id: None,
                status: AgentStatus::Running,
                reason: None,
            },
        };
        c.tl.observe(&ev, None);
        assert!(c.spans().is_empty());
        assert_eq!(c.tl.start(), None);
        assert!(c.tl.unclocked());
        // The status is known, so the first stamped event opens its segment.
        c.tool(10, "t", true);
        assert_eq!(c.spans(), [(Activity::Tool, 10, None)]);
    }

    #[test]
    fn cells_show_what_covered_most_of_each_slice() {
        use Activity::*;
        let mut c = Clock::new();
        c.status(0, AgentStatus::Running);
        c.tool(3, "t", true);
        c.tool(4, "t", false);
        c.status(5, AgentStatus::Waiting);
        c.status(8, AgentStatus::Inactive);
        // Ten one-second cells over 0..10 s.
        let cells = c.tl.cells(c.id, c.at(0), c.at(10), 10);
        assert_eq!(
            cells,
            [
                Some(Model),
                Some(Model),
                Some(Model),
                Some(Tool),
                Some(Model),
                Some(Waiting),
                Some(Waiting),
                Some(Waiting),
                None,
                None
            ]
        );
        // Five two-second cells: where the tool's second ties with the model's, the tool
        // shows, and waiting beats a model call alike.
        let cells = c.tl.cells(c.id, c.at(0), c.at(10), 5);
        assert_eq!(
            cells,
            [Some(Model), Some(Tool), Some(Waiting), Some(Waiting), None]
        );
        let coarse = c.tl.cells(c.id, c.at(0), c.at(100), 4);
        assert_eq!(coarse, [Some(Model), None, None, None]);
    }

    #[test]
    fn an_open_segment_runs_to_now() {
        let mut c = Clock::new();
        c.status(2, AgentStatus::Running);
        let cells = c.tl.cells(c.id, c.at(0), c.at(4), 4);
        assert_eq!(
            cells,
            [None, None, Some(Activity::Model), Some(Activity::Model)]
        );
    }

    #[test]
    fn the_time_between_two_runs_is_cut_out() {
        use Activity::*;
        let mut c = Clock::new();
        // The first run: a model call from 0 s, cut off by a crash after 4 s.
        c.status(0, AgentStatus::Running);
        c.tool(4, "t", true);
        // Resumed an hour later; the agent comes back interrupted, then runs again.
        let resumed = EventKind::SessionStarted {
            session_id: "s".into(),
            workspace: "/w".into(),
            model: "m".into(),
            role: "copilot".into(),
            approval: crate::protocol::ApprovalPolicy::Ask,
            resumed: true,
            roles: vec![],
        };
        c.ev(3604, resumed);
        c.status(3604, AgentStatus::Interrupted);
        c.status(3606, AgentStatus::Running);
        c.status(3609, AgentStatus::Inactive);
        assert!(c.tl.has_gap());
        assert_eq!(c.tl.session_time(T0 + 3_609_000), c.at(9));
        assert_eq!(c.spans(), [(Model, 0, Some(4)), (Model, 6, Some(9))]);
    }
}
