//! A persona that is stuck gets a request for its answer. The evidence is a repeat: with
//! its workers' results all in, nothing running and the board idle, a call it already
//! made with the same answer and nothing changed since (a 1.5B model asked the absent user
//! "What is the content of notes.md?" five times after the results said it all); or,
//! whatever runs, the same call with the same answer a third time with nothing changed in
//! between (where the loop guard adds its note). "Nothing changed" is the files' content,
//! not the calls made: a write of what a file already holds changes nothing, and files
//! written back to what they held are where they were (a 1.5B model wrote the same
//! test_calc.py three times; another edited a file and put it back between handoffs). A
//! command's changes cannot be seen, so after one nothing counts as a repeat. Its next request then goes without
//! tools, with a notice saying why. A capable supervisor that reads its workers' files and runs
//! the tests before it answers makes new calls and is never stopped here; neither a green
//! test run nor a count of calls is evidence of anything (`tests/capable_models.rs`).
//!
//! A reply to that request that is only a tool call written as text (what a model trained
//! on fenced tool calls writes when none is offered) is no answer: it is asked once more,
//! and that request is a short one of its own: the user's message and what the turn's
//! tools and workers reported, without the tool-laden history and prompt that kept
//! priming calls. The answer is still the model's.
//!
//! A `run_tests` that fails after the tests passed in the turn names the files changed
//! since and what they held then, to put back (evidence: a failure after a pass). In the
//! TUI the same model rewrote the test file without its import right after its fix
//! passed, then edited calc.py round and round.
//!
//! All of it is help for weak models: with `assist = "off"` for the persona's model the
//! layer does nothing.

use crate::protocol::{HistoryItem, TurnEnd};
use crate::runtime::cx::{AgentCx, Layer, ModelNext, Policy, Starting, ToolNext};
use crate::runtime::points::{AfterTurn, CallKind, Called, ModelCall, Moment, Purpose};
use crate::runtime::points::{Reviewed, ToolUse, Verdict};
use crate::runtime::policies::loop_guard::guard::hash_json;
use crate::runtime::request::RequestSetup;
use crate::runtime::tasks::TaskBoard;
use crate::runtime::tool_call::{ToolOut, ToolReq};
use crate::text::clip;
use crate::tools::{Reports, TESTS_FAILED, TESTS_PASSED};
use async_trait::async_trait;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// What the request without tools ends with: why the tools went.
const ANSWER_NOW: &str = "You made the same call again and got the same answer; nothing has \
                          changed since. What you have found and what your workers reported \
                          is above. Answer the user now, in plain text: what was done and \
                          what the result is.";

/// Why the tools went when the tests pass again on files put back as they were.
const BACK_TO_GREEN: &str = "The tests pass again, and the files you changed in this turn \
                             are as they were when the tests first passed: the changes made \
                             since then broke the tests and are undone. Answer the user now, \
                             in plain text: what was done and what the result is.";

/// The persona's next turn after a reply that was no answer.
const PLAIN_WORDS: &str = "[squad] That was a tool call written as text, not an answer, and \
                           no tool can run now. Write your answer to the user as plain \
                           sentences: what was done and what the result is.";

/// The short request's prompt.
const REPORT_PROMPT: &str = "You report to the user of a coding assistant. The work is \
                             finished. Answer the user's message below in two to five plain \
                             sentences, using only the facts given. Write no JSON, no code \
                             fence and no tool call: no tool can run.";

/// Whether an agent on this model gets squad's help for weak models (`Config::assists`).
pub type AssistFor = Arc<dyn Fn(Option<&str>) -> bool + Send + Sync>;

/// The persona's answer layer, and the word its workers send up when they settle.
pub struct AnswerPolicy {
    board: Arc<TaskBoard>,
    assist: AssistFor,
    /// A worker of the persona settled in the persona's current turn.
    results_in: Arc<AtomicBool>,
}

impl AnswerPolicy {
    pub fn new(board: Arc<TaskBoard>, assist: AssistFor) -> Self {
        Self {
            board,
            assist,
            results_in: Arc::new(AtomicBool::new(false)),
        }
    }
}

impl Policy for AnswerPolicy {
    fn layer_for(&self, agent: &Starting) -> Option<Box<dyn Layer>> {
        if agent.parent_is_root {
            return Some(Box::new(ResultsIn(self.results_in.clone())));
        }
        if agent.is_worker() {
            return None;
        }
        Some(Box::new(AnswerLayer {
            board: self.board.clone(),
            assist: self.assist.clone(),
            results_in: self.results_in.clone(),
            turn: Mutex::new(Turn::default()),
        }))
    }
}

/// A worker of the persona: when its turns end, its outcome is on its way up.
struct ResultsIn(Arc<AtomicBool>);

#[async_trait]
impl Layer for ResultsIn {
    async fn hear(&self, _cx: &AgentCx, moment: Moment) {
        if let Moment::Settled(_) = moment {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

pub struct AnswerLayer {
    board: Arc<TaskBoard>,
    assist: AssistFor,
    results_in: Arc<AtomicBool>,
    turn: Mutex<Turn>,
}

/// What the layer knows of the persona's turn.
struct Turn {
    /// The persona was asked again for its answer: its next turn goes without tools.
    answer_due: bool,
    /// The persona repeated a call with all done: its next request goes without tools.
    stuck: bool,
    /// What the request without tools says of why.
    why: &'static str,
    /// Where the changed files stood at each passing test run of the turn.
    green: HashSet<u64>,
    /// Why the tools went is in the history (said once).
    told: bool,
    /// The persona's calls this turn, each with its answer and the state of the files it
    /// changed (hashed), and how often each was made.
    seen: HashMap<u64, u32>,
    /// Files the persona changed this turn, with what they held before (`None`: absent).
    changed: BTreeMap<String, Option<String>>,
    /// Where those files stand against that (hashed): a call repeated once the files came
    /// back to where they stood is repeated with nothing changed, and a write of what a
    /// file already holds changes nothing.
    files: u64,
    /// Changes squad could not see (a command's): each starts a state of its own.
    unseen: u64,
    /// Files changed since the tests last passed, with what they held then (`None`: absent),
    /// so a run that fails again can say which change broke them and what to put back.
    since_green: BTreeMap<String, Option<String>>,
    /// The persona's last test run passed.
    last_run_passed: bool,
    /// The persona's calls whose output its answer reports (a test run, a change, its
    /// workers' results), as their handlers say: what the short request carries.
    reporting: HashSet<String>,
}

impl Default for Turn {
    fn default() -> Self {
        Self {
            answer_due: false,
            stuck: false,
            why: ANSWER_NOW,
            green: HashSet::new(),
            told: false,
            seen: HashMap::new(),
            changed: BTreeMap::new(),
            files: 0,
            unseen: 0,
            since_green: BTreeMap::new(),
            last_run_passed: false,
            reporting: HashSet::new(),
        }
    }
}

/// The same call with the same answer, nothing changed in between, this many times: the
/// persona is stuck even with workers at work (the loop guard notes the same repeat and
/// ends the turn at its fifth).
const STUCK_AFTER: u32 = 3;

/// The same read with the same answer this many times in a turn, whatever was written in
/// between: one before the loop guard's stop, so the persona answers instead.
const READ_STUCK_AFTER: u32 = 4;

/// Of a file's content before a change, what a regression note quotes.
const KEPT_CHARS: usize = 2_000;

impl AnswerLayer {
    /// On a model that gets help.
    fn helps(&self, cx: &AgentCx) -> bool {
        (self.assist)(cx.team().model(cx.id()).as_deref())
    }

    /// The persona's workers of this turn are all finished and told, and the board is idle.
    fn all_done(&self, cx: &AgentCx) -> bool {
        self.results_in.load(Ordering::Relaxed)
            && !self.board.has_work()
            && cx
                .team()
                .children(cx.id())
                .into_iter()
                .all(|c| cx.team().is_settled(c))
    }

    fn turn(&self) -> std::sync::MutexGuard<'_, Turn> {
        crate::sync::lock(&self.turn)
    }
}

/// A call and its answer (without the times it took: a test run that took 1.9 s is the
/// run that took 1.8 s).
fn mark(call: &Reviewed<'_>) -> u64 {
    let mut h = DefaultHasher::new();
    call.name.hash(&mut h);
    match serde_json::from_str::<serde_json::Value>(call.arguments) {
        Ok(v) => hash_json(&v, &mut h),
        Err(_) => call.arguments.hash(&mut h),
    }
    without_times(call.output).hash(&mut h);
    h.finish()
}

/// A call in a state of the files: what counts as made again. `apart` keeps the count
/// of reads across writes (below) from meeting the counts bound to a state.
fn in_state(call: u64, state: (u64, u64), apart: bool) -> u64 {
    let mut h = DefaultHasher::new();
    (call, state, apart).hash(&mut h);
    h.finish()
}

/// `text` without durations (`1.8s`, `0.02s`, `350ms`).
pub(super) fn without_times(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(|c: char| c.is_ascii_digit()) {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let len = tail
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(tail.len());
        let after = &tail[len..];
        let unit = ["ms", "s"]
            .into_iter()
            .find(|u| after.starts_with(u) && !after[u.len()..].starts_with(char::is_alphanumeric));
        match unit {
            Some(u) => rest = &after[u.len()..],
            None => {
                out.push_str(&tail[..len]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A file's text as far as a repeat goes: lines without trailing blanks, blank lines
/// left out (a model that writes a file back as it was drops or adds them).
fn normalized(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines().map(str::trim_end).filter(|l| !l.is_empty()) {
        out.push_str(line);
        out.push('\n');
    }
    out
}

impl Turn {
    fn state(&self) -> (u64, u64) {
        (self.files, self.unseen)
    }

    /// After a change: where the files changed this turn stand against what they held
    /// before it (a file back as it was is no change).
    fn restate(&mut self, root: &Path, writes: Option<&[String]>) -> bool {
        if writes.is_none() {
            // What a command changed is not known.
            self.unseen += 1;
            return true;
        }
        let state = self.files_state(root);
        std::mem::replace(&mut self.files, state) != state
    }

    /// Where the files changed this turn stand now (0: all as they were).
    fn files_state(&self, root: &Path) -> u64 {
        let mut h = DefaultHasher::new();
        let mut differs = false;
        for (path, before) in self.changed.iter() {
            let now = std::fs::read_to_string(root.join(path))
                .ok()
                .map(|t| normalized(&t));
            if now != before.as_deref().map(normalized) {
                differs = true;
                path.hash(&mut h);
                now.hash(&mut h);
            }
        }
        if differs { h.finish() } else { 0 }
    }

    /// A test run's outcome: passing again where the tests passed before, after a
    /// failure, is a round trip (a 1.5B persona whose fix passed handed the session on;
    /// the next personas broke the test, put the files back when the run failed, passed
    /// again, and went round once more).
    /// Called before `last_run_passed` takes this run: every run since the last pass
    /// failed, so "a failure in between" is "the run before this one failed".
    fn tests_ran(&mut self, root: &Path, passed: bool) {
        if !passed {
            return;
        }
        let state = self.files_state(root);
        let seen = !self.green.insert(state);
        if seen && !self.last_run_passed {
            self.why = BACK_TO_GREEN;
            self.stuck = true;
        }
    }

    /// Before a change: what each file it writes held (for the state of the files), and,
    /// while the tests pass, what it held before its first change since.
    fn before_change(&mut self, root: &Path, tool: &ToolUse<'_>) {
        if let Some(paths) = tool.writes {
            for path in paths {
                if !self.changed.contains_key(path) {
                    let before = std::fs::read_to_string(root.join(path)).ok();
                    self.changed.insert(path.clone(), before);
                }
            }
        }
        if !self.last_run_passed {
            return;
        }
        let paths: Vec<String> = match tool.writes {
            Some(paths) => paths.to_vec(),
            None => tool
                .args
                .get("path")
                .and_then(|p| p.as_str())
                .map(|p| vec![p.to_string()])
                .unwrap_or_default(),
        };
        for path in paths {
            if let std::collections::btree_map::Entry::Vacant(slot) =
                self.since_green.entry(path.clone())
            {
                slot.insert(std::fs::read_to_string(root.join(&path)).ok());
            }
        }
    }

    /// Counts a call that worked: true when it is a repeat that makes the answer due.
    fn counts_as_stuck(&mut self, call: &Reviewed<'_>, all_done: impl Fn() -> bool) -> bool {
        let call_mark = mark(call);
        // A read answered the same a fourth time in the turn is a repeat whatever the file
        // tools wrote in between: the writes did not touch what it reads (a 1.5B architect
        // searched calc.py for `add` between identical edits that each added a line, until
        // the loop guard stopped its turn with no answer). A command in between may have
        // changed anything: it starts afresh.
        let read_again = call.kind == CallKind::Read && {
            let n = self
                .seen
                .entry(in_state(call_mark, (0, self.unseen), true))
                .or_insert(0);
            *n += 1;
            *n >= READ_STUCK_AFTER
        };
        // What the team or the user answers (a handoff, a question, a wait) does not come
        // from the files: made again with the same answer, it is the same call whatever was
        // written in between (a 1.5B tester and implementer handed the session to each
        // other with the same reason, each adding the same line to calc.py on the way,
        // round after round).
        let state = match call.kind {
            CallKind::Other => (0, 0),
            CallKind::Read | CallKind::Change => self.state(),
        };
        let n = self
            .seen
            .entry(in_state(call_mark, state, false))
            .or_insert(0);
        *n += 1;
        let times = if read_again { STUCK_AFTER } else { *n };
        // Made again with all done, or a third time whatever else runs.
        (times >= 2 && all_done()) || times >= STUCK_AFTER
    }

    /// A run that fails after the tests passed in the turn: the files changed since, and
    /// what they held then.
    fn regression_note(&self) -> Option<String> {
        if self.since_green.is_empty() {
            return None;
        }
        let mut note = String::from(
            "[squad] The tests passed at an earlier run of this turn; since then you changed \
             these files, and now they fail. Unless the task asked for that change, put each \
             back as it was (write_file with this content), then run the tests again:",
        );
        for (path, before) in self.since_green.iter() {
            match before {
                Some(text) => note.push_str(&format!(
                    "\n\n{path} as it was:\n```\n{}\n```",
                    clip(text, KEPT_CHARS).trim_end()
                )),
                None => note.push_str(&format!("\n\n{path} did not exist: delete it")),
            }
        }
        Some(note)
    }
}

impl AnswerLayer {
    /// The persona's request once its answer is due (no tools, the report prompt), or once
    /// it is stuck (no tools, told why once).
    fn shape(&self, cx: &AgentCx, req: &mut RequestSetup) {
        let mut turn = self.turn();
        if turn.answer_due {
            // The request was just built from the persona's history: it is the whole turn.
            req.request.history = Arc::new(report_request(&req.request.history, &turn.reporting));
            req.request.system_prompt = REPORT_PROMPT.to_string();
            req.request.tools = Arc::from(Vec::new());
            return;
        }
        if !turn.stuck {
            return;
        }
        // Said once, in the history (the log and the screen show why the tools went).
        if !std::mem::replace(&mut turn.told, true) {
            cx.team().push_item(cx.id(), HistoryItem::notice(turn.why));
            if let Some(view) = cx.team().request_view(cx.id()) {
                req.request.history = view.history;
            }
        }
        req.request.tools = Arc::from(Vec::new());
    }

    /// A call that ran and did not fail: what it changed and what it reported.
    fn after_tool(&self, cx: &AgentCx, tool: &ToolUse<'_>, output: &str) {
        let root = cx.root();
        let mut turn = self.turn();
        if tool.changes_files() && turn.restate(root.root(), tool.writes) {
            // Something changed: whatever it repeats next may answer otherwise.
            turn.stuck = false;
            turn.told = false;
        }
        if tool.reports != Reports::Nothing {
            turn.reporting.insert(tool.call_id.to_string());
        }
        if tool.reports == Reports::TestRun {
            let passed = output.starts_with(TESTS_PASSED);
            turn.tests_ran(root.root(), passed);
            turn.last_run_passed = passed;
            if passed {
                turn.since_green.clear();
            }
        }
    }
}

#[async_trait]
impl Layer for AnswerLayer {
    async fn hear(&self, _cx: &AgentCx, moment: Moment) {
        if moment != Moment::TurnStart {
            return;
        }
        let mut turn = self.turn();
        if !turn.answer_due {
            self.results_in.store(false, Ordering::Relaxed);
            *turn = Turn {
                why: turn.why,
                unseen: turn.unseen,
                ..Turn::default()
            };
        }
    }

    async fn tool_call(&self, cx: &AgentCx, req: &mut ToolReq<'_>, next: ToolNext<'_>) -> ToolOut {
        if self.helps(cx) && req.view().changes_files() {
            self.turn().before_change(cx.root().root(), &req.view());
        }
        let out = next.run(cx, req).await;
        if out.did_run() && !out.is_error && self.helps(cx) {
            self.after_tool(cx, &req.view(), &out.output);
        }
        out
    }

    /// A repeat once all is done makes the answer due; a run that fails after the tests
    /// passed names the files changed since, and what they held (a 1.5B persona whose fix
    /// passed rewrote test_calc.py without its import, then edited calc.py round and round
    /// while the tests failed).
    fn review(&self, cx: &AgentCx, call: &Reviewed<'_>) -> Verdict {
        if !self.helps(cx) {
            return Verdict::Pass;
        }
        let mut turn = self.turn();
        if !call.is_error && turn.counts_as_stuck(call, || self.all_done(cx)) {
            turn.why = ANSWER_NOW;
            turn.stuck = true;
        }
        if call.reports != Reports::TestRun || !call.output.starts_with(TESTS_FAILED) {
            return Verdict::Pass;
        }
        turn.regression_note().map_or(Verdict::Pass, Verdict::Note)
    }

    async fn model_call(&self, cx: &AgentCx, call: &mut ModelCall, next: ModelNext<'_>) -> Called {
        if call.purpose == Purpose::Turn && self.helps(cx) {
            self.shape(cx, &mut call.setup);
        }
        next.run(cx, call).await
    }

    async fn turn_end(&self, cx: &AgentCx, end: TurnEnd, final_text: &str) -> AfterTurn {
        let mut turn = self.turn();
        if !self.helps(cx) || (!turn.stuck && !turn.answer_due) {
            return AfterTurn::Rest;
        }
        // Asked once more at most.
        let again = end == TurnEnd::Completed
            && crate::model::text_calls::is_calls(final_text)
            && !std::mem::replace(&mut turn.answer_due, true);
        if again {
            return AfterTurn::Continue(PLAIN_WORDS.to_string());
        }
        turn.answer_due = false;
        AfterTurn::Rest
    }
}

mod report;
use report::report_request;

#[cfg(test)]
mod tests;
