//! Plan states and the tools fitted to them, on a team without a model.

use super::*;
use crate::protocol::{Event, PlanState};
use crate::roles::RoleSet;
use crate::runtime::events::EventSink;
use crate::runtime::team::NewAgent;
use crate::runtime::toolbox::ToolBox;
use std::sync::Arc;
use tokio::sync::mpsc;

struct World {
    team: Team,
    root: AgentId,
    roles: RoleSet,
    tools: ToolBox,
    plans: Plans,
    rx: mpsc::UnboundedReceiver<Event>,
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let mut roles = crate::roles::load_roles_from(None, dir.path()).unwrap();
    let mut planner = roles.get("implementer").unwrap().clone();
    planner.name = "planner".into();
    planner.plan_first = true;
    roles.insert(planner);
    let mut lead = roles.get("copilot").unwrap().clone();
    lead.name = "lead".into();
    lead.enabled_agents = vec!["planner".into(), "implementer".into()];
    roles.insert(lead);
    let (tx, rx) = mpsc::unbounded_channel();
    let root = AgentId::new();
    let team = Team::new(EventSink::new(None, 0, tx), root);
    let tools = crate::runtime::testing::toolbox();
    let _ = team.add(new_agent(root, None, "lead", &tools, &roles));
    World {
        team,
        root,
        roles,
        tools,
        plans: Plans::default(),
        rx,
    }
}

fn new_agent(
    id: AgentId,
    parent: Option<AgentId>,
    role: &str,
    tools: &ToolBox,
    roles: &RoleSet,
) -> NewAgent {
    let r = roles.get(role).unwrap();
    NewAgent {
        role: role.into(),
        tools: tools.tools_for(r, parent.is_some(), None),
        ..crate::runtime::testing::agent(id, parent, Default::default())
    }
}

impl World {
    fn spawn(&self, role: &str) -> AgentId {
        let id = AgentId::new();
        let new = new_agent(id, Some(self.root), role, &self.tools, &self.roles);
        let _ = self.team.add(new);
        id
    }

    fn own(&self, id: AgentId) -> Arc<[String]> {
        self.team.tools(id).unwrap()
    }

    fn fitted(&self, id: AgentId) -> Arc<[String]> {
        let f = Fit {
            tools: &self.tools,
            roles: &self.roles,
            team: &self.team,
            plans: &self.plans,
        };
        fit(&f, id, self.own(id))
    }

    fn kinds(&mut self) -> Vec<(AgentId, EventKind)> {
        let mut out = Vec::new();
        while let Ok(ev) = self.rx.try_recv() {
            out.push((ev.agent_id, ev.kind));
        }
        out
    }
}

fn has(tools: &[String], name: &str) -> bool {
    tools.iter().any(|t| t == name)
}

#[test]
fn a_plan_first_worker_reads_until_its_plan_is_approved_then_has_its_own_tools() {
    let w = world();
    let worker = w.spawn("planner");
    let own = w.own(worker);
    assert!(has(&own, "write_file") && has(&own, "run_command"));
    let gated = w.fitted(worker);
    for writes in ["write_file", "edit_file", "run_command", "apply_patch"] {
        assert!(
            !has(&gated, writes),
            "{writes} offered before approval: {gated:?}"
        );
    }
    assert!(has(&gated, "read_file") && has(&gated, "return_results"));
    assert!(has(&gated, "submit_plan") && !has(&gated, "review_plan"));

    let Submitted::Waiting(_rx) = w.plans.submit(&w.team, worker, "edit a.rs") else {
        panic!("a first plan waits");
    };
    assert!(
        !has(&w.fitted(worker), "write_file"),
        "awaiting is not approved"
    );
    w.plans
        .decide(&w.team, worker, true, "", Some(w.root))
        .unwrap();
    let after = w.fitted(worker);
    assert!(
        Arc::ptr_eq(&after, &own),
        "approved: its own tools, as they were"
    );
}

#[test]
fn only_plan_first_roles_and_their_supervisors_see_plan_tools() {
    let w = world();
    let plain = w.spawn("implementer");
    assert!(
        Arc::ptr_eq(&w.fitted(plain), &w.own(plain)),
        "unchanged, to the byte"
    );
    let root = w.fitted(w.root);
    assert!(has(&root, "review_plan") && !has(&root, "submit_plan"));
    assert!(
        has(&root, "write_file"),
        "a supervisor keeps its writing tools"
    );
    // The built-in persona spawns no plan_first role: its list stays as it was.
    let copilot = w.roles.get("copilot").unwrap();
    let listed = w.tools.tools_for(copilot, false, None);
    assert!(!has(&listed, "review_plan") && !has(&listed, "submit_plan"));
}

#[test]
fn the_coordinating_lead_keeps_reading_and_team_tools_and_its_workers_theirs() {
    let w = world();
    let plain = w.spawn("implementer");
    w.plans.set_coordinate_only(&w.team, true, true);
    let lead = w.fitted(w.root);
    assert!(!has(&lead, "write_file") && !has(&lead, "run_command"));
    assert!(has(&lead, "read_file") && has(&lead, "spawn_agent"));
    assert!(
        has(&w.fitted(plain), "write_file"),
        "its workers keep theirs"
    );
    w.plans.set_coordinate_only(&w.team, false, true);
    assert!(has(&w.fitted(w.root), "write_file"));
}

/// A persona brings its role's `coordinate_only` when it takes the session, told only
/// when the mode changes (a persona without it starts as it always did, no event).
#[test]
fn a_persona_brings_its_own_coordinate_only_setting() {
    let mut w = world();
    let _ = w.kinds();
    let copilot = w.roles.get("copilot").unwrap().clone();
    w.plans.follow_persona(&w.team, &copilot);
    assert!(!w.plans.coordinate_only() && w.kinds().is_empty());
    let mut lead = w.roles.get("lead").unwrap().clone();
    lead.coordinate_only = true;
    w.plans.follow_persona(&w.team, &lead);
    assert!(w.plans.coordinate_only());
    assert!(!has(&w.fitted(w.root), "write_file"));
    let told = w.kinds();
    assert!(
        matches!(told.as_slice(), [(id, EventKind::CoordinateOnly { on: true })] if *id == w.root),
        "{told:?}"
    );
    w.plans.follow_persona(&w.team, &lead);
    assert!(w.kinds().is_empty(), "no change, nothing told");
    // A writing persona taking over writes again.
    w.plans.follow_persona(&w.team, &copilot);
    assert!(!w.plans.coordinate_only());
    assert!(matches!(
        w.kinds().as_slice(),
        [(_, EventKind::CoordinateOnly { on: false })]
    ));
}

#[tokio::test]
async fn a_rejection_carries_its_reason_and_the_same_plan_again_gets_it_back() {
    let mut w = world();
    let worker = w.spawn("planner");
    let Submitted::Waiting(rx) = w.plans.submit(&w.team, worker, "rewrite it all") else {
        panic!("a first plan waits");
    };
    assert!(
        w.team.has_urgent_notice(w.root),
        "the supervisor is told at once"
    );
    assert_eq!(
        w.plans.decide(&w.team, worker, false, " ", Some(w.root)),
        Err(PlanRefused::NoReason)
    );
    let why = "too broad: touch only the parser";
    w.plans.decide(&w.team, worker, false, why, None).unwrap();
    let d = rx.await.unwrap();
    assert_eq!((d.approved, d.reason.as_str(), d.by), (false, why, None));
    assert!(!has(&w.fitted(worker), "write_file"));
    match w.plans.submit(&w.team, worker, "rewrite it all") {
        Submitted::Decided(d) => assert_eq!(d.reason, why),
        Submitted::Waiting(_) => panic!("the rejected plan is answered at once"),
    }
    assert!(matches!(
        w.plans.decide(&w.team, AgentId::new(), true, "", None),
        Err(PlanRefused::NothingAwaiting(_))
    ));
    let events = w.kinds();
    let plan_events: Vec<&EventKind> = events
        .iter()
        .filter(|(id, k)| {
            *id == worker && matches!(k, EventKind::PlanSubmitted(_) | EventKind::PlanDecided(_))
        })
        .map(|(_, k)| k)
        .collect();
    assert_eq!(plan_events.len(), 2, "{plan_events:?}");
    let mut state = None;
    for k in plan_events {
        state = PlanState::after(state.as_ref(), k);
    }
    assert!(matches!(state, Some(PlanState::Rejected { reason, .. }) if reason == why));
}

#[test]
fn a_restored_awaiting_plan_still_awaits_and_its_resubmission_tells_the_supervisor_again() {
    let mut w = world();
    let worker = w.spawn("planner");
    w.plans.restore([(
        worker,
        PlanState::Awaiting {
            plan_id: 7,
            plan: "p".into(),
        },
    )]);
    assert!(!has(&w.fitted(worker), "write_file"));
    let Submitted::Waiting(_rx) = w.plans.submit(&w.team, worker, "p") else {
        panic!("still awaiting");
    };
    assert!(w.team.has_urgent_notice(w.root));
    let resubmitted = w
        .kinds()
        .into_iter()
        .any(|(_, k)| matches!(k, EventKind::PlanSubmitted(_)));
    assert!(!resubmitted, "the same plan is not recorded twice");
    w.plans.decide(&w.team, worker, true, "", None).unwrap();
    assert!(
        matches!(w.kinds().last(), Some((id, EventKind::PlanDecided(d))) if *id == worker && d.plan_id == 7)
    );
}
