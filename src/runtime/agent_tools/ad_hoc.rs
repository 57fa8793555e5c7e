//! Ad-hoc workers: what `spawn_agent` may ask beyond the worker's role. `instructions` go
//! under the role's prompt; `tools` narrow the worker to the tools named, which must be
//! among those it would get anyway (its role's, within its supervisor's).

use crate::protocol::SpawnOptions;

/// The spawn's `keep`, `instructions` and `tools` as the worker gets them, or what is
/// wrong with them. `allowed`: the worker's tools without narrowing; `reporting`: the
/// ones it keeps whatever it is given (`return_results`, `message_supervisor`), since its
/// result has to reach its supervisor.
pub fn options(
    keep: bool,
    instructions: Option<String>,
    tools: Option<Vec<String>>,
    allowed: &[String],
    reporting: &[String],
    who: (&str, &str),
) -> Result<(SpawnOptions, Vec<String>), String> {
    let instructions = instructions
        .map(|i| i.trim().to_string())
        .filter(|i| !i.is_empty());
    let (worker_tools, narrowed) = match tools {
        None => (allowed.to_vec(), None),
        Some(asked) => {
            let tools = narrow(&asked, allowed, reporting, who)?;
            (tools.clone(), Some(tools))
        }
    };
    Ok((
        SpawnOptions {
            keep,
            instructions,
            tools: narrowed,
            name: None,
            environment: None,
        },
        worker_tools,
    ))
}

/// The tools of `allowed` that `asked` names, plus `reporting`, in `allowed`'s order. A
/// name outside `allowed` is refused, naming it and listing what may be asked.
/// `who`: the worker's role and the caller's, for the message.
fn narrow(
    asked: &[String],
    allowed: &[String],
    reporting: &[String],
    (role, caller): (&str, &str),
) -> Result<Vec<String>, String> {
    let asked: Vec<&str> = asked.iter().map(|t| t.trim()).collect();
    let mut refused: Vec<&str> = asked
        .iter()
        .copied()
        .filter(|t| !allowed.iter().any(|a| a == t))
        .collect();
    refused.dedup();
    if !refused.is_empty() {
        let choosable: Vec<&str> = allowed
            .iter()
            .map(String::as_str)
            .filter(|t| !reporting.iter().any(|r| r == t))
            .collect();
        return Err(format!(
            "tools: {} not allowed: a worker gets only tools of both its role `{role}` and \
             yours (`{caller}`); allowed: {}",
            refused
                .iter()
                .map(|t| format!("`{t}`"))
                .collect::<Vec<_>>()
                .join(", "),
            if choosable.is_empty() {
                "none".to_string()
            } else {
                choosable.join(", ")
            }
        ));
    }
    Ok(allowed
        .iter()
        .filter(|t| asked.contains(&t.as_str()) || reporting.contains(t))
        .cloned()
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn narrowing_keeps_the_order_and_the_reporting_tools() {
        let allowed = names(&["read_file", "list_files", "run_command", "return_results"]);
        let reporting = names(&["return_results"]);
        let asked = names(&["run_command", "read_file"]);
        let (opts, tools) = options(
            true,
            Some("  be brief \n".into()),
            Some(asked),
            &allowed,
            &reporting,
            ("agentic_coder", "copilot"),
        )
        .unwrap();
        assert_eq!(tools, ["read_file", "run_command", "return_results"]);
        assert_eq!(opts.tools.as_deref(), Some(tools.as_slice()));
        assert_eq!(opts.instructions.as_deref(), Some("be brief"));
        assert!(opts.keep);
    }

    #[test]
    fn a_wider_list_is_refused_naming_each_tool_and_what_is_allowed() {
        let allowed = names(&["read_file", "return_results"]);
        let err = options(
            false,
            None,
            Some(names(&["read_file", "write_file", "run_command"])),
            &allowed,
            &names(&["return_results"]),
            ("code_reviewer", "copilot"),
        )
        .unwrap_err();
        assert_eq!(
            err,
            "tools: `write_file`, `run_command` not allowed: a worker gets only tools of both \
             its role `code_reviewer` and yours (`copilot`); allowed: read_file"
        );
    }

    #[test]
    fn nothing_asked_is_the_role_as_usual() {
        let allowed = names(&["read_file"]);
        let (opts, tools) =
            options(false, Some("  ".into()), None, &allowed, &[], ("r", "c")).unwrap();
        assert!(opts.is_default());
        assert_eq!(tools, allowed);
    }
}
