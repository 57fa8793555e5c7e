use super::*;

fn t(id: &str, deps: &[&str]) -> PlannedTask {
    PlannedTask {
        id: id.into(),
        title: format!("task {id}"),
        description: None,
        role: None,
        depends_on: deps.iter().map(|d| d.to_string()).collect(),
        paths: Vec::new(),
        wait: false,
    }
}

fn status(b: &Board, id: &str) -> TaskStatus {
    b.get(id).unwrap().status
}

#[test]
fn cycles_are_refused_whole_and_named() {
    let mut b = Board::default();
    assert_eq!(
        b.plan(vec![t("T1", &["T1"])]),
        Err(BoardError::Cycle(vec!["T1".into(), "T1".into()]))
    );
    let err = b
        .plan(vec![t("T1", &[]), t("T2", &["T4"]), t("T4", &["T2"])])
        .unwrap_err();
    assert_eq!(
        err,
        BoardError::Cycle(vec!["T2".into(), "T4".into(), "T2".into()])
    );
    assert!(err.to_string().contains("T2 → T4 → T2"), "{err}");
    assert!(b.tasks().is_empty(), "nothing of a refused plan is added");
    let long = vec![
        t("A", &["B"]),
        t("B", &["C"]),
        t("C", &["D"]),
        t("D", &["A"]),
    ];
    assert!(matches!(b.plan(long), Err(BoardError::Cycle(c)) if c.len() == 5));
    // A diamond is not a cycle.
    let diamond = vec![
        t("A", &[]),
        t("B", &["A"]),
        t("C", &["A"]),
        t("D", &["B", "C"]),
    ];
    let changes = b.plan(diamond).unwrap();
    assert_eq!(changes.ready, vec!["A".to_string()]);
    assert_eq!(status(&b, "D"), TaskStatus::Pending);
    // A cycle through tasks already on the board is found too.
    assert!(matches!(
        b.plan(vec![t("A", &["D"])]),
        Err(BoardError::Cycle(_))
    ));
}

#[test]
fn unknown_dependencies_and_duplicates_are_refused_by_name() {
    let mut b = Board::default();
    let err = b.plan(vec![t("T1", &["T9"])]).unwrap_err();
    assert_eq!(
        err,
        BoardError::UnknownDependency {
            task: "T1".into(),
            dependency: "T9".into()
        }
    );
    assert!(matches!(
        b.plan(vec![t("T1", &[]), t("T1", &[])]),
        Err(BoardError::Duplicate(id)) if id == "T1"
    ));
}

#[test]
fn ready_and_blocked_follow_the_dependencies() {
    let mut b = Board::default();
    b.plan(vec![t("T1", &[]), t("T2", &["T1"]), t("T3", &["T2"])])
        .unwrap();
    let w1 = AgentId::new();
    // T2 cannot be assigned before T1 is done.
    let err = b.assign("T2", w1).unwrap_err();
    assert!(err.to_string().contains("waits for T1 (ready)"), "{err}");
    b.assign("T1", w1).unwrap();
    assert_eq!(status(&b, "T1"), TaskStatus::Running);
    let changes = b.finish(w1, true, Some("did it".into()));
    assert_eq!(changes.ready, vec!["T2".to_string()]);
    assert_eq!(b.get("T1").unwrap().result.as_deref(), Some("did it"));
    // T2 fails: T3 is blocked, and with nothing running or ready that is a deadlock.
    let w2 = AgentId::new();
    b.assign("T2", w2).unwrap();
    assert!(b.deadlock().is_none(), "T2 runs");
    b.finish(w2, false, None);
    assert_eq!(status(&b, "T3"), TaskStatus::Blocked);
    let stuck = b.deadlock().unwrap();
    assert_eq!(stuck.len(), 1);
    assert_eq!(stuck[0].id, "T3");
    assert!(stuck[0].why.contains("T2 (failed)"), "{}", stuck[0].why);
    // Reopening T2 unblocks the chain.
    let changes = b.update("T2", Some(ManualStatus::Reopen), None).unwrap();
    assert_eq!(changes.ready, vec!["T2".to_string()]);
    assert_eq!(status(&b, "T3"), TaskStatus::Pending);
    assert!(b.deadlock().is_none());
}

#[test]
fn a_block_travels_down_a_chain_and_cancel_blocks_dependents() {
    let mut b = Board::default();
    b.plan(vec![
        t("A", &[]),
        t("B", &["A"]),
        t("C", &["B"]),
        t("D", &["C"]),
    ])
    .unwrap();
    b.update(
        "A",
        Some(ManualStatus::Cancelled),
        Some("not needed".into()),
    )
    .unwrap();
    for id in ["B", "C", "D"] {
        assert_eq!(status(&b, id), TaskStatus::Blocked, "{id}");
    }
    assert_eq!(b.get("A").unwrap().notes, vec!["not needed".to_string()]);
}

#[test]
fn only_open_tasks_are_replaced() {
    let mut b = Board::default();
    b.plan(vec![t("T1", &[]), t("T2", &["T1"])]).unwrap();
    // Replacing a pending task keeps its place and takes the new content.
    let mut again = t("T2", &[]);
    again.title = "new title".into();
    let changes = b.plan(vec![again]).unwrap();
    assert_eq!(changes.ready, vec!["T2".to_string()]);
    assert_eq!(b.get("T2").unwrap().title, "new title");
    assert_eq!(b.tasks().len(), 2);
    let w = AgentId::new();
    b.assign("T1", w).unwrap();
    assert_eq!(
        b.plan(vec![t("T1", &[])]),
        Err(BoardError::NotReplaceable {
            id: "T1".into(),
            status: "running"
        })
    );
}
