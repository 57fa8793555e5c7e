//! A real Podman for the environment tests: `podman system service` on a private socket,
//! serving the Docker Engine API, with its own `containers.conf` (`CONTAINERS_CONF`): the
//! runc runtime (Debian's default crun refuses this kind of machine's hybrid cgroups) and
//! ulimits within the hard limits (the machine has no CAP_SYS_RESOURCE). The test image is
//! built offline, `FROM scratch` with Debian's static busybox and a marker file only the
//! container has (`/etc/squad-far-side` reads `container`). squad links glibc, so the
//! tests mount the built binary and the host's libraries into the container read-only
//! ([`Podman::squad_mounts`]). `.ci/engines` installs podman, runc and busybox-static; a
//! test skips, with one line, only when one is missing or the service cannot start.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The test image, built once per machine (the tag changes with its contents).
pub const IMAGE: &str = "localhost/squad-test-busybox:2";

const CONTAINERS_CONF: &str = "[containers]\n\
    default_ulimits = [\"nofile=1024:1024\", \"nproc=1024:1024\"]\n\
    [engine]\nruntime = \"runc\"\n";

pub struct Podman {
    child: Child,
    dir: tempfile::TempDir,
    /// `unix://…`, as `DOCKER_HOST` and a container environment's `socket` take it.
    pub socket: String,
}

impl Podman {
    /// The service on its own socket with the test image present, or `None` (with the skip
    /// line printed) where Podman cannot run here.
    pub fn start(test: &str) -> Option<Podman> {
        crate::common::engines::install();
        for program in ["podman", "runc"] {
            let found = Command::new(program)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success());
            if !found {
                eprintln!("skipped {test}: {program} is not installed");
                return None;
            }
        }
        if !Path::new("/bin/busybox").exists() {
            eprintln!("skipped {test}: /bin/busybox is not installed (busybox-static)");
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("squad-podman-")
            .tempdir()
            .unwrap();
        let conf = dir.path().join("containers.conf");
        std::fs::write(&conf, CONTAINERS_CONF).unwrap();
        if let Err(why) = build_image(&conf, dir.path()) {
            eprintln!("skipped {test}: podman cannot build the test image here: {why}");
            return None;
        }
        let sock = dir.path().join("podman.sock");
        let socket = format!("unix://{}", sock.display());
        let child = Command::new("podman")
            .args(["system", "service", "--time=0", &socket])
            .env("CONTAINERS_CONF", &conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("service.log")).unwrap())
            .spawn()
            .unwrap();
        let podman = Podman { child, dir, socket };
        if let Err(why) = podman.wait_ready(&sock) {
            eprintln!("skipped {test}: podman system service does not answer: {why}");
            return None;
        }
        Some(podman)
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Bind mounts (`host:container:ro`) that make the built `squad` run in the busybox
    /// image at `/usr/local/bin/squad`: the binary and the host's C libraries.
    pub fn squad_mounts(squad: &Path) -> Vec<String> {
        let mut mounts = vec![format!("{}:/usr/local/bin/squad:ro", squad.display())];
        for lib in [
            "/lib/x86_64-linux-gnu",
            "/lib64",
            "/usr/lib/x86_64-linux-gnu",
        ] {
            if Path::new(lib).exists() {
                mounts.push(format!("{lib}:{lib}:ro"));
            }
        }
        mounts
    }

    /// `podman` with this harness's containers.conf.
    pub fn cli(&self) -> Command {
        let mut cmd = Command::new("podman");
        cmd.env("CONTAINERS_CONF", self.dir().join("containers.conf"));
        cmd
    }

    /// Containers whose name starts with `prefix`, running or not.
    pub fn containers_named(&self, prefix: &str) -> Vec<String> {
        let out = self
            .cli()
            .args(["ps", "-a", "--format", "{{.Names}}"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|n| n.starts_with(prefix))
            .map(str::to_string)
            .collect()
    }

    fn wait_ready(&self, sock: &Path) -> Result<(), String> {
        use std::io::{Read, Write};
        let start = Instant::now();
        loop {
            if let Ok(mut s) = std::os::unix::net::UnixStream::connect(sock) {
                s.set_read_timeout(Some(Duration::from_secs(5))).ok();
                let req = "GET /v1.41/version HTTP/1.0\r\nHost: d\r\n\r\n";
                let mut body = String::new();
                if s.write_all(req.as_bytes()).is_ok()
                    && s.read_to_string(&mut body).is_ok()
                    && body.starts_with("HTTP/1.0 200")
                {
                    return Ok(());
                }
            }
            if start.elapsed() > Duration::from_secs(20) {
                let log = std::fs::read_to_string(self.dir().join("service.log"));
                return Err(log.unwrap_or_default());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Podman {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Builds [`IMAGE`] offline unless present; one build at a time across test binaries.
fn build_image(conf: &Path, dir: &Path) -> Result<(), String> {
    let ctx: PathBuf = dir.join("image");
    std::fs::create_dir_all(&ctx).unwrap();
    std::fs::copy("/bin/busybox", ctx.join("busybox")).unwrap();
    std::fs::write(
        ctx.join("Containerfile"),
        "FROM scratch\nCOPY busybox /bin/busybox\n\
         RUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n\
         RUN mkdir -p /tmp /etc && chmod 1777 /tmp && echo container > /etc/squad-far-side\n",
    )
    .unwrap();
    let script = format!(
        "podman image exists {IMAGE} || podman build -q --network none -t {IMAGE} {}",
        ctx.display()
    );
    let out = Command::new("flock")
        .args(["/tmp/squad-podman-image.lock", "sh", "-c", &script])
        .env("CONTAINERS_CONF", conf)
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}
