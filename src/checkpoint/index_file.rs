//! git's index file, read (versions 2 to 4) and written (version 2), so the store can start
//! from entries of the user's index with their stat data: git trusts an entry whose file's
//! stat data still match, so a file the user's git already hashed is not read again. Only
//! what the store needs: SHA-1 entries, no extension kept (git rebuilds its caches), and
//! none of the layouts whose entries live elsewhere (a split index, a sparse one).

/// Bytes of an entry before its oid: ctime, mtime (seconds, nanoseconds), dev, ino, mode,
/// uid, gid, size, each a big-endian u32.
const STAT: usize = 40;
const OID: usize = 20;
/// Flag bits of an entry: its file is assumed unchanged; an extended flags word follows.
const ASSUME_VALID: u16 = 0x8000;
const EXTENDED: u16 = 0x4000;
const STAGE: u16 = 0x3000;
/// A directory entry: only a sparse index has them.
const TREE_MODE: u32 = 0o040000;

/// One entry of an index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Entry {
    stat: [u8; STAT],
    pub oid: [u8; OID],
    flags: u16,
    /// Skip-worktree or intent-to-add: the entry does not describe a file on disk.
    pub virtual_only: bool,
    pub path: Vec<u8>,
}

impl Entry {
    fn word(&self, i: usize) -> u32 {
        let b = &self.stat[i * 4..i * 4 + 4];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    pub fn mode(&self) -> u32 {
        self.word(6)
    }

    /// The file's length when git last looked at it (its low 32 bits).
    pub fn size(&self) -> u32 {
        self.word(9)
    }

    /// 0 for a merged entry; 1 to 3 for the sides of a conflict.
    pub fn stage(&self) -> u16 {
        (self.flags & STAGE) >> 12
    }

    pub fn oid_hex(&self) -> String {
        self.oid.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// Why an index is not read.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Unread {
    /// Not an index of a version this reads, or cut short.
    Format,
    /// A split index (`link`) or a sparse one: some entries are elsewhere.
    Partial,
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Unread> {
        let end = self.at.checked_add(n).ok_or(Unread::Format)?;
        let part = self.bytes.get(self.at..end).ok_or(Unread::Format)?;
        self.at = end;
        Ok(part)
    }

    fn u32(&mut self) -> Result<u32, Unread> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u16(&mut self) -> Result<u16, Unread> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    /// Up to the next NUL, which is consumed.
    fn until_nul(&mut self) -> Result<&'a [u8], Unread> {
        let rest = self.bytes.get(self.at..).ok_or(Unread::Format)?;
        let len = rest.iter().position(|b| *b == 0).ok_or(Unread::Format)?;
        let part = self.take(len)?;
        self.at += 1;
        Ok(part)
    }

    /// git's offset varint (`decode_varint`): version 4's count of bytes to drop.
    fn varint(&mut self) -> Result<usize, Unread> {
        let mut c = self.take(1)?[0];
        let mut value = usize::from(c & 0x7f);
        while c & 0x80 != 0 {
            value = value
                .checked_add(1)
                .and_then(|v| v.checked_mul(128))
                .ok_or(Unread::Format)?;
            c = self.take(1)?[0];
            value += usize::from(c & 0x7f);
        }
        Ok(value)
    }
}

/// Every entry of the index `bytes`, in its order (by path, then stage).
pub(super) fn read(bytes: &[u8]) -> Result<Vec<Entry>, Unread> {
    let mut r = Reader { bytes, at: 0 };
    if r.take(4)? != b"DIRC" {
        return Err(Unread::Format);
    }
    let version = r.u32()?;
    if !(2..=4).contains(&version) {
        return Err(Unread::Format);
    }
    let count = r.u32()? as usize;
    let mut entries = Vec::with_capacity(count.min(1 << 20));
    let mut previous: Vec<u8> = Vec::new();
    for _ in 0..count {
        let start = r.at;
        let stat: [u8; STAT] = r.take(STAT)?.try_into().map_err(|_| Unread::Format)?;
        let oid: [u8; OID] = r.take(OID)?.try_into().map_err(|_| Unread::Format)?;
        let flags = r.u16()?;
        let extended = if flags & EXTENDED != 0 && version >= 3 {
            r.u16()?
        } else {
            0
        };
        let path = if version == 4 {
            let drop = r.varint()?;
            let keep = previous.len().checked_sub(drop).ok_or(Unread::Format)?;
            let mut path = previous[..keep].to_vec();
            path.extend_from_slice(r.until_nul()?);
            path
        } else {
            let path = r.until_nul()?.to_vec();
            // Padded with NULs to a multiple of 8 bytes, the first of them read above.
            let len = r.at - start;
            r.take((8 - len % 8) % 8)?;
            path
        };
        let entry = Entry {
            stat,
            oid,
            flags,
            virtual_only: extended & 0x6000 != 0,
            path,
        };
        if entry.mode() & 0o170000 == TREE_MODE {
            return Err(Unread::Partial);
        }
        previous.clone_from(&entry.path);
        entries.push(entry);
    }
    // Extensions, then the checksum: a split index's `link` or a sparse one's `sdir`
    // says entries are missing here.
    while bytes.len().saturating_sub(r.at) > OID {
        let signature = r.take(4)?;
        if signature == b"link" || signature == b"sdir" {
            return Err(Unread::Partial);
        }
        let len = r.u32()? as usize;
        r.take(len)?;
    }
    Ok(entries)
}

/// A version 2 index of `entries` (sorted as git sorts them, no virtual entries): none
/// assumed unchanged, so the store sees every change whatever the user told their git to
/// overlook. The trailing checksum is left null, as git's own `index.skipHash` writes it.
pub(super) fn write(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.len() * 96 + 32);
    out.extend_from_slice(b"DIRC");
    out.extend_from_slice(&2u32.to_be_bytes());
    out.extend_from_slice(
        &u32::try_from(entries.len())
            .unwrap_or(u32::MAX)
            .to_be_bytes(),
    );
    for e in entries {
        let start = out.len();
        out.extend_from_slice(&e.stat);
        out.extend_from_slice(&e.oid);
        let name_len = u16::try_from(e.path.len()).unwrap_or(0xfff).min(0xfff);
        let flags = (e.flags & STAGE) | name_len;
        out.extend_from_slice(&flags.to_be_bytes());
        out.extend_from_slice(&e.path);
        let len = out.len() - start;
        out.resize(out.len() + 8 - len % 8, 0);
    }
    out.extend_from_slice(&[0; OID]);
    out
}

impl Entry {
    /// The same entry under another path (the workspace's own, for a subfolder's).
    pub fn renamed(&self, path: &[u8]) -> Self {
        Self {
            path: path.to_vec(),
            flags: self.flags & !(ASSUME_VALID | EXTENDED),
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn git(dir: &Path, args: &[&str]) -> Vec<u8> {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@localhost"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        out.stdout
    }

    /// Each version git writes reads back as the same entries, and what this writes is an
    /// index git reads with the same stat data (`ls-files --debug`).
    #[test]
    fn every_version_reads_and_the_written_one_is_gits() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path();
        git(top, &["init", "-q"]);
        let long = format!("{}/{}", "d".repeat(200), "e".repeat(200));
        for name in ["a.txt", "deep/er/b.txt", "deep/er/c", long.as_str()] {
            let path = top.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, name).unwrap();
        }
        git(top, &["add", "-A"]);
        let debug = git(top, &["ls-files", "--debug"]);
        git(top, &["update-index", "--assume-unchanged", "a.txt"]);
        let mut seen = None;
        for version in ["2", "3", "4"] {
            git(top, &["update-index", "--index-version", version]);
            let bytes = std::fs::read(top.join(".git/index")).unwrap();
            let entries = read(&bytes).unwrap();
            assert_eq!(entries.len(), 4);
            assert!(entries[0].path.ends_with(b"a.txt"));
            let plain: Vec<Entry> = entries.iter().map(|e| e.renamed(&e.path)).collect();
            if let Some(first) = &seen {
                assert_eq!(&plain, first, "version {version}");
            }
            seen = Some(plain);
        }
        let written = write(seen.as_ref().unwrap());
        std::fs::write(top.join(".git/index"), written).unwrap();
        assert_eq!(git(top, &["ls-files", "--debug"]), debug);
        let flags = git(top, &["ls-files", "-v"]);
        assert!(
            flags.starts_with(b"H a.txt"),
            "{}",
            String::from_utf8_lossy(&flags)
        );
    }

    #[test]
    fn a_split_or_broken_index_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path();
        git(top, &["init", "-q"]);
        std::fs::write(top.join("a"), "a").unwrap();
        git(top, &["add", "-A"]);
        git(top, &["update-index", "--split-index"]);
        let bytes = std::fs::read(top.join(".git/index")).unwrap();
        assert_eq!(read(&bytes), Err(Unread::Partial));
        assert_eq!(read(b"DIRC\0\0\0\x02\0\0\0\x05"), Err(Unread::Format));
        assert_eq!(read(b"nothing"), Err(Unread::Format));
    }
}
