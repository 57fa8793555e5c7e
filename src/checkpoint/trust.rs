//! Which entries of the user's index the store may take as they are. The store keeps each
//! file's own bytes (no line-ending conversion, no filter: see `store::RAW`), so a rewind
//! puts back exactly what was there; the user's git may have stored another blob for a
//! file (CRLF turned to LF, an LFS pointer, another encoding). An entry is taken when its
//! blob is the file's bytes:
//!
//! - no conversion applies to it (the usual case, answered without reading any object);
//! - only line endings or `ident` may apply, and its blob is as long as the file was when
//!   git last looked: these conversions change a file's length whenever they change it;
//! - never under a filter or a `working-tree-encoding`, which may keep the length.
//!
//! An entry not taken is hashed by the store's `git add` like an untracked file.

use super::index_file::Entry;
use crate::isolation::Git;
use std::path::Path;

/// What may convert a file of the user's repository on its way to a blob.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Convert {
    No,
    /// Line endings or `ident`: lengths tell.
    Length,
    /// A filter or an encoding: only hashing tells.
    Unknown,
}

/// For each of `entries` (paths relative to the repository's top), whether its blob holds
/// the file's bytes; `attributes`: whether an attributes file in the repository may apply.
pub(super) fn raw(top: &Path, entries: &[&Entry], attributes: bool) -> Vec<bool> {
    let git = Git::new(top);
    let (autocrlf, attributes_file) = settings(&git);
    let attributes = attributes || attributes_file;
    let kinds = if attributes {
        checked_attributes(&git, entries, autocrlf)
    } else {
        None
    };
    let kinds = kinds.unwrap_or_else(|| {
        let default = if attributes {
            Convert::Unknown
        } else if autocrlf {
            Convert::Length
        } else {
            Convert::No
        };
        vec![default; entries.len()]
    });
    let to_measure: Vec<usize> = (0..entries.len())
        .filter(|&i| kinds[i] == Convert::Length)
        .collect();
    let sizes = blob_sizes(&git, to_measure.iter().map(|&i| entries[i]));
    let mut raw: Vec<bool> = kinds.iter().map(|k| *k == Convert::No).collect();
    for (&i, size) in to_measure.iter().zip(sizes) {
        raw[i] = size.is_some_and(|s| s & 0xffff_ffff == u64::from(entries[i].size()));
    }
    raw
}

/// Whether `core.autocrlf` turns line endings of files with no attribute saying otherwise,
/// and whether the user's configuration names an attributes file.
fn settings(git: &Git<'_>) -> (bool, bool) {
    let args = [
        "config",
        "--get-regexp",
        r"^core\.(autocrlf|attributesfile)$",
    ];
    let text = match git.output(&args, None) {
        Ok(ran) if ran.code == 1 => return (false, false),
        Ok(ran) if ran.code == 0 => String::from_utf8_lossy(&ran.stdout).into_owned(),
        _ => return (true, true),
    };
    let (mut autocrlf, mut file) = (false, false);
    for line in text.lines() {
        let (key, value) = line.split_once(' ').unwrap_or((line, ""));
        match key {
            "core.autocrlf" => {
                let value = value.trim().to_ascii_lowercase();
                autocrlf = !matches!(value.as_str(), "false" | "no" | "off" | "0" | "");
            }
            _ => file = true,
        }
    }
    (autocrlf, file)
}

const ATTRIBUTES: [&str; 6] = [
    "text",
    "crlf",
    "eol",
    "ident",
    "filter",
    "working-tree-encoding",
];

/// Each entry's conversion from its attributes (`git check-attr`); `None` if git failed.
fn checked_attributes(git: &Git<'_>, entries: &[&Entry], autocrlf: bool) -> Option<Vec<Convert>> {
    let input: Vec<u8> = entries
        .iter()
        .flat_map(|e| e.path.iter().copied().chain([0]))
        .collect();
    let mut args = vec!["check-attr", "-z", "--stdin"];
    args.extend(ATTRIBUTES);
    let out = git.run_with_input(&args, Some(&input)).ok()?;
    let fields: Vec<&[u8]> = crate::isolation::fields(&out).collect();
    // Per path, its attributes in the order asked: (path, attribute, value) each.
    let per_path = ATTRIBUTES.len() * 3;
    if fields.len() != entries.len() * per_path {
        return None;
    }
    let kinds = fields.chunks(per_path).map(|chunk| {
        let value = |i: usize| String::from_utf8_lossy(chunk[i * 3 + 2]).into_owned();
        let [text, crlf, eol, ident, filter, encoding] = std::array::from_fn::<String, 6, _>(value);
        let valued = |v: &str| !matches!(v, "unspecified" | "unset" | "set");
        if valued(&filter) || valued(&encoding) {
            return Convert::Unknown;
        }
        let endings = match (text.as_str(), crlf.as_str()) {
            ("unset", _) | ("unspecified", "unset") => false,
            ("unspecified", "unspecified") => eol != "unspecified" || autocrlf,
            _ => true,
        };
        if endings || ident == "set" {
            Convert::Length
        } else {
            Convert::No
        }
    });
    Some(kinds.collect())
}

/// The length of each entry's blob in the user's repository (`None`: not there).
fn blob_sizes<'e>(git: &Git<'_>, entries: impl Iterator<Item = &'e Entry>) -> Vec<Option<u64>> {
    let input: String = entries.map(|e| e.oid_hex() + "\n").collect();
    if input.is_empty() {
        return Vec::new();
    }
    let args = ["cat-file", "--batch-check=%(objectsize)"];
    let Ok(out) = git.run_with_input(&args, Some(input.as_bytes())) else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out)
        .lines()
        .map(|l| l.trim().parse().ok())
        .collect()
}
