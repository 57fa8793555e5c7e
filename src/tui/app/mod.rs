//! The whole screen as one value: session state plus view state (focus, selection,
//! scroll, overlays). Input goes in through `on_key` / `on_paste` / `on_mouse`, which
//! return the [`Action`]s to carry out and do no I/O, so the loop in `event_loop` is a thin
//! shell and everything here can be driven by tests. Drawing is in `draw.rs`; keys are
//! mapped in `tui/keys.rs`.

use crate::protocol::{AgentId, AgentStatus, Event, EventKind, Op};
use crate::tui::composer::Composer;
use crate::tui::conversation::ConvView;
use crate::tui::handle::SessionInfo;
use crate::tui::question::QuestionView;
use crate::tui::state::{Dialog, SessionState};
use crate::tui::tasks::TaskPanel;
use crate::tui::theme::Theme;
use crate::tui::tree::TreeView;
use crossterm::event::{Event as TermEvent, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::Rect;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

/// Marks the dialog view of a plan (its `plan_id` below), apart from questions' ids.
pub(crate) const PLAN_VIEW: u64 = 1 << 63;
/// The notice a `/role` puts up until the handoff lands or is refused.
pub(crate) const HANDING_OVER: &str = "handing the session to ";

mod draw;

/// Below this width the tree gives way to a one-line agent switcher.
pub const NARROW_WIDTH: u16 = 70;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    Tree,
    /// The task panel.
    Tasks,
    Conversation,
    Composer,
}

/// What the left column shows: the tree, the task panel below it, or the task panel
/// instead of it (`Ctrl+T` steps through them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LeftPane {
    #[default]
    Tree,
    TreeAndTasks,
    Tasks,
}

impl LeftPane {
    pub fn next(self) -> Self {
        match self {
            Self::Tree => Self::TreeAndTasks,
            Self::TreeAndTasks => Self::Tasks,
            Self::Tasks => Self::Tree,
        }
    }

    pub fn shows_tree(self) -> bool {
        self != Self::Tasks
    }

    pub fn shows_tasks(self) -> bool {
        self != Self::Tree
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overlay {
    Help,
    Details(AgentId),
    Stats,
    ConfirmDespawn(AgentId),
    /// The tree, full screen (`/agents`).
    Agents,
    /// MCP servers and their tools (`/mcp`).
    Mcp,
    /// Quitting while workers are at work: asks first (the exit waits in `pending_exit`).
    ConfirmQuit,
    /// The task panel, full screen (`/tasks` on a narrow terminal).
    Tasks,
    /// One row per agent over time (`/timeline`).
    Timeline,
    /// The name for saving a worker's role as a role file (`s` in `/agents`); the name
    /// being typed is `App::role_name`.
    SaveRole(AgentId),
    /// A worker's change in its worktree (`d` in the tree), once the runtime sends it.
    Diff(AgentId),
    /// `/rewind` (Esc Esc): the view is `App::rewind`.
    Rewind,
    /// An undo of this worker's merge would overwrite lines the user changed since; the
    /// files are `App::undo_conflicts`.
    ConfirmUndo(AgentId),
    /// The last `/review`'s findings; opens by itself when a review finishes.
    Review,
    /// `/model` alone: the server's models (once the core answers), `App::model_pick`
    /// highlighted.
    Models,
}

/// What the caller must do after an input.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    Send(Op),
    /// Leave this session's screen (an `Op::Shutdown` has been sent just before).
    Quit(Exit),
}

/// What the user wants after leaving a session's screen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    Quit,
    /// `/new`: a fresh session in the same workspace.
    NewSession,
    /// `/resume [ID]`: a saved session (the latest other one without an id).
    Resume(Option<String>),
}

/// Where things were drawn in the last frame, for mouse hit-testing.
#[derive(Clone, Copy, Debug, Default)]
struct Areas {
    tree: Rect,
    tasks: Rect,
    switcher: Rect,
    conv: Rect,
    conv_inner: Rect,
    composer: Rect,
}

pub struct App {
    pub state: SessionState,
    pub theme: Theme,
    pub focus: Focus,
    pub tree: TreeView,
    pub left: LeftPane,
    pub tasks: TaskPanel,
    pub composer: Composer,
    /// `@path` completion: the core's file list and the popup's state.
    pub(crate) mention: crate::tui::mention::Mention,
    pub overlay: Option<Overlay>,
    pub(crate) views: HashMap<AgentId, ConvView>,
    pub(crate) overlay_scroll: usize,
    pub(crate) approval_scroll: usize,
    /// The approval at the front of the queue and when it got there: answers typed in
    /// the first moments are ignored, so a keystroke meant for the composer cannot
    /// approve something the user has not seen.
    pub(crate) approval_front: Option<(u64, Instant)>,
    /// The question dialog when a question is in front: its highlighted option and field.
    pub(crate) question: Option<QuestionView>,
    pub(crate) last_ctrl_c: Option<Instant>,
    /// Where the user wants to go once they confirm quitting with workers at work.
    pub(crate) pending_exit: Option<Exit>,
    pub(crate) notice: Option<(String, Instant)>,
    /// The name typed in the save-as-role prompt.
    pub(crate) role_name: String,
    /// A role is being saved from this worker: the core's answer shows as a notice.
    pub(crate) saving_role: Option<AgentId>,
    /// `/rewind`'s view while it is open, or while a rewind waits for the core.
    pub(crate) rewind: Option<crate::tui::rewind::RewindView>,
    /// The files an undo would overwrite, while the user is asked.
    pub(crate) undo_conflicts: Vec<String>,
    pub(crate) last_esc: Option<Instant>,
    /// The highlighted row of `/model`'s list.
    pub(crate) model_pick: usize,
    home: Option<PathBuf>,
    areas: Areas,
    /// Whether the last frame was narrow (switcher instead of tree): ← → then switch.
    pub(crate) narrow: bool,
}

impl App {
    pub fn new(info: &SessionInfo, theme: Theme) -> Self {
        Self {
            state: SessionState::new(info),
            theme,
            focus: Focus::Composer,
            tree: TreeView::default(),
            left: LeftPane::default(),
            tasks: TaskPanel::default(),
            composer: Composer::with_history(info.prompts.clone()),
            mention: Default::default(),
            overlay: None,
            views: HashMap::new(),
            overlay_scroll: 0,
            approval_scroll: 0,
            approval_front: None,
            question: None,
            last_ctrl_c: None,
            pending_exit: None,
            notice: None,
            role_name: String::new(),
            saving_role: None,
            rewind: None,
            undo_conflicts: Vec::new(),
            last_esc: None,
            model_pick: 0,
            home: std::env::var_os("HOME").map(PathBuf::from),
            areas: Areas::default(),
            narrow: false,
        }
    }

    /// Sets the home directory shown as `~` (tests pin it for stable snapshots).
    pub fn set_home(&mut self, home: Option<PathBuf>) {
        self.home = home;
    }

    /// Folds in one event from the runtime.
    pub fn apply(&mut self, ev: &Event, now: Instant) {
        let conflicts = self.state.conflicts;
        self.state.apply(ev, now);
        if self.state.conflicts > conflicts && ev.seq > self.state.replayed_seq() {
            self.set_notice("merge conflict: a worker's change was not merged", now);
        }
        self.sync_dialogs(now);
        if let EventKind::Files { paths } = &ev.kind {
            self.mention.set_files(paths.clone());
        }
        self.apply_rewind(ev, now);
        let live = ev.seq > self.state.replayed_seq();
        if live && matches!(ev.kind, EventKind::ReviewFinished { .. }) && self.overlay.is_none() {
            self.overlay = Some(Overlay::Review);
            self.overlay_scroll = 0;
        }
        // A refused `/role` answers with an error: the "handing the session…" notice goes,
        // rather than saying so until it times out.
        if matches!(ev.kind, EventKind::Error { .. })
            && self
                .notice
                .as_ref()
                .is_some_and(|(text, _)| text.starts_with(HANDING_OVER))
        {
            self.notice = None;
        }
        if self.saving_role == Some(ev.agent_id) {
            // The answer to saving the role: saved, or the error that says why not.
            let answer = if let EventKind::RoleSaved { name, .. } = &ev.kind {
                Some(format!("saved role {name}: it loads with the next session"))
            } else if let EventKind::Error { message } = &ev.kind {
                Some(message.clone())
            } else {
                None
            };
            if let Some(text) = answer {
                self.saving_role = None;
                self.set_notice(text, now);
            }
        }
    }

    /// Keeps the view of the dialog in front in step with the queues: a dialog that
    /// comes to the front starts fresh (and its typed-ahead guard starts then).
    pub(crate) fn sync_dialogs(&mut self, now: Instant) {
        let (approval, question) = match self.state.dialog() {
            Some(Dialog::Approval(p)) => (Some(p.request_id), None),
            Some(Dialog::Question(q)) => (None, Some(q.request_id)),
            // A plan's view, in an id space of its own.
            Some(Dialog::Plan(p)) => (None, Some(p.plan_id | PLAN_VIEW)),
            None => (None, None),
        };
        match (approval, self.approval_front) {
            (None, _) => self.approval_front = None,
            (Some(id), Some((cur, _))) if id == cur => {}
            (Some(id), _) => {
                self.approval_front = Some((id, now));
                self.approval_scroll = 0;
            }
        }
        match (question, &self.question) {
            (None, _) => self.question = None,
            (Some(id), Some(view)) if view.request_id == id => {}
            (Some(id), _) => self.question = Some(QuestionView::new(id, now)),
        }
    }

    /// The agent whose conversation is on screen.
    pub fn viewed(&self) -> AgentId {
        self.tree.current(&self.state)
    }

    /// Who the composer's message goes to: `None` for the active persona.
    pub fn target(&self) -> Option<AgentId> {
        let v = self.viewed();
        (v != self.state.root_agent).then_some(v)
    }

    pub(crate) fn view_mut(&mut self, id: AgentId) -> &mut ConvView {
        self.views.entry(id).or_default()
    }

    pub(crate) fn set_notice(&mut self, text: impl Into<String>, now: Instant) {
        self.notice = Some((text.into(), now));
    }

    /// Moves the task selection; the conversation follows the task's worker.
    pub(crate) fn move_task(&mut self, delta: i64) {
        let worker = self.tasks.move_by(&self.state, delta);
        self.follow(worker);
    }

    /// Shows a task's worker, if it has one the screen knows.
    fn follow(&mut self, worker: Option<AgentId>) {
        if let Some(id) = worker {
            self.tree.selected = Some(id);
        }
    }

    /// Whether anything on screen changes with time alone (elapsed clocks, notices).
    pub fn animating(&self) -> bool {
        self.notice.is_some()
            || self
                .state
                .agents
                .values()
                .any(|a| a.status == AgentStatus::Running || a.status == AgentStatus::Waiting)
    }

    /// Any terminal input.
    pub fn on_terminal_event(&mut self, ev: TermEvent, now: Instant) -> Vec<Action> {
        match ev {
            TermEvent::Key(k) => self.on_key(k, now),
            TermEvent::Paste(text) => {
                self.on_paste(&text);
                Vec::new()
            }
            TermEvent::Mouse(m) => self.on_mouse(m),
            _ => Vec::new(),
        }
    }

    /// Bracketed paste: the text goes into the composer as is, newlines included (never
    /// to an approval: pasted text must not answer it), or into a question's answer field
    /// (Enter still sends it).
    pub fn on_paste(&mut self, text: &str) {
        if let Some(view) = &mut self.question {
            view.paste(text);
            return;
        }
        if self.overlay.is_some_and(|o| o != Overlay::Help) {
            self.overlay = None;
        }
        self.focus = Focus::Composer;
        self.composer.paste(text);
    }

    pub fn on_mouse(&mut self, m: MouseEvent) -> Vec<Action> {
        if self.state.dialog().is_some() {
            return Vec::new();
        }
        let inside =
            |r: Rect| m.column >= r.x && m.column < r.right() && m.row >= r.y && m.row < r.bottom();
        match m.kind {
            MouseEventKind::ScrollUp | MouseEventKind::ScrollDown => {
                let up = m.kind == MouseEventKind::ScrollUp;
                if self.overlay == Some(Overlay::Tasks)
                    || (self.overlay.is_none() && inside(self.areas.tasks))
                {
                    self.move_task(if up { -1 } else { 1 });
                } else if matches!(self.overlay, Some(Overlay::Agents | Overlay::SaveRole(_)))
                    || inside(self.areas.tree)
                {
                    self.tree.move_by(&self.state, if up { -1 } else { 1 });
                } else if self.overlay.is_some() {
                    self.overlay_scroll = if up {
                        self.overlay_scroll.saturating_sub(3)
                    } else {
                        self.overlay_scroll + 3
                    };
                } else {
                    let id = self.viewed();
                    self.view_mut(id).scroll(if up { -3 } else { 3 });
                }
            }
            MouseEventKind::Down(MouseButton::Left) => {
                let on_tasks = self.overlay == Some(Overlay::Tasks)
                    || (self.overlay.is_none() && inside(self.areas.tasks));
                if on_tasks {
                    if let Some(worker) = self.tasks.click(&self.state, m.column, m.row) {
                        self.focus = Focus::Tasks;
                        self.follow(worker);
                    }
                } else if let Some(row) = self.tree.row_at(m.column, m.row)
                    && (inside(self.areas.tree) || self.overlay == Some(Overlay::Agents))
                {
                    if self.tree.select_row(&self.state, row) {
                        self.focus = Focus::Tree;
                    }
                } else if self.overlay.is_some() {
                    return Vec::new();
                } else if inside(self.areas.switcher) {
                    self.focus = Focus::Tree;
                    let mid = self.areas.switcher.x + self.areas.switcher.width / 2;
                    self.tree
                        .move_by(&self.state, if m.column < mid { -1 } else { 1 });
                } else if inside(self.areas.conv) {
                    self.focus = Focus::Conversation;
                    let inner = self.areas.conv_inner;
                    if m.row >= inner.y {
                        let id = self.viewed();
                        let row = (m.row - inner.y) as usize;
                        if let Some(idx) = self.view_mut(id).entry_at_row(row)
                            && let Some(a) = self.state.agents.get_mut(&id)
                            && a.conversation.toggle_tool(idx)
                        {
                            self.view_mut(id).selected = Some(idx);
                        }
                    }
                } else if inside(self.areas.composer) {
                    self.focus = Focus::Composer;
                }
            }
            _ => {}
        }
        Vec::new()
    }
}

#[cfg(test)]
mod tests;
