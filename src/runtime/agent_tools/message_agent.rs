//! `message_agent`: a worker messages a teammate (by id or by the name its spawn gave
//! it), its supervisor, or all its siblings at once. The message reaches the recipient at
//! its next model call, mid-task, marked with its sender (`team/mail.rs`); the call
//! returns once it is delivered, or says why it could not be. Whom a role may message is
//! its `may_message` (default: siblings and supervisor).

use super::{AgentTool, Call, Done, Failure, non_empty, parse};
use crate::model::ToolSpec;
use crate::protocol::AgentId;
use crate::roles::Audience;
use crate::runtime::team::{MAX_MESSAGE_BYTES, Member, Queued, Team};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

/// The tool's name, for the code that must tell its calls apart.
pub const MESSAGE_AGENT: &str = "message_agent";

pub struct MessageAgent;

#[derive(Deserialize)]
struct Args {
    to: String,
    text: String,
}

#[async_trait]
impl AgentTool for MessageAgent {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: MESSAGE_AGENT.into(),
            description: "Message a teammate (agent id or name), `supervisor`, or `siblings` \
                (all). It reads it at its next step."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "to": {"type": "string"},
                    "text": {"type": "string"}
                },
                "required": ["to", "text"]
            }),
            freeform: None,
        }
    }

    fn audience(&self) -> Audience {
        Audience::Workers
    }

    async fn call(&self, cx: &Call<'_>, args: Value) -> Result<Done, Failure> {
        let args: Args = parse(&self.spec(), args)?;
        non_empty("to", &args.to)?;
        non_empty("text", &args.text)?;
        let text = args.text.trim();
        if text.len() > MAX_MESSAGE_BYTES {
            return Err(Failure::Fixable(format!(
                "the message is {} bytes; at most {MAX_MESSAGE_BYTES} bytes (message_agent's \
                 limit): say it shorter, or put the details in a file and name it",
                text.len()
            )));
        }
        let team = cx.team;
        let allowed = self.allowed(cx);
        let to = recipients(team, cx.caller, args.to.trim(), &allowed)?;
        team.charge_messages(cx.caller, to.len(), std::time::Instant::now())
            .map_err(|e| Failure::Fixable(e.to_string()))?;
        let mut delivered = Vec::new();
        let mut not = Vec::new();
        for member in &to {
            let who = describe(member);
            match team.send_mail(cx.caller, member.id, text) {
                Ok(q) => match settle(cx, q).await {
                    Settled::Delivered => delivered.push(who),
                    Settled::Pending(why) => not.push(json!({"to": who, "queued": why})),
                    Settled::Gone(why) => not.push(json!({"to": who, "why": why})),
                },
                Err(e) => not.push(json!({"to": who, "why": e.to_string()})),
            }
        }
        if delivered.is_empty() && not.iter().all(|n| n.get("why").is_some()) {
            let whys: Vec<String> = (not.iter())
                .map(|n| {
                    format!(
                        "{}: {}",
                        n["to"].as_str().unwrap_or(""),
                        n["why"].as_str().unwrap_or("")
                    )
                })
                .collect();
            return Err(Failure::Fixable(format!(
                "not delivered: {}",
                whys.join("; ")
            )));
        }
        let mut out = json!({"delivered": delivered});
        if !not.is_empty() {
            out["not_delivered"] = json!(not);
        }
        Ok(Done::output(out.to_string()))
    }
}

impl MessageAgent {
    /// Whom the caller's role may message.
    fn allowed(&self, cx: &Call<'_>) -> Vec<String> {
        let role = cx.team.role(cx.caller).unwrap_or_default();
        (cx.shared.roles.get(&role))
            .and_then(|r| r.may_message.clone())
            .unwrap_or_else(|| vec!["siblings".into(), "supervisor".into()])
    }
}

/// What came of one message.
enum Settled {
    Delivered,
    /// Queued, and delivered at the recipient's next model call, but not yet.
    Pending(String),
    /// It will never be delivered.
    Gone(String),
}

/// Waits for the message's delivery. A caller that has messages waiting itself stops
/// waiting (two agents messaging each other would otherwise wait for each other forever);
/// so does an interrupted one. Either way the message stays queued.
async fn settle(cx: &Call<'_>, q: Queued) -> Settled {
    let mut changes = cx.team.subscribe();
    let mut delivered = q.delivered;
    loop {
        if cx.team.has_mail(cx.caller) {
            return Settled::Pending(
                "not yet read: you have messages waiting yourself, so this call returns; it \
                 reaches the recipient at its next step"
                    .into(),
            );
        }
        tokio::select! {
            r = &mut delivered => return match r {
                Ok(()) => Settled::Delivered,
                Err(_) => Settled::Gone("the recipient stopped before reading it".into()),
            },
            _ = q.gone.cancelled() => {
                return Settled::Gone("it ended (despawned or released) before reading it".into());
            }
            _ = cx.cancel.cancelled() => {
                return Settled::Pending("interrupted before it was read; it stays queued".into());
            }
            r = changes.changed() => if r.is_err() {
                return Settled::Pending("the session is ending".into());
            },
        }
    }
}

/// The agents `to` names among those the caller may message.
fn recipients(
    team: &Team,
    caller: AgentId,
    to: &str,
    allowed: &[String],
) -> Result<Vec<Member>, Failure> {
    let all = team.directory();
    let parent = all.iter().find(|m| m.id == caller).and_then(|m| m.parent);
    let may = |m: &Member| {
        m.id != caller
            && allowed.iter().any(|a| match a.as_str() {
                "siblings" => parent.is_some() && m.parent == parent,
                "supervisor" => Some(m.id) == parent,
                "workers" => m.parent == Some(caller),
                "team" => true,
                role => m.role == role,
            })
    };
    let lower = to.to_lowercase();
    let picked: Vec<Member> = match lower.as_str() {
        "siblings" | "all" => all
            .into_iter()
            .filter(|m| m.reachable && parent.is_some() && m.parent == parent && m.id != caller)
            .collect(),
        "supervisor" => all.into_iter().filter(|m| Some(m.id) == parent).collect(),
        _ => all
            .into_iter()
            .filter(|m| {
                AgentId::parse(to) == Some(m.id)
                    || m.id.short() == to
                    || m.name.as_deref().is_some_and(|n| n.to_lowercase() == lower)
            })
            .collect(),
    };
    if picked.is_empty() {
        let known: Vec<String> = team
            .directory()
            .iter()
            .filter(|m| may(m))
            .map(describe)
            .collect();
        return Err(Failure::Fixable(format!(
            "no teammate `{to}` you may message; yours: {}",
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        )));
    }
    if let Some(m) = picked.iter().find(|m| !may(m)) {
        return Err(Failure::Fixable(format!(
            "your role may not message {} (may_message: {})",
            describe(m),
            allowed.join(", ")
        )));
    }
    Ok(picked)
}

/// A recipient as the sender reads it.
fn describe(m: &Member) -> String {
    match &m.name {
        Some(n) => format!("{} \"{n}\" ({})", m.id.short(), m.role),
        None => format!("{} ({})", m.id.short(), m.role),
    }
}
