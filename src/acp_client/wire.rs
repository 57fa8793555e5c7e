//! The connection's lines over the agent's stdin and stdout (the crate's `Lines`
//! transport), with one check of squad's own: a line on stdout that is not a JSON-RPC 2.0
//! message is a fault to report, not something to skip (an agent that logs to stdout would
//! otherwise leave squad waiting for an answer that never comes).

use agent_client_protocol::Lines;
use futures::{Sink, Stream};
use std::io;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::Notify;

/// The first line the agent wrote that is not JSON-RPC, once there is one.
#[derive(Clone, Default)]
pub(super) struct Malformed {
    line: Arc<Mutex<Option<String>>>,
    seen: Arc<Notify>,
}

impl Malformed {
    fn found(&self, line: String) {
        let mut first = crate::sync::lock(&self.line);
        if first.is_none() {
            *first = Some(line);
        }
        drop(first);
        self.seen.notify_waiters();
    }

    pub fn line(&self) -> Option<String> {
        crate::sync::lock(&self.line).clone()
    }

    /// Resolves once a malformed line was seen (at once if one was already).
    pub async fn seen(&self) -> String {
        loop {
            let notified = self.seen.notified();
            if let Some(line) = self.line() {
                return line;
            }
            notified.await;
        }
    }
}

/// Whether `line` is one JSON-RPC 2.0 message (an object that says so).
fn is_json_rpc(line: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(line)
        .is_ok_and(|v| v.get("jsonrpc").and_then(|j| j.as_str()) == Some("2.0"))
}

/// The transport on the agent's pipes; malformed lines go to `malformed`.
pub(super) fn lines(
    stdin: ChildStdin,
    stdout: ChildStdout,
    malformed: Malformed,
) -> Lines<
    impl Sink<String, Error = io::Error> + Send + 'static,
    impl Stream<Item = io::Result<String>> + Send + 'static,
> {
    let outgoing = Box::pin(futures::sink::unfold(
        stdin,
        |mut stdin, line: String| async move {
            stdin.write_all(line.as_bytes()).await?;
            stdin.write_all(b"\n").await?;
            stdin.flush().await?;
            Ok::<_, io::Error>(stdin)
        },
    ));
    let reader = BufReader::new(stdout).lines();
    let incoming = Box::pin(futures::stream::unfold(
        (reader, malformed),
        |(mut reader, malformed)| async move {
            loop {
                match reader.next_line().await {
                    Ok(Some(line)) if line.trim().is_empty() => continue,
                    Ok(Some(line)) if is_json_rpc(&line) => {
                        return Some((Ok(line), (reader, malformed)));
                    }
                    Ok(Some(line)) => malformed.found(line),
                    Ok(None) => return None,
                    Err(e) => return Some((Err(e), (reader, malformed))),
                }
            }
        },
    ));
    Lines::new(outgoing, incoming)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_json_rpc_objects_pass() {
        assert!(is_json_rpc(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
        assert!(!is_json_rpc("Starting agent..."));
        assert!(!is_json_rpc(r#"{"id":1}"#));
        assert!(!is_json_rpc("[1,2]"));
    }
}
