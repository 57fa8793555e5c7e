//! `squad` in a container whose image does not hold it (issue 52 part 3). With no `squad`
//! set for a container environment, this very binary goes in: its image's platform (the
//! engine's image inspect: os, architecture, variant) is checked against this machine's
//! before any container is made, then squad, the shared libraries its loader resolves for
//! it and the loader itself are streamed by the engine's archive upload into [`DIR`] of the
//! created container, and squad starts through that loader with those libraries, so it
//! runs in an image `FROM scratch` with nothing but a static busybox. A statically linked
//! squad goes alone. With `squad` set, the image (or a mount) holds it there.

use super::EnvError;
use crate::config::EnvironmentConfig;
use bollard::Docker;
use bollard::models::ImageInspect;
use bollard::query_parameters::UploadToContainerOptions;
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::io::AsyncReadExt;

/// Where squad and what it needs go in the container.
pub const DIR: &str = "/.squad";

/// How squad starts in a container: the words before `tool-server`, and what goes in first.
#[derive(Clone)]
pub struct Launch {
    pub argv: Vec<String>,
    /// This squad's files, to upload before the container starts; `None`: the image's.
    pub copied: Option<Arc<Bundle>>,
}

impl Launch {
    /// For `squad doctor`: where squad comes from.
    pub fn note(&self) -> String {
        match &self.copied {
            Some(b) if b.files.len() > 1 => format!(
                "copied in: this squad with its loader and {} libraries, in {DIR}",
                b.files.len() - 2
            ),
            Some(_) => format!("copied in: this squad (statically linked), in {DIR}"),
            None => format!("from the image: {}", self.argv.join(" ")),
        }
    }
}

/// This squad and the files it needs to run: `(name in DIR, file here, size)`.
pub struct Bundle {
    files: Vec<(String, PathBuf, u64)>,
    argv: Vec<String>,
}

/// How squad starts in a container of `image` (inspected): the config's `squad`, else this
/// squad copied in, when the image's platform is this machine's.
pub async fn launch(
    env: &str,
    config: &EnvironmentConfig,
    image: &ImageInspect,
) -> Result<Launch, EnvError> {
    if let Some(squad) = &config.squad {
        return Ok(Launch {
            argv: vec![squad.clone()],
            copied: None,
        });
    }
    let here = Platform::here();
    let there = Platform::of(image);
    if !here.runs(&there) {
        let name = config.image.as_deref().unwrap_or("?");
        return Err(EnvError::new(
            env,
            format!(
                "the image {name} is {there} and this squad is {here}, so it cannot be copied \
                 in: use an image built for {here}, or one that holds squad built for {there} \
                 and set `squad = \"/path/to/squad\"` in [environments.{env}]"
            ),
        ));
    }
    let bundle = bundle()
        .await
        .map_err(|e| EnvError::new(env, format!("cannot copy squad into a container: {e}")))?;
    Ok(Launch {
        argv: bundle.argv.clone(),
        copied: Some(bundle),
    })
}

/// This squad's files, found once per process.
async fn bundle() -> Result<Arc<Bundle>, String> {
    static ONCE: tokio::sync::OnceCell<Result<Arc<Bundle>, String>> =
        tokio::sync::OnceCell::const_new();
    ONCE.get_or_init(|| async {
        tokio::task::spawn_blocking(|| find().map(Arc::new))
            .await
            .unwrap_or_else(|e| Err(e.to_string()))
    })
    .await
    .clone()
}

/// This binary; its loader (the ELF's `PT_INTERP`) and the libraries that loader resolves
/// for it (`LOADER --list`, what `ldd` runs), when it is dynamically linked.
fn find() -> Result<Bundle, String> {
    let exe = std::env::current_exe().map_err(|e| format!("where this squad is: {e}"))?;
    let size = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| m.len())
            .map_err(|e| format!("{}: {e}", p.display()))
    };
    let squad = ("squad".to_string(), exe.clone(), size(&exe)?);
    let in_dir = |name: &str| format!("{DIR}/{name}");
    let Some(loader) = interpreter(&exe)? else {
        return Ok(Bundle {
            files: vec![squad],
            argv: vec![in_dir("squad")],
        });
    };
    let loader = PathBuf::from(loader);
    let loader_name = file_name(&loader)?;
    let mut files = vec![squad];
    for (name, path) in libraries(&loader, &exe)? {
        files.push((name, path.clone(), size(&path)?));
    }
    files.push((loader_name.clone(), loader.clone(), size(&loader)?));
    Ok(Bundle {
        files,
        argv: vec![
            in_dir(&loader_name),
            "--library-path".into(),
            DIR.into(),
            in_dir("squad"),
        ],
    })
}

fn file_name(path: &Path) -> Result<String, String> {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| format!("{} names no file", path.display()))
}

/// The ELF interpreter (the dynamic loader) of the binary at `exe`; `None`: static.
fn interpreter(exe: &Path) -> Result<Option<String>, String> {
    use object::read::elf::{FileHeader, ProgramHeader};
    use object::{Endianness, FileKind, elf};
    fn of<H: FileHeader<Endian = Endianness>>(data: &[u8]) -> object::read::Result<Option<String>> {
        let header = H::parse(data)?;
        let endian = header.endian()?;
        for ph in header.program_headers(endian, data)? {
            if let Some(path) = ph.interpreter(endian, data)? {
                return Ok(Some(String::from_utf8_lossy(path).into_owned()));
            }
        }
        Ok(None)
    }
    let parse = |data: &[u8]| match FileKind::parse(data) {
        Ok(FileKind::Elf64) => of::<elf::FileHeader64<Endianness>>(data).map_err(|e| e.to_string()),
        Ok(FileKind::Elf32) => of::<elf::FileHeader32<Endianness>>(data).map_err(|e| e.to_string()),
        _ => Err("not an ELF binary".to_string()),
    };
    let fail = |e: String| format!("{}: {e}", exe.display());
    // The headers and the interpreter's path sit at the start; the rest only if not.
    let mut head = Vec::new();
    std::fs::File::open(exe)
        .and_then(|f| std::io::Read::read_to_end(&mut std::io::Read::take(f, 64 << 10), &mut head))
        .map_err(|e| fail(e.to_string()))?;
    if let Ok(found) = parse(&head) {
        return Ok(found);
    }
    let data = std::fs::read(exe).map_err(|e| fail(e.to_string()))?;
    parse(&data).map_err(fail)
}

/// The shared libraries `loader` loads for `exe`, by the name it looks for (`libc.so.6`)
/// and the file it found; the loader's own line and the vDSO are left out.
fn libraries(loader: &Path, exe: &Path) -> Result<Vec<(String, PathBuf)>, String> {
    let out = std::process::Command::new(loader)
        .arg("--list")
        .arg(exe)
        .output()
        .or_else(|_| std::process::Command::new("ldd").arg(exe).output())
        .map_err(|e| format!("cannot list the libraries of {}: {e}", exe.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} --list {}: {}",
            loader.display(),
            exe.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    parse_list(&String::from_utf8_lossy(&out.stdout))
}

/// Reads `ld.so --list` (and `ldd`) output: `libm.so.6 => /lib/…/libm.so.6 (0x…)`.
fn parse_list(text: &str) -> Result<Vec<(String, PathBuf)>, String> {
    let mut libs = Vec::new();
    for line in text.lines().map(str::trim) {
        let Some((name, found)) = line.split_once(" => ") else {
            continue; // the vDSO, or the loader by its own path
        };
        let path = found.split(" (0x").next().unwrap_or("").trim();
        if path == "not found" {
            return Err(format!("{name} is not found here"));
        }
        if path.is_empty() || name.contains('/') {
            continue;
        }
        libs.push((name.to_string(), PathBuf::from(path)));
    }
    Ok(libs)
}

/// Streams the bundle into [`DIR`] of the created container `id` (not started yet).
pub async fn upload(docker: &Docker, id: &str, bundle: &Bundle) -> Result<(), String> {
    let mut parts: Vec<Part> = vec![Part::Bytes(header(".squad/", 0, true)?)];
    for (name, path, size) in &bundle.files {
        parts.push(Part::Bytes(header(
            &format!(".squad/{name}"),
            *size,
            false,
        )?));
        parts.push(Part::File(path.clone(), *size));
        let pad = (512 - size % 512) % 512;
        parts.push(Part::Bytes(Bytes::from(vec![0u8; pad as usize])));
    }
    parts.push(Part::Bytes(Bytes::from(vec![0u8; 1024])));
    let stream = futures::stream::iter(parts)
        .then(|part| async move {
            match part {
                Part::Bytes(b) => Ok::<_, std::io::Error>(
                    futures::stream::once(async { Ok::<_, std::io::Error>(b) }).boxed(),
                ),
                Part::File(path, size) => {
                    let file = tokio::fs::File::open(&path).await?;
                    // Exactly its size, as the header says, even if it grew meanwhile.
                    let body = tokio_util::io::ReaderStream::new(file.take(size));
                    Ok(body.boxed())
                }
            }
        })
        .try_flatten();
    let options = UploadToContainerOptions {
        path: "/".to_string(),
        ..Default::default()
    };
    docker
        .upload_to_container(id, Some(options), bollard::body_try_stream(stream))
        .await
        .map_err(|e| format!("the engine refused squad's archive: {e}"))
}

enum Part {
    Bytes(Bytes),
    File(PathBuf, u64),
}

/// A tar header: a folder, or a file of `size` bytes, both root's and executable.
fn header(path: &str, size: u64, dir: bool) -> Result<Bytes, String> {
    let mut h = tar::Header::new_ustar();
    h.set_path(path).map_err(|e| e.to_string())?;
    h.set_size(size);
    h.set_mode(0o755);
    h.set_uid(0);
    h.set_gid(0);
    h.set_mtime(0);
    h.set_entry_type(match dir {
        true => tar::EntryType::Directory,
        false => tar::EntryType::Regular,
    });
    h.set_cksum();
    Ok(Bytes::copy_from_slice(h.as_bytes()))
}

/// A platform as the engine names it: `linux/amd64`, `linux/arm/v7`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Platform {
    pub os: String,
    pub arch: String,
    pub variant: Option<String>,
}

impl Platform {
    /// The platform this squad was built for, in the engine's words.
    pub fn here() -> Self {
        let arch = match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            "x86" => "386",
            "powerpc64" if cfg!(target_endian = "little") => "ppc64le",
            "loongarch64" => "loong64",
            other => other,
        };
        let variant = match arch {
            "arm" if cfg!(target_feature = "v7") => Some("v7".to_string()),
            "arm" => Some("v6".to_string()),
            _ => None,
        };
        Self {
            os: std::env::consts::OS.to_string(),
            arch: arch.to_string(),
            variant,
        }
    }

    /// The platform of an inspected image.
    pub fn of(image: &ImageInspect) -> Self {
        let word = |w: &Option<String>| w.clone().unwrap_or_default().to_ascii_lowercase();
        Self {
            os: word(&image.os),
            arch: word(&image.architecture),
            variant: image.variant.clone().filter(|v| !v.is_empty()),
        }
    }

    /// Whether a binary built for this platform runs on `there`. The variant counts where
    /// this one has one (32-bit arm); arm64's `v8` is arm64 itself.
    pub fn runs(&self, there: &Platform) -> bool {
        let variant = match (&self.variant, &there.variant) {
            (Some(mine), Some(theirs)) => mine == theirs,
            _ => true,
        };
        self.os == there.os && self.arch == there.arch && variant
    }
}

impl std::fmt::Display for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.os, self.arch)?;
        match &self.variant {
            Some(v) => write!(f, "/{v}"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loaders_list_gives_each_library_by_the_name_it_is_looked_for() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\
            \tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x00007f93)\n\
            \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f90)\n\
            \t/lib64/ld-linux-x86-64.so.2 (0x00007f94)\n";
        let libs = parse_list(text).unwrap();
        assert_eq!(
            libs,
            vec![
                (
                    "libgcc_s.so.1".to_string(),
                    PathBuf::from("/lib/x86_64-linux-gnu/libgcc_s.so.1")
                ),
                (
                    "libc.so.6".to_string(),
                    PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6")
                ),
            ]
        );
        let missing = parse_list("\tlibfoo.so.1 => not found\n").unwrap_err();
        assert!(missing.contains("libfoo.so.1"), "{missing}");
    }

    #[test]
    fn this_squads_bundle_holds_its_loader_and_every_library_it_needs() {
        let bundle = find().unwrap();
        let names: Vec<&str> = bundle.files.iter().map(|(n, _, _)| n.as_str()).collect();
        assert_eq!(names[0], "squad");
        if interpreter(&std::env::current_exe().unwrap())
            .unwrap()
            .is_some()
        {
            assert!(names.iter().any(|n| n.starts_with("libc.so")), "{names:?}");
            assert!(
                bundle.argv[0].starts_with("/.squad/ld-"),
                "{:?}",
                bundle.argv
            );
            assert_eq!(bundle.argv[1..], ["--library-path", DIR, "/.squad/squad"]);
        }
    }

    #[test]
    fn a_platform_runs_only_on_its_own_os_arch_and_variant() {
        let p = |os: &str, arch: &str, v: Option<&str>| Platform {
            os: os.into(),
            arch: arch.into(),
            variant: v.map(str::to_string),
        };
        assert!(p("linux", "amd64", None).runs(&p("linux", "amd64", None)));
        assert!(!p("linux", "amd64", None).runs(&p("linux", "arm64", Some("v8"))));
        assert!(p("linux", "arm64", None).runs(&p("linux", "arm64", Some("v8"))));
        assert!(!p("linux", "arm", Some("v7")).runs(&p("linux", "arm", Some("v6"))));
        assert_eq!(p("linux", "arm", Some("v7")).to_string(), "linux/arm/v7");
        assert_eq!(Platform::here().os, std::env::consts::OS);
    }
}
