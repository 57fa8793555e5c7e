//! A scripted OpenAI-compatible server for tests and benches.
//!
//! Serves `POST /v1/chat/completions` and `POST /v1/responses` (the same scripts, as each
//! wire streams them; see `mock_responses.rs`), and `GET /v1/models`, listing
//! [`DEFAULT_MODELS`] or what [`MockServer::set_models`] says, on 127.0.0.1 with a random
//! port. Each request takes
//! the next scripted [`MockResponse`] from the queue, or asks the responder closure when the
//! queue is empty; with neither, it answers 500 so a test fails loudly instead of hanging.
//! Every request is recorded (body, headers, receive and finish times).
//!
//! Self-contained on purpose (axum, tokio, serde_json, futures only): a bench binary
//! includes this file with `#[path = ...]`.
#![allow(dead_code)]

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What `GET /v1/models` lists unless told otherwise: squad's default models.
pub const DEFAULT_MODELS: [&str; 2] = ["gpt-4.1", "gpt-4.1-mini"];

/// Body text of the 500 answered when nothing is scripted.
pub const NO_RESPONSE_LEFT: &str = "mock: no scripted response left";

#[path = "mock_responses.rs"]
mod responses;

type Responder = Arc<dyn Fn(&Value) -> MockResponse + Send + Sync>;

/// One tool call the mock will stream: `arguments` is the raw JSON text, sent in fragments.
#[derive(Clone, Debug)]
pub struct MockToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

impl MockToolCall {
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }
}

/// How a streamed answer ends.
#[derive(Clone, Debug)]
enum Ending {
    /// Finish chunk, optional usage chunk, then `data: [DONE]`.
    Complete,
    /// After `after` content deltas the connection is dropped (no finish_reason, no [DONE]).
    Cut { after: usize },
    /// After `after` content deltas, nothing is sent for `pause`; then the connection drops.
    Stall { after: usize, pause: Duration },
    /// All deltas and the finish chunk, but the body ends cleanly without `data: [DONE]`.
    NoDone,
    /// After `after` content deltas, an error inside the stream (chat: an `{"error"}`
    /// chunk; Responses: an `error` event, or `response.failed` when `failed`).
    Error {
        after: usize,
        code: String,
        message: String,
        failed: bool,
    },
    /// Everything, then the model's output limit (chat: finish_reason `length`;
    /// Responses: `response.incomplete` with reason `max_output_tokens`).
    Incomplete,
}

/// A streamed answer, rendered by either wire.
#[derive(Clone, Debug)]
struct Script {
    text_deltas: Vec<String>,
    tool_calls: Vec<MockToolCall>,
    /// Max characters per tool-argument fragment.
    arg_fragment: usize,
    finish_reason: Option<String>,
    usage: Option<(u64, u64)>,
    /// Of the prompt tokens in the usage, those said to come from the prompt cache.
    cached: u64,
    ending: Ending,
    chunk_delay: Duration,
    /// Responses only: a reasoning item with this encrypted content comes first.
    reasoning: Option<String>,
}

/// Which API a request came on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wire {
    Chat,
    Responses,
}

#[derive(Clone, Debug)]
enum Kind {
    Stream(Script),
    Error {
        status: u16,
        retry_after: Option<String>,
        body: Value,
    },
}

/// One scripted answer. Build with the constructors, adjust with the `with_*` methods.
#[derive(Clone, Debug)]
pub struct MockResponse {
    kind: Kind,
    delay: Duration,
}

/// Splits `text` into pieces of at most `size` characters (never inside a char).
pub fn split_text(text: &str, size: usize) -> Vec<String> {
    let size = size.max(1);
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

impl MockResponse {
    fn stream(text_deltas: Vec<String>, tool_calls: Vec<MockToolCall>) -> Self {
        let finish = if tool_calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        };
        Self {
            kind: Kind::Stream(Script {
                text_deltas,
                tool_calls,
                arg_fragment: 5,
                finish_reason: Some(finish.to_string()),
                usage: None,
                cached: 0,
                ending: Ending::Complete,
                chunk_delay: Duration::ZERO,
                reasoning: None,
            }),
            delay: Duration::ZERO,
        }
    }

    /// Streamed text, split into deltas of a few characters.
    pub fn text(text: &str) -> Self {
        Self::stream(split_text(text, 4), Vec::new())
    }

    /// Streamed text with exactly these deltas.
    pub fn text_deltas<S: Into<String>>(deltas: impl IntoIterator<Item = S>) -> Self {
        Self::stream(deltas.into_iter().map(Into::into).collect(), Vec::new())
    }

    /// One streamed tool call (arguments split across many deltas).
    pub fn tool_call(id: &str, name: &str, arguments: &str) -> Self {
        Self::tool_calls(vec![MockToolCall::new(id, name, arguments)])
    }

    /// Several tool calls in one turn, streamed one after the other with indexes 0, 1, ...
    pub fn tool_calls(calls: Vec<MockToolCall>) -> Self {
        Self::stream(Vec::new(), calls)
    }

    /// Text deltas first, then the tool calls.
    pub fn text_and_tool_calls(text: &str, calls: Vec<MockToolCall>) -> Self {
        Self::stream(split_text(text, 4), calls)
    }

    /// An HTTP error with an OpenAI-style JSON body `{"error": {"message": ...}}`.
    pub fn error(status: u16, message: &str) -> Self {
        let body = json!({
            "error": {"message": message, "type": "mock_error", "param": null, "code": null}
        });
        Self::error_body(status, body)
    }

    /// An HTTP error with exactly this JSON body.
    pub fn error_body(status: u16, body: Value) -> Self {
        Self {
            kind: Kind::Error {
                status,
                retry_after: None,
                body,
            },
            delay: Duration::ZERO,
        }
    }

    /// Adds a `Retry-After: <secs>` header (errors only).
    pub fn with_retry_after(mut self, secs: u64) -> Self {
        if let Kind::Error { retry_after, .. } = &mut self.kind {
            *retry_after = Some(secs.to_string());
        }
        self
    }

    /// Waits this long before answering at all (latency before the status line).
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Waits this long before each SSE chunk (a slow model).
    pub fn with_chunk_delay(mut self, delay: Duration) -> Self {
        if let Kind::Stream(s) = &mut self.kind {
            s.chunk_delay = delay;
        }
        self
    }

    /// Ends with a usage chunk (`choices: []`), as with `stream_options.include_usage`.
    pub fn with_usage(mut self, prompt_tokens: u64, completion_tokens: u64) -> Self {
        if let Kind::Stream(s) = &mut self.kind {
            s.usage = Some((prompt_tokens, completion_tokens));
        }
        self
    }

    /// The usage says `cached` of its prompt tokens came from the prompt cache.
    pub fn with_cached(mut self, cached: u64) -> Self {
        if let Kind::Stream(s) = &mut self.kind {
            s.cached = cached;
        }
        self
    }

    /// Overrides the finish_reason of the last chunk (`None`: the field stays null).
    pub fn with_finish_reason(mut self, reason: Option<&str>) -> Self {
        if let Kind::Stream(s) = &mut self.kind {
            s.finish_reason = reason.map(str::to_string);
        }
        self
    }

    /// Max characters per tool-argument fragment (default 5).
    pub fn with_arg_fragment(mut self, chars: usize) -> Self {
        if let Kind::Stream(s) = &mut self.kind {
            s.arg_fragment = chars.max(1);
        }
        self
    }

    /// Sends the first `after` content deltas, then drops the connection mid-body.
    pub fn cut_after(mut self, after: usize) -> Self {
        self.set_ending(Ending::Cut { after });
        self
    }

    /// Sends the first `after` content deltas, then nothing for `pause`, then drops.
    pub fn stall_after(mut self, after: usize, pause: Duration) -> Self {
        self.set_ending(Ending::Stall { after, pause });
        self
    }

    /// Sends everything but the final `data: [DONE]`, then ends the body cleanly.
    pub fn without_done(mut self) -> Self {
        self.set_ending(Ending::NoDone);
        self
    }

    fn set_ending(&mut self, ending: Ending) {
        if let Kind::Stream(s) = &mut self.kind {
            s.ending = ending;
        }
    }

    /// Sends the first `after` content deltas, then an error inside the stream: chat a
    /// `{"error": {"code", "message"}}` chunk, Responses an `error` event.
    pub fn stream_error_after(mut self, after: usize, code: &str, message: &str) -> Self {
        self.set_ending(Ending::Error {
            after,
            code: code.to_string(),
            message: message.to_string(),
            failed: false,
        });
        self
    }

    /// Like [`Self::stream_error_after`], but Responses sends `response.failed` with the
    /// error in the response.
    pub fn failed_after(mut self, after: usize, code: &str, message: &str) -> Self {
        self.set_ending(Ending::Error {
            after,
            code: code.to_string(),
            message: message.to_string(),
            failed: true,
        });
        self
    }

    /// Ends at the output limit: chat finish_reason `length`, Responses
    /// `response.incomplete` (`max_output_tokens`).
    pub fn incomplete(mut self) -> Self {
        self.set_ending(Ending::Incomplete);
        self
    }

    /// Responses only: a reasoning item with this encrypted content before the answer.
    pub fn with_reasoning(mut self, encrypted_content: &str) -> Self {
        if let Kind::Stream(s) = &mut self.kind {
            s.reasoning = Some(encrypted_content.to_string());
        }
        self
    }
}

/// What the server recorded about one request.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    /// `/v1/chat/completions` or `/v1/responses`.
    pub path: String,
    /// As sent (a Responses body has `input` and `instructions`, see [`Self::as_chat`]).
    pub body: Value,
    /// The body's bytes as they came (a server's prompt cache matches bytes).
    pub raw: Bytes,
    /// Header names lower-cased, in arrival order.
    pub headers: Vec<(String, String)>,
    pub received_at: Instant,
    /// When the server began to serve it (at once, unless [`MockServer::serve_at_once`]
    /// queues it).
    pub served_at: Instant,
    /// When the response body ended (or the client went away); `None` while in flight.
    pub finished_at: Option<Instant>,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as chat completions would have it: a Responses body's `instructions` and
    /// `input` become `messages`, the way llama.cpp's server reads them.
    pub fn as_chat(&self) -> Value {
        responses::as_chat(&self.body)
    }

    /// Whether it came on the Responses wire.
    pub fn is_responses(&self) -> bool {
        self.path.ends_with("/responses")
    }

    /// The request's system prompt (content of the first `system` message, or a Responses
    /// request's `instructions`), if any.
    pub fn system_prompt(&self) -> Option<&str> {
        if let Some(instructions) = self.body.get("instructions").and_then(Value::as_str) {
            return Some(instructions);
        }
        self.body["messages"]
            .as_array()?
            .iter()
            .find(|m| m["role"] == "system")?
            .get("content")?
            .as_str()
    }
}

#[derive(Default)]
struct Shared {
    queue: Mutex<VecDeque<MockResponse>>,
    responder: Mutex<Option<Responder>>,
    requests: Mutex<Vec<RecordedRequest>>,
    counter: AtomicU64,
    /// `None`: [`DEFAULT_MODELS`].
    models: Mutex<Option<Vec<String>>>,
    /// llama.cpp's `GET /props` context size; `None`: not said.
    props_n_ctx: Mutex<Option<u64>>,
    /// `total_slots` in `GET /props`.
    props_slots: Mutex<Slots>,
    /// Serves this many requests at once and queues the rest, as a local server with
    /// that many slots does; `None`: any number.
    serving: Mutex<Option<Arc<tokio::sync::Semaphore>>>,
    /// Refuse a Responses request offering a `custom` (freeform) tool with a 400, as
    /// servers without them do.
    refuse_custom: std::sync::atomic::AtomicBool,
}

/// What the mock's `/props` says of its slots: a test server serves many requests at
/// once, as the team tests need; a test of the limit sets its own.
#[derive(Clone, Copy, Default)]
enum Slots {
    #[default]
    Many,
    Said(u32),
    Silent,
}

/// The slots a mock says it has unless told otherwise.
pub const MOCK_SLOTS: u32 = 64;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The running server; stops when dropped.
pub struct MockServer {
    addr: std::net::SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl MockServer {
    /// Binds 127.0.0.1:0 and serves in a background task of the current runtime.
    pub async fn start() -> Self {
        Self::start_on(0).await
    }

    /// Binds 127.0.0.1:`port` (0 = any free port).
    pub async fn start_on(port: u16) -> Self {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("mock: bind 127.0.0.1");
        let addr = listener.local_addr().expect("mock: local addr");
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route("/v1/chat/completions", post(chat_completions))
            .route("/v1/responses", post(responses_api))
            .route("/v1/models", get(list_models))
            .route("/props", get(props))
            // A supervisor's request after 10,000 workers report is several MB.
            .layer(axum::extract::DefaultBodyLimit::disable())
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { addr, shared, task }
    }

    /// `http://127.0.0.1:PORT/v1`
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn addr(&self) -> std::net::SocketAddr {
        self.addr
    }

    /// Queues one response.
    pub fn push(&self, response: MockResponse) {
        lock(&self.shared.queue).push_back(response);
    }

    /// From now on a Responses request offering a `custom` tool gets a 400 naming the
    /// type (it is recorded, and uses no scripted response).
    pub fn refuse_custom_tools(&self) {
        self.shared.refuse_custom.store(true, Ordering::Relaxed);
    }

    /// Queues several responses, answered in order.
    pub fn push_all(&self, responses: impl IntoIterator<Item = MockResponse>) {
        lock(&self.shared.queue).extend(responses);
    }

    /// Scripted responses not yet used.
    pub fn remaining(&self) -> usize {
        lock(&self.shared.queue).len()
    }

    /// Answers `GET /props` as llama.cpp's server does, with this context size.
    pub fn set_props(&self, n_ctx: u64) {
        *lock(&self.shared.props_n_ctx) = Some(n_ctx);
    }

    /// `total_slots` in `GET /props` from now on; `None`: not said (with no context size
    /// either, `/props` is a 404, as on servers other than llama.cpp).
    pub fn set_slots(&self, slots: Option<u32>) {
        *lock(&self.shared.props_slots) = slots.map_or(Slots::Silent, Slots::Said);
    }

    /// From now on serves `n` chat requests at once and queues the rest (first come, first
    /// served), as vLLM, Ollama or llama.cpp with `n` slots do: a queued request waits,
    /// its time to first byte growing, until one being served ends.
    pub fn serve_at_once(&self, n: usize) {
        *lock(&self.shared.serving) = Some(Arc::new(tokio::sync::Semaphore::new(n)));
    }

    /// The most requests served at once so far, and the most waiting in the queue at
    /// once (at each request's arrival, those that arrived before it and had not been
    /// served yet).
    pub fn most_at_once(&self) -> (usize, usize) {
        let reqs = self.requests();
        let served = reqs
            .iter()
            .map(|r| {
                reqs.iter()
                    .filter(|o| {
                        o.served_at <= r.served_at && o.finished_at.is_none_or(|f| f > r.served_at)
                    })
                    .count()
            })
            .max()
            .unwrap_or(0);
        let queued = reqs
            .iter()
            .map(|r| {
                reqs.iter()
                    .filter(|o| o.received_at <= r.received_at && o.served_at > r.received_at)
                    .count()
            })
            .max()
            .unwrap_or(0);
        (served, queued)
    }

    /// The model ids `GET /v1/models` lists from now on.
    pub fn set_models<S: Into<String>>(&self, models: impl IntoIterator<Item = S>) {
        *lock(&self.shared.models) = Some(models.into_iter().map(Into::into).collect());
    }

    /// Answers requests the queue does not cover by looking at the request body.
    pub fn set_responder(&self, f: impl Fn(&Value) -> MockResponse + Send + Sync + 'static) {
        *lock(&self.shared.responder) = Some(Arc::new(f));
    }

    /// All requests received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// Waits (up to `timeout`) until `n` requests have been received.
    pub async fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if lock(&self.shared.requests).len() >= n {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        lock(&self.shared.requests).len() >= n
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Sets `finished_at` of its request when the response body is done or dropped.
struct FinishGuard {
    shared: Arc<Shared>,
    index: usize,
    /// The place it was served in, given back when it ends.
    _slot: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl Drop for FinishGuard {
    fn drop(&mut self) {
        if let Some(r) = lock(&self.shared.requests).get_mut(self.index) {
            r.finished_at = Some(Instant::now());
        }
    }
}

async fn props(State(shared): State<Arc<Shared>>) -> Response {
    let slots = match *lock(&shared.props_slots) {
        Slots::Many => Some(MOCK_SLOTS),
        Slots::Said(n) => Some(n),
        Slots::Silent => None,
    };
    let mut body = json!({});
    if let Some(n_ctx) = *lock(&shared.props_n_ctx) {
        body["default_generation_settings"] = json!({ "n_ctx": n_ctx });
    }
    if let Some(n) = slots {
        body["total_slots"] = json!(n);
    }
    match body.as_object().is_some_and(|o| o.is_empty()) {
        true => StatusCode::NOT_FOUND.into_response(),
        false => axum::Json(body).into_response(),
    }
}

async fn list_models(State(shared): State<Arc<Shared>>) -> Response {
    let ids = lock(&shared.models)
        .clone()
        .unwrap_or_else(|| DEFAULT_MODELS.iter().map(|m| m.to_string()).collect());
    let data: Vec<Value> = ids
        .iter()
        .map(|id| json!({"id": id, "object": "model", "owned_by": "mock"}))
        .collect();
    axum::Json(json!({"object": "list", "data": data})).into_response()
}

async fn chat_completions(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(shared, headers, body, Wire::Chat).await
}

async fn responses_api(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(shared, headers, body, Wire::Responses).await
}

/// Records the request, takes the next script (or asks the responder, which always sees a
/// chat-shaped body) and streams it on `wire`.
async fn answer(shared: Arc<Shared>, headers: HeaderMap, body: Bytes, wire: Wire) -> Response {
    let received_at = Instant::now();
    let parsed: Value = serde_json::from_slice(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    let recorded_headers = headers
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let index = {
        let mut reqs = lock(&shared.requests);
        reqs.push(RecordedRequest {
            path: match wire {
                Wire::Chat => "/v1/chat/completions".to_string(),
                Wire::Responses => "/v1/responses".to_string(),
            },
            body: parsed.clone(),
            raw: body.clone(),
            headers: recorded_headers,
            received_at,
            served_at: received_at,
            finished_at: None,
        });
        reqs.len() - 1
    };
    // Made first: a client that goes away while queued has finished too.
    let mut guard = FinishGuard {
        shared: shared.clone(),
        index,
        _slot: None,
    };
    let serving = lock(&shared.serving).clone();
    if let Some(queue) = serving {
        guard._slot = queue.acquire_owned().await.ok();
        if let Some(r) = lock(&shared.requests).get_mut(index) {
            r.served_at = Instant::now();
        }
    }

    // The tools a Responses request offered as freeform: their calls stream as such.
    let custom: Vec<String> = parsed["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["type"] == "custom")
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect();
    if wire == Wire::Responses && !custom.is_empty() && shared.refuse_custom.load(Ordering::Relaxed)
    {
        drop(guard);
        let refusal = json!({"error": {
            "message": "Invalid value: 'custom'. Supported values are: 'function'.",
            "type": "invalid_request_error", "param": "tools[0].type", "code": "invalid_value"}});
        return (StatusCode::BAD_REQUEST, axum::Json(refusal)).into_response();
    }
    let scripted = lock(&shared.queue).pop_front();
    let response = match scripted {
        Some(r) => r,
        None => {
            let responder = lock(&shared.responder).clone();
            match responder {
                Some(f) if wire == Wire::Responses => f(&responses::as_chat(&parsed)),
                Some(f) => f(&parsed),
                None => MockResponse::error(500, NO_RESPONSE_LEFT),
            }
        }
    };
    if !response.delay.is_zero() {
        tokio::time::sleep(response.delay).await;
    }
    let model = parsed
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("mock-model")
        .to_string();
    let n = shared.counter.fetch_add(1, Ordering::Relaxed);
    if parsed.get("stream") == Some(&Value::Bool(false))
        && let Kind::Stream(script) = &response.kind
    {
        drop(guard);
        return axum::Json(whole_answer(script, &model, wire)).into_response();
    }
    render(response.kind, &model, n, guard, wire, &custom)
}

/// A script as one JSON answer, for a request with `stream: false`.
fn whole_answer(script: &Script, model: &str, wire: Wire) -> Value {
    let text = script.text_deltas.concat();
    let (p, c) = script.usage.unwrap_or((1, 1));
    match wire {
        Wire::Chat => json!({
            "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c},
        }),
        Wire::Responses => json!({
            "object": "response", "model": model, "status": "completed",
            "output": [{"type": "message", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": text, "annotations": []}]}],
            "usage": {"input_tokens": p, "output_tokens": c, "total_tokens": p + c},
        }),
    }
}

/// One step of a streamed body.
enum Step {
    Data(String),
    Sleep(Duration),
    /// Abort the body with an error: hyper drops the connection without the final chunk.
    Fail,
}

fn render(
    kind: Kind,
    model: &str,
    n: u64,
    guard: FinishGuard,
    wire: Wire,
    custom: &[String],
) -> Response {
    match kind {
        Kind::Error {
            status,
            retry_after,
            body,
        } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut resp = (status, axum::Json(body)).into_response();
            if let Some(secs) = retry_after.and_then(|s| HeaderValue::from_str(&s).ok()) {
                resp.headers_mut().insert(header::RETRY_AFTER, secs);
            }
            drop(guard);
            resp
        }
        Kind::Stream(script) => {
            let steps = match wire {
                Wire::Chat => stream_steps(&format!("chatcmpl-mock-{n}"), model, script),
                Wire::Responses => {
                    responses::steps(&format!("resp_mock{n}"), model, script, custom)
                }
            };
            let body = futures::stream::unfold(
                (steps.into_iter(), Some(guard)),
                |(mut steps, mut guard)| async move {
                    loop {
                        match steps.next() {
                            Some(Step::Sleep(d)) => tokio::time::sleep(d).await,
                            Some(Step::Data(s)) => {
                                return Some((Ok(Bytes::from(s)), (steps, guard)));
                            }
                            Some(Step::Fail) => {
                                guard.take();
                                let err = std::io::Error::new(
                                    std::io::ErrorKind::ConnectionAborted,
                                    "mock: stream cut",
                                );
                                return Some((Err(err), (steps, None)));
                            }
                            None => {
                                guard.take();
                                return None;
                            }
                        }
                    }
                },
            );
            Response::builder()
                .status(StatusCode::OK)
                .header(header::CONTENT_TYPE, "text/event-stream")
                .header(header::CACHE_CONTROL, "no-cache")
                .body(Body::from_stream(body))
                .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
        }
    }
}

fn stream_steps(id: &str, model: &str, script: Script) -> Vec<Step> {
    let Script {
        text_deltas,
        tool_calls,
        arg_fragment,
        finish_reason,
        usage,
        cached,
        ending,
        chunk_delay,
        reasoning: _,
    } = script;
    let chunk = |delta: Value, finish: Option<&str>| -> String {
        let c = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": 1_700_000_000u64,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        });
        format!("data: {c}\n\n")
    };

    // Content deltas: the ones `cut_after` / `stall_after` count.
    let mut content: Vec<String> = Vec::new();
    let mut first = true;
    let mut with_role = |mut delta: Value| {
        if first {
            delta["role"] = json!("assistant");
            first = false;
        }
        delta
    };
    for t in &text_deltas {
        content.push(chunk(with_role(json!({"content": t})), None));
    }
    for (index, call) in tool_calls.iter().enumerate() {
        let head = json!({"tool_calls": [{
            "index": index,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }]});
        content.push(chunk(with_role(head), None));
        for frag in split_text(&call.arguments, arg_fragment) {
            let d = json!({"tool_calls": [{"index": index, "function": {"arguments": frag}}]});
            content.push(chunk(d, None));
        }
    }
    if content.is_empty() {
        content.push(chunk(with_role(json!({"content": ""})), None));
    }

    let finish_reason = match ending {
        Ending::Incomplete => Some("length".to_string()),
        _ => finish_reason,
    };
    let mut steps = Vec::new();
    let push = |steps: &mut Vec<Step>, s: String| {
        if !chunk_delay.is_zero() {
            steps.push(Step::Sleep(chunk_delay));
        }
        steps.push(Step::Data(s));
    };
    match ending {
        Ending::Cut { .. } | Ending::Stall { .. } => cut_short(&mut steps, content, &ending, push),
        Ending::Error {
            after,
            code,
            message,
            ..
        } => {
            for s in content.into_iter().take(after) {
                push(&mut steps, s);
            }
            let e = json!({"error": {"message": message, "code": code}});
            push(&mut steps, format!("data: {e}\n\n"));
        }
        Ending::Complete | Ending::NoDone | Ending::Incomplete => {
            for s in content {
                push(&mut steps, s);
            }
            push(&mut steps, chunk(json!({}), finish_reason.as_deref()));
            if let Some((p, c)) = usage {
                let u = json!({
                    "id": id,
                    "object": "chat.completion.chunk",
                    "created": 1_700_000_000u64,
                    "model": model,
                    "choices": [],
                    "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c,
                              "prompt_tokens_details": {"cached_tokens": cached}},
                });
                push(&mut steps, format!("data: {u}\n\n"));
            }
            if !matches!(ending, Ending::NoDone) {
                steps.push(Step::Data("data: [DONE]\n\n".to_string()));
            }
        }
    }
    steps
}

/// The first `after` content steps of a cut or stalled stream, then the drop.
fn cut_short(
    steps: &mut Vec<Step>,
    content: Vec<String>,
    ending: &Ending,
    push: impl Fn(&mut Vec<Step>, String),
) {
    let (after, pause) = match ending {
        Ending::Cut { after } => (*after, None),
        Ending::Stall { after, pause } => (*after, Some(*pause)),
        _ => (usize::MAX, None),
    };
    for s in content.into_iter().take(after) {
        push(steps, s);
    }
    // Let hyper flush what was sent, so the client sees a cut mid-body rather than a
    // response that never started; a stall waits its pause first.
    steps.push(Step::Sleep(pause.unwrap_or(Duration::from_millis(20))));
    steps.push(Step::Fail);
}
