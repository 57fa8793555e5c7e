//! Command-line arguments.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "squad",
    version,
    about = "A terminal coding assistant where one session is a team of agents",
    after_help = "Run `squad` for the full-screen interface, or `squad exec \"PROMPT\"` headless.\n\
                  Exit codes of exec: 0 done (or its --goal met), 1 the model or a tool failed \
                  the run (or its --goal budget was spent), 2 usage or config error, 3 nothing \
                  changed (every write and command refused: exec cannot ask; --approval auto \
                  allows them), 4 --rewind refused (files changed since), 130/143 \
                  interrupted (SIGINT/SIGTERM; 130 also a stopped --goal)."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// First message for the interactive session.
    pub prompt: Option<String>,

    #[command(flatten)]
    pub common: Common,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one prompt headless; print the final answer (or every event with --json).
    Exec(ExecArgs),
    /// Review a change read-only: reviewer workers in parallel (correctness, tests,
    /// security, AGENTS.md rules), each finding checked against the code; prints
    /// `file:line  severity  title` lines (or JSON with --json). Exit 0 once finished.
    Review(ReviewArgs),
    /// List the roles squad knows and where each came from.
    Roles,
    /// List the Agent Skills squad finds and where each came from.
    Skills,
    /// List this folder's saved sessions, newest first (`--all`: every folder's).
    Sessions(SessionsArgs),
    /// Merge a worker's change that was kept unmerged on its branch `squad/<id>` (its
    /// result did not pass its checks, or it ended without one) into the workspace, on
    /// purpose. Exit 0 merged, 1 conflict or nothing to merge.
    Merge(MergeArgs),
    /// MCP servers (`[mcp_servers.NAME]` in the config).
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
    /// User hooks (`[[hooks]]` in the config): list them, or approve the workspace's.
    Hooks {
        #[command(subcommand)]
        command: Option<HooksCommand>,
    },
    /// Check the setup: config files, roles, the server and its models, the key, dirs.
    Doctor(DoctorArgs),
    /// Print a shell completion script; load it from your shell's rc file, e.g.
    /// `source <(squad completions bash)` in ~/.bashrc.
    Completions(CompletionsArgs),
    /// Run one command in the sandbox an agent at the workspace root gets (try your build).
    Sandbox(SandboxArgs),
    /// Serve the Agent Client Protocol on stdin/stdout, for editors (Zed, JetBrains, …).
    Acp,
    /// Serve one worker's coding tools as JSON lines on stdin/stdout: the far side of an
    /// environment (`[environments.NAME]`), started by squad over ssh or in a container.
    ToolServer(ToolServerArgs),
}

#[derive(Debug, Args)]
pub struct ToolServerArgs {
    /// The worker's root, whatever the near side asks for (to pin it, e.g. in an
    /// authorized_keys `command=`); default: the root the near side names.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,

    /// Serve nothing; wait until stopped: a container's first process, beside which each
    /// worker's tool server runs as an exec.
    #[arg(long)]
    pub hold: bool,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The worker: its id or the first characters of it (as the tree and the notice
    /// show it), its branch `squad/<id>`, or its role when one worker alone has it.
    pub worker: String,

    /// The session the worker belongs to: its id (or a unique prefix) or `last`.
    #[arg(long, value_name = "ID", default_value = "last")]
    pub session: String,
}

#[derive(Debug, Args)]
pub struct SessionsArgs {
    /// Every folder's sessions (this folder's first), each with its folder.
    #[arg(long)]
    pub all: bool,

    /// Also the `squad review` runs.
    #[arg(long)]
    pub reviews: bool,

    /// Remove the files' checkpoints of workspaces no session used for
    /// `checkpoints.keep_days` (never those a running session uses), and say what went.
    #[arg(long)]
    pub prune: bool,
}

#[derive(Debug, Args)]
pub struct SandboxArgs {
    /// Run it in this environment (`[environments.NAME]`) instead, through its tool server,
    /// in its work folder with that side's sandbox.
    #[arg(long, value_name = "NAME")]
    pub env: Option<String>,

    /// The program and its arguments (`squad sandbox -- cargo build`; for shell syntax,
    /// `squad sandbox -- bash -c '…'`).
    #[arg(required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Every hook of the config files, and whether it runs (the default).
    List,
    /// Approve the hooks of this workspace's `.squad/config.toml` as the file is now
    /// (hooks that came with a repository never run before that).
    Trust,
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Start every configured server, show its state and tools, then stop them.
    List,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print the checks as one JSON object (for scripts).
    #[arg(long)]
    pub json: bool,

    /// Also send each model's wire a one-token request (costs a request per model).
    #[arg(long)]
    pub probe: bool,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// Print every event as one JSON object per line on stdout.
    #[arg(long)]
    pub json: bool,

    /// Go on with the agents the resumed session's log shows interrupted (a killed or
    /// stopped run) instead of sending a prompt; without --resume, this folder's last.
    #[arg(long = "continue", conflicts_with = "prompt")]
    pub continue_run: bool,

    /// Before the resumed session's user message N (1 = its first; `checkpoint_started`
    /// events number them): put back the files and/or the conversation as they were then
    /// (`--rewind-what`), then run the prompt if one is given; needs --resume.
    #[arg(
        long,
        value_name = "N",
        requires = "resume",
        conflicts_with = "continue_run"
    )]
    pub rewind: Option<u32>,

    /// What --rewind puts back.
    #[arg(long, value_enum, default_value_t = RewindWhat::Both, requires = "rewind")]
    pub rewind_what: RewindWhat,

    /// With --rewind: also overwrite files changed since by someone other than squad
    /// (without it, the rewind changes nothing and names them).
    #[arg(long, requires = "rewind")]
    pub force: bool,

    /// Keep working across turns until this holds: after each of the persona's turns
    /// --goal-check (and/or --goal-rules) runs; the run ends when it passes (exit 0), when
    /// the goal's budget is spent (exit 1) or when it is stopped (exit 130). Without a
    /// prompt the goal is it.
    #[arg(
        long,
        value_name = "SENTENCE",
        requires = "goal_end",
        conflicts_with = "continue_run"
    )]
    pub goal: Option<String>,

    /// The goal's check: a shell command run in the persona's sandbox; exit 0 is met.
    #[arg(long, value_name = "CMD", requires = "goal", group = "goal_end")]
    pub goal_check: Option<String>,

    /// The goal's check includes the project's own: `[tools] test_command` and every
    /// `[[verify.rules]]` command must pass.
    #[arg(long, requires = "goal", group = "goal_end")]
    pub goal_rules: bool,

    /// Turns (one check each) the goal may take [default: 10].
    #[arg(long, value_name = "N", requires = "goal")]
    pub goal_turns: Option<u32>,

    /// US dollars the goal may spend.
    #[arg(long, value_name = "USD", requires = "goal")]
    pub goal_budget: Option<f64>,

    #[command(flatten)]
    pub batch: Box<BatchArgs>,

    /// The prompt (words are joined; `-` reads it from stdin).
    #[arg(required_unless_present_any = ["continue_run", "rewind", "goal", "batch"], num_args = 1..)]
    pub prompt: Vec<String>,
}

/// `squad exec --batch FILE`: a worker per row (issue 55 part 5); with --continue, the
/// resumed session's run of the same batch (its --output) goes on with the rows not done.
#[derive(Debug, Args)]
pub struct BatchArgs {
    /// Run a worker per row of this CSV (a header row) or JSON Lines (.jsonl) file.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["prompt", "goal", "rewind"], requires_all = ["template", "output"])]
    pub batch: Option<String>,
    /// Each row's task, `{column}` filled from the row.
    #[arg(long, value_name = "TEXT", requires = "batch")]
    pub template: Option<String>,
    /// The column naming each row.
    #[arg(long, value_name = "NAME", default_value = "id", requires = "batch")]
    pub id_column: String,
    /// The role of each row's worker (the persona must be able to spawn it).
    #[arg(
        long,
        value_name = "ROLE",
        default_value = "implementer",
        requires = "batch"
    )]
    pub row_role: String,
    /// Each row's status, result and cost: `.csv`, else JSON Lines.
    #[arg(long, value_name = "FILE", requires = "batch")]
    pub output: Option<String>,
    /// A JSON schema file each row's result must match.
    #[arg(long, value_name = "FILE", requires = "batch")]
    pub schema: Option<PathBuf>,
    /// Rows at work at once [default: 4].
    #[arg(long, value_name = "N", requires = "batch")]
    pub max_concurrency: Option<u32>,
    /// US dollars each row's worker may spend.
    #[arg(long, value_name = "USD", requires = "batch")]
    pub row_budget: Option<f64>,
    /// Tokens each row's worker may spend.
    #[arg(long, value_name = "N", requires = "batch")]
    pub row_tokens: Option<u64>,
    /// Tries a row gets before it fails for good [default: 2].
    #[arg(long, value_name = "N", requires = "batch")]
    pub attempts: Option<u32>,
}

impl BatchArgs {
    /// The batch the flags ask for, if any (the schema file read).
    pub fn spec(&self) -> anyhow::Result<Option<squad::protocol::BatchSpec>> {
        use anyhow::Context;
        let Some(rows) = self.batch.clone() else {
            return Ok(None);
        };
        let schema = match &self.schema {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read --schema {}", path.display()))?;
                Some(
                    serde_json::from_str(&text)
                        .with_context(|| format!("--schema {} is not JSON", path.display()))?,
                )
            }
            None => None,
        };
        Ok(Some(squad::protocol::BatchSpec {
            rows,
            template: self.template.clone().unwrap_or_default(),
            id_column: self.id_column.clone(),
            role: self.row_role.clone(),
            output: self.output.clone().unwrap_or_default(),
            schema,
            max_concurrency: self.max_concurrency,
            budget: squad::protocol::Budget {
                tokens: self.row_tokens,
                cost_usd: self.row_budget,
                wall_s: None,
            },
            max_attempts: self.attempts,
        }))
    }
}

impl ExecArgs {
    /// The goal the flags ask for, if any.
    pub fn goal(&self) -> Option<squad::protocol::Goal> {
        let check = self.goal_check.clone().unwrap_or_default();
        let mut goal = squad::protocol::Goal::new(self.goal.clone()?, check);
        goal.rules = self.goal_rules;
        goal.max_turns = self.goal_turns.unwrap_or(goal.max_turns);
        goal.max_cost_usd = self.goal_budget;
        Some(goal)
    }
}

#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// Staged, unstaged and untracked changes against HEAD (the default).
    #[arg(long, conflicts_with_all = ["base", "commit"])]
    pub uncommitted: bool,

    /// HEAD against where it left BRANCH (`git merge-base BRANCH HEAD`).
    #[arg(long, value_name = "BRANCH", conflicts_with = "commit")]
    pub base: Option<String>,

    /// One commit against its parent.
    #[arg(long, value_name = "SHA")]
    pub commit: Option<String>,

    /// Print `{"findings":[…],"dropped":[…]}` on stdout.
    #[arg(long)]
    pub json: bool,
}

impl ReviewArgs {
    pub fn target(&self) -> squad::protocol::ReviewTarget {
        use squad::protocol::ReviewTarget;
        match (&self.base, &self.commit) {
            (Some(branch), _) => ReviewTarget::Base {
                branch: branch.clone(),
            },
            (_, Some(sha)) => ReviewTarget::Commit { sha: sha.clone() },
            _ => ReviewTarget::Uncommitted,
        }
    }
}

/// What `--rewind` puts back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RewindWhat {
    Files,
    Conversation,
    Both,
}

/// Options every command takes.
#[derive(Debug, Args, Clone, Default)]
pub struct Common {
    /// Workspace root (default: the current directory).
    #[arg(short = 'C', long = "cd", global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,

    /// Extra config file, merged over the user and workspace ones.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Model for every agent (overrides the config's levels).
    #[arg(long, global = true)]
    pub model: Option<String>,

    /// OpenAI-compatible server URL including /v1 (also OPENAI_BASE_URL).
    #[arg(long, global = true, value_name = "URL")]
    pub base_url: Option<String>,

    /// Use a local server (llama.cpp, Ollama, LM Studio, vLLM) found on 127.0.0.1, even
    /// with an API key set. Without a key and a base URL squad looks for one anyway.
    #[arg(long, global = true)]
    pub oss: bool,

    /// Run with squad's built-in demo model: no server, no key, nothing leaves the machine
    /// (say `team` or `write` to it). For a first look, not for work.
    #[arg(long, global = true, conflicts_with_all = ["oss", "base_url"])]
    pub demo: bool,

    /// chat | responses: the API every model is spoken to with, for this run (overrides
    /// provider.wire_api and the levels' own).
    #[arg(long = "wire-api", global = true, value_name = "WIRE")]
    pub wire_api: Option<String>,

    /// ask | auto | read-only
    #[arg(long, global = true, value_name = "POLICY")]
    pub approval: Option<String>,

    /// The OS sandbox commands run in: workspace-write | read-only | off
    #[arg(long, global = true, value_name = "MODE")]
    pub sandbox: Option<String>,

    /// Starting persona (default: copilot).
    #[arg(long, global = true)]
    pub role: Option<String>,

    /// Apply [profiles.NAME] from the config over the config files (also SQUAD_PROFILE).
    #[arg(long, global = true, value_name = "NAME")]
    pub profile: Option<String>,

    /// Continue a saved session: `last` (this folder's newest) or its id (a unique prefix
    /// is enough; another folder's session is named before it goes on here).
    #[arg(long, global = true, value_name = "ID")]
    pub resume: Option<String>,

    /// `resume` is a session's id already named to the user (exec's `--rewind` does it
    /// first): not named again.
    #[arg(skip)]
    pub resume_named: bool,
}
