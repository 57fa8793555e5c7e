//! Recognising "the request does not fit the context window" among a server's errors, so
//! the runtime can compact and retry instead of failing the same way on every call.
//! Shapes: OpenAI `code: context_length_exceeded`; llama.cpp `type:
//! exceed_context_size_error` with `n_ctx`; vLLM's 400 "This model's maximum context
//! length is N tokens. However, …"; and similar wording elsewhere.

use serde_json::Value;

/// What a server said of a request that does not fit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Overflow {
    /// The context window in tokens, where the server names it.
    pub window: Option<u64>,
    /// The request's tokens as the server counted them, where it says: the truth squad's
    /// own estimate is scaled by.
    pub prompt_tokens: Option<u64>,
}

/// `Some` when the error body says the request overflowed the context, `None` for any
/// other error.
pub(crate) fn context_overflow(body: &str) -> Option<Overflow> {
    let json: Option<Value> = serde_json::from_str(body).ok();
    let error = json.as_ref().map(|v| v.get("error").unwrap_or(v));
    let field = |k: &str| error.and_then(|e| e.get(k));
    let str_field = |k: &str| field(k).and_then(Value::as_str).unwrap_or("");
    let message = match field("message").and_then(Value::as_str) {
        Some(m) => m.to_string(),
        None => body.to_string(),
    };
    let window = field("n_ctx")
        .and_then(Value::as_u64)
        .or_else(|| number_after(&message, "maximum context length is"))
        .or_else(|| number_after(&message, "context length of"));
    let prompt_tokens = field("n_prompt_tokens")
        .and_then(Value::as_u64)
        .or_else(|| number_after(&message, "resulted in"))
        .or_else(|| number_after(&message, "you requested"));
    let by_code = str_field("code") == "context_length_exceeded"
        || str_field("type") == "exceed_context_size_error"
        || str_field("type") == "context_length_exceeded";
    (by_code || overflow_wording(&message)).then_some(Overflow {
        window,
        prompt_tokens,
    })
}

/// An error object that arrived inside a stream (either wire): `Some` when it says the
/// request overflowed, with what its fields or its wording say of the window and the count.
pub(crate) fn in_stream(error: &Value, message: &str) -> Option<Overflow> {
    let str_field = |k: &str| error.get(k).and_then(Value::as_str).unwrap_or("");
    let overflowed = str_field("code") == "context_length_exceeded"
        || str_field("type") == "exceed_context_size_error"
        || overflow_wording(message);
    if !overflowed {
        return None;
    }
    let from_text = context_overflow(message).unwrap_or_default();
    let number = |k: &str| error.get(k).and_then(Value::as_u64);
    Some(Overflow {
        window: number("n_ctx").or(from_text.window),
        prompt_tokens: number("n_prompt_tokens").or(from_text.prompt_tokens),
    })
}

/// Also for errors that arrive inside a stream, which carry only a message.
pub(crate) fn overflow_wording(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    let about_context = [
        "context length",
        "context window",
        "context size",
        "maximum context",
        "context_length",
    ]
    .iter()
    .any(|k| m.contains(k));
    let too_big = [
        "exceed",
        "too long",
        "too large",
        "reduce the length",
        "however, you requested",
        "however, your request",
        "is larger than",
    ]
    .iter()
    .any(|k| m.contains(k));
    about_context && too_big
}

fn number_after(text: &str, marker: &str) -> Option<u64> {
    let lower = text.to_ascii_lowercase();
    let at = lower.find(marker)? + marker.len();
    let digits: String = lower[at..]
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_the_shapes_of_openai_llama_cpp_and_vllm() {
        let openai = r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        let said = |window, prompt_tokens| {
            Some(Overflow {
                window: Some(window),
                prompt_tokens: Some(prompt_tokens),
            })
        };
        assert_eq!(context_overflow(openai), said(128_000, 130_000));
        let llama = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":40000,"n_ctx":32768}}"#;
        assert_eq!(context_overflow(llama), said(32_768, 40_000));
        let vllm = r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#;
        assert_eq!(context_overflow(vllm), said(4096, 5000));
        assert_eq!(
            context_overflow("prompt exceeds the context window"),
            Some(Overflow::default())
        );
        assert_eq!(
            context_overflow(
                r#"{"error":{"message":"Invalid API Key","type":"authentication_error","code":401}}"#
            ),
            None
        );
        assert_eq!(
            context_overflow(r#"{"error":{"message":"model not found"}}"#),
            None
        );
    }
}
