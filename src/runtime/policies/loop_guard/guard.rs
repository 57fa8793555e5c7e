//! The loop guard: one agent's tool calls within one turn, watched for a model that
//! repeats itself. Small local models do: the same `edit_file` with the same arguments,
//! the same error, eleven times in a row. The same failing call (name, arguments compared
//! as JSON, so key order and spacing do not matter, and error) gets a note after
//! `repeat_note_after` times and stops the turn after `repeat_stop_after`; the same
//! successful read-only call with the same result, nothing changed in between, stops it
//! after `read_repeat_stop_after`. So does the same successful change made again with no
//! other change since (measured with a real 1.5B model: `write_file` of the same content,
//! a question, the same `write_file`… for fifteen minutes): it changes nothing the first
//! did not. Pure: `calls.rs` feeds it each result.

use crate::config::GuardsConfig;
use crate::runtime::points::{CallKind, Verdict};
use serde_json::Value;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

/// One agent's repeats in one turn. Keys are hashes of (name, arguments, error or
/// output), so a long read costs nothing to remember.
pub struct LoopGuard {
    limits: GuardsConfig,
    failures: HashMap<u64, u32>,
    reads: HashMap<u64, u32>,
    /// The latest successful change and how many times in a row it was made with no other
    /// successful change in between (a failed command is taken to have changed nothing).
    last_change: Option<(u64, u32)>,
}

impl LoopGuard {
    pub fn new(limits: GuardsConfig) -> Self {
        Self {
            limits,
            failures: HashMap::new(),
            reads: HashMap::new(),
            last_change: None,
        }
    }

    /// Counts one result of a call the model made (not one squad refused to run).
    pub fn observe(
        &mut self,
        name: &str,
        arguments: &str,
        kind: CallKind,
        output: &str,
        is_error: bool,
    ) -> Verdict {
        let key = key(name, arguments, output);
        if kind == CallKind::Change && !is_error {
            if let Some((last, n)) = &mut self.last_change
                && *last == key
            {
                *n = n.saturating_add(1);
                let n = *n;
                return self.same_again(name, n, true);
            }
            self.last_change = Some((key, 1));
        }
        // Anything that may have changed the workspace makes the next read a new one.
        if kind == CallKind::Change {
            self.reads.clear();
        }
        if is_error {
            let n = bump(&mut self.failures, key);
            return self.failed_again(name, n);
        }
        match kind {
            // A change that worked: earlier failures may now go otherwise.
            CallKind::Change => {
                self.failures.clear();
                Verdict::Pass
            }
            // An identical call that got the identical answer with nothing changed since is
            // a repeat, whatever the tool: a small model asked `ask_user` the same question
            // 28 times in a row and got "nobody can answer" each time.
            CallKind::Other | CallKind::Read => {
                let n = bump(&mut self.reads, key);
                self.same_again(name, n, false)
            }
        }
    }

    /// The `n`th identical call with the identical error in this turn (the trigger: a
    /// repeat): a note at `repeat_note_after`, a stop at `repeat_stop_after`.
    fn failed_again(&self, name: &str, n: u32) -> Verdict {
        let GuardsConfig {
            repeat_note_after: note,
            repeat_stop_after: stop,
            ..
        } = self.limits;
        if stop > 0 && n >= stop {
            Verdict::Stop(format!(
                "loop: called {name} {n} times with the same arguments, same error"
            ))
        } else if note > 0 && n >= note {
            Verdict::Note(format!(
                "[squad] You have called `{name}` with these same arguments {n} times in \
                 this turn and got this same error each time. Repeating it will not change \
                 the result: change your approach (other arguments, another tool, read \
                 again what you are changing, or say what blocks you).{}",
                stop_note(stop, "identical failures")
            ))
        } else {
            Verdict::Pass
        }
    }

    /// The `n`th identical successful call with nothing changed in between; `change`: a
    /// change made again (else a read answered again).
    fn same_again(&self, name: &str, n: u32, change: bool) -> Verdict {
        let GuardsConfig {
            repeat_note_after: note,
            read_repeat_stop_after: stop,
            ..
        } = self.limits;
        if stop > 0 && n >= stop {
            Verdict::Stop(format!(
                "loop: called {name} {n} times with the same arguments, nothing changed in between"
            ))
        } else if note > 0 && n >= note {
            let then = if change {
                "It changes nothing the first one did not: do something else, or say what \
                 blocks you."
            } else {
                "The answer is the same: it is above. Use it, or change your approach."
            };
            Verdict::Note(format!(
                "[squad] You have made this same `{name}` call {n} times in this turn with \
                 nothing changed in between. {then}{}",
                stop_note(stop, "identical calls")
            ))
        } else {
            Verdict::Pass
        }
    }
}

fn stop_note(stop: u32, what: &str) -> String {
    if stop > 0 {
        format!(" At {stop} {what} squad stops this turn.")
    } else {
        String::new()
    }
}

fn bump(counts: &mut HashMap<u64, u32>, key: u64) -> u32 {
    let n = counts.entry(key).or_insert(0);
    *n = n.saturating_add(1);
    *n
}

fn key(name: &str, arguments: &str, output: &str) -> u64 {
    let mut h = DefaultHasher::new();
    name.hash(&mut h);
    match serde_json::from_str::<Value>(arguments) {
        Ok(v) => hash_json(&v, &mut h),
        // Not JSON: the same text (spacing aside) is the same call.
        Err(_) => crate::text::one_line(arguments).hash(&mut h),
    }
    output.hash(&mut h);
    h.finish()
}

/// Hashes JSON by value: object keys in sorted order, whatever order they came in (JSON
/// objects keep the model's key order, so the same call can come with its keys moved).
pub(crate) fn hash_json(v: &Value, h: &mut DefaultHasher) {
    match v {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => {
            1u8.hash(h);
            b.hash(h);
        }
        Value::Number(n) => {
            2u8.hash(h);
            n.to_string().hash(h);
        }
        Value::String(s) => {
            3u8.hash(h);
            s.hash(h);
        }
        Value::Array(items) => {
            4u8.hash(h);
            items.len().hash(h);
            for item in items {
                hash_json(item, h);
            }
        }
        Value::Object(map) => {
            5u8.hash(h);
            map.len().hash(h);
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            for (k, v) in entries {
                k.hash(h);
                hash_json(v, h);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard() -> LoopGuard {
        LoopGuard::new(GuardsConfig::default())
    }

    const EDIT: &str = r#"{"path":"a.rs","old_text":"x","new_text":"x"}"#;
    const SAME_ERROR: &str = "old_text and new_text are identical";

    fn fail(g: &mut LoopGuard, args: &str) -> Verdict {
        g.observe("edit_file", args, CallKind::Change, SAME_ERROR, true)
    }

    fn read(g: &mut LoopGuard, path: &str) -> Verdict {
        let args = format!(r#"{{"path":"{path}"}}"#);
        g.observe("read_file", &args, CallKind::Read, "fn main() {}", false)
    }

    #[test]
    fn the_same_failure_gets_a_note_on_the_third_and_stops_on_the_fifth() {
        let mut g = guard();
        assert_eq!(fail(&mut g, EDIT), Verdict::Pass);
        assert_eq!(fail(&mut g, EDIT), Verdict::Pass);
        for _ in 3..5 {
            match fail(&mut g, EDIT) {
                Verdict::Note(n) => assert!(
                    n.contains("`edit_file`") && n.contains("change your approach"),
                    "{n}"
                ),
                other => panic!("expected a note, got {other:?}"),
            }
        }
        assert_eq!(
            fail(&mut g, EDIT),
            Verdict::Stop(
                "loop: called edit_file 5 times with the same arguments, same error".into()
            )
        );
    }

    #[test]
    fn arguments_are_compared_as_json_not_as_text() {
        let mut g = guard();
        fail(&mut g, EDIT);
        fail(
            &mut g,
            r#"{ "new_text": "x", "old_text": "x",  "path": "a.rs" }"#,
        );
        let third = fail(
            &mut g,
            "{\n  \"old_text\": \"x\",\n  \"path\": \"a.rs\",\n  \"new_text\": \"x\"\n}",
        );
        assert!(matches!(third, Verdict::Note(_)), "{third:?}");
        // Other arguments, another tool or another error count apart.
        let mut g = guard();
        fail(&mut g, EDIT);
        fail(&mut g, r#"{"path":"b.rs","old_text":"x","new_text":"x"}"#);
        g.observe("write_file", EDIT, CallKind::Change, SAME_ERROR, true);
        g.observe("edit_file", EDIT, CallKind::Change, "file not found", true);
        assert_eq!(
            fail(&mut g, EDIT),
            Verdict::Pass,
            "only the second of its kind"
        );
    }

    #[test]
    fn a_change_that_worked_resets_the_failures_but_a_read_does_not() {
        let mut g = guard();
        fail(&mut g, EDIT);
        fail(&mut g, EDIT);
        read(&mut g, "a.rs");
        assert!(matches!(fail(&mut g, EDIT), Verdict::Note(_)));
        g.observe(
            "write_file",
            r#"{"path":"a.rs"}"#,
            CallKind::Change,
            "wrote",
            false,
        );
        assert_eq!(fail(&mut g, EDIT), Verdict::Pass);
        // Team tools reset nothing.
        g.observe("get_agents", "{}", CallKind::Other, "[]", false);
        assert_eq!(fail(&mut g, EDIT), Verdict::Pass);
        assert!(matches!(fail(&mut g, EDIT), Verdict::Note(_)));
    }

    #[test]
    fn the_same_write_again_and_again_with_only_questions_or_failures_between_stops() {
        // Measured with Qwen2.5-Coder-1.5B: write, ask, the same write, ask… for 15 minutes.
        let write = r#"{"path":"t.py","content":"x"}"#;
        let mut g = guard();
        let mut verdicts = Vec::new();
        for i in 0..5 {
            verdicts.push(g.observe("write_file", write, CallKind::Change, "wrote", false));
            g.observe("ask_user", "{}", CallKind::Other, "nobody", false);
            if i % 2 == 1 {
                g.observe(
                    "run_command",
                    r#"{"command":"pytest"}"#,
                    CallKind::Change,
                    "1",
                    true,
                );
            }
        }
        assert_eq!(verdicts[..2], [Verdict::Pass, Verdict::Pass]);
        assert!(
            matches!(&verdicts[2], Verdict::Note(n) if n.contains("changes nothing the first")),
            "{:?}",
            verdicts[2]
        );
        assert_eq!(
            verdicts[4],
            Verdict::Stop(
                "loop: called write_file 5 times with the same arguments, nothing changed in between"
                    .into()
            )
        );
        // Another change in between makes the same write a real one again.
        let mut g = guard();
        for _ in 0..6 {
            assert_eq!(
                g.observe("write_file", write, CallKind::Change, "wrote", false),
                Verdict::Pass
            );
            g.observe("edit_file", EDIT, CallKind::Change, "edited", false);
        }
    }

    #[test]
    fn the_same_read_five_times_with_nothing_changed_stops() {
        let mut g = guard();
        assert_eq!(read(&mut g, "a.rs"), Verdict::Pass);
        assert_eq!(read(&mut g, "a.rs"), Verdict::Pass);
        assert_eq!(read(&mut g, "b.rs"), Verdict::Pass);
        assert!(matches!(read(&mut g, "a.rs"), Verdict::Note(_)));
        assert!(matches!(read(&mut g, "a.rs"), Verdict::Note(_)));
        assert_eq!(
            read(&mut g, "a.rs"),
            Verdict::Stop(
                "loop: called read_file 5 times with the same arguments, nothing changed in between"
                    .into()
            )
        );
    }

    #[test]
    fn any_change_in_between_resets_the_reads_even_one_that_failed() {
        let mut g = guard();
        for _ in 0..4 {
            read(&mut g, "a.rs");
        }
        g.observe(
            "run_command",
            r#"{"command":"make"}"#,
            CallKind::Change,
            "exit 2",
            true,
        );
        for _ in 0..4 {
            assert!(!matches!(read(&mut g, "a.rs"), Verdict::Stop(_)));
            assert!(!matches!(read(&mut g, "c.rs"), Verdict::Stop(_)));
        }
        assert!(matches!(read(&mut g, "a.rs"), Verdict::Stop(_)));
        // The same call with another answer (the file changed under it) is a new read.
        let mut g = guard();
        for i in 0..6 {
            let v = g.observe(
                "read_file",
                r#"{"path":"log"}"#,
                CallKind::Read,
                &i.to_string(),
                false,
            );
            assert_eq!(v, Verdict::Pass);
        }
    }

    #[test]
    fn zero_turns_a_guard_off() {
        let mut g = LoopGuard::new(GuardsConfig {
            repeat_note_after: 0,
            repeat_stop_after: 0,
            read_repeat_stop_after: 0,
            stall_after_s: 0,
        });
        for _ in 0..20 {
            assert_eq!(fail(&mut g, EDIT), Verdict::Pass);
            assert_eq!(read(&mut g, "a.rs"), Verdict::Pass);
        }
        // A stop without a note still stops; a note alone never does.
        let mut g = LoopGuard::new(GuardsConfig {
            repeat_note_after: 0,
            ..GuardsConfig::default()
        });
        for _ in 0..4 {
            assert_eq!(fail(&mut g, EDIT), Verdict::Pass);
        }
        assert!(matches!(fail(&mut g, EDIT), Verdict::Stop(_)));
    }

    #[test]
    fn unparsable_arguments_compare_as_text() {
        let mut g = guard();
        for _ in 0..2 {
            g.observe("edit_file", "{not json", CallKind::Change, "bad json", true);
        }
        let v = g.observe(
            "edit_file",
            "{not   json",
            CallKind::Change,
            "bad json",
            true,
        );
        assert!(matches!(v, Verdict::Note(_)), "{v:?}");
    }

    #[test]
    fn the_same_question_answered_the_same_is_a_repeat_like_a_read() {
        // Measured with Qwen2.5-Coder-1.5B under exec: the same ask_user 28 times in a row,
        // "nobody can answer" each time, for ten minutes.
        let ask = r#"{"question":"What is the proverb about?"}"#;
        let nobody = "Nobody can answer: use your best judgment";
        let mut g = guard();
        let verdicts: Vec<Verdict> = (0..5)
            .map(|_| g.observe("ask_user", ask, CallKind::Other, nobody, false))
            .collect();
        assert_eq!(verdicts[..2], [Verdict::Pass, Verdict::Pass]);
        assert!(matches!(&verdicts[2], Verdict::Note(n) if n.contains("same `ask_user` call")));
        assert!(
            matches!(&verdicts[4], Verdict::Stop(s) if s.contains("ask_user 5 times")),
            "{:?}",
            verdicts[4]
        );
        // A spawn answers with a new id each time: never a repeat.
        let mut g = guard();
        for i in 0..6 {
            let out = format!("{{\"agent_id\":\"{i}\"}}");
            assert_eq!(
                g.observe("spawn_agent", "{}", CallKind::Other, &out, false),
                Verdict::Pass
            );
        }
    }
}
