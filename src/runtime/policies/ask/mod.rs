//! Asking the user to approve an agent's action: through the session's gate, with the
//! agent shown `waiting` while the user is asked and the user's `notification` hooks run
//! meanwhile. Its layer asks about each tool call the layers before it let through; a
//! spawn's approval is asked by the spawn itself ([`approve`]).

pub mod layer;

use crate::protocol::AgentStatus;
use crate::runtime::approval::{ApprovalRequest, Denied};
use crate::runtime::cx::AgentCx;
use crate::runtime::policies::hooks::layer::{HooksPolicy, caller};

/// Passes a mutating action of `cx`'s agent through the gate.
pub async fn approve(cx: &AgentCx, req: ApprovalRequest<'_>) -> Result<(), Denied> {
    let (session, team, agent) = (cx.session(), cx.team(), cx.id());
    let hooks = cx.policies().get::<HooksPolicy>();
    let asks = session.gate.will_ask(&req);
    if asks {
        team.set_status(agent, AgentStatus::Waiting, None);
    }
    let message = format!("squad needs your permission to use {}", req.tool);
    let check = session.gate.check(req, team.events(), cx.cancel());
    let decision = match hooks.filter(|_| asks) {
        Some(hooks) => {
            let at = caller(cx);
            let told = hooks.0.notification(&at, "permission_prompt", &message);
            tokio::join!(check, told).0
        }
        None => check.await,
    };
    if asks {
        team.set_status(agent, AgentStatus::Running, None);
    }
    decision
}
