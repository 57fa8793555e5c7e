//! (in progress: replaced by the TUI branch)
pub async fn run(
    _handle: crate::runtime::SessionHandle,
    _first_prompt: Option<String>,
) -> anyhow::Result<()> {
    anyhow::bail!("the interactive interface is not built yet; use `squad exec`")
}
