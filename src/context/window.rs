//! How many tokens a model's context holds: the config's figure, or what the server said
//! (llama.cpp's `/props`, or the `n_ctx` of a context error), or the default.

use crate::config::Config;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

#[derive(Debug)]
pub struct ContextWindows {
    configured: BTreeMap<String, u64>,
    default: u64,
    /// What the server says for every model it serves (llama.cpp's `/props`).
    server: Mutex<Option<u64>>,
    /// What a context error said about one model.
    learned: Mutex<HashMap<String, u64>>,
}

impl ContextWindows {
    pub fn new(config: &Config) -> Self {
        Self {
            configured: config.context_windows.clone(),
            default: config.context.default_window.max(1),
            server: Mutex::new(None),
            learned: Mutex::new(HashMap::new()),
        }
    }

    /// The window of `model`. A configured figure wins over the server's `/props` (it may
    /// be set small on purpose), but a context error's `n_ctx` is the real limit: the
    /// smaller of the two counts.
    pub fn window(&self, model: &str) -> u64 {
        let learned = crate::sync::lock(&self.learned).get(model).copied();
        let base = match self.configured.get(model) {
            Some(w) => *w,
            None => crate::sync::lock(&self.server).unwrap_or(self.default),
        };
        learned.map_or(base, |l| l.min(base)).max(1)
    }

    /// The server's own context size, for models the config does not list.
    pub fn set_server_window(&self, tokens: u64) {
        if tokens > 0 {
            *crate::sync::lock(&self.server) = Some(tokens);
        }
    }

    /// A context error named the model's real limit.
    pub fn learn(&self, model: &str, tokens: u64) {
        if tokens > 0 {
            crate::sync::lock(&self.learned).insert(model.to_string(), tokens);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_then_server_then_default_and_errors_only_shrink() {
        let mut config = Config::default();
        config.context.default_window = 1000;
        config.context_windows.insert("small".into(), 500);
        let w = ContextWindows::new(&config);
        assert_eq!(w.window("unknown"), 1000);
        assert_eq!(w.window("small"), 500);
        w.set_server_window(4096);
        assert_eq!(w.window("unknown"), 4096);
        assert_eq!(
            w.window("small"),
            500,
            "a configured window wins over /props"
        );
        w.learn("small", 800);
        assert_eq!(w.window("small"), 500);
        w.learn("unknown", 2048);
        assert_eq!(w.window("unknown"), 2048);
    }
}
