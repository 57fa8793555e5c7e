//! A local OpenAI-compatible server found by itself: with no API key and no base URL (or
//! `--oss`), squad asks the usual ports on 127.0.0.1 (llama.cpp 8080, Ollama 11434, LM
//! Studio 1234, vLLM 8000), all at once with a short timeout each, for the models they
//! serve, and takes the first that answers with one. A port that does not answer in time,
//! refuses, or lists no model is passed over; nothing leaves the machine.

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use std::time::Duration;

/// Where local servers listen by default, and what usually listens there.
pub const KNOWN_PORTS: [(u16, &str); 4] = [
    (8080, "llama.cpp"),
    (11434, "Ollama"),
    (1234, "LM Studio"),
    (8000, "vLLM"),
];

/// Replaces the ports asked (`8080,11434`), for tests and unusual setups.
pub const PORTS_ENV: &str = "SQUAD_LOCAL_PORTS";

/// How long one port may take to list its models.
pub const TIMEOUT: Duration = Duration::from_millis(800);

/// A server that answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub base_url: String,
    /// What usually listens on its port ("llama.cpp"), or "a server" for another port.
    pub kind: String,
    /// The first model it lists.
    pub model: String,
}

impl Found {
    /// The one line that says what squad uses.
    pub fn describe(&self) -> String {
        format!(
            "using the local {} server at {} (model {})",
            self.kind, self.base_url, self.model
        )
    }
}

/// The ports to ask: [`PORTS_ENV`] when set (numbers, comma-separated), else the known ones.
pub fn ports(env: Option<&str>) -> Vec<(u16, String)> {
    match env {
        Some(list) => list
            .split(',')
            .filter_map(|p| p.trim().parse::<u16>().ok())
            .map(|p| {
                let kind = KNOWN_PORTS
                    .iter()
                    .find(|(known, _)| *known == p)
                    .map_or("OpenAI-compatible", |(_, k)| k);
                (p, kind.to_string())
            })
            .collect(),
        None => KNOWN_PORTS
            .iter()
            .map(|(p, k)| (*p, (*k).to_string()))
            .collect(),
    }
}

/// Asks every port at once; the first to answer with a model wins.
pub async fn find(ports: &[(u16, String)], timeout: Duration) -> Option<Found> {
    let client = reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout)
        .no_proxy()
        .build()
        .ok()?;
    let mut asks: FuturesUnordered<_> = ports
        .iter()
        .map(|(port, kind)| ask(&client, *port, kind))
        .collect();
    while let Some(answer) = asks.next().await {
        if answer.is_some() {
            return answer;
        }
    }
    None
}

async fn ask(client: &reqwest::Client, port: u16, kind: &str) -> Option<Found> {
    let base_url = format!("http://127.0.0.1:{port}/v1");
    let response = client.get(format!("{base_url}/models")).send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let bytes = response.bytes().await.ok()?;
    let body: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let model = first_model(&body)?;
    Some(Found {
        base_url,
        kind: kind.to_string(),
        model,
    })
}

/// OpenAI's `data[].id`, or llama.cpp's and Ollama's `models[].name`/`model`.
fn first_model(body: &serde_json::Value) -> Option<String> {
    let from = |list: &str, key: &str| {
        body[list]
            .as_array()?
            .iter()
            .find_map(|m| m[key].as_str().map(str::trim).filter(|s| !s.is_empty()))
            .map(str::to_string)
    };
    from("data", "id")
        .or_else(|| from("models", "model"))
        .or_else(|| from("models", "name"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_model_is_read_from_each_servers_listing() {
        assert_eq!(
            first_model(&json!({"data": [{"id": "qwen"}]})).as_deref(),
            Some("qwen")
        );
        assert_eq!(
            first_model(&json!({"models": [{"name": "llama3:8b"}]})).as_deref(),
            Some("llama3:8b")
        );
        assert_eq!(first_model(&json!({"data": []})), None);
        assert_eq!(first_model(&json!({"object": "list"})), None);
    }

    #[test]
    fn the_ports_come_from_the_environment_or_the_known_list() {
        assert_eq!(ports(None).len(), 4);
        assert_eq!(
            ports(Some("8080, 9999,x")),
            vec![
                (8080, "llama.cpp".to_string()),
                (9999, "OpenAI-compatible".to_string())
            ]
        );
    }
}

/// What discovery did to a config.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Not tried: a key or a base URL was given.
    NotTried,
    /// The config now points at this server.
    Using(Found),
    /// Tried, nothing answered on these ports.
    NoneFound(Vec<u16>),
}

/// Points `config` at a local server when it has no key for OpenAI's own URL and still
/// has the default base URL (no flag, variable or file named another), or when `oss` asks
/// for one. `--model` still wins over the model the server lists.
/// Blocking (a thread of its own with a small runtime), so callers in or out of a runtime
/// may use it; it costs at most [`TIMEOUT`], and only when it is tried.
pub fn apply(config: &mut crate::config::Config, oss: bool) -> Outcome {
    let default_url = config.provider.base_url == crate::config::ProviderConfig::default().base_url;
    let wanted = oss || (default_url && config.missing_key().is_some());
    if !wanted {
        return Outcome::NotTried;
    }
    let ports = ports(std::env::var(PORTS_ENV).ok().as_deref());
    let asked: Vec<u16> = ports.iter().map(|(p, _)| *p).collect();
    let found = std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()
            .and_then(|rt| rt.block_on(find(&ports, TIMEOUT)))
    })
    .join()
    .ok()
    .flatten();
    match found {
        Some(found) => {
            config.provider.base_url = found.base_url.clone();
            config.provider.api_key_env = String::new();
            if config.model_override.is_none() {
                config.force_model(&found.model);
            }
            Outcome::Using(found)
        }
        None => Outcome::NoneFound(asked),
    }
}

/// The ports as a list for a message.
pub fn port_list(ports: &[u16]) -> String {
    ports
        .iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
