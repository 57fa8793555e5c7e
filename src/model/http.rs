//! The HTTP layer under async-openai: a tower service around its `ReqwestService` that
//! keeps what the default executor throws away (status, `Retry-After`, the server's
//! message) and never retries on its own; retrying is our job (see `retry.rs`).

use super::retry::parse_retry_after;
use async_openai::error::OpenAIError;
use async_openai::middleware::{HttpRequestFactory, ReqwestService};
use reqwest::header::{AUTHORIZATION, RETRY_AFTER};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// Longest server error message we keep; bodies can be whole HTML pages.
const MAX_MESSAGE_CHARS: usize = 500;

/// A non-success HTTP answer, carried through async-openai as `OpenAIError::Boxed`.
#[derive(Debug, thiserror::Error)]
#[error("HTTP {status}: {message}")]
pub(crate) struct HttpFailure {
    pub status: u16,
    pub retry_after: Option<Duration>,
    pub message: String,
    /// The body says the request overflowed the context window.
    pub overflow: Option<super::Overflow>,
}

#[derive(Clone, Debug)]
pub(crate) struct StatusService {
    inner: ReqwestService,
    /// Without a key, no `Authorization` header at all (async-openai always adds one).
    send_auth: bool,
}

impl StatusService {
    pub fn new(client: reqwest::Client, send_auth: bool) -> Self {
        Self {
            inner: ReqwestService::new(client),
            send_auth,
        }
    }
}

type ResponseFuture = Pin<Box<dyn Future<Output = Result<reqwest::Response, OpenAIError>> + Send>>;

impl tower::Service<HttpRequestFactory> for StatusService {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, factory: HttpRequestFactory) -> Self::Future {
        let factory = if self.send_auth {
            factory
        } else {
            HttpRequestFactory::new(move || {
                let factory = factory.clone();
                async move {
                    let mut request = factory.build().await?;
                    request.headers_mut().remove(AUTHORIZATION);
                    Ok(request)
                }
            })
        };
        let sent = self.inner.call(factory);
        Box::pin(async move {
            let response = sent.await?;
            let status = response.status();
            if status.is_success() {
                return Ok(response);
            }
            let retry_after = response
                .headers()
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(parse_retry_after);
            let body = response.text().await.unwrap_or_default();
            let overflow = if status.is_client_error() {
                super::overflow::context_overflow(&body)
            } else {
                None
            };
            let failure = HttpFailure {
                status: status.as_u16(),
                retry_after,
                message: error_message(&body, status.canonical_reason().unwrap_or("")),
                overflow,
            };
            Err(OpenAIError::Boxed(Box::new(failure)))
        })
    }
}

/// The human part of an error body: OpenAI's `{"error": {"message"}}`, the
/// `{"error": "..."}` / `{"message"}` / `{"detail"}` shapes of other servers, or the text.
pub(crate) fn error_message(body: &str, fallback: &str) -> String {
    let from_json = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            let pick = |v: &serde_json::Value| v.as_str().map(str::to_string);
            v.pointer("/error/message")
                .and_then(pick)
                .or_else(|| v.get("error").and_then(pick))
                .or_else(|| v.get("message").and_then(pick))
                .or_else(|| v.get("detail").and_then(pick))
        });
    let text = from_json.unwrap_or_else(|| body.trim().to_string());
    let text = if text.is_empty() {
        fallback.to_string()
    } else {
        text
    };
    truncate(&text, MAX_MESSAGE_CHARS)
}

/// The innermost cause ("Connection refused (os error 111)", a DNS failure): what a person
/// can act on, without the layers of wrapping above it.
pub(crate) fn root_cause(e: &dyn std::error::Error) -> String {
    let mut last = e;
    while let Some(source) = last.source() {
        last = source;
    }
    last.to_string()
}

pub(crate) fn truncate(s: &str, max_chars: usize) -> String {
    match s.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_from_various_servers() {
        assert_eq!(
            error_message(r#"{"error":{"message":"bad key","type":"x"}}"#, ""),
            "bad key"
        );
        assert_eq!(
            error_message(r#"{"error":"model not found"}"#, ""),
            "model not found"
        );
        assert_eq!(error_message(r#"{"detail":"nope"}"#, ""), "nope");
        assert_eq!(error_message("  upstream down \n", ""), "upstream down");
        assert_eq!(error_message("", "Bad Gateway"), "Bad Gateway");
        let long = "x".repeat(2000);
        assert_eq!(
            error_message(&long, "").chars().count(),
            MAX_MESSAGE_CHARS + 1
        );
    }
}
