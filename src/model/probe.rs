//! Asking the server which models it serves (`GET /models`): `squad doctor`'s check that
//! the server is reachable and knows the configured models; and, when asked for, a tiny
//! request on a model's wire. A session asks only for the list, when `/model` has no name.

use super::http::{error_message, root_cause};
use super::{ClientSettings, ModelError, WireApi};
use std::time::Duration;

/// Longest a check may wait: a doctor that hangs helps nobody.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// The ids the server lists, in its order. Sends the key when there is one, never logs it.
pub async fn list_models(settings: &ClientSettings) -> Result<Vec<String>, ModelError> {
    let key = settings.api_key.as_deref();
    models_at(&settings.base_url, key, settings.request_timeout).await
}

/// [`list_models`] of the server at `base_url` (a session's `/model` asks it too).
pub(super) async fn models_at(
    base_url: &str,
    key: Option<&str>,
    request_timeout: Duration,
) -> Result<Vec<String>, ModelError> {
    let base_url = base_url.trim_end_matches('/').to_string();
    let unreachable = |message: String| ModelError::Unreachable {
        base_url: base_url.clone(),
        message,
    };
    let timeout = request_timeout.min(PROBE_TIMEOUT);
    let http = reqwest::Client::builder()
        .connect_timeout(timeout)
        .timeout(timeout)
        .build()
        .map_err(|e| unreachable(format!("cannot set up the HTTP client: {}", root_cause(&e))))?;
    let mut request = http.get(format!("{base_url}/models"));
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.map_err(|e| {
        let cause = if e.is_timeout() {
            format!("no answer within {timeout:?}")
        } else {
            root_cause(&e)
        };
        unreachable(cause)
    })?;
    model_ids(&success_body(response).await?)
}

/// Sends `model` the smallest request its wire takes (not streamed): chat completions with
/// `max_tokens: 1`; Responses with `max_output_tokens: 16`, the least OpenAI accepts. Ok
/// when the server answers it in that wire's shape.
pub async fn probe_wire(
    settings: &ClientSettings,
    model: &str,
    wire: WireApi,
) -> Result<(), ModelError> {
    let base_url = settings.base_url.trim_end_matches('/').to_string();
    let timeout = settings.request_timeout.min(PROBE_TIMEOUT * 6);
    let http = reqwest::Client::builder()
        .connect_timeout(PROBE_TIMEOUT)
        .timeout(timeout)
        .build()
        .map_err(|e| ModelError::BadResponse(root_cause(&e)))?;
    let (body, shape) = match wire {
        WireApi::Chat => (
            serde_json::json!({"model": model, "max_tokens": 1, "stream": false,
                               "messages": [{"role": "user", "content": "Say OK."}]}),
            "choices",
        ),
        WireApi::Responses => (
            serde_json::json!({"model": model, "max_output_tokens": 16, "store": false, "stream": false,
                               "input": "Say OK."}),
            "output",
        ),
    };
    let mut request = http.post(format!("{base_url}{}", wire.path())).json(&body);
    if let Some(key) = &settings.api_key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.map_err(|e| ModelError::Unreachable {
        base_url: base_url.clone(),
        message: if e.is_timeout() {
            format!("no answer within {timeout:?}")
        } else {
            root_cause(&e)
        },
    })?;
    let text = success_body(response).await?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| ModelError::BadResponse(format!("{}: not JSON ({e})", wire.path())))?;
    match value.get(shape) {
        Some(_) => Ok(()),
        None => Err(ModelError::BadResponse(format!(
            "{}: the answer has no `{shape}`",
            wire.path()
        ))),
    }
}

/// The body of a successful answer; any other status is an HTTP error with the server's
/// own message.
async fn success_body(response: reqwest::Response) -> Result<String, ModelError> {
    let status = response.status();
    let body = response
        .text()
        .await
        .map_err(|e| ModelError::BadResponse(root_cause(&e)))?;
    if !status.is_success() {
        return Err(ModelError::Http {
            status: status.as_u16(),
            message: error_message(&body, status.canonical_reason().unwrap_or("")),
        });
    }
    Ok(body)
}

/// `{"data": [{"id": "..."}, …]}`, the shape OpenAI, Ollama, llama.cpp and vLLM share.
fn model_ids(body: &str) -> Result<Vec<String>, ModelError> {
    let bad = |why: &str| ModelError::BadResponse(format!("/models: {why}"));
    let value: serde_json::Value =
        serde_json::from_str(body).map_err(|e| bad(&format!("not JSON ({e})")))?;
    let data = value
        .get("data")
        .and_then(|d| d.as_array())
        .ok_or_else(|| bad("no `data` list"))?;
    Ok(data
        .iter()
        .filter_map(|m| m.get("id").and_then(|id| id.as_str()))
        .map(str::to_string)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_come_from_the_data_list() {
        let body = r#"{"object":"list","data":[{"id":"a","object":"model"},{"id":"b"},{"x":1}]}"#;
        assert_eq!(model_ids(body).unwrap(), ["a", "b"]);
        assert!(model_ids("{}").is_err());
        assert!(model_ids("<html>").is_err());
    }
}
