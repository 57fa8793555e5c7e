//! The parser alone: what each line of a patch becomes, and which lines are refused.

use super::*;

fn lines(s: &[&str]) -> Vec<String> {
    s.iter().map(|l| l.to_string()).collect()
}

#[test]
fn every_operation_with_nested_anchors_and_end_of_file() {
    let patch = parse(
        "*** Begin Patch\n\
         *** Add File: new.txt\n\
         +one\n\
         +\n\
         *** Delete File: old.txt\n\
         *** Update File: src/a.py\n\
         *** Move to: src/b.py\n\
         @@ class A:\n\
         @@     def f(self):\n\
         \x20        x = 1\n\
         -        y = 2\n\
         +        y = 3\n\
         @@\n\
         -tail\n\
         +new tail\n\
         *** End of File\n\
         *** End Patch\n",
    )
    .unwrap();
    assert_eq!(patch.ops.len(), 3);
    assert_eq!(
        patch.ops[0],
        FileOp::Add {
            path: "new.txt".into(),
            contents: "one\n\n".into(),
            line: 2
        }
    );
    assert_eq!(
        patch.ops[1],
        FileOp::Delete {
            path: "old.txt".into(),
            line: 5
        }
    );
    let FileOp::Update {
        path,
        move_to,
        hunks,
        line,
    } = &patch.ops[2]
    else {
        panic!("an update: {:?}", patch.ops[2]);
    };
    assert_eq!(
        (path.as_str(), move_to.as_deref(), *line),
        ("src/a.py", Some("src/b.py"), 6)
    );
    assert_eq!(hunks.len(), 2);
    assert_eq!(hunks[0].anchors, lines(&["class A:", "def f(self):"]));
    assert_eq!(hunks[0].old, lines(&["        x = 1", "        y = 2"]));
    assert_eq!(hunks[0].new, lines(&["        x = 1", "        y = 3"]));
    assert_eq!(hunks[0].label(), "@@ class A: / @@ def f(self):");
    assert!(!hunks[0].end_of_file);
    assert_eq!(hunks[1].anchors, Vec::<String>::new());
    assert!(hunks[1].end_of_file);
    assert_eq!(hunks[1].line, 13);
}

#[test]
fn refusals_name_the_line() {
    let cases = [
        ("", "the patch is empty"),
        ("*** Begin Patch\n*** End Patch", "the patch is empty"),
        (
            "*** Begin Patch\n\n  \n*** End Patch\n",
            "the patch is empty",
        ),
        (
            "hello\n*** End Patch",
            "line 1: the patch must start with '*** Begin Patch'",
        ),
        (
            "*** Begin Patch\n*** Add File: a\n+x\n",
            "must end with a line '*** End Patch'",
        ),
        (
            "*** Begin Patch\n*** Frobnicate File: foo\n*** End Patch",
            "line 2: '*** Frobnicate File: foo' is not a valid header",
        ),
        (
            "*** Begin Patch\n*** Add File: a\nplain\n*** End Patch",
            "line 3: 'plain' is not a valid header; expected '*** Add File: PATH', \
             '*** Delete File: PATH', '*** Update File: PATH' or '*** End Patch' (every line \
             of an added file starts with '+')",
        ),
        (
            "*** Begin Patch\n*** Delete File:  \n*** End Patch",
            "line 2: '*** Delete File:' needs a path",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@@@ nope\n-x\n*** End Patch",
            "line 3: '@@@ nope' is not a valid hunk header",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@@\n x\n\tbad\n*** End Patch",
            "line 5: in the update of 'a', '\tbad' must start with ' '",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@@ fn f()\n*** End Patch",
            "line 3: the hunk of 'a' starting here has no lines",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n*** End Patch",
            "line 2: '*** Update File: a' has no hunks",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@@\n-x\n*** Frob\n*** End Patch",
            "line 5: '*** Frob' is not a valid header",
        ),
    ];
    for (text, want) in cases {
        let err = parse(text).unwrap_err().to_string();
        assert!(
            err.contains(want),
            "{text:?}\n  gave: {err}\n  want: {want}"
        );
    }
}

#[test]
fn padded_markers_heredocs_crlf_and_unified_ranges_are_accepted() {
    let text = "apply_patch <<'EOF'\r\n  *** Begin Patch \r\n   *** Update File: a.txt  \r\n\
                @@ -1,2 +1,2 @@ fn main() {\r\n-old\r\n+new\r\n\r\n *** End Patch\r\nEOF\r\n";
    let patch = parse(text).unwrap();
    let FileOp::Update { path, hunks, .. } = &patch.ops[0] else {
        panic!("an update");
    };
    assert_eq!(path, "a.txt");
    assert_eq!(hunks[0].anchors, lines(&["fn main() {"]));
    // The blank line before the end is spacing, not an empty context line.
    assert_eq!(hunks[0].old, lines(&["old"]));
    assert_eq!(hunks[0].new, lines(&["new"]));
    let bare =
        parse("*** Begin Patch\n*** Update File: a\n@@ -3 +3 @@\n-x\n*** End Patch").unwrap();
    let FileOp::Update { hunks, .. } = &bare.ops[0] else {
        panic!("an update");
    };
    assert!(hunks[0].anchors.is_empty());
}

#[test]
fn a_markdown_rule_in_context_is_a_line_not_a_header() {
    let patch =
        parse("*** Begin Patch\n*** Update File: a.md\n@@\n ***\n-old\n+new\n*** End Patch")
            .unwrap();
    let FileOp::Update { hunks, .. } = &patch.ops[0] else {
        panic!("an update");
    };
    assert_eq!(hunks[0].old, lines(&["***", "old"]));
}

#[test]
fn the_first_hunk_may_omit_its_header_and_unicode_passes_through() {
    let patch = parse(
        "*** Begin Patch\n*** Update File: ü.txt\n-naïve café\n+naïve café ☕\n*** End Patch",
    )
    .unwrap();
    let FileOp::Update { path, hunks, .. } = &patch.ops[0] else {
        panic!("an update");
    };
    assert_eq!(path, "ü.txt");
    assert_eq!(hunks[0].new, lines(&["naïve café ☕"]));
}
