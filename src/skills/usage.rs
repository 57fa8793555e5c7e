//! When each skill was last loaded, kept in the data dir (`skills-used.json`, a map of
//! name to Unix seconds), so that a listing past its budget keeps the descriptions of the
//! skills in use and names the least recently used alone. Read once at session start: a
//! skill loaded now moves up in the next session's list, and this one's list (part of
//! every request's cached prefix) stays the same bytes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

const FILE: &str = "skills-used.json";

/// The file under `data_dir`.
pub fn file(data_dir: &Path) -> PathBuf {
    data_dir.join(FILE)
}

/// Each skill's last use; empty when there is no file or it cannot be read (the order
/// is a preference, not a record anything depends on).
pub fn load(file: &Path) -> HashMap<String, u64> {
    std::fs::read(file)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Notes that `name` was loaded now. Written whole and renamed into place, so a reader
/// never sees half a file; a failure is logged and forgotten.
pub fn record(file: &Path, name: &str) {
    let mut used = load(file);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    used.insert(name.to_string(), now);
    let written = serde_json::to_vec(&used)
        .map_err(std::io::Error::other)
        .and_then(|bytes| {
            let tmp = file.with_extension(format!("json.{}", std::process::id()));
            std::fs::write(&tmp, bytes)?;
            std::fs::rename(&tmp, file)
        });
    if let Err(e) = written {
        tracing::warn!(file = %file.display(), error = %e, "cannot note a skill's use");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_use_is_kept_and_a_broken_file_is_no_use() {
        let tmp = tempfile::tempdir().unwrap();
        let f = file(tmp.path());
        assert!(load(&f).is_empty());
        record(&f, "pdf");
        assert!(load(&f).contains_key("pdf"));
        std::fs::write(&f, "not json").unwrap();
        assert!(load(&f).is_empty());
        record(&f, "xlsx");
        assert_eq!(load(&f).len(), 1);
    }
}
