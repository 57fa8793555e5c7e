//! The batch's pace: the time left, from the rows settled in this run and how many are
//! at work at once.

use std::time::Instant;

/// When this run began and how many rows it has settled.
#[derive(Clone, Copy, Debug)]
pub struct Pace {
    started: Instant,
    settled: usize,
}

impl Pace {
    pub fn new(started: Instant) -> Self {
        Self {
            started,
            settled: 0,
        }
    }

    pub fn settle(&mut self) {
        self.settled += 1;
    }

    /// Seconds until the `left` rows are settled at the pace so far; `None` before the
    /// first row of this run settled.
    pub fn eta(&self, left: usize, now: Instant) -> Option<u64> {
        if self.settled == 0 {
            return None;
        }
        let per_row = now.saturating_duration_since(self.started) / self.settled as u32;
        let left = u32::try_from(left).unwrap_or(u32::MAX);
        Some(per_row.saturating_mul(left).as_secs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn since(t0: Instant, d: Duration) -> Instant {
        t0 + d
    }

    #[test]
    fn the_eta_is_the_pace_so_far_times_the_rows_left() {
        let t0 = Instant::now();
        let mut pace = Pace::new(t0);
        assert_eq!(pace.eta(10, since(t0, Duration::from_secs(5))), None);
        pace.settle();
        pace.settle();
        // Two rows in 10 s: 5 s a row, 6 left.
        assert_eq!(pace.eta(6, since(t0, Duration::from_secs(10))), Some(30));
        assert_eq!(pace.eta(0, since(t0, Duration::from_secs(10))), Some(0));
    }
}
