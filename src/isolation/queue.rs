//! One workspace change at a time, in the order they were asked for: merges (and the
//! snapshots of the workspace that creating and redoing take) wait their turn here, so a
//! snapshot never sees a merge half written and two merges never interleave.

use std::sync::Arc;
use tokio::sync::Mutex;

/// A FIFO turn at the workspace (tokio's mutex wakes waiters in the order they came).
#[derive(Clone, Default)]
pub struct MergeQueue {
    gate: Arc<Mutex<()>>,
}

/// The job could not finish: it panicked, or the runtime is shutting down.
#[derive(Debug, thiserror::Error)]
#[error("the workspace job stopped before it finished: {0}")]
pub struct QueueError(String);

impl MergeQueue {
    pub fn new() -> Self {
        Self::default()
    }

    /// Waits for this caller's turn, then runs the blocking `job` on tokio's blocking pool.
    /// The turn is held by the job itself, so a caller that stops waiting (its task
    /// cancelled) does not let the next job start while this one still writes.
    pub async fn run<T, F>(&self, job: F) -> Result<T, QueueError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let turn = self.gate.clone().lock_owned().await;
        tokio::task::spawn_blocking(move || {
            let _turn = turn;
            job()
        })
        .await
        .map_err(|e| QueueError(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex as StdMutex;
    use std::time::Duration;

    #[tokio::test]
    async fn jobs_run_one_at_a_time_in_the_order_they_queued() {
        let queue = MergeQueue::new();
        let log = Arc::new(StdMutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for i in 0..5 {
            let (queue, log) = (queue.clone(), log.clone());
            tasks.push(tokio::spawn(async move {
                queue
                    .run(move || {
                        crate::sync::lock(&log).push(format!("start {i}"));
                        std::thread::sleep(Duration::from_millis(5));
                        crate::sync::lock(&log).push(format!("end {i}"));
                    })
                    .await
            }));
            // Queue them in a known order.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        for t in tasks {
            t.await.unwrap().unwrap();
        }
        let log = crate::sync::lock(&log).clone();
        let expected: Vec<String> = (0..5)
            .flat_map(|i| [format!("start {i}"), format!("end {i}")])
            .collect();
        assert_eq!(log, expected);
    }
}
