//! Drives the real `squad` binary in a pseudo-terminal and reads its screen through a
//! vt100 emulator, the way a person at a terminal would see it.
#![allow(dead_code)]

use super::Sandbox;
use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct Tui {
    parser: Arc<Mutex<vt100::Parser>>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    child: Box<dyn Child + Send + Sync>,
    _master: Box<dyn MasterPty + Send>,
    /// Everything the program wrote, for checks on what it left behind.
    raw: Arc<Mutex<Vec<u8>>>,
}

impl Tui {
    /// Starts squad with `base_url` as its provider (empty: the default, api.openai.com;
    /// such a test must not send a message).
    pub fn spawn(sb: &Sandbox, base_url: &str, args: &[&str], rows: u16, cols: u16) -> Self {
        Self::spawn_with_env(sb, base_url, args, &[], rows, cols)
    }

    /// `spawn` with more environment variables.
    pub fn spawn_with_env(
        sb: &Sandbox,
        base_url: &str,
        args: &[&str],
        env: &[(&str, &str)],
        rows: u16,
        cols: u16,
    ) -> Self {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        // `SQUAD_TEST_BIN` runs the tests against another build (an older one, to see a test fail).
        let mut cmd = CommandBuilder::new(super::squad::squad_bin());
        cmd.args(args);
        cmd.cwd(sb.ws());
        cmd.env_clear();
        cmd.env("PATH", std::env::var("PATH").unwrap_or_default());
        cmd.env("HOME", sb.home.path());
        cmd.env("TMPDIR", sb.tmp.path());
        cmd.env("TERM", "xterm-256color");
        cmd.env("SQUAD_CONFIG_DIR", sb.config_dir());
        cmd.env("SQUAD_DATA_DIR", sb.data_dir());
        cmd.env("SQUAD_LOCAL_PORTS", "");
        cmd.env("SQUAD_LOG", "debug");
        if !base_url.is_empty() {
            cmd.env("OPENAI_BASE_URL", base_url);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = pair.slave.spawn_command(cmd).unwrap();
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().unwrap();
        let writer: Arc<Mutex<Box<dyn Write + Send>>> =
            Arc::new(Mutex::new(pair.master.take_writer().unwrap()));
        let parser = Arc::new(Mutex::new(vt100::Parser::new(rows, cols, 0)));
        let raw = Arc::new(Mutex::new(Vec::new()));
        {
            let parser = parser.clone();
            let writer = writer.clone();
            let raw = raw.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                loop {
                    let n = match reader.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    let chunk = &buf[..n];
                    raw.lock().unwrap().extend_from_slice(chunk);
                    let mut p = parser.lock().unwrap();
                    p.process(chunk);
                    // Answer the queries a real terminal would, so nothing waits on a timeout.
                    let mut replies = Vec::new();
                    if contains(chunk, b"\x1b[6n") {
                        let (r, c) = p.screen().cursor_position();
                        replies.extend(format!("\x1b[{};{}R", r + 1, c + 1).into_bytes());
                    }
                    if contains(chunk, b"\x1b[c") || contains(chunk, b"\x1b[0c") {
                        replies.extend_from_slice(b"\x1b[?1;2c");
                    }
                    drop(p);
                    if !replies.is_empty() {
                        let _ = writer.lock().unwrap().write_all(&replies);
                    }
                }
            });
        }
        Self {
            parser,
            writer,
            child,
            _master: pair.master,
            raw,
        }
    }

    pub fn screen(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    pub fn alternate_screen(&self) -> bool {
        self.parser.lock().unwrap().screen().alternate_screen()
    }

    pub fn cursor_hidden(&self) -> bool {
        self.parser.lock().unwrap().screen().hide_cursor()
    }

    pub fn raw_output(&self) -> Vec<u8> {
        self.raw.lock().unwrap().clone()
    }

    /// Waits until the screen satisfies `pred`; panics with the screen if it never does.
    pub async fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let s = self.screen();
            if pred(&s) {
                return s;
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {what}; the screen was:\n{s}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn wait_text(&self, text: &str) -> String {
        self.wait_for(text, |s| s.contains(text)).await
    }

    pub fn send(&self, bytes: &[u8]) {
        let mut w = self.writer.lock().unwrap();
        w.write_all(bytes).unwrap();
        w.flush().unwrap();
    }

    pub async fn type_text(&self, text: &str) {
        for ch in text.chars() {
            self.send(ch.to_string().as_bytes());
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    pub async fn enter(&self) {
        self.send(b"\r");
        tokio::time::sleep(Duration::from_millis(30)).await;
    }

    /// Waits for the process to end; `None` if it is still running after `timeout`.
    pub async fn wait_exit(&mut self, timeout: Duration) -> Option<portable_pty::ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                // Let the reader drain what the program wrote last.
                tokio::time::sleep(Duration::from_millis(100)).await;
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}
