//! Steering a running agent: a message for an agent that is mid-turn (from the user, or
//! from its supervisor's `speak_to_agent`) is taken up at the turn's next model call, not
//! after the turn. One lock decides between "the turn takes it" and "it starts the next
//! turn", so a message that arrives as the turn ends is never lost.

use super::{AgentInput, Team};
use crate::protocol::{AgentId, EventKind};
use tokio::sync::oneshot;

/// A message waiting for the running turn's next model call.
pub struct Steer {
    pub text: String,
    /// Told when the agent has taken the message up.
    pub taken: Option<oneshot::Sender<()>>,
}

impl Team {
    /// Queues `text` for `id`'s running turn and says so (`message_queued`). Gives the
    /// message back when the agent is not in a turn: then it starts one, as any message.
    pub fn steer(&self, id: AgentId, steer: Steer) -> Result<(), Steer> {
        {
            let mut agents = self.lock();
            let Some(a) = agents.get_mut(&id) else {
                return Err(steer);
            };
            if !a.in_turn || a.cancel.is_cancelled() {
                return Err(steer);
            }
            let text = steer.text.clone();
            a.steering.push(steer);
            self.emit(id, EventKind::MessageQueued { text });
        }
        // Wakes a wait inside the turn (`wait_for_agents`), so the message is not held
        // for the whole wait.
        self.bump();
        Ok(())
    }

    /// Whether messages wait for `id`'s next model call.
    pub fn has_steering(&self, id: AgentId) -> bool {
        self.with(id, |a| !a.steering.is_empty()).unwrap_or(false)
    }

    /// The messages for the running turn, oldest first; their senders are told.
    pub fn take_steering(&self, id: AgentId) -> Vec<String> {
        let taken = self
            .with(id, |a| std::mem::take(&mut a.steering))
            .unwrap_or_default();
        taken
            .into_iter()
            .map(|s| {
                if let Some(t) = s.taken {
                    let _ = t.send(());
                }
                s.text
            })
            .collect()
    }

    /// The turn is over: from now on a message starts the next one. Messages the turn did
    /// not take up (it ended first) are queued as ordinary input, in order.
    pub fn end_turn(&self, id: AgentId) {
        let left = self
            .with(id, |a| {
                a.in_turn = false;
                std::mem::take(&mut a.steering)
            })
            .unwrap_or_default();
        for s in left {
            if let Some(t) = s.taken {
                let _ = t.send(());
            }
            self.deliver(
                id,
                AgentInput::Message {
                    text: s.text,
                    reply: None,
                },
            );
        }
        self.wake_for_mail(id);
    }
}
