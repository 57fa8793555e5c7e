//! A worker whose role is another agent (issue 53): `spawn_agent` counts it in and starts
//! it like any worker (its card, its base fixed at spawn), and its turns are driven here
//! instead of by a model loop. squad is the ACP client (`crate::acp_client`): the agent
//! starts at the worker's first turn with a session whose cwd is the worker's worktree,
//! each message the worker takes up (its task, a `speak_to_agent`, a correction) is a
//! prompt in that one session, and what it streams is the worker's conversation
//! (`conversation.rs`). Its permission requests go through squad's approval gate
//! (`approval.rs`); when a prompt ends, its last message is the worker's result, checked
//! like any (`outcome.rs`), and its worktree's change then merges through the isolation
//! layer when the turn settles. A fault ends the worker failed with the reason in a line
//! (`faults.rs`), and the process is gone: `close` ends it when the worker ends.
//!
//! No terminal is offered to the agent (ACP's `terminal/*`): an agent that runs commands
//! does so itself, in its worktree, outside squad's sandbox. Of the agents installable
//! here neither asks for one (OpenCode 1.18 never calls `terminal/create`; Codex's adapter
//! runs commands itself, under its own sandbox), so a `terminal/*` served through squad's
//! sandbox would have no real agent to be tested against.

mod approval;
mod conversation;
mod faults;
mod outcome;

use super::cx::AgentCx;
use super::policies::isolation::IsolationPolicy;
use super::turn::TurnOutcome;
use crate::acp_client::{AcpClient, AgentCommand, ClientError, ClientOptions, StopReason};
use crate::protocol::{EventKind, HistoryItem};
use crate::roles::{Role, RoleSource};
use conversation::Conversation;
use std::time::Duration;

/// The built-in `squad_acp` role runs the squad that is running (not whichever `squad`
/// is first on `PATH`, which may be another version or none).
fn command_for(role: &Role) -> Option<AgentCommand> {
    let mut agent = role.agent.clone()?;
    if role.source == RoleSource::BuiltIn
        && agent.command == "squad"
        && let Ok(me) = std::env::current_exe()
    {
        agent.command = me.to_string_lossy().into_owned();
    }
    Some(agent)
}

/// How long an agent has to end its turn after `session/cancel` before squad stops
/// waiting (its process is ended when the worker ends).
const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// How a prompt ended.
enum Prompted {
    Ended(StopReason),
    /// The worker's turn was cancelled (`session/cancel` was sent).
    Cancelled,
    /// Its spend reached its budget (`session/cancel` was sent): why.
    Overspent(String),
}

/// One agent worker: its command, and its connection once started.
pub struct AgentWorker {
    agent: AgentCommand,
    client: Option<AcpClient>,
    /// The agent's updates, read while a prompt runs.
    updates: Option<tokio::sync::mpsc::UnboundedReceiver<crate::acp_client::AgentUpdate>>,
    conversation: Conversation,
    /// The turn the agent's permission requests are asked in (its token, its status).
    asking: approval::Asking,
    /// The worker's own token (a turn's is a child): once it is cancelled (despawn, the
    /// session ending) the agent is not waited for.
    gone: tokio_util::sync::CancellationToken,
}

impl AgentWorker {
    /// The driver of `cx`'s agent when its role is another agent; `None` for a native one.
    pub fn for_agent(cx: &AgentCx) -> Option<Self> {
        if !cx.is_worker() {
            return None;
        }
        let role = cx.session().role(&cx.role())?;
        let conversation = Conversation::default();
        let asking = approval::Asking::new(conversation.known.clone());
        Some(Self {
            agent: command_for(role)?,
            client: None,
            updates: None,
            conversation,
            asking,
            gone: cx.cancel().clone(),
        })
    }

    /// One turn: the messages the worker took up as a prompt, then its result checked
    /// (a correction is a prompt again, in the same session).
    pub async fn run_turn(&mut self, cx: &AgentCx) -> TurnOutcome {
        cx.team().emit(cx.id(), EventKind::TurnStarted);
        self.asking.set(cx);
        let outcome = match self.turn(cx).await {
            Ok(outcome) => outcome,
            Err(fault) => {
                // The process goes with the fault: nothing of it lingers.
                self.close_client().await;
                faults::failed(cx, &self.agent, &fault)
            }
        };
        cx.team()
            .emit(cx.id(), EventKind::TurnFinished { end: outcome.end });
        outcome
    }

    async fn turn(&mut self, cx: &AgentCx) -> Result<TurnOutcome, ClientError> {
        let mut text = outcome::prompt_text(cx, self.client.is_none());
        self.connect(cx).await?;
        let mut prompts = 0u32;
        loop {
            prompts += 1;
            if !outcome::pass_pause(cx).await {
                return Ok(outcome::cancelled(String::new()));
            }
            let prompted = self.prompt(cx, &text).await?;
            let said = self.conversation.finish(cx.team(), cx.id());
            let end = match prompted {
                Prompted::Ended(end) => end,
                Prompted::Cancelled => return Ok(outcome::cancelled(said)),
                Prompted::Overspent(why) => {
                    self.close_client().await;
                    return Ok(outcome::stopped(cx, why, said));
                }
            };
            outcome::after_prompt(cx).await;
            if let Some(why) = outcome::over_budget(cx, prompts) {
                return Ok(outcome::stopped(cx, why, said));
            }
            // Messages that came while it worked (`speak_to_agent`) are its next prompt.
            let steering = cx.team().take_steering(cx.id());
            if !steering.is_empty() {
                for t in &steering {
                    cx.team().push_item(cx.id(), HistoryItem::user(t.clone()));
                }
                text = steering.join("\n\n");
                continue;
            }
            match outcome::settle(cx, end, said).await {
                outcome::Settled::Done(outcome) => return Ok(outcome),
                outcome::Settled::Correct(message) => {
                    cx.team()
                        .push_item(cx.id(), HistoryItem::user(message.clone()));
                    text = message;
                }
            }
        }
    }

    /// Starts the agent in the worker's worktree (made now, from its base fixed at spawn),
    /// unless it runs already.
    async fn connect(&mut self, cx: &AgentCx) -> Result<(), ClientError> {
        if self.client.is_some() {
            return Ok(());
        }
        if let Some(iso) = cx.policies().get::<IsolationPolicy>() {
            iso.isolation.before_change(cx.team(), cx.id(), None).await;
            iso.isolation.wait_for_files(cx.team(), cx.id()).await;
        }
        let folder = cx.root();
        let options = ClientOptions::new(self.asking.permissions(folder.root()));
        let mut client = AcpClient::start(&self.agent, folder.root(), options).await?;
        self.updates = Some(client.take_updates());
        self.client = Some(client);
        Ok(())
    }

    /// Sends `text` and folds what the agent streams until the turn ends.
    async fn prompt(&mut self, cx: &AgentCx, text: &str) -> Result<Prompted, ClientError> {
        let (Some(client), Some(updates)) = (self.client.as_ref(), self.updates.as_mut()) else {
            return Err(ClientError::Refused {
                during: "session/prompt",
                message: "the agent is not running".into(),
            });
        };
        let (team, id) = (cx.team(), cx.id());
        // Its wall-time budget bounds the prompt: what is left of it, to the second.
        let wall = outcome::wall_left(cx);
        let prompt = match wall {
            Some(left) => futures::future::Either::Left(client.prompt_within(text, left)),
            None => futures::future::Either::Right(client.prompt(text)),
        };
        tokio::pin!(prompt);
        // Once it was asked to stop, how long it has to end its turn.
        let grace = tokio::time::sleep(Duration::from_secs(365 * 24 * 3600));
        tokio::pin!(grace);
        let mut stopping: Option<Prompted> = None;
        let ended = loop {
            tokio::select! {
                biased;
                Some(update) = updates.recv() => {
                    self.conversation.apply(team, id, update);
                    if stopping.is_none() && let Some(why) = outcome::over_budget(cx, 0) {
                        stopping = Some(Prompted::Overspent(why));
                        let _ = client.cancel();
                        grace.as_mut().reset(tokio::time::Instant::now() + CANCEL_GRACE);
                    }
                }
                ended = &mut prompt => break Some(ended),
                () = cx.cancel().cancelled(), if stopping.is_none() => {
                    stopping = Some(Prompted::Cancelled);
                    let _ = client.cancel();
                    grace.as_mut().reset(tokio::time::Instant::now() + CANCEL_GRACE);
                }
                () = &mut grace => break None,
                () = self.gone.cancelled(), if stopping.is_some() => break None,
            }
        };
        // What it sent just before its answer.
        while let Ok(update) = updates.try_recv() {
            self.conversation.apply(team, id, update);
        }
        match (stopping, ended) {
            (Some(why), _) => Ok(why),
            (None, Some(Err(ClientError::Timeout { .. }))) if wall.is_some() => {
                let _ = client.cancel();
                Ok(Prompted::Overspent(outcome::wall_spent(cx)))
            }
            (None, Some(ended)) => ended.map(Prompted::Ended),
            (None, None) => Ok(Prompted::Cancelled),
        }
    }

    async fn close_client(&mut self) {
        self.updates = None;
        if let Some(client) = self.client.take() {
            client.close().await;
        }
    }

    /// The worker is gone (despawned, cancelled, the session ending): its turn is
    /// cancelled (`session/cancel`) and the agent's process ended.
    pub async fn close(mut self) {
        if let Some(client) = self.client.as_ref() {
            let _ = client.cancel();
        }
        self.close_client().await;
    }
}
