//! What the provider's URL says: whether it needs a key, what to tell a user without one,
//! and whether it is a URL at all.

/// Whether `base_url` is OpenAI's own API, which refuses every request without a key.
pub fn needs_key(base_url: &str) -> bool {
    host(base_url).eq_ignore_ascii_case("api.openai.com")
}

/// Whether `base_url` is a server on this machine (a local model server, or a test's).
pub fn is_local(base_url: &str) -> bool {
    let host = host(base_url);
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The host of a URL, without brackets around an IPv6 address.
fn host(base_url: &str) -> &str {
    let rest = base_url
        .strip_prefix("https://")
        .or_else(|| base_url.strip_prefix("http://"))
        .unwrap_or(base_url);
    let authority = rest.split('/').next().unwrap_or("");
    match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => authority.split(':').next().unwrap_or(""),
    }
}

/// What to do when `base_url` needs a key and `api_key_env` holds none: the same text in
/// `exec`, the TUI, the model client and `squad doctor`.
pub fn missing_key_message(base_url: &str, api_key_env: &str) -> String {
    let set = if api_key_env.is_empty() {
        "set provider.api_key_env = \"OPENAI_API_KEY\" and export OPENAI_API_KEY=sk-...".to_string()
    } else {
        format!("export {api_key_env}=sk-...")
    };
    format!(
        "no API key for {base_url}: {set}; or start a local server (llama.cpp, Ollama, LM \
         Studio, vLLM on their usual ports, which squad finds by itself) or point --base-url / \
         OPENAI_BASE_URL at one, which needs none; or try squad with its built-in demo model: \
         --demo"
    )
}

/// A base URL must name its scheme; `/v1` is the caller's business (local servers differ).
pub(crate) fn check_base_url(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    match rest {
        Some(host) if !host.is_empty() && !host.starts_with('/') => Ok(()),
        _ => Err(format!(
            "expected a URL starting with http:// or https:// (e.g. https://api.openai.com/v1), found {url:?}"
        )),
    }
}
