//! How many model requests the session keeps in flight. A remote API serves many at once;
//! a local server serves as many as it has slots, and more only queue there while each
//! waiting agent holds a connection and its timeout runs. llama.cpp says its slots in
//! `/props` (`total_slots`); a local server that does not say gets one at a time. The
//! configured `limits.max_concurrent_requests` wins over both.

use super::ServerProps;

/// Requests in flight to a server that is not on this machine, unless configured.
pub const REMOTE: u32 = 8;

/// The limit and where it came from (for `squad doctor` and the log).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InFlight {
    pub limit: u32,
    pub source: &'static str,
}

pub fn in_flight(configured: Option<u32>, local: bool, props: ServerProps) -> InFlight {
    let (limit, source) = match (configured, local, props.slots) {
        (Some(n), _, _) => (n, "limits.max_concurrent_requests"),
        (None, true, Some(slots)) => (slots, "the server's /props total_slots"),
        (None, true, None) => (1, "a local server that does not say its slots"),
        (None, false, _) => (REMOTE, "the default for a remote server"),
    };
    InFlight {
        limit: limit.max(1),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_wins_then_the_servers_slots_then_one_locally() {
        let slots = |n| ServerProps {
            window: None,
            slots: Some(n),
        };
        assert_eq!(in_flight(Some(3), true, slots(4)).limit, 3);
        assert_eq!(in_flight(None, true, slots(4)).limit, 4);
        assert_eq!(in_flight(None, true, ServerProps::default()).limit, 1);
        assert_eq!(in_flight(None, false, ServerProps::default()).limit, REMOTE);
        // A remote server's word on slots is not asked for and not taken.
        assert_eq!(in_flight(None, false, slots(1)).limit, REMOTE);
        assert_eq!(in_flight(Some(0), false, slots(1)).limit, 1);
    }
}
