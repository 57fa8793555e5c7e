//! `squad acp` driven as an editor would: a plain JSON-RPC client on the real binary's
//! stdio.

use super::{MockServer, Sandbox};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::mpsc;

/// A plain JSON-RPC client on the child's stdio. Every stdout line must be JSON-RPC.
pub struct Client {
    pub child: Child,
    pub stdin: ChildStdin,
    pub lines: mpsc::UnboundedReceiver<String>,
    /// Every message read so far.
    pub seen: Vec<Value>,
}

impl Client {
    pub fn start(sb: &Sandbox, mock: &MockServer, args: &[&str]) -> Self {
        Self::start_with(sb, mock, args, "debug")
    }

    pub fn start_with(sb: &Sandbox, mock: &MockServer, args: &[&str], log: &str) -> Self {
        let mut cmd = sb.command(Some(mock));
        cmd.arg("acp")
            .args(args)
            .env("SQUAD_LOG", log)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut r = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = r.next_line().await {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            stdin,
            lines,
            seen: Vec::new(),
        }
    }

    pub async fn send_raw(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.write_all(b"\n").await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    pub async fn send(&mut self, msg: Value) {
        self.send_raw(&msg.to_string()).await;
    }

    pub async fn request(&mut self, id: u64, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
    }

    /// The next message; every line must be a JSON-RPC 2.0 message.
    pub async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(30), self.lines.recv())
            .await
            .expect("no message from squad acp within 30 s")
            .expect("squad acp closed stdout");
        let msg: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {line}"));
        assert_eq!(msg["jsonrpc"], "2.0", "not JSON-RPC: {line}");
        self.seen.push(msg.clone());
        msg
    }

    /// Reads until the message that `pred` accepts, and returns it.
    pub async fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let msg = self.next().await;
            if pred(&msg) {
                return msg;
            }
        }
    }

    /// The response to our request `id`.
    pub async fn response(&mut self, id: u64) -> Value {
        self.until(|m| m["id"] == id && m.get("method").is_none())
            .await
    }

    pub async fn initialize(&mut self) -> Value {
        self.request(
            0,
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await;
        self.response(0).await
    }

    pub async fn new_session(&mut self, sb: &Sandbox) -> String {
        self.request(1, "session/new", json!({"cwd": sb.ws(), "mcpServers": []}))
            .await;
        let r = self.response(1).await;
        r["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session id: {r}"))
            .to_string()
    }

    pub async fn prompt(&mut self, id: u64, session: &str, text: &str) {
        self.request(
            id,
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
        .await;
    }

    /// The `session/update`s seen so far of one kind.
    pub fn updates(&self, kind: &str) -> Vec<Value> {
        self.seen
            .iter()
            .filter(|m| {
                m["method"] == "session/update" && m["params"]["update"]["sessionUpdate"] == kind
            })
            .map(|m| m["params"]["update"].clone())
            .collect()
    }

    /// Closes stdin and waits for the process to end.
    pub async fn close(mut self) {
        drop(self.stdin);
        let status = tokio::time::timeout(Duration::from_secs(20), self.child.wait())
            .await
            .expect("squad acp did not exit after stdin closed")
            .unwrap();
        assert!(status.success(), "{status}");
        // Whatever is left on stdout is JSON-RPC too.
        while let Ok(line) = self.lines.try_recv() {
            let msg: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(msg["jsonrpc"], "2.0");
        }
    }
}
