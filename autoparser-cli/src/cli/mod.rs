//! The `autoparser` command: JSON on stdout, one subcommand per module.
//!
//! ```text
//! autoparser analyze  TEMPLATE
//! autoparser render   TEMPLATE --request REQ.json
//! autoparser generate TEMPLATE --request REQ.json [--analysis A.json]
//! autoparser parse    TEMPLATE --request REQ.json [--partial] [--stream] < OUTPUT
//! autoparser check    --corpus DIR --templates DIR [--filter S] [--json] [--timings]
//! autoparser verify   TEMPLATE [--request REQ.json] [--seed N] [--cases N] [--json]
//! ```
//!
//! `TEMPLATE` is a `.jinja` file, a `tokenizer_config.json` or a `.gguf`; a request is a JSON
//! object shaped like a corpus case's `inputs`. Errors go to stderr with exit status 1 (2 for
//! usage errors).

mod analyze;
mod check;
mod generate;
mod parse;
mod render;
mod verify;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use autoparser::Model;
use autoparser::format::TemplateAnalysis;
use autoparser::template::{ChatTemplate, load_named};
use clap::{Args, Parser, Subcommand};
use serde_json::Value;

/// Learn a model's output format from its chat template; render, generate, parse, check.
#[derive(Debug, Parser)]
#[command(name = "autoparser", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Analyze a template: its markers, modes and capabilities, as JSON.
    Analyze(analyze::AnalyzeArgs),
    /// Render a request: `{prompt, generation_prompt}`.
    Render(render::RenderArgs),
    /// Generate for a request: prompt, generation prompt, prefill, grammar, triggers, tokens.
    Generate(generate::GenerateArgs),
    /// Parse model output (stdin) for a request: the message, or with --stream the deltas.
    Parse(parse::ParseArgs),
    /// Replay a corpus directory and judge every case.
    Check(check::CheckArgs),
    /// Round-trip seeded messages through the template's renders and its own parser.
    Verify(verify::VerifyArgs),
}

/// A template file and, optionally, which named template of it.
#[derive(Debug, Args)]
struct TemplateArg {
    /// A `.jinja` file, a `tokenizer_config.json` or a `.gguf`.
    template: PathBuf,
    /// A named template of the file (e.g. `tool_use`) instead of the default.
    #[arg(long = "template-name")]
    template_name: Option<String>,
}

impl TemplateArg {
    fn load(&self) -> Result<ChatTemplate, String> {
        load_named(&self.template, self.template_name.as_deref()).map_err(|e| format!("{}: {e}", self.template.display()))
    }
}

/// A request file and a cached analysis.
#[derive(Debug, Args)]
struct RequestArg {
    /// The request: a JSON object shaped like a corpus case's `inputs`.
    #[arg(long, short = 'r')]
    request: PathBuf,
}

impl RequestArg {
    fn load(&self) -> Result<Value, String> {
        read_json(&self.request)
    }
}

/// An analysis from `autoparser analyze` (skips analyzing the template again).
#[derive(Debug, Args)]
struct AnalysisArg {
    /// A cached analysis, as printed by `autoparser analyze`.
    #[arg(long)]
    analysis: Option<PathBuf>,
}

impl AnalysisArg {
    /// The model of `t`: analyzed now, or from the cached analysis.
    fn model(&self, t: ChatTemplate) -> Result<Model, String> {
        match &self.analysis {
            Some(p) => {
                let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
                let a = TemplateAnalysis::from_json(&text).map_err(|e| format!("{}: not an analysis: {e}", p.display()))?;
                Ok(Model::from_analysis(t, a))
            }
            None => Model::analyze(t).map_err(|e| e.to_string()),
        }
    }
}

/// What `generate` and `parse` work from: a template, a request and maybe a cached analysis.
#[derive(Debug, Args)]
struct RequestTarget {
    #[command(flatten)]
    template: TemplateArg,
    #[command(flatten)]
    request: RequestArg,
    #[command(flatten)]
    analysis: AnalysisArg,
}

fn read_json(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("{}: invalid JSON: {e}", path.display()))?;
    if v.is_object() { Ok(v) } else { Err(format!("{}: the request must be a JSON object", path.display())) }
}

/// Writes `v` as pretty JSON and a newline to stdout.
fn print_json(v: &impl serde::Serialize) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, v).map_err(|e| e.to_string())?;
    writeln!(out).map_err(|e| e.to_string())
}

/// Runs the command line in `args` (the first item is the program name).
pub fn run<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let result = match &cli.command {
        Command::Analyze(a) => analyze::run(a),
        Command::Render(a) => render::run(a),
        Command::Generate(a) => generate::run(a),
        Command::Parse(a) => parse::run(a),
        Command::Check(a) => check::run(a),
        Command::Verify(a) => verify::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("autoparser: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the command line of this process.
pub fn main() -> ExitCode {
    run(std::env::args_os())
}
