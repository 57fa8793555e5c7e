//! A tool result as the model reads it: text joined, images, audio and resources
//! described (the chat API takes no binary tool results), capped like every tool's output.

use crate::text::clip;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// The result's text and whether the server marked it an error.
pub fn render(result: &CallToolResult, max_bytes: usize) -> (String, bool) {
    let mut parts: Vec<String> = result.content.iter().map(describe).collect();
    // Structured content is the result when nothing else is; otherwise servers repeat it
    // as text (the spec asks them to), and sending both would double the tokens.
    if parts.is_empty()
        && let Some(value) = &result.structured_content
    {
        parts.push(value.to_string());
    }
    let text = if parts.is_empty() {
        "(no output)".to_string()
    } else {
        parts.join("\n")
    };
    (clip(&text, max_bytes), result.is_error == Some(true))
}

fn describe(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => format!(
            "[image: {}, {} bytes, not shown]",
            i.mime_type,
            decoded_len(&i.data)
        ),
        ContentBlock::Audio(a) => format!(
            "[audio: {}, {} bytes, not played]",
            a.mime_type,
            decoded_len(&a.data)
        ),
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[resource {uri}: {}, {} bytes, not shown]",
                mime_type.as_deref().unwrap_or("binary"),
                decoded_len(blob)
            ),
            _ => "[resource of an unknown kind]".to_string(),
        },
        ContentBlock::ResourceLink(link) => {
            let mut s = format!("[resource link {} ({})", link.uri, link.name);
            if let Some(d) = link.description.as_deref().filter(|d| !d.is_empty()) {
                s.push_str(": ");
                s.push_str(d);
            }
            s.push(']');
            s
        }
        _ => "[content of a kind squad does not know]".to_string(),
    }
}

/// Bytes behind base64 text, without decoding it.
fn decoded_len(base64: &str) -> usize {
    let body = base64.trim_end_matches('=').len();
    body * 3 / 4
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(v: serde_json::Value) -> CallToolResult {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn text_is_joined_and_binary_described() {
        let r = result(json!({"content": [
            {"type": "text", "text": "first"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "demo://a", "text": "inside"}},
            {"type": "resource", "resource": {"uri": "demo://b", "blob": "AAAA", "mimeType": "application/gzip"}},
            {"type": "resource_link", "uri": "demo://c", "name": "c", "description": "a link"},
        ]}));
        let (text, is_error) = render(&r, 10_000);
        assert!(!is_error);
        assert_eq!(
            text,
            "first\n[image: image/png, 8 bytes, not shown]\n[resource demo://a]\ninside\n\
             [resource demo://b: application/gzip, 3 bytes, not shown]\n\
             [resource link demo://c (c): a link]"
        );
    }

    #[test]
    fn errors_structured_content_and_caps() {
        let r =
            result(json!({"content": [{"type": "text", "text": "no such repo"}], "isError": true}));
        assert_eq!(render(&r, 100), ("no such repo".to_string(), true));
        let r = result(json!({"content": [], "structuredContent": {"sum": 3}}));
        assert_eq!(render(&r, 100).0, r#"{"sum":3}"#);
        let r = result(json!({"content": []}));
        assert_eq!(render(&r, 100).0, "(no output)");
        let r = result(json!({"content": [{"type": "text", "text": "x".repeat(50)}]}));
        assert_eq!(render(&r, 10).0, "xxxxxxxxxx… (50 bytes in all)");
    }
}
