//! A real OpenSSH server for the environment tests: `sshd -f <its own config>` on a free
//! loopback port, with a host key and a user key generated for it, touching no system
//! config (`/run/sshd`, the privilege separation folder Debian's service would make, is
//! made when missing). Clients reach it as host [`Sshd::HOST`] through the `ssh_config` it
//! writes. Its login sets `SQUAD_FAR_SIDE=ssh` (`environment=` in authorized_keys), so a
//! command that prints it ran through this server. `.ci/engines` installs `openssh-server`;
//! a test skips, with one line, only when `sshd` is missing.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SSHD: &str = "/usr/sbin/sshd";

pub struct Sshd {
    child: Child,
    dir: tempfile::TempDir,
    pub port: u16,
    /// The client config naming [`Sshd::HOST`] (`ssh -F`).
    pub ssh_config: PathBuf,
}

impl Sshd {
    /// The host name clients use, as their `ssh_config` knows it.
    pub const HOST: &'static str = "squad-test-sshd";

    /// A server accepting the generated key, or `None` (with the skip line printed) when
    /// this machine has no `sshd`.
    pub fn start(test: &str) -> Option<Sshd> {
        crate::common::engines::install();
        if !Path::new(SSHD).exists() {
            eprintln!("skipped {test}: sshd is not installed (openssh-server)");
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("squad-sshd-")
            .tempdir()
            .unwrap();
        let d = dir.path();
        for key in ["host_key", "user_key"] {
            let ok = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(d.join(key))
                .status()
                .unwrap()
                .success();
            assert!(ok, "ssh-keygen failed for {key}");
        }
        let user_pub = std::fs::read_to_string(d.join("user_key.pub")).unwrap();
        std::fs::write(
            d.join("authorized_keys"),
            format!("environment=\"SQUAD_FAR_SIDE=ssh\" {user_pub}"),
        )
        .unwrap();
        std::fs::create_dir_all("/run/sshd").unwrap();
        let port = free_port();
        std::fs::write(d.join("sshd_config"), server_config(d, port)).unwrap();
        let host_pub = std::fs::read_to_string(d.join("host_key.pub")).unwrap();
        std::fs::write(
            d.join("known_hosts"),
            format!("[127.0.0.1]:{port} {host_pub}"),
        )
        .unwrap();
        let ssh_config = d.join("ssh_config");
        std::fs::write(&ssh_config, client_config(d, port)).unwrap();
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(d.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(d.join("sshd.log")).unwrap())
            .spawn()
            .unwrap();
        let sshd = Sshd {
            child,
            dir,
            port,
            ssh_config,
        };
        sshd.wait_ready();
        Some(sshd)
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `ssh` to this server with its client config, running `command` there.
    pub fn ssh(&self, command: &str) -> std::process::Output {
        Command::new("ssh")
            .arg("-F")
            .arg(&self.ssh_config)
            .arg(Self::HOST)
            .arg(command)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    fn wait_ready(&self) {
        let start = Instant::now();
        loop {
            let out = self.ssh("true");
            if out.status.success() {
                return;
            }
            if start.elapsed() > Duration::from_secs(10) {
                let log = std::fs::read_to_string(self.dir().join("sshd.log")).unwrap_or_default();
                panic!(
                    "sshd on port {} accepts no login: {}\nsshd log:\n{log}",
                    self.port,
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port nobody listened on a moment ago.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn server_config(d: &Path, port: u16) -> String {
    format!(
        "Port {port}\nListenAddress 127.0.0.1\nHostKey {hk}\nAuthorizedKeysFile {ak}\n\
         PidFile {pid}\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
         PubkeyAuthentication yes\nPermitRootLogin prohibit-password\nStrictModes no\n\
         UsePAM no\nPermitUserEnvironment yes\nMaxSessions 100\nMaxStartups 100\n\
         LogLevel ERROR\n",
        hk = d.join("host_key").display(),
        ak = d.join("authorized_keys").display(),
        pid = d.join("sshd.pid").display(),
    )
}

fn client_config(d: &Path, port: u16) -> String {
    let user = String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout).unwrap();
    format!(
        "Host {host}\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  IdentityFile {key}\n  \
         IdentitiesOnly yes\n  IdentityAgent none\n  UserKnownHostsFile {kh}\n  \
         GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  BatchMode yes\n  \
         LogLevel ERROR\n",
        host = Sshd::HOST,
        user = user.trim(),
        key = d.join("user_key").display(),
        kh = d.join("known_hosts").display(),
    )
}
