//! Key handling: (app, key, now) → view changes and the [`Action`]s to carry out. No
//! I/O happens here, so every binding is unit-tested without a terminal.

use crate::protocol::{AgentId, AgentStatus, ApprovalDecision, Op};
use crate::tui::app::{Action, App, Exit, Focus, HANDING_OVER, LeftPane, Overlay};
use crate::tui::commands::{self, GoalArg, SlashCommand};
use crate::tui::question::Reply;
use crate::tui::save_role::{self, NameKey};
use crate::tui::state::Dialog;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use std::time::{Duration, Instant};

mod mention;
mod overlays;
mod plan;
mod popup;
mod rewind;

/// Two Ctrl+C within this window quit.
const DOUBLE_CTRL_C: Duration = Duration::from_secs(1);
/// Answers to an approval or a question typed sooner than this after it appeared are
/// ignored.
pub const APPROVAL_GUARD: Duration = Duration::from_millis(300);

impl App {
    /// Leaves the session's screen, after asking when workers are at work.
    fn leave(&mut self, exit: Exit) -> Vec<Action> {
        if self.state.busy_workers() > 0 && self.overlay != Some(Overlay::ConfirmQuit) {
            self.pending_exit = Some(exit);
            self.open(Overlay::ConfirmQuit);
            return Vec::new();
        }
        self.overlay = None;
        self.pending_exit = None;
        vec![Action::Send(Op::Shutdown), Action::Quit(exit)]
    }

    fn toggle_pause(&mut self, now: Instant) -> Vec<Action> {
        if self.state.paused {
            self.set_notice("going on…", now);
            vec![Action::Send(Op::Resume)]
        } else {
            self.set_notice("pausing: calls under way finish, no new one starts", now);
            vec![Action::Send(Op::Pause)]
        }
    }
}

impl App {
    pub fn on_key(&mut self, key: KeyEvent, now: Instant) -> Vec<Action> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && matches!(key.code, KeyCode::Char('c' | 'C')) {
            return self.ctrl_c(now);
        }
        if ctrl
            && matches!(key.code, KeyCode::Char('p' | 'P'))
            && self.overlay.is_none()
            && self.state.dialog().is_none()
        {
            return self.toggle_pause(now);
        }
        if ctrl && matches!(key.code, KeyCode::Char('l' | 'L')) && self.overlay.is_none() {
            return self.toggle_lead(now);
        }
        match self.state.dialog() {
            Some(Dialog::Approval(_)) => return self.approval_key(key, now),
            Some(Dialog::Question(_)) => return self.question_key(key, now),
            Some(Dialog::Plan(_)) => return self.plan_key(key, now),
            None => {}
        }
        if ctrl && matches!(key.code, KeyCode::Char('t' | 'T')) {
            self.toggle_tasks();
            return Vec::new();
        }
        if let Some(o) = self.overlay {
            return self.overlay_key(o, key, now);
        }
        if let Some(actions) = self.mention_key(key) {
            return actions;
        }
        match key.code {
            KeyCode::F(1) => {
                self.open(Overlay::Help);
                return Vec::new();
            }
            KeyCode::Esc => return self.esc(now),
            KeyCode::BackTab => {
                self.cycle_focus(false);
                return Vec::new();
            }
            KeyCode::Tab => {
                if self.focus == Focus::Composer && self.try_complete() {
                    return Vec::new();
                }
                self.cycle_focus(true);
                return Vec::new();
            }
            _ => {}
        }
        match self.focus {
            Focus::Tree => self.tree_key(key, now),
            Focus::Tasks => self.tasks_key(key, now),
            Focus::Conversation => self.conversation_key(key, now),
            Focus::Composer => self.composer_key(key, now),
        }
    }

    fn ctrl_c(&mut self, now: Instant) -> Vec<Action> {
        if self
            .last_ctrl_c
            .is_some_and(|t| now.saturating_duration_since(t) <= DOUBLE_CTRL_C)
        {
            return self.leave(Exit::Quit);
        }
        // The first one clears a draft (Up brings it back), as in a shell.
        if self.overlay.is_none() && !self.composer.is_empty() {
            self.composer.take();
            self.set_notice("draft cleared (↑ brings it back) · Ctrl+C twice quits", now);
            return Vec::new();
        }
        self.last_ctrl_c = Some(now);
        let id = self.viewed();
        if self.state.is_busy(id) {
            self.set_notice("interrupted · Ctrl+C again to quit", now);
            vec![Action::Send(Op::Interrupt { agent_id: id })]
        } else {
            self.set_notice("Ctrl+C again to quit", now);
            Vec::new()
        }
    }

    fn interrupt_viewed(&mut self, now: Instant) -> Vec<Action> {
        let id = self.viewed();
        if self.state.is_busy(id) {
            self.set_notice("interrupting…", now);
            vec![Action::Send(Op::Interrupt { agent_id: id })]
        } else {
            Vec::new()
        }
    }

    fn approval_key(&mut self, key: KeyEvent, now: Instant) -> Vec<Action> {
        let decision = match key.code {
            KeyCode::Char('y' | 'Y') => Some(ApprovalDecision::Approve),
            KeyCode::Char('a' | 'A') => Some(ApprovalDecision::ApproveForSession),
            KeyCode::Char('n' | 'N') | KeyCode::Esc => Some(ApprovalDecision::Deny),
            KeyCode::Up | KeyCode::Char('k') => {
                self.approval_scroll = self.approval_scroll.saturating_sub(1);
                None
            }
            KeyCode::Down | KeyCode::Char('j') => {
                self.approval_scroll += 1;
                None
            }
            KeyCode::PageUp => {
                self.approval_scroll = self.approval_scroll.saturating_sub(10);
                None
            }
            KeyCode::PageDown => {
                self.approval_scroll += 10;
                None
            }
            _ => None,
        };
        let Some(decision) = decision else {
            return Vec::new();
        };
        let Some((request_id, shown)) = self.approval_front else {
            return Vec::new();
        };
        if now.saturating_duration_since(shown) < APPROVAL_GUARD {
            return Vec::new();
        }
        self.state.resolve_approval(request_id);
        self.sync_dialogs(now);
        vec![Action::Send(Op::Approval {
            request_id,
            decision,
        })]
    }

    /// A key for the question dialog: every key goes to it (none in its first moments).
    fn question_key(&mut self, key: KeyEvent, now: Instant) -> Vec<Action> {
        let Some(Dialog::Question(q)) = self.state.dialog() else {
            return Vec::new();
        };
        let options = q.options.clone();
        let Some(view) = self.question.as_mut() else {
            return Vec::new();
        };
        if now.saturating_duration_since(view.shown) < APPROVAL_GUARD {
            return Vec::new();
        }
        let request_id = view.request_id;
        let answer = match view.key(key, &options) {
            None => return Vec::new(),
            Some(Reply::Answer(text)) => Some(text),
            Some(Reply::Decline) => None,
        };
        self.state.resolve_question(request_id);
        self.sync_dialogs(now);
        vec![Action::Send(Op::Answer { request_id, answer })]
    }

    /// The panes `Tab` steps through, as the screen shows them now.
    fn focus_order(&self) -> Vec<Focus> {
        let left = match (self.narrow, self.left) {
            (true, _) | (false, LeftPane::Tree) => vec![Focus::Tree],
            (false, LeftPane::TreeAndTasks) => vec![Focus::Tree, Focus::Tasks],
            (false, LeftPane::Tasks) => vec![Focus::Tasks],
        };
        left.into_iter()
            .chain([Focus::Conversation, Focus::Composer])
            .collect()
    }

    fn cycle_focus(&mut self, forward: bool) {
        let order = self.focus_order();
        let n = order.len();
        let i = order.iter().position(|f| *f == self.focus).unwrap_or(0);
        self.focus = order[if forward {
            (i + 1) % n
        } else {
            (i + n - 1) % n
        }];
    }

    /// `Ctrl+T`: tree → tree and tasks → tasks → tree; on a narrow screen, the task panel
    /// full screen and back.
    fn toggle_tasks(&mut self) {
        match self.overlay {
            Some(Overlay::Tasks) => self.overlay = None,
            Some(_) => {}
            None if self.narrow => self.show_tasks(),
            None => {
                self.left = self.left.next();
                if self.focus == Focus::Tree && !self.left.shows_tree() {
                    self.focus = Focus::Tasks;
                } else if self.focus == Focus::Tasks && !self.left.shows_tasks() {
                    self.focus = Focus::Tree;
                }
            }
        }
    }

    /// `/tasks`: the panel in view and focused (below the tree unless it already shows).
    fn show_tasks(&mut self) {
        if self.narrow {
            self.open(Overlay::Tasks);
        } else if !self.left.shows_tasks() {
            self.left = LeftPane::TreeAndTasks;
        }
        self.focus = Focus::Tasks;
        if self.tasks.selected.is_none() {
            self.move_task(0);
        }
    }

    /// A printable key in a pane that does not use it goes to the composer.
    fn type_into_composer(&mut self, key: KeyEvent) -> Vec<Action> {
        let plain = !key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        if plain && let KeyCode::Char(_) = key.code {
            self.focus = Focus::Composer;
            self.composer.input(key);
        }
        Vec::new()
    }

    pub(crate) fn tree_key(&mut self, key: KeyEvent, now: Instant) -> Vec<Action> {
        let id = self.viewed();
        let page = self.tree.list_area.height.max(1) as i64;
        if self.narrow && self.overlay.is_none() {
            // The one-line switcher: left and right step through the agents.
            match key.code {
                KeyCode::Left | KeyCode::Char('h') => {
                    self.tree.move_by(&self.state, -1);
                    return Vec::new();
                }
                KeyCode::Right | KeyCode::Char('l') => {
                    self.tree.move_by(&self.state, 1);
                    return Vec::new();
                }
                _ => {}
            }
        }
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => self.tree.move_by(&self.state, -1),
            KeyCode::Down | KeyCode::Char('j') => self.tree.move_by(&self.state, 1),
            KeyCode::PageUp => self.tree.move_by(&self.state, -page),
            KeyCode::PageDown => self.tree.move_by(&self.state, page),
            KeyCode::Home | KeyCode::Char('g') => self.tree.move_by(&self.state, i64::MIN / 2),
            KeyCode::End | KeyCode::Char('G') => self.tree.move_by(&self.state, i64::MAX / 2),
            KeyCode::Enter => self.focus = Focus::Conversation,
            KeyCode::Right | KeyCode::Char('l') => {
                if !self.tree.set_collapsed(id, false) {
                    self.focus = Focus::Conversation;
                }
            }
            KeyCode::Left | KeyCode::Char('h') => {
                let has_children = self.state.agent(id).is_some_and(|a| !a.children.is_empty());
                if !(has_children && self.tree.set_collapsed(id, true))
                    && let Some(p) = self.state.agent(id).and_then(|a| a.parent)
                {
                    self.tree.selected = Some(p);
                }
            }
            KeyCode::Char(' ') => {
                let collapsed = self.tree.collapsed.contains(&id);
                self.tree.set_collapsed(id, !collapsed);
            }
            KeyCode::Char('i') => self.open(Overlay::Details(id)),
            KeyCode::Char('d') => {
                // The runtime reads the worktree; the popup waits for its `diff` event.
                self.state.diff = None;
                self.open(Overlay::Diff(id));
                return vec![Action::Send(Op::ShowDiff { agent_id: id })];
            }
            KeyCode::Char('t') => self.toggle_tasks(),
            KeyCode::Char('u') => return self.undo_viewed(now),
            KeyCode::Char('x') => {
                if id == self.state.root_agent {
                    self.set_notice(
                        "the active persona cannot be cancelled (Esc interrupts it)",
                        now,
                    );
                } else if self.state.agent(id).is_some_and(|a| a.despawned) {
                    self.set_notice("already cancelled", now);
                } else if self.state.agent(id).is_some_and(|a| a.released) {
                    self.set_notice("released already: there is nothing to cancel", now);
                } else {
                    self.open(Overlay::ConfirmDespawn(id));
                }
            }
            KeyCode::Char('c') => {
                if self.state.agent(id).map(|a| a.status) == Some(AgentStatus::Interrupted) {
                    self.set_notice("continuing…", now);
                    return vec![Action::Send(Op::Continue { agent_id: Some(id) })];
                }
                return self.type_into_composer(key);
            }
            KeyCode::Char('?') => self.open(Overlay::Help),
            _ => return self.type_into_composer(key),
        }
        Vec::new()
    }

    pub(crate) fn tasks_key(&mut self, key: KeyEvent, _now: Instant) -> Vec<Action> {
        let page = (self.tasks.list_area.height / 2).max(1) as i64;
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => self.move_task(-1),
            KeyCode::Down | KeyCode::Char('j') => self.move_task(1),
            KeyCode::PageUp => self.move_task(-page),
            KeyCode::PageDown => self.move_task(page),
            KeyCode::Home | KeyCode::Char('g') => self.move_task(i64::MIN / 2),
            KeyCode::End | KeyCode::Char('G') => self.move_task(i64::MAX / 2),
            KeyCode::Enter | KeyCode::Right | KeyCode::Char('l') => {
                self.focus = Focus::Conversation;
            }
            KeyCode::Char('i') => {
                let worker = self
                    .tasks
                    .selected
                    .as_deref()
                    .and_then(|t| self.state.board.get(t))
                    .and_then(|t| t.assignee)
                    .filter(|a| self.state.agents.contains_key(a));
                if let Some(id) = worker {
                    self.open(Overlay::Details(id));
                }
            }
            KeyCode::Char('t') => self.toggle_tasks(),
            KeyCode::Char('?') => self.open(Overlay::Help),
            _ => return self.type_into_composer(key),
        }
        Vec::new()
    }

    fn conversation_key(&mut self, key: KeyEvent, _now: Instant) -> Vec<Action> {
        let id = self.viewed();
        let Some(conv) = self.state.agents.get(&id).map(|a| &a.conversation) else {
            return self.type_into_composer(key);
        };
        let view = self.views.entry(id).or_default();
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => {
                if !view.select_prev(conv) {
                    view.scroll(-1);
                }
            }
            KeyCode::Down | KeyCode::Char('j') => {
                if !view.select_next(conv) {
                    view.scroll(1);
                }
            }
            KeyCode::PageUp => view.page(true),
            KeyCode::PageDown => view.page(false),
            KeyCode::Home | KeyCode::Char('g') => view.home(),
            KeyCode::End | KeyCode::Char('G') => view.end(),
            KeyCode::Enter | KeyCode::Char(' ') => {
                if let Some(sel) = view.selected
                    && let Some(a) = self.state.agents.get_mut(&id)
                {
                    a.conversation.toggle_tool(sel);
                }
            }
            KeyCode::Char('?') => self.open(Overlay::Help),
            _ => return self.type_into_composer(key),
        }
        Vec::new()
    }

    fn composer_key(&mut self, key: KeyEvent, now: Instant) -> Vec<Action> {
        let mods = key.modifiers;
        match key.code {
            KeyCode::Enter if mods.intersects(KeyModifiers::ALT | KeyModifiers::SHIFT) => {
                self.composer.newline();
            }
            KeyCode::Char('j') if mods.contains(KeyModifiers::CONTROL) => self.composer.newline(),
            // readline's kill: to the start of the line (the text area's own Ctrl+U undoes).
            KeyCode::Char('u') if mods.contains(KeyModifiers::CONTROL) => {
                self.composer.kill_to_line_start();
                return self.after_composer_edit();
            }
            // `?` on an empty composer is a question for squad, not the start of a message.
            KeyCode::Char('?')
                if self.composer.is_empty()
                    && !mods.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
            {
                self.open(Overlay::Help);
            }
            KeyCode::Enter => {
                if self.take_pick() {
                    return Vec::new();
                }
                return self.submit(now);
            }
            KeyCode::Up | KeyCode::Down
                if mods.is_empty() && !self.popup_candidates().is_empty() =>
            {
                let n = self.popup_candidates().len();
                self.move_pick(n, key.code == KeyCode::Up);
            }
            KeyCode::Up
                if (self.composer.is_empty() || self.composer.recalling())
                    && self.composer.cursor_on_first_line() =>
            {
                self.composer.recall_prev();
            }
            KeyCode::Down if self.composer.recalling() && self.composer.cursor_on_last_line() => {
                self.composer.recall_next();
            }
            KeyCode::PageUp => {
                let id = self.viewed();
                self.view_mut(id).page(true);
            }
            KeyCode::PageDown => {
                let id = self.viewed();
                self.view_mut(id).page(false);
            }
            _ => {
                self.composer.input(key);
                return self.after_composer_edit();
            }
        }
        Vec::new()
    }

    fn submit(&mut self, now: Instant) -> Vec<Action> {
        let text = self.composer.text();
        if text.trim().is_empty() {
            return Vec::new();
        }
        match commands::parse(&text) {
            Some(Err(msg)) => {
                self.set_notice(msg, now);
                Vec::new()
            }
            Some(Ok(cmd)) => {
                self.composer.take();
                self.run_command(cmd, now)
            }
            None if text.starts_with('!') => {
                self.composer.take();
                let command = text[1..].trim().to_string();
                self.set_notice(format!("running {command}…"), now);
                vec![Action::Send(Op::RunCommand { command })]
            }
            None => {
                self.composer.take();
                // Trailing blank lines (a stray Alt+Enter) are not part of the message.
                let text = commands::unescape(text.trim_end()).to_string();
                let to = self.target();
                let id = self.viewed();
                self.view_mut(id).end();
                vec![Action::Send(Op::UserMessage { to, text })]
            }
        }
    }

    /// `/goal`: a new goal is set and its brief sent to the persona, which starts the work.
    fn goal_command(&mut self, arg: GoalArg, now: Instant) -> Vec<Action> {
        match arg {
            GoalArg::Set(goal) => {
                let text = goal.brief();
                let goal = Some(goal);
                let message = Op::UserMessage { to: None, text };
                vec![Action::Send(Op::SetGoal { goal }), Action::Send(message)]
            }
            GoalArg::Clear => vec![Action::Send(Op::SetGoal { goal: None })],
            GoalArg::Show => {
                let active = self.state.goal.is_active();
                let line = match self.state.goal.goal.as_ref().filter(|_| active) {
                    Some(g) => format!("met when {} · /goal clear stops it", g.end()),
                    None => "no goal is set: /goal TEXT --check CMD".to_string(),
                };
                self.set_notice(line, now);
                Vec::new()
            }
        }
    }

    fn run_command(&mut self, cmd: SlashCommand, now: Instant) -> Vec<Action> {
        match cmd {
            SlashCommand::Role(role) => {
                self.set_notice(format!("{HANDING_OVER}{role}…"), now);
                return vec![Action::Send(Op::SwitchPersona { role })];
            }
            SlashCommand::Model(model) => return vec![Action::Send(Op::SetModel { model })],
            SlashCommand::Models => {
                self.state.models = None;
                self.model_pick = 0;
                self.open(Overlay::Models);
                return vec![Action::Send(Op::ListModels)];
            }
            SlashCommand::Approval(approval) => {
                return vec![Action::Send(Op::SetApproval { approval })];
            }
            SlashCommand::Agents => {
                self.open(Overlay::Agents);
                self.focus = Focus::Tree;
            }
            SlashCommand::Stats => self.open(Overlay::Stats),
            SlashCommand::Tasks => self.show_tasks(),
            SlashCommand::Timeline => self.open(Overlay::Timeline),
            SlashCommand::Mcp => self.open(Overlay::Mcp),
            SlashCommand::Review(target) => {
                self.set_notice(format!("reviewing {target}…"), now);
                return vec![Action::Send(Op::Review { target })];
            }
            SlashCommand::Compact => {
                let agent_id = self.viewed();
                self.set_notice("compacting this agent's conversation…".to_string(), now);
                return vec![Action::Send(Op::Compact { agent_id })];
            }
            SlashCommand::Help => self.open(Overlay::Help),
            SlashCommand::Rewind => return self.open_rewind(),
            SlashCommand::Undo => return self.undo_viewed(now),
            SlashCommand::Merge(worker) => return self.merge_worker(worker, now),
            SlashCommand::Pause | SlashCommand::Unpause
                if self.state.paused == matches!(cmd, SlashCommand::Pause) =>
            {
                let word = if self.state.paused {
                    "paused"
                } else {
                    "not paused"
                };
                self.set_notice(format!("the team is {word} already"), now);
            }
            SlashCommand::Pause | SlashCommand::Unpause => return self.toggle_pause(now),
            SlashCommand::Lead => return self.toggle_lead(now),
            SlashCommand::Stop => {
                self.set_notice("stopping the team…", now);
                return vec![Action::Send(Op::Stop)];
            }
            SlashCommand::Budget(limit_usd) => {
                return vec![Action::Send(Op::SetSessionBudget { limit_usd })];
            }
            SlashCommand::Continue => {
                return vec![Action::Send(Op::Continue { agent_id: None })];
            }
            SlashCommand::Goal(arg) => return self.goal_command(arg, now),
            SlashCommand::New => return self.leave(Exit::NewSession),
            SlashCommand::Resume(id) => return self.leave(Exit::Resume(id)),
            SlashCommand::Quit => return self.leave(Exit::Quit),
        }
        Vec::new()
    }
}

#[cfg(test)]
mod tests;
