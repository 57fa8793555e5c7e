use super::*;

/// Waits a little: the limiter reads real time, and only order matters here.
async fn pause(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

/// Whether `acquire` gets in within a short while.
async fn gets_in(limiter: &Arc<Limiter>) -> Option<Permit> {
    tokio::time::timeout(Duration::from_millis(50), limiter.acquire())
        .await
        .ok()
}

#[tokio::test]
async fn a_fixed_limit_never_moves() {
    let limiter = Limiter::fixed(2);
    let (a, b) = (limiter.acquire().await, limiter.acquire().await);
    a.first_byte();
    pause(30).await;
    drop(a);
    pause(10).await;
    b.first_byte();
    b.overloaded();
    assert_eq!(limiter.limit(), 2);
    assert!(gets_in(&limiter).await.is_some());
}

#[tokio::test]
async fn a_reply_that_waited_for_another_to_end_lowers_the_limit_below_its_in_flight() {
    let limiter = Limiter::new(4, Adapt::Queue);
    let (a, b, c) = (
        limiter.acquire().await,
        limiter.acquire().await,
        limiter.acquire().await,
    );
    a.first_byte();
    pause(60).await;
    drop(a); // the server's one slot frees: b is served now
    pause(20).await;
    b.first_byte(); // sent second: two were in flight
    assert_eq!(limiter.limit(), 1);
    // c was sent third: the limit stays at the lower of the two.
    c.first_byte();
    assert_eq!(limiter.limit(), 1);
}

#[tokio::test]
async fn a_reply_served_at_once_is_no_sign_of_a_queue() {
    let limiter = Limiter::new(4, Adapt::Queue);
    let (a, b) = (limiter.acquire().await, limiter.acquire().await);
    a.first_byte();
    b.first_byte(); // before anything ended
    drop(a);
    pause(30).await;
    // A first attempt's byte counts once; a retried request's not at all.
    b.first_byte();
    let c = limiter.acquire().await;
    c.retrying(false);
    pause(30).await;
    c.first_byte();
    assert_eq!(limiter.limit(), 4);
}

#[tokio::test]
async fn a_remote_limit_does_not_read_queues() {
    let limiter = Limiter::new(4, Adapt::Overload);
    let (a, b) = (limiter.acquire().await, limiter.acquire().await);
    a.first_byte();
    pause(60).await;
    drop(a);
    pause(20).await;
    b.first_byte();
    assert_eq!(limiter.limit(), 4);
}

#[tokio::test]
async fn clean_replies_while_requests_wait_grow_the_limit() {
    let limiter = Limiter::new(1, Adapt::Queue);
    let a = limiter.acquire().await;
    let waiting = {
        let limiter = limiter.clone();
        tokio::spawn(async move { limiter.acquire().await })
    };
    pause(20).await;
    a.first_byte();
    assert_eq!(limiter.limit(), 2, "slow start: one more at once");
    let b = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("let in by the higher limit")
        .unwrap();
    // Nobody waits now: a clean reply is no evidence that more would help.
    b.first_byte();
    assert_eq!(limiter.limit(), 2);
    drop((a, b));
    let limit = Limiter::new(MAX_ADAPTIVE, Adapt::Queue);
    let (p, _q) = (limit.acquire().await, limit.acquire().await);
    let _held: Vec<Permit> =
        futures::future::join_all((2..MAX_ADAPTIVE).map(|_| limit.acquire())).await;
    let waiter = {
        let limit = limit.clone();
        tokio::spawn(async move { limit.acquire().await })
    };
    pause(20).await;
    p.first_byte();
    assert_eq!(limit.limit(), MAX_ADAPTIVE, "never past the ceiling");
    waiter.abort();
}

#[tokio::test]
async fn overload_halves_the_limit_once_per_limit_and_a_shrink_waits_for_slots_to_come_back() {
    let limiter = Limiter::new(8, Adapt::Overload);
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(limiter.acquire().await);
    }
    for p in &held {
        p.retrying(true); // four 429s of requests sent under the same limit
    }
    assert_eq!(limiter.limit(), 4, "halved once, not four times");
    // Four in flight under a limit of 4: nobody else gets in until one ends.
    assert!(gets_in(&limiter).await.is_none());
    held.pop();
    let next = gets_in(&limiter).await.expect("a slot came back");
    next.overloaded(); // sent under the new limit: halves again
    assert_eq!(limiter.limit(), 2);
    drop(next);
    // Three in flight under 2: the ones that end pay the debt first.
    held.pop();
    assert!(gets_in(&limiter).await.is_none());
    held.pop();
    assert!(gets_in(&limiter).await.is_some());
    assert_eq!(limiter.limit(), 2);
}

#[tokio::test]
async fn an_end_that_merely_falls_in_a_replys_wait_is_no_sign_of_a_queue() {
    // Served side by side, equally slow: the first to end does so just before the
    // other's first byte, which came a moment later, not a whole reply later.
    let limiter = Limiter::new(4, Adapt::Queue);
    let warm = limiter.acquire().await;
    pause(40).await;
    warm.first_byte(); // a typical time to first byte: 40 ms
    drop(warm);
    let (a, b) = (limiter.acquire().await, limiter.acquire().await);
    pause(80).await;
    a.first_byte();
    drop(a);
    b.first_byte();
    assert_eq!(limiter.limit(), 4);
}
