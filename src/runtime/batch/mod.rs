//! A worker per row (issue 55 part 5): `spawn_batch` and `squad exec --batch` run here.
//! Each row's worker is spawned through `spawn_agent`'s own path (its role, tools, budget,
//! worktree, checks and merge), its outcome read as a supervisor's, its result checked
//! against the batch's schema, a failure tried again up to the batch's attempts; every
//! step is a durable `batch` event, and the output file is rewritten whole after each row
//! settles. `plan.rs` reads what the batch needs, `row.rs` starts a row and judges its
//! outcome, `drive.rs` keeps `max_concurrency` rows at work, `host.rs` lets the batch's one
//! approval stand for its rows' spawns, `quoted.rs` quotes the rows left before it.

mod drive;
mod host;
mod plan;
mod quoted;
mod row;

pub use drive::run;
pub use plan::Where;

use super::cx::{AgentCx, Policies};
use super::session::Session;
use crate::protocol::{BatchSpec, EventKind};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// `Op::Batch` (`squad exec --batch`): the batch runs under the persona, off the ops loop,
/// its paths the user's own (relative to the workspace).
pub fn serve(session: &Arc<Session>, policies: &Arc<Policies>, spec: BatchSpec) {
    let (session, policies) = (session.clone(), policies.clone());
    tokio::spawn(async move {
        let root = session.root();
        let cx = AgentCx::new(session.clone(), policies, root, CancellationToken::new());
        let call = cx.invocation().as_call();
        if let Err(message) = run(&call, spec, Where::User).await {
            session.team.emit(root, EventKind::Error { message });
        }
    });
}
