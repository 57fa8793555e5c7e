//! A prompt's content blocks as the one user message squad sends its persona.

use super::rpc::invalid_params;
use agent_client_protocol::Error;
use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};

/// Text as is, embedded files with their text, links by their URI. Images and audio are
/// not offered (`promptCapabilities`), so a client sends none; any that come are left out.
pub fn text(blocks: &[ContentBlock]) -> Result<String, Error> {
    let mut parts = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => parts.push(t.text.clone()),
            ContentBlock::ResourceLink(link) => parts.push(format!("[file: {}]", link.uri)),
            ContentBlock::Resource(r) => match &r.resource {
                EmbeddedResourceResource::TextResourceContents(t) => {
                    parts.push(format!("[file: {}]\n```\n{}\n```", t.uri, t.text));
                }
                EmbeddedResourceResource::BlobResourceContents(b) => {
                    parts.push(format!("[file: {}]", b.uri));
                }
                _ => {}
            },
            _ => {}
        }
    }
    let text = parts.join("\n");
    if text.trim().is_empty() {
        return Err(invalid_params("the prompt has no text"));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_links_and_embedded_files_make_one_message() {
        let blocks: Vec<ContentBlock> = serde_json::from_value(json!([
            {"type": "text", "text": "look at"},
            {"type": "resource_link", "name": "a", "uri": "file:///ws/a.rs"},
            {"type": "resource", "resource": {"uri": "file:///ws/b.rs", "text": "fn b() {}"}},
        ]))
        .unwrap();
        assert_eq!(
            text(&blocks).unwrap(),
            "look at\n[file: file:///ws/a.rs]\n[file: file:///ws/b.rs]\n```\nfn b() {}\n```"
        );
        assert!(text(&[]).is_err());
    }
}
