//! Retry policy: which failures are worth another attempt, and how long to wait.

use super::ModelError;
use std::time::Duration;

/// Longest wait we accept from a `Retry-After` header; beyond it we wait this long.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);
/// Ceiling for the exponential backoff.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// A failed attempt, with the server's `Retry-After` hint when it gave one.
#[derive(Debug)]
pub(crate) struct AttemptError {
    pub error: ModelError,
    pub retry_after: Option<Duration>,
}

impl From<ModelError> for AttemptError {
    fn from(error: ModelError) -> Self {
        Self {
            error,
            retry_after: None,
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct RetryPolicy {
    pub max_retries: u32,
    pub base: Duration,
}

impl RetryPolicy {
    /// How long to wait before attempt `failed_attempt + 1`. `Retry-After` wins on 429 and
    /// 503, where servers use it; otherwise `base * 2^(n-1)` plus up to 20 % jitter so
    /// agents failing together do not retry in lockstep.
    pub fn delay(&self, failed_attempt: u32, err: &AttemptError) -> Duration {
        let honours_header = matches!(
            err.error,
            ModelError::Http {
                status: 429 | 503,
                ..
            }
        );
        if let Some(after) = err.retry_after.filter(|_| honours_header) {
            return after.min(MAX_RETRY_AFTER);
        }
        let exp = failed_attempt.saturating_sub(1).min(16);
        let backoff = self.base.saturating_mul(1u32 << exp).min(MAX_BACKOFF);
        backoff + backoff.mul_f64(0.2 * jitter_fraction())
    }
}

/// A number in [0, 1) that differs between calls; no need for a real RNG here.
fn jitter_fraction() -> f64 {
    use std::hash::{BuildHasher, RandomState};
    let bits = RandomState::new().hash_one(std::time::Instant::now());
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

/// Parses a `Retry-After` value in seconds (`"2"`, `"1.5"`). HTTP dates are ignored:
/// OpenAI-compatible servers send seconds.
pub(crate) fn parse_retry_after(value: &str) -> Option<Duration> {
    let secs: f64 = value.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(1e6)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16, retry_after: Option<u64>) -> AttemptError {
        AttemptError {
            error: ModelError::Http {
                status,
                message: String::new(),
            },
            retry_after: retry_after.map(Duration::from_secs),
        }
    }

    #[test]
    fn backoff_grows_exponentially_with_bounded_jitter() {
        let p = RetryPolicy {
            max_retries: 5,
            base: Duration::from_millis(100),
        };
        let err = http(500, None);
        for (n, base_ms) in [(1, 100u64), (2, 200), (3, 400)] {
            let d = p.delay(n, &err);
            assert!(d >= Duration::from_millis(base_ms), "{d:?}");
            assert!(d <= Duration::from_millis(base_ms * 6 / 5), "{d:?}");
        }
        assert!(p.delay(40, &err) <= MAX_BACKOFF.mul_f64(1.2));
    }

    #[test]
    fn retry_after_is_honoured_on_429_and_503_only() {
        let p = RetryPolicy {
            max_retries: 3,
            base: Duration::from_millis(10),
        };
        assert_eq!(p.delay(1, &http(429, Some(3))), Duration::from_secs(3));
        assert_eq!(p.delay(1, &http(503, Some(2))), Duration::from_secs(2));
        assert!(p.delay(1, &http(500, Some(3))) < Duration::from_secs(1));
        assert_eq!(p.delay(1, &http(429, Some(10_000))), MAX_RETRY_AFTER);
    }

    #[test]
    fn retry_after_parses_seconds() {
        assert_eq!(parse_retry_after(" 2 "), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }
}
