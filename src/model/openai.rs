//! [`ModelClient`] for any OpenAI-compatible server, on chat completions or Responses
//! (per model, see [`ClientSettings::wires`]), over async-openai in "bring your own
//! types" mode.

use super::families::{Choice, Protocol, Protocols, choose};
use super::http::{HttpFailure, StatusService, root_cause, truncate};
use super::responses::{ResponsesRequest, freeform_tools, function_tools_cache, tools_cache};
use super::responses_stream::{ResponsesAssembler, ResponsesEvent};
use super::retry::{AttemptError, RetryPolicy};
use super::stream::{Assemble, StreamAssembler};
use super::text_protocol::read_reply;
use super::wire::{ChatChunk, ToolsJson, WireRequest};
use super::{ChatRequest, ChatResponse, ModelClient, ModelError, ModelProgress, ServerProps};
use crate::config::{Config, ProviderConfig, WireApi, missing_key_message, needs_key};
use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::types::stream::StreamResponse;
use async_trait::async_trait;
use futures::StreamExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Longest time spent establishing a TCP/TLS connection, whatever the request timeout.
const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
const MAX_IDLE_CONNECTIONS: usize = 16;
/// `/props` is asked once at session start; a server that does not answer at once has none.
const PROPS_TIMEOUT: Duration = Duration::from_secs(3);

/// `n_ctx` (per slot, under `default_generation_settings`) and `total_slots` from
/// llama.cpp's `/props` body.
fn parse_props(body: &str) -> ServerProps {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(body) else {
        return ServerProps::default();
    };
    let window = v
        .pointer("/default_generation_settings/n_ctx")
        .or_else(|| v.get("n_ctx"))
        .and_then(serde_json::Value::as_u64)
        .filter(|n| *n > 0);
    let slots = v
        .get("total_slots")
        .and_then(serde_json::Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| *n > 0);
    ServerProps { window, slots }
}

/// How to reach the model server.
#[derive(Clone)]
pub struct ClientSettings {
    /// Includes `/v1`.
    pub base_url: String,
    /// `None` (a local server): no `Authorization` header is sent.
    pub api_key: Option<String>,
    /// Name of the environment variable the key comes from, for error messages.
    pub api_key_env: String,
    /// Limit for one attempt, from sending the request to the end of the stream.
    pub request_timeout: Duration,
    /// An attempt whose stream sends nothing for this long is abandoned (and retried).
    pub idle_timeout: Duration,
    pub max_retries: u32,
    /// First backoff delay; doubles with each retry.
    pub retry_base: Duration,
    /// The wire of every model not in `wires`.
    pub wire_api: WireApi,
    /// Models spoken to on a wire of their own (a level's `wire_api`).
    pub wires: Vec<(String, WireApi)>,
    /// How each model is told its tools (`tool_protocol`), chosen per request.
    pub protocols: Protocols,
}

impl ClientSettings {
    /// Settings from the provider config, with the key read from its environment
    /// variable (unset or empty: no key).
    pub fn from_provider(provider: &ProviderConfig) -> Self {
        let api_key = std::env::var(&provider.api_key_env)
            .ok()
            .filter(|k| !k.trim().is_empty());
        Self {
            base_url: provider.base_url.clone(),
            api_key,
            api_key_env: provider.api_key_env.clone(),
            request_timeout: Duration::from_secs(provider.request_timeout_s),
            idle_timeout: Duration::from_secs(provider.idle_timeout_s),
            max_retries: provider.max_retries,
            retry_base: Duration::from_millis(provider.retry_base_ms),
            wire_api: provider.wire_api,
            wires: Vec::new(),
            protocols: Protocols {
                default: provider.tool_protocol,
                declared: Vec::new(),
            },
        }
    }

    /// Settings from the provider config, with each level's own wire.
    pub fn from_config(config: &Config) -> Self {
        let mut settings = Self::from_provider(&config.provider);
        for level in config.models.values() {
            let wire = config.wire_for_model(&level.model);
            if wire != settings.wire_api && !settings.wires.iter().any(|(m, _)| *m == level.model) {
                settings.wires.push((level.model.clone(), wire));
            }
        }
        settings.protocols = Protocols::from_config(config);
        settings
    }

    /// The wire `model` is spoken to with.
    pub fn wire_for(&self, model: &str) -> WireApi {
        self.wires
            .iter()
            .find(|(m, _)| m == model)
            .map_or(self.wire_api, |(_, w)| *w)
    }

    /// The tool protocol `model` is spoken to with, and why.
    pub fn protocol_for(&self, model: &str) -> Choice {
        let declared = self.protocols.declared_for(model);
        choose(declared, model, &self.base_url, self.wire_for(model))
    }
}

/// Never prints the key.
impl std::fmt::Debug for ClientSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSettings")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("api_key_env", &self.api_key_env)
            .field("request_timeout", &self.request_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_retries", &self.max_retries)
            .field("retry_base", &self.retry_base)
            .field("wire_api", &self.wire_api)
            .field("wires", &self.wires)
            .field("protocols", &self.protocols)
            .finish()
    }
}

pub struct OpenAiClient {
    client: Client<OpenAIConfig>,
    base_url: String,
    api_key_env: String,
    has_key: bool,
    /// Set when the provider refuses every request without a key and none is set: the
    /// fix, returned before anything is sent.
    refusal: Option<String>,
    /// Whether the server has answered at least once (any HTTP status). Until it has, a
    /// failed connection means a wrong URL or a server not started, and is not retried.
    answered: AtomicBool,
    request_timeout: Duration,
    idle_timeout: Duration,
    policy: RetryPolicy,
    tools_json: ToolsJson,
    /// The `tools` arrays of the Responses wire (freeform tools as `custom` ones).
    responses_tools: ToolsJson,
    /// The same with every tool a function, once the server refused a `custom` one.
    function_tools: ToolsJson,
    /// The server refused a `custom` tool: freeform tools go as functions from then on.
    freeform_refused: AtomicBool,
    wire_api: WireApi,
    wires: Vec<(String, WireApi)>,
    protocols: Protocols,
    /// For the one plain GET squad makes besides chat (`/props`).
    http: reqwest::Client,
    api_key: Option<String>,
}

impl std::fmt::Debug for OpenAiClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiClient")
            .field("base_url", &self.base_url)
            .field("has_key", &self.has_key)
            .finish_non_exhaustive()
    }
}

impl OpenAiClient {
    pub fn new(settings: ClientSettings) -> Result<Self, ModelError> {
        let base_url = settings.base_url.trim_end_matches('/').to_string();
        let http = reqwest::Client::builder()
            .connect_timeout(settings.request_timeout.min(MAX_CONNECT_TIMEOUT))
            // Many workers may call at once; keep only a few idle connections afterwards
            // (each costs a socket and ~27 KB), not one per worker that ever ran.
            .pool_max_idle_per_host(MAX_IDLE_CONNECTIONS)
            .build()
            .map_err(|e| ModelError::Connection {
                base_url: base_url.clone(),
                message: format!("cannot set up the HTTP client: {}", error_chain(&e)),
            })?;
        let has_key = settings.api_key.is_some();
        let protocols = settings.protocols.clone();
        let api_key = settings.api_key.clone();
        let refusal = (!has_key && needs_key(&base_url))
            .then(|| missing_key_message(&base_url, &settings.api_key_env));
        // Explicit empty org/project so async-openai does not pick them up from the
        // environment; the key is ours or nothing.
        let config = OpenAIConfig::new()
            .with_api_base(&base_url)
            .with_api_key(settings.api_key.unwrap_or_default())
            .with_org_id("")
            .with_project_id("");
        let client = Client::build(http.clone(), config)
            .with_http_service(StatusService::new(http.clone(), has_key));
        Ok(Self {
            client,
            base_url,
            api_key_env: settings.api_key_env,
            has_key,
            refusal,
            answered: AtomicBool::new(false),
            request_timeout: settings.request_timeout,
            idle_timeout: settings.idle_timeout,
            policy: RetryPolicy {
                max_retries: settings.max_retries,
                base: settings.retry_base,
            },
            tools_json: ToolsJson::default(),
            responses_tools: tools_cache(),
            function_tools: function_tools_cache(),
            freeform_refused: AtomicBool::new(false),
            wire_api: settings.wire_api,
            wires: settings.wires,
            protocols,
            http,
            api_key,
        })
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// One attempt: send, then read the stream until it ends, goes idle or runs out of
    /// time. Text deltas are reported as they arrive.
    async fn attempt(
        &self,
        body: &Body<'_>,
        progress: &(dyn Fn(ModelProgress) + Send + Sync),
    ) -> Result<ChatResponse, AttemptError> {
        let deadline = Instant::now() + self.request_timeout;
        match body {
            Body::Chat(body) => {
                let opened = tokio::time::timeout_at(
                    deadline,
                    self.client.chat().create_stream_byot::<_, ChatChunk>(body),
                )
                .await;
                self.read(opened, StreamAssembler::new(), deadline, progress)
                    .await
            }
            Body::Responses(body) => {
                let opened = tokio::time::timeout_at(
                    deadline,
                    self.client
                        .responses()
                        .create_stream_byot::<_, ResponsesEvent>(body),
                )
                .await;
                let assembler = ResponsesAssembler::with_freeform(body.freeform.clone());
                self.read(opened, assembler, deadline, progress).await
            }
        }
    }

    /// Reads an opened stream into `assembler`, whichever wire it is.
    async fn read<A: Assemble>(
        &self,
        opened: Result<Result<StreamResponse<A::Chunk>, OpenAIError>, tokio::time::error::Elapsed>,
        mut assembler: A,
        deadline: Instant,
        progress: &(dyn Fn(ModelProgress) + Send + Sync),
    ) -> Result<ChatResponse, AttemptError> {
        let mut stream = match opened {
            Ok(Ok(stream)) => {
                self.answered.store(true, Ordering::Relaxed);
                stream
            }
            Ok(Err(e)) => return Err(self.map_error(e)),
            Err(_) => {
                return Err(ModelError::Connection {
                    base_url: self.base_url.clone(),
                    message: format!(
                        "no answer within the request timeout of {:?}",
                        self.request_timeout
                    ),
                }
                .into());
            }
        };
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let wait = self.idle_timeout.min(left);
            match tokio::time::timeout(wait, stream.next()).await {
                Ok(Some(Ok(chunk))) => {
                    let text = assembler.push(chunk)?;
                    progress(if text.is_empty() {
                        ModelProgress::Received
                    } else {
                        ModelProgress::TextDelta(text)
                    });
                }
                Ok(Some(Err(e))) => return Err(self.map_error(e)),
                Ok(None) => break,
                Err(_) if wait < self.idle_timeout => {
                    return Err(ModelError::StreamBroken(format!(
                        "the answer did not finish within the request timeout of {:?}",
                        self.request_timeout
                    ))
                    .into());
                }
                Err(_) => return Err(ModelError::IdleTimeout(self.idle_timeout).into()),
            }
        }
        Ok(assembler.finish()?)
    }

    /// The wire `model` is spoken to with.
    pub fn wire_for(&self, model: &str) -> WireApi {
        self.wires
            .iter()
            .find(|(m, _)| m == model)
            .map_or(self.wire_api, |(_, w)| *w)
    }

    /// Whether `model`'s requests go out in the text tool protocol.
    fn speaks_text(&self, model: &str) -> bool {
        let declared = self.protocols.declared_for(model);
        choose(declared, model, &self.base_url, self.wire_for(model)).protocol == Protocol::Text
    }

    fn map_error(&self, e: OpenAIError) -> AttemptError {
        let error = match e {
            OpenAIError::Boxed(boxed) => match boxed.downcast::<HttpFailure>() {
                Ok(f) => {
                    self.answered.store(true, Ordering::Relaxed);
                    if let Some(said) = f.overflow {
                        return ModelError::ContextOverflow {
                            message: f.message,
                            said,
                        }
                        .into();
                    }
                    return AttemptError {
                        error: ModelError::Http {
                            status: f.status,
                            message: self.explain_status(f.status, f.message),
                        },
                        retry_after: f.retry_after,
                    };
                }
                Err(other) => self.connection(other.to_string()),
            },
            OpenAIError::Reqwest(e) if e.is_connect() => {
                let message = format!(
                    "{}. Is the server running? Check --base-url / OPENAI_BASE_URL",
                    root_cause(&e)
                );
                if self.answered.load(Ordering::Relaxed) {
                    self.connection(message)
                } else {
                    ModelError::Unreachable {
                        base_url: self.base_url.clone(),
                        message,
                    }
                }
            }
            OpenAIError::Reqwest(e) if e.is_body() || e.is_decode() => {
                ModelError::StreamBroken(error_chain(&e))
            }
            OpenAIError::Reqwest(e) => self.connection(error_chain(&e)),
            OpenAIError::StreamError(e) => {
                ModelError::StreamBroken(format!("the connection dropped mid-answer ({e})"))
            }
            OpenAIError::ApiError(r) => {
                self.answered.store(true, Ordering::Relaxed);
                ModelError::Http {
                    status: r.status_code.as_u16(),
                    message: self.explain_status(r.status_code.as_u16(), r.api_error.message),
                }
            }
            OpenAIError::JSONDeserialize(e, content) => {
                ModelError::BadResponse(format!("{e} in {}", truncate(&content, 300)))
            }
            other => ModelError::BadResponse(other.to_string()),
        };
        error.into()
    }

    fn connection(&self, message: String) -> ModelError {
        ModelError::Connection {
            base_url: self.base_url.clone(),
            message,
        }
    }

    /// Adds what the user can do about an authentication failure.
    fn explain_status(&self, status: u16, message: String) -> String {
        match status {
            401 | 403 if self.has_key => format!(
                "{message} (check the API key in the {} environment variable)",
                self.api_key_env
            ),
            401 | 403 => format!(
                "{message} (no API key is set: put it in the {} environment variable)",
                self.api_key_env
            ),
            _ => message,
        }
    }
}

/// A server's 400 that names the `custom` tool type: it does not take freeform tools.
fn refuses_custom_tools(error: &ModelError) -> bool {
    matches!(error, ModelError::Http { status: 400, message } if message.to_ascii_lowercase().contains("custom"))
}

/// One request's body on its wire.
enum Body<'a> {
    Chat(WireRequest<'a>),
    Responses(ResponsesRequest<'a>),
}

/// The error with its causes: reqwest's own text is only "error sending request".
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

impl OpenAiClient {
    async fn ask_props(&self) -> Option<ServerProps> {
        if self.refusal.is_some() || needs_key(&self.base_url) {
            return None;
        }
        let root = self.base_url.strip_suffix("/v1").unwrap_or(&self.base_url);
        let mut request = self
            .http
            .get(format!("{root}/props"))
            .timeout(PROPS_TIMEOUT);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        Some(parse_props(&response.text().await.ok()?))
    }
}

#[async_trait]
impl ModelClient for OpenAiClient {
    /// llama.cpp's `GET /props` (beside `/v1`): `n_ctx` of its default settings and its
    /// slots. Not asked of OpenAI's own API, which has no such endpoint.
    async fn server_props(&self) -> ServerProps {
        self.ask_props().await.unwrap_or_default()
    }

    /// `GET /models`, with the key when there is one (never logged).
    async fn list_models(&self) -> Result<Vec<String>, ModelError> {
        if let Some(refusal) = &self.refusal {
            return Err(ModelError::BadResponse(refusal.clone()));
        }
        super::probe::models_at(
            &self.base_url,
            self.api_key.as_deref(),
            self.request_timeout,
        )
        .await
    }

    async fn stream_chat(
        &self,
        request: &ChatRequest,
        progress: &(dyn Fn(ModelProgress) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, ModelError> {
        if let Some(fix) = &self.refusal {
            return Err(ModelError::MissingKey(fix.clone()));
        }
        let wire = self.wire_for(&request.model);
        // Freeform tools (apply_patch) go as `custom` ones on Responses, until the server
        // refuses one: then as functions, with their JSON arguments.
        let freeform = match wire {
            WireApi::Responses if !self.freeform_refused.load(Ordering::Relaxed) => {
                freeform_tools(&request.tools)
            }
            _ => Vec::new(),
        };
        let tools = match wire {
            WireApi::Chat => self.tools_json.get(&request.tools),
            WireApi::Responses if freeform.is_empty() => self.function_tools.get(&request.tools),
            WireApi::Responses => self.responses_tools.get(&request.tools),
        };
        let functions = match freeform.is_empty() {
            true => None,
            false => self.function_tools.get(&request.tools),
        };
        let text = wire == WireApi::Chat && self.speaks_text(&request.model);
        let mut body = match wire {
            WireApi::Chat if text => Body::Chat(WireRequest::text_protocol(request)),
            WireApi::Chat => Body::Chat(WireRequest::from_chat(request, tools.as_deref())),
            WireApi::Responses => Body::Responses(ResponsesRequest::from_chat(
                request,
                tools.as_deref(),
                &freeform,
            )),
        };
        let mut freeform_offered = !freeform.is_empty();
        let max_attempts = self.policy.max_retries.saturating_add(1);
        let mut attempt = 1;
        loop {
            if cancel.is_cancelled() {
                return Err(ModelError::Cancelled);
            }
            let result = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(ModelError::Cancelled),
                r = self.attempt(&body, progress) => r,
            };
            let failed = match result {
                Ok(response) if text => return Ok(read_reply(response, &request.tools)),
                Ok(response) => return Ok(response),
                Err(failed) => failed,
            };
            if freeform_offered && refuses_custom_tools(&failed.error) {
                // Not a retry: the same request with every tool a function, at once.
                tracing::warn!(error = %failed.error, "the server refused a custom (freeform) tool; offering it as a function");
                self.freeform_refused.store(true, Ordering::Relaxed);
                freeform_offered = false;
                body = Body::Responses(ResponsesRequest::from_chat(
                    request,
                    functions.as_deref(),
                    &[],
                ));
                continue;
            }
            if !failed.error.is_retryable() || attempt >= max_attempts {
                return Err(failed.error);
            }
            let delay = self.policy.delay(attempt, &failed);
            tracing::warn!(
                attempt,
                max_attempts,
                ?delay,
                error = %failed.error,
                "model call failed, retrying"
            );
            attempt += 1;
            progress(ModelProgress::Retrying {
                attempt,
                max_attempts,
                delay,
                reason: failed.error.to_string(),
                overloaded: failed.error.is_overload(),
            });
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(ModelError::Cancelled),
                _ = tokio::time::sleep(delay) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn props_give_the_slot_context_and_the_slots() {
        let window = |body: &str| parse_props(body).window;
        let body = r#"{"default_generation_settings":{"n_ctx":8192,"params":{}},"total_slots":4}"#;
        assert_eq!(
            parse_props(body),
            ServerProps {
                window: Some(8192),
                slots: Some(4)
            }
        );
        assert_eq!(window(r#"{"n_ctx":4096}"#), Some(4096));
        assert_eq!(parse_props("<html>"), ServerProps::default());
        assert_eq!(
            window(r#"{"default_generation_settings":{"n_ctx":0}}"#),
            None
        );
        assert_eq!(parse_props(r#"{"total_slots":0}"#).slots, None);
        assert_eq!(parse_props(r#"{"total_slots":-1}"#).slots, None);
    }
}
