//! Where the session's limit on model requests in flight starts, and whether it moves
//! (see `limiter`). The configured `limits.max_concurrent_requests` wins and stays;
//! llama.cpp says its slots in `/props` (`total_slots`), taken as they are. Any other
//! server starts with several at once and adapts: a local one (vLLM, SGLang, Ollama, LM
//! Studio, a LiteLLM proxy) both on 429/503 and when replies wait in its queue, a remote
//! API on 429/503 only.

use super::ServerProps;
use super::limiter::Adapt;

/// Where the limit of a remote server starts, unless configured.
pub const REMOTE: u32 = 8;
/// Where the limit of a local server that does not say its slots starts: a team's first
/// fan-out goes at once, and a server that serves fewer soon shows it.
pub const LOCAL: u32 = 4;

/// The limit, where it came from and what moves it (for `squad doctor` and the log).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InFlight {
    /// Where it starts.
    pub limit: u32,
    pub source: &'static str,
    pub adapt: Adapt,
}

impl InFlight {
    /// For `squad doctor` and the log: the number and why.
    pub fn describe(&self) -> String {
        match self.adapt {
            Adapt::Fixed => format!("{} ({})", self.limit, self.source),
            Adapt::Overload => format!(
                "starts at {}, fewer after 429/503, more while replies come at once ({})",
                self.limit, self.source
            ),
            Adapt::Queue => format!(
                "starts at {}, fewer when replies wait in the server's queue or after \
                 429/503, more while they come at once, up to {} ({})",
                self.limit,
                super::limiter::MAX_ADAPTIVE,
                self.source
            ),
        }
    }
}

pub fn in_flight(configured: Option<u32>, local: bool, props: ServerProps) -> InFlight {
    let (limit, source, adapt) = match (configured, local, props.slots) {
        (Some(n), _, _) => (n, "limits.max_concurrent_requests", Adapt::Fixed),
        (None, true, Some(slots)) => (slots, "the server's /props total_slots", Adapt::Fixed),
        (None, true, None) => (
            LOCAL,
            "a local server that does not say its slots",
            Adapt::Queue,
        ),
        (None, false, _) => (REMOTE, "a remote server", Adapt::Overload),
    };
    InFlight {
        limit: limit.max(1),
        source,
        adapt,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_wins_then_the_servers_slots_then_several_that_adapt() {
        let slots = |n| ServerProps {
            window: None,
            slots: Some(n),
        };
        let fixed = |limit| (limit, Adapt::Fixed);
        let of = |f: InFlight| (f.limit, f.adapt);
        assert_eq!(of(in_flight(Some(3), true, slots(4))), fixed(3));
        assert_eq!(of(in_flight(None, true, slots(4))), fixed(4));
        let silent = in_flight(None, true, ServerProps::default());
        assert_eq!(of(silent.clone()), (LOCAL, Adapt::Queue));
        assert!(silent.describe().contains("wait in the server's queue"));
        assert_eq!(
            of(in_flight(None, false, ServerProps::default())),
            (REMOTE, Adapt::Overload)
        );
        // A remote server's word on slots is not asked for and not taken.
        assert_eq!(of(in_flight(None, false, slots(1))).0, REMOTE);
        assert_eq!(of(in_flight(Some(0), false, slots(1))), fixed(1));
        assert_eq!(
            in_flight(Some(2), true, slots(4)).describe(),
            "2 (limits.max_concurrent_requests)"
        );
    }
}
