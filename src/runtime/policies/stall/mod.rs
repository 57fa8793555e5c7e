//! Stall marks: a model call that streams nothing, or a tool call that does
//! not end, for `[guards] stall_after_s` marks its agent stalled (`stalled` event), and
//! `unstalled` follows when it moves again or ends. Only a mark for the user, who may
//! cancel the agent; the model call's idle timeout stays the hard limit. Waiting for
//! workers or the user (a team tool) is not a stall.
//!
//! The hot path (every streamed chunk) only stores a timestamp in a [`Pulse`]; the watch
//! beside the call looks at it when the call could first be stalled, then every so often
//! while it is. Only the model call and the tool call are watched, each by [`watch`], which
//! the stall layer puts around the rest of the agent's stack (the last layer: it watches
//! the send or the run itself, a summary request's too).

pub mod layer;

use crate::protocol::{AgentId, EventKind};
pub use crate::runtime::points::Pulse;
use crate::runtime::points::Waiting;
use crate::runtime::team::Team;
use crate::runtime::toolbox::Reach;
use crate::text::{clip, key_argument};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What a stalled agent is stuck on, for the tree.
fn label(what: &Waiting<'_>) -> String {
    match what {
        Waiting::ModelCall => "model call".to_string(),
        Waiting::Tool(tool) => format!(
            "tool call {} {}",
            tool.name,
            clip(&key_argument(&tool.args.to_string()), 80)
        )
        .trim_end()
        .to_string(),
    }
}

/// Runs `work` with a watch beside it that marks `agent` stalled while `pulse` stays quiet
/// for `after` (`None`: not watched).
pub async fn watch<F: Future>(
    team: &Team,
    agent: AgentId,
    after: Option<Duration>,
    what: &Waiting<'_>,
    pulse: &Pulse,
    work: F,
) -> F::Output {
    let done = CancellationToken::new();
    let work = async {
        let out = work.await;
        done.cancel();
        out
    };
    let marks = marks(team, agent, after, what, pulse, &done);
    futures::future::join(work, marks).await.0
}

/// Returns when `done` is cancelled.
async fn marks(
    team: &Team,
    agent: AgentId,
    after: Option<Duration>,
    what: &Waiting<'_>,
    pulse: &Pulse,
    done: &CancellationToken,
) {
    let Some(after) = after else {
        return;
    };
    if matches!(what, Waiting::Tool(t) if t.reach == Reach::Team) {
        return;
    }
    // While stalled, how often to look for progress again.
    let recheck = (after / 4).clamp(Duration::from_millis(100), Duration::from_secs(1));
    // The beat the stall was seen at; any later beat ends it.
    let mut stalled_at: Option<u64> = None;
    loop {
        let wait = match stalled_at {
            Some(_) => recheck,
            None => after.saturating_sub(pulse.quiet_for()),
        };
        tokio::select! {
            biased;
            _ = done.cancelled() => {
                if stalled_at.is_some() {
                    team.emit(agent, EventKind::Unstalled);
                }
                return;
            }
            _ = tokio::time::sleep(wait) => {}
        }
        match stalled_at {
            Some(at) if pulse.last() != at => {
                stalled_at = None;
                team.emit(agent, EventKind::Unstalled);
            }
            Some(_) => {}
            None => {
                let quiet = pulse.quiet_for();
                if quiet >= after {
                    stalled_at = Some(pulse.last());
                    team.emit(
                        agent,
                        EventKind::Stalled {
                            on: label(what),
                            since_s: quiet.as_secs(),
                        },
                    );
                }
            }
        }
    }
}
