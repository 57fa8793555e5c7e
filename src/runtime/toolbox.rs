//! Every tool an agent can call, coding tools, agent tools and MCP servers' tools alike, in
//! one registry: one way to look up a spec, an effect and a handler. The coding and agent
//! tools are fixed; the MCP tools come and go with their servers.

mod handler;

pub use handler::{CallHandler, Coding, Invocation, Ran, Reach};

use super::agent_tools;
use crate::mcp::McpHub;
use crate::model::ToolSpec;
use crate::roles::{Audience, Role};
use crate::tools::{ToolFacts, ToolKind, ToolRegistry};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

struct Entry {
    spec: ToolSpec,
    handler: Arc<dyn CallHandler>,
    audience: Audience,
}

pub struct ToolBox {
    entries: Vec<Entry>,
    mcp: Arc<McpHub>,
    /// Tool specs per tool set, with their estimated tokens: agents of one role share
    /// one, built on first use.
    spec_cache: Mutex<SpecCache>,
}

/// Specs per tool set, for one generation of the MCP tool list (a server that restarts
/// may come back with other schemas under the same names).
#[derive(Default)]
struct SpecCache {
    generation: u64,
    sets: HashMap<ToolSet, SpecsAndTokens>,
}

/// The names of a tool set, as one role's agents share them.
type ToolSet = Arc<[String]>;
/// A tool set's specs and the tokens they take in a request.
type SpecsAndTokens = (Arc<[ToolSpec]>, u64);

impl ToolBox {
    /// The coding tools given, then the agent tools, then `mcp`'s. A name registered twice
    /// keeps the first: the agent tools cannot be shadowed.
    pub fn new(coding: &ToolRegistry, mcp: Arc<McpHub>) -> Self {
        let mut entries: Vec<Entry> = Vec::new();
        for tool in agent_tools::all() {
            entries.push(Entry {
                spec: tool.spec(),
                audience: tool.audience(),
                handler: Arc::new(handler::Agent(tool)),
            });
        }
        let mut coding_entries = Vec::new();
        for name in coding.names() {
            let (Some(spec), Some(tool)) = (coding.spec(&name), coding.get(&name)) else {
                continue;
            };
            if entries.iter().any(|e| e.spec.name == name) {
                continue;
            }
            coding_entries.push(Entry {
                spec: spec.clone(),
                audience: Audience::Everyone,
                handler: Arc::new(handler::Coding(tool)),
            });
        }
        // The model sees the coding tools first.
        coding_entries.append(&mut entries);
        Self {
            entries: coding_entries,
            mcp,
            spec_cache: Mutex::default(),
        }
    }

    pub fn mcp(&self) -> &Arc<McpHub> {
        &self.mcp
    }

    fn entry(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.spec.name == name)
    }

    /// Every coding and agent tool name, in the order the model sees them.
    pub fn names(&self) -> Vec<String> {
        self.entries.iter().map(|e| e.spec.name.clone()).collect()
    }

    pub fn handler(&self, name: &str) -> Option<Arc<dyn CallHandler>> {
        match self.entry(name) {
            Some(e) => Some(e.handler.clone()),
            None => self.mcp.tool(name).map(|tool| {
                Arc::new(handler::Mcp {
                    tool,
                    hub: self.mcp.clone(),
                }) as Arc<dyn CallHandler>
            }),
        }
    }

    /// The tool's spec (its name, description and parameters' schema).
    pub fn spec(&self, name: &str) -> Option<ToolSpec> {
        match self.entry(name) {
            Some(e) => Some(e.spec.clone()),
            None => self.mcp.tool(name).map(|t| t.spec.clone()),
        }
    }

    /// What the tool does to the world, as its handler says (`None`: no such tool).
    pub fn reach(&self, name: &str) -> Option<Reach> {
        match self.entry(name) {
            Some(e) => Some(e.handler.reach()),
            None => self.mcp.tool(name).map(|t| {
                if t.read_only {
                    Reach::Reads
                } else {
                    Reach::ChangesFiles
                }
            }),
        }
    }

    pub fn is_read_only(&self, name: &str) -> bool {
        self.reach(name) == Some(Reach::Reads)
    }

    /// Whether neighbouring calls of this tool may run at the same time (when nobody has to
    /// be asked about them).
    pub fn is_concurrent(&self, name: &str) -> bool {
        match self.entry(name) {
            Some(e) => e.handler.concurrent(),
            None => self.mcp.tool(name).is_some_and(|t| t.read_only),
        }
    }

    /// The tools an agent of `role` gets: the role's lists within each tool's audience,
    /// and never more than `ceiling` (its parent's tools, see `ToolHandler::same_as`). Agent tools follow
    /// the worker's own role; coding tools may not widen.
    pub fn tools_for(
        &self,
        role: &Role,
        is_worker: bool,
        ceiling: Option<&[String]>,
    ) -> Vec<String> {
        let mut tools: Vec<String> = self
            .entries
            .iter()
            .filter(|e| role.offers(&e.spec.name, e.audience, is_worker))
            .filter(|e| {
                e.handler.reach() == Reach::Team
                    || ceiling.is_none_or(|c| within(c, &e.spec.name, e.handler.same_as()))
            })
            .map(|e| e.spec.name.clone())
            .collect();
        for e in &self.entries {
            let Some(with) = e.handler.comes_with() else {
                continue;
            };
            let name = &e.spec.name;
            let excluded = role.excluded_tools.iter().any(|t| t == name);
            if tools.iter().any(|t| t == with) && !tools.contains(name) && !excluded {
                tools.push(name.clone());
            }
        }
        tools
    }

    /// `tools_for`, then fitted to `model`: a tool the model was trained on takes the place
    /// of the tools it does the work of (`ToolHandler::preferred_by`), at the first of them.
    pub fn tools_for_model(
        &self,
        role: &Role,
        is_worker: bool,
        ceiling: Option<&[String]>,
        model: &str,
    ) -> Vec<String> {
        let mut tools = self.tools_for(role, is_worker, ceiling);
        for e in &self.entries {
            let same_as = e.handler.same_as();
            let has = |n: &str| tools.iter().any(|t| t == n);
            if same_as.is_empty()
                || has(&e.spec.name)
                || !e.handler.preferred_by(model)
                || !same_as.iter().all(|n| has(n))
            {
                continue;
            }
            let Some(at) = tools.iter().position(|t| same_as.contains(&t.as_str())) else {
                continue;
            };
            tools.retain(|t| !same_as.contains(&t.as_str()));
            tools.insert(at.min(tools.len()), e.spec.name.clone());
        }
        tools
    }

    /// The MCP tools of the servers that are up which every role of `lineage` (the
    /// persona first, the agent last) offers: never more than the agent's supervisors.
    pub fn mcp_tools_for(&self, lineage: &[&Role]) -> Vec<String> {
        self.mcp
            .tools()
            .iter()
            .filter(|t| {
                !lineage.is_empty() && lineage.iter().all(|r| r.offers_mcp(&t.server, &t.name))
            })
            .filter(|t| self.entry(&t.name).is_none())
            .map(|t| t.name.clone())
            .collect()
    }

    /// The specs of a tool set and the tokens they take in a request (an estimate), built
    /// once per distinct set (and MCP tool list).
    pub fn specs_and_tokens(&self, names: &Arc<[String]>) -> SpecsAndTokens {
        let generation = self.mcp.generation();
        let mut cache = crate::sync::lock(&self.spec_cache);
        if cache.generation != generation {
            *cache = SpecCache {
                generation,
                sets: HashMap::new(),
            };
        }
        if let Some(entry) = cache.sets.get(names) {
            return entry.clone();
        }
        let specs: Arc<[ToolSpec]> = names
            .iter()
            .filter_map(|n| match self.entry(n) {
                Some(e) => Some(e.spec.clone()),
                None => self.mcp.tool(n).map(|t| t.spec.clone()),
            })
            .collect();
        let tokens = crate::context::estimate_tools(&specs);
        cache.sets.insert(names.clone(), (specs.clone(), tokens));
        (specs, tokens)
    }
}

/// A call's facts as its handler says them, for front ends, which have no session's
/// toolbox at hand (ACP shows each call with its kind): the coding and agent tools; a tool
/// squad does not define (an MCP server's) is shown as "other" and taken to change files.
pub fn facts_of(name: &str, args: &Value) -> ToolFacts {
    static BUILT_IN: LazyLock<Vec<(String, Arc<dyn CallHandler>)>> = LazyLock::new(|| {
        let mut coding = ToolRegistry::new();
        for tool in crate::tools::coding_tools() {
            coding.register(tool);
        }
        coding.register(Arc::new(crate::tools::UseSkill(Arc::default())));
        let mut handlers: Vec<(String, Arc<dyn CallHandler>)> = Vec::new();
        for name in coding.names() {
            if let Some(tool) = coding.get(&name) {
                handlers.push((name, Arc::new(handler::Coding(tool))));
            }
        }
        for tool in agent_tools::all() {
            handlers.push((tool.spec().name, Arc::new(handler::Agent(tool))));
        }
        handlers
    });
    BUILT_IN.iter().find(|(n, _)| n == name).map_or_else(
        || ToolFacts::new(ToolKind::Other, Reach::ChangesFiles),
        |(_, h)| h.facts(args),
    )
}

/// Whether `ceiling` (a parent's tools) covers `name`, itself or by the tools that together
/// do what it does.
fn within(ceiling: &[String], name: &str, same_as: &[&str]) -> bool {
    let has = |n: &str| ceiling.iter().any(|c| c == n);
    has(name) || (!same_as.is_empty() && same_as.iter().all(|n| has(n)))
}

#[cfg(test)]
mod tests;
