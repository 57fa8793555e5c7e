//! `Op::Review`: squad, not a model, starts one read-only reviewer per focus under the
//! persona, in parallel, gives each the change and reads its findings; then the findings
//! are checked against the code and merged (`crate::review`) and told in one
//! `review_finished`. Reviewers are agents like any worker (the tree shows them and what
//! they cost), but their outcome is squad's: the persona is never handed it.

use super::agent::start_agent;
use super::cx::Policies;
use super::policies::verification::layer::VerificationPolicy;
use super::session::Session;
use super::team::{AgentInput, NewAgent};
use crate::protocol::{
    AgentId, AgentStatus, ApprovalPolicy, DroppedFinding, EventKind, ReviewFinding, ReviewTarget,
    SpawnOptions,
};
use crate::review::{self, Focus, target::Reviewed};
use crate::roles::Role;
use std::sync::Arc;
use tokio::sync::oneshot;

/// Off the ops loop: a review takes as long as its slowest reviewer.
pub fn serve(session: &Arc<Session>, policies: &Arc<Policies>, target: ReviewTarget) {
    let (session, policies) = (session.clone(), policies.clone());
    tokio::spawn(async move { run(&session, &policies, target).await });
}

async fn run(session: &Arc<Session>, policies: &Arc<Policies>, target: ReviewTarget) {
    let (team, root) = (&session.team, session.root());
    let refuse = |message: String| team.emit(root, EventKind::Error { message });
    let reviewed = match review::target::load(session.workspace.root(), &target).await {
        Ok(r) => r,
        Err(e) => return refuse(format!("review: {e}")),
    };
    let Some(role) = session.role(review::REVIEWER_ROLE) else {
        let name = review::REVIEWER_ROLE;
        return refuse(format!("review: no `{name}` role is loaded"));
    };
    // An empty change has nothing to review: no reviewer is started for it.
    let focuses = match reviewed.diff.trim().is_empty() {
        true => Vec::new(),
        false => review::focuses(session.workspace.root().join("AGENTS.md").is_file()),
    };
    let reviewers: Vec<AgentId> = (focuses.iter())
        .map(|f| start_reviewer(session, policies, role, f))
        .collect();
    let started = EventKind::ReviewStarted {
        target: target.clone(),
        reviewers: reviewers.clone(),
    };
    team.emit(root, started);
    let asks = (reviewers.iter().zip(&focuses)).map(|(id, f)| ask(session, *id, f, &reviewed));
    let (mut found, mut dropped, mut errors) = (Vec::new(), Vec::new(), Vec::new());
    for answered in futures::future::join_all(asks).await {
        match answered {
            Ok((f, d)) => {
                found.extend(f);
                dropped.extend(d);
            }
            Err(e) => errors.push(e),
        }
    }
    let unanswered =
        (!reviewers.is_empty() && errors.len() == reviewers.len()).then(|| errors.swap_remove(0));
    let (findings, dropped) = review::conclude(&reviewed, found, dropped).await;
    let finished = EventKind::ReviewFinished {
        target,
        findings,
        dropped,
        unanswered,
    };
    team.emit(root, finished);
}

/// Starts the reviewer of `focus` under the persona: read-only by its approval policy and
/// by its tools (its role's tools that only read).
fn start_reviewer(
    session: &Arc<Session>,
    policies: &Arc<Policies>,
    role: &Role,
    focus: &Focus,
) -> AgentId {
    let id = AgentId::new();
    let model = role.model(&session.config);
    let tools: Vec<String> = (session.tools.tools_for_model(role, true, None, &model))
        .into_iter()
        .filter(|t| session.tools.is_read_only(t))
        .collect();
    // Its answer is a list of findings, not a result the checks would judge.
    if let Some(v) = policies.get::<VerificationPolicy>() {
        v.checks.add_reviewer(id);
    }
    start_agent(
        session,
        policies,
        NewAgent {
            id,
            parent: Some(session.root()),
            role: role.name.clone(),
            model,
            depth: 1,
            task: format!("review: {}", focus.name),
            policy: ApprovalPolicy::ReadOnly,
            tools: tools.clone(),
            history: Vec::new(),
            status: AgentStatus::Inactive,
            stats: Default::default(),
            budget: super::team::from_limits(&session.config.limits),
            result: None,
            first_message: None,
            announce: true,
            options: SpawnOptions {
                tools: Some(tools),
                ..Default::default()
            },
            released: false,
        },
    );
    session.team.answer_to_squad(id);
    id
}

/// Gives reviewer `id` its task and reads its findings; an answer that is not the JSON
/// asked for is sent back once. A reviewer that cannot answer costs an error event and
/// its findings, never the review; the error is returned.
async fn ask(
    session: &Session,
    id: AgentId,
    focus: &Focus,
    reviewed: &Reviewed,
) -> Result<(Vec<ReviewFinding>, Vec<DroppedFinding>), String> {
    let team = &session.team;
    let mut text = review::task(focus, reviewed);
    let mut problem = String::new();
    for round in 0..2 {
        let (tx, rx) = oneshot::channel();
        let reply = Some(tx);
        let message = AgentInput::Message {
            text: std::mem::take(&mut text),
            reply,
        };
        if !team.deliver(id, message) {
            problem = "it stopped before it started".into();
            break;
        }
        let answer = match rx.await {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => {
                problem = e;
                break;
            }
            Err(_) => {
                problem = "it stopped before answering".into();
                break;
            }
        };
        match review::finding::parse_answer(&answer, focus.name) {
            Ok(found) => {
                team.mark_delivered(id);
                return Ok(found);
            }
            Err(e) if round == 0 => text = review::correction(&e),
            Err(e) => problem = e,
        }
    }
    team.mark_delivered(id);
    let message = format!(
        "review: the {} reviewer gave no findings ({problem})",
        focus.name
    );
    team.emit(
        id,
        EventKind::Error {
            message: message.clone(),
        },
    );
    Err(message)
}
